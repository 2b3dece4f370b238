//! Checking what a project file names before the run uses it: that the arms'
//! programs exist, each tree loads and the flag-set file parses, each reported at
//! the line and column of its key. Only the values the command line leaves in
//! place are checked; what the command line gives is checked when the run is
//! resolved, with its own messages.

use std::path::Path;

use super::{command_line_chooses_flag_sets, Layer, Place, ProjectError, ProjectFile};
use crate::{config, fixtures, flagset};

/// A value of the file the run uses, and how to check it.
pub(super) enum Used<'a> {
    Program(&'a str, &'a Place),
    FlagSets(&'a str, &'a Place),
    Tree(&'a str, &'a Place),
}

impl ProjectFile {
    /// The file's values that [`merge_unchecked`](super::merge) keeps under `given`.
    pub(super) fn what_the_run_uses(&self, given: &Layer, self_check: bool) -> Vec<Used<'_>> {
        let (ours, places) = (&self.options, &self.places);
        let mut used = Vec::new();
        let arms = [
            (
                given.reference.is_none(),
                &ours.reference,
                &places.reference,
            ),
            (
                given.candidate.is_none() && !self_check,
                &ours.candidate,
                &places.candidate,
            ),
        ];
        for (from_file, command, place) in arms {
            if let (true, Some(command), Some(place)) = (from_file, command, place) {
                used.push(Used::Program(command, place));
            }
        }
        if !command_line_chooses_flag_sets(given) {
            if let (Some(named), Some(place)) = (&ours.flagsets, &places.flagsets) {
                used.push(Used::FlagSets(named, place));
            }
        }
        if given.trees.is_empty() {
            let trees = ours.trees.iter().zip(&places.trees);
            used.extend(trees.map(|(tree, place)| Used::Tree(tree, place)));
        }
        used
    }

    /// The first value that names nothing, reported at its place.
    pub(super) fn check(&self, used: Vec<Used<'_>>) -> Result<(), ProjectError> {
        for value in used {
            let (checked, place) = match value {
                Used::Program(command, place) => (program_exists(command), place),
                Used::FlagSets(named, place) => (flag_set_file_loads(named), place),
                Used::Tree(tree, place) => (tree_loads(tree), place),
            };
            checked.map_err(|message| ProjectError::At {
                file: self.path.display().to_string(),
                line: place.line,
                column: place.column,
                message: format!("{}: {message}", place.key),
            })?;
        }
        Ok(())
    }
}

/// An arm's program is a file there (a path with a folder part) or on PATH, as
/// the run will look for it.
fn program_exists(command: &str) -> Result<(), String> {
    let words =
        shell_words::split(command).map_err(|e| format!("cannot split `{command}`: {e}"))?;
    let program = words.first().map_or("", String::as_str);
    if config::locate_program(program).is_some() {
        return Ok(());
    }
    let why = if Path::new(program).components().count() > 1 {
        "does not exist (or is not a file)"
    } else {
        "not found on PATH"
    };
    Err(format!("program `{program}` {why}"))
}

/// The flag-set file loads, read as `--flagsets` reads it: a path when a file is
/// there or the name has a folder part or ends in `.sets`, else a built-in name.
fn flag_set_file_loads(named: &str) -> Result<(), String> {
    let path = Path::new(named);
    if path.is_file() || named.contains(['/', '\\']) || named.ends_with(".sets") {
        return flagset::load(path)
            .map(drop)
            .map_err(|err| with_causes(&err));
    }
    if flagset::builtin_names().any(|builtin| builtin == named) {
        return Ok(());
    }
    let known = flagset::builtin_names().collect::<Vec<_>>().join(", ");
    Err(format!(
        "`{named}`: no such file, and no built-in flag sets of that name ({known})"
    ))
}

/// The tree is had as the run will have it: a built-in name, a folder, or a
/// `.tree` spec that reads and parses.
fn tree_loads(tree: &str) -> Result<(), String> {
    if fixtures::is_builtin(tree) || Path::new(tree).is_dir() {
        return Ok(());
    }
    fixtures::spec_named(tree)
        .map(drop)
        .map_err(|err| with_causes(&err))
}

/// An error and its causes, `error: cause: cause`, as the binary prints a chain.
fn with_causes(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut cause = err.source();
    while let Some(inner) = cause {
        message = format!("{message}: {inner}");
        cause = inner.source();
    }
    message
}
