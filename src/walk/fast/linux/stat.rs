//! Stat calls relative to a folder's descriptor: `statx` with
//! `AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC` (unless links are followed), `fstatat`
//! where the kernel has no `statx`, and the conversion to [`StatFields`].

use std::ffi::OsStr;
use std::os::fd::AsFd;

use rustix::fs::{AtFlags, FileType, StatxFlags};

use crate::walk::stat::{Field, FileKind, Source, StatFields, Timestamp};
use crate::walk::StatError;

/// Stats one name relative to a folder's descriptor; `dtype` is what the listing
/// said, used to tell a dangling link from a missing entry when following links.
pub(super) fn stat_entry<Fd: AsFd>(
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
