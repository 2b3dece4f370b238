//! The arms of a run whose reference is built from a git revision (`--ref-rev`):
//! the revision, the `[build]` table's command and program checked at their
//! places, and the arms as they will run once built, their program the path the
//! build leaves it at until the build has run. Nothing is built or looked up in
//! git here; that waits until every option is known to be right.

use std::path::{Component, Path};

use super::{arm, SettingsError};
use crate::build::{self, CandidateBuild, Plan};
use crate::matrix::arm::{file_name, Arm};
use crate::settings::{Given, Layer};

/// The reference built from `rev`; the candidate as given, else the same program
/// built from the working tree (or, under `--self-check`, the reference itself).
/// The program is `[build] program`, else the given candidate's program with its
/// leading arguments.
pub(super) fn arms(
    rev: &Given<String>,
    options: &Layer,
    self_check: bool,
) -> Result<(Arm, Arm, Plan), SettingsError> {
    revision(rev)?;
    let command = command(options.build_command.as_ref())?;
    if self_check && options.candidate.is_some() {
        return Err(SettingsError::SelfCheckWithCandidate);
    }
    let candidate = options.candidate.as_ref().map(arm).transpose()?;
    let (program, reference) = match (&options.build_program, &candidate) {
        (Some(given), _) => {
            let (path, args) = program(given)?;
            let words = std::iter::once(path.clone()).chain(args);
            let reference = Arm {
                command: words.collect(),
                argv0: file_name(&path),
                is_eqcheck: false,
                copied_from: None,
                runner: None,
                built_from: None,
            };
            (Some(path), reference)
        }
        (None, Some(candidate)) => (None, candidate.clone()),
        (None, None) => {
            let message = "needs `program` in the `[build]` table of eqcheck.toml (the built file's path from the repository's top, such as target/release/NAME), or --cand to take it from";
            return Err(SettingsError::at(rev, message.into()));
        }
    };
    let (candidate, built) = match candidate {
        Some(candidate) => (candidate, CandidateBuild::Given),
        None if self_check => (reference.clone(), CandidateBuild::TheReference),
        None => (reference.clone(), CandidateBuild::WorkingTree),
    };
    let plan = Plan {
        rev: rev.value.clone(),
        command,
        program,
        candidate: built,
    };
    Ok((reference, candidate, plan))
}

/// A revision as git would take it; whether it names a commit is git's to say.
fn revision(rev: &Given<String>) -> Result<(), SettingsError> {
    if rev.value.trim().is_empty() {
        return Err(SettingsError::at(rev, "the revision is empty".into()));
    }
    if rev.value.starts_with('-') {
        let message = format!("`{}`: a revision does not start with `-`", rev.value);
        return Err(SettingsError::at(rev, message));
    }
    Ok(())
}

/// `[build] command`, split; `cargo build --release` when not given.
fn command(given: Option<&Given<String>>) -> Result<Vec<String>, SettingsError> {
    let Some(given) = given else {
        return Ok(shell_words::split(build::DEFAULT_COMMAND).expect("the default splits"));
    };
    let words = shell_words::split(&given.value)
        .map_err(|e| SettingsError::at(given, format!("cannot split `{}`: {e}", given.value)))?;
    match words.is_empty() {
        true => Err(SettingsError::at(given, "the command is empty".into())),
        false => Ok(words),
    }
}

/// `[build] program`: the built file's path inside the repository, then the
/// arms' leading arguments.
fn program(given: &Given<String>) -> Result<(String, Vec<String>), SettingsError> {
    let mut words = shell_words::split(&given.value)
        .map_err(|e| SettingsError::at(given, format!("cannot split `{}`: {e}", given.value)))?;
    if words.is_empty() {
        return Err(SettingsError::at(given, "the program is empty".into()));
    }
    let path = words.remove(0);
    let inside = Path::new(&path)
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !inside {
        let message = format!(
            "`{path}`: give the built file's path from the repository's top, inside it (such as target/release/NAME)"
        );
        return Err(SettingsError::at(given, message));
    }
    // `./out/w` and `out/w` are one file, and one cache entry.
    let path = Path::new(&path)
        .components()
        .filter(|c| *c != Component::CurDir)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    if path.is_empty() {
        return Err(SettingsError::at(
            given,
            "names a folder, not the built file".into(),
        ));
    }
    Ok((path, words))
}
