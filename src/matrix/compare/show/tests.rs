//! Tests of how differences are shown: unified diffs, the first difference of
//! texts with long lines, cut lines, and bytes made printable.

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
    assert!(
        shown.contains("line 1 (3000000 bytes into the text)"),
        "{shown}"
    );
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

#[test]
fn the_text_of_an_escape_never_reads_as_the_escape() {
    // A raw byte, then the four characters an arm printed that spell its escape.
    assert_eq!(printable(b"\xff"), "\\xff");
    assert_eq!(printable(b"\\xff"), "\\x5cxff");
    assert_eq!(printable("\u{85}".as_bytes()), "\\u{85}");
    assert_eq!(printable(b"\\u{85}"), "\\x5cu{85}");
    // Other backslashes, as in a Windows path, stay as they are.
    assert_eq!(printable(b"C:\\Users\\me\\"), "C:\\Users\\me\\");
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
        assert_eq!(cut_line(&view, 0, column, len), shown, "column {column}");
    }
    assert_eq!(cut_line(&view, 0, 5000, 9000), "…… (9,000 bytes in all)");
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
        let at = format!("first difference at line {number} (");
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
    let at = "first difference at line 10000 (98880 bytes into the text);";
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
