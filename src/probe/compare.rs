//! Comparing two sides' records field by field. Only fields both sides know are
//! compared; a field one side does not know is counted as unknown for that side.
//! A difference with a known reason is counted apart, under that reason:
//! - a folder's atime moved by the listing itself (the candidate listed the folder
//!   before the reference looked at it);
//! - an entry that changed between the two looks (a re-stat finds its ctime where
//!   the reference saw it, and the candidate saw another);
//! - a mount point, whose listing names the inode of the folder under it, or a
//!   btrfs subvolume's root, listed by the subvolume's id;
//! - a quirk of a named file system, from [`QUIRKS`].
//!
//! Every other difference is unexplained, and the first of each field and source
//! are kept with their path and both values.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::outcome::{Comparison, ExplainedCount, Mismatch, MissingEntry, Row, Side, UnknownCount};
use super::record::{FieldName, Known, Record, Value};
use crate::walk::stat::Source;
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

fn any_entry(_: &Record) -> bool {
    true
}

fn empty_file(record: &Record) -> bool {
    let size = record.of(FieldName::Size).next().map(|k| k.value);
    record.stat_kind() == Some(FileKind::File) && size == Some(Value::Number(0))
}

/// The known quirks, one entry per file system and field.
pub const QUIRKS: &[Quirk] = &[
    // overlayfs lists an entry that was never copied up with its lower layer's inode
    // in d_ino, while stat answers with the overlay's own inode number (unless the
    // mount uses xino=on and the layers share a file system).
    Quirk {
        file_system: "overlay",
        magic: 0x794c_7630,
        field: FieldName::Inode,
        source: Some(Source::Listing),
        applies: any_entry,
        why: "overlayfs lists lower-layer entries by the lower layer's inode",
    },
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
    // A FUSE file system hands the daemon's d_ino through as it is; st_ino matches it
    // only when the daemon asks for its own numbers to be used (use_ino).
    Quirk {
        file_system: "fuse",
        magic: 0x6573_5546,
        field: FieldName::Inode,
        source: Some(Source::Listing),
        applies: any_entry,
        why: "FUSE passes the daemon's d_ino through unchanged",
    },
];

/// Compares the candidate's records with the reference's, for the tree at `root`.
pub fn compare(candidate: &[Record], reference: &[Record], root: &Path) -> Comparison {
    let by_path: HashMap<&Path, &Record> =
        reference.iter().map(|r| (r.path.as_path(), r)).collect();
    let mut tally = Tally::new(root, reference);
    let mut seen = std::collections::HashSet::new();
    for record in candidate {
        match by_path.get(record.path.as_path()) {
            Some(theirs) => {
                seen.insert(record.path.as_path());
                tally.entry(record, theirs);
            }
            None => tally.missing(&record.path, Side::Reference),
        }
    }
    for record in reference {
        if !seen.contains(record.path.as_path()) {
            tally.missing(&record.path, Side::Candidate);
        }
    }
    tally.into_compared()
}

/// Counts as the comparison goes.
struct Tally<'a> {
    explainer: Explainer<'a>,
    rows: BTreeMap<(FieldName, Source), Row>,
    unknown: BTreeMap<(FieldName, Side), usize>,
    explained: BTreeMap<(String, FieldName), usize>,
    examples: BTreeMap<(FieldName, Source), Vec<Mismatch>>,
    out: Comparison,
}

impl<'a> Tally<'a> {
    fn new(root: &'a Path, reference: &'a [Record]) -> Tally<'a> {
        Tally {
            explainer: Explainer::new(root, reference),
            rows: BTreeMap::new(),
            unknown: BTreeMap::new(),
            explained: BTreeMap::new(),
            examples: BTreeMap::new(),
            out: Comparison::default(),
        }
    }

    fn missing(&mut self, path: &Path, missing_from: Side) {
        let count = match missing_from {
            Side::Candidate => &mut self.out.missing_in_candidate,
            Side::Reference => &mut self.out.missing_in_reference,
        };
        *count += 1;
        let kept = self
            .out
            .missing
            .iter()
            .filter(|m| m.missing_from == missing_from);
        if kept.count() < EXAMPLES {
            self.out.missing.push(MissingEntry {
                path: shown(path),
                missing_from,
            });
        }
    }

    fn entry(&mut self, ours: &Record, theirs: &Record) {
        for field in FieldName::ALL {
            // A listing that gave no type (DT_UNKNOWN) knows nothing of it: the
            // census counts those, and the stat's type is compared instead.
            let known: Vec<&Known> = ours
                .of(field)
                .filter(|k| k.value != Value::Kind(FileKind::Unknown))
                .collect();
            let reference = theirs.of(field).next();
            if known.is_empty() {
                *self.unknown.entry((field, Side::Candidate)).or_default() += 1;
            }
            let Some(reference) = reference else {
                *self.unknown.entry((field, Side::Reference)).or_default() += 1;
                continue;
            };
            for candidate in known {
                self.field(ours, theirs, candidate, reference);
            }
        }
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

    fn into_compared(mut self) -> Comparison {
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

/// Finds the reason for a difference, if it has one.
struct Explainer<'a> {
    root: &'a Path,
    /// Each entry's device, as the reference saw it, to find mount points.
    devices: HashMap<&'a Path, u64>,
    /// Each device's file system magic, asked once.
    magics: HashMap<u64, Option<i64>>,
}

impl<'a> Explainer<'a> {
    fn new(root: &'a Path, reference: &'a [Record]) -> Explainer<'a> {
        let devices = (reference.iter())
            .filter_map(|r| match r.of(FieldName::Device).next()?.value {
                Value::Number(dev) => Some((r.path.as_path(), dev)),
                _ => None,
            })
            .collect();
        Explainer {
            root,
            devices,
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
        let earlier = matches!(
            (candidate.value, reference.value),
            (Value::Time(a), Value::Time(b)) if a < b
        );
        if candidate.field == FieldName::Atime && folder && earlier {
            return Some("the listing itself read the folder, moving its atime".into());
        }
        if self.changed_between_looks(ours, theirs) {
            return Some("the entry changed between the two looks (its ctime moved)".into());
        }
        if candidate.field == FieldName::Inode
            && candidate.source == Source::Listing
            && self.is_mount_point(&theirs.path)
        {
            return Some(
                "a mount point or a subvolume's root: the listing names another inode than stat"
                    .into(),
            );
        }
        let magic = self.magic_of(theirs)?;
        QUIRKS
            .iter()
            .find(|q| {
                q.magic == magic
                    && q.field == candidate.field
                    && q.source.is_none_or(|s| s == candidate.source)
                    && (q.applies)(theirs)
            })
            .map(|q| format!("{}: {}", q.file_system, q.why))
    }

    /// Whether a re-stat finds the entry's ctime where the reference saw it while
    /// the candidate saw another: it changed between the candidate's look and the
    /// reference's.
    fn changed_between_looks(&self, ours: &Record, theirs: &Record) -> bool {
        let ctime = |r: &Record| r.of(FieldName::Ctime).next().map(|k| k.value);
        let (Some(first), Some(second)) = (ctime(ours), ctime(theirs)) else {
            return false;
        };
        first != second && restat_ctime(&self.root.join(&theirs.path)) == Some(second)
    }

    fn is_mount_point(&self, path: &Path) -> bool {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            Some(_) => Path::new("."),
            None => return false,
        };
        let (Some(own), Some(above)) = (self.devices.get(path), self.devices.get(parent)) else {
            return false;
        };
        own != above
    }

    /// The magic of the file system an entry is on, asked of its folder.
    fn magic_of(&mut self, record: &Record) -> Option<i64> {
        let dev = *self.devices.get(record.path.as_path())?;
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

/// A path as reports give it: UTF-8 as it is, other bytes as `\xHH`.
fn shown(path: &Path) -> String {
    crate::fixtures::names::escaped(path.as_os_str().as_encoded_bytes())
}

fn restat_ctime(path: &Path) -> Option<Value> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let fields = crate::walk::StatFields::from_metadata(&meta);
    fields.ctime.map(|t| Value::Time(t.value))
}

/// The `statfs` magic of the file system a path is on.
#[cfg(target_os = "linux")]
// `f_type` is as wide as a C long: i64 on 64-bit targets, i32 on 32-bit ones.
#[allow(clippy::useless_conversion)]
pub fn file_system_magic(path: &Path) -> Option<i64> {
    rustix::fs::statfs(path).ok().map(|s| i64::from(s.f_type))
}

/// Elsewhere file systems are not told apart by magic.
#[cfg(not(target_os = "linux"))]
pub fn file_system_magic(_path: &Path) -> Option<i64> {
    None
}

/// A file system's name from its magic, for the report.
pub fn file_system_name(magic: i64) -> String {
    let known = [
        (0xef53, "ext2/3/4"),
        (0x5846_5342, "xfs"),
        (0x9123_683e, "btrfs"),
        (0x0102_1994, "tmpfs"),
        (0x794c_7630, "overlay"),
        (0x2011_bab0, "exfat"),
        (0x4d44, "vfat"),
        (0x7371_7368, "squashfs"),
        (0x6573_5546, "fuse"),
        (0x6969, "nfs"),
        (0x5346_544e, "ntfs"),
        (0x0102_1997, "9p"),
    ];
    match known.iter().find(|(m, _)| *m == magic) {
        Some((_, name)) => name.to_string(),
        None => format!("magic {magic:#x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walk::stat::Timestamp;

    fn record(path: &str, kind: FileKind, atime: i64, source: Source) -> Record {
        let known = |field, value| Known {
            field,
            source,
            value,
        };
        Record {
            path: PathBuf::from(path),
            known: vec![
                known(FieldName::Type, Value::Kind(kind)),
                known(
                    FieldName::Atime,
                    Value::Time(Timestamp {
                        secs: atime,
                        nanos: 0,
                    }),
                ),
            ],
        }
    }

    #[test]
    fn only_a_folders_atime_moved_forward_is_explained_by_the_listing() {
        let root = Path::new("/nonexistent-probe-root");
        let reference = [
            record(".", FileKind::Dir, 10, Source::PathStat),
            record("d", FileKind::Dir, 20, Source::PathStat),
            record("f", FileKind::File, 20, Source::PathStat),
            record("e", FileKind::Dir, 5, Source::PathStat),
        ];
        let candidate = [
            record(".", FileKind::Dir, 10, Source::Statx),
            record("d", FileKind::Dir, 10, Source::Statx),
            record("f", FileKind::File, 10, Source::Statx),
            record("e", FileKind::Dir, 9, Source::Statx),
        ];
        let found = compare(&candidate, &reference, root);
        let atime = found
            .rows
            .iter()
            .find(|r| r.field == FieldName::Atime)
            .unwrap();
        // d moved forward: explained; a file's atime and a folder's moved back: not.
        assert_eq!(
            (
                atime.compared,
                atime.equal,
                atime.explained,
                atime.unexplained
            ),
            (4, 1, 1, 2)
        );
        let paths: Vec<&str> = found.mismatches.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(paths, ["f", "e"]);
    }

    #[test]
    fn every_quirk_names_its_file_system_and_says_why() {
        for quirk in QUIRKS {
            assert!(!quirk.why.is_empty() && !quirk.file_system.is_empty());
            assert_eq!(file_system_name(quirk.magic), quirk.file_system);
        }
    }
}
