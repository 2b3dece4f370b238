//! Stat calls relative to a folder's descriptor: `statx` with
//! `AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC` (unless links are followed), `fstatat`
//! where the kernel has no `statx`, and the conversion to [`StatFields`].

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, StatxFlags};
use rustix::path::Arg;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::walk::census::{Counters, CountsStats, StatCall};
use crate::walk::stat::{dangles, Field, FileKind, Source, StatFields, Timestamp};
use crate::walk::{StatError, SumFacts};

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
    census: &(impl CountsStats + ?Sized),
) -> Result<StatFields, StatError> {
    ask(&dir, name, follow, census, |answer| match answer {
        Ok(answer) => Ok(answer.fields()),
        Err(errno) => Err(failed(&dir, name, follow, census, errno)),
    })
}

/// The stat of a folder open at `fd`, links not followed, from the descriptor
/// itself (`statx` with an empty path, or `fstat` once the kernel has refused
/// `statx`), counted in `census`. `None` when the call fails: the caller then stats
/// the folder's name and reports what that says.
pub(super) fn stat_open_folder(fd: &OwnedFd, census: &Counters) -> Option<StatFields> {
    if !STATX_REFUSED.load(Relaxed) {
        let flags = AtFlags::EMPTY_PATH | AtFlags::STATX_DONT_SYNC;
        match rustix::fs::statx(fd, c"", flags, MASK) {
            Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {
                STATX_REFUSED.store(true, Relaxed);
                census.stat(StatCall::StatxRefused);
            }
            other => {
                census.stat(StatCall::Statx);
                return other.ok().map(|s| from_statx(&s));
            }
        }
    } else {
        census.stat(StatCall::Fstatat);
    }
    let stat = rustix::fs::fstat(fd).ok()?;
    Some(crate::walk::stat::from_fstatat(&stat))
}

/// What statting a name made: the facts of a file the walk only sums, or the
/// entry's stat, as [`stat_entry`] gives it.
pub(super) enum Made {
    Summed(SumFacts),
    Kept(Result<StatFields, StatError>),
}

/// Stats one name as [`stat_entry`] does, but when `sums` says the walk only sums
/// what it found, gives the few facts that sum needs: making the whole
/// [`StatFields`] for each of a tree's files cost more than the rest of the walk's
/// own work per file.
pub(super) fn stat_or_sum<Fd: AsFd, N: Arg + Copy>(
    dir: Fd,
    name: N,
    follow: bool,
    census: &(impl CountsStats + ?Sized),
    sums: impl FnOnce(&SumFacts) -> bool,
) -> Made {
    ask(&dir, name, follow, census, |answer| match answer {
        Ok(answer) => {
            let facts = answer.facts();
            if sums(&facts) {
                Made::Summed(facts)
            } else {
                Made::Kept(Ok(answer.fields()))
            }
        }
        Err(errno) => Made::Kept(Err(failed(&dir, name, follow, census, errno))),
    })
}

/// One stat's answer before the entry's fields are made from it. statx's record is
/// lent, not moved: copying its 256 bytes about cost as much as reading it.
enum Answer<'s> {
    Statx(&'s rustix::fs::Statx),
    Fstatat(&'s rustix::fs::Stat),
}

impl Answer<'_> {
    fn fields(self) -> StatFields {
        match self {
            Answer::Statx(s) => from_statx(s),
            Answer::Fstatat(st) => crate::walk::stat::from_fstatat(st),
        }
    }

    /// The facts [`Answer::fields`] would hold, read straight off the record.
    fn facts(&self) -> SumFacts {
        match self {
            Answer::Statx(s) => {
                let has = |bit: StatxFlags| s.stx_mask & bit.bits() != 0;
                SumFacts {
                    kind: kind_of_mode(u32::from(s.stx_mode)),
                    nlink: has(StatxFlags::NLINK).then_some(u64::from(s.stx_nlink)),
                    dev: Some(rustix::fs::makedev(s.stx_dev_major, s.stx_dev_minor)),
                    size: has(StatxFlags::SIZE).then_some(s.stx_size),
                    blocks: has(StatxFlags::BLOCKS).then_some(s.stx_blocks),
                }
            }
            Answer::Fstatat(st) => SumFacts::of(&crate::walk::stat::from_fstatat(st)),
        }
    }
}

/// `statx`, or `fstatat` once the kernel has refused `statx`, counted in `census`;
/// `then` reads the answer, or the errno, where it lies: what it makes is returned
/// as it is, since moving a made entry through a `Result` copied it once more.
fn ask<Fd: AsFd, N: Arg + Copy, T>(
    dir: Fd,
    name: N,
    follow: bool,
    census: &(impl CountsStats + ?Sized),
    then: impl FnOnce(rustix::io::Result<Answer<'_>>) -> T,
) -> T {
    let mut flags = AtFlags::STATX_DONT_SYNC;
    if !follow {
        flags |= AtFlags::SYMLINK_NOFOLLOW;
    }
    if STATX_REFUSED.load(Relaxed) {
        census.stat(StatCall::Fstatat);
        let stat = statat_fallback(&dir, name, follow);
        return then(stat.as_ref().map(Answer::Fstatat).map_err(|e| *e));
    }
    let mut record = MaybeUninit::uninit();
    match name.into_with_c_str(|name| statx_into(&dir, name, flags, &mut record)) {
        // A kernel without statx, or a seccomp profile older than it: every
        // later stat goes straight to fstatat.
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {
            STATX_REFUSED.store(true, Relaxed);
            census.stat(StatCall::StatxRefused);
            let stat = statat_fallback(&dir, name, follow);
            then(stat.as_ref().map(Answer::Fstatat).map_err(|e| *e))
        }
        answer => {
            census.stat(StatCall::Statx);
            then(answer.map(Answer::Statx))
        }
    }
}

/// `statx` of `name` relative to `dir`, the record written into `record` and lent
/// back: rustix returns it by value, and moving its 256 bytes from frame to frame
/// cost about a tenth of the walk's own instructions. A refusal comes back as the
/// kernel's (or a seccomp filter's) errno, ENOSYS or EPERM.
fn statx_into<'r, Fd: AsFd>(
    dir: Fd,
    name: &CStr,
    flags: AtFlags,
    record: &'r mut MaybeUninit<rustix::fs::Statx>,
) -> rustix::io::Result<&'r rustix::fs::Statx> {
    // The kernel takes the flags and the mask as unsigned ints, and a register
    // (a long) carries each: on 32-bit targets a long is an i32, so they go as
    // their bits, which the kernel reads back as unsigned.
    let flags = flags.bits() as libc::c_long;
    let mask = MASK.bits() as libc::c_long;
    // SAFETY: statx reads the NUL-terminated `name` and writes at most one
    // `struct statx`, which `record` has room for; `dir` stays open for the call.
    let done = unsafe {
        libc::syscall(
            libc::SYS_statx,
            libc::c_long::from(dir.as_fd().as_raw_fd()),
            name.as_ptr(),
            flags,
            mask,
            record.as_mut_ptr(),
        )
    };
    if done == 0 {
        // SAFETY: statx returned 0, so the kernel filled the record.
        Ok(unsafe { record.assume_init_ref() })
    } else {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        Err(rustix::io::Errno::from_raw_os_error(errno))
    }
}

/// Why a stat failed, as du says it: with `-L`, a name that leads nowhere is a
/// dangling link when it is a link.
fn failed<Fd: AsFd, N: Arg + Copy>(
    dir: Fd,
    name: N,
    follow: bool,
    census: &(impl CountsStats + ?Sized),
    errno: rustix::io::Errno,
) -> StatError {
    if errno == rustix::io::Errno::NOENT && follow && dangles(&dir, name, census) {
        StatError::DanglingLink
    } else {
        StatError::Io(errno.into())
    }
}

/// Every field the probe compares: asking for more costs nothing in the call, and
/// a field the file system cannot give comes back unmarked, so unknown.
const MASK: StatxFlags = StatxFlags::BASIC_STATS.union(StatxFlags::BTIME);

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
) -> rustix::io::Result<rustix::fs::Stat> {
    let flags = if follow {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    rustix::fs::statat(dir, name, flags)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// With `-L`, a stat that found nothing is called a dangling link only when the
    /// name is a link that still leads nowhere: a name made again meanwhile as a
    /// link to a file that exists (as a racer does between the listing's stat and
    /// this look) was gone, and says so.
    #[test]
    fn a_name_that_led_nowhere_dangles_only_when_its_link_still_does() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("target"), b"x").unwrap();
        std::os::unix::fs::symlink("target", dir.path().join("alive")).unwrap();
        std::os::unix::fs::symlink("missing", dir.path().join("dead")).unwrap();
        let fd = OwnedFd::from(std::fs::File::open(dir.path()).unwrap());
        let census = Counters::default();
        let verdict = |name: &CStr| failed(&fd, name, true, &census, rustix::io::Errno::NOENT);
        assert!(matches!(verdict(c"dead"), StatError::DanglingLink));
        for name in [c"alive", c"absent", c"target"] {
            let verdict = verdict(name);
            assert!(
                matches!(&verdict, StatError::Io(e) if e.kind() == std::io::ErrorKind::NotFound),
                "{name:?}: {verdict:?}"
            );
        }
    }
}
