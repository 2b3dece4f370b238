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
        "--- reference\n+++ candidate\n@@ first difference at line {line}, byte {offset}; the texts are not compared past it @@\n"
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

/// A line too long to show whole, from `view` (its first bytes): about
/// [`SHOWN_AROUND`] characters around `column`, and its whole length.
pub(super) fn cut_line(view: &[u8], column: usize, len: u64) -> String {
    let from = column.saturating_sub(SHOWN_AROUND / 4).min(view.len());
    let to = (from + SHOWN_AROUND).min(view.len());
    format!(
        "{}{}… ({} bytes in all)",
        if from > 0 { "…" } else { "" },
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
/// `\u{NN}`, apart from the lone byte NN that is not UTF-8.
pub fn printable(bytes: &[u8]) -> String {
    let escaped = crate::fixtures::names::escaped(bytes);
    let to_escape = |c: char| c.is_control() && c != '\t' && c != '\n';
    if !escaped.chars().any(to_escape) {
        return escaped;
    }
    let mut out = String::with_capacity(escaped.len());
    for c in escaped.chars() {
        match c {
            c if !to_escape(c) => out.push(c),
            c if c.is_ascii() => out.push_str(&format!("\\x{:02x}", u32::from(c))),
            c => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(
            diff.lines().nth(2).is_some_and(|l| l.starts_with("@@")),
            "{diff}"
        );
    }

    #[test]
    fn a_dropped_line_shows_in_the_diff() {
        let diff = unified_diff(b"1\ta\n2\tb\n3\tc\n", b"1\ta\n3\tc\n");
        assert!(diff.contains("-2\tb"), "{diff}");
        assert!(diff.starts_with("--- reference\n+++ candidate\n"), "{diff}");
    }

    #[test]
    fn the_first_difference_comes_with_context() {
        let ours: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let theirs = ours.replace("line 50\n", "line fifty\n");
        let shown = first_difference(ours.as_bytes(), theirs.as_bytes());
        assert!(shown.contains("first difference at line 51"), "{shown}");
        assert!(shown.contains(" line 49\n-line 50\n"), "{shown}");
        assert!(shown.contains("+line fifty\n+line 51\n"), "{shown}");
        assert!(
            shown.contains(" line 47\n") && !shown.contains("line 46"),
            "{shown}"
        );
    }

    #[test]
    fn a_difference_in_one_huge_line_is_shown_cut_around_it() {
        let huge = "a".repeat(3_000_000) + "X" + &"b".repeat(3_000_000);
        let shown = x_made_y(&huge);
        assert!(shown.len() < 1000, "{shown}");
        assert!(shown.contains("line 1, byte 3000000"), "{shown}");
        assert!(shown.contains("aX") && shown.contains("aY"), "{shown}");
        assert!(shown.contains("(a line longer than the"), "{shown}");
        let short = first_difference(b"x\nsame\nab\n", b"x\nsame\nac\n");
        assert!(short.ends_with(" x\n same\n-ab\n+ac\n"), "{short}");
    }

    #[test]
    fn every_control_but_tab_and_newline_is_escaped_and_c1_apart_from_a_lone_byte() {
        assert_eq!(printable(b"\x7f\x01\x1f"), "\\x7f\\x01\\x1f");
        assert_eq!(printable(b"\t\x01\n"), "\t\\x01\n");
        assert_eq!(printable("a\u{85}b\u{9f}".as_bytes()), "a\\u{85}b\\u{9f}");
        assert_eq!(printable(b"a\x85b"), "a\\x85b");
        assert_eq!(printable("é\tx\n".as_bytes()), "é\tx\n");
        assert_eq!(printable(b""), "");
    }

    /// Text whose every stretch says where it is: `0000,0005,0010,…`.
    fn ruler(len: usize) -> Vec<u8> {
        let mut text: Vec<u8> = (0..len)
            .step_by(5)
            .flat_map(|i| format!("{i:04},").into_bytes())
            .collect();
        text.truncate(len);
        text
    }

    #[test]
    fn a_cut_line_shows_its_first_bytes_around_the_column_and_its_whole_length() {
        let view = ruler(1000);
        let at = |from: usize, to: usize| printable(&view[from..to]);
        // The view starts a quarter of the shown width before the column, and ends
        // where what was kept ends.
        for (column, len, shown) in [
            (
                500,
                12_345,
                format!("…{}… (12,345 bytes in all)", at(450, 650)),
            ),
            (51, 1000, format!("…{}… (1,000 bytes in all)", at(1, 201))),
            (50, 1000, format!("{}… (1,000 bytes in all)", at(0, 200))),
            (
                900,
                1000,
                format!("…{}… (1,000 bytes in all)", at(850, 1000)),
            ),
        ] {
            assert_eq!(cut_line(&view, column, len), shown, "column {column}");
        }
        assert_eq!(cut_line(&view, 5000, 9000), "…… (9,000 bytes in all)");
    }

    #[test]
    fn a_line_is_whole_up_to_the_shown_width_and_cut_past_it() {
        let line = |len: usize| [ruler(len), b"\n".to_vec()].concat();
        let (fits, over) = (line(SHOWN_AROUND), line(SHOWN_AROUND + 1));
        assert_eq!(cut_around(&fits, 0, true), printable(&fits[..SHOWN_AROUND]));
        assert_eq!(
            cut_around(&over, 0, true),
            format!("{}… (201 bytes in all)", printable(&over[..SHOWN_AROUND]))
        );
        assert_eq!(
            cut_around(&over, 60, true),
            format!(
                "…{} (201 bytes in all)",
                printable(&over[10..SHOWN_AROUND + 1])
            )
        );
        // A part of a line, however short, is never taken for the whole of it.
        assert_eq!(
            cut_around(b"abc", 0, false),
            "abc (a line longer than the 3 bytes in view)"
        );
    }

    #[test]
    fn a_long_line_is_one_longer_than_the_limit_wherever_it_stands() {
        let line = |len: usize| "x".repeat(len);
        assert!(!has_long_line(line(LONG_LINE).as_bytes()));
        assert!(has_long_line(line(LONG_LINE + 1).as_bytes()));
        let lines = |lens: &[usize]| lens.iter().map(|&n| line(n)).collect::<Vec<_>>().join("\n");
        assert!(!has_long_line(lines(&[LONG_LINE, LONG_LINE, 0]).as_bytes()));
        assert!(has_long_line(lines(&[1, LONG_LINE + 1]).as_bytes()));
        assert!(has_long_line(lines(&[LONG_LINE + 1, 1]).as_bytes()));
        assert!(!has_long_line(b""));
    }

    #[test]
    fn control_characters_are_shown_escaped() {
        assert_eq!(printable(b"a\x1b[2J\tb\n\x00"), "a\\x1b[2J\tb\n\\x00");
        let diff = unified_diff(b"a\x1b\n", b"a\x07\n");
        assert!(
            diff.contains("-a\\x1b") && diff.contains("+a\\x07"),
            "{diff}"
        );
    }

    #[test]
    fn displaced_lines_are_clipped() {
        let long = "d/".repeat(500);
        let shown = displaced(
            format!("{long}\nb\n").as_bytes(),
            format!("b\n{long}\n").as_bytes(),
        );
        assert_eq!(shown.len(), 2);
        assert!(shown[0].len() < 400, "{}", shown[0]);
        assert!(shown[0].contains("… (1000 bytes in all)"), "{}", shown[0]);
        assert!(
            shown[1].starts_with("line 2: reference `b`"),
            "{}",
            shown[1]
        );
    }

    #[test]
    fn displaced_lines_name_both_sides_exactly() {
        let shown = displaced(b"a\nb\nc\nd\ne\n", b"b\na\nd\nc\ne\n");
        assert_eq!(
            shown,
            [
                "line 1: reference `a`, candidate `b`",
                "line 2: reference `b`, candidate `a`",
                "line 3: reference `c`, candidate `d`",
            ]
        );
    }

    /// Texts whose diff is one hunk per entry of `changes` (lines removed, lines
    /// added), ten same lines apart: each hunk is those lines, three of context on
    /// each side and its header.
    fn hunked(changes: &[(usize, usize)]) -> String {
        let same = |n: usize| (0..10).map(move |i| format!("same {n}.{i}\n"));
        let (mut ours, mut theirs): (String, String) = (same(0).collect(), same(0).collect());
        for (n, &(removed, added)) in changes.iter().enumerate() {
            ours.extend((0..removed).map(|i| format!("ours {n}.{i}\n")));
            theirs.extend((0..added).map(|i| format!("theirs {n}.{i}\n")));
            ours.extend(same(n + 1));
            theirs.extend(same(n + 1));
        }
        unified_diff(ours.as_bytes(), theirs.as_bytes())
    }

    #[test]
    fn hunks_are_shown_while_they_fit_and_the_rest_counted() {
        // Hunks of 9, 391 and 21 lines: the first two make exactly the 400 shown.
        let diff = hunked(&[(1, 1), (192, 192), (7, 7)]);
        assert!(diff.contains("+theirs 1.191\n"), "{diff}");
        assert!(!diff.contains("ours 2.0"), "{diff}");
        assert!(diff.ends_with("… 21 more diff lines not shown\n"), "{diff}");
        assert_eq!(diff.lines().count(), 2 + 400 + 1);
        let diff = hunked(&[(1, 1), (7, 7)]);
        assert!(!diff.contains("not shown"), "{diff}");
    }

    #[test]
    fn a_first_hunk_too_long_is_shown_in_part_and_the_rest_counted() {
        // One hunk of 3 + 500 + 501 + 3 lines and its header.
        let diff = hunked(&[(500, 501)]);
        assert_eq!(diff.lines().count(), 2 + 400 + 1);
        assert!(
            diff.ends_with("… 608 more diff lines not shown\n"),
            "{diff}"
        );
    }

    /// The first difference of two texts found in files, checked against the
    /// same texts in memory.
    fn of_files(ours: &[u8], theirs: &[u8]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, ours).unwrap();
        std::fs::write(&b, theirs).unwrap();
        let shown = first_difference_of_files(&a, &b).unwrap();
        assert_eq!(shown, first_difference(ours, theirs));
        shown
    }

    /// The first difference of `text` against itself with its one `X` made `Y`,
    /// from files and in memory alike.
    fn x_made_y(text: &str) -> String {
        of_files(text.as_bytes(), text.replacen('X', "Y", 1).as_bytes())
    }

    #[test]
    fn files_count_the_lines_before_the_difference_across_blocks() {
        // About 89,000 bytes: line 9001 lies past the first 64 KiB block read.
        let ours: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        for (line, number) in [("line 50\n", 51), ("line 9000\n", 9001)] {
            let theirs = ours.replace(line, "changed\n");
            let shown = of_files(ours.as_bytes(), theirs.as_bytes());
            let at = format!("first difference at line {number}, byte ");
            assert!(shown.contains(&at), "{shown}");
            // Lines within the window are whole, though it ends before the text.
            let ours = format!("\n-{line}-line {number}\n");
            assert!(shown.contains(&ours), "{shown}");
            let theirs = format!("\n+changed\n+line {number}\n");
            assert!(shown.contains(&theirs), "{shown}");
        }
    }

    #[test]
    fn a_text_that_is_the_start_of_the_other_ends_where_it_ends() {
        let ours: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        let shorter = &ours[..ours.len() - 10];
        let shown = of_files(ours.as_bytes(), shorter.as_bytes());
        let at = "first difference at line 10000, byte 98880;";
        assert!(shown.contains(at), "{shown}");
        assert!(shown.ends_with("-line 9999\n+(end of text)\n"), "{shown}");
        let shown = of_files(shorter.as_bytes(), ours.as_bytes());
        assert!(shown.contains(at), "{shown}");
        assert!(shown.ends_with("-(end of text)\n+line 9999\n"), "{shown}");
    }

    #[test]
    fn a_last_line_without_a_newline_in_view_is_shown_whole() {
        for shown in [of_files(b"xb", b"yb"), of_files(b"same\nab", b"same\nac")] {
            assert!(!shown.contains("in view"), "{shown}");
        }
        assert!(of_files(b"xb", b"yb").ends_with("\n-xb\n+yb\n"));
    }

    #[test]
    fn the_line_of_the_difference_is_cut_around_it_wherever_it_starts() {
        let first = "p".repeat(1000);
        let (a, b) = ("a".repeat(600), "b".repeat(600));
        let shown = x_made_y(&format!("{first}\n{a}X{b}\n"));
        // 50 characters before the difference and 149 after it, of 1,201.
        let (a, b) = ("a".repeat(50), "b".repeat(149));
        for side in [format!("\n-…{a}X{b}…"), format!("\n+…{a}Y{b}…")] {
            let cut = format!("{side} (1201 bytes in all)\n");
            assert!(shown.contains(&cut), "{shown}");
        }
    }

    #[test]
    fn a_line_begun_before_the_window_is_no_context_and_not_whole() {
        // The difference is past the window's reach from the start: the window
        // begins inside the long first line.
        let long = "p".repeat(10_000);
        let shown = x_made_y(&format!("{long}\nq\nX\n"));
        assert!(shown.ends_with("@@\n q\n-X\n+Y\n"), "{shown}");
        let (a, b) = ("a".repeat(10_000), "b".repeat(10));
        let shown = x_made_y(&format!("{a}X{b}\nnext\n"));
        let cut = "bytes in view)\n-next\n+…";
        assert!(shown.contains(cut), "{shown}");
        assert!(shown.ends_with("bytes in view)\n+next\n"), "{shown}");
    }

    #[test]
    fn a_line_the_window_cuts_short_is_not_whole() {
        let long = "c".repeat(20_000);
        let shown = x_made_y(&format!("X\n{long}\n"));
        let cut = "cc… (a line longer than the 8190 bytes in view)\n";
        assert!(shown.contains("@@\n-X\n-cc"), "{shown}");
        assert_eq!(shown.matches(cut).count(), 2, "{shown}");
    }

    #[test]
    fn five_lines_of_each_side_are_shown_and_more_marked() {
        let five = first_difference(b"a\n1\n2\n3\n4\n", b"b\n1\n2\n3\n4\n");
        assert!(
            five.ends_with("@@\n-a\n-1\n-2\n-3\n-4\n+b\n+1\n+2\n+3\n+4\n"),
            "{five}"
        );
        let six = first_difference(b"a\n1\n2\n3\n4\n5\n", b"b\n1\n2\n3\n4\n5\n");
        assert!(six.ends_with("-4\n-…\n+b\n+1\n+2\n+3\n+4\n+…\n"), "{six}");
    }
}
