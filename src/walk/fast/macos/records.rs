//! Parsing the records `getattrlistbulk` packs into its buffer, as a pure function
//! over a byte slice, so it is tested on every OS. The layout (getattrlist(2),
//! getattrlistbulk(2)): each record starts with its length (u32), then the attribute
//! set it returned (five u32 groups: common, volume, folder, file, fork), then
//! `ATTR_CMN_ERROR` when returned (getattrlistbulk(2) puts it right after the set,
//! ahead of its bit's place), then each other attribute asked for and returned, in
//! the order of its bit within its group, common ones first; every attribute takes
//! a multiple of 4 bytes and is only 4-byte aligned, so 8-byte values are read
//! unaligned. The name is an `attrreference`: an offset,
//! from the reference itself, to bytes elsewhere in the record, and a length that
//! counts its NUL. The next record starts `length` bytes after this one's start.
//!
//! Every read is bounds-checked: a record that runs past the buffer or its own
//! length, or a name that points outside its record, is an error, never a panic.

use crate::walk::stat::Timestamp;
use crate::walk::FileKind;

/// The common attributes asked for, in the order they are packed (by bit, except
/// the error, which comes first), with `ATTR_CMN_RETURNED_ATTRS` (always packed
/// ahead of them all) left out.
pub const COMMON: [(u32, Attr); 12] = [
    (0x2000_0000, Attr::Error),
    (0x0000_0001, Attr::Name),
    (0x0000_0002, Attr::Device),
    (0x0000_0008, Attr::ObjType),
    (0x0000_0200, Attr::Btime),
    (0x0000_0400, Attr::Mtime),
    (0x0000_0800, Attr::Ctime),
    (0x0000_1000, Attr::Atime),
    (0x0000_8000, Attr::Uid),
    (0x0001_0000, Attr::Gid),
    (0x0002_0000, Attr::AccessMask),
    (0x0200_0000, Attr::FileId),
];

/// The file attributes asked for, in the order they are packed.
pub const FILE: [(u32, Attr); 4] = [
    (0x0000_0001, Attr::LinkCount),
    (0x0000_0004, Attr::AllocSize),
    (0x0000_0008, Attr::IoBlockSize),
    (0x0000_0200, Attr::DataLength),
];

/// `ATTR_CMN_RETURNED_ATTRS`: asked for always, packed first.
pub const RETURNED_ATTRS: u32 = 0x8000_0000;

/// The common attribute bits to ask for.
pub fn common_mask() -> u32 {
    COMMON
        .iter()
        .fold(RETURNED_ATTRS, |mask, (bit, _)| mask | bit)
}

/// The file attribute bits to ask for.
pub fn file_mask() -> u32 {
    FILE.iter().fold(0, |mask, (bit, _)| mask | bit)
}

/// One attribute the engine asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attr {
    Name,
    Device,
    ObjType,
    Btime,
    Mtime,
    Ctime,
    Atime,
    Uid,
    Gid,
    AccessMask,
    FileId,
    Error,
    LinkCount,
    AllocSize,
    IoBlockSize,
    DataLength,
}

impl Attr {
    /// Bytes the attribute takes in a record.
    pub fn size(self) -> usize {
        match self {
            Attr::Name => 8,
            Attr::Btime | Attr::Mtime | Attr::Ctime | Attr::Atime => 16,
            Attr::FileId | Attr::AllocSize | Attr::DataLength => 8,
            _ => 4,
        }
    }
}

/// One entry as its record gave it; what the record did not return is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record<'a> {
    /// The name's bytes, without the NUL.
    pub name: Option<&'a [u8]>,
    pub device: Option<i32>,
    pub kind: Option<FileKind>,
    pub btime: Option<Timestamp>,
    pub mtime: Option<Timestamp>,
    pub ctime: Option<Timestamp>,
    pub atime: Option<Timestamp>,
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// Permission bits (`ATTR_CMN_ACCESSMASK`).
    pub access: Option<u32>,
    pub file_id: Option<u64>,
    /// An error the file system met getting this entry's attributes.
    pub error: Option<u32>,
    pub nlink: Option<u32>,
    pub alloc_size: Option<u64>,
    pub io_block_size: Option<u32>,
    pub data_length: Option<u64>,
}

/// Why a buffer could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadRecord {
    #[error("record {index} at byte {at} runs past the buffer")]
    PastBuffer { index: usize, at: usize },
    #[error("record {index} is {length} bytes, shorter than what it packs")]
    Short { index: usize, length: usize },
    #[error("record {index}'s name points outside the record")]
    NameOutside { index: usize },
    #[error("record {index}'s name is empty")]
    EmptyName { index: usize },
}

/// The vnode types `ATTR_CMN_OBJTYPE` gives (`enum vtype` in sys/vnode.h).
fn kind_of(objtype: u32) -> FileKind {
    match objtype {
        1 => FileKind::File,
        2 => FileKind::Dir,
        3 => FileKind::BlockDevice,
        4 => FileKind::CharDevice,
        5 => FileKind::Symlink,
        6 => FileKind::Socket,
        7 => FileKind::Fifo,
        _ => FileKind::Unknown,
    }
}

/// Parses the first `count` records of `buffer`, as `getattrlistbulk` filled it
/// when it returned `count`.
pub fn parse(buffer: &[u8], count: usize) -> Result<Vec<Record<'_>>, BadRecord> {
    let mut records = Vec::with_capacity(count);
    let mut at = 0;
    for index in 0..count {
        let length = read_u32(buffer, at).ok_or(BadRecord::PastBuffer { index, at })? as usize;
        let end = at
            .checked_add(length)
            .filter(|&end| end <= buffer.len())
            .ok_or(BadRecord::PastBuffer { index, at })?;
        // A record holds at least its length and its returned set; one of length 0
        // would never advance.
        if length < 24 {
            return Err(BadRecord::Short { index, length });
        }
        records.push(parse_one(&buffer[at..end], index)?);
        at = end;
    }
    Ok(records)
}

/// Parses one record, `record` being exactly its bytes.
fn parse_one(record: &[u8], index: usize) -> Result<Record<'_>, BadRecord> {
    let short = BadRecord::Short {
        index,
        length: record.len(),
    };
    let returned_common = read_u32(record, 4).ok_or(short.clone())?;
    let returned_file = read_u32(record, 16).ok_or(short.clone())?;
    let mut parsed = Record::default();
    let mut at = 24;
    let present = (COMMON
        .iter()
        .filter(move |(bit, _)| returned_common & bit != 0))
    .chain(FILE.iter().filter(move |(bit, _)| returned_file & bit != 0));
    for &(_, attr) in present {
        let field = record.get(at..at + attr.size()).ok_or(short.clone())?;
        match attr {
            Attr::Name => parsed.name = Some(name(record, at, field, index)?),
            Attr::Device => parsed.device = Some(u32_at(field, 0) as i32),
            Attr::ObjType => parsed.kind = Some(kind_of(u32_at(field, 0))),
            Attr::Btime => parsed.btime = Some(timespec(field)),
            Attr::Mtime => parsed.mtime = Some(timespec(field)),
            Attr::Ctime => parsed.ctime = Some(timespec(field)),
            Attr::Atime => parsed.atime = Some(timespec(field)),
            Attr::Uid => parsed.uid = Some(u32_at(field, 0)),
            Attr::Gid => parsed.gid = Some(u32_at(field, 0)),
            Attr::AccessMask => parsed.access = Some(u32_at(field, 0)),
            Attr::FileId => parsed.file_id = Some(u64_at(field, 0)),
            Attr::Error => parsed.error = Some(u32_at(field, 0)),
            Attr::LinkCount => parsed.nlink = Some(u32_at(field, 0)),
            Attr::AllocSize => parsed.alloc_size = Some(u64_at(field, 0)),
            Attr::IoBlockSize => parsed.io_block_size = Some(u32_at(field, 0)),
            Attr::DataLength => parsed.data_length = Some(u64_at(field, 0)),
        }
        at += attr.size();
    }
    Ok(parsed)
}

/// The name an `attrreference` at `at` points to, without its NUL.
fn name<'a>(
    record: &'a [u8],
    at: usize,
    field: &[u8],
    index: usize,
) -> Result<&'a [u8], BadRecord> {
    let outside = BadRecord::NameOutside { index };
    let offset = u32_at(field, 0) as i32;
    let length = u32_at(field, 4) as usize;
    let start = (at as i64)
        .checked_add(i64::from(offset))
        .filter(|&s| s >= 0)
        .ok_or(outside.clone())? as usize;
    let bytes = start
        .checked_add(length)
        .and_then(|end| record.get(start..end))
        .ok_or(outside.clone())?;
    // The length counts the NUL; a name is what comes before the first one.
    let name = bytes.split(|&b| b == 0).next().unwrap_or_default();
    if name.is_empty() {
        return Err(BadRecord::EmptyName { index });
    }
    Ok(name)
}

fn read_u32(buffer: &[u8], at: usize) -> Option<u32> {
    let bytes = buffer.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes(bytes.try_into().ok()?))
}

/// A u32 at `at` of a field already known to hold it.
fn u32_at(field: &[u8], at: usize) -> u32 {
    let mut bytes = [0; 4];
    bytes.copy_from_slice(&field[at..at + 4]);
    u32::from_ne_bytes(bytes)
}

fn u64_at(field: &[u8], at: usize) -> u64 {
    let mut bytes = [0; 8];
    bytes.copy_from_slice(&field[at..at + 8]);
    u64::from_ne_bytes(bytes)
}

/// A `struct timespec` of a 64-bit target: seconds and nanoseconds, 8 bytes each.
fn timespec(field: &[u8]) -> Timestamp {
    Timestamp {
        secs: u64_at(field, 0) as i64,
        nanos: (u64_at(field, 8) as i64).clamp(0, 999_999_999) as u32,
    }
}

#[cfg(test)]
mod tests;
