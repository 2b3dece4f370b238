//! Running a build command: no shell, stdin from the null device, its stdout and
//! stderr captured together in a temp file (nothing of it reaches the terminal
//! unless it fails, and then only its last lines), in its own process group so an
//! interrupt kills the whole build.

use std::io::{Read, Seek};
use std::path::Path;
use std::process::{Command, Stdio};

use super::BuildError;
use crate::cleanup;

/// How many of a failed build's last lines its error shows.
pub const SHOWN_LINES: usize = 20;

/// Runs `command` in `folder` with the environment eqcheck has (a build needs the
/// user's PATH, cargo's home and so on) and waits for it.
pub(super) fn build(command: &[String], folder: &Path) -> Result<(), BuildError> {
    let joined = shell_words::join(command);
    let spawn_error = |source| BuildError::Spawn {
        command: joined.clone(),
        folder: folder.to_path_buf(),
        source,
    };
    let (program, args) = command
        .split_first()
        .expect("resolving refuses an empty command");
    // A relative program path with a folder part (`./build.sh`) starts where the
    // build runs, on every OS.
    let program = match Path::new(program).components().count() > 1 {
        true => folder.join(program),
        false => program.into(),
    };
    let mut log = tempfile::tempfile().map_err(spawn_error)?;
    let mut child = Command::new(&program);
    child
        .args(args)
        .current_dir(folder)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(spawn_error)?)
        .stderr(log.try_clone().map_err(spawn_error)?);
    own_process_group(&mut child);
    let mut child = child.spawn().map_err(spawn_error)?;
    if !cleanup::register_group(child.id()) {
        let _ = child.wait();
        return Err(BuildError::Interrupted);
    }
    let status = child.wait();
    cleanup::forget_group(child.id());
    let status = status.map_err(spawn_error)?;
    if cleanup::interrupted() {
        return Err(BuildError::Interrupted);
    }
    if status.success() {
        return Ok(());
    }
    let mut text = Vec::new();
    let _ = log.rewind().and_then(|()| log.read_to_end(&mut text));
    Err(BuildError::Failed {
        command: joined,
        folder: folder.to_path_buf(),
        status: status.to_string(),
        last_lines: last_lines(&String::from_utf8_lossy(&text), SHOWN_LINES),
    })
}

/// The last `count` lines of `text`, each indented, or a note that it printed
/// nothing.
fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return "  (it printed nothing)".into();
    }
    let shown = &lines[lines.len().saturating_sub(count)..];
    let shown: Vec<String> = shown.iter().map(|line| format!("  {line}")).collect();
    shown.join("\n")
}

#[cfg(unix)]
fn own_process_group(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
}

#[cfg(not(unix))]
fn own_process_group(_command: &mut Command) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_shows_only_the_last_lines() {
        let text: String = (1..=30).map(|n| format!("line {n}\n")).collect();
        let shown = last_lines(&text, 20);
        assert!(shown.starts_with("  line 11\n"), "{shown}");
        assert!(shown.ends_with("  line 30"), "{shown}");
        assert_eq!(shown.lines().count(), 20);
        assert_eq!(last_lines("", 20), "  (it printed nothing)");
        assert_eq!(last_lines("only\n", 20), "  only");
    }
}
