//! The lines two files do not share as multisets, for a stream too large to sort
//! in memory whose only rule sorts its lines: how many lines of each arm have no
//! equal line in the other (counting repeats), and the first [`SHOWN_HUNKS`] of
//! each in the arm's own order.
//!
//! Memory stays bounded by partitioning, as a hash join does: each line's digest
//! and line number (24 bytes) are spilled to one of [`FANOUT`] bucket files by
//! the digest's bits, so equal lines of both arms meet in the same bucket. A
//! bucket pair is then counted in memory, one at a time, or partitioned again by
//! other bits when it is still larger than [`BUCKET_BYTES`]. A repeated line only
//! adds to one digest's count, so a bucket's memory is its distinct lines. The
//! buckets live in a fresh folder in the case's scratch folder, removed at the end;
//! they take 24 bytes per line on disk. A last pass over each file fetches the few
//! lines shown.

use std::collections::{BinaryHeap, HashMap};
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::hunks::{Counted, SHOWN_HUNKS};
use super::lines::{Kept, Text};
use super::ordered::Digests;
use super::show::printable;
use crate::outcome::thousands;
use crate::outcome::{LineCounts, LineOrder};

/// Bucket files per partitioning: few enough to keep open at once (each with a
/// write buffer), many enough that a gigabyte of output is partitioned once.
const FANOUT: usize = 128;

/// A bucket pair larger than this (both arms' records) is partitioned again.
/// 8 MiB of records is at most 350,000 distinct lines: a map of some 25 MB.
const BUCKET_BYTES: u64 = 8 << 20;

/// Times a bucket is partitioned again, at most: each time by the next byte of the
/// digests. Past that, a bucket is one line repeated, and counted as it is.
const LEVELS: usize = 4;

/// One spilled line: its digest and its number in its file, from 1.
const RECORD: usize = 24;

/// What one arm has that the other does not.
#[derive(Default)]
struct Surplus {
    count: u64,
    /// The smallest line numbers among them, at most [`SHOWN_HUNKS`] (a max-heap,
    /// so the largest is the one to drop).
    first: BinaryHeap<u64>,
}

impl Surplus {
    fn add(&mut self, line: u64) {
        self.count += 1;
        self.first.push(line);
        if self.first.len() > SHOWN_HUNKS {
            self.first.pop();
        }
    }
}

/// Counts and shows the lines of `ours` and `theirs` that the other lacks, with
/// scratch files in a fresh folder under `scratch`.
pub(super) fn as_multiset(ours: &Path, theirs: &Path, scratch: &Path) -> io::Result<Counted> {
    Ok(partitioned(ours, theirs, scratch, BUCKET_BYTES)?.0)
}

/// How the partitioning went: the tests read it to see that buckets were split.
#[cfg_attr(not(test), allow(dead_code))]
struct Stats {
    /// Bucket files made.
    made: usize,
    /// The largest bucket pair counted in memory, in bytes of records.
    largest: u64,
}

/// [`as_multiset`] with buckets partitioned again past `limit` bytes.
fn partitioned(
    ours: &Path,
    theirs: &Path,
    scratch: &Path,
    limit: u64,
) -> io::Result<(Counted, Stats)> {
    let folder = tempfile::Builder::new()
        .prefix("lines-")
        .tempdir_in(scratch)?;
    let mut spill = Spill {
        folder: folder.path(),
        made: 0,
        limit,
        largest: 0,
    };
    let a = spill.lines(ours)?;
    let b = spill.lines(theirs)?;
    let mut found = [Surplus::default(), Surplus::default()];
    for (a, b) in a.into_iter().zip(b) {
        spill.settle(a, b, 1, &mut found)?;
    }
    let stats = Stats {
        made: spill.made,
        largest: spill.largest,
    };
    drop(folder);
    let [a, b] = found;
    let shown = [
        fetch(ours, a.first.into_sorted_vec())?,
        fetch(theirs, b.first.into_sorted_vec())?,
    ];
    Ok((render(a.count, b.count, &shown), stats))
}

/// Makes bucket files in the scratch folder.
struct Spill<'a> {
    folder: &'a Path,
    made: usize,
    /// [`BUCKET_BYTES`], but in tests.
    limit: u64,
    /// The largest bucket pair counted in memory, in bytes of records.
    largest: u64,
}

impl Spill<'_> {
    fn buckets(&mut self) -> io::Result<(Vec<PathBuf>, Vec<BufWriter<File>>)> {
        let mut paths = Vec::with_capacity(FANOUT);
        let mut writers = Vec::with_capacity(FANOUT);
        for _ in 0..FANOUT {
            self.made += 1;
            let path = self.folder.join(self.made.to_string());
            writers.push(BufWriter::with_capacity(1 << 14, File::create(&path)?));
            paths.push(path);
        }
        Ok((paths, writers))
    }

    /// Spills a file's lines into buckets by the digest's first byte.
    fn lines(&mut self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let (paths, mut writers) = self.buckets()?;
        let mut lines = Text::File(path).lines()?;
        let mut number = 0u64;
        while let Some(digest) = lines.next_digest()? {
            number += 1;
            write_record(&mut writers[bucket(digest, 0)], digest, number)?;
        }
        finish(writers)?;
        Ok(paths)
    }

    /// Spills a bucket file again into buckets by the digest's byte `level`.
    fn records(&mut self, path: &Path, level: usize) -> io::Result<Vec<PathBuf>> {
        let (paths, mut writers) = self.buckets()?;
        for_each_record(path, |digest, number| {
            write_record(&mut writers[bucket(digest, level)], digest, number)
        })?;
        finish(writers)?;
        std::fs::remove_file(path)?;
        Ok(paths)
    }

    /// Counts one pair of buckets, partitioning it again while it is too large.
    fn settle(
        &mut self,
        a: PathBuf,
        b: PathBuf,
        level: usize,
        found: &mut [Surplus; 2],
    ) -> io::Result<()> {
        let size = std::fs::metadata(&a)?.len() + std::fs::metadata(&b)?.len();
        if size > self.limit && level <= LEVELS {
            let (a, b) = (self.records(&a, level)?, self.records(&b, level)?);
            for (a, b) in a.into_iter().zip(b) {
                self.settle(a, b, level + 1, found)?;
            }
            return Ok(());
        }
        self.largest = self.largest.max(size);
        count_bucket(&a, &b, found)?;
        std::fs::remove_file(a)?;
        std::fs::remove_file(b)
    }
}

/// Counts a pair of buckets in memory. Of a line found `x` times in one arm and
/// `y` times in the other, the first `min(x, y)` of each arm are matched and the
/// rest are that arm's surplus.
fn count_bucket(a: &Path, b: &Path, found: &mut [Surplus; 2]) -> io::Result<()> {
    let mut counts: HashMap<u128, [u64; 2], Digests> = HashMap::default();
    for (side, path) in [a, b].into_iter().enumerate() {
        for_each_record(path, |digest, _| {
            counts.entry(digest).or_default()[side] += 1;
            Ok(())
        })?;
    }
    // Each entry becomes the matches left to hand out on each side.
    for count in counts.values_mut() {
        let matched = count[0].min(count[1]);
        *count = [matched, matched];
    }
    for (side, path) in [a, b].into_iter().enumerate() {
        for_each_record(path, |digest, number| {
            let left = &mut counts.get_mut(&digest).expect("counted above")[side];
            if *left > 0 {
                *left -= 1;
            } else {
                found[side].add(number);
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// The bucket of a digest at a level: one byte of it, so each level splits by
/// bits the ones before did not look at.
fn bucket(digest: u128, level: usize) -> usize {
    (digest >> (8 * level)) as usize % FANOUT
}

fn write_record(out: &mut impl Write, digest: u128, number: u64) -> io::Result<()> {
    let mut record = [0u8; RECORD];
    record[..16].copy_from_slice(&digest.to_le_bytes());
    record[16..].copy_from_slice(&number.to_le_bytes());
    out.write_all(&record)
}

fn finish(writers: Vec<BufWriter<File>>) -> io::Result<()> {
    for mut writer in writers {
        writer.flush()?;
    }
    Ok(())
}

fn for_each_record(
    path: &Path,
    mut each: impl FnMut(u128, u64) -> io::Result<()>,
) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(1 << 16, File::open(path)?);
    let mut record = [0u8; RECORD];
    loop {
        match reader.read_exact(&mut record) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(err) => return Err(err),
        }
        let digest = u128::from_le_bytes(record[..16].try_into().expect("16 bytes"));
        let number = u64::from_le_bytes(record[16..].try_into().expect("8 bytes"));
        each(digest, number)?;
    }
}

/// The lines at these numbers (ascending, from 1) of a file.
fn fetch(path: &Path, numbers: Vec<u64>) -> io::Result<Vec<(u64, Kept)>> {
    let mut lines = Text::File(path).lines()?;
    let mut found = Vec::with_capacity(numbers.len());
    let mut at = 0u64;
    for number in numbers {
        while at + 1 < number {
            lines.skip()?;
            at += 1;
        }
        if let Some(line) = lines.next_kept()? {
            found.push((number, line));
        }
        at += 1;
    }
    Ok(found)
}

/// The counts, then each arm's first surplus lines under a header naming their
/// line numbers (the lines are in no common order, so a hunk header's ranges
/// would mean nothing).
fn render(only_a: u64, only_b: u64, shown: &[Vec<(u64, Kept)>; 2]) -> Counted {
    let each = if only_a.max(only_b) as usize > SHOWN_HUNKS {
        format!("the first {SHOWN_HUNKS} of each are shown")
    } else {
        "all are shown".to_string()
    };
    let mut diff = format!(
        "{} line{} only in the reference and {} only in the candidate, matched in any order (the stream's only rule sorts lines); {each}\n--- reference\n+++ candidate\n",
        thousands(only_a),
        if only_a == 1 { "" } else { "s" },
        thousands(only_b),
    );
    for ((side, sign, all), lines) in [("reference", '-', only_a), ("candidate", '+', only_b)]
        .into_iter()
        .zip(shown)
    {
        if lines.is_empty() {
            continue;
        }
        let numbers: Vec<String> = lines.iter().map(|(n, _)| thousands(*n)).collect();
        let of = if all > lines.len() as u64 {
            format!(", the first {} of {}", lines.len(), thousands(all))
        } else {
            String::new()
        };
        diff.push_str(&format!(
            "@@ only in the {side}: line{} {}{of} @@\n",
            if lines.len() == 1 { "" } else { "s" },
            numbers.join(", ")
        ));
        for (_, line) in lines {
            diff.push(sign);
            diff.push_str(&printable(
                &line.text[..line.text.len().min(super::show::LONG_LINE)],
            ));
            if line.len > line.text.len() as u64 {
                diff.push_str(&format!("… ({} bytes in all)", thousands(line.len)));
            }
            diff.push('\n');
            if !line.ended {
                diff.push_str("\\ No newline at end of file\n");
            }
        }
    }
    Counted {
        diff,
        counts: LineCounts {
            compared: LineOrder::Multiset,
            only_in_reference: only_a,
            only_in_candidate: only_b,
            differing: None,
            hunks: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The difference, with buckets partitioned again past `limit` bytes.
    fn limited(ours: &str, theirs: &str, limit: u64) -> (Counted, Stats) {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, ours).unwrap();
        std::fs::write(&b, theirs).unwrap();
        let counted = partitioned(&a, &b, dir.path(), limit).unwrap();
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "the buckets are removed");
        counted
    }

    fn difference(ours: &str, theirs: &str) -> Counted {
        limited(ours, theirs, BUCKET_BYTES).0
    }

    fn counts(c: &Counted) -> (u64, u64) {
        (c.counts.only_in_reference, c.counts.only_in_candidate)
    }

    #[test]
    fn repeats_count_and_order_does_not() {
        let found = difference("x\ny\ny\nz\n", "y\nx\nw\n");
        assert_eq!(counts(&found), (2, 1), "{}", found.diff);
        assert!(
            found
                .diff
                .contains("@@ only in the reference: lines 3, 4 @@\n-y\n-z\n"),
            "{}",
            found.diff
        );
        assert!(
            found
                .diff
                .contains("@@ only in the candidate: line 3 @@\n+w\n"),
            "{}",
            found.diff
        );
        assert_eq!(counts(&difference("a\nb\n", "b\na\n")), (0, 0));
        assert_eq!(counts(&difference("", "")), (0, 0));
        assert_eq!(counts(&difference("a\n", "a")), (1, 1));
    }

    #[test]
    fn outputs_within_the_memory_bound_are_partitioned_once() {
        // 40 distinct lines make under a kilobyte of records, far under the bound:
        // each pair of first-level buckets is counted as it is, never split again.
        let ours: String = (0..20).map(|i| format!("{i}\n")).collect();
        let theirs: String = (1..21).map(|i| format!("{i}\n")).collect();
        let (found, stats) = limited(&ours, &theirs, BUCKET_BYTES);
        assert_eq!(stats.made, 2 * FANOUT, "bucket files made");
        assert_eq!(counts(&found), (1, 1), "{}", found.diff);
    }

    #[test]
    fn a_bucket_pair_exactly_at_the_limit_is_not_split() {
        // One line repeated: all five records (24 bytes each) land in one pair.
        let (found, stats) = limited("x\nx\nx\n", "x\nx\n", 5 * RECORD as u64);
        assert_eq!(stats.made, 2 * FANOUT, "bucket files made");
        assert_eq!(stats.largest, 5 * RECORD as u64);
        assert_eq!(counts(&found), (1, 0), "{}", found.diff);
    }

    #[test]
    fn buckets_too_large_are_partitioned_again_and_the_first_lines_shown() {
        // 16 KiB buckets: the one holding the repeated line, which no partitioning
        // splits, is partitioned down to the last level and counted there.
        let lines = 20_000;
        let mut ours: String = (0..lines).map(|i| format!("{i}\n")).collect();
        ours.push_str(&"same\n".repeat(3000));
        let mut theirs: String = "same\n".repeat(2998);
        theirs.extend((0..lines).rev().map(|i| match i % 1000 {
            7 => format!("changed {i}\n"),
            _ => format!("{i}\n"),
        }));
        let (found, _) = limited(&ours, &theirs, 16 << 10);
        let changed = lines / 1000;
        assert_eq!(counts(&found), (changed + 2, changed), "{}", found.diff);
        let first = "@@ only in the reference: lines 8, 1,008, 2,008, 3,008, 4,008, the first 5 of 22 @@\n-7\n-1007\n";
        assert!(found.diff.contains(first), "{}", found.diff);
        let last = "@@ only in the candidate: lines 3,991, 4,991, 5,991, 6,991, 7,991, the first 5 of 20 @@\n+changed 19007\n";
        assert!(found.diff.contains(last), "{}", found.diff);
    }

    #[test]
    fn distinct_lines_are_partitioned_until_each_bucket_fits() {
        // 1 KiB buckets: a few of the first level's pass the limit (a pair holds
        // 31 records of 24 bytes on average) and are split by the digests' next
        // byte, leaving none counted above it.
        let ours: String = (0..2000).map(|i| format!("{i}\n")).collect();
        let theirs: String = (5..2005).rev().map(|i| format!("{i}\n")).collect();
        let (found, stats) = limited(&ours, &theirs, 1 << 10);
        assert!(stats.made > 2 * FANOUT, "partitioned again: {}", stats.made);
        assert!(stats.largest <= 1 << 10, "{}", stats.largest);
        assert_eq!(counts(&found), (5, 5));
        let shown = "@@ only in the reference: lines 1, 2, 3, 4, 5 @@\n-0\n-1\n-2\n-3\n-4\n";
        assert!(found.diff.contains(shown), "{}", found.diff);
        let shown = "@@ only in the candidate: lines 1, 2, 3, 4, 5 @@\n+2004\n+2003\n";
        assert!(found.diff.contains(shown), "{}", found.diff);
    }

    #[test]
    fn each_level_buckets_by_its_own_byte_of_the_digest() {
        let digest = 0x2B_u128 << 16 | 0x11 << 8 | 0x05;
        assert_eq!(bucket(digest, 0), 0x05);
        assert_eq!(bucket(digest, 1), 0x11);
        assert_eq!(bucket(digest, 2), 0x2B);
        assert_eq!(
            bucket(0xFF, 0),
            0xFF % FANOUT,
            "a byte past the fanout wraps"
        );
    }

    #[test]
    fn the_header_says_whether_every_surplus_line_is_shown() {
        let five = "a\nb\nc\nd\ne\n";
        let found = difference(five, "");
        assert!(found.diff.contains("; all are shown\n"), "{}", found.diff);
        let found = difference(&format!("{five}f\n"), "");
        let header = "; the first 5 of each are shown\n";
        assert!(found.diff.contains(header), "{}", found.diff);
    }

    #[test]
    fn a_long_surplus_line_is_cut_and_its_length_given() {
        let long = "x".repeat(10_000);
        let found = difference(&format!("same\n{long}\n"), "same\n");
        assert_eq!(counts(&found), (1, 0), "{}", found.diff);
        let cut = "x".repeat(super::super::show::LONG_LINE);
        let shown = format!("-{cut}… (10,000 bytes in all)\n");
        assert!(found.diff.contains(&shown), "{}", found.diff);
        let found = difference("same\nshort\n", "same\n");
        assert!(!found.diff.contains("bytes in all"), "{}", found.diff);
    }

    /// A bucket whose buffered records cannot be written out (a full disk) is an
    /// error: counting what did reach it would give a wrong count.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_bucket_that_cannot_be_written_is_an_error() {
        let full = File::options().write(true).open("/dev/full").unwrap();
        let mut writer = BufWriter::new(full);
        write_record(&mut writer, 1, 1).unwrap();
        let err = finish(vec![writer]).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
    }

    /// Only the end of a bucket ends its reading; any other read error is one.
    #[cfg(unix)]
    #[test]
    fn a_bucket_that_cannot_be_read_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let read = for_each_record(dir.path(), |_, _| Ok(()));
        let err = read.unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EISDIR), "{err}");
    }
}
