//! The project config, `eqcheck.toml`: the arms, flag sets, trees, file systems, timeout, runs,
//! jobs, guard, user, `argv[0]` and environment a project keeps for testing its own
//! walker, so that `eqcheck --tree web/ --sets all` in its folder runs them. This
//! file owns finding it (in the working folder only, never a parent, unless
//! `--config PATH` names one; `--no-config` turns it off) and reading it into a
//! [`Layer`] whose every value knows its line and column. It checks only what
//! TOML and the keys' types say, and that `sets` and `flagsets` do not both name a
//! flag-set file; what the values mean is checked once, for the values the run
//! uses, when the merged options are resolved.
//!
//! ```toml
//! reference = "bin/du-old -x"      # split shell-word style, as --ref is
//! candidate = "bin/du-new -x"
//! flagsets = "ci/du.sets"          # a built-in name, or a path from this file's folder
//! sets = "sizes,depth"
//! trees = ["basic", "fixtures/web"]
//! fs = ["native", "ext4"]          # file systems spec trees are built on (as --fs)
//! timeout = 30                     # seconds
//! max_output = "4G"                # per stream; or a number of bytes
//! runs = 2
//! jobs = 4
//! guard = "content"                # metadata, content or off
//! as_user = "nobody"
//! argv0 = "du"                     # what both arms see as their program name
//! [env]
//! RUST_BACKTRACE = "0"
//! [build]                          # how `--ref-rev REV` builds the reference
//! command = "cargo build --release"
//! program = "target/release/mywalker -x"  # from the repository's top, then arguments
//! ```

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use super::{Given, Guard, Layer, Origin, Place};

/// The file looked for in the working folder.
pub const FILE_NAME: &str = "eqcheck.toml";

/// A loaded `eqcheck.toml`.
#[derive(Debug)]
pub struct ProjectFile {
    /// The path as found or given; messages and the run's note name it so.
    pub path: PathBuf,
    /// What the file sets, each value with its place.
    pub options: Layer,
}

/// Why the config could not be read: exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
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

/// The file as written; every value keeps its span.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    reference: Option<Spanned<String>>,
    candidate: Option<Spanned<String>>,
    flagsets: Option<Spanned<String>>,
    sets: Option<Spanned<String>>,
    trees: Option<Vec<Spanned<String>>>,
    fs: Option<Vec<Spanned<String>>>,
    timeout: Option<Spanned<f64>>,
    max_output: Option<Spanned<Size>>,
    runs: Option<Spanned<usize>>,
    jobs: Option<Spanned<usize>>,
    guard: Option<Spanned<Guard>>,
    as_user: Option<Spanned<UserName>>,
    argv0: Option<Spanned<String>>,
    ref_runner: Option<Spanned<String>>,
    cand_runner: Option<Spanned<String>>,
    same_runner: Option<Spanned<bool>>,
    env: Option<BTreeMap<Spanned<String>, String>>,
    build: Option<WrittenBuild>,
}

/// The `[build]` table. It has no revision: which one to build changes from run
/// to run (`--ref-rev`), how to build it is the project's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WrittenBuild {
    command: Option<Spanned<String>>,
    program: Option<Spanned<String>>,
}

/// `as_user`: a name, or a uid written as a number.
#[derive(Deserialize)]
#[serde(untagged, expecting = "expected a user name or a uid (a whole number)")]
enum UserName {
    Name(String),
    Uid(u32),
}

/// `max_output`: a size as `--max-output` takes it, or a number of bytes.
#[derive(Deserialize)]
#[serde(untagged, expecting = "expected a size (\"4G\") or a number of bytes")]
enum Size {
    Text(String),
    Bytes(u64),
}

/// The config a run uses: the file `--config` names, else `eqcheck.toml` in the
/// working folder when there is one; none with `--no-config`.
pub fn find(named: Option<&Path>, disabled: bool) -> Result<Option<ProjectFile>, FileError> {
    if disabled {
        return Ok(None);
    }
    let path = named.unwrap_or(Path::new(FILE_NAME));
    let text = match crate::userfile::read_to_string(path) {
        Ok(text) => text,
        Err(err) if named.is_none() && err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(source) => {
            return Err(FileError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    parse(path, &text).map(Some)
}

/// What TOML or the types refused, at its place and in a TOML file's words.
fn toml_error(path: &Path, text: &str, err: &toml::de::Error) -> FileError {
    let message = in_toml_words(err.message());
    match err.span() {
        // The span is the second key itself, which the message leaves unnamed.
        Some(span) if message == "duplicate key" => {
            let key = text.get(span.clone()).unwrap_or_default().trim();
            let said = format!("`{key}` is given twice; give it once");
            at(path, text, span, said)
        }
        Some(span) => match key_of_value_at(text, span.start) {
            Some(key) => at(path, text, span, format!("{key}: {message}")),
            None => at(path, text, span, message),
        },
        None => FileError::Whole {
            file: path.display().to_string(),
            message,
        },
    }
}

/// Parses a config's text; `path` names the file in errors and places, and its
/// folder is where the file's relative paths start.
pub fn parse(path: &Path, text: &str) -> Result<ProjectFile, FileError> {
    let written: Written = toml::from_str(text).map_err(|err| toml_error(path, text, &err))?;
    let given = |key: &'static str| move |value| spanned(path, text, key, value);
    let build = written.build.unwrap_or(WrittenBuild {
        command: None,
        program: None,
    });
    let mut options = Layer {
        reference: written.reference.map(given("reference")),
        candidate: written.candidate.map(given("candidate")),
        flagsets: written.flagsets.map(given("flagsets")),
        trees: (written.trees.into_iter().flatten())
            .map(given("trees"))
            .collect(),
        fs: (written.fs.into_iter().flatten())
            .map(given("fs"))
            .collect(),
        argv0: written.argv0.map(given("argv0")),
        ref_runner: written.ref_runner.map(given("ref_runner")),
        cand_runner: written.cand_runner.map(given("cand_runner")),
        same_runner: (written.same_runner).map(|v| spanned(path, text, "same_runner", v)),
        timeout: written.timeout.map(|v| spanned(path, text, "timeout", v)),
        max_output: written.max_output.map(|size| Given {
            origin: place(path, text, "max_output", size.span()),
            value: match size.into_inner() {
                Size::Text(text) => text,
                Size::Bytes(bytes) => bytes.to_string(),
            },
        }),
        runs: written.runs.map(|v| spanned(path, text, "runs", v)),
        jobs: written.jobs.map(|v| spanned(path, text, "jobs", v)),
        guard: written.guard.map(|v| spanned(path, text, "guard", v)),
        as_user: written.as_user.map(|user| Given {
            origin: place(path, text, "as_user", user.span()),
            value: match user.into_inner() {
                UserName::Name(name) => name,
                UserName::Uid(uid) => uid.to_string(),
            },
        }),
        sets: None,
        env: (written.env.unwrap_or_default().into_iter())
            .map(|(name, value)| (given("env")(name), value))
            .collect(),
        ref_rev: None,
        build_command: build.command.map(given("build.command")),
        build_program: build.program.map(given("build.program")),
    };
    if let Some(written_sets) = written.sets {
        take_sets(path, text, written_sets, &mut options)?;
    }
    Ok(ProjectFile {
        path: path.to_path_buf(),
        options,
    })
}

/// `sets` as written: groups of the flag-set file, or, when it names a file, the
/// flag-set file itself, so that a command-line `--sets GROUP` selects groups from
/// it. Which of the two it is must be known to merge, so a config that names two
/// flag-set files is refused here, even where the command line would replace both.
fn take_sets(
    path: &Path,
    text: &str,
    written_sets: Spanned<String>,
    options: &mut Layer,
) -> Result<(), FileError> {
    let span = written_sets.span();
    let sets = spanned(path, text, "sets", written_sets);
    if !sets.names_a_flag_set_file() {
        options.sets = Some(sets);
    } else if options.flagsets.is_some() {
        let message = "sets: names a flag-set file, and so does `flagsets`: keep one \
                       (`sets` may then name groups of it)";
        return Err(at(path, text, span, message.into()));
    } else {
        options.flagsets = Some(sets);
    }
    Ok(())
}

fn spanned<T>(path: &Path, text: &str, key: &'static str, value: Spanned<T>) -> Given<T> {
    Given {
        origin: place(path, text, key, value.span()),
        value: value.into_inner(),
    }
}

fn place(path: &Path, text: &str, key: &'static str, span: Range<usize>) -> Origin {
    let (line, column) = line_and_column(text, span.start);
    Origin::File(Place {
        file: path.to_path_buf(),
        line,
        column,
        key,
    })
}

fn at(path: &Path, text: &str, span: Range<usize>, message: String) -> FileError {
    let (line, column) = line_and_column(text, span.start);
    FileError::At {
        file: path.display().to_string(),
        line,
        column,
        message,
    }
}

/// The key whose value starts before `offset` on its line (`runs` for an error at
/// `runs = "two"`), so that a message about a value names its key as the checks
/// after reading do; none for an error in a key itself.
fn key_of_value_at(text: &str, offset: usize) -> Option<&str> {
    let before = text.get(..offset)?;
    let line = before.rsplit('\n').next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim().trim_matches('"');
    (!key.is_empty()).then_some(key)
}

/// The 1-based line and column (in characters) of a byte offset.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// serde's messages speak of fields, variants and Rust types; a TOML file has keys,
/// values and numbers.
fn in_toml_words(message: &str) -> String {
    let message = message.trim_end();
    let message = match message.strip_prefix("unknown field") {
        Some(rest) => format!(
            "unknown key{}",
            rest.replacen(", expected one of", "; known keys:", 1)
        ),
        None => message.replacen("unknown variant", "unknown value", 1),
    };
    message
        .replacen("expected usize", "expected a whole number", 1)
        .replacen("expected u32", "expected a whole number", 1)
        .replacen("expected f64", "expected a number", 1)
}

#[cfg(test)]
mod tests;
