//! The one rewrite that is always on: the tree's path becomes `{tree}` wherever it
//! stands as a whole path, and nowhere else.

use crate::flagset::TREE_PLACEHOLDER;

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
        out.extend_from_slice(&bytes[at..start]);
        if stands_alone(bytes, start, end, root) {
            out.extend_from_slice(TREE_PLACEHOLDER.as_bytes());
        } else {
            out.extend_from_slice(root);
        }
        at = end;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// Both texts with every `{tree}` they print themselves written as a marker
/// neither holds (`{tree #1}`, or `#2`…), when either prints one; else none. The
/// rewrite maps the tree's path to `{tree}`, so an arm that printed `{tree}` where
/// the other printed the path would otherwise come out equal to it.
pub(super) fn placeholders_apart(a: &[u8], b: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let placeholder = TREE_PLACEHOLDER.as_bytes();
    if find(a, placeholder).is_none() && find(b, placeholder).is_none() {
        return None;
    }
    let held = |m: &str| find(a, m.as_bytes()).is_some() || find(b, m.as_bytes()).is_some();
    let marker = (1..).map(|n| format!("{{tree #{n}}}")).find(|m| !held(m))?;
    let apart = |text: &[u8]| {
        let mut out = Vec::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = find(rest, placeholder) {
            out.extend_from_slice(&rest[..at]);
            out.extend_from_slice(marker.as_bytes());
            rest = &rest[at + placeholder.len()..];
        }
        out.extend_from_slice(rest);
        out
    };
    Some((apart(a), apart(b)))
}

/// How many times the root stands as a whole path in `bytes`.
pub(super) fn count(bytes: &[u8], root: &[u8]) -> usize {
    let mut times = 0;
    let mut at = 0;
    while let Some(found) = find(&bytes[at..], root) {
        let start = at + found;
        let end = start + root.len();
        times += usize::from(stands_alone(bytes, start, end, root));
        at = end;
    }
    times
}

pub(super) fn stands_alone(bytes: &[u8], start: usize, end: usize, root: &[u8]) -> bool {
    let before_ok = start == 0 || !continues_path(bytes[start - 1]);
    let after_ok = end == bytes.len() || !continues_name(bytes[end]) || root.ends_with(b"/");
    before_ok && after_ok
}

/// Bytes that would make a path before the root part of a longer path.
fn continues_path(b: u8) -> bool {
    b == b'/' || continues_name(b)
}

/// Bytes that would make the root's last name part of a longer name.
fn continues_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'~' | b'+') || b >= 0x80
}

pub(super) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
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
        assert_eq!(count(b"4\t/t/r/a\n8\t/t/r2\n", b"/t/r"), 1);
        assert_eq!(count(b"/t/r/a /t/r /x/t/r", b"/t/r"), 2);
    }

    #[test]
    fn a_printed_placeholder_is_set_apart_by_a_marker_neither_text_holds() {
        assert_eq!(placeholders_apart(b"/t/r a", b"/t/r b"), None);
        let (a, b) = placeholders_apart(b"x {tree} {tree #1}", b"/t/r").unwrap();
        assert_eq!(a, b"x {tree #2} {tree #1}");
        assert_eq!(b, b"/t/r");
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
    fn a_name_goes_on_through_punctuation_and_bytes_past_ascii() {
        for longer in [
            "/t/web.old",
            "/t/web_1",
            "/t/web-1",
            "/t/web~",
            "/t/web+",
            "/t/webé",
        ] {
            assert_eq!(
                rewrite_root(longer.as_bytes(), b"/t/web"),
                longer.as_bytes()
            );
        }
        for (ended, rewritten) in [("/t/web:", "{tree}:"), ("/t/web)", "{tree})")] {
            assert_eq!(
                rewrite_root(ended.as_bytes(), b"/t/web"),
                rewritten.as_bytes()
            );
        }
    }
}
