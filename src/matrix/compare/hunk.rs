//! One hunk of a streamed diff as it is shown: its header with both texts' line
//! numbers and lengths, which stay exact however much of it is cut, and its
//! first [`HUNK_SHOWN`] diff lines; context lines, each run of changes as its
//! removed lines then its added ones, long lines cut around where they differ.

use super::hunks::Sides;
use super::lines::Kept;
use super::show::{cut_line, printable, LONG_LINE};
use crate::outcome::thousands;

/// Lines of context around each run of changes, as in `diff -u`.
pub(super) const CONTEXT: usize = 3;

/// Diff lines shown of one hunk; changes one line apart make one hunk as long
/// as the texts.
pub(super) const HUNK_SHOWN: usize = 60;

/// A hunk being shown.
pub(super) struct Hunk {
    /// The first line of each text in the hunk, from 1.
    start: (u64, u64),
    /// The lines of each text in the hunk.
    pub len: (u64, u64),
    body: Vec<String>,
    /// Diff lines past [`HUNK_SHOWN`], counted.
    hidden: u64,
    /// Same lines since the last change: context after it, or between two
    /// changes, or the gap to the next hunk once there are more than twice
    /// [`CONTEXT`].
    pub pending: Vec<Kept>,
}

impl Hunk {
    /// A hunk whose first lines are these of each text.
    pub(super) fn new(start: (u64, u64)) -> Hunk {
        Hunk {
            start,
            len: (0, 0),
            body: Vec::new(),
            hidden: 0,
            pending: Vec::new(),
        }
    }

    fn push(&mut self, line: String) {
        if self.body.len() < HUNK_SHOWN {
            self.body.push(line);
        } else {
            self.hidden += 1;
        }
    }

    pub(super) fn context(&mut self, line: &Kept) {
        self.len = (self.len.0 + 1, self.len.1 + 1);
        self.push(format!(" {}", shown(line, 0)));
        self.no_newline(line);
    }

    fn no_newline(&mut self, line: &Kept) {
        if !line.ended {
            self.push("\\ No newline at end of file".to_string());
        }
    }

    /// Shows a run of changes: its first removed lines, then its first added
    /// ones, each side's rest counted. A long line is cut around where it first
    /// differs from the line on the other side in the same place.
    pub(super) fn run(&mut self, removed: (&[Kept], u64), added: (&[Kept], u64), sides: Sides) {
        let column = |k: usize| {
            let (Some(x), Some(y)) = (removed.0.get(k), added.0.get(k)) else {
                return 0;
            };
            let (x, y) = (&x.text, &y.text);
            x.iter()
                .zip(y)
                .position(|(p, q)| p != q)
                .unwrap_or(x.len().min(y.len()))
        };
        for ((lines, all), sign, side) in
            [(removed, '-', sides.old_said), (added, '+', sides.new_said)]
        {
            for (k, line) in lines.iter().enumerate() {
                self.push(format!("{sign}{}", shown(line, column(k))));
                self.no_newline(line);
            }
            let more = all - lines.len() as u64;
            if more > 0 {
                self.push(format!("… {} more lines only in {side}", thousands(more)));
            }
        }
    }

    /// The hunk as shown, with the context after its last change.
    pub(super) fn close(mut self) -> String {
        let after: Vec<Kept> = self.pending.drain(..).take(CONTEXT).collect();
        for line in &after {
            self.context(line);
        }
        let mut text = format!(
            "@@ -{} +{} @@\n",
            range(self.start.0, self.len.0),
            range(self.start.1, self.len.1)
        );
        for line in &self.body {
            text.push_str(line);
            text.push('\n');
        }
        if self.hidden > 0 {
            let hidden = thousands(self.hidden);
            text.push_str(&format!("… {hidden} more lines of this hunk not shown\n"));
        }
        text
    }
}

/// A hunk header's range as `diff -u` and the full diffs write it: `START,LEN`,
/// `START` alone for one line, and the line before for none.
fn range(start: u64, len: u64) -> String {
    match len {
        0 => format!("{},0", start - 1),
        1 => start.to_string(),
        _ => format!("{start},{len}"),
    }
}

/// A line as a diff shows it: whole up to [`LONG_LINE`] bytes, else cut around
/// `column` of the bytes kept of it.
fn shown(line: &Kept, column: usize) -> String {
    if line.len <= LONG_LINE as u64 {
        printable(&line.text)
    } else {
        cut_line(&line.text, line.from, column, line.len)
    }
}
