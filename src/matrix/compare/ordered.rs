//! Comparing two texts of any size in order, in one streaming pass that holds
//! digests of lines rather than lines: where the texts agree they are read in step;
//! where they part, lines are read ahead on both sides, at most [`WINDOW`] each,
//! to find the nearest place they agree again. This is the bounded look-ahead
//! resync of `cmp`-like tools, not a minimal diff: memory and time stay linear
//! in the texts, where a minimal diff would take time growing with the square of
//! the differences. What it finds is told, one step at a time, to [`Steps`]; the
//! hunk builder in `hunks` counts and shows them.

use std::collections::{HashMap, VecDeque};
use std::io;

use super::lines::{Lines, Text};

/// Lines read ahead on each side to find where two texts agree again: a run of
/// inserted or deleted lines this long or longer is seen as lines changed in
/// place (and so counts them too high). 16,384 digests take well under a megabyte.
const WINDOW: usize = 16_384;

/// Lines that must agree in a row (or up to the end of either text) for two texts
/// to agree again off their current pairing: one line alone (a blank line, a
/// closing brace) agrees by chance too often.
const SYNC: usize = 3;

/// Lines at one digest tried as a place to agree again; a text of one repeated
/// line would otherwise make each step of the search try thousands.
const TRIES: usize = 64;

/// What the alignment found, in order: each step moves past one line of the
/// reference, of the candidate, or of both. Changed lines come as `removed` and
/// then `added`.
pub(super) trait Steps {
    /// The next lines of both texts are the same.
    fn same(&mut self) -> io::Result<()>;
    /// The reference's next line has no counterpart.
    fn removed(&mut self) -> io::Result<()>;
    /// The candidate's next line has no counterpart.
    fn added(&mut self) -> io::Result<()>;
}

/// Aligns two texts, telling `steps` each step.
///
/// Where the texts part, the place they agree again is the pair of lines
/// (reference line `i` ahead, candidate line `j` ahead) with the smallest
/// `max(i, j)`, the same line in both, followed by [`SYNC`]` - 1` more that agree
/// (or the end of a text); at equal distance, `i == j` (lines changed in place)
/// wins, then the smaller `i + j`, then `i > j` (the reference's lines removed).
/// Lines up to there are paired off in place, equal pairs as `same`, then the
/// longer side's extra lines stand alone. Where no such place is within
/// [`WINDOW`] lines, one pair of lines counts as changed and the search moves on.
///
/// So when two texts differ only by lines changed in place, every changed line
/// is one `removed` and one `added` and every other line is `same`, exactly; a
/// stretch that repeats [`SYNC`] lines of the other text one place off may be
/// taken for a shift instead. Lines inserted or dropped in runs shorter than
/// [`WINDOW`] are found as such.
pub(super) fn align(ours: Text, theirs: Text, steps: &mut impl Steps) -> io::Result<()> {
    let mut aligner = Aligner {
        a: Side::new(ours.lines()?),
        b: Side::new(theirs.lines()?),
        searched: 0,
    };
    loop {
        aligner.a.fill(1)?;
        aligner.b.fill(1)?;
        match (aligner.a.get(0), aligner.b.get(0)) {
            (None, None) => return Ok(()),
            (Some(_), None) => {
                aligner.a.pop();
                steps.removed()?;
            }
            (None, Some(_)) => {
                aligner.b.pop();
                steps.added()?;
            }
            (Some(x), Some(y)) if x == y => {
                aligner.pop_both();
                steps.same()?;
            }
            _ => match aligner.resync()? {
                Some((i, j)) => aligner.catch_up(i, j, steps)?,
                None => {
                    aligner.pop_both();
                    steps.removed()?;
                    steps.added()?;
                }
            },
        }
    }
}

struct Aligner<'a> {
    a: Side<'a>,
    b: Side<'a>,
    /// No two lines ahead with both less than this many lines from the fronts
    /// agree again. Stepping both sides past a line keeps that true one line
    /// nearer, so each step of a long stretch of changes searches only the new
    /// edge of the window, not all of it again.
    searched: usize,
}

impl Aligner<'_> {
    fn pop_both(&mut self) {
        self.a.pop();
        self.b.pop();
        self.searched = self.searched.saturating_sub(1);
    }

    /// The nearest place the texts agree again, searching outward from where the
    /// last search stopped, or `None` within the window.
    fn resync(&mut self) -> io::Result<Option<(usize, usize)>> {
        while self.searched < WINDOW {
            let m = self.searched;
            if let Some(found) = self.agree_at(m)? {
                return Ok(Some(found));
            }
            if self.a.get(m).is_none() && self.b.get(m).is_none() {
                // Both texts end before this distance: no place is further on.
                break;
            }
            self.searched = m + 1;
        }
        Ok(None)
    }

    /// A place where the texts agree again with `max(i, j) == m`: in place first,
    /// then the one with the smaller `i + j`, and of two with the same sum the one
    /// that takes the reference's lines as removed.
    fn agree_at(&mut self, m: usize) -> io::Result<Option<(usize, usize)>> {
        self.a.fill(m + SYNC)?;
        self.b.fill(m + SYNC)?;
        self.a.index_below(m);
        self.b.index_below(m);
        let (x, y) = (self.a.get(m), self.b.get(m));
        if x.is_some() && x == y && self.agree(m, m) {
            return Ok(Some((m, m)));
        }
        let down = x.and_then(|x| {
            let tries = self.b.ahead_below(x, m);
            tries
                .into_iter()
                .find(|&j| self.agree(m, j))
                .map(|j| (m, j))
        });
        let across = y.and_then(|y| {
            let tries = self.a.ahead_below(y, m);
            tries
                .into_iter()
                .find(|&i| self.agree(i, m))
                .map(|i| (i, m))
        });
        Ok(match (down, across) {
            (Some((i, j)), Some((k, l))) if k + l < i + j => Some((k, l)),
            (Some(found), _) => Some(found),
            (None, found) => found,
        })
    }

    /// Whether reference line `i` and candidate line `j` ahead (known equal)
    /// start [`SYNC`] lines that agree, or agree up to the end of either text.
    fn agree(&self, i: usize, j: usize) -> bool {
        (1..SYNC).all(|k| match (self.a.get(i + k), self.b.get(j + k)) {
            (Some(x), Some(y)) => x == y,
            _ => true,
        })
    }

    /// Steps past the lines before the place found, `i` of the reference and `j`
    /// of the candidate: paired off in place while both have lines, then the
    /// longer side's rest alone.
    fn catch_up(&mut self, i: usize, j: usize, steps: &mut impl Steps) -> io::Result<()> {
        for _ in 0..i.min(j) {
            let same = self.a.get(0) == self.b.get(0);
            self.a.pop();
            self.b.pop();
            if same {
                steps.same()?;
            } else {
                steps.removed()?;
                steps.added()?;
            }
        }
        for _ in j..i {
            self.a.pop();
            steps.removed()?;
        }
        for _ in i..j {
            self.b.pop();
            steps.added()?;
        }
        self.searched = 0;
        Ok(())
    }
}

/// One text as the alignment reads it: digests of the lines read ahead, and for
/// the search, where the first few of them stand by digest. Only a search indexes
/// lines, so reading in step costs no map updates; the lines with one digest are
/// chained through `next_same` rather than listed, so indexing allocates nothing
/// per line.
struct Side<'a> {
    lines: Lines<'a>,
    ahead: VecDeque<u128>,
    /// The number of `ahead[0]` among the text's lines, from 0.
    front: u64,
    ended: bool,
    /// For each indexed line ahead (a prefix of `ahead`), the number of the next
    /// indexed line with the same digest.
    next_same: VecDeque<Option<u64>>,
    /// The first and last indexed lines with each digest.
    index: HashMap<u128, (u64, u64), Digests>,
}

impl<'a> Side<'a> {
    fn new(lines: Lines<'a>) -> Side<'a> {
        Side {
            lines,
            ahead: VecDeque::new(),
            front: 0,
            ended: false,
            next_same: VecDeque::new(),
            index: HashMap::default(),
        }
    }

    /// Reads until `n` lines are ahead or the text ends.
    fn fill(&mut self, n: usize) -> io::Result<()> {
        while self.ahead.len() < n && !self.ended {
            match self.lines.next_digest()? {
                Some(digest) => self.ahead.push_back(digest),
                None => self.ended = true,
            }
        }
        Ok(())
    }

    fn get(&self, i: usize) -> Option<u128> {
        self.ahead.get(i).copied()
    }

    fn pop(&mut self) {
        let Some(digest) = self.ahead.pop_front() else {
            return;
        };
        if let Some(next) = self.next_same.pop_front() {
            // The line was indexed, and the first with its digest.
            match next {
                Some(next) => {
                    if let Some(at) = self.index.get_mut(&digest) {
                        at.0 = next;
                    }
                }
                None => {
                    self.index.remove(&digest);
                }
            }
        }
        self.front += 1;
    }

    /// Indexes the lines ahead up to (not including) line `m`.
    fn index_below(&mut self, m: usize) {
        while self.next_same.len() < m.min(self.ahead.len()) {
            let i = self.next_same.len();
            let number = self.front + i as u64;
            self.next_same.push_back(None);
            match self.index.get_mut(&self.ahead[i]) {
                Some((_, last)) => {
                    self.next_same[(*last - self.front) as usize] = Some(number);
                    *last = number;
                }
                None => {
                    self.index.insert(self.ahead[i], (number, number));
                }
            }
        }
    }

    /// Where lines with this digest stand ahead, below `m`, nearest first.
    fn ahead_below(&self, digest: u128, m: usize) -> Vec<usize> {
        let mut found = Vec::new();
        let mut at = self.index.get(&digest).map(|&(first, _)| first);
        while let Some(number) = at {
            let i = (number - self.front) as usize;
            if i >= m || found.len() == TRIES {
                break;
            }
            found.push(i);
            at = self.next_same[i];
        }
        found
    }
}

/// Hashes a line digest for a map by taking 64 of its bits: a sha256 digest is
/// already uniform, and hashing it again cost a fifth of a comparison's time.
#[derive(Default, Clone, Copy)]
pub(super) struct Digests;

impl std::hash::BuildHasher for Digests {
    type Hasher = DigestHasher;

    fn build_hasher(&self) -> DigestHasher {
        DigestHasher(0)
    }
}

/// See [`Digests`]; anything but a `u128` is hashed FNV-1a style, byte by byte.
pub(super) struct DigestHasher(u64);

impl std::hash::Hasher for DigestHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_u128(&mut self, digest: u128) {
        // A key is one digest, hashed by a hasher of its own.
        self.0 = digest as u64;
    }
}

#[cfg(test)]
mod tests {
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
}
