//! Judging a case: raw bytes first, then with the tree root rewritten to `{tree}`
//! (the one rewrite that is always on), per stream and for the exit status, with a
//! unified diff of each stream that differs. Runs that did not complete are never
//! compared.

use std::io;
use std::path::Path;

use similar::TextDiff;

use super::exec::Captured;
use super::plan::TREE_PLACEHOLDER;
use crate::outcome::{ArmStatus, Stream, StreamResult, Verdict};

/// Lines of diff kept per stream; the rest is counted, not shown.
const DIFF_LINES_SHOWN: usize = 400;

/// Compares what two arms left behind for one case.
pub fn judge(
    reference: &Captured,
    candidate: &Captured,
    tree_root: &Path,
) -> (Verdict, Vec<StreamResult>) {
    for (arm, captured) in [("reference", reference), ("candidate", candidate)] {
        if !captured.status.completed() {
            let reason = format!("{arm} arm {}", captured.status.describe());
            return (Verdict::Error { reason }, Vec::new());
        }
    }
    let mut streams = Vec::new();
    for (stream, ours, theirs) in [
        (Stream::Stdout, &reference.stdout, &candidate.stdout),
        (Stream::Stderr, &reference.stderr, &candidate.stderr),
    ] {
        match compare_files(ours, theirs, tree_root) {
            Ok(result) => streams.push(StreamResult { stream, ..result }),
            Err(err) => {
                let reason = format!("cannot read captured {stream:?} output: {err}");
                return (Verdict::Error { reason }, streams);
            }
        }
    }
    streams.push(compare_status(&reference.status, &candidate.status));
    let verdict = if streams.iter().all(|s| s.identical) {
        Verdict::Identical
    } else {
        Verdict::Differs
    };
    (verdict, streams)
}

fn compare_files(reference: &Path, candidate: &Path, tree_root: &Path) -> io::Result<StreamResult> {
    let ours = std::fs::read(reference)?;
    let theirs = std::fs::read(candidate)?;
    let same = |identical| StreamResult {
        stream: Stream::Stdout,
        identical,
        diff: None,
    };
    if ours == theirs {
        return Ok(same(true));
    }
    let root = tree_root.as_os_str().as_encoded_bytes();
    let ours = rewrite_root(&ours, root);
    let theirs = rewrite_root(&theirs, root);
    if ours == theirs {
        return Ok(same(true));
    }
    Ok(StreamResult {
        diff: Some(unified_diff(&ours, &theirs)),
        ..same(false)
    })
}

fn compare_status(reference: &ArmStatus, candidate: &ArmStatus) -> StreamResult {
    let identical = reference == candidate;
    StreamResult {
        stream: Stream::Status,
        identical,
        diff: (!identical)
            .then(|| format!("-{}\n+{}\n", reference.describe(), candidate.describe())),
    }
}

/// Replaces every occurrence of the tree's path with `{tree}`.
pub fn rewrite_root(bytes: &[u8], root: &[u8]) -> Vec<u8> {
    if root.is_empty() {
        return bytes.to_vec();
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes;
    while let Some(at) = find(rest, root) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(TREE_PLACEHOLDER.as_bytes());
        rest = &rest[at + root.len()..];
    }
    out.extend_from_slice(rest);
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A unified diff with three lines of context, reference as `-`, candidate as `+`;
/// bytes that are not UTF-8 show as U+FFFD, and a long diff is cut with a count.
pub fn unified_diff(reference: &[u8], candidate: &[u8]) -> String {
    let ours = String::from_utf8_lossy(reference);
    let theirs = String::from_utf8_lossy(candidate);
    let diff = TextDiff::from_lines(ours.as_ref(), theirs.as_ref());
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header("reference", "candidate")
        .to_string();
    let total = text.lines().count();
    if total <= DIFF_LINES_SHOWN {
        return text;
    }
    let mut cut: String = text
        .lines()
        .take(DIFF_LINES_SHOWN)
        .flat_map(|l| [l, "\n"])
        .collect();
    cut.push_str(&format!(
        "… {} more diff lines not shown\n",
        total - DIFF_LINES_SHOWN
    ));
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_becomes_a_placeholder_everywhere() {
        assert_eq!(
            rewrite_root(b"4\t/t/r/a\n8\t/t/r\n", b"/t/r"),
            b"4\t{tree}/a\n8\t{tree}\n"
        );
    }

    #[test]
    fn a_dropped_line_shows_in_the_diff() {
        let diff = unified_diff(b"1\ta\n2\tb\n3\tc\n", b"1\ta\n3\tc\n");
        assert!(diff.contains("-2\tb"), "{diff}");
        assert!(diff.starts_with("--- reference\n+++ candidate\n"), "{diff}");
    }
}
