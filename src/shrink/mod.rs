//! `eqcheck shrink`: reduces a differing case to a smallest tree and flag set on
//! which the arms still differ in the same way. The case is first run twice per arm
//! (a flaky case is refused: shrinking needs a difference that reproduces), then
//! reduced on a private copy built for it: whole subtrees, folder by folder from
//! the root down, by delta debugging over each folder's entries; then the set's
//! words; then simplifications (folders of one child flattened, files cut to
//! nothing or to one block, xattrs dropped, long names shortened). Every change is one trial of
//! both arms, kept only when the difference holds. The result is written as a
//! tree spec and a flag-set file, rebuilt from scratch and tried once more, so
//! what is printed is known to reproduce, or said not to. This file owns the
//! order of the phases and the result; `ddmin.rs` the list reduction, `tree.rs` the
//! copy's changes and their undo, `same_way.rs` what counts as the same difference,
//! `output.rs` the files written and the report.

mod attempt;
mod copies;
mod ddmin;
mod output;
pub mod same_way;
mod simplify;
mod tree;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::flagset::FlagSet;
use crate::matrix::plan::PlannedCase;
use crate::matrix::{Matrix, MatrixError, TrialAt, Trials};
use crate::outcome::CaseOutcome;
use attempt::{Change, Try};
use ddmin::Tried;
pub use output::{repro_words, ShrinkReport, Size};
use same_way::{Masker, Signature};
use tree::WorkTree;

/// What `eqcheck shrink` was asked.
#[derive(Debug, Clone)]
pub struct ShrinkOptions {
    /// How the case is named in messages and in the spec's header.
    pub case_id: String,
    pub group: String,
    pub set: FlagSet,
    /// The most arm runs the reduction may take (each trial is two).
    pub max_runs: usize,
    /// Any difference will do, not only one like the case's.
    pub any_difference: bool,
    /// Where the spec, the flag-set file and the JSON go.
    pub out: PathBuf,
    /// Trials run at once, each on a replica of the tree of its own.
    pub jobs: usize,
}

/// Why a shrink could not start.
#[derive(Debug, thiserror::Error)]
pub enum ShrinkError {
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    #[error("{case}: {why}")]
    Refused { case: String, why: String },
    /// The first runs timed out, could not start or changed the tree: the
    /// harness could not judge the case, which is not the user's input at fault.
    #[error("{case}: {why}")]
    Unjudged { case: String, why: String },
    #[error("{doing}: {source}")]
    Io {
        doing: String,
        source: std::io::Error,
    },
}

impl ShrinkError {
    /// A refusal is the user's to fix (exit 2); the rest is the harness's (exit 3).
    pub fn is_refusal(&self) -> bool {
        matches!(self, ShrinkError::Refused { .. })
    }
}

/// One trial, as the JSON lists them.
#[derive(Debug, Clone, Serialize)]
pub struct StepRecord {
    pub trial: usize,
    pub phase: Phase,
    /// What the trial changed.
    pub tried: String,
    /// Whether the difference held, so the change was kept.
    pub kept: bool,
    /// What the trial saw when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seen: Option<String>,
}

/// The phases, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Subtrees,
    Flags,
    Flatten,
    CutToEmpty,
    CutToOneBlock,
    DropXattrs,
    ShortNames,
    /// The tree as it stands, tried again between phases.
    Recheck,
}

/// The reduction under way: the copy, the set's words, the trials so far.
pub(crate) struct Shrinker<'a> {
    matrix: &'a Matrix,
    trials: &'a Trials,
    options: &'a ShrinkOptions,
    tree: String,
    /// The copy, and one more per job beyond the first: always the same tree.
    replicas: Vec<WorkTree>,
    signature: Signature,
    masker: Masker,
    words: Vec<String>,
    /// The flag-set file's `common` words as they stand.
    common: Vec<String>,
    arm_runs: usize,
    steps: Vec<StepRecord>,
    stopped: Option<String>,
    /// An arm changed a copy: the copies are no longer the best result, which
    /// is what was last written.
    dirty: bool,
    /// Written at every kept step, so an interrupt leaves the best so far.
    best: output::BestSoFar,
}

/// Shrinks the case on the matrix's only tree, and writes and checks the result.
pub fn run(matrix: &Matrix, options: &ShrinkOptions) -> Result<ShrinkReport, ShrinkError> {
    let source = matrix
        .trees
        .first()
        .ok_or_else(|| refused(options, "no tree"))?;
    output::make_out(options, source)?;
    let trials = Trials::start(matrix)?;
    let copy = copies::copy_of(source, &trials, 0).map_err(|why| refused(options, &why))?;
    let work = WorkTree::new(copy.root().to_path_buf(), held(&copy, &trials, 0)?);
    let mut masker = Masker::new(entry_names(&work));
    masker.also(base_name(&work.root));
    let first = first_runs(matrix, &trials, options, source.name(), &work.root)?;
    let Some(signature) = Signature::of(&first, &masker) else {
        return Err(
            not_on_copy(matrix, &trials, options, source, &masker, &work.root)
                .unwrap_or_else(|| not_differing(options, &first)),
        );
    };
    let before = output::size(&work, &options.set.args);
    let (replicas, copies) = replicas(work, &trials, options, source)?;
    for replica in &replicas[1..] {
        masker.also(base_name(&replica.root));
    }
    let mut shrinker = Shrinker {
        matrix,
        trials: &trials,
        options,
        tree: source.name().to_string(),
        replicas,
        signature,
        masker,
        words: options.set.args.clone(),
        common: matrix.flag_sets.common.clone(),
        arm_runs: count_runs(&first),
        steps: Vec::new(),
        stopped: None,
        dirty: false,
        best: output::BestSoFar::new(options, &matrix.flag_sets),
    };
    shrinker.reduce();
    let report = shrinker.finish(before);
    drop(copies);
    drop(copy);
    Ok(report)
}

/// The copy, and another for each job beyond the first, each with a holding
/// folder of its own; the other copies go when the second value does.
fn replicas(
    work: WorkTree,
    trials: &Trials,
    options: &ShrinkOptions,
    source: &crate::matrix::TreeSource,
) -> Result<(Vec<WorkTree>, Vec<copies::Copy>), ShrinkError> {
    let mut replicas = vec![work];
    let mut others = Vec::new();
    for job in 1..options.jobs.max(1) {
        let copy = copies::copy_of(source, trials, job).map_err(|err| {
            refused(
                options,
                &format!("cannot make the tree for job {}: {err}", job + 1),
            )
        })?;
        replicas.push(WorkTree::new(
            copy.root().to_path_buf(),
            held(&copy, trials, job)?,
        ));
        others.push(copy);
    }
    Ok((replicas, others))
}

fn held(copy: &copies::Copy, trials: &Trials, job: usize) -> Result<PathBuf, ShrinkError> {
    copy.holding_folder(trials, job)
        .map_err(|source| ShrinkError::Io {
            doing: format!("making the holding folder of job {}", job + 1),
            source,
        })
}

fn refused(options: &ShrinkOptions, why: &str) -> ShrinkError {
    ShrinkError::Refused {
        case: options.case_id.clone(),
        why: why.to_string(),
    }
}

/// The case as it stands, each arm twice, on the copy: it must differ, the same
/// way both times.
fn first_runs(
    matrix: &Matrix,
    trials: &Trials,
    options: &ShrinkOptions,
    tree: &str,
    root: &Path,
) -> Result<CaseOutcome, ShrinkError> {
    let case = planned(tree, options, &options.set.args);
    let dir = trials.scratch().join("first");
    let at = TrialAt {
        tree,
        root,
        dir: &dir,
    };
    Ok(trials.run(matrix, &matrix.flag_sets, &at, &case, 2))
}

/// For a folder given by path whose copy (at `copy_root`) shows no difference:
/// whether the folder itself does (the arms only read it), which says the
/// difference hangs on what a copy does not keep, unless the copy then differs
/// too: then what changed was the runs, not the tree.
fn not_on_copy(
    matrix: &Matrix,
    trials: &Trials,
    options: &ShrinkOptions,
    source: &crate::matrix::TreeSource,
    masker: &Masker,
    copy_root: &Path,
) -> Option<ShrinkError> {
    let crate::matrix::TreeSource::Existing { path, name } = source else {
        return None;
    };
    let original = first_runs(matrix, trials, options, name, path).ok()?;
    Signature::of(&original, masker)?;
    let again = first_runs(matrix, trials, options, name, copy_root).ok()?;
    let why = match Signature::of(&again, masker) {
        Some(_) => "the case did not differ on a copy of the tree, then differed on the tree and on the copy alike: an arm's output changes from run to run (with the time, a count, chance), and shrinking needs a difference that holds still; `eqcheck --runs K` on the case shows which arm varies".to_string(),
        None => format!(
            "the case differs on {} but not on a copy of it: the difference depends on something a copy does not keep (inode numbers, the folder's place, its file system), which shrinking cannot reduce",
            path.display()
        ),
    };
    Some(refused(options, &why))
}

const FLAKY: &str = "an arm gave different output on two runs of the case (flaky): \
shrinking needs a difference that reproduces; `eqcheck --runs K` on the case shows which arm varies";

fn not_differing(options: &ShrinkOptions, first: &CaseOutcome) -> ShrinkError {
    use crate::outcome::Verdict;
    let unjudged = |why: &str| ShrinkError::Unjudged {
        case: options.case_id.clone(),
        why: format!("the case could not be judged: {why}"),
    };
    match &first.verdict {
        Verdict::Flaky { .. } => refused(options, FLAKY),
        Verdict::Error { reason } => unjudged(reason),
        Verdict::TreeChanged { changes, .. } => {
            let moved = crate::report::summary::verdict_detail(&first.verdict).unwrap_or_default();
            unjudged(&format!("{moved}: {}", changes.join("; ")))
        }
        other => {
            let why = format!(
                "the case does not differ here ({}): nothing to shrink",
                other.label()
            );
            refused(options, &why)
        }
    }
}

fn planned(tree: &str, options: &ShrinkOptions, words: &[String]) -> PlannedCase {
    let set = FlagSet {
        line: options.set.line,
        args: words.to_vec(),
    };
    PlannedCase {
        id: format!("{tree}:{}:{}", options.group, set.label()),
        group: options.group.clone(),
        set,
    }
}

fn base_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// Every entry name of the tree, for masking the names an output line shows.
fn entry_names(work: &WorkTree) -> Vec<String> {
    (work.all().unwrap_or_default().iter())
        .filter_map(|c| c.rel.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect()
}

fn count_runs(case: &CaseOutcome) -> usize {
    case.reference.durations_ms.len() + case.candidate.durations_ms.len()
}

impl Shrinker<'_> {
    /// The phases in order; each ends early once a trial asks to stop. The
    /// subtrees go again when the set lost words, which may have needed entries.
    fn reduce(&mut self) {
        let words_before = self.words.len() + self.common.len();
        if !self.subtrees() || !self.recheck() || !self.flags() {
            return;
        }
        let words_after = self.words.len() + self.common.len();
        if words_after < words_before && (!self.subtrees() || !self.recheck()) {
            return;
        }
        if simplify::all(self) {
            self.recheck();
        }
    }

    /// The tree every replica holds, as the first one holds it.
    pub(crate) fn work(&self) -> &WorkTree {
        &self.replicas[0]
    }

    fn jobs(&self) -> usize {
        self.replicas.len()
    }

    /// A try of the tree changed by `change`, with the current words.
    fn tree_try(&self, what: String, change: Change) -> Try {
        Try {
            what,
            change: Some(change),
            words: self.words.clone(),
            common: self.common.clone(),
        }
    }

    /// Delta debugging folder by folder from the root down: a folder's entries are
    /// minimized, then each folder left among them. False when told to stop.
    fn subtrees(&mut self) -> bool {
        let mut folders = std::collections::VecDeque::from([PathBuf::new()]);
        while let Some(folder) = folders.pop_front() {
            let children = match self.work().children(&folder) {
                Ok(children) => children,
                // A folder the copy cannot list (mode 000 as a user) stays whole.
                Err(_) => continue,
            };
            let jobs = self.jobs();
            let (left, stopped) =
                ddmin::minimize_in_batches(children, jobs, &mut |chunks| self.without(chunks));
            if stopped {
                return false;
            }
            folders.extend(left.into_iter().filter(|c| c.is_dir).map(|c| c.rel));
        }
        true
    }

    /// One trial per chunk, each without the chunk's entries. The root keeps one
    /// entry, whatever the difference needs, as a spec needs one: a chunk of all
    /// that is left there is answered lost untried.
    fn without(&mut self, chunks: &[&[tree::Child]]) -> Vec<Tried> {
        let at_root_left = self.work().children(Path::new("")).map_or(0, |c| c.len());
        let mut tries = Vec::new();
        let mut untried = Vec::new();
        for (i, chunk) in chunks.iter().enumerate() {
            let rels: Vec<PathBuf> = chunk.iter().map(|c| c.rel.clone()).collect();
            let at_root = rels.iter().all(|r| r.components().count() == 1);
            if at_root && rels.len() == at_root_left {
                untried.push(i);
                continue;
            }
            let what = format!("without {}", describe_chunk(&rels));
            tries.push(self.tree_try(what, Change::Without(rels)));
        }
        let answers = match tries.is_empty() {
            true => Vec::new(),
            false => self.attempt(Phase::Subtrees, tries),
        };
        with_untried(answers, &untried, chunks.len())
    }

    /// The set's words minimized, then the flag-set file's `common` words where the
    /// file allows it (`shrink-common = yes`).
    fn flags(&mut self) -> bool {
        self.minimize_words(WordList::Set)
            && (!self.matrix.flag_sets.shrink_common || self.minimize_words(WordList::Common))
    }

    /// One list of words, minimized by delta debugging over their places.
    fn minimize_words(&mut self, list: WordList) -> bool {
        let original = match list {
            WordList::Set => self.words.clone(),
            WordList::Common => self.common.clone(),
        };
        if original.is_empty() {
            return true;
        }
        let indexes: Vec<usize> = (0..original.len()).collect();
        let mut current = indexes.clone();
        let jobs = self.jobs();
        let (_, stopped) = ddmin::minimize_in_batches(indexes, jobs, &mut |chunks| {
            let tries: Vec<Try> = (chunks.iter())
                .map(|chunk| {
                    let dropped: Vec<&str> = chunk.iter().map(|&i| original[i].as_str()).collect();
                    let left: Vec<String> = (current.iter())
                        .filter(|i| !chunk.contains(i))
                        .map(|&i| original[i].clone())
                        .collect();
                    let (words, common) = match list {
                        WordList::Set => (left, self.common.clone()),
                        WordList::Common => (self.words.clone(), left),
                    };
                    let what = format!(
                        "without the {} word(s) {}",
                        list.name(),
                        shell_words::join(dropped)
                    );
                    Try {
                        what,
                        change: None,
                        words,
                        common,
                    }
                })
                .collect();
            let answers = self.attempt(Phase::Flags, tries);
            if let Some(k) = answers.iter().position(|a| *a == Tried::Kept) {
                current.retain(|i| !chunks[k].contains(i));
            }
            answers
        });
        !stopped
    }

    /// The tree as it stands, tried again: a difference that no longer shows
    /// depended on something besides the tree and the set. False then, or when
    /// told to stop.
    fn recheck(&mut self) -> bool {
        let again = Try {
            what: "the tree as it stands".into(),
            change: None,
            words: self.words.clone(),
            common: self.common.clone(),
        };
        match self.attempt_one(Phase::Recheck, again) {
            Tried::Kept => true,
            Tried::Stop => false,
            Tried::Lost => {
                self.stopped = Some("the difference stopped showing on a tree that had shown it: it depends on something besides the tree and the flags (time, order, the machine); the best result so far is kept".into());
                false
            }
        }
    }

    /// Said after each kept step, once the result is written with its size.
    fn progress(&self) {
        let size =
            (self.best.last_written()).unwrap_or_else(|| output::size(self.work(), &self.words));
        let set = FlagSet {
            line: 0,
            args: self.words.clone(),
        };
        eprintln!(
            "eqcheck shrink: {}, set {}; {} of {} arm runs",
            size.tree_words(),
            set.label(),
            self.arm_runs,
            self.options.max_runs
        );
    }
}

/// The word lists the flags phase shortens.
#[derive(Clone, Copy)]
enum WordList {
    Set,
    Common,
}

impl WordList {
    fn name(self) -> &'static str {
        match self {
            WordList::Set => "set's",
            WordList::Common => "common",
        }
    }
}

/// `answers` for the tried chunks, with `Lost` put in at the `untried` places;
/// answers cut short (a stop) stay cut short there.
fn with_untried(answers: Vec<Tried>, untried: &[usize], total: usize) -> Vec<Tried> {
    let mut answers = answers.into_iter();
    let mut merged = Vec::with_capacity(total);
    for i in 0..total {
        if untried.contains(&i) {
            merged.push(Tried::Lost);
        } else {
            match answers.next() {
                Some(answer) => merged.push(answer),
                None => break,
            }
        }
    }
    merged
}

/// A chunk as a step names it: its first paths, and how many more.
fn describe_chunk(rels: &[PathBuf]) -> String {
    let shown: Vec<String> = rels
        .iter()
        .take(3)
        .map(|r| r.display().to_string())
        .collect();
    match rels.len() {
        0..=3 => shown.join(", "),
        n => format!("{} and {} more", shown.join(", "), n - 3),
    }
}
