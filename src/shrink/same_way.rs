//! Whether a trial differs "in the same way" as the case being shrunk: the same
//! streams differ, the exit statuses are the same pair, and the first differing
//! line of the first differing text stream has the same shape on each side once
//! numbers and paths are masked. Without this a reducer drifts to whatever
//! difference is easiest to keep, such as an error about a path it removed.

use serde::Serialize;

use crate::outcome::{ArmStatus, CaseOutcome, Stream, StreamVerdict, Verdict};

/// What a differing case's difference looks like, masked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Signature {
    /// The streams that differ, in report order.
    pub streams: Vec<String>,
    /// The arms' exit statuses, reference first.
    pub statuses: (String, String),
    /// The first differing line of the first differing text stream, reference
    /// side then candidate side, masked; `None` where a side has no such line.
    pub first_lines: (Option<String>, Option<String>),
}

/// How a trial came out, judged against the case's signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// It differs, and in the same way (or in any way, when any difference counts).
    Same,
    /// Anything else, said in a few words for the steps' log.
    Other(String),
}

impl Signature {
    /// The signature of a case that differs; `None` for any other verdict.
    pub fn of(case: &CaseOutcome) -> Option<Signature> {
        if case.verdict != Verdict::Differs {
            return None;
        }
        let differing: Vec<_> = (case.streams.iter())
            .filter(|s| s.verdict == StreamVerdict::Differs)
            .collect();
        let first_text = differing.iter().find(|s| s.stream != Stream::Status);
        let first_lines = first_text
            .and_then(|s| s.diff.as_deref())
            .map(first_changed_lines)
            .unwrap_or((None, None));
        Some(Signature {
            streams: differing
                .iter()
                .map(|s| s.stream.name().to_string())
                .collect(),
            statuses: (
                status_words(&case.reference.status),
                status_words(&case.candidate.status),
            ),
            first_lines,
        })
    }

    /// Judges a trial: `any` accepts every difference.
    pub fn judge(&self, trial: &CaseOutcome, any: bool) -> Judged {
        match (&trial.verdict, Signature::of(trial)) {
            (_, Some(_)) if any => Judged::Same,
            (_, Some(seen)) if seen == *self => Judged::Same,
            (_, Some(seen)) => Judged::Other(seen.how_it_differs(self)),
            (verdict, None) => Judged::Other(verdict_words(verdict)),
        }
    }

    /// What sets `self`, a trial's signature, apart from `wanted`.
    fn how_it_differs(&self, wanted: &Signature) -> String {
        if self.streams != wanted.streams {
            return format!("differs in {} instead", self.streams.join(", "));
        }
        if self.statuses != wanted.statuses {
            return format!(
                "differs with exit statuses {} and {} instead",
                self.statuses.0, self.statuses.1
            );
        }
        "differs, but its first differing line has another shape".into()
    }
}

/// Only exited and signalled arms are ever compared, so a differing case's
/// statuses are one of those two.
fn status_words(status: &ArmStatus) -> String {
    match status {
        ArmStatus::Exited { code } => format!("exit {code}"),
        ArmStatus::Signaled { signal } => format!("signal {signal}"),
        other => format!("{other:?}"),
    }
}

fn verdict_words(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Identical => "identical".into(),
        Verdict::OrderOnly => "differs only in order".into(),
        Verdict::EqualAfterNormalization => "equal after normalization".into(),
        Verdict::Differs => "differs".into(),
        Verdict::Flaky { .. } => "flaky".into(),
        Verdict::Error { reason } => format!("error: {reason}"),
        Verdict::TreeChanged { .. } => "an arm changed the tree".into(),
    }
}

/// The first removed and the first added line of a unified diff, masked.
fn first_changed_lines(diff: &str) -> (Option<String>, Option<String>) {
    let changed = |sign: char, header: &str| {
        (diff.lines())
            .find(|line| line.starts_with(sign) && !line.starts_with(header))
            .map(|line| mask(&line[1..]))
    };
    (changed('-', "---"), changed('+', "+++"))
}

/// A line with every run of digits made `0` and every word naming a path (one
/// with a `/`, or the tree root as normalized output names it) made `PATH`: sizes, counts and the entries a line is about change
/// as the tree shrinks, while the line's shape says what kind of difference it is.
pub fn mask(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while !rest.is_empty() {
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (word, after) = rest.split_at(word_end);
        if word.contains('/') || word.starts_with(crate::flagset::TREE_PLACEHOLDER) {
            out.push_str("PATH");
        } else {
            mask_digits(word, &mut out);
        }
        let space_end = after
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(after.len());
        out.push_str(&after[..space_end]);
        rest = &after[space_end..];
    }
    out
}

fn mask_digits(word: &str, out: &mut String) {
    let mut in_digits = false;
    for c in word.chars() {
        match (c.is_ascii_digit(), in_digits) {
            (true, true) => {}
            (true, false) => out.push('0'),
            (false, _) => out.push(c),
        }
        in_digits = c.is_ascii_digit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masking_keeps_a_line_shape_but_not_its_numbers_or_paths() {
        assert_eq!(mask("12\t./a/b"), "0\tPATH");
        assert_eq!(mask("1.2K  trigger 100%"), "0.0K  trigger 0%");
        assert_eq!(
            mask("du: cannot read directory './x': Permission denied"),
            "du: cannot read directory PATH Permission denied"
        );
        assert_ne!(mask("4096 ./a"), mask("cannot access ./a"));
        assert_eq!(mask("16\t{tree}"), mask("8\t{tree}/a/trigger"));
    }

    #[test]
    fn the_first_changed_lines_skip_the_diff_headers() {
        let diff = "--- reference\n+++ candidate\n@@ -1,2 +1,2 @@\n a\n-8\t./x\n+12\t./x\n";
        assert_eq!(
            first_changed_lines(diff),
            (Some("0\tPATH".into()), Some("0\tPATH".into()))
        );
        let only_added = "--- reference\n+++ candidate\n@@ -1 +1,2 @@\n a\n+extra 3\n";
        assert_eq!(
            first_changed_lines(only_added),
            (None, Some("extra 0".into()))
        );
    }
}
