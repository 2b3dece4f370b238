//! What a run was asked for: every option the command line and `eqcheck.toml` can
//! give, each value with the place it was written, merged key by key. Reading the
//! config file is [`mod@file`]; checking every value once and turning the merged
//! options into a runnable [`Matrix`](crate::matrix::Matrix) is [`resolve`]. A
//! mistake is reported at the value's place: `--runs: …` for the command line,
//! `eqcheck.toml:3:8: runs: …` for the file.

pub mod file;
pub mod resolve;
pub(crate) mod user;

use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

/// Where a value was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// On the command line, after this flag.
    Flag(&'static str),
    /// In a config file.
    File(Place),
}

/// A key's value in a config file: the file as found or named, the 1-based line
/// and column (in characters) where the value starts, and the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    pub key: &'static str,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Flag(flag) => f.write_str(flag),
            Origin::File(place) => write!(
                f,
                "{}:{}:{}: {}",
                place.file.display(),
                place.line,
                place.column,
                place.key
            ),
        }
    }
}

impl Origin {
    /// A path as the value means it: one written in a config file starts at the
    /// file's folder, as the file's other paths do; one given on the command line
    /// starts at the working folder. An absolute path stays as it is, and a path
    /// from a file found in the working folder stays as written, so `./edge` stays a
    /// folder and is never mistaken for the built-in tree.
    pub fn path(&self, written: &str) -> String {
        let folder = match self {
            Origin::File(place) => place.file.parent().unwrap_or(Path::new("")),
            Origin::Flag(_) => return written.to_string(),
        };
        if folder.as_os_str().is_empty() || Path::new(written).is_absolute() {
            return written.to_string();
        }
        // A leading `./` is dropped: `sub/./web` would name the tree so in the report.
        let inside: PathBuf = (Path::new(written).components())
            .skip_while(|c| *c == Component::CurDir)
            .collect();
        folder.join(inside).to_string_lossy().into_owned()
    }
}

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Given<T> {
    pub value: T,
    pub origin: Origin,
}

impl<T> Given<T> {
    pub fn flag(flag: &'static str, value: T) -> Given<T> {
        Given {
            value,
            origin: Origin::Flag(flag),
        }
    }
}

impl Given<String> {
    /// Whether `--sets` (or the file's `sets`) names a flag-set file rather than
    /// groups, which its shape says: a folder part, or `.sets` at the end. A bare
    /// word stays a group name whatever file of that name the working folder
    /// holds, or a file called `all` there would take over the default.
    pub fn names_a_flag_set_file(&self) -> bool {
        names_a_file(&self.value)
    }
}

/// Whether a flag-set value is a path by its shape: a folder part, or `.sets` at
/// the end.
pub(crate) fn names_a_file(value: &str) -> bool {
    value.contains(['/', '\\']) || value.ends_with(".sets")
}

/// How closely each tree is fingerprinted around every arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Guard {
    /// Type, mode, size, link count, inode, modification time and link target of
    /// every entry.
    #[default]
    Metadata,
    /// The metadata and a digest of every file's contents.
    Content,
    /// No fingerprint at all.
    Off,
}

/// The run options one source gives, `None` (or empty) where it gave nothing, so
/// that merging can tell "not given" from a default.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Layer {
    pub reference: Option<Given<String>>,
    pub candidate: Option<Given<String>>,
    pub flagsets: Option<Given<String>>,
    pub sets: Option<Given<String>>,
    /// Empty: none named here.
    pub trees: Vec<Given<String>>,
    /// File-system lists (`--fs`, `fs = [...]`), each word checked when resolved;
    /// empty: none named here.
    pub fs: Vec<Given<String>>,
    /// Seconds, as written; checked when resolved.
    pub timeout: Option<Given<f64>>,
    /// The most an arm may write to each stream, as written (`4G`); checked when
    /// resolved.
    pub max_output: Option<Given<String>>,
    pub runs: Option<Given<usize>>,
    pub jobs: Option<Given<usize>>,
    pub guard: Option<Given<Guard>>,
    /// A user name or a uid.
    pub as_user: Option<Given<String>>,
    /// The `argv[0]` both arms run with, instead of the program's file name.
    pub argv0: Option<Given<String>>,
    /// The commands the reference's and the candidate's programs run under.
    pub ref_runner: Option<Given<String>>,
    pub cand_runner: Option<Given<String>>,
    /// The reference runs under the candidate's runner too.
    pub same_runner: Option<Given<bool>>,
    /// Overrides for both arms, over the pinned environment and the flag-set file's.
    pub env: Vec<(Given<String>, String)>,
    /// `--ref-rev`: the reference is the program built from this git revision.
    pub ref_rev: Option<Given<String>>,
    /// `[build] command`: how a revision is built, split shell-word style.
    pub build_command: Option<Given<String>>,
    /// `[build] program`: the built file's path from the repository's top, then
    /// any leading arguments, split shell-word style.
    pub build_program: Option<Given<String>>,
}

/// What only the command line says, and how the layers are merged.
#[derive(Debug, Default, Clone, Copy)]
pub struct RunMode {
    /// `--self-check`: the reference runs against itself.
    pub self_check: bool,
    /// `--as-root`: the arms run as root when eqcheck does.
    pub as_root: bool,
}

/// The options a run uses: the command line's over the file's, key by key, except
/// where taking one key from each side would make a run nobody asked for:
/// - `--ref` or `--cand` alone replaces that arm of the file's and keeps the other;
///   under `--self-check` the file's candidate is left out (the reference runs
///   against itself); `--ref-rev` gives the reference arm, as `--ref` does;
/// - `--tree` replaces the file's whole list, as `--fs` replaces its `fs`;
/// - a flag-set file chosen on the command line (`--flagsets`, or `--sets FILE`)
///   replaces the file's flag-set file and its `sets`; `--sets GROUPS` alone selects
///   groups from the file's flag-set file;
/// - the file's `as_user` is left out under `--as-root`, and when eqcheck does not
///   run as root (where it means nothing), so one file serves root CI and laptops.
///
/// Nothing is checked here: what the merged options name is checked once, each
/// value at its place, when they are resolved. A value the command line replaces is
/// never looked at, so it may name what does not exist here.
pub fn merge(given: Layer, file: Layer, mode: RunMode) -> Layer {
    let chosen_here =
        given.flagsets.is_some() || (given.sets.as_ref()).is_some_and(Given::names_a_flag_set_file);
    let (flagsets, sets) = if chosen_here {
        (given.flagsets, given.sets)
    } else {
        (file.flagsets, given.sets.or(file.sets))
    };
    let file_user = file
        .as_user
        .filter(|_| !mode.as_root && user::running_as_root());
    let file_reference = file.reference.filter(|_| given.ref_rev.is_none());
    Layer {
        reference: given.reference.or(file_reference),
        candidate: if mode.self_check {
            given.candidate
        } else {
            given.candidate.or(file.candidate)
        },
        flagsets,
        sets,
        trees: if given.trees.is_empty() {
            file.trees
        } else {
            given.trees
        },
        fs: if given.fs.is_empty() {
            file.fs
        } else {
            given.fs
        },
        timeout: given.timeout.or(file.timeout),
        max_output: given.max_output.or(file.max_output),
        runs: given.runs.or(file.runs),
        jobs: given.jobs.or(file.jobs),
        guard: given.guard.or(file.guard),
        as_user: given.as_user.or(file_user),
        argv0: given.argv0.or(file.argv0),
        ref_runner: given.ref_runner.or(file.ref_runner),
        cand_runner: given.cand_runner.or(file.cand_runner),
        same_runner: given.same_runner.or(file.same_runner),
        // A later value for a name wins when the arms' environment is set.
        env: file.env.into_iter().chain(given.env).collect(),
        ref_rev: given.ref_rev.or(file.ref_rev),
        build_command: given.build_command.or(file.build_command),
        build_program: given.build_program.or(file.build_program),
    }
}

#[cfg(test)]
mod tests;
