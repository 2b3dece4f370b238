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
            let lines: Vec<&str> = diff.lines().take(DIFF_LINES_SHOWN).collect();
            text.push_str(":\n");
            text.push_str(&lines.join("\n"));
        }
        said.push(text);
    }
    if said.is_empty() {
        return format!("{verdict:?}");
    }
    said.join("\n")
}
