//! Reporters: each reads a [`RunOutcome`] and writes one format. They never look at
//! the command line or the matrix. This file owns where the reports go: every
//! destination is opened before the run (a path that cannot be written is a usage
//! error before any arm runs), a report file is only replaced once its report is
//! complete (`destination.rs`), at most one report takes stdout, and the terminal
//! report and GitHub annotations move to stderr when one does.

pub mod bench;
mod destination;
pub mod github;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod probe;
pub mod progress;
pub mod summary;
pub mod text;

use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use crate::outcome::{Progress, RunOutcome};
use destination::Destination;

/// When the terminal report is coloured (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorChoice {
    /// Only when the report's stream is a terminal and `NO_COLOR` is not set.
    #[default]
    Auto,
    /// Always, `NO_COLOR` notwithstanding.
    Always,
    Never,
}

impl ColorChoice {
    /// Whether to colour a stream: `always` wins over `NO_COLOR`, which wins over
    /// a terminal.
    pub fn enabled(self, on_terminal: bool, no_color: bool) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => on_terminal && !no_color,
        }
    }
}

/// What the environment says about where the run is.
#[derive(Debug, Clone, Default)]
pub struct Environment {
    /// `GITHUB_ACTIONS=true`: print annotations and fill the step summary.
    pub github_actions: bool,
    /// `GITHUB_STEP_SUMMARY`: the file the Markdown report is appended to.
    pub step_summary: Option<PathBuf>,
    /// `NO_COLOR` set to anything but the empty string (no-color.org).
    pub no_color: bool,
}

impl Environment {
    /// The process's own environment.
    pub fn current() -> Environment {
        let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        Environment {
            github_actions: std::env::var_os("GITHUB_ACTIONS").is_some_and(|v| v == "true"),
            step_summary: set("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            no_color: set("NO_COLOR").is_some(),
        }
    }
}

/// The reports a run asked for; each path may be `-` for stdout.
#[derive(Debug, Clone, Default)]
pub struct ReportRequest {
    pub json: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub junit: Option<PathBuf>,
    pub color: ColorChoice,
    pub environment: Environment,
    /// The folders the arms read that eqcheck did not build (the user's own
    /// trees). No report goes inside one: see [`inside_a_tree`].
    pub trees_read: Vec<PathBuf>,
}

/// A report that cannot go where it was asked to: a usage error (exit 2) before
/// the run, or a write that failed after it.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    // The cause is printed with the message, not as a source, or the error chain
    // would print it twice.
    #[error("{destination}: {cause}")]
    Open {
        /// The flag or variable and its path, as the user gave them.
        destination: String,
        cause: io::Error,
    },
    #[error("{first} - and {second} - both ask for stdout: send one of them to a file")]
    TwoOnStdout {
        first: &'static str,
        second: &'static str,
    },
    #[error("{first} and {second} both name {}: give each report its own file", path.display())]
    OneFileTwice {
        first: &'static str,
        second: &'static str,
        path: PathBuf,
    },
    #[error("{flag} {}: inside the tree {}, which the arms read: eqcheck never writes into a tree it compares; write the report outside it", path.display(), tree.display())]
    InsideTree {
        flag: &'static str,
        path: PathBuf,
        tree: PathBuf,
    },
    #[error("cannot write the {format} report{at}")]
    Write {
        format: &'static str,
        /// ` to PATH` for a report written to a file the user named, else empty.
        at: String,
        source: io::Error,
    },
}

/// Every destination, opened, and the progress bar shown while the run goes.
pub struct Reports {
    json: Option<Destination>,
    markdown: Option<Destination>,
    junit: Option<Destination>,
    step_summary: Option<File>,
    /// The file each report written to a path goes to, by format, so that a
    /// failure to write it at the end names it.
    paths: Vec<(&'static str, PathBuf)>,
    /// A file report holds stdout: the text report and annotations use stderr.
    stdout_taken: bool,
    colors: text::Colors,
    github_actions: bool,
    progress: progress::Bar,
}

/// Opens every destination the request names, before the run.
pub fn open(request: &ReportRequest) -> Result<Reports, ReportError> {
    let stdout_taken = check_destinations(request)?;
    let env = &request.environment;
    Ok(Reports {
        json: open_report("--json", &request.json)?,
        markdown: open_report("--markdown", &request.markdown)?,
        junit: open_report("--junit", &request.junit)?,
        step_summary: open_step_summary(env)?,
        paths: report_paths(request),
        stdout_taken,
        colors: text_colors(request.color, env, stdout_taken),
        github_actions: env.github_actions,
        progress: progress::Bar::on_stderr(),
    })
}

/// Refuses two reports on stdout, two in one file (the second would replace the
/// first), or one inside a tree the arms read; says whether a report takes stdout.
fn check_destinations(request: &ReportRequest) -> Result<bool, ReportError> {
    let asked = [
        ("--json", &request.json),
        ("--markdown", &request.markdown),
        ("--junit", &request.junit),
    ];
    let on_stdout: Vec<&'static str> = asked
        .iter()
        .filter(|(_, path)| path.as_deref().is_some_and(is_stdout))
        .map(|(flag, _)| *flag)
        .collect();
    if let [first, second, ..] = on_stdout[..] {
        return Err(ReportError::TwoOnStdout { first, second });
    }
    let files: Vec<(&'static str, PathBuf)> = asked
        .iter()
        .filter_map(|(flag, path)| {
            let path = path.as_deref().filter(|p| !is_stdout(p))?;
            Some((*flag, resolved(path)))
        })
        .collect();
    for (flag, path) in asked {
        let Some(path) = path.as_deref().filter(|p| !is_stdout(p)) else {
            continue;
        };
        if let Some(tree) = inside_a_tree(path, &request.trees_read) {
            return Err(ReportError::InsideTree {
                flag,
                path: path.to_path_buf(),
                tree: tree.to_path_buf(),
            });
        }
    }
    for (i, (first, path)) in files.iter().enumerate() {
        if let Some((second, _)) = files[i + 1..].iter().find(|(_, other)| other == path) {
            return Err(ReportError::OneFileTwice {
                first,
                second,
                path: path.clone(),
            });
        }
    }
    Ok(!on_stdout.is_empty())
}

/// The tree of `trees` that the report file at `path` (as `resolved` gives it) would be
/// written in. A report there would change the tree the arms compare: its staging
/// folder is made before the run, in the report's folder, where the arms would list
/// it (and the tree guard blame them), and the report itself would be in the tree
/// the next run reads. Staging elsewhere would not help: the rename that puts the
/// report in place needs the staging folder on the report's own file system, and
/// the report still lands in the tree. A device or FIFO already there (written in
/// place, never created) adds no entry and is let through.
pub fn inside_a_tree<'a>(path: &Path, trees: &'a [PathBuf]) -> Option<&'a Path> {
    let path = resolved(path);
    let adds_an_entry = std::fs::metadata(&path).map_or(true, |meta| meta.is_file());
    let tree = trees.iter().find(|tree| path.starts_with(tree))?;
    adds_an_entry.then_some(tree.as_path())
}

/// The file a report path ends at, symlinks followed (dangling ones too, which
/// writing would create): `--json F --markdown L`, with L a link to F, name one
/// file. A path not there yet ends in its folder's.
fn resolved(path: &Path) -> PathBuf {
    let mut path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    // As many links as the kernel follows before it gives up (ELOOP).
    for _ in 0..40 {
        let Ok(target) = std::fs::read_link(&path) else {
            break;
        };
        path = match path.parent() {
            Some(folder) => folder.join(target),
            None => target,
        };
    }
    match (path.parent(), path.file_name()) {
        (Some(folder), Some(name)) => std::fs::canonicalize(folder)
            .map(|f| f.join(name))
            .unwrap_or(path.clone()),
        _ => path,
    }
}

/// The file each report goes to, by the format its write failure names.
fn report_paths(request: &ReportRequest) -> Vec<(&'static str, PathBuf)> {
    let named = [
        ("JSON", &request.json),
        ("Markdown", &request.markdown),
        ("JUnit", &request.junit),
        ("step summary", &request.environment.step_summary),
    ];
    (named.into_iter())
        .filter_map(|(format, path)| Some((format, path.clone()?)))
        .collect()
}

/// The destination of the report `flag` asks for, when it asks for one.
fn open_report(flag: &str, path: &Option<PathBuf>) -> Result<Option<Destination>, ReportError> {
    let Some(path) = path else {
        return Ok(None);
    };
    Destination::open(path)
        .map(Some)
        .map_err(|cause| ReportError::Open {
            destination: format!("{flag} {}", path.display()),
            cause,
        })
}

/// GitHub's step summary, appended to, when the run is a GitHub Actions step that
/// has one.
fn open_step_summary(env: &Environment) -> Result<Option<File>, ReportError> {
    let (Some(path), true) = (&env.step_summary, env.github_actions) else {
        return Ok(None);
    };
    File::options()
        .append(true)
        .create(true)
        .open(path)
        .map(Some)
        .map_err(|cause| ReportError::Open {
            destination: format!("GITHUB_STEP_SUMMARY={}", path.display()),
            cause,
        })
}

/// Whether the terminal report is coloured, judged on the stream it goes to.
fn text_colors(choice: ColorChoice, env: &Environment, stdout_taken: bool) -> text::Colors {
    let text_on_terminal = if stdout_taken {
        io::stderr().is_terminal()
    } else {
        io::stdout().is_terminal()
    };
    text::Colors {
        enabled: choice.enabled(text_on_terminal, env.no_color),
    }
}

impl Reports {
    /// The progress display to hand to the matrix runner.
    pub fn progress(&self) -> &dyn Progress {
        &self.progress
    }

    /// Clears the progress bar, as soon as the run ends (before anything else is
    /// printed, and before an interrupted run exits).
    pub fn end_progress(&self) {
        self.progress.clear();
    }

    /// Writes every report: the run's warnings and the terminal report, then each
    /// file report, the step summary and the annotations. All are attempted; the
    /// first failure is returned. A reader that stopped reading (`| head`) is not
    /// a failure: it does not change the verdict.
    pub fn write(mut self, outcome: &RunOutcome) -> Result<(), ReportError> {
        self.progress.clear();
        for warning in summary::warnings(outcome) {
            eprintln!("eqcheck: warning: {warning}");
        }
        let mut results = Vec::new();
        let colors = self.colors;
        let text = if self.stdout_taken {
            text::write(outcome, &mut io::stderr().lock(), colors)
        } else {
            text::write(outcome, &mut io::stdout().lock(), colors)
        };
        results.push(("text", text));
        // A report that fails to write is never finished: an earlier one at its
        // path stays.
        if let Some(mut out) = self.json.take() {
            let written = json::write(outcome, out.writer()).and_then(|()| out.finish());
            results.push(("JSON", written));
        }
        if let Some(mut out) = self.markdown.take() {
            let written = markdown::write(outcome, out.writer()).and_then(|()| out.finish());
            results.push(("Markdown", written));
        }
        if let Some(mut out) = self.junit.take() {
            let written = junit::write(outcome, out.writer()).and_then(|()| out.finish());
            results.push(("JUnit", written));
        }
        if let Some(mut file) = self.step_summary.take() {
            let appended = github::step_summary(outcome).and_then(|bytes| {
                // Other steps' summaries may precede ours in the same file.
                file.write_all(b"\n")?;
                file.write_all(&bytes)
            });
            results.push(("step summary", appended));
        }
        if self.github_actions {
            let annotated = if self.stdout_taken {
                github::write_annotations(outcome, &mut io::stderr().lock())
            } else {
                github::write_annotations(outcome, &mut io::stdout().lock())
            };
            results.push(("GitHub annotations", annotated));
        }
        first_failure(&self.paths, results)
    }
}

impl Reports {
    /// The progress line a bench shows between its runs.
    pub fn bench_progress(&self) -> &dyn crate::outcome::bench::BenchProgress {
        &self.progress
    }

    /// Writes a bench's reports: its warnings go under its table; the table on the
    /// terminal (stderr when a report holds stdout), then the JSON and Markdown
    /// files. All are attempted; the first failure is returned.
    pub fn write_bench(
        mut self,
        outcome: &crate::outcome::bench::BenchOutcome,
    ) -> Result<(), ReportError> {
        self.progress.clear();
        let aligned = bench::Layout::Aligned;
        let text = match self.stdout_taken {
            true => bench::write_table(outcome, aligned, &mut io::stderr().lock()),
            false => bench::write_table(outcome, aligned, &mut io::stdout().lock()),
        };
        let mut results = vec![("text", text)];
        if let Some(mut out) = self.json.take() {
            let written = bench::write_json(outcome, out.writer()).and_then(|()| out.finish());
            results.push(("JSON", written));
        }
        if let Some(mut out) = self.markdown.take() {
            let written = bench::write_table(outcome, bench::Layout::Markdown, out.writer())
                .and_then(|()| out.finish());
            results.push(("Markdown", written));
        }
        first_failure(&self.paths, results)
    }
}

/// The first report that failed to write, of all that were attempted. A reader
/// that stopped reading (`| head`) is not a failure: it does not change the verdict.
fn first_failure(
    paths: &[(&'static str, PathBuf)],
    results: Vec<(&'static str, io::Result<()>)>,
) -> Result<(), ReportError> {
    for (format, result) in results {
        match result {
            Err(err) if err.kind() != io::ErrorKind::BrokenPipe => {
                let at = (paths.iter())
                    .find(|(named, path)| *named == format && !is_stdout(path))
                    .map_or(String::new(), |(_, path)| format!(" to {}", path.display()));
                return Err(ReportError::Write {
                    format,
                    at,
                    source: err,
                });
            }
            _ => {}
        }
    }
    Ok(())
}

fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_wins_over_a_terminal_and_always_wins_over_no_color() {
        assert!(ColorChoice::Auto.enabled(true, false));
        assert!(!ColorChoice::Auto.enabled(true, true));
        assert!(!ColorChoice::Auto.enabled(false, false));
        assert!(ColorChoice::Always.enabled(false, true));
        assert!(!ColorChoice::Never.enabled(true, false));
    }
}
