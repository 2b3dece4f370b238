//! One entry as a side of the probe saw it: its path inside the tree and the stat
//! fields that side knows, each with the source it came from. A field a side does
//! not know is absent, never 0. Records come from an engine's look at an entry (the
//! fast engine's, and the read_dir + lstat oracle's) or from a lister's NDJSON dump.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::walk::stat::{Field, Source, StatFields, Timestamp};
use crate::walk::{FileKind, Listed, StatError};

/// A stat field the probe compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldName {
    Type,
    Mode,
    Size,
    Blocks,
    BlockSize,
    Inode,
    Device,
    Nlink,
    Uid,
    Gid,
    Atime,
    Mtime,
    Ctime,
    Btime,
}

impl FieldName {
    /// Every field, in the order reports list them.
    pub const ALL: [FieldName; 14] = [
        FieldName::Type,
        FieldName::Mode,
        FieldName::Size,
        FieldName::Blocks,
        FieldName::BlockSize,
        FieldName::Inode,
        FieldName::Device,
        FieldName::Nlink,
        FieldName::Uid,
        FieldName::Gid,
        FieldName::Atime,
        FieldName::Mtime,
        FieldName::Ctime,
        FieldName::Btime,
    ];

    /// The field's name as reports and the NDJSON format spell it.
    pub fn name(self) -> &'static str {
        match self {
            FieldName::Type => "type",
            FieldName::Mode => "mode",
            FieldName::Size => "size",
            FieldName::Blocks => "blocks",
            FieldName::BlockSize => "block_size",
            FieldName::Inode => "inode",
            FieldName::Device => "device",
            FieldName::Nlink => "nlink",
            FieldName::Uid => "uid",
            FieldName::Gid => "gid",
            FieldName::Atime => "atime",
            FieldName::Mtime => "mtime",
            FieldName::Ctime => "ctime",
            FieldName::Btime => "btime",
        }
    }
}

/// A field's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Value {
    Kind(FileKind),
    Number(u64),
    Time(Timestamp),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Kind(kind) => write!(f, "{}", kind_name(*kind)),
            Value::Number(n) => write!(f, "{n}"),
            Value::Time(t) => write!(f, "{}.{:09}", t.secs, t.nanos),
        }
    }
}

/// A type as reports and the NDJSON format spell it.
pub fn kind_name(kind: FileKind) -> &'static str {
    match kind {
        FileKind::File => "file",
        FileKind::Dir => "dir",
        FileKind::Symlink => "symlink",
        FileKind::Fifo => "fifo",
        FileKind::Socket => "socket",
        FileKind::BlockDevice => "block_device",
        FileKind::CharDevice => "char_device",
        FileKind::Unknown => "unknown",
    }
}

/// One known field: which, where from, what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    pub field: FieldName,
    pub source: Source,
    pub value: Value,
}

/// One entry as one side saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The entry's path inside the tree; the tree's root is `.`.
    pub path: PathBuf,
    pub known: Vec<Known>,
    /// Why this side could not stat the entry, if it could not.
    pub stat_failed: Option<String>,
}

impl Record {
    /// What this side knows of `field`, from each source that gave it.
    pub fn of(&self, field: FieldName) -> impl Iterator<Item = &Known> {
        self.known.iter().filter(move |k| k.field == field)
    }

    /// The type this side knows from a stat (not from a listing), if any.
    pub fn stat_kind(&self) -> Option<FileKind> {
        self.of(FieldName::Type)
            .find(|k| k.source != Source::Listing)
            .and_then(|k| match k.value {
                Value::Kind(kind) => Some(kind),
                _ => None,
            })
    }
}

/// One entry as an engine saw it: what its folder's listing said of it, if
/// anything, and its stat, or why the stat failed.
pub fn of_entry(
    path: PathBuf,
    listed: Option<Listed>,
    stat: &Result<StatFields, StatError>,
) -> Record {
    let mut known = Vec::with_capacity(2 + FieldName::ALL.len());
    if let Some(listed) = listed {
        known.push(Known {
            field: FieldName::Type,
            source: Source::Listing,
            value: Value::Kind(listed.kind),
        });
        known.push(Known {
            field: FieldName::Inode,
            source: Source::Listing,
            value: Value::Number(listed.ino),
        });
    }
    let stat_failed = match stat {
        Ok(stat) => {
            stat_fields(stat, &mut known);
            None
        }
        Err(StatError::Io(err)) => Some(err.to_string()),
        Err(StatError::DanglingLink) => Some("a dangling link".into()),
    };
    Record {
        path,
        known,
        stat_failed,
    }
}

/// The known fields of a stat, each with its own source.
fn stat_fields(stat: &StatFields, known: &mut Vec<Known>) {
    let mut push = |field, source, value| {
        known.push(Known {
            field,
            source,
            value,
        })
    };
    // The type comes with the mode from one call; where the mode is unknown the
    // call that gave the type is the one that gave anything at all.
    let type_source = (stat.mode.map(|m| m.source))
        .or(stat.size.map(|s| s.source))
        .unwrap_or(Source::PathStat);
    push(FieldName::Type, type_source, Value::Kind(stat.kind));
    let numbers = [
        (FieldName::Mode, stat.mode.map(widen)),
        (FieldName::Size, stat.size),
        (FieldName::Blocks, stat.blocks),
        (FieldName::BlockSize, stat.blksize),
        (FieldName::Inode, stat.ino),
        (FieldName::Device, stat.dev),
        (FieldName::Nlink, stat.nlink),
        (FieldName::Uid, stat.uid.map(widen)),
        (FieldName::Gid, stat.gid.map(widen)),
    ];
    for (field, value) in numbers {
        if let Some(v) = value {
            push(field, v.source, Value::Number(v.value));
        }
    }
    let times = [
        (FieldName::Atime, stat.atime),
        (FieldName::Mtime, stat.mtime),
        (FieldName::Ctime, stat.ctime),
        (FieldName::Btime, stat.btime),
    ];
    for (field, value) in times {
        if let Some(t) = value {
            push(field, t.source, Value::Time(t.value));
        }
    }
}

fn widen(field: Field<u32>) -> Field<u64> {
    Field::new(u64::from(field.value), field.source)
}
