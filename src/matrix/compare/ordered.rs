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
mod tests;
