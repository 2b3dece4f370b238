//! What a shrink leaves behind: the private copy it starts from, the reduced tree
//! as a spec (`shrunk.tree`), the flag-set file with the reduced set in its group
//! (`shrunk.sets`), both rewritten at every kept step so an interrupt leaves the
//! best so far; at the end the check that the spec, built afresh, still differs,
//! and the report with every step (`shrink.json`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::same_way::{Judged, Signature};
use super::tree::WorkTree;
use super::{planned, refused, ShrinkOptions, Shrinker, StepRecord};
use crate::fixtures::{self, describe};
use crate::flagset::{FlagSet, FlagSetFile};
use crate::matrix::TreeSource;

/// A tree's size as the report gives it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Size {
    /// The root included, as `run` and `probe` count a tree.
    pub entries: usize,
    /// Apparent bytes of its files.
    pub bytes: u64,
    pub flag_words: usize,
}

impl Size {
    /// The size of a tree of `below_root` entries besides its root.
    fn new(below_root: usize, bytes: u64, words: &[String]) -> Size {
        Size {
            entries: below_root + 1,
            bytes,
            flag_words: words.len(),
        }
    }

    /// `N entries, M bytes`, in the singular for one.
    pub fn tree_words(&self) -> String {
        let entries = crate::counted::counted(self.entries as u64, "entry", "entries");
        format!(
            "{entries}, {}",
            crate::counted::counted(self.bytes, "byte", "bytes")
        )
    }
}

/// The result of a shrink.
#[derive(Debug, Serialize)]
pub struct ShrinkReport {
    pub case: String,
    pub group: String,
    pub signature: Signature,
    pub any_difference: bool,
    pub before: Size,
    pub after: Size,
    pub set_before: Vec<String>,
    pub set_after: Vec<String>,
    /// The flag-set file's `common` words, which go only where it says
    /// `shrink-common = yes`.
    pub common_before: Vec<String>,
    pub common_after: Vec<String>,
    pub arm_runs: usize,
    pub max_runs: usize,
    /// Why the reduction ended before it was done, if it did.
    pub stopped: Option<String>,
    pub spec: PathBuf,
    pub flag_sets: PathBuf,
    /// What the spec could not say exactly (contents not kept, owners).
    pub approximations: Vec<String>,
    /// The shrunk case as a command line.
    pub repro: String,
    /// Whether the spec, built afresh, still differs the same way.
    pub reproduced: bool,
    /// What the fresh build showed when it did not.
    pub rebuilt_seen: Option<String>,
    pub steps: Vec<StepRecord>,
}

impl ShrinkReport {
    /// 0 when the shrunk case reproduces on a fresh build, 1 when it does not.
    pub fn exit_code(&self) -> u8 {
        if self.reproduced {
            crate::exit::ALL_EQUAL
        } else {
            crate::exit::DIFFERENCES
        }
    }
}

/// The tree's entries and its files' bytes, a file of several names counted once,
/// as a description counts them.
pub(super) fn size(work: &WorkTree, words: &[String]) -> Size {
    let all = work.all().unwrap_or_default();
    let mut seen = std::collections::HashSet::new();
    let bytes = (all.iter())
        .filter(|c| !c.is_dir)
        .filter_map(|c| std::fs::symlink_metadata(work.root.join(&c.rel)).ok())
        .filter(|m| m.is_file() && file_identity(m).is_none_or(|id| seen.insert(id)))
        .map(|m| m.len())
        .sum();
    Size::new(all.len(), bytes, words)
}

/// The identity of a file of several names; `None` for one of a single name
/// (and for every file elsewhere than Unix).
#[cfg(unix)]
fn file_identity(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    (meta.nlink() > 1).then(|| (meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn file_identity(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// Where the result goes, and what it is written from.
pub(super) struct BestSoFar {
    spec: PathBuf,
    sets: PathBuf,
    case: String,
    group: String,
    set_line: usize,
    sets_text: Option<String>,
    approximations: Vec<String>,
    /// The size of what was last written, if anything was.
    written: Option<Size>,
}

impl BestSoFar {
    pub fn new(options: &ShrinkOptions, flag_sets: &FlagSetFile) -> BestSoFar {
        BestSoFar {
            spec: options.out.join("shrunk.tree"),
            sets: options.out.join("shrunk.sets"),
            case: options.case_id.clone(),
            group: options.group.clone(),
            set_line: options.set.line,
            sets_text: Some(flag_sets.text.clone()),
            approximations: Vec::new(),
            written: None,
        }
    }

    /// The size of what was last written, if anything was.
    pub fn last_written(&self) -> Option<Size> {
        self.written
    }

    /// Writes the tree as it stands and the words as they stand; a failure is
    /// said on stderr and the reduction goes on, and is returned.
    pub fn write(
        &mut self,
        work: &WorkTree,
        words: &[String],
        common: &[String],
        signature: &Signature,
    ) -> Result<(), String> {
        // Described from the working copy, which an interrupt's cleanup removes:
        // the best so far is never written from a copy half gone.
        let written =
            crate::cleanup::unless_removing(|| self.try_write(work, words, common, signature));
        written
            .unwrap_or_else(|| Err(std::io::Error::other("interrupted")))
            .map_err(|err| {
                let said = format!("cannot write the result: {err}");
                eprintln!("eqcheck shrink: {said}");
                said
            })
    }

    fn try_write(
        &mut self,
        work: &WorkTree,
        words: &[String],
        common: &[String],
        signature: &Signature,
    ) -> std::io::Result<()> {
        // One walk of the tree: the counts come from the description itself.
        let described = describe::describe(&work.root, "")?;
        let size = Size::new(described.entries, described.bytes, words);
        let header = format!(
            "shrunk from {}\n{}; set: {}\ndiffers in: {}",
            self.case,
            size.tree_words(),
            label(words),
            signature.streams.join(", ")
        );
        let described = described.with_header(&header);
        self.approximations = described.approximations;
        write_whole(&self.spec, &described.text)?;
        let sets = match &self.sets_text {
            Some(text) => with_common(
                &with_only_set(text, &self.group, self.set_line, words),
                common,
            ),
            None => format!(
                "common = {}\n[{}]\n{}\n",
                shell_words::join(common),
                self.group,
                label(words)
            ),
        };
        write_whole(&self.sets, &sets)?;
        self.written = Some(size);
        crate::cleanup::set_interrupt_note(format!(
            "eqcheck shrink: the smallest case so far ({}, set {}) is in {} and {}",
            size.tree_words(),
            label(words),
            self.spec.display(),
            self.sets.display()
        ));
        Ok(())
    }
}

/// Writes `text` to a temp file beside `path` and renames it over `path`, so an
/// interrupt leaves the last whole version, never half of one.
fn write_whole(path: &Path, text: &str) -> std::io::Result<()> {
    let mut temp = path.as_os_str().to_owned();
    temp.push(".partial");
    std::fs::write(&temp, text)?;
    std::fs::rename(&temp, path)
}

fn label(words: &[String]) -> String {
    FlagSet {
        line: 0,
        args: words.to_vec(),
    }
    .label()
}

/// The flag-set file's text with `group` holding only `words`, in the place of
/// the set on `line`; other groups as they were, for the rules that name them.
pub(crate) fn with_only_set(text: &str, group: &str, line: usize, words: &[String]) -> String {
    let mut out = String::new();
    let mut in_group = false;
    let mut placed = false;
    for (index, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if let Some(header) = trimmed.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            in_group = header.trim() == group;
        } else if in_group && is_set_line(trimmed) {
            if index + 1 == line {
                out.push_str(&label(words));
                out.push('\n');
                placed = true;
            }
            continue;
        }
        out.push_str(raw);
        out.push('\n');
    }
    if !placed {
        out.push_str(&format!("\n[{group}]\n{}\n", label(words)));
    }
    out
}

/// The flag-set file's text with its `common` line saying `common`; one is added
/// first when there is none and `common` is not empty.
pub(crate) fn with_common(text: &str, common: &[String]) -> String {
    let line = format!("common = {}", shell_words::join(common));
    let is_common = |raw: &str| {
        raw.trim()
            .strip_prefix("common")
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    if !text.lines().any(is_common) {
        return match common.is_empty() {
            true => text.to_string(),
            false => format!("{line}\n{text}"),
        };
    }
    let mut out = String::new();
    for raw in text.lines() {
        out.push_str(if is_common(raw) { &line } else { raw });
        out.push('\n');
    }
    out
}

/// A line of a group section that is a set (not a blank line or a comment).
fn is_set_line(trimmed: &str) -> bool {
    !trimmed.is_empty() && !trimmed.starts_with('#')
}

impl Shrinker<'_> {
    /// Writes the result, rebuilds it from the spec and tries it there.
    pub(super) fn finish(mut self, before: Size) -> ShrinkReport {
        let written = match self.dirty {
            // The copies hold what an arm wrote: the last result written stands.
            true => (self.best.written)
                .map(|_| ())
                .ok_or_else(|| "no result was written before an arm changed the tree".to_string()),
            false => (self.best).write(
                &self.replicas[0],
                &self.words,
                &self.common,
                &self.signature,
            ),
        };
        let after = (self.best.written).unwrap_or_else(|| size(&self.replicas[0], &self.words));
        let (reproduced, rebuilt_seen) = match written {
            Ok(()) => self.rebuilt(),
            Err(err) => (false, Some(err)),
        };
        ShrinkReport {
            case: self.options.case_id.clone(),
            group: self.options.group.clone(),
            signature: self.signature.clone(),
            any_difference: self.options.any_difference,
            before,
            after,
            set_before: self.options.set.args.clone(),
            set_after: self.words.clone(),
            common_before: self.matrix.flag_sets.common.clone(),
            common_after: self.common.clone(),
            arm_runs: self.arm_runs,
            max_runs: self.options.max_runs,
            stopped: self.stopped.clone(),
            spec: self.best.spec.clone(),
            flag_sets: self.best.sets.clone(),
            approximations: self.best.approximations.clone(),
            repro: String::new(),
            reproduced,
            rebuilt_seen,
            steps: std::mem::take(&mut self.steps),
        }
    }

    /// Builds the written spec afresh and runs the shrunk case on it, each arm
    /// twice: a result that only held on the copy it was made on is said so.
    fn rebuilt(&mut self) -> (bool, Option<String>) {
        if crate::cleanup::interrupted() {
            return (false, Some("not tried: interrupted".into()));
        }
        let source = &self.matrix.trees[0];
        let rebuilt = (crate::userfile::read_to_string(&self.best.spec))
            .map_err(|err| err.to_string())
            .and_then(|text| {
                let file = self.best.spec.display().to_string();
                fixtures::spec::parse(&file, &self.tree, &text).map_err(|e| e.to_string())
            })
            .and_then(|spec| super::copies::rebuilt(source, &spec, self.trials));
        let tree = match rebuilt {
            Ok(tree) => tree,
            Err(err) => return (false, Some(format!("the spec does not build: {err}"))),
        };
        self.masker.also(super::base_name(tree.root()));
        let case = planned(&self.tree, self.options, &self.words);
        let dir = self.trials.scratch().join("rebuilt");
        let at = crate::matrix::TrialAt {
            tree: &self.tree,
            root: tree.root(),
            dir: &dir,
        };
        // What was written is what is tried: the flag-set file as read back.
        let flag_sets = match self.written_flag_sets() {
            Ok(flag_sets) => flag_sets,
            Err(err) => return (false, Some(err)),
        };
        let outcome = (self.trials).run(self.matrix, &flag_sets, &at, &case, 2);
        self.arm_runs += super::count_runs(&outcome);
        match (self.signature).judge(&outcome, self.options.any_difference, &self.masker) {
            Judged::Same => (true, None),
            Judged::Other(seen) => (false, Some(seen)),
        }
    }
}

impl Shrinker<'_> {
    /// `shrunk.sets` as written, with the reduced set in its group.
    fn written_flag_sets(&self) -> Result<FlagSetFile, String> {
        let path = &self.best.sets;
        let text = crate::userfile::read_to_string(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let parsed =
            crate::flagset::parse(&path.display().to_string(), &text).map_err(|e| e.to_string())?;
        let holds = (parsed.groups.iter())
            .find(|g| g.name == self.options.group)
            .is_some_and(|g| g.sets.iter().any(|set| set.args == self.words));
        match holds && parsed.common == self.common {
            true => Ok(parsed),
            false => Err(format!(
                "{} does not hold the reduced set in group `{}`",
                path.display(),
                self.options.group
            )),
        }
    }
}

/// Makes the result folder, with no result of an earlier shrink left in it, so
/// nothing read at the end can be older than this run. A folder inside a tree
/// given by path is refused: the tree is never written to.
pub(super) fn make_out(
    options: &ShrinkOptions,
    source: &TreeSource,
) -> Result<(), super::ShrinkError> {
    let cannot = |err: std::io::Error| {
        let out = options.out.display();
        refused(
            options,
            &format!("cannot make the result folder {out}: {err}"),
        )
    };
    if let TreeSource::Existing { path, .. } = source {
        let tree = std::fs::canonicalize(path).map_err(cannot)?;
        if nearest_existing(&options.out).is_some_and(|out| out.starts_with(&tree)) {
            let why = format!("--out {} is inside the tree {}, which is only read: give --out a folder outside it", options.out.display(), path.display());
            return Err(refused(options, &why));
        }
    }
    std::fs::create_dir_all(&options.out).map_err(cannot)?;
    for name in ["shrunk.tree", "shrunk.sets", "shrink.json"] {
        match std::fs::remove_file(options.out.join(name)) {
            Err(err) if err.kind() != std::io::ErrorKind::NotFound => return Err(cannot(err)),
            _ => {}
        }
    }
    Ok(())
}

/// The path, or its nearest ancestor that exists, made absolute.
fn nearest_existing(path: &Path) -> Option<PathBuf> {
    let absolute = std::path::absolute(path).ok()?;
    absolute
        .ancestors()
        .find_map(|a| std::fs::canonicalize(a).ok())
}

/// The repro line's own words: the spec and the flag-set file in place of the
/// case's tree and sets.
pub fn repro_words(report: &ShrinkReport) -> Vec<String> {
    vec![
        "--tree".into(),
        path_word(&report.spec),
        "--flagsets".into(),
        path_word(&report.flag_sets),
        "--sets".into(),
        report.group.clone(),
    ]
}

fn path_word(path: &Path) -> String {
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_entry_and_one_byte_are_said_in_the_singular() {
        let size = |entries, bytes| Size {
            entries,
            bytes,
            flag_words: 0,
        };
        assert_eq!(size(1, 0).tree_words(), "1 entry, 0 bytes");
        assert_eq!(size(2, 1).tree_words(), "2 entries, 1 byte");
        assert_eq!(
            size(18006, 78818239).tree_words(),
            "18006 entries, 78818239 bytes"
        );
    }

    const FILE: &str = "description = d\ncommon = -P -c\n\n[a]\n-x\n# note\n-y -z\n[b]\n-x\n";

    #[test]
    fn the_group_keeps_only_the_reduced_set_and_the_rest_stays() {
        let words = ["-y".to_string()];
        let out = with_only_set(FILE, "a", 7, &words);
        assert_eq!(
            out,
            "description = d\ncommon = -P -c\n\n[a]\n# note\n-y\n[b]\n-x\n"
        );
        let parsed = crate::flagset::parse("x.sets", &out).unwrap();
        assert_eq!(parsed.groups[0].sets.len(), 1);
        assert_eq!(parsed.groups[1].sets.len(), 1);
        let none = with_only_set(FILE, "given", 0, &[]);
        assert!(none.ends_with("\n[given]\n(none)\n"), "{none}");
        crate::flagset::parse("x.sets", &none).unwrap();
    }

    #[test]
    fn the_common_line_says_the_reduced_words() {
        let out = with_common(FILE, &["-c".to_string()]);
        assert!(out.contains("\ncommon = -c\n"), "{out}");
        let emptied = with_common(FILE, &[]);
        assert!(crate::flagset::parse("x.sets", &emptied)
            .unwrap()
            .common
            .is_empty());
        let added = with_common("[a]\n-x\n", &["-q".to_string()]);
        assert_eq!(
            crate::flagset::parse("x.sets", &added).unwrap().common,
            ["-q"]
        );
    }
}
