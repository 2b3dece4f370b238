//! The in-order alignment's tests: its documented rule on chosen and on random texts,
//! the window's edge, and the pieces a search is made of.

use super::*;

/// The steps as a string: `=` same, `-` removed, `+` added.
#[derive(Default)]
struct Record(String);

impl Steps for Record {
    fn same(&mut self) -> io::Result<()> {
        self.0.push('=');
        Ok(())
    }
    fn removed(&mut self) -> io::Result<()> {
        self.0.push('-');
        Ok(())
    }
    fn added(&mut self) -> io::Result<()> {
        self.0.push('+');
        Ok(())
    }
}

fn steps(ours: &str, theirs: &str) -> String {
    let mut record = Record::default();
    align(
        Text::Bytes(ours.as_bytes()),
        Text::Bytes(theirs.as_bytes()),
        &mut record,
    )
    .unwrap();
    record.0
}

fn numbered(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn changes_in_place_pair_off_line_by_line() {
    assert_eq!(steps("a\nb\nc\n", "a\nB\nc\n"), "=-+=");
    // Dense changes, one line apart, never look like a shift.
    assert_eq!(
        steps("1\n2\n3\n4\n5\n6\n", "1\nX\n3\nY\n5\nZ\n"),
        "=-+=-+=-+"
    );
    assert_eq!(steps("a\nb\n", "A\nB\n"), "-+-+");
}

#[test]
fn in_place_wins_over_a_shift_at_the_same_distance() {
    assert_eq!(steps("p\nx\nx\nx\nx\n", "x\nx\nx\nx\nx\n"), "-+====");
}

#[test]
fn one_line_alike_by_chance_is_no_place_to_agree_again() {
    // `x` stands four lines apart in the two texts, but what follows it
    // differs: the lines are changed in place, five of them.
    assert_eq!(
        steps(
            "a0\na1\na2\na3\nx\ns1\ns2\ns3\n",
            "x\nb1\nb2\nb3\nb4\ns1\ns2\ns3\n"
        ),
        "-+-+-+-+-+==="
    );
}

#[test]
fn insertions_and_deletions_are_found_as_such() {
    let lines = numbered(20);
    let ours = lines.concat();
    let mut more = lines.clone();
    more.insert(5, "new a\n".into());
    more.insert(6, "new b\n".into());
    assert_eq!(
        steps(&ours, &more.concat()),
        format!("{}++{}", "=".repeat(5), "=".repeat(15))
    );
    let mut fewer = lines.clone();
    fewer.remove(0);
    fewer.remove(9);
    assert_eq!(
        steps(&ours, &fewer.concat()),
        format!("-{}-{}", "=".repeat(9), "=".repeat(9))
    );
}

#[test]
fn ends_and_empty_texts() {
    assert_eq!(steps("", ""), "");
    assert_eq!(steps("", "a\nb\n"), "++");
    assert_eq!(steps("a\nb\n", ""), "--");
    assert_eq!(steps("a\nb\n", "a\nb"), "=-+");
    assert_eq!(steps("a\nb\n", "a\nb\nc\n"), "==+");
}

#[test]
fn a_shift_at_the_end_of_changes_longer_than_the_window_is_found() {
    // Each step through the changes searches only the window's new edge,
    // which is where the one extra line comes into view.
    let n = WINDOW + 50;
    let tail = numbered(100);
    let mut ours: Vec<String> = (0..n).map(|i| format!("ours {i}\n")).collect();
    let mut theirs: Vec<String> = (0..=n).map(|i| format!("theirs {i}\n")).collect();
    ours.extend(tail.iter().cloned());
    theirs.extend(tail.iter().cloned());
    let found = steps(&ours.concat(), &theirs.concat());
    assert_eq!(found.matches('-').count(), n);
    assert_eq!(found.matches('+').count(), n + 1);
    assert!(
        found.ends_with(&"=".repeat(100)),
        "{}",
        &found[found.len() - 120..]
    );
}

#[test]
fn a_shift_longer_than_the_window_counts_as_changes() {
    let lines = numbered(WINDOW + 100);
    let mut shifted: Vec<String> = (0..WINDOW + 10).map(|i| format!("new {i}\n")).collect();
    shifted.extend(lines.iter().cloned());
    let found = steps(&lines.concat(), &shifted.concat());
    assert_eq!(found.matches('-').count(), lines.len());
    assert_eq!(found.matches('+').count(), shifted.len());
    assert!(!found.contains('='));
}

#[test]
fn runs_shorter_than_the_window_are_found_and_one_as_long_is_not() {
    let lines = numbered(200);
    let inserted = |n: usize| {
        let mut theirs: Vec<String> = (0..n).map(|i| format!("new {i}\n")).collect();
        theirs.extend(lines.iter().cloned());
        steps(&lines.concat(), &theirs.concat())
    };
    let found = inserted(WINDOW - 1);
    assert_eq!(
        found,
        format!("{}{}", "+".repeat(WINDOW - 1), "=".repeat(200))
    );
    let found = inserted(WINDOW);
    assert_eq!(found.matches('+').count(), WINDOW + 200);
    assert_eq!(found.matches('-').count(), 200);
    assert!(!found.contains('='));
}

#[test]
fn a_place_past_the_end_of_one_text_is_still_found() {
    // The reference has three lines left; the candidate's sixth starts them.
    assert_eq!(steps("a\nb\nc\n", "d\ne\nf\ng\nh\na\nb\nc\n"), "+++++===");
    assert_eq!(steps("d\ne\nf\ng\nh\na\nb\nc\n", "a\nb\nc\n"), "-----===");
}

#[test]
fn every_line_of_the_run_that_agrees_is_read_before_it_counts() {
    // `a`, `b` follow one line off, but then `p` meets `q`: not a place to
    // agree again, however few lines were read ahead when it was tried. The
    // place is `s t u`, four lines into the reference and three into the
    // candidate.
    let (long, short) = ("x\na\nb\np\ns\nt\nu\n", "a\nb\nq\ns\nt\nu\n");
    assert_eq!(steps(long, short), "-+-+-+-===");
    assert_eq!(steps(short, long), "-+-+-++===");
}

#[test]
fn of_two_places_at_one_distance_the_nearer_in_both_texts_wins() {
    // Two lines past the parting, the reference's `p` starts a run the
    // candidate has from its first line (two lines dropped: 2 + 0), and the
    // candidate's `q` one the reference has from its second (2 + 1).
    let (ours, theirs) = ("z\nq\np\nr\nq\n", "p\nr\nq\np\nr\n");
    assert_eq!(steps(ours, theirs), "--===++");
    assert_eq!(steps(theirs, ours), "++===--");
}

#[test]
fn of_two_places_with_one_sum_the_reference_s_lines_are_removed() {
    // `p` two lines into the reference starts what the candidate starts with,
    // and `q` two lines into the candidate what the reference starts with.
    let (ours, theirs) = ("q\nr\np\ns\nq\n", "p\ns\nq\nr\np\n");
    assert_eq!(steps(ours, theirs), "--===++");
    assert_eq!(steps(theirs, ours), "--===++");
    // Two into the reference and one into the candidate (2 + 1) against
    // none into the reference and two into the candidate (0 + 2).
    assert_eq!(steps("q\nr\np\nq\nr\n", "s\np\nq\nr\np\n"), "++===--");
}

#[test]
fn a_side_reads_only_as_far_as_asked() {
    let mut side = Side::new(Text::Bytes(b"1\n2\n3\n4\n").lines().unwrap());
    side.fill(2).unwrap();
    assert_eq!((side.ahead.len(), side.ended), (2, false));
    side.fill(9).unwrap();
    assert_eq!((side.ahead.len(), side.ended), (4, true));
}

/// The alignment as its documentation states it, by brute force: at each
/// parting, every place at each distance is tried afresh.
fn as_documented(a: &[&str], b: &[&str]) -> String {
    let (mut i0, mut j0, mut out) = (0, 0, String::new());
    let agree = |i0: usize, j0: usize, i: usize, j: usize| {
        a.get(i0 + i).is_some()
            && a.get(i0 + i) == b.get(j0 + j)
            && (1..SYNC).all(|k| match (a.get(i0 + i + k), b.get(j0 + j + k)) {
                (Some(x), Some(y)) => x == y,
                _ => true,
            })
    };
    loop {
        let place = match (a.get(i0), b.get(j0)) {
            (None, None) => return out,
            // Past the end of both texts no place can be.
            (Some(x), Some(y)) if x != y => (0..WINDOW.min((a.len() - i0).max(b.len() - j0)))
                .find_map(|m| {
                    if agree(i0, j0, m, m) {
                        return Some((m, m));
                    }
                    let down = (0..m).find(|&j| agree(i0, j0, m, j)).map(|j| (m, j));
                    let across = (0..m).find(|&i| agree(i0, j0, i, m)).map(|i| (i, m));
                    match (down, across) {
                        (Some((_, j)), Some((i, _))) if i < j => across,
                        (None, across) => across,
                        (down, _) => down,
                    }
                }),
            (Some(_), Some(_)) => Some((0, 0)),
            (Some(_), None) => Some((1, 0)),
            (None, Some(_)) => Some((0, 1)),
        };
        let (i, j) = place.unwrap_or((1, 1));
        for k in 0..i.min(j) {
            out.push_str(if a[i0 + k] == b[j0 + k] { "=" } else { "-+" });
        }
        out.push_str(&"-".repeat(i.saturating_sub(j)));
        out.push_str(&"+".repeat(j.saturating_sub(i)));
        (i0, j0) = (i0 + i, j0 + j);
        if (i, j) == (0, 0) {
            out.push('=');
            (i0, j0) = (i0 + 1, j0 + 1);
        }
    }
}

#[test]
fn random_texts_of_few_distinct_lines_align_as_documented() {
    // Few distinct lines make many repeats and many partings in one pair of
    // texts, so searches meet lines a search before them indexed.
    let mut rng = fastrand::Rng::with_seed(18);
    for round in 0..3000 {
        let words = ["a", "b", "c", "d"];
        let distinct = rng.usize(2..=words.len());
        let text = |rng: &mut fastrand::Rng| -> Vec<&str> {
            let len = rng.usize(0..40);
            (0..len).map(|_| words[rng.usize(0..distinct)]).collect()
        };
        let (a, b) = (text(&mut rng), text(&mut rng));
        let joined = |t: &[&str]| t.iter().map(|l| format!("{l}\n")).collect::<String>();
        assert_eq!(
            steps(&joined(&a), &joined(&b)),
            as_documented(&a, &b),
            "round {round}: {a:?} against {b:?}"
        );
    }
}

#[test]
fn digests_hash_to_their_low_bits_and_other_keys_byte_by_byte() {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = Digests.build_hasher();
    hasher.write_u128(0xABCD << 64 | 0x1234);
    assert_eq!(hasher.finish(), 0x1234);
    let mut hasher = Digests.build_hasher();
    hasher.write(&[1, 1]);
    let prime = 0x100_0000_01b3_u64;
    assert_eq!(hasher.finish(), (prime ^ 1).wrapping_mul(prime));
}
