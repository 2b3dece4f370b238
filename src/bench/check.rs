//! Whether a timed run gave the right output: each row holds every run to A's
//! first completed output. Equal digests of both streams and the same exit status
//! settle it at once; otherwise the matrix's own judge compares the two with the
//! flag-set file's rules, so output that may differ in order (a list printed from
//! a hash set) is not wrong. Only A's first output is kept on disk; every other
//! run's files are removed once judged.

use std::path::{Path, PathBuf};

use crate::matrix::compare::{self, CaseRules};
use crate::matrix::exec::Captured;
use crate::outcome::bench::Correctness;
use crate::outcome::{ArmStatus, Verdict};

/// Diff lines a wrong run's description keeps.
const DIFF_LINES_SHOWN: usize = 12;

/// A run's output and what it digests to.
pub(super) struct Output {
    pub captured: Captured,
    pub digests: Option<Digests>,
}

/// The first [`DIFF_LINES_SHOWN`] lines of a diff, and how many more it has.
fn first_lines(diff: &str) -> String {
    let lines: Vec<&str> = diff.lines().collect();
    let mut shown = lines[..lines.len().min(DIFF_LINES_SHOWN)].join("\n");
    match lines.len().saturating_sub(DIFF_LINES_SHOWN) {
        0 => {}
        1 => shown.push_str("\n… and 1 more line of the diff"),
        more => shown.push_str(&format!("\n… and {more} more lines of the diff")),
    }
    shown
}

/// The exit status and the sha256 of each stream.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Digests {
    pub status: ArmStatus,
    pub stdout: [u8; 32],
    pub stderr: [u8; 32],
}

impl Digests {
    pub fn hex(digest: &[u8; 32]) -> String {
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl Output {
    /// Digests a completed run's streams; a run that did not complete, or was
    /// killed midway, has none and is never compared.
    pub fn read(captured: Captured) -> Output {
        let status = &captured.status;
        let digests = match status.ran_to_its_end() {
            true => digest(&captured),
            false => None,
        };
        Output { captured, digests }
    }

    /// The same output with its files moved to `STEM.out` and `STEM.err` in
    /// `dir`, out of the way of the next run's (a file that cannot move stays).
    pub fn kept_as(mut self, dir: &Path, stem: &str) -> Output {
        let captured = &mut self.captured;
        captured.stdout = moved(&captured.stdout, &dir.join(format!("{stem}.out")));
        captured.stderr = moved(&captured.stderr, &dir.join(format!("{stem}.err")));
        self
    }

    pub fn remove(&self) {
        for path in [&self.captured.stdout, &self.captured.stderr] {
            if !path.as_os_str().is_empty() {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

fn digest(captured: &Captured) -> Option<Digests> {
    Some(Digests {
        status: captured.status.clone(),
        stdout: compare::digest_file(&captured.stdout).ok()?,
        stderr: compare::digest_file(&captured.stderr).ok()?,
    })
}

/// The output a row's runs are held to: A's first completed run, its files moved
/// aside so later runs do not write over them.
pub(super) struct First {
    output: Output,
}

impl First {
    /// Takes `output` (which has digests) as the row's first, moving its files to
    /// `first.out` and `first.err` in `dir`.
    pub fn keep(output: Output, dir: &Path) -> First {
        First {
            output: output.kept_as(dir, "first"),
        }
    }

    /// How `output` compares with this first output, and, when wrong, how.
    pub fn judge(
        &self,
        output: &Output,
        root: &Path,
        rules: &CaseRules,
    ) -> (Correctness, Option<String>) {
        let Some(digests) = &output.digests else {
            return (Correctness::NotCompared, None);
        };
        if self.output.digests.as_ref() == Some(digests) {
            return (Correctness::Same, None);
        }
        let judged = compare::judge(
            std::slice::from_ref(&self.output.captured),
            std::slice::from_ref(&output.captured),
            root,
            rules,
        );
        match judged.verdict {
            Verdict::Identical => (Correctness::Same, None),
            Verdict::OrderOnly | Verdict::EqualAfterNormalization => {
                (Correctness::EqualAfterRules, None)
            }
            verdict => (
                Correctness::Wrong,
                Some(describe(&verdict, &judged.streams)),
            ),
        }
    }
}

fn moved(from: &Path, to: &Path) -> PathBuf {
    match std::fs::rename(from, to) {
        Ok(()) => to.to_path_buf(),
        Err(_) => from.to_path_buf(),
    }
}

/// What differs from A's first output: each differing stream with the start of
/// its diff.
fn describe(verdict: &Verdict, streams: &[crate::outcome::StreamResult]) -> String {
    if let Verdict::Error { reason } = verdict {
        return reason.clone();
    }
    let mut said = Vec::new();
    for stream in streams {
        if stream.verdict != crate::outcome::StreamVerdict::Differs {
            continue;
        }
        let mut text = format!("{} differs from A's first run", stream.stream.name());
        if let Some(diff) = &stream.diff {
            text.push_str(":\n");
            text.push_str(&first_lines(diff));
        }
        said.push(text);
    }
    if said.is_empty() {
        return format!("{verdict:?}");
    }
    said.join("\n")
}

#[cfg(test)]
mod tests {
    use super::{first_lines, DIFF_LINES_SHOWN};

    /// A diff cut short says how much of it was left out.
    #[test]
    fn a_long_diff_is_cut_with_the_lines_left_out_counted() {
        let diff: Vec<String> = (1..=DIFF_LINES_SHOWN + 3)
            .map(|n| format!("-{n}"))
            .collect();
        let shown = first_lines(&diff.join("\n"));
        assert!(
            shown.ends_with("\n… and 3 more lines of the diff"),
            "{shown}"
        );
        assert_eq!(shown.lines().count(), DIFF_LINES_SHOWN + 1);
        let one_more = first_lines(&diff[..DIFF_LINES_SHOWN + 1].join("\n"));
        assert!(
            one_more.ends_with("… and 1 more line of the diff"),
            "{one_more}"
        );
        let whole = diff[..DIFF_LINES_SHOWN].join("\n");
        assert_eq!(first_lines(&whole), whole);
    }
}
