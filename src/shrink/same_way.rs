//! Whether a trial differs "in the same way" as the case being shrunk: the same
//! streams differ, the exit statuses are the same pair, and the first differing
//! line of the first differing text stream has the same shape on each side once
//! numbers and paths are masked. Without this a reducer drifts to whatever
//! difference is easiest to keep, such as an error about a path it removed.

use std::collections::HashSet;

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
    pub fn of(case: &CaseOutcome, masker: &Masker) -> Option<Signature> {
        if case.verdict != Verdict::Differs {
            return None;
        }
        let differing: Vec<_> = (case.streams.iter())
            .filter(|s| s.verdict == StreamVerdict::Differs)
            .collect();
        let first_text = differing.iter().find(|s| s.stream != Stream::Status);
        let first_lines = first_text
            .and_then(|s| s.diff.as_deref())
            .map(|diff| first_changed_lines(diff, masker))
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
    pub fn judge(&self, trial: &CaseOutcome, any: bool, masker: &Masker) -> Judged {
        match (&trial.verdict, Signature::of(trial, masker)) {
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
        Verdict::Error { reason } => format!("error: {reason}"),
        other => other.label().to_string(),
    }
}

/// The first removed and the first added line of a unified diff, masked.
fn first_changed_lines(diff: &str, masker: &Masker) -> (Option<String>, Option<String>) {
    let changed = |sign: char, header: &str| {
        (diff.lines())
            .find(|line| line.starts_with(sign) && !line.starts_with(header))
            .map(|line| masker.mask(&line[1..]))
    };
    (changed('-', "---"), changed('+', "+++"))
}

/// Masks a line down to its shape. Sizes, counts and the entries a line is about
/// change as the tree shrinks, and so do a drawing's bars and branches (dust's
/// tree): every number becomes `0`, every word naming a path (one with a `/`, or
/// the tree root as normalized output names it) `PATH`, every name of an entry of
/// the tree `NAME`, and every run of other characters than letters, digits and
/// `._-@+~,` one space. What is left (the words of a message, the order of fields)
/// says what kind of difference it is.
pub struct Masker {
    /// Every entry name of the tree before it was reduced.
    names: HashSet<String>,
}

impl Masker {
    pub fn new(names: impl IntoIterator<Item = String>) -> Masker {
        Masker {
            names: names.into_iter().collect(),
        }
    }

    /// Masks `name` too: a tree root's own name, which a walker may print and
    /// which a fresh build of the result does not share.
    pub fn also(&mut self, name: String) {
        self.names.insert(name);
    }

    pub fn mask(&self, line: &str) -> String {
        let mut out = String::with_capacity(line.len());
        for token in line.split_whitespace() {
            if token.contains('/') || token.starts_with(crate::flagset::TREE_PLACEHOLDER) {
                push_word(&mut out, "PATH");
                continue;
            }
            let mut rest = token;
            while let Some(start) = rest.find(is_word_char) {
                let word_end = rest[start..]
                    .find(|c: char| !is_word_char(c))
                    .map_or(rest.len(), |n| start + n);
                push_word(&mut out, &self.word(&rest[start..word_end]));
                rest = &rest[word_end..];
            }
        }
        out
    }

    fn word(&self, word: &str) -> String {
        if self.names.contains(word) || is_short_name(word) {
            return "NAME".into();
        }
        // A number with its separators and unit (`2,002`, `1.2K`, `99%`) is one
        // number, whatever its digits and unit.
        if word.starts_with(|c: char| c.is_ascii_digit()) {
            return "0".into();
        }
        let mut masked = String::with_capacity(word.len());
        let mut in_digits = false;
        for c in word.chars() {
            match (c.is_ascii_digit(), in_digits) {
                (true, true) => {}
                (true, false) => masked.push('0'),
                (false, _) => masked.push(c),
            }
            in_digits = c.is_ascii_digit();
        }
        masked
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || "._-@+~,".contains(c)
}

/// The one-letter names the reducer gives (`a`, `b0`, …).
fn is_short_name(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase()) && chars.all(|c| c.is_ascii_digit())
}

fn push_word(out: &mut String, word: &str) {
    if !out.is_empty() {
        out.push(' ');
    }
    out.push_str(word);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masker() -> Masker {
        Masker::new(["node_modules", "pkg-locked", "trigger"].map(String::from))
    }

    #[test]
    fn masking_keeps_a_line_shape_but_not_its_numbers_paths_names_or_drawing() {
        let m = masker();
        assert_eq!(m.mask("12\t./a/b"), "0 PATH");
        assert_eq!(m.mask("1.2K  trigger 100%"), "0 NAME 0");
        assert_eq!(m.mask("v1.2 module-12.js"), "v0.0 module-0.js");
        assert_eq!(
            m.mask("du: cannot read directory './x': Permission denied"),
            "du cannot read directory PATH Permission denied"
        );
        assert_ne!(m.mask("4096 ./a"), m.mask("cannot access ./a"));
        assert_eq!(m.mask("16\t{tree}"), m.mask("8\t{tree}/a/trigger"));
        // dust's drawing: another entry, deeper, with a longer bar, is one shape.
        assert_eq!(
            m.mask("2,002   ┌─┴ node_modules │████████████ │ 99%"),
            m.mask("  1   │ ┌── pkg-locked   │███ │  3%")
        );
        assert_eq!(m.mask("1 a0"), m.mask("7 trigger"));
        assert_ne!(m.mask("1 other-word"), m.mask("1 trigger"));
    }

    #[test]
    fn the_first_changed_lines_skip_the_diff_headers() {
        let m = masker();
        let diff = "--- reference\n+++ candidate\n@@ -1,2 +1,2 @@\n a\n-8\t./x\n+12\t./x\n";
        assert_eq!(
            first_changed_lines(diff, &m),
            (Some("0 PATH".into()), Some("0 PATH".into()))
        );
        let only_added = "--- reference\n+++ candidate\n@@ -1 +1,2 @@\n a\n+extra 3\n";
        assert_eq!(
            first_changed_lines(only_added, &m),
            (None, Some("extra 0".into()))
        );
    }
}
