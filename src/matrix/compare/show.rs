//! How differences are shown: unified diffs with a deadline and a cut, the first
//! difference of texts of any size in a window around it, displaced lines of an
//! order-only stream, and bytes made printable (not UTF-8 and control characters
//! as `\xNN`).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use super::files::read_full;
use crate::outcome::thousands;

/// Lines of diff kept per stream; the rest is counted, not shown.
const DIFF_LINES_SHOWN: usize = 400;

/// Displaced lines shown for an order-only stream.
const DISPLACED_SHOWN: usize = 3;

/// A line longer than this is not shown whole: diffs show the text around its
/// first difference instead.
pub(super) const LONG_LINE: usize = 4096;

/// Characters shown of a line around its first difference.
const SHOWN_AROUND: usize = 200;

/// The first lines that stand in different places in two texts holding the same
/// lines.
pub(super) fn displaced(ours: &[u8], theirs: &[u8]) -> Vec<String> {
    let a: Vec<&[u8]> = ours.split(|&b| b == b'\n').collect();
    let b: Vec<&[u8]> = theirs.split(|&b| b == b'\n').collect();
    a.iter()
        .zip(&b)
        .enumerate()
        .filter(|(_, (x, y))| x != y)
        .take(DISPLACED_SHOWN)
        .map(|(i, (x, y))| {
            format!(
                "line {}: reference `{}`, candidate `{}`",
                i + 1,
                clipped(x),
                clipped(y)
            )
        })
        .collect()
}

/// Characters of a displaced line shown; a list of deep paths can run to pages.
const DISPLACED_CHARS: usize = 160;

/// A line as the report shows it: escaped, and cut with a count when long.
fn clipped(line: &[u8]) -> String {
    let shown = printable(line);
    match shown.char_indices().nth(DISPLACED_CHARS) {
        Some((cut, _)) => format!("{}… ({} bytes in all)", &shown[..cut], line.len()),
        None => shown,
    }
}

/// Longest a diff may take to compute before similar settles for a coarser one.
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// A unified diff with three lines of context, reference as `-`, candidate as `+`.
/// Bytes that are not UTF-8 are shown as `\xNN`, so a difference in them stays
/// visible; a long diff is cut with a count, and a large one is computed against
/// a deadline rather than in time that grows with the square of its size.
pub fn unified_diff(reference: &[u8], candidate: &[u8]) -> String {
    let ours = printable(reference);
    let theirs = printable(candidate);
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
            // A first hunk too long to show whole is shown in part, so a long
            // diff never comes out as a count alone.
            if shown == 0 {
                for line in body.lines().take(DIFF_LINES_SHOWN) {
                    text.push_str(line);
                    text.push('\n');
                }
                shown = DIFF_LINES_SHOWN;
                left_out += lines - DIFF_LINES_SHOWN;
            } else {
                left_out += lines;
            }
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

/// Lines of context kept before the first difference, and lines shown after it.
const WINDOW_BEFORE: usize = 3;
const WINDOW_AFTER: usize = 5;

/// Bytes read on each side of the first difference to show it; lines reaching
/// past that are shown cut.
const WINDOW_BYTES: usize = 8192;

/// The first difference between two texts in memory, shown as
/// `render_first_difference` does.
pub fn first_difference(ours: &[u8], theirs: &[u8]) -> String {
    let at = ours
        .iter()
        .zip(theirs)
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(theirs.len()));
    let line = 1 + ours[..at].iter().filter(|&&b| b == b'\n').count();
    let from = at.saturating_sub(WINDOW_BYTES);
    let window = |text: &[u8]| Window {
        bytes: text[from..(at + WINDOW_BYTES).min(text.len())].to_vec(),
        from,
        to_end: at + WINDOW_BYTES >= text.len(),
    };
    render_first_difference(&window(ours), &window(theirs), line, at)
}

/// The first difference between two files of any size, found by reading both side
/// by side in blocks; only a window around it is ever held in memory.
pub fn first_difference_of_files(ours: &Path, theirs: &Path) -> io::Result<String> {
    let (mut a, mut b) = (File::open(ours)?, File::open(theirs)?);
    let (mut x, mut y) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    let (mut offset, mut newlines) = (0usize, 0usize);
    let at = loop {
        let n = read_full(&mut a, &mut x)?;
        let m = read_full(&mut b, &mut y)?;
        let common = n.min(m);
        if let Some(p) = x[..common]
            .iter()
            .zip(&y[..common])
            .position(|(p, q)| p != q)
        {
            newlines += x[..p].iter().filter(|&&c| c == b'\n').count();
            break offset + p;
        }
        newlines += x[..common].iter().filter(|&&c| c == b'\n').count();
        offset += common;
        if n != m || n == 0 {
            break offset;
        }
    };
    let from = at.saturating_sub(WINDOW_BYTES);
    let window = |path: &Path| -> io::Result<Window> {
        use std::io::{Seek, SeekFrom};
        let mut file = File::open(path)?;
        let len = file.metadata()?.len() as usize;
        file.seek(SeekFrom::Start(from as u64))?;
        let mut bytes = Vec::new();
        file.take((at - from + WINDOW_BYTES) as u64)
            .read_to_end(&mut bytes)?;
        Ok(Window {
            bytes,
            from,
            to_end: at + WINDOW_BYTES >= len,
        })
    };
    Ok(render_first_difference(
        &window(ours)?,
        &window(theirs)?,
        newlines + 1,
        at,
    ))
}

/// The bytes of a text around its first difference: from offset `from`, and
/// whether they reach the text's end.
struct Window {
    bytes: Vec<u8>,
    from: usize,
    to_end: bool,
}

/// Shows a first difference: up to [`WINDOW_BEFORE`] lines of context, then up to
/// [`WINDOW_AFTER`] lines of each side from the line where they part, each long
/// line cut around where the difference is. The windows agree up to `offset`, the
/// difference, which is on line `line` of the whole texts.
fn render_first_difference(ours: &Window, theirs: &Window, line: usize, offset: usize) -> String {
    let at = offset - ours.from;
    let line_start = ours.bytes[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let column = at - line_start;
    let mut text = format!(
        "--- reference\n+++ candidate\n@@ first difference at line {line} ({offset} bytes into the text); the texts are not compared past it @@\n"
    );
    let before: Vec<&[u8]> = ours.bytes[..line_start]
        .split_inclusive(|&b| b == b'\n')
        .collect();
    // The window's first line may begin before the window: leave it out.
    let skip_partial = usize::from(ours.from > 0);
    for context in before
        .iter()
        .skip(skip_partial)
        .rev()
        .take(WINDOW_BEFORE)
        .rev()
    {
        text.push(' ');
        text.push_str(&cut_around(context, 0, true));
        text.push('\n');
    }
    let starts_whole = line_start > 0 || ours.from == 0;
    for (prefix, side) in [('-', ours), ('+', theirs)] {
        let lines: Vec<&[u8]> = side.bytes[line_start..]
            .split_inclusive(|&b| b == b'\n')
            .collect();
        for (i, part) in lines.iter().take(WINDOW_AFTER).enumerate() {
            let whole = (i > 0 || starts_whole) && (part.ends_with(b"\n") || side.to_end);
            text.push(prefix);
            text.push_str(&cut_around(part, if i == 0 { column } else { 0 }, whole));
            text.push('\n');
        }
        if lines.is_empty() {
            text.push_str(&format!("{prefix}(end of text)\n"));
        } else if lines.len() > WINDOW_AFTER {
            text.push_str(&format!("{prefix}…\n"));
        }
    }
    text
}

/// A line (without its newline) as a report shows it: printable, and cut to about
/// [`SHOWN_AROUND`] characters around `column` when it is long. `whole` says
/// whether `line` is all of the line, or only the part in view.
fn cut_around(line: &[u8], column: usize, whole: bool) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    if line.len() <= SHOWN_AROUND && whole {
        return printable(line);
    }
    let from = column.saturating_sub(SHOWN_AROUND / 4).min(line.len());
    let to = (from + SHOWN_AROUND).min(line.len());
    let length = if whole {
        format!("{} bytes in all", line.len())
    } else {
        format!("a line longer than the {} bytes in view", line.len())
    };
    format!(
        "{}{}{} ({length})",
        if from > 0 { "…" } else { "" },
        printable(&line[from..to]),
        if to < line.len() { "…" } else { "" },
    )
}

/// A line too long to show whole, from `view` (bytes of it from byte `start`):
/// about [`SHOWN_AROUND`] characters around `column` of the view, and its whole
/// length.
pub(super) fn cut_line(view: &[u8], start: u64, column: usize, len: u64) -> String {
    let from = column.saturating_sub(SHOWN_AROUND / 4).min(view.len());
    let to = (from + SHOWN_AROUND).min(view.len());
    format!(
        "{}{}… ({} bytes in all)",
        if start > 0 || from > 0 { "…" } else { "" },
        printable(&view[from..to]),
        thousands(len)
    )
}

/// Whether a text has a line too long to show whole.
pub(super) fn has_long_line(text: &[u8]) -> bool {
    text.split(|&b| b == b'\n')
        .any(|line| line.len() > LONG_LINE)
}

/// Bytes as a report shows them: text that is not UTF-8 as `\xNN`, and control
/// characters but tabs and newlines escaped, so an arm's output can neither hide a
/// difference in them nor steer the reader's terminal. A C0 control or DEL is one
/// byte and shown as `\xNN`; a C1 control is two bytes of UTF-8 and shown as
/// `\u{NN}`, apart from the lone byte NN that is not UTF-8. A backslash that starts
/// the text of either escape is `\x5c`, so the text is never read as the escape.
pub fn printable(bytes: &[u8]) -> String {
    let escaped = crate::fixtures::names::escaped(bytes);
    crate::fixtures::names::controls_escaped(escaped, |c| c == '\t' || c == '\n')
}

#[cfg(test)]
mod tests;
