//! The trust check: copies of a candidate's output with one byte changed (at
//! letters and digits spread over the text, outside the tree's path; at the edges
//! of words of lines spread over it) and with a line dropped must still be judged
//! different from the reference, or the rules in force hide differences.

use super::{Judge, Stream};
use crate::normalize::TREE_ROOT_RULE;

/// What the trust check caught: why the case fails, and the rules that changed the
/// altered copy they hid. The case counts those rules as fired, so the report never
/// blames a rule for hiding a difference and calls it unused as well.
pub(super) struct Hidden {
    pub reason: String,
    pub rules: Vec<(String, usize)>,
}

impl Judge<'_> {
    /// The trust check for one stream: `Some` when the rules in force judge a
    /// mutated candidate output equal to the reference.
    pub(super) fn hides_differences(&self, stream: Stream, a: &[u8], b: &[u8]) -> Option<Hidden> {
        let rules = self.rules.for_stream(stream);
        // The tree-root rewrite alone cannot hide a change: it maps one whole path
        // to one placeholder and leaves every other byte as it was.
        if rules.is_empty() {
            return None;
        }
        let expected = self.normalize(a, stream, false).text;
        let hidden = |what: String, fired| Some(self.blame(stream, what, fired));
        // One-byte changes in two samples. Over the whole text, at letters and
        // digits spread across it: the rules may not hide all of them (a rule that
        // hides nearly everything). Line by line, at the first and last byte of every
        // word of lines spread across the text: the rules may not hide a change in
        // more than half of those lines (a rule that hides a column, such as every
        // size). A few hidden places are allowed: a thread id, a timing.
        // A text that is all tree path has no place outside it to change, and a
        // change inside it always shows.
        let points = spread_points(b, &root_spans(b, self.root));
        let mut everywhere = Vec::new();
        for &at in &points {
            let copy = self.normalize(&mutated(b, at), stream, false);
            if copy.text != expected {
                everywhere.clear();
                break;
            }
            everywhere.push(copy.fired);
        }
        if let Some(fired) = everywhere.pop() {
            let what = format!(
                "the candidate's output with one byte changed (tried at {} places spread over it)",
                points.len()
            );
            return hidden(what, fired);
        }
        let lines = sampled_lines(b);
        if !lines.is_empty() {
            let hiding: Vec<(usize, Vec<(String, usize)>)> = lines
                .iter()
                .filter_map(|(number, line)| Some((*number, self.hides_in_line(stream, line)?)))
                .collect();
            if hiding.len() * 2 > lines.len() {
                let shown: Vec<String> =
                    hiding.iter().take(5).map(|(n, _)| n.to_string()).collect();
                let what = format!(
                    "the candidate's output with one byte changed in a word of a line (hidden in {} of {} lines sampled: lines {}…)",
                    hiding.len(),
                    lines.len(),
                    shown.join(", ")
                );
                let fired = hiding.into_iter().next().map(|(_, fired)| fired);
                return hidden(what, fired.unwrap_or_default());
            }
        }
        if let Some((line, dropped)) = line_drop(b) {
            let copy = self.normalize(&dropped, stream, false);
            if copy.text == expected {
                let what = format!("the candidate's output with line {line} dropped");
                return hidden(what, copy.fired);
            }
        }
        None
    }

    /// What the trust check says when `what` was judged equal: the rules that
    /// changed that altered copy (`fired`) are named and counted.
    fn blame(&self, stream: Stream, what: String, fired: Vec<(String, usize)>) -> Hidden {
        let mut fired: Vec<(String, usize)> = (fired.into_iter())
            .filter(|(rule, _)| rule != TREE_ROOT_RULE)
            .collect();
        if fired.is_empty() {
            // The altered copy came out equal to the reference's normalized output
            // with no rule changing it (the one byte changed turned it into that
            // output): the rules in force are blamed, once each, as the check
            // always blamed them.
            let rules = self.rules.for_stream(stream);
            fired = rules.iter().map(|r| (r.name.clone(), 1)).collect();
        }
        let names: Vec<&str> = fired.iter().map(|(name, _)| name.as_str()).collect();
        Hidden {
            reason: format!(
                "normalizers hide differences: on {}, {what} was still judged equal to the reference after rules {}",
                stream.name(),
                names.join(", ")
            ),
            rules: fired,
        }
    }

    /// Whether the rules hide a one-byte change at the first or last byte of any
    /// word of one line, normalized on its own: the rules that changed the first
    /// altered line they hid.
    fn hides_in_line(&self, stream: Stream, line: &[u8]) -> Option<Vec<(String, usize)>> {
        let expected = self.normalize(line, stream, false).text;
        word_edges(line)
            .into_iter()
            .map(|at| self.normalize(&mutated(line, at), stream, false))
            .find(|copy| copy.text == expected)
            .map(|copy| copy.fired)
    }
}

/// Places in the text, and lines, where the trust check changes one byte.
const MUTATION_POINTS: usize = 16;

/// Above this size the trust check changes the whole text at fewer places, each
/// of which normalizes the whole text again.
const MUTATION_FULL_TEXT: usize = 1 << 20;

/// Words per sampled line whose first and last bytes the trust check changes.
const WORDS_PER_LINE: usize = 32;

/// Where the tree's path stands in `text`, as `start..end` byte ranges.
fn root_spans(text: &[u8], root: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut spans = Vec::new();
    if root.is_empty() {
        return spans;
    }
    let mut at = 0;
    while let Some(found) = super::root::find(&text[at..], root) {
        let (start, end) = (at + found, at + found + root.len());
        if super::root::stands_alone(text, start, end, root) {
            spans.push(start..end);
        }
        at = end;
    }
    spans
}

/// Offsets of letters or digits spread evenly over `text` ([`MUTATION_POINTS`] of
/// them, or 4 in a text over [`MUTATION_FULL_TEXT`], since each normalizes the whole
/// text again), outside the tree's path (`skip`): a change there undoes the root
/// rewrite and so always shows, which says nothing about the rules. Letters and
/// digits, so that no rule may fairly call the change insignificant, as it may
/// whitespace in JSON. An empty text has offset 0, where the change adds a byte.
fn spread_points(text: &[u8], skip: &[std::ops::Range<usize>]) -> Vec<usize> {
    if text.is_empty() {
        return vec![0];
    }
    let wanted = if text.len() > MUTATION_FULL_TEXT {
        4
    } else {
        MUTATION_POINTS
    };
    let mut points: Vec<usize> = Vec::new();
    for k in 0..wanted {
        let from = text.len() * k / wanted;
        let outside = |p: &usize| !skip.iter().any(|span| span.contains(p));
        let found = (from..text.len())
            .filter(outside)
            .find(|&p| text[p].is_ascii_alphanumeric())
            .or_else(|| {
                (from..text.len())
                    .filter(outside)
                    .find(|&p| text[p] != b'\n')
            });
        if let Some(at) = found.filter(|at| !points.contains(at)) {
            points.push(at);
        }
    }
    points
}

/// Up to [`MUTATION_POINTS`] lines spread evenly over `text` that hold a letter or
/// digit, each with its number (from 1) and its newline.
fn sampled_lines(text: &[u8]) -> Vec<(usize, &[u8])> {
    let lines: Vec<(usize, &[u8])> = text
        .split_inclusive(|&b| b == b'\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line))
        .filter(|(_, line)| line.iter().any(u8::is_ascii_alphanumeric))
        .collect();
    let step = lines.len().div_ceil(MUTATION_POINTS).max(1);
    lines.into_iter().step_by(step).collect()
}

/// The first and last byte of each word (a run of letters and digits) of a line;
/// of a line with more than [`WORDS_PER_LINE`] words, of that many spread evenly
/// over it, the last word included.
fn word_edges(line: &[u8]) -> Vec<usize> {
    let mut words = Vec::new();
    let mut at = 0;
    while at < line.len() {
        if !line[at].is_ascii_alphanumeric() {
            at += 1;
            continue;
        }
        let start = at;
        while at < line.len() && line[at].is_ascii_alphanumeric() {
            at += 1;
        }
        words.push((start, at - 1));
    }
    let picked: Vec<(usize, usize)> = if words.len() <= WORDS_PER_LINE {
        words
    } else {
        (0..WORDS_PER_LINE)
            .map(|k| words[k * (words.len() - 1) / (WORDS_PER_LINE - 1)])
            .collect()
    };
    let mut edges = Vec::new();
    for (first, last) in picked {
        edges.push(first);
        if last != first {
            edges.push(last);
        }
    }
    edges
}

/// `text` with the byte at `at` changed to another letter or digit (or, past the
/// end, with a byte added).
fn mutated(text: &[u8], at: usize) -> Vec<u8> {
    let mut copy = text.to_vec();
    match copy.get_mut(at) {
        None => copy.push(b'x'),
        Some(byte) => {
            *byte = match *byte {
                b'9' => b'0',
                b'z' => b'a',
                b'Z' => b'A',
                b if b.is_ascii_alphanumeric() => b + 1,
                _ => b'x',
            }
        }
    }
    copy
}

/// A copy of `text` without its middle line, with that line's number.
fn line_drop(text: &[u8]) -> Option<(usize, Vec<u8>)> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    if lines.is_empty() {
        return None;
    }
    let middle = lines.len() / 2;
    let kept: Vec<u8> = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != middle)
        .flat_map(|(_, l)| l.iter().copied())
        .collect();
    Some((middle + 1, kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_change_letters_and_digits() {
        let text = b"12\t{tree}/a\n7\t{tree}\n";
        for at in spread_points(text, &[]) {
            let copy = mutated(text, at);
            assert_ne!(copy[at], text[at]);
            assert!(copy[at].is_ascii_alphanumeric());
            assert_eq!(copy.len(), text.len());
        }
        assert_eq!(word_edges(b"12\t{tree}/a\n"), vec![0, 1, 4, 7, 10]);
        assert_eq!(
            word_edges(b"ab cd"),
            vec![0, 1, 3, 4],
            "a word at the very end"
        );
        for (from, to) in [
            (b'9', b'0'),
            (b'z', b'a'),
            (b'Z', b'A'),
            (b'a', b'b'),
            (b'-', b'x'),
        ] {
            assert_eq!(mutated(&[from], 0), [to], "{}", from as char);
        }
        assert_eq!(line_drop(b"a\nb\nc\n").unwrap(), (2, b"a\nc\n".to_vec()));
        assert_eq!(
            line_drop(b"a\nb\nc\nd\ne\n").unwrap(),
            (3, b"a\nb\nd\ne\n".to_vec()),
            "the middle line of five"
        );
        assert_eq!(
            line_drop(b"a\nb\nc\nd").unwrap(),
            (3, b"a\nb\nd".to_vec()),
            "of four, the first after the middle"
        );
        assert_eq!(mutated(b"", spread_points(b"", &[])[0]), b"x");
        let rooted = b"4\t/t/web/a\n";
        let spans = root_spans(rooted, b"/t/web");
        assert_eq!(spans, vec![2..8]);
        assert!(spread_points(rooted, &spans)
            .iter()
            .all(|p| !(2..8).contains(p)));
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        let edges = word_edges(many.as_bytes());
        assert_eq!(edges.len(), 2 * WORDS_PER_LINE);
        assert_eq!(
            *edges.last().unwrap(),
            many.len() - 2,
            "the last word is changed too"
        );
    }

    #[test]
    fn lines_are_sampled_over_long_texts() {
        let text: String = (0..1000).map(|i| format!("{i}\tpath\n")).collect();
        let lines = sampled_lines(text.as_bytes());
        assert!(
            (MUTATION_POINTS - 1..=MUTATION_POINTS).contains(&lines.len()),
            "{lines:?}"
        );
        assert_eq!(lines[0], (1, &b"0\tpath\n"[..]));
        assert!(sampled_lines(b"--\n\n").is_empty());
    }
}
