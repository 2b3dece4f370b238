//! The project config, `eqcheck.toml`: the arms, flag sets, trees, timeout, runs,
//! jobs, guard, user and environment a project keeps for testing its own walker, so
//! that `eqcheck --tree web/ --sets all` in its folder runs them. This file owns
//! finding it (in the working folder only, never a parent, unless `--config PATH`
//! names one; `--no-config` turns it off), reading it, making its paths relative to
//! the working folder, and merging it under the command line. A mistake in it is a
//! usage error (exit 2) reported as `FILE:LINE:COL: what is wrong`, and so is a
//! value the run uses that names nothing: a program, tree or flag-set file that
//! does not exist or does not load (checked in `project::check`).
//!
//! ```toml
//! reference = "bin/du-old -x"      # split shell-word style, as --ref is
//! candidate = "bin/du-new -x"
//! flagsets = "ci/du.sets"          # a built-in name, or a path from this file's folder
//! sets = "sizes,depth"
//! trees = ["basic", "fixtures/web"]
//! timeout = 30                     # seconds
//! runs = 2
//! jobs = 4
//! guard = "content"
//! as_user = "nobody"
//! [env]
//! RUST_BACKTRACE = "0"
//! ```

mod check;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::config::{self, RunRequest};
use crate::flagset::FlagSetError::UnknownGroup;
use crate::{fixtures, flagset};

/// The file looked for in the working folder.
pub const FILE_NAME: &str = "eqcheck.toml";
/// `--sets` when neither the command line nor the file says.
pub const DEFAULT_SETS: &str = "all";
/// `--timeout` when neither says.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// `--guard` when neither says.
pub const DEFAULT_GUARD: &str = "metadata";

/// The run options both the command line and the file can give, `None` (or empty)
/// where one gave nothing, so that merging can tell "not given" from a default.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Layer {
    pub reference: Option<String>,
    pub candidate: Option<String>,
    pub flagsets: Option<String>,
    pub sets: Option<String>,
    /// Empty: none named here.
    pub trees: Vec<String>,
    pub timeout: Option<Duration>,
    pub runs: Option<usize>,
    pub jobs: Option<usize>,
    pub guard: Option<String>,
    pub as_user: Option<String>,
    /// Overrides for both arms, over the pinned environment and the flag-set file's.
    pub env: Vec<(String, String)>,
}

/// A loaded `eqcheck.toml`.
#[derive(Debug)]
pub struct ProjectFile {
    /// The path as found or given; messages and the run's note name it so.
    pub path: PathBuf,
    /// What the file sets, its paths already rebased onto the working folder.
    pub options: Layer,
    places: Places,
}

/// Where a value that names something outside the file was written, to say so
/// when what it names is missing. Only a value the run uses is looked at: one the
/// command line replaces may name what does not exist here.
#[derive(Debug)]
struct Place {
    key: &'static str,
    line: usize,
    column: usize,
}

/// The places of the values checked when merging, beside `options`' values.
#[derive(Debug, Default)]
struct Places {
    reference: Option<Place>,
    candidate: Option<Place>,
    /// `flagsets`, or `sets` when it names the flag-set file.
    flagsets: Option<Place>,
    /// `sets` when it names groups: known to exist only once the flag-set file
    /// the run uses is loaded.
    sets: Option<Place>,
    /// One per tree, in order.
    trees: Vec<Place>,
}

/// Why the config could not be used: exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: {message}")]
    At {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}: {message}")]
    Whole { file: String, message: String },
}

/// The file as written; every value the file can get wrong keeps its span.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    reference: Option<Spanned<String>>,
    candidate: Option<Spanned<String>>,
    flagsets: Option<Spanned<String>>,
    sets: Option<Spanned<String>>,
    trees: Option<Vec<Spanned<String>>>,
    timeout: Option<Spanned<f64>>,
    runs: Option<Spanned<usize>>,
    jobs: Option<Spanned<usize>>,
    guard: Option<Spanned<String>>,
    as_user: Option<Spanned<toml::Value>>,
    env: Option<BTreeMap<Spanned<String>, String>>,
}

/// The config a run uses: the file `--config` names, else `eqcheck.toml` in the
/// working folder when there is one; none with `--no-config`.
pub fn find(named: Option<&Path>, disabled: bool) -> Result<Option<ProjectFile>, ProjectError> {
    if disabled {
        return Ok(None);
    }
    let path = named.unwrap_or(Path::new(FILE_NAME));
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if named.is_none() && err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(source) => {
            return Err(ProjectError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    parse(path, &text).map(Some)
}

/// Parses a config's text. `path` names the file in errors, and its folder is where
/// the file's relative paths start.
pub fn parse(path: &Path, text: &str) -> Result<ProjectFile, ProjectError> {
    let file = path.display().to_string();
    let at = |span: Range<usize>, message: String| {
        let (line, column) = line_and_column(text, span.start);
        ProjectError::At {
            file: file.clone(),
            line,
            column,
            message,
        }
    };
    let written: Written = toml::from_str(text).map_err(|err| {
        let message = in_toml_words(err.message());
        match err.span() {
            Some(span) => at(span, message),
            None => ProjectError::Whole {
                file: file.clone(),
                message,
            },
        }
    })?;
    let place = |key: &'static str, span: Range<usize>| {
        let (line, column) = line_and_column(text, span.start);
        Place { key, line, column }
    };
    let mut places = Places {
        reference: (written.reference.as_ref()).map(|value| place("reference", value.span())),
        candidate: (written.candidate.as_ref()).map(|value| place("candidate", value.span())),
        flagsets: (written.flagsets.as_ref()).map(|value| place("flagsets", value.span())),
        sets: None,
        trees: (written.trees.iter().flatten())
            .map(|value| place("trees", value.span()))
            .collect(),
    };
    let folder = path.parent().unwrap_or(Path::new(""));
    let command = |value: Spanned<String>| {
        arm_command(value.get_ref(), folder).map_err(|message| at(value.span(), message))
    };
    let mut options = Layer {
        reference: written.reference.map(command).transpose()?,
        candidate: written.candidate.map(command).transpose()?,
        flagsets: (written.flagsets).map(|named| flag_set_file(named.get_ref(), folder)),
        trees: (written.trees.iter().flatten())
            .map(|name| tree(name.get_ref(), folder))
            .collect(),
        ..Layer::default()
    };
    if let Some(sets) = written.sets {
        // A flag-set file given as `sets` is the file's flag-set file, so that a
        // command-line `--sets GROUP` selects groups from it.
        if sets_names_a_file(sets.get_ref(), folder) {
            if options.flagsets.is_some() {
                let message = "`sets` names a flag-set file and so does `flagsets`: keep one \
                               (`sets` may then name groups of it)";
                return Err(at(sets.span(), message.into()));
            }
            options.flagsets = Some(rebase(sets.get_ref(), folder));
            places.flagsets = Some(place("sets", sets.span()));
        } else {
            places.sets = Some(place("sets", sets.span()));
            options.sets = Some(sets.into_inner());
        }
    }
    if let Some(secs) = written.timeout {
        let timeout = Some(*secs.get_ref())
            .filter(|s| *s > 0.0)
            .and_then(|s| Duration::try_from_secs_f64(s).ok());
        let message = format!("`timeout` must be seconds more than 0, not {secs}");
        options.timeout = Some(timeout.ok_or_else(|| at(secs.span(), message))?);
    }
    for (key, count, into) in [
        ("runs", written.runs, &mut options.runs),
        ("jobs", written.jobs, &mut options.jobs),
    ] {
        if let Some(count) = count {
            if *count.get_ref() == 0 {
                return Err(at(count.span(), format!("`{key}` must be at least 1")));
            }
            *into = Some(count.into_inner());
        }
    }
    if let Some(guard) = written.guard {
        if !["metadata", "content", "off"].contains(&guard.get_ref().as_str()) {
            let message = format!("guard `{guard}`: expected metadata, content or off");
            return Err(at(guard.span(), message));
        }
        options.guard = Some(guard.into_inner());
    }
    if let Some(user) = written.as_user {
        options.as_user = Some(match user.get_ref() {
            toml::Value::String(name) if name.parse::<u32>().is_err() && !user_exists(name) => {
                return Err(at(user.span(), format!("as_user `{name}`: no such user")));
            }
            toml::Value::String(name) => name.clone(),
            toml::Value::Integer(uid) if *uid >= 0 => uid.to_string(),
            _ => {
                let message = "`as_user` must be a user name or a uid".to_string();
                return Err(at(user.span(), message));
            }
        });
    }
    for (name, value) in written.env.unwrap_or_default() {
        if name.get_ref().is_empty() || name.get_ref().contains(['=', '\0']) {
            let message = format!("env `{name}`: a name must be non-empty, without `=` or NUL");
            return Err(at(name.span(), message));
        }
        if value.contains('\0') {
            return Err(at(
                name.span(),
                format!("env `{name}`: the value holds a NUL"),
            ));
        }
        options.env.push((name.into_inner(), value));
    }
    Ok(ProjectFile {
        path: path.to_path_buf(),
        options,
        places,
    })
}

/// The options a run uses: the command line's over the file's, key by key, except
/// where taking one key from each side would make a run nobody asked for:
/// - `--ref` or `--cand` alone replaces that arm of the file's and keeps the other;
///   under `--self-check` the file's candidate is left out (the reference runs
///   against itself);
/// - `--tree` replaces the file's whole list;
/// - a flag-set file chosen on the command line (`--flagsets`, or `--sets FILE`)
///   replaces the file's flag-set file and its `sets`; `--sets GROUPS` alone selects
///   groups from the file's flag-set file;
/// - the file's `as_user` is left out under `--as-root`, and when eqcheck does not
///   run as root (where it means nothing), so one file serves root CI and laptops.
///
/// What the run takes from the file is then checked, each value at its place: the
/// arms' programs exist, each tree is a built-in name, a folder or a tree spec that
/// loads, and the flag-set file is a built-in name or a file that parses. (What the
/// command line gives is checked when the run is resolved, with its own messages.)
pub fn merge(
    given: Layer,
    file: Option<&ProjectFile>,
    self_check: bool,
    as_root: bool,
) -> Result<Layer, ProjectError> {
    let Some(file) = file else {
        return Ok(given);
    };
    let used = file.what_the_run_uses(&given, self_check);
    let merged = merge_unchecked(given, file, self_check, as_root)?;
    file.check(used)?;
    Ok(merged)
}

/// [`merge`] without looking at what the file's values name.
fn merge_unchecked(
    given: Layer,
    file: &ProjectFile,
    self_check: bool,
    as_root: bool,
) -> Result<Layer, ProjectError> {
    let chosen_here = command_line_chooses_flag_sets(&given);
    let ours = file.options.clone();
    let reference = given.reference.or(ours.reference.clone());
    let candidate = if self_check {
        given.candidate
    } else {
        given.candidate.or(ours.candidate.clone())
    };
    if !self_check && reference.is_some() != candidate.is_some() {
        let half = match (&ours.reference, &ours.candidate) {
            (Some(_), None) => Some(("reference", "candidate", "cand")),
            (None, Some(_)) => Some(("candidate", "reference", "ref")),
            _ => None,
        };
        if let Some((has, lacks, flag)) = half {
            return Err(ProjectError::Whole {
                file: file.path.display().to_string(),
                message: format!("gives `{has}` but no `{lacks}`: add `{lacks}`, or give --{flag}"),
            });
        }
    }
    let (flagsets, sets) = if chosen_here {
        (given.flagsets, given.sets)
    } else {
        (ours.flagsets, given.sets.or(ours.sets))
    };
    let file_user = ours.as_user.filter(|_| !as_root && running_as_root());
    Ok(Layer {
        reference,
        candidate,
        flagsets,
        sets,
        trees: if given.trees.is_empty() {
            ours.trees
        } else {
            given.trees
        },
        timeout: given.timeout.or(ours.timeout),
        runs: given.runs.or(ours.runs),
        jobs: given.jobs.or(ours.jobs),
        guard: given.guard.or(ours.guard),
        as_user: given.as_user.or(file_user),
        // A later value for a name wins when the arms' environment is set.
        env: ours.env.into_iter().chain(given.env).collect(),
    })
}

/// A group the file's `sets` names but the flag-set file lacks, said at `sets`
/// when the run selects its groups by the file's `sets` (the command line gave
/// neither `--sets` nor `--flagsets`). Any other error stays as it is.
pub fn place_unknown_group(
    file: Option<&ProjectFile>,
    by_file_sets: bool,
    err: config::ConfigError,
) -> anyhow::Error {
    let place = file.and_then(|f| f.places.sets.as_ref().map(|place| (f, place)));
    match (&err, place) {
        (config::ConfigError::FlagSet(unknown @ UnknownGroup { .. }), Some((file, place)))
            if by_file_sets =>
        {
            ProjectError::At {
                file: file.path.display().to_string(),
                line: place.line,
                column: place.column,
                message: format!("{}: {unknown}", place.key),
            }
            .into()
        }
        _ => err.into(),
    }
}

/// Whether the command line names the flag-set file, which then replaces the
/// file's `flagsets` and `sets`.
fn command_line_chooses_flag_sets(given: &Layer) -> bool {
    given.flagsets.is_some() || given.sets.as_deref().is_some_and(config::sets_names_a_file)
}

impl Layer {
    /// The request these options make, with the defaults where no layer gave a
    /// value; options only the command line has are left for the caller to set.
    pub fn into_request(self) -> RunRequest {
        RunRequest {
            trees: self.trees,
            sets: self.sets.unwrap_or_else(|| DEFAULT_SETS.to_string()),
            reference: self.reference,
            candidate: self.candidate,
            jobs: self.jobs,
            timeout: self.timeout.unwrap_or(DEFAULT_TIMEOUT),
            as_user: self.as_user,
            guard: self.guard.unwrap_or_else(|| DEFAULT_GUARD.to_string()),
            flagsets: self.flagsets,
            runs: self.runs,
            env: self.env,
            ..RunRequest::default()
        }
    }
}

/// An arm's command, checked to split. A relative program path with a folder part
/// starts at the config's folder, as the file's other paths do; a bare name is
/// looked up on PATH.
fn arm_command(text: &str, folder: &Path) -> Result<String, String> {
    let mut words = shell_words::split(text).map_err(|e| format!("cannot split `{text}`: {e}"))?;
    let Some(program) = words.first_mut() else {
        return Err("the command is empty".into());
    };
    let path = Path::new(program.as_str());
    if folder.as_os_str().is_empty() || path.is_absolute() || path.components().count() < 2 {
        return Ok(text.to_string());
    }
    *program = rebase(program, folder);
    Ok(shell_words::join(&words))
}

/// A tree the file names: a built-in name stays a name (it wins over a folder of the
/// same name, as on the command line); anything else is a path from the config's
/// folder.
fn tree(name: &str, folder: &Path) -> String {
    if fixtures::is_builtin(name) {
        name.to_string()
    } else {
        rebase(name, folder)
    }
}

/// The flag-set file the file names: a built-in name stays a name; anything else is a
/// path from the config's folder.
fn flag_set_file(named: &str, folder: &Path) -> String {
    if flagset::builtin_names().any(|builtin| builtin == named) {
        named.to_string()
    } else {
        rebase(named, folder)
    }
}

/// `sets` read as `--sets` reads it, but from the config's folder.
fn sets_names_a_file(selector: &str, folder: &Path) -> bool {
    folder.join(selector).is_file() || selector.ends_with(".sets")
}

/// `relative` from the config's folder, as a path from the working folder. A file
/// found in the working folder leaves paths as written, so `./edge` stays a folder
/// and is never mistaken for the built-in tree.
fn rebase(relative: &str, folder: &Path) -> String {
    if folder.as_os_str().is_empty() {
        return relative.to_string();
    }
    let relative = Path::new(relative);
    // A leading `./` is dropped: `sub/./web` would name the tree so in the report.
    let inside: PathBuf = (relative.components())
        .skip_while(|c| *c == Component::CurDir)
        .collect();
    folder.join(inside).to_string_lossy().into_owned()
}

/// The 1-based line and column (in characters) of a byte offset.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// serde's messages speak of fields and Rust types; a TOML file has keys and numbers.
fn in_toml_words(message: &str) -> String {
    message
        .trim_end()
        .replacen("unknown field", "unknown key", 1)
        .replacen(", expected one of", "; known keys:", 1)
        .replacen("expected usize", "expected a whole number", 1)
        .replacen("expected f64", "expected a number", 1)
}

#[cfg(unix)]
fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Elsewhere the arms run as whoever runs eqcheck.
#[cfg(not(unix))]
fn running_as_root() -> bool {
    false
}

/// Whether the system's user database knows the name.
#[cfg(unix)]
fn user_exists(name: &str) -> bool {
    uzers::get_user_by_name(name).is_some()
}

/// Elsewhere `as_user` is never used, so any name passes.
#[cfg(not(unix))]
fn user_exists(_name: &str) -> bool {
    true
}

#[cfg(test)]
mod tests;
