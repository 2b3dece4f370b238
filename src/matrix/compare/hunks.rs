//! Counting and showing what the in-order alignment (`ordered`) finds in texts
//! too large for a full diff: every differing line is counted, over the whole of
//! both texts, and the first [`SHOWN_HUNKS`] hunks are shown in unified-diff form
//! (`--- reference`, `+++ candidate`, `@@ -A,B +C,D @@` with the texts' line
//! numbers, three lines of context), each cut to a few lines of every run of
//! changes. The lines shown are read from a second pass over each text that trails
//! the alignment and stops once the last shown hunk is complete, so memory holds
//! a few dozen lines however large the texts and their differences are.

use std::collections::VecDeque;
use std::io;

use super::hunk::{Hunk, CONTEXT};
use super::lines::{refocus, Kept, Lines, Text};
use super::ordered::{align, Steps};
use crate::outcome::thousands;
use crate::outcome::{LineCounts, LineOrder};

/// Hunks shown of a stream too large for a full diff; the rest are counted.
pub const SHOWN_HUNKS: usize = 5;

/// Lines shown of each side of one run of changes; the rest are counted. Ten
/// lines of a column-width change that touches every line show the pattern.
const SIDE_SHOWN: usize = 10;

/// What the two texts are called in a diff: `reference` and `candidate`, or the
/// variants of a flaky arm.
#[derive(Clone, Copy)]
pub(super) struct Sides<'a> {
    /// In the headers: `--- reference`, `+++ candidate`.
    pub old: &'a str,
    pub new: &'a str,
    /// In a sentence: `only in the reference`.
    pub old_said: &'a str,
    pub new_said: &'a str,
}

/// The arms of a case.
pub(super) const ARMS: Sides<'static> = Sides {
    old: "reference",
    new: "candidate",
    old_said: "the reference",
    new_said: "the candidate",
};

/// A difference counted over the whole of two texts, and the diff that shows it.
pub(super) struct Counted {
    pub diff: String,
    pub counts: LineCounts,
}

/// Compares two texts of any size in order (see [`align`] for what is paired
/// with what) and shows the first hunks under a line that counts them all:
/// `40,000 lines differ (40,000 only in the reference, 40,000 only in the
/// candidate); the first 5 of 8 hunks are shown`.
///
/// A line "differs" when it has no equal counterpart at its place in the other
/// text; a reference line changed into a candidate line counts once, so each run
/// of changes counts its longer side. When the texts differ only by lines
/// changed in place, that is exactly the number of line numbers at which they
/// differ.
pub(super) fn in_order(ours: Text, theirs: Text, sides: Sides) -> io::Result<Counted> {
    let mut hunks = Hunks {
        sides,
        next: (1, 1),
        removed: 0,
        added: 0,
        differing: 0,
        hunks: 0,
        run: (0, 0),
        same_run: 0,
        show: Some(Show {
            texts: (ours, theirs),
            a: ours.lines()?,
            b: theirs.lines()?,
            recent: VecDeque::new(),
            open: None,
            run: (Vec::new(), Vec::new()),
        }),
        shown: Vec::new(),
    };
    align(ours, theirs, &mut hunks)?;
    hunks.finish()
}

/// The counts so far, and the hunks being shown.
struct Hunks<'a> {
    sides: Sides<'a>,
    /// The numbers, from 1, of the next line of each text.
    next: (u64, u64),
    removed: u64,
    added: u64,
    differing: u64,
    hunks: u64,
    /// Lines removed and added since the last same line.
    run: (u64, u64),
    /// Same lines since the last change, or since the start.
    same_run: u64,
    /// Gone once the last hunk shown is complete: nothing more is read for it.
    show: Option<Show<'a>>,
    shown: Vec<String>,
}

/// The second pass over both texts, for the lines shown.
struct Show<'a> {
    /// The texts, for reading a long line again around where it differs.
    texts: (Text<'a>, Text<'a>),
    a: Lines<'a>,
    b: Lines<'a>,
    /// The last [`CONTEXT`] same lines: the context before a hunk.
    recent: VecDeque<Kept>,
    open: Option<Hunk>,
    /// The first [`SIDE_SHOWN`] lines removed and added in the run of changes.
    run: (Vec<Kept>, Vec<Kept>),
}

impl Steps for Hunks<'_> {
    fn same(&mut self) -> io::Result<()> {
        self.end_run()?;
        self.same_run += 1;
        self.next = (self.next.0 + 1, self.next.1 + 1);
        let Some(show) = &mut self.show else {
            return Ok(());
        };
        let line = show.a.next_kept()?.unwrap_or_else(missing);
        show.b.skip()?;
        if let Some(hunk) = &mut show.open {
            hunk.pending.push(line.clone());
            if hunk.pending.len() > 2 * CONTEXT {
                let hunk = show.open.take().expect("a hunk is open");
                self.shown.push(hunk.close());
            }
        }
        show.recent.push_back(line);
        if show.recent.len() > CONTEXT {
            show.recent.pop_front();
        }
        if self.shown.len() == SHOWN_HUNKS {
            self.show = None;
        }
        Ok(())
    }

    fn removed(&mut self) -> io::Result<()> {
        self.change();
        self.removed += 1;
        self.run.0 += 1;
        self.next.0 += 1;
        if let Some(show) = &mut self.show {
            if let Some(hunk) = &mut show.open {
                hunk.len.0 += 1;
            }
            if show.run.0.len() < SIDE_SHOWN {
                show.run.0.push(show.a.next_kept()?.unwrap_or_else(missing));
            } else {
                show.a.skip()?;
            }
        }
        Ok(())
    }

    fn added(&mut self) -> io::Result<()> {
        self.change();
        self.added += 1;
        self.run.1 += 1;
        self.next.1 += 1;
        if let Some(show) = &mut self.show {
            if let Some(hunk) = &mut show.open {
                hunk.len.1 += 1;
            }
            if show.run.1.len() < SIDE_SHOWN {
                show.run.1.push(show.b.next_kept()?.unwrap_or_else(missing));
            } else {
                show.b.skip()?;
            }
        }
        Ok(())
    }
}

/// A line the second pass did not find where the first did: only a text that
/// changed between the passes, which captured output does not.
fn missing() -> Kept {
    Kept {
        text: b"(the text changed while it was compared)".to_vec(),
        from: 0,
        len: 0,
        ended: true,
        at: 0,
    }
}

impl Hunks<'_> {
    /// A change is next: a run of changes starts, and a hunk with it when more
    /// than twice [`CONTEXT`] same lines came since the last change.
    fn change(&mut self) {
        if self.run != (0, 0) {
            return;
        }
        let new_hunk = self.hunks == 0 || self.same_run > 2 * CONTEXT as u64;
        self.hunks += u64::from(new_hunk);
        self.same_run = 0;
        let Some(show) = &mut self.show else {
            return;
        };
        // A hunk still open means at most twice CONTEXT same lines came since its
        // last change (`same` closes it at one more), so the change joins it.
        match &mut show.open {
            Some(hunk) => {
                for line in std::mem::take(&mut hunk.pending) {
                    hunk.context(&line);
                }
            }
            _ => {
                let before = show.recent.len() as u64;
                let mut hunk = Hunk::new((self.next.0 - before, self.next.1 - before));
                for line in &show.recent {
                    hunk.context(line);
                }
                show.open = Some(hunk);
            }
        }
    }

    /// The run of changes ends: it is counted, and shown when a hunk is open.
    fn end_run(&mut self) -> io::Result<()> {
        if self.run == (0, 0) {
            return Ok(());
        }
        self.differing += self.run.0.max(self.run.1);
        if let Some(show) = &mut self.show {
            let (mut removed, mut added) = std::mem::take(&mut show.run);
            if let Some(hunk) = &mut show.open {
                // Lines changed in place are shown around where they differ.
                for (x, y) in removed.iter_mut().zip(added.iter_mut()) {
                    refocus(show.texts, x, y)?;
                }
                hunk.run((&removed, self.run.0), (&added, self.run.1), self.sides);
            }
        }
        self.run = (0, 0);
        Ok(())
    }

    fn finish(mut self) -> io::Result<Counted> {
        self.end_run()?;
        if let Some(hunk) = self.show.as_mut().and_then(|show| show.open.take()) {
            self.shown.push(hunk.close());
        }
        let Sides {
            old,
            new,
            old_said,
            new_said,
        } = self.sides;
        let lines = match self.differing {
            1 => "1 line differs".to_string(),
            n => format!("{} lines differ", thousands(n)),
        };
        let hunks = match (self.shown.len() as u64, self.hunks) {
            (1, 1) => "the only hunk is shown".to_string(),
            (shown, all) if shown == all => format!("all {all} hunks are shown"),
            (shown, all) => format!("the first {shown} of {} hunks are shown", thousands(all)),
        };
        let mut diff = format!(
            "{lines} ({} only in {old_said}, {} only in {new_said}); {hunks}\n--- {old}\n+++ {new}\n",
            thousands(self.removed),
            thousands(self.added),
        );
        diff.extend(self.shown);
        Ok(Counted {
            diff,
            counts: LineCounts {
                compared: LineOrder::InOrder,
                only_in_reference: self.removed,
                only_in_candidate: self.added,
                differing: Some(self.differing),
                hunks: Some(self.hunks),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::compare::hunk::HUNK_SHOWN;
    use crate::matrix::compare::unified_diff;

    /// Characters a cut line shows before its first difference.
    const SHOWN_AROUND_BEFORE: usize = 50;

    fn counted(ours: &str, theirs: &str) -> Counted {
        in_order(
            Text::Bytes(ours.as_bytes()),
            Text::Bytes(theirs.as_bytes()),
            ARMS,
        )
        .unwrap()
    }

    /// The count line, and the diff below it.
    fn split(counted: &Counted) -> (&str, &str) {
        counted.diff.split_once('\n').unwrap()
    }

    fn numbered(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn changes_in_place_are_counted_exactly_and_shown_as_a_full_diff_shows_them() {
        let ours = numbered(100);
        let mut theirs = ours.clone();
        for i in [9, 10, 49, 99] {
            theirs[i] = format!("changed {i}\n");
        }
        let (ours, theirs) = (ours.concat(), theirs.concat());
        let found = counted(&ours, &theirs);
        let (count, diff) = split(&found);
        assert_eq!(
            count,
            "4 lines differ (4 only in the reference, 4 only in the candidate); all 3 hunks are shown"
        );
        assert_eq!(diff, unified_diff(ours.as_bytes(), theirs.as_bytes()));
        assert!(diff.contains("@@ -7,8 +7,8 @@\n line 7\n"), "{diff}");
        let counts = &found.counts;
        assert_eq!((counts.differing, counts.hunks), (Some(4), Some(3)));
    }

    #[test]
    fn the_sides_are_named_as_given() {
        let variants = Sides {
            old: "variant 1",
            new: "this variant",
            old_said: "variant 1",
            new_said: "this variant",
        };
        let found = in_order(Text::Bytes(b"a\n"), Text::Bytes(b"b\n"), variants).unwrap();
        assert_eq!(
            found.diff,
            "1 line differs (1 only in variant 1, 1 only in this variant); the only hunk is shown\n--- variant 1\n+++ this variant\n@@ -1 +1 @@\n-a\n+b\n"
        );
    }

    #[test]
    fn changes_more_than_six_lines_apart_make_two_hunks() {
        let ours = numbered(40);
        for (gap, hunks) in [(6, 1), (7, 2)] {
            let mut theirs = ours.clone();
            theirs[10] = "changed\n".into();
            theirs[11 + gap] = "changed\n".into();
            let (ours, theirs) = (ours.concat(), theirs.concat());
            let found = counted(&ours, &theirs);
            let (_, diff) = split(&found);
            assert_eq!(
                diff,
                unified_diff(ours.as_bytes(), theirs.as_bytes()),
                "{gap}"
            );
            assert_eq!(found.counts.hunks, Some(hunks), "{gap}");
        }
    }

    #[test]
    fn insertions_and_deletions_count_alone() {
        let ours = numbered(40);
        let mut theirs = ours.clone();
        theirs.insert(30, "new\n".into());
        theirs.remove(5);
        theirs.remove(5);
        let (ours, theirs) = (ours.concat(), theirs.concat());
        let found = counted(&ours, &theirs);
        let (count, diff) = split(&found);
        assert_eq!(
            count,
            "3 lines differ (2 only in the reference, 1 only in the candidate); all 2 hunks are shown"
        );
        assert_eq!(diff, unified_diff(ours.as_bytes(), theirs.as_bytes()));
    }

    #[test]
    fn a_missing_last_newline_and_empty_texts() {
        let found = counted("a\nb\n", "a\nb");
        let (count, diff) = split(&found);
        assert_eq!(
            count,
            "1 line differs (1 only in the reference, 1 only in the candidate); the only hunk is shown"
        );
        assert_eq!(diff, unified_diff(b"a\nb\n", b"a\nb"));
        assert!(
            diff.ends_with("-b\n+b\n\\ No newline at end of file\n"),
            "{diff}"
        );
        for (ours, theirs, header, removed, added) in [
            ("", "a\nb\n", "@@ -0,0 +1,2 @@", 0, 2),
            ("a\n", "", "@@ -1 +0,0 @@", 1, 0),
        ] {
            let found = counted(ours, theirs);
            let (_, diff) = split(&found);
            assert!(diff.contains(header), "{diff}");
            assert_eq!(diff, unified_diff(ours.as_bytes(), theirs.as_bytes()));
            let counts = &found.counts;
            assert_eq!(
                (counts.only_in_reference, counts.only_in_candidate),
                (removed, added)
            );
        }
    }

    #[test]
    fn long_runs_and_many_hunks_are_cut_and_counted() {
        // 8 runs of 500 lines changed in place, 100 lines apart.
        let ours = numbered(5000);
        let theirs: Vec<String> = ours
            .iter()
            .enumerate()
            .map(|(i, line)| match i % 600 {
                0..500 if i < 8 * 600 => format!("changed {i}\n"),
                _ => line.clone(),
            })
            .collect();
        let found = counted(&ours.concat(), &theirs.concat());
        let (count, diff) = split(&found);
        assert_eq!(
            count,
            "4,000 lines differ (4,000 only in the reference, 4,000 only in the candidate); the first 5 of 8 hunks are shown"
        );
        let headers: Vec<&str> = diff.lines().filter(|l| l.starts_with("@@")).collect();
        assert_eq!(headers.len(), SHOWN_HUNKS, "{diff}");
        assert_eq!(headers[0], "@@ -1,503 +1,503 @@");
        assert_eq!(headers[1], "@@ -598,506 +598,506 @@");
        assert_eq!(
            diff.matches("… 490 more lines only in the reference")
                .count(),
            5
        );
        assert_eq!(
            diff.matches("… 490 more lines only in the candidate")
                .count(),
            5
        );
        assert!(diff.lines().count() < 200, "{diff}");
    }

    #[test]
    fn dense_changes_make_one_hunk_cut_to_its_first_lines() {
        let ours = numbered(1000);
        let theirs: Vec<String> = ours
            .iter()
            .enumerate()
            .map(|(i, l)| {
                if i % 2 == 0 {
                    format!("x{l}")
                } else {
                    l.clone()
                }
            })
            .collect();
        let found = counted(&ours.concat(), &theirs.concat());
        let (count, diff) = split(&found);
        assert!(count.starts_with("500 lines differ ("), "{count}");
        assert!(count.ends_with("the only hunk is shown"), "{count}");
        assert!(
            diff.starts_with(
                "--- reference\n+++ candidate\n@@ -1,1000 +1,1000 @@\n-line 1\n+xline 1\n line 2\n"
            ),
            "{diff}"
        );
        assert!(
            diff.ends_with(" more lines of this hunk not shown\n"),
            "{diff}"
        );
        assert_eq!(diff.lines().count(), 3 + HUNK_SHOWN + 1);
    }

    #[test]
    fn a_long_line_is_cut_around_where_it_differs() {
        let long = "a".repeat(10_000);
        let ours = format!("{long}X{long}\n");
        let theirs = format!("{long}Y{long}\n");
        let found = counted(&ours, &theirs);
        let (_, diff) = split(&found);
        // The difference lies past the bytes first kept: both lines are read again
        // around it, and shown from a little before it.
        let around = format!("…{}", "a".repeat(SHOWN_AROUND_BEFORE));
        for (sign, byte) in [('-', 'X'), ('+', 'Y')] {
            let shown = format!("\n{sign}{around}{byte}aaa");
            assert!(diff.contains(&shown), "{shown:?} in\n{diff}");
        }
        assert!(diff.contains("… (20,001 bytes in all)"), "{diff}");
        // From a file as from memory, and where one line is the other's start.
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, format!("{long}{long}\n")).unwrap();
        std::fs::write(&b, format!("{long}{long}Z\n")).unwrap();
        let found = in_order(Text::File(&a), Text::File(&b), ARMS).unwrap();
        let shown = format!("\n+{around}Z… (20,001 bytes in all)");
        assert!(found.diff.contains(&shown), "{shown:?} in\n{}", found.diff);
        let near = format!("{}X{}\n", "a".repeat(100), "b".repeat(10_000));
        let far = format!("{}Y{}\n", "a".repeat(100), "b".repeat(10_000));
        let found = counted(&near, &far);
        let around = format!("…{}", "a".repeat(SHOWN_AROUND_BEFORE));
        assert!(
            found.diff.contains(&format!("-{around}Xbbb")),
            "{}",
            found.diff
        );
        assert!(
            found.diff.contains(&format!("+{around}Ybbb")),
            "{}",
            found.diff
        );
        assert!(found.diff.lines().all(|l| l.len() < 1000), "{}", found.diff);
    }
}
