//! Judging one stream of a case: raw bytes first, then the normalized texts, then
//! how they differ. A stream small enough is loaded and normalized in memory, and
//! its normalized texts diffed in full while they are at most [`DIFF_CAP`];
//! larger texts, and streams too large to load ([`NORMALIZE_CAP`]), are compared
//! line by line as they stream: every differing line counted, the first hunks
//! shown. A stream whose only rule sorts lines is compared as a multiset of lines
//! when it is too large to sort.

use std::io;
use std::path::Path;

use super::files::{line_multiset, load, Loaded};
use super::hunks::{in_order, Sides, ARMS, SHOWN_HUNKS};
use super::lines::Text;
use super::multiset::as_multiset;
use super::root::placeholders_apart;
use super::show::{displaced, has_long_line, LONG_LINE};
use super::{
    first_difference, first_difference_of_files, rewrite_root, same_contents, unified_diff, Judge,
    DIFF_CAP, NORMALIZE_CAP,
};
use crate::outcome::{LineCounts, Stream, StreamResult, StreamVerdict};

/// A stream's result with nothing to show.
fn plain(stream: Stream, verdict: StreamVerdict) -> StreamResult {
    StreamResult {
        stream,
        verdict,
        displaced: Vec::new(),
        diff: None,
        lines: None,
    }
}

fn differs(stream: Stream, diff: String, lines: Option<LineCounts>) -> StreamResult {
    StreamResult {
        diff: Some(diff),
        lines,
        ..plain(stream, StreamVerdict::Differs)
    }
}

/// A diff whose header names the arms, with its sides named as given.
fn relabel(diff: String, sides: Sides) -> String {
    let header = format!("--- {}\n+++ {}\n", sides.old, sides.new);
    diff.replacen("--- reference\n+++ candidate\n", &header, 1)
}

impl Judge<'_> {
    pub(super) fn stream(
        &mut self,
        stream: Stream,
        ours: &Path,
        theirs: &Path,
    ) -> io::Result<StreamResult> {
        // The second side is read only when the first fits: either too large
        // sends both down the streaming path.
        let Loaded::Text(a) = load(ours)? else {
            return self.too_large(stream, ours, theirs);
        };
        match load(theirs)? {
            Loaded::Text(b) => self.in_memory(stream, &a, &b),
            Loaded::TooLarge => self.too_large(stream, ours, theirs),
        }
    }

    /// A stream too large to normalize, compared as it streams from its files.
    fn too_large(
        &mut self,
        stream: Stream,
        ours: &Path,
        theirs: &Path,
    ) -> io::Result<StreamResult> {
        if same_contents(ours, theirs)? {
            return Ok(plain(stream, StreamVerdict::Identical));
        }
        if self.only_sorts_lines(stream) {
            return self.as_multiset(stream, ours, theirs);
        }
        let (name, cap) = (stream.name(), NORMALIZE_CAP >> 20);
        if !self.rules.for_stream(stream).is_empty() {
            // The rules might have made them equal: never call that a difference.
            let diff = first_difference_of_files(ours, theirs)?;
            self.unjudgeable.get_or_insert(format!(
                "{name} is larger than {cap} MiB, too large to normalize in memory, and rules apply to it; raw, it differs:\n{diff}"
            ));
            return Ok(differs(stream, diff, None));
        }
        self.notes.push(format!(
            "{name}: larger than {cap} MiB, so compared line by line as it streamed from disk (with a bounded look-ahead, not a minimal diff); the first {SHOWN_HUNKS} hunks are shown"
        ));
        let counted = in_order(Text::File(ours), Text::File(theirs), ARMS)?;
        Ok(differs(stream, counted.diff, Some(counted.counts)))
    }

    /// A stream too large to sort whose only rule sorts its lines: the same lines
    /// in any order are equal, which a digest of the multiset of lines tells
    /// without sorting; otherwise the lines each arm lacks are counted.
    fn as_multiset(
        &mut self,
        stream: Stream,
        ours: &Path,
        theirs: &Path,
    ) -> io::Result<StreamResult> {
        let (name, cap) = (stream.name(), NORMALIZE_CAP >> 20);
        // The rule is in use either way: it is why the lines are compared as a set.
        self.tally.add(&[(self.sort_rule_name(stream), 1)]);
        if line_multiset(ours)? == line_multiset(theirs)? {
            let diff = first_difference_of_files(ours, theirs)?;
            self.notes.push(format!(
                "{name}: larger than {cap} MiB, so its lines were compared as a set (with counts) instead of sorted"
            ));
            // One line each, as every displaced line is, for the reports to indent.
            let displaced = std::iter::once("(the first difference, before sorting)")
                .chain(diff.lines())
                .map(str::to_string)
                .collect();
            return Ok(StreamResult {
                displaced,
                ..plain(stream, StreamVerdict::OrderOnly)
            });
        }
        self.notes.push(format!(
            "{name}: larger than {cap} MiB; its lines differ as a set (with counts), not only in order, so the lines each arm lacks were counted without sorting"
        ));
        // The spilled digests go beside the captured output, in the case's own
        // folder, which is removed with the case.
        let scratch = match ours.parent() {
            Some(folder) if !folder.as_os_str().is_empty() => folder.to_path_buf(),
            _ => std::env::temp_dir(),
        };
        let counted = as_multiset(ours, theirs, &scratch)?;
        Ok(differs(stream, counted.diff, Some(counted.counts)))
    }

    /// A stream small enough to load: raw, then normalized, in memory.
    fn in_memory(&mut self, stream: Stream, a: &[u8], b: &[u8]) -> io::Result<StreamResult> {
        // The trust check runs on every compared stream, equal or not, while
        // both texts are at hand.
        if self.hiding.is_none() {
            self.hiding = self.hides_differences(stream, a, b);
            if let Some(hidden) = &self.hiding {
                self.tally.add(&hidden.rules);
            }
        }
        if a == b {
            return Ok(plain(stream, StreamVerdict::Identical));
        }
        let (na, nb) = (
            self.normalize(a, stream, false),
            self.normalize(b, stream, false),
        );
        self.tally.add(&na.fired);
        self.tally.add(&nb.fired);
        if na.text != nb.text {
            let (diff, lines) = self.diff(stream, &na.text, &nb.text, ARMS)?;
            return Ok(differs(stream, diff, lines));
        }
        // Equal once normalized, but a `{tree}` an arm printed itself may have met
        // the tree's path in the other: judged again with those set apart.
        if let Some((a, b)) = placeholders_apart(a, b) {
            let (na, nb) = (
                self.normalize(&a, stream, false),
                self.normalize(&b, stream, false),
            );
            if na.text != nb.text {
                let (diff, lines) = self.diff(stream, &na.text, &nb.text, ARMS)?;
                return Ok(differs(stream, diff, lines));
            }
        }
        let (ra, rb) = (rewrite_root(a, self.root), rewrite_root(b, self.root));
        if ra != rb && self.normalize(a, stream, true).text == self.normalize(b, stream, true).text
        {
            return Ok(StreamResult {
                displaced: displaced(&ra, &rb),
                ..plain(stream, StreamVerdict::OrderOnly)
            });
        }
        Ok(plain(stream, StreamVerdict::EqualAfterNormalization))
    }

    /// How two normalized texts differ: a full diff when they are small enough,
    /// else every differing line counted (with the counts) and the first hunks
    /// shown.
    pub(super) fn diff(
        &mut self,
        stream: Stream,
        ours: &[u8],
        theirs: &[u8],
        sides: Sides,
    ) -> io::Result<(String, Option<LineCounts>)> {
        if ours.len().max(theirs.len()) > DIFF_CAP {
            self.notes.push(format!(
                "{}: normalized text larger than {} MiB, so compared line by line (with a bounded look-ahead, not a minimal diff); the first {SHOWN_HUNKS} hunks are shown",
                stream.name(),
                DIFF_CAP >> 20
            ));
            let counted = in_order(Text::Bytes(ours), Text::Bytes(theirs), sides)?;
            return Ok((counted.diff, Some(counted.counts)));
        }
        if has_long_line(ours) || has_long_line(theirs) {
            self.notes.push(format!(
                "{}: a line longer than {LONG_LINE} bytes, so only the first difference is shown, around where it is",
                stream.name()
            ));
            return Ok((relabel(first_difference(ours, theirs), sides), None));
        }
        Ok((relabel(unified_diff(ours, theirs), sides), None))
    }
}
