//! The macOS fast engine: `getattrlistbulk` on each folder's descriptor, the
//! records parsed by [`records`]. A regular file takes its fields from its record:
//! size (the data fork's length), blocks (`ceil(allocated / 512)`), I/O block size,
//! file id, device, link count, owner, permissions and the four times. Folders,
//! links and other entries are still stat'ed relative to the folder (`fstatat`), so
//! mount points and firmlinks read as `lstat` reads them.
//!
//! The whole folder is listed as `read_dir` lists it instead (each entry then
//! stat'ed) when the folder cannot be listed in bulk: an open or a call fails (a
//! folder that can be listed but not searched, a file system without the call), a
//! record lacks a name, type or file id or does not parse, or the folder's link
//! count says it holds more than [`BULK_LIMIT`] entries. The census counts which
//! listing served each folder. Each walker thread reuses one buffer.

pub mod records;

/// Past this many entries (as the folder's link count shows them) a folder is
/// listed as `read_dir` lists it.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub const BULK_LIMIT: u64 = 50_000;

#[cfg(target_os = "macos")]
pub(super) use glue::MacOs;

#[cfg(target_os = "macos")]
mod glue {
    use std::cell::RefCell;
    use std::ffi::OsStr;
    use std::io;
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;

    use rustix::fs::{AtFlags, FileType, Mode, OFlags, CWD};

    use super::records::{self, Record};
    use super::BULK_LIMIT;
    use crate::walk::census::{Counters, ListingCall, StatCall};
    use crate::walk::fast::bulk::{BulkEntry, FolderListing, Platform};
    use crate::walk::stat::{Field, Source, StatFields, Timestamp};
    use crate::walk::{FileKind, Listed, StatError};

    /// Bytes of records one `getattrlistbulk` call may fill.
    const BULK_BUFFER: usize = 128 * 1024;

    pub struct MacOs;

    impl Platform for MacOs {
        type Folder = OwnedFd;

        fn open(parent: Option<&OwnedFd>, name: &OsStr, follow: bool) -> io::Result<OwnedFd> {
            let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            if !follow {
                flags |= OFlags::NOFOLLOW;
            }
            Ok(rustix::fs::openat(dir(parent), name, flags, Mode::empty())?)
        }

        fn list(folder: &OwnedFd, census: &Counters) -> FolderListing {
            match in_bulk(folder, census) {
                Some(entries) => FolderListing {
                    entries,
                    error: None,
                    call: ListingCall::Getattrlistbulk,
                },
                None => as_read_dir_lists(folder),
            }
        }

        fn stat(
            parent: Option<&OwnedFd>,
            name: &OsStr,
            follow: bool,
            census: &Counters,
        ) -> Result<StatFields, StatError> {
            census.stat(StatCall::Fstatat);
            let flags = if follow {
                AtFlags::empty()
            } else {
                AtFlags::SYMLINK_NOFOLLOW
            };
            match rustix::fs::statat(dir(parent), name, flags) {
                Ok(st) => Ok(from_stat(&st)),
                Err(rustix::io::Errno::NOENT) if follow && is_link(parent, name, census) => {
                    Err(StatError::DanglingLink)
                }
                Err(errno) => Err(StatError::Io(errno.into())),
            }
        }
    }

    /// The folder to resolve a name in: the parent, or the working folder for an
    /// operand.
    fn dir(parent: Option<&OwnedFd>) -> BorrowedFd<'_> {
        parent.map_or(CWD, |fd| fd.as_fd())
    }

    fn is_link(parent: Option<&OwnedFd>, name: &OsStr, census: &Counters) -> bool {
        census.stat(StatCall::Fstatat);
        rustix::fs::statat(dir(parent), name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink)
    }

    /// Lists a folder with `getattrlistbulk`, every entry with what its record gave;
    /// none when the folder is too big for it, a call fails, or a record is
    /// incomplete or does not parse.
    fn in_bulk(folder: &OwnedFd, census: &Counters) -> Option<Vec<BulkEntry>> {
        census.stat(StatCall::Fstatat);
        let st = rustix::fs::fstat(folder).ok()?;
        if u64::from(st.st_nlink) > BULK_LIMIT {
            return None;
        }
        let mut asked = libc::attrlist {
            bitmapcount: libc::ATTR_BIT_MAP_COUNT,
            reserved: 0,
            commonattr: records::common_mask(),
            volattr: 0,
            dirattr: 0,
            fileattr: records::file_mask(),
            forkattr: 0,
        };
        thread_local! {
            static BUFFER: RefCell<Vec<u8>> = RefCell::new(vec![0; BULK_BUFFER]);
        }
        BUFFER.with_borrow_mut(|buffer| {
            let mut entries = Vec::new();
            loop {
                // SAFETY: the descriptor is open, `asked` is a valid attrlist, and
                // the buffer's pointer and length describe memory we own.
                let count = unsafe {
                    libc::getattrlistbulk(
                        folder.as_raw_fd(),
                        (&mut asked as *mut libc::attrlist).cast(),
                        buffer.as_mut_ptr().cast(),
                        buffer.len(),
                        0,
                    )
                };
                match count {
                    0 => return Some(entries),
                    n if n < 0 => return None,
                    n => {
                        for record in records::parse(buffer, n as usize).ok()? {
                            entries.push(entry(&record)?);
                        }
                    }
                }
            }
        })
    }

    /// An entry from its record; none when the record lacks a name, type or id.
    fn entry(record: &Record) -> Option<BulkEntry> {
        let kind = record.kind?;
        let ino = record.file_id?;
        Some(BulkEntry {
            name: OsStr::from_bytes(record.name?).to_os_string(),
            listed: Some(Listed { kind, ino }),
            fields: file_fields(record, kind, ino),
        })
    }

    /// A regular file's fields from its record, when it gave them all.
    fn file_fields(record: &Record, kind: FileKind, ino: u64) -> Option<StatFields> {
        if kind != FileKind::File || record.error.is_some() {
            return None;
        }
        let src = Source::Listing;
        let time = |t: Option<Timestamp>| t.map(|t| Field::new(t, src));
        let number = |n: u64| Some(Field::new(n, src));
        Some(StatFields {
            kind,
            mode: Some(Field::new(0o100000 | (record.access? & 0o7777), src)),
            size: number(record.data_length?),
            blocks: number(record.alloc_size?.div_ceil(512)),
            ino: number(ino),
            // dev_t is signed; st_dev widens the same way.
            dev: number(i64::from(record.device?) as u64),
            nlink: number(u64::from(record.nlink?)),
            mtime: Some(Field::new(record.mtime?, src)),
            blksize: number(u64::from(record.io_block_size?)),
            uid: Some(Field::new(record.uid?, src)),
            gid: Some(Field::new(record.gid?, src)),
            atime: Some(Field::new(record.atime?, src)),
            ctime: Some(Field::new(record.ctime?, src)),
            btime: time(record.btime),
        })
    }

    /// The folder's names as `read_dir` lists them, each to be stat'ed.
    fn as_read_dir_lists(folder: &OwnedFd) -> FolderListing {
        let mut listing = FolderListing {
            entries: Vec::new(),
            error: None,
            call: ListingCall::ReadDir,
        };
        let dir = match rustix::fs::Dir::read_from(folder) {
            Ok(dir) => dir,
            Err(err) => {
                listing.error = Some(err.into());
                return listing;
            }
        };
        for item in dir {
            match item {
                Ok(entry) => {
                    let name = entry.file_name().to_bytes();
                    if name == b"." || name == b".." {
                        continue;
                    }
                    let kind = kind_of(entry.file_type());
                    listing.entries.push(BulkEntry {
                        name: OsStr::from_bytes(name).to_os_string(),
                        listed: Some(Listed {
                            kind,
                            ino: entry.ino(),
                        }),
                        fields: None,
                    });
                }
                Err(err) => {
                    listing.error = Some(err.into());
                    break;
                }
            }
        }
        listing
    }

    fn kind_of(file_type: FileType) -> FileKind {
        match file_type {
            FileType::Directory => FileKind::Dir,
            FileType::RegularFile => FileKind::File,
            FileType::Symlink => FileKind::Symlink,
            FileType::Fifo => FileKind::Fifo,
            FileType::Socket => FileKind::Socket,
            FileType::BlockDevice => FileKind::BlockDevice,
            FileType::CharacterDevice => FileKind::CharDevice,
            FileType::Unknown => FileKind::Unknown,
        }
    }

    fn from_stat(st: &rustix::fs::Stat) -> StatFields {
        let src = Source::Fstatat;
        let time = |secs: i64, nanos: i64| {
            Some(Field::new(
                Timestamp {
                    secs,
                    nanos: nanos as u32,
                },
                src,
            ))
        };
        StatFields {
            kind: kind_of(FileType::from_raw_mode(st.st_mode)),
            mode: Some(Field::new(u32::from(st.st_mode), src)),
            size: Some(Field::new(st.st_size as u64, src)),
            blocks: Some(Field::new(st.st_blocks as u64, src)),
            ino: Some(Field::new(st.st_ino, src)),
            dev: Some(Field::new(st.st_dev as u64, src)),
            nlink: Some(Field::new(u64::from(st.st_nlink), src)),
            mtime: time(st.st_mtime, st.st_mtime_nsec),
            blksize: Some(Field::new(st.st_blksize as u64, src)),
            uid: Some(Field::new(st.st_uid, src)),
            gid: Some(Field::new(st.st_gid, src)),
            atime: time(st.st_atime, st.st_atime_nsec),
            ctime: time(st.st_ctime, st.st_ctime_nsec),
            btime: time(st.st_birthtime, st.st_birthtime_nsec),
        }
    }
}
