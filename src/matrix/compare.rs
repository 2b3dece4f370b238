//! Judging a case: raw bytes first, then with the tree root rewritten to `{tree}`
//! (the one rewrite that is always on), per stream and for the exit status, with a
//! unified diff of each stream that differs. Runs that did not complete are never
//! compared.

use std::io;
use std::path::Path;

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

/// Replaces the tree's path with `{tree}` wherever it stands as a whole path
/// prefix: not inside a longer name (`/t/web2` is not `/t/web`), and not as part of
/// another path (`/x/t/web`).
pub fn rewrite_root(bytes: &[u8], root: &[u8]) -> Vec<u8> {
    if root.is_empty() {
        return bytes.to_vec();
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(found) = find(&bytes[at..], root) {
        let start = at + found;
        let end = start + root.len();
        let before_ok = start == 0 || !continues_path(bytes[start - 1]);
        let after_ok = end == bytes.len() || !continues_name(bytes[end]) || root.ends_with(b"/");
        out.extend_from_slice(&bytes[at..start]);
        if before_ok && after_ok {
            out.extend_from_slice(TREE_PLACEHOLDER.as_bytes());
        } else {
            out.extend_from_slice(root);
        }
        at = end;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// Bytes that would make a path before the root part of a longer path.
fn continues_path(b: u8) -> bool {
    b == b'/' || continues_name(b)
}

/// Bytes that would make the root's last name part of a longer name.
fn continues_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'~' | b'+') || b >= 0x80
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Longest a diff may take to compute before similar settles for a coarser one.
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// A unified diff with three lines of context, reference as `-`, candidate as `+`.
/// Bytes that are not UTF-8 are shown as `\xNN`, so a difference in them stays
/// visible; a long diff is cut with a count, and a large one is computed against
/// a deadline rather than in time that grows with the square of its size.
pub fn unified_diff(reference: &[u8], candidate: &[u8]) -> String {
    let ours = crate::fixtures::names::escaped(reference);
    let theirs = crate::fixtures::names::escaped(candidate);
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(DIFF_DEADLINE)
        .diff_lines(ours.as_str(), theirs.as_str());
    let mut text = String::from("--- reference\n+++ candidate\n");
    let mut shown = 0;
    let mut left_out = 0;
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        let body = hunk.to_string();
        let lines = body.lines().count();
        if shown + lines > DIFF_LINES_SHOWN {
            left_out += lines;
            continue;
        }
        shown += lines;
        text.push_str(&body);
    }
    if left_out > 0 {
        text.push_str(&format!("… {left_out} more diff lines not shown\n"));
    }
    text
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
    fn only_whole_paths_are_rewritten() {
        assert_eq!(
            rewrite_root(b"t/a t2/b xt/c t\n", b"t"),
            b"{tree}/a t2/b xt/c {tree}\n"
        );
        assert_eq!(
            rewrite_root(b"/x/t/web /t/web/a /t/web2", b"/t/web"),
            b"/x/t/web {tree}/a /t/web2"
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_stay_distinct() {
        let diff = unified_diff(b"a\xffb\n", b"a\xfeb\n");
        assert!(
            diff.contains("-a\\xffb") && diff.contains("+a\\xfeb"),
            "{diff}"
        );
    }

    #[test]
    fn a_large_diff_is_cut_and_counted() {
        let ours: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let theirs: String = (0..5000).map(|i| format!("line {}\n", i * 7)).collect();
        let diff = unified_diff(ours.as_bytes(), theirs.as_bytes());
        assert!(
            diff.lines().count() <= DIFF_LINES_SHOWN + 3,
            "{}",
            diff.lines().count()
        );
        assert!(diff.contains("more diff lines not shown"), "{diff}");
    }

    #[test]
    fn a_dropped_line_shows_in_the_diff() {
        let diff = unified_diff(b"1\ta\n2\tb\n3\tc\n", b"1\ta\n3\tc\n");
        assert!(diff.contains("-2\tb"), "{diff}");
        assert!(diff.starts_with("--- reference\n+++ candidate\n"), "{diff}");
    }
}
