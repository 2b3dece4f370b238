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

use crate::walk::stat::{Field, Source, StatFields, Timestamp};
use crate::walk::FileKind;
use records::Record;

/// A regular file's fields from its record, when it gave them all.
pub fn file_fields(record: &Record, kind: FileKind, ino: u64) -> Option<StatFields> {
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
        // stat caps st_nlink at 65535; the record does not.
        nlink: number(u64::from(record.nlink?.min(65535))),
        mtime: Some(Field::new(record.mtime?, src)),
        blksize: number(u64::from(record.io_block_size?)),
        uid: Some(Field::new(record.uid?, src)),
        gid: Some(Field::new(record.gid?, src)),
        atime: Some(Field::new(record.atime?, src)),
        ctime: Some(Field::new(record.ctime?, src)),
        btime: time(record.btime),
    })
}

#[cfg(target_os = "macos")]
mod glue {
    use std::cell::RefCell;
    use std::ffi::OsStr;
    use std::io;
    use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;

    use rustix::fs::{AtFlags, Mode, OFlags, CWD};

    use super::records::{self, Record};
    use super::{file_fields, BULK_LIMIT};
    use crate::walk::census::{Counters, CountsStats, ListingCall, StatCall};
    use crate::walk::fast::bulk::{BulkEntry, FolderListing, Platform};
    use crate::walk::stat::{dangles, from_fstatat, kind_of_file_type, StatFields};
    use crate::walk::{Listed, StatError};

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
                Ok(st) => Ok(from_fstatat(&st)),
                Err(rustix::io::Errno::NOENT) if follow && dangles(dir(parent), name, census) => {
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

    /// Lists a folder with `getattrlistbulk`, every entry with what its record gave;
    /// none when the folder is too big for it, a call fails, or a record is
    /// incomplete or does not parse.
    fn in_bulk(folder: &OwnedFd, census: &Counters) -> Option<Vec<BulkEntry>> {
        census.stat(StatCall::Fstatat);
        let st = rustix::fs::fstat(folder).ok()?;
        if u64::from(st.st_nlink) > BULK_LIMIT {
            return None;
        }
        let trusted = records_match_lstat(folder);
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
                            entries.push(entry(&record, trusted)?);
                        }
                    }
                }
            }
        })
    }

    /// An entry from its record; none when the record lacks a name, type or id. A
    /// file's fields are taken from its record only where they are `lstat`'s.
    fn entry(record: &Record, trusted: bool) -> Option<BulkEntry> {
        let kind = record.kind?;
        let ino = record.file_id?;
        Some(BulkEntry {
            name: OsStr::from_bytes(record.name?).to_os_string(),
            listed: Some(Listed { kind, ino }),
            fields: trusted.then(|| file_fields(record, kind, ino)).flatten(),
        })
    }

    /// Whether a folder's file system fills records itself (APFS, HFS+), so that
    /// a file's allocated size is `st_blocks`'s. Elsewhere the kernel fills them from
    /// getattrlist, whose allocated size adds a resource fork's rounded size
    /// differently from `stat`: those files are stat'ed.
    fn records_match_lstat(folder: &OwnedFd) -> bool {
        let Ok(fs) = rustix::fs::fstatfs(folder) else {
            return false;
        };
        let name: Vec<u8> = (fs.f_fstypename.iter())
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        matches!(name.as_slice(), b"apfs" | b"hfs")
    }

    /// The folder's names as `read_dir` lists them, each to be stat'ed.
    fn as_read_dir_lists(folder: &OwnedFd) -> FolderListing {
        let mut listing = FolderListing {
            entries: Vec::new(),
            error: None,
            call: ListingCall::ReadDir,
        };
        // Read through a duplicate rewound to the start, not by opening `.` again:
        // that lookup needs search permission, which a folder that can be listed
        // but not searched lacks, and such a folder is one this listing is for.
        let reopened = rustix::io::dup(folder).and_then(|copy| {
            rustix::fs::seek(&copy, rustix::fs::SeekFrom::Start(0))?;
            rustix::fs::Dir::new(copy)
        });
        let dir = match reopened {
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
                    let kind = kind_of_file_type(entry.file_type());
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete() -> Record<'static> {
        let at = |secs| Some(Timestamp { secs, nanos: 7 });
        Record {
            name: Some(b"f"),
            device: Some(-5),
            kind: Some(FileKind::File),
            btime: at(1),
            mtime: at(2),
            ctime: at(3),
            atime: at(4),
            uid: Some(501),
            gid: Some(20),
            access: Some(0o4644),
            file_id: Some(99),
            error: None,
            nlink: Some(3),
            alloc_size: Some(4096),
            io_block_size: Some(4096),
            data_length: Some(10),
        }
    }

    #[test]
    fn a_files_record_gives_the_fields_lstat_would() {
        let fields = file_fields(&complete(), FileKind::File, 99).unwrap();
        let number = |f: Option<Field<u64>>| f.map(|f| (f.value, f.source));
        let listing = Source::Listing;
        assert_eq!(fields.mode.map(|m| m.value), Some(0o104644));
        assert_eq!(number(fields.size), Some((10, listing)));
        assert_eq!(number(fields.blocks), Some((8, listing)));
        assert_eq!(number(fields.ino), Some((99, listing)));
        // dev_t is signed: st_dev widens a negative one as `as` does.
        assert_eq!(number(fields.dev), Some(((-5i32) as u64, listing)));
        assert_eq!(number(fields.nlink), Some((3, listing)));
        assert_eq!(number(fields.blksize), Some((4096, listing)));
        assert_eq!(fields.btime.map(|t| t.value.secs), Some(1));
        assert_eq!(fields.ctime.map(|t| t.value.secs), Some(3));
        // Allocated bytes to 512-byte blocks, rounded up.
        for (alloc, blocks) in [
            (0, 0),
            (1, 1),
            (511, 1),
            (512, 1),
            (513, 2),
            (1 << 20, 2048),
        ] {
            let record = Record {
                alloc_size: Some(alloc),
                ..complete()
            };
            let fields = file_fields(&record, FileKind::File, 99).unwrap();
            assert_eq!(
                fields.blocks.map(|b| b.value),
                Some(blocks),
                "{alloc} bytes"
            );
        }
    }

    #[test]
    fn an_incomplete_record_a_failed_one_or_a_folder_is_stated_instead() {
        assert!(file_fields(&complete(), FileKind::Dir, 99).is_none());
        let failed = Record {
            error: Some(5),
            ..complete()
        };
        assert!(file_fields(&failed, FileKind::File, 99).is_none());
        let without: [fn(&mut Record); 10] = [
            |r| r.device = None,
            |r| r.mtime = None,
            |r| r.ctime = None,
            |r| r.atime = None,
            |r| r.uid = None,
            |r| r.access = None,
            |r| r.nlink = None,
            |r| r.alloc_size = None,
            |r| r.io_block_size = None,
            |r| r.data_length = None,
        ];
        for (i, drop) in without.iter().enumerate() {
            let mut record = complete();
            drop(&mut record);
            assert!(
                file_fields(&record, FileKind::File, 99).is_none(),
                "field {i}"
            );
        }
        // No birth time is no reason to stat: it stays unknown.
        let no_btime = Record {
            btime: None,
            ..complete()
        };
        assert!(file_fields(&no_btime, FileKind::File, 99)
            .unwrap()
            .btime
            .is_none());
    }

    /// Runs where the engine does: the macOS jobs of the workflow.
    #[cfg(target_os = "macos")]
    #[test]
    fn the_engine_agrees_with_lstat_on_a_folder_bigger_than_one_buffer() {
        use crate::walk::census::{Counters, ListingCall};
        use crate::walk::fast::bulk::{list_counted, Platform};
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        for i in 0..3000 {
            std::fs::write(at(&format!("file-{i:04}")), vec![b'x'; i % 9000]).unwrap();
        }
        for name in ["d1", "d2", "d3"] {
            std::fs::create_dir(at(name)).unwrap();
        }
        std::fs::hard_link(at("file-0001"), at("hard")).unwrap();
        std::os::unix::fs::symlink("file-0002", at("link")).unwrap();
        std::os::unix::fs::symlink("nowhere", at("dangling")).unwrap();
        let census = Counters::default();
        let folder = glue::MacOs::open(None, dir.path().as_os_str(), false).unwrap();
        let listing = list_counted::<glue::MacOs>(&folder, &census);
        assert_eq!(listing.call, ListingCall::Getattrlistbulk);
        assert_eq!(listing.entries.len(), 3007);
        let mut from_records = 0;
        for entry in listing.entries {
            from_records += usize::from(entry.fields.is_some());
            let ours = match entry.fields {
                Some(fields) => fields,
                None => glue::MacOs::stat(Some(&folder), &entry.name, false, &census).unwrap(),
            };
            let theirs =
                crate::walk::reference::stat_path(&dir.path().join(&entry.name), false).unwrap();
            let value = |f: Option<Field<u64>>| f.map(|f| f.value);
            let time = |f: Option<Field<Timestamp>>| f.map(|f| f.value);
            let name = &entry.name;
            assert_eq!(ours.kind, theirs.kind, "{name:?}");
            assert_eq!(
                ours.mode.map(|m| m.value),
                theirs.mode.map(|m| m.value),
                "{name:?}"
            );
            for (field, a, b) in [
                ("size", ours.size, theirs.size),
                ("blocks", ours.blocks, theirs.blocks),
                ("ino", ours.ino, theirs.ino),
                ("dev", ours.dev, theirs.dev),
                ("nlink", ours.nlink, theirs.nlink),
                ("blksize", ours.blksize, theirs.blksize),
            ] {
                assert_eq!(value(a), value(b), "{name:?} {field}");
            }
            for (field, a, b) in [
                ("mtime", ours.mtime, theirs.mtime),
                ("ctime", ours.ctime, theirs.ctime),
                ("btime", ours.btime, theirs.btime),
            ] {
                assert_eq!(time(a), time(b), "{name:?} {field}");
            }
            assert_eq!(ours.uid.map(|u| u.value), theirs.uid.map(|u| u.value));
            assert_eq!(ours.gid.map(|g| g.value), theirs.gid.map(|g| g.value));
        }
        // Every regular file took its fields from its record.
        assert_eq!(from_records, 3001);
    }
}
