//! Comparing two sides' records field by field. Only fields both sides know are
//! compared; a field one side does not know is counted as unknown for that side.
//! A difference with a known reason is counted apart, under that reason:
//! - a folder's atime moved by the listing itself: the candidate's is from after the
//!   probe began and older than the reference's (the candidate listed the folder
//!   before the reference looked);
//! - an entry that changed between the two looks: its ctime moved after the probe
//!   began, a re-stat finds it where the reference saw it, and the candidate saw
//!   an older one;
//! - a quirk of a named file system, from [`QUIRKS`].
//!
//! What a listing gives (`d_type`, `d_ino`) is compared with `read_dir`'s own
//! listing where it gave the same, else with lstat. An entry one side could stat
//! and the other could not is an unexplained difference of its own.
//!
//! Every other difference is unexplained, and the first of each field and source
//! are kept with their path and both values.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::outcome::{
    Comparison, ExplainedCount, Mismatch, MissingEntry, Row, Side, StatFailure, UnknownCount,
};
use super::record::{FieldName, Known, Record, Value};
use crate::walk::stat::{Source, Timestamp};
use crate::walk::FileKind;

/// Unexplained differences kept per field and source, and missing entries per side.
const EXAMPLES: usize = 5;

/// A known difference of one file system: where the listing or the stat calls of
/// that file system legitimately disagree with lstat.
pub struct Quirk {
    /// The file system, as reports name it.
    pub file_system: &'static str,
    /// Its `statfs` magic number.
    pub magic: i64,
    pub field: FieldName,
    /// The source the difference comes from; `None`: any.
    pub source: Option<Source>,
    /// Whether the entry is one the quirk touches.
    pub applies: fn(&Record) -> bool,
    pub why: &'static str,
}

fn empty_file(record: &Record) -> bool {
    let size = record.of(FieldName::Size).next().map(|k| k.value);
    record.stat_kind() == Some(FileKind::File) && size == Some(Value::Number(0))
}

/// The known quirks, one entry per file system and field. What a listing gives
/// (`d_type`, `d_ino`) is held to `read_dir`'s own listing, not to stat, so the
/// file systems whose `d_ino` is not `st_ino` (overlayfs for lower-layer entries,
/// FUSE without `use_ino`, mount points, btrfs subvolume roots) need no entry.
pub const QUIRKS: &[Quirk] = &[
    // exFAT has no inodes: the kernel makes a number up per lookup, and a file with
    // no cluster (an empty file) gets a new one on every lookup. The dust change's
    // probe found this on ExFAT, and only there.
    Quirk {
        file_system: "exfat",
        magic: 0x2011_bab0,
        field: FieldName::Inode,
        source: None,
        applies: empty_file,
        why: "exFAT renumbers an empty file on every lookup",
    },
];

/// The quirk in `quirks` of the file system of `magic` that explains the
/// candidate's value of an entry the reference saw as `theirs`, if one does.
fn quirk<'q>(
    quirks: &'q [Quirk],
    magic: i64,
    candidate: &Known,
    theirs: &Record,
) -> Option<&'q Quirk> {
    quirks.iter().find(|q| {
        q.magic == magic
            && q.field == candidate.field
            && q.source.is_none_or(|s| s == candidate.source)
            && (q.applies)(theirs)
    })
}

/// Moments a reason may rest on: something the probe moved was moved after them.
#[derive(Debug, Clone, Copy)]
pub struct ProbeTimes {
    /// Before the probe's first read of the tree, less a little for the coarser
    /// clock file systems stamp times with: a folder's atime the probe moved is
    /// no older.
    pub began: Timestamp,
    /// When the candidate began to look (the tree was built and fingerprinted
    /// before): an entry changed since has a later ctime.
    pub candidate_began: Timestamp,
}

/// A side's records held whole (a lister's dump), each claimed by path as the
/// other side's entries come; what no entry claims is missing on that side.
pub struct Awaiting {
    records: Vec<Record>,
    by_path: HashMap<PathBuf, usize>,
    claimed: Vec<bool>,
}

impl Awaiting {
    pub fn new(records: Vec<Record>) -> Awaiting {
        let by_path = (records.iter().enumerate())
            .map(|(i, r)| (r.path.clone(), i))
            .collect();
        let claimed = vec![false; records.len()];
        Awaiting {
            records,
            by_path,
            claimed,
        }
    }

    /// The record at `path`, once.
    pub fn claim(&mut self, path: &Path) -> Option<&Record> {
        let &i = self.by_path.get(path)?;
        (!std::mem::replace(&mut self.claimed[i], true)).then(|| &self.records[i])
    }

    /// The records nothing claimed, in the order they came.
    pub fn unclaimed(&self) -> impl Iterator<Item = &Record> {
        (self.records.iter().zip(&self.claimed))
            .filter(|(_, &claimed)| !claimed)
            .map(|(r, _)| r)
    }
}

/// Counts as the comparison goes, one entry at a time: nothing of an entry is kept
/// once counted, except the first examples of each kind.
pub struct Tally<'a> {
    explainer: Explainer<'a>,
    rows: BTreeMap<(FieldName, Source), Row>,
    unknown: BTreeMap<(FieldName, Side), usize>,
    explained: BTreeMap<(String, FieldName), usize>,
    examples: BTreeMap<(FieldName, Source), Vec<Mismatch>>,
    out: Comparison,
}

impl<'a> Tally<'a> {
    pub fn new(root: &'a Path, times: ProbeTimes) -> Tally<'a> {
        Tally {
            explainer: Explainer::new(root, times),
            rows: BTreeMap::new(),
            unknown: BTreeMap::new(),
            explained: BTreeMap::new(),
            examples: BTreeMap::new(),
            out: Comparison::default(),
        }
    }

    /// An entry `missing_from` lacks.
    pub fn missing(&mut self, path: &Path, missing_from: Side) {
        let count = match missing_from {
            Side::Candidate => &mut self.out.missing_in_candidate,
            Side::Reference => &mut self.out.missing_in_reference,
        };
        let entry = || MissingEntry {
            path: shown(path),
            missing_from,
        };
        count_and_keep(
            count,
            &mut self.out.missing,
            |m| m.missing_from == missing_from,
            entry,
        );
    }

    /// One entry both sides have: the candidate's record and the reference's.
    pub fn entry(&mut self, ours: &Record, theirs: &Record) {
        let failed = match (&ours.stat_failed, &theirs.stat_failed) {
            (Some(error), None) => Some((Side::Candidate, error)),
            (None, Some(error)) => Some((Side::Reference, error)),
            _ => None,
        };
        if let Some((failed_on, error)) = failed {
            self.stat_failed(&ours.path, failed_on, error);
        }
        for field in FieldName::ALL {
            // A listing that gave no type (DT_UNKNOWN) knows nothing of it: the
            // census counts those, and the stat's type is compared instead.
            let known: Vec<&Known> = ours
                .of(field)
                .filter(|k| k.value != Value::Kind(FileKind::Unknown))
                .collect();
            let stat = theirs.of(field).find(|k| k.source != Source::Listing);
            let listed = (theirs.of(field))
                .find(|k| k.source == Source::Listing && k.value != Value::Kind(FileKind::Unknown));
            if known.is_empty() {
                *self.unknown.entry((field, Side::Candidate)).or_default() += 1;
            }
            if stat.is_none() {
                *self.unknown.entry((field, Side::Reference)).or_default() += 1;
            }
            for candidate in known {
                let reference = match candidate.source {
                    Source::Listing => listed.or(stat),
                    _ => stat,
                };
                if let Some(reference) = reference {
                    self.field(ours, theirs, candidate, reference);
                }
            }
        }
    }

    fn stat_failed(&mut self, path: &Path, failed_on: Side, error: &str) {
        let count = match failed_on {
            Side::Candidate => &mut self.out.stat_failed_in_candidate,
            Side::Reference => &mut self.out.stat_failed_in_reference,
        };
        let failure = || StatFailure {
            path: shown(path),
            failed_on,
            error: error.to_string(),
        };
        let failures = &mut self.out.stat_failures;
        count_and_keep(count, failures, |f| f.failed_on == failed_on, failure);
    }

    fn field(&mut self, ours: &Record, theirs: &Record, candidate: &Known, reference: &Known) {
        let key = (candidate.field, candidate.source);
        let row = self.rows.entry(key).or_insert(Row {
            field: candidate.field,
            source: candidate.source,
            compared: 0,
            equal: 0,
            explained: 0,
            unexplained: 0,
        });
        row.compared += 1;
        if candidate.value == reference.value {
            row.equal += 1;
            return;
        }
        match self.explainer.reason(ours, theirs, candidate, reference) {
            Some(reason) => {
                row.explained += 1;
                *self.explained.entry((reason, candidate.field)).or_default() += 1;
            }
            None => {
                row.unexplained += 1;
                let examples = self.examples.entry(key).or_default();
                if examples.len() < EXAMPLES {
                    examples.push(Mismatch {
                        field: candidate.field,
                        source: candidate.source,
                        path: shown(&ours.path),
                        reference: reference.value.to_string(),
                        candidate: candidate.value.to_string(),
                    });
                }
            }
        }
    }

    pub fn finish(mut self) -> Comparison {
        self.out.rows = self.rows.into_values().collect();
        self.out.unknown = (self.unknown.into_iter())
            .map(|((field, side), count)| UnknownCount { field, side, count })
            .collect();
        self.out.explained = (self.explained.into_iter())
            .map(|((reason, field), count)| ExplainedCount {
                reason,
                field,
                count,
            })
            .collect();
        self.out.mismatches = self.examples.into_values().flatten().collect();
        self.out
    }
}

/// Counts one more of a side's kind, and keeps it while fewer than [`EXAMPLES`] of
/// that side are kept.
fn count_and_keep<T>(
    count: &mut usize,
    kept: &mut Vec<T>,
    same_side: impl Fn(&T) -> bool,
    make: impl FnOnce() -> T,
) {
    *count += 1;
    if kept.iter().filter(|k| same_side(k)).count() < EXAMPLES {
        kept.push(make());
    }
}

/// Finds the reason for a difference, if it has one.
struct Explainer<'a> {
    root: &'a Path,
    /// When the probe began, and when the candidate began to look.
    times: ProbeTimes,
    /// Each device's file system magic, asked once.
    magics: HashMap<u64, Option<i64>>,
}

impl<'a> Explainer<'a> {
    fn new(root: &'a Path, times: ProbeTimes) -> Explainer<'a> {
        Explainer {
            root,
            times,
            magics: HashMap::new(),
        }
    }

    fn reason(
        &mut self,
        ours: &Record,
        theirs: &Record,
        candidate: &Known,
        reference: &Known,
    ) -> Option<String> {
        let folder = theirs.stat_kind() == Some(FileKind::Dir);
        let moved_in_probe = matches!(
            (candidate.value, reference.value),
            (Value::Time(a), Value::Time(b)) if self.times.began <= a && a < b
        );
        if candidate.field == FieldName::Atime && folder && moved_in_probe {
            return Some("the listing itself read the folder, moving its atime".into());
        }
        if self.changed_between_looks(ours, theirs) {
            return Some("the entry changed between the two looks (its ctime moved)".into());
        }
        let magic = self.magic_of(theirs)?;
        quirk(QUIRKS, magic, candidate, theirs).map(|q| format!("{}: {}", q.file_system, q.why))
    }

    /// Whether the entry changed between the candidate's look and the reference's:
    /// the reference's ctime is from after the candidate began to look, later than
    /// the candidate's, and a re-stat still finds it. An engine that merely gets ctime
    /// wrong does not pass: nothing moved the entry during the probe.
    fn changed_between_looks(&self, ours: &Record, theirs: &Record) -> bool {
        let ctime = |r: &Record| {
            r.of(FieldName::Ctime)
                .find(|k| k.source != Source::Listing)
                .map(|k| k.value)
        };
        let (Some(Value::Time(first)), Some(Value::Time(second))) = (ctime(ours), ctime(theirs))
        else {
            return false;
        };
        self.times.candidate_began <= second
            && first < second
            && restat_ctime(&self.root.join(&theirs.path)) == Some(Value::Time(second))
    }

    /// The magic of the file system an entry is on, asked of its folder.
    fn magic_of(&mut self, record: &Record) -> Option<i64> {
        let dev = match record
            .of(FieldName::Device)
            .find(|k| k.source != Source::Listing)?
            .value
        {
            Value::Number(dev) => dev,
            _ => return None,
        };
        let folder: PathBuf = match record.stat_kind() {
            Some(FileKind::Dir) => self.root.join(&record.path),
            _ => self.root.join(&record.path).parent()?.to_path_buf(),
        };
        *self
            .magics
            .entry(dev)
            .or_insert_with(|| file_system_magic(&folder))
    }
}

/// A path as reports give it: UTF-8 as it is, other bytes and control characters
/// escaped, so no name forges a line of the report.
fn shown(path: &Path) -> String {
    crate::fixtures::names::shown(path.as_os_str().as_encoded_bytes())
}

fn restat_ctime(path: &Path) -> Option<Value> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let fields = crate::walk::StatFields::from_metadata(&meta);
    fields.ctime.map(|t| Value::Time(t.value))
}

pub use crate::walk::file_system::{magic as file_system_magic, name_of_magic as file_system_name};

#[cfg(test)]
mod tests;
