//! The Linux fast engine: `openat` + `getdents64` into a 64 KiB buffer, then
//! `statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC)` per entry (with
//! `fstatat` where the kernel has no `statx`), never a full-path stat below an
//! operand. Folders are spread over a work-stealing pool; a huge folder's stats are
//! split into chunks so one folder does not hold one thread for its whole length.
//!
//! Descriptors: a folder with few subfolders opens them and closes itself before
//! they are listed, so a chain of any depth holds one descriptor at a time; a folder
//! with many subfolders stays open while the pool works through them. The soft
//! limit is raised to the hard one once per process all the same.

use std::cell::RefCell;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, StatxFlags, CWD};

use crate::walk::stat::{Field, FileKind, Source, StatFields, Timestamp};
use crate::walk::{should_descend, Contents, Entry, Identity, ListOptions, StatError};

/// getdents64 buffer size; larger buffers mean fewer calls on wide folders.
const LISTING_BUFFER: usize = 64 * 1024;
/// A folder with at least this many entries has its stats spread over the pool.
const CHUNKED_FOLDER: usize = 1024;
/// Entries per chunk when a folder's stats are spread.
const STAT_CHUNK: usize = 256;
/// A folder with at most this many subfolders opens them all before closing its
/// own descriptor. Keeping descriptors few matters beyond the limit: growing the
/// descriptor table of a multi-threaded process waits for an RCU grace period.
const OPEN_AHEAD: usize = 16;
/// Worker stacks are large because the walk recurses once per folder level.
const WORKER_STACK: usize = crate::walk::DEEP_STACK;

pub fn list(operands: &[OsString], options: ListOptions) -> Vec<Entry> {
    crate::walk::raise_descriptor_limit();
    let walker = Walker {
        options,
        listed_once: Mutex::new(HashSet::new()),
    };
    let walk = || operands.iter().map(|op| walker.operand(op)).collect();
    // On a deep-stack thread the walk starts right here and enters the pool only
    // where a folder fans out: a chain never pays for starting the pool's threads.
    if crate::walk::on_deep_stack() {
        walk()
    } else {
        pool().install(walk)
    }
}

/// Runs parallel work on the walk's pool (inline when already on it).
fn in_pool<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    pool().install(work)
}

fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .stack_size(WORKER_STACK)
            .thread_name(|i| format!("walk-{i}"))
            .build()
            .expect("the walk pool must start")
    })
}

struct Walker {
    options: ListOptions,
    listed_once: Mutex<HashSet<Identity>>,
}

impl Walker {
    fn operand(&self, operand: &OsStr) -> Entry {
        let stat = stat_entry(CWD, operand, self.options.follow_symlinks, None);
        let contents = match &stat {
            Ok(fields) => {
                let root_dev = fields.dev.map(|d| d.value);
                self.contents(self.open_folder(CWD, operand, fields, root_dev), root_dev)
            }
            Err(_) => Contents::None,
        };
        Entry {
            name: operand.to_os_string(),
            stat,
            contents,
        }
    }

    /// Opens one folder relative to its parent's descriptor, or says why its
    /// contents are already settled (not a folder to enter, listed elsewhere, or
    /// unopenable).
    fn open_folder<Fd: AsFd>(
        &self,
        parent: Fd,
        name: &OsStr,
        fields: &StatFields,
        root_dev: Option<u64>,
    ) -> Opened {
        if !should_descend(fields, root_dev, self.options) {
            return Opened::Settled(Contents::None);
        }
        if self.options.follow_symlinks {
            if let Some(id) = fields.identity() {
                if !self.listed_once.lock().expect("claims lock").insert(id) {
                    return Opened::Settled(Contents::Elsewhere);
                }
            }
        }
        let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        if !self.options.follow_symlinks {
            flags |= OFlags::NOFOLLOW;
        }
        match rustix::fs::openat(parent, name, flags, Mode::empty()) {
            Ok(fd) => Opened::Folder(fd),
            Err(err) => Opened::Settled(Contents::unreadable(err.into())),
        }
    }

    fn contents(&self, opened: Opened, root_dev: Option<u64>) -> Contents {
        match opened {
            Opened::Folder(fd) => self.folder(fd, root_dev),
            Opened::Settled(contents) => contents,
        }
    }

    fn folder(&self, fd: OwnedFd, root_dev: Option<u64>) -> Contents {
        let (names, error) = read_names(&fd);
        let follow = self.options.follow_symlinks;
        let stat_one =
            |(name, dtype): &(OsString, FileType)| stat_entry(&fd, name, follow, Some(*dtype));
        let stats: Vec<Result<StatFields, StatError>> = if names.len() >= CHUNKED_FOLDER {
            in_pool(|| {
                names
                    .par_chunks(STAT_CHUNK)
                    .flat_map_iter(|chunk| chunk.iter().map(stat_one))
                    .collect()
            })
        } else {
            names.iter().map(stat_one).collect()
        };
        let mut entries: Vec<Entry> = names
            .into_iter()
            .zip(stats)
            .map(|((name, _), stat)| Entry {
                name,
                stat,
                contents: Contents::None,
            })
            .collect();
        let subfolders: Vec<usize> = (0..entries.len())
            .filter(|&i| {
                let stat = &entries[i].stat;
                stat.as_ref()
                    .is_ok_and(|s| should_descend(s, root_dev, self.options))
            })
            .collect();
        let open = |i: usize| {
            let entry = &entries[i];
            match &entry.stat {
                Ok(fields) => self.open_folder(&fd, &entry.name, fields, root_dev),
                Err(_) => Opened::Settled(Contents::None),
            }
        };
        let listed: Vec<Contents> = if subfolders.len() <= OPEN_AHEAD {
            // Open the few subfolders now and close this folder before entering
            // them, so a chain of any depth holds one descriptor, not one per level.
            let opened: Vec<Opened> = subfolders.iter().map(|&i| open(i)).collect();
            drop(fd);
            if opened.len() > 1 {
                in_pool(|| {
                    opened
                        .into_par_iter()
                        .map(|o| self.contents(o, root_dev))
                        .collect()
                })
            } else {
                opened
                    .into_iter()
                    .map(|o| self.contents(o, root_dev))
                    .collect()
            }
        } else {
            in_pool(|| {
                subfolders
                    .par_iter()
                    .map(|&i| self.contents(open(i), root_dev))
                    .collect()
            })
        };
        for (i, contents) in subfolders.into_iter().zip(listed) {
            entries[i].contents = contents;
        }
        Contents::Listed { entries, error }
    }
}

/// A subfolder about to be listed, or the reason it needs no listing.
enum Opened {
    Folder(OwnedFd),
    Settled(Contents),
}

/// Every name in a folder with its `d_type`, in the order getdents64 returns them,
/// and the error that cut the listing short.
fn read_names(fd: &OwnedFd) -> (Vec<(OsString, FileType)>, Option<io::Error>) {
    thread_local! {
        // Listing finishes before any subfolder is entered, so one buffer per
        // thread serves every folder that thread lists.
        static BUFFER: RefCell<Vec<MaybeUninit<u8>>> = RefCell::new(vec![MaybeUninit::uninit(); LISTING_BUFFER]);
    }
    BUFFER.with_borrow_mut(|buffer| read_names_into(fd, buffer))
}

fn read_names_into(
    fd: &OwnedFd,
    buffer: &mut [MaybeUninit<u8>],
) -> (Vec<(OsString, FileType)>, Option<io::Error>) {
    let mut dir = RawDir::new(fd, buffer);
    let mut names = Vec::new();
    while let Some(item) = dir.next() {
        match item {
            Ok(entry) => {
                let name = entry.file_name().to_bytes();
                if name == b"." || name == b".." {
                    continue;
                }
                names.push((OsStr::from_bytes(name).to_os_string(), entry.file_type()));
            }
            Err(err) => return (names, Some(err.into())),
        }
    }
    (names, None)
}

/// Stats one name relative to a folder's descriptor; `dtype` is what the listing
/// said, used to tell a dangling link from a missing entry when following links.
fn stat_entry<Fd: AsFd>(
    dir: Fd,
    name: &OsStr,
    follow: bool,
    dtype: Option<FileType>,
) -> Result<StatFields, StatError> {
    let mut flags = AtFlags::STATX_DONT_SYNC;
    if !follow {
        flags |= AtFlags::SYMLINK_NOFOLLOW;
    }
    let mask = StatxFlags::TYPE
        | StatxFlags::MODE
        | StatxFlags::NLINK
        | StatxFlags::INO
        | StatxFlags::SIZE
        | StatxFlags::BLOCKS
        | StatxFlags::MTIME;
    let result = match rustix::fs::statx(&dir, name, flags, mask) {
        Err(rustix::io::Errno::NOSYS) => statat_fallback(&dir, name, follow),
        other => other.map(|s| from_statx(&s)),
    };
    match result {
        Ok(fields) => Ok(fields),
        Err(rustix::io::Errno::NOENT) if follow && is_link(&dir, name, dtype) => {
            Err(StatError::DanglingLink)
        }
        Err(errno) => Err(StatError::Io(errno.into())),
    }
}

fn is_link<Fd: AsFd>(dir: Fd, name: &OsStr, dtype: Option<FileType>) -> bool {
    match dtype {
        Some(FileType::Symlink) => true,
        Some(FileType::Unknown) | None => rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink),
        Some(_) => false,
    }
}

fn statat_fallback<Fd: AsFd>(
    dir: Fd,
    name: &OsStr,
    follow: bool,
) -> rustix::io::Result<StatFields> {
    let flags = if follow {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    let st = rustix::fs::statat(dir, name, flags)?;
    let src = Source::DirfdStat;
    Ok(StatFields {
        kind: kind_of_mode(st.st_mode),
        mode: Some(Field::new(st.st_mode, src)),
        size: Some(Field::new(st.st_size as u64, src)),
        blocks: Some(Field::new(st.st_blocks as u64, src)),
        ino: Some(Field::new(st.st_ino, src)),
        dev: Some(Field::new(st.st_dev, src)),
        nlink: Some(Field::new(st.st_nlink, src)),
        mtime: Some(Field::new(
            Timestamp {
                secs: st.st_mtime,
                nanos: st.st_mtime_nsec as u32,
            },
            src,
        )),
    })
}

fn from_statx(s: &rustix::fs::Statx) -> StatFields {
    let src = Source::DirfdStat;
    let has = |bit: StatxFlags| s.stx_mask & bit.bits() != 0;
    let mode = u32::from(s.stx_mode);
    StatFields {
        kind: kind_of_mode(mode),
        mode: has(StatxFlags::MODE).then(|| Field::new(mode, src)),
        size: has(StatxFlags::SIZE).then(|| Field::new(s.stx_size, src)),
        blocks: has(StatxFlags::BLOCKS).then(|| Field::new(s.stx_blocks, src)),
        ino: has(StatxFlags::INO).then(|| Field::new(s.stx_ino, src)),
        dev: Some(Field::new(
            rustix::fs::makedev(s.stx_dev_major, s.stx_dev_minor),
            src,
        )),
        nlink: has(StatxFlags::NLINK).then(|| Field::new(u64::from(s.stx_nlink), src)),
        mtime: has(StatxFlags::MTIME).then(|| {
            Field::new(
                Timestamp {
                    secs: s.stx_mtime.tv_sec,
                    nanos: s.stx_mtime.tv_nsec,
                },
                src,
            )
        }),
    }
}

fn kind_of_mode(mode: u32) -> FileKind {
    match FileType::from_raw_mode(mode) {
        FileType::RegularFile => FileKind::File,
        FileType::Directory => FileKind::Dir,
        FileType::Symlink => FileKind::Symlink,
        FileType::Fifo => FileKind::Fifo,
        FileType::Socket => FileKind::Socket,
        FileType::BlockDevice => FileKind::BlockDevice,
        FileType::CharacterDevice => FileKind::CharDevice,
        FileType::Unknown => FileKind::Unknown,
    }
}
