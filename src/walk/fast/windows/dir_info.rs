//! The records Windows' directory-information classes fill a buffer with, parsed
//! from the bytes alone: `FILE_ID_EXTD_DIR_INFO` (`FileIdExtdDirectoryInfo`) and
//! `FILE_ID_BOTH_DIR_INFO` (`FileIdBothDirectoryInfo`), chained by
//! `NextEntryOffset` (0 ends the chain), names in UTF-16 of `FileNameLength`
//! bytes. Nothing here calls the OS, so it compiles and is tested on every OS; the
//! engine hands it what `GetFileInformationByHandleEx` wrote. Every read is
//! bounds-checked and unaligned, and a malformed buffer is an error, never a panic:
//! the kernel's records are trusted no more than the engine must.
//!
//! The offsets are those of windows-sys's `#[repr(C)]` structs, padding included
//! (checked against them by a test on Windows).

use std::fmt;

use crate::walk::stat::{Field, Source, StatFields, Timestamp};
use crate::walk::FileKind;

/// `FILE_ATTRIBUTE_DIRECTORY`.
pub const ATTRIBUTE_DIRECTORY: u32 = 0x10;
/// `FILE_ATTRIBUTE_REPARSE_POINT`: the reparse tag says what kind of point.
pub const ATTRIBUTE_REPARSE_POINT: u32 = 0x400;
/// The name-surrogate bit of a reparse tag: the point stands for another name.
/// `IO_REPARSE_TAG_SYMLINK` and `IO_REPARSE_TAG_MOUNT_POINT` (junctions, volume
/// mount points) have it; cloud placeholders and dedup do not.
const TAG_NAME_SURROGATE: u32 = 0x2000_0000;

/// Which class filled the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// `FILE_ID_EXTD_DIR_INFO`: a 128-bit file id and the reparse tag.
    IdExtd,
    /// `FILE_ID_BOTH_DIR_INFO`: a 64-bit file id and the 8.3 short name; the
    /// reparse tag is in `EaSize` when the entry is a reparse point (MS-FSCC).
    IdBoth,
}

// Offsets shared by both classes.
const NEXT_ENTRY_OFFSET: usize = 0;
const CREATION_TIME: usize = 8;
const LAST_ACCESS_TIME: usize = 16;
const LAST_WRITE_TIME: usize = 24;
const CHANGE_TIME: usize = 32;
const END_OF_FILE: usize = 40;
const ALLOCATION_SIZE: usize = 48;
const FILE_ATTRIBUTES: usize = 56;
const FILE_NAME_LENGTH: usize = 60;
/// `EaSize`; in `FILE_ID_BOTH_DIR_INFO` the reparse tag of a reparse point.
const EA_SIZE: usize = 64;
/// `FILE_ID_EXTD_DIR_INFO.ReparsePointTag`.
const EXTD_REPARSE_TAG: usize = 68;
/// `FILE_ID_EXTD_DIR_INFO.FileId`, 16 bytes with alignment 1.
const EXTD_FILE_ID: usize = 72;
/// `FILE_ID_EXTD_DIR_INFO.FileName`: right after the id.
const EXTD_FILE_NAME: usize = 88;
/// `FILE_ID_BOTH_DIR_INFO.FileId`: `ShortNameLength` (1 byte at 68) and a byte of
/// padding, `ShortName` (24 bytes at 70), then two bytes of padding up to an
/// 8-byte boundary.
const BOTH_FILE_ID: usize = 96;
/// `FILE_ID_BOTH_DIR_INFO.FileName`.
const BOTH_FILE_NAME: usize = 104;

impl Class {
    /// Where the name starts: the record's fixed part.
    pub fn fixed_len(self) -> usize {
        match self {
            Class::IdExtd => EXTD_FILE_NAME,
            Class::IdBoth => BOTH_FILE_NAME,
        }
    }
}

/// One entry of a listing, as the listing gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirRecord {
    /// The name as UTF-16 units; converted to an `OsString` by the engine.
    pub name: Vec<u16>,
    pub attributes: u32,
    /// The reparse tag; 0 unless the entry is a reparse point.
    pub reparse_tag: u32,
    /// FILETIMEs: 100 ns units since 1601; 0 where the file system keeps none.
    pub creation: i64,
    pub last_access: i64,
    pub last_write: i64,
    /// None where the call gives no change time (`FindFirstFileExW`).
    pub change: Option<i64>,
    pub end_of_file: i64,
    /// None where the call gives no allocation size (`FindFirstFileExW`).
    pub allocation: Option<i64>,
    /// None where the call gives no id, or gives 0 (a file system without ids):
    /// counting hard links by a shared 0 would merge unrelated files.
    pub file_id: Option<u64>,
}

/// Why a buffer did not parse; `at` is the offset of the record concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The record's fixed part runs past the buffer.
    ShortRecord { at: usize, left: usize },
    /// The name runs past the buffer.
    NamePastBuffer { at: usize, name_len: usize },
    /// A UTF-16 name cannot have an odd number of bytes.
    OddNameLength { at: usize, name_len: usize },
    /// `NextEntryOffset` points into the record itself: the chain does not advance
    /// past it (and a chain that never advanced would never end).
    DoesNotAdvance { at: usize, next: usize },
    /// `NextEntryOffset` points at or past the end of the buffer.
    ChainPastBuffer { at: usize, next: usize },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ParseError::ShortRecord { at, left } => {
                write!(f, "record at byte {at}: only {left} bytes left")
            }
            ParseError::NamePastBuffer { at, name_len } => {
                write!(
                    f,
                    "record at byte {at}: its {name_len}-byte name runs past the buffer"
                )
            }
            ParseError::OddNameLength { at, name_len } => {
                write!(f, "record at byte {at}: odd name length {name_len}")
            }
            ParseError::DoesNotAdvance { at, next } => {
                write!(
                    f,
                    "record at byte {at}: next entry offset {next} is inside the record"
                )
            }
            ParseError::ChainPastBuffer { at, next } => {
                write!(
                    f,
                    "record at byte {at}: next entry offset {next} points past the buffer"
                )
            }
        }
    }
}

impl std::error::Error for ParseError {}

/// Little-endian reads at `at + offset`, bounds-checked and unaligned.
struct Bytes<'a> {
    buffer: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn array<const N: usize>(&self, offset: usize) -> Option<[u8; N]> {
        let start = self.at.checked_add(offset)?;
        let slice = self.buffer.get(start..start.checked_add(N)?)?;
        slice.try_into().ok()
    }

    fn u32(&self, offset: usize) -> Option<u32> {
        self.array(offset).map(u32::from_le_bytes)
    }

    fn i64(&self, offset: usize) -> Option<i64> {
        self.array(offset).map(i64::from_le_bytes)
    }

    fn u64(&self, offset: usize) -> Option<u64> {
        self.array(offset).map(u64::from_le_bytes)
    }
}

/// Parses every record of a buffer `class` filled, `.` and `..` left out.
pub fn parse(buffer: &[u8], class: Class) -> Result<Vec<DirRecord>, ParseError> {
    let mut records = Vec::new();
    let mut at = 0usize;
    loop {
        let bytes = Bytes { buffer, at };
        let short = ParseError::ShortRecord {
            at,
            left: buffer.len().saturating_sub(at),
        };
        if buffer.len().saturating_sub(at) < class.fixed_len() {
            return Err(short);
        }
        let field = |value: Option<u32>| value.ok_or(short.clone());
        let wide = |value: Option<i64>| value.ok_or(short.clone());
        let next = field(bytes.u32(NEXT_ENTRY_OFFSET))? as usize;
        let name_len = field(bytes.u32(FILE_NAME_LENGTH))? as usize;
        if name_len % 2 != 0 {
            return Err(ParseError::OddNameLength { at, name_len });
        }
        let name_start = at + class.fixed_len();
        let name = (name_start.checked_add(name_len))
            .and_then(|end| buffer.get(name_start..end))
            .ok_or(ParseError::NamePastBuffer { at, name_len })?;
        if next != 0 && next < class.fixed_len() + name_len {
            return Err(ParseError::DoesNotAdvance { at, next });
        }
        let attributes = field(bytes.u32(FILE_ATTRIBUTES))?;
        let (tag, file_id) = match class {
            Class::IdExtd => (
                field(bytes.u32(EXTD_REPARSE_TAG))?,
                // The low 64 bits of FILE_ID_128: all of NTFS's id, and what
                // GetFileInformationByHandle's file index gives for it.
                bytes.u64(EXTD_FILE_ID).ok_or(short.clone())?,
            ),
            Class::IdBoth => (
                field(bytes.u32(EA_SIZE))?,
                bytes.u64(BOTH_FILE_ID).ok_or(short.clone())?,
            ),
        };
        let name: Vec<u16> = (name.chunks_exact(2))
            .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
            .collect();
        if !is_dot_or_dot_dot(&name) {
            records.push(DirRecord {
                name,
                attributes,
                reparse_tag: if attributes & ATTRIBUTE_REPARSE_POINT != 0 {
                    tag
                } else {
                    0
                },
                creation: wide(bytes.i64(CREATION_TIME))?,
                last_access: wide(bytes.i64(LAST_ACCESS_TIME))?,
                last_write: wide(bytes.i64(LAST_WRITE_TIME))?,
                change: Some(wide(bytes.i64(CHANGE_TIME))?),
                end_of_file: wide(bytes.i64(END_OF_FILE))?,
                allocation: Some(wide(bytes.i64(ALLOCATION_SIZE))?),
                file_id: (file_id != 0).then_some(file_id),
            });
        }
        if next == 0 {
            return Ok(records);
        }
        at = match at.checked_add(next) {
            Some(following) if following < buffer.len() => following,
            _ => return Err(ParseError::ChainPastBuffer { at, next }),
        };
    }
}

/// Whether a name is `.` or `..`, which every listing starts with.
pub fn is_dot_or_dot_dot(name: &[u16]) -> bool {
    const DOT: u16 = b'.' as u16;
    matches!(name, [DOT] | [DOT, DOT])
}

/// What kind of entry the attributes and reparse tag say, the link never followed:
/// a reparse point that stands for another name (a symlink, a junction or mount
/// point) is a link, as std's `FileType::is_symlink` says on Windows, so both
/// engines agree; other reparse points (cloud placeholders, dedup) are what their
/// attributes say.
pub fn kind(attributes: u32, reparse_tag: u32) -> FileKind {
    let surrogate =
        attributes & ATTRIBUTE_REPARSE_POINT != 0 && reparse_tag & TAG_NAME_SURROGATE != 0;
    if surrogate {
        FileKind::Symlink
    } else if attributes & ATTRIBUTE_DIRECTORY != 0 {
        FileKind::Dir
    } else {
        FileKind::File
    }
}

/// Seconds from 1601-01-01 (FILETIME's epoch) to 1970-01-01.
const FILETIME_TO_UNIX_SECS: i64 = 11_644_473_600;
const TICKS_PER_SEC: i64 = 10_000_000;

/// A FILETIME as a time since the Unix epoch (negative before 1970); None for 0,
/// which file systems store where they keep no such time.
pub fn timestamp(filetime: i64) -> Option<Timestamp> {
    if filetime == 0 {
        return None;
    }
    Some(Timestamp {
        secs: filetime.div_euclid(TICKS_PER_SEC) - FILETIME_TO_UNIX_SECS,
        nanos: (filetime.rem_euclid(TICKS_PER_SEC) * 100) as u32,
    })
}

/// `st_blocks` from an allocation size in bytes: 512-byte units, rounded up, as
/// du counts disk usage; None for a negative size, which no file system gives.
pub fn blocks(allocation: i64) -> Option<u64> {
    u64::try_from(allocation)
        .ok()
        .map(|bytes| bytes.div_ceil(512))
}

impl DirRecord {
    /// The stat fields the listing gave, all from [`Source::Listing`]; `volume` is
    /// the serial number of the folder's volume, the device of every entry.
    ///
    /// Left unknown: the link count (not in any listing; never 0), the mode (Windows
    /// has no `st_mode`: std's `Metadata` gives attributes, not permission bits, and
    /// the reference leaves it unknown too), owner, group and I/O block size.
    pub fn fields(&self, volume: u32) -> StatFields {
        let src = Source::Listing;
        let time = |filetime: i64| timestamp(filetime).map(|t| Field::new(t, src));
        StatFields {
            size: u64::try_from(self.end_of_file)
                .ok()
                .map(|s| Field::new(s, src)),
            blocks: (self.allocation.and_then(blocks)).map(|b| Field::new(b, src)),
            ino: self.file_id.map(|id| Field::new(id, src)),
            dev: Some(Field::new(u64::from(volume), src)),
            mtime: time(self.last_write),
            atime: time(self.last_access),
            ctime: self.change.and_then(time),
            btime: time(self.creation),
            ..StatFields::unknown(kind(self.attributes, self.reparse_tag))
        }
    }
}

#[cfg(test)]
mod tests;
