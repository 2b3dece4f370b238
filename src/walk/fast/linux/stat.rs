//! Stat calls relative to a folder's descriptor: `statx` with
//! `AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC` (unless links are followed), `fstatat`
//! where the kernel has no `statx`, and the conversion to [`StatFields`].

use std::os::fd::AsFd;

use rustix::fs::{AtFlags, FileType, StatxFlags};
use rustix::path::Arg;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::walk::census::{Counters, StatCall};
use crate::walk::stat::{Field, FileKind, Source, StatFields, Timestamp};
use crate::walk::StatError;

/// Stats one name relative to a folder's descriptor.
///
/// Only this stat speaks for the entry. A name that vanished since the listing
/// read it is reported as GNU du reports it, `cannot access 'X': No such file or
/// directory` (and exit 1): du's fts also reads a folder's names before it stats
/// them, and reports such a name as unstattable (`FTS_NS`), neither leaving it out
/// nor guessing. A name replaced since the listing (a file by a folder or a link)
/// is reported with the fields of what the stat found, whatever its `d_type` said.
pub(super) fn stat_entry<Fd: AsFd, N: Arg + Copy>(
    dir: Fd,
    name: N,
    follow: bool,
    census: &Counters,
) -> Result<StatFields, StatError> {
    let mut flags = AtFlags::STATX_DONT_SYNC;
    if !follow {
        flags |= AtFlags::SYMLINK_NOFOLLOW;
    }
    // Every field the probe compares: asking for more costs nothing in the call,
    // and a field the file system cannot give comes back unmarked, so unknown.
    let mask = StatxFlags::BASIC_STATS | StatxFlags::BTIME;
    let result = if STATX_REFUSED.load(Relaxed) {
        census.stat(StatCall::Fstatat);
        statat_fallback(&dir, name, follow)
    } else {
        match rustix::fs::statx(&dir, name, flags, mask) {
            // A kernel without statx, or a seccomp profile older than it: every
            // later stat goes straight to fstatat. rustix already reports a first
            // refusal as ENOSYS, whatever its errno, once its own probe finds the
            // call missing; EPERM comes through only after statx once worked.
            Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {
                STATX_REFUSED.store(true, Relaxed);
                census.stat(StatCall::StatxRefused);
                statat_fallback(&dir, name, follow)
            }
            other => {
                census.stat(StatCall::Statx);
                other.map(|s| from_statx(&s))
            }
        }
    };
    match result {
        Ok(fields) => Ok(fields),
        Err(rustix::io::Errno::NOENT) if follow && is_link(&dir, name, census) => {
            Err(StatError::DanglingLink)
        }
        Err(errno) => Err(StatError::Io(errno.into())),
    }
}

/// Whether a name that led nowhere is a link that dangles, asked of the name as it
/// is now, as du asks: the listing's `d_type` may be out of date, and a link
/// deleted since the listing is gone, not dangling.
fn is_link<Fd: AsFd, N: Arg>(dir: Fd, name: N, census: &Counters) -> bool {
    census.stat(StatCall::Fstatat);
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink)
}

/// Set once the kernel refuses `statx`: it will refuse it for every entry after.
static STATX_REFUSED: AtomicBool = AtomicBool::new(false);

/// What a listing's `d_type` says, as the census counts it.
pub(super) fn kind_of_type(dtype: FileType) -> FileKind {
    crate::walk::stat::kind_of_file_type(dtype)
}

fn statat_fallback<Fd: AsFd, N: Arg>(
    dir: Fd,
    name: N,
    follow: bool,
) -> rustix::io::Result<StatFields> {
    let flags = if follow {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    rustix::fs::statat(dir, name, flags).map(|st| crate::walk::stat::from_fstatat(&st))
}

fn from_statx(s: &rustix::fs::Statx) -> StatFields {
    let src = Source::Statx;
    let has = |bit: StatxFlags| s.stx_mask & bit.bits() != 0;
    let mode = u32::from(s.stx_mode);
    let time = |bit: StatxFlags, t: &rustix::fs::StatxTimestamp| {
        has(bit).then(|| {
            Field::new(
                Timestamp {
                    secs: t.tv_sec,
                    nanos: t.tv_nsec,
                },
                src,
            )
        })
    };
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
        mtime: time(StatxFlags::MTIME, &s.stx_mtime),
        // statx always fills the block size; no mask bit speaks for it.
        blksize: Some(Field::new(u64::from(s.stx_blksize), src)),
        uid: has(StatxFlags::UID).then(|| Field::new(s.stx_uid, src)),
        gid: has(StatxFlags::GID).then(|| Field::new(s.stx_gid, src)),
        atime: time(StatxFlags::ATIME, &s.stx_atime),
        ctime: time(StatxFlags::CTIME, &s.stx_ctime),
        btime: time(StatxFlags::BTIME, &s.stx_btime),
    }
}

fn kind_of_mode(mode: u32) -> FileKind {
    kind_of_type(FileType::from_raw_mode(mode))
}
