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

mod ddmin;
mod output;
pub mod same_way;
mod simplify;
mod tree;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cleanup;
use crate::flagset::FlagSet;
use crate::matrix::plan::PlannedCase;
use crate::matrix::{Matrix, MatrixError, Trials};
use crate::outcome::CaseOutcome;
use ddmin::Tried;
pub use output::{repro_words, ShrinkReport, Size};
use same_way::{Judged, Masker, Signature};
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
}

/// Why a shrink could not start.
#[derive(Debug, thiserror::Error)]
pub enum ShrinkError {
    #[error(transparent)]
    Matrix(#[from] MatrixError),
    #[error("{case}: {why}")]
    Refused { case: String, why: String },
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
    work: WorkTree,
    signature: Signature,
    masker: Masker,
    words: Vec<String>,
    arm_runs: usize,
    steps: Vec<StepRecord>,
    stopped: Option<String>,
    /// Written at every kept step, so an interrupt leaves the best so far.
    best: output::BestSoFar,
}

/// Shrinks the case on the matrix's only tree, and writes and checks the result.
pub fn run(matrix: &Matrix, options: &ShrinkOptions) -> Result<ShrinkReport, ShrinkError> {
    let source = matrix
        .trees
        .first()
        .ok_or_else(|| refused(options, "no tree"))?;
    let copy = output::private_copy(source).map_err(|why| refused(options, &why))?;
    output::make_out(options)?;
    let trials = Trials::start(matrix)?;
    let held = trials.scratch().join("held");
    std::fs::create_dir(&held).map_err(|source| ShrinkError::Io {
        doing: format!("making {}", held.display()),
        source,
    })?;
    let work = WorkTree::new(copy.path().to_path_buf(), held);
    let mut masker = Masker::new(entry_names(&work));
    masker.also(base_name(&work.root));
    let first = first_runs(matrix, &trials, options, source.name(), &work.root)?;
    let Some(signature) = Signature::of(&first, &masker) else {
        return Err(not_on_copy(matrix, &trials, options, source, &masker)
            .unwrap_or_else(|| not_differing(options, &first)));
    };
    let before = output::size(&work, &options.set.args);
    let mut shrinker = Shrinker {
        matrix,
        trials: &trials,
        options,
        tree: source.name().to_string(),
        work,
        signature,
        masker,
        words: options.set.args.clone(),
        arm_runs: count_runs(&first),
        steps: Vec::new(),
        stopped: None,
        best: output::BestSoFar::new(options, &matrix.flag_sets),
    };
    shrinker.reduce();
    let report = shrinker.finish(before);
    drop(copy);
    Ok(report)
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
    Ok(trials.run(matrix, tree, root, &case, &dir, 2))
}

/// For a folder given by path whose copy shows no difference: whether the folder
/// itself does (the arms only read it), which says the difference hangs on what a
/// copy does not keep.
fn not_on_copy(
    matrix: &Matrix,
    trials: &Trials,
    options: &ShrinkOptions,
    source: &crate::matrix::TreeSource,
    masker: &Masker,
) -> Option<ShrinkError> {
    let crate::matrix::TreeSource::Existing { path, name } = source else {
        return None;
    };
    let original = first_runs(matrix, trials, options, name, path).ok()?;
    Signature::of(&original, masker)?;
    let why = format!(
        "the case differs on {} but not on a copy of it: the difference depends on something a copy does not keep (inode numbers, the folder's place, its file system), which shrinking cannot reduce",
        path.display()
    );
    Some(refused(options, &why))
}

fn not_differing(options: &ShrinkOptions, first: &CaseOutcome) -> ShrinkError {
    use crate::outcome::Verdict;
    let why = match &first.verdict {
        Verdict::Flaky { .. } => "an arm gave different output on two runs of the case (flaky): shrinking needs a difference that reproduces; `eqcheck --runs K` on the case shows which arm varies".to_string(),
        Verdict::Error { reason } => format!("the case could not be judged: {reason}"),
        Verdict::TreeChanged { .. } => "an arm changed the tree: the case has no difference to shrink".into(),
        other => format!(
            "the case does not differ here ({}): nothing to shrink",
            other.kind().label()
        ),
    };
    refused(options, &why)
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
        let words_before = self.words.len();
        if !self.subtrees() || !self.recheck() || !self.flags() {
            return;
        }
        if self.words.len() < words_before && (!self.subtrees() || !self.recheck()) {
            return;
        }
        if simplify::all(self) {
            self.recheck();
        }
    }

    /// Runs the case on the copy as it is now, with the current words, and judges
    /// it; `Stop` once out of runs or interrupted.
    fn trial(&mut self, phase: Phase, tried: String) -> Tried {
        self.trial_with(phase, tried, &self.words.clone())
    }

    fn trial_with(&mut self, phase: Phase, tried: String, words: &[String]) -> Tried {
        if cleanup::interrupted() {
            self.stopped.get_or_insert_with(|| "interrupted".into());
            return Tried::Stop;
        }
        if self.arm_runs + 2 > self.options.max_runs {
            let why = format!(
                "the run budget ({} arm runs) is spent",
                self.options.max_runs
            );
            self.stopped.get_or_insert(why);
            return Tried::Stop;
        }
        let number = self.steps.len() + 1;
        let case = planned(&self.tree, self.options, words);
        let dir = self.trials.scratch().join(format!("trial-{number}"));
        let outcome = self
            .trials
            .run(self.matrix, &self.tree, &self.work.root, &case, &dir, 1);
        self.arm_runs += count_runs(&outcome);
        let judged = (self.signature).judge(&outcome, self.options.any_difference, &self.masker);
        let kept = judged == Judged::Same;
        self.steps.push(StepRecord {
            trial: number,
            phase,
            tried,
            kept,
            seen: match judged {
                Judged::Same => None,
                Judged::Other(seen) => Some(seen),
            },
        });
        if cleanup::interrupted() {
            self.stopped.get_or_insert_with(|| "interrupted".into());
            return Tried::Stop;
        }
        if kept {
            Tried::Kept
        } else {
            Tried::Lost
        }
    }

    /// Delta debugging folder by folder from the root down: a folder's entries are
    /// minimized, then each folder left among them. False when told to stop.
    fn subtrees(&mut self) -> bool {
        let mut folders = std::collections::VecDeque::from([PathBuf::new()]);
        while let Some(folder) = folders.pop_front() {
            let children = match self.work.children(&folder) {
                Ok(children) => children,
                // A folder the copy cannot list (mode 000 as a user) stays whole.
                Err(_) => continue,
            };
            let (left, stopped) = ddmin::minimize(children, &mut |chunk| self.without(chunk));
            if stopped {
                return false;
            }
            folders.extend(left.into_iter().filter(|c| c.is_dir).map(|c| c.rel));
        }
        true
    }

    /// One trial without `chunk`'s entries.
    fn without(&mut self, chunk: &[tree::Child]) -> Tried {
        let rels: Vec<PathBuf> = chunk.iter().map(|c| c.rel.clone()).collect();
        // A spec needs an entry: the root keeps one, whatever the difference needs.
        let at_root = rels.iter().all(|r| r.components().count() == 1);
        if at_root
            && self
                .work
                .children(Path::new(""))
                .is_ok_and(|c| c.len() == rels.len())
        {
            return Tried::Lost;
        }
        let undo = match self.work.hold(&rels) {
            Ok(undo) => undo,
            Err(_) => return Tried::Lost,
        };
        let tried = format!("without {}", describe_chunk(&rels));
        let tried = self.trial(Phase::Subtrees, tried);
        self.settle(undo, tried)
    }

    /// Keeps a kept change (its held entries removed, the best so far written) or
    /// undoes a lost one.
    fn settle(&mut self, undo: tree::Undo, tried: Tried) -> Tried {
        match tried {
            Tried::Kept => {
                self.work.forget(undo);
                self.best.write(&self.work, &self.words, &self.signature);
                self.progress();
            }
            Tried::Lost | Tried::Stop => {
                if let Err(err) = undo.apply() {
                    self.stopped = Some(format!("cannot undo a trial's change: {err}"));
                    return Tried::Stop;
                }
            }
        }
        tried
    }

    /// The set's words, minimized.
    fn flags(&mut self) -> bool {
        if self.words.is_empty() {
            return true;
        }
        let indexes: Vec<usize> = (0..self.words.len()).collect();
        let mut current = indexes.clone();
        let (left, stopped) = ddmin::minimize(indexes, &mut |chunk| {
            let words: Vec<String> = (current.iter())
                .filter(|i| !chunk.contains(i))
                .map(|&i| self.words[i].clone())
                .collect();
            let dropped: Vec<&str> = chunk.iter().map(|&i| self.words[i].as_str()).collect();
            let tried = format!("without the word(s) {}", shell_words::join(dropped));
            let result = self.trial_with(Phase::Flags, tried, &words);
            if result == Tried::Kept {
                current.retain(|i| !chunk.contains(i));
            }
            result
        });
        self.words = left.iter().map(|&i| self.words[i].clone()).collect();
        if self.words.len() < self.options.set.args.len() {
            self.best.write(&self.work, &self.words, &self.signature);
            self.progress();
        }
        !stopped
    }

    /// The tree as it stands, tried again: a difference that no longer shows
    /// depended on something besides the tree and the set. False then, or when
    /// told to stop.
    fn recheck(&mut self) -> bool {
        match self.trial(Phase::Recheck, "the tree as it stands".into()) {
            Tried::Kept => true,
            Tried::Stop => false,
            Tried::Lost => {
                self.stopped = Some("the difference stopped showing on a tree that had shown it: it depends on something besides the tree and the flags (time, order, the machine); the best result so far is kept".into());
                false
            }
        }
    }

    fn progress(&self) {
        let size = output::size(&self.work, &self.words);
        eprintln!(
            "eqcheck shrink: {} entries, {} bytes, set {}; {} of {} arm runs",
            size.entries,
            size.bytes,
            FlagSet {
                line: 0,
                args: self.words.clone()
            }
            .label(),
            self.arm_runs,
            self.options.max_runs
        );
    }
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
