//! The list + stat floor of this machine: a walk that does nothing but open each
//! folder, read it with `getdents64` into one 64 KiB buffer, and `statx` each entry
//! relative to the folder's descriptor (`AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC`,
//! the fields the fast engine asks for), serially. It keeps nothing but a count and
//! the names of the subfolders to enter, so its CPU is what the kernel charges for
//! the calls every walker of the tree must make; the walk benchmark runs it as a
//! child process of its own, timed exactly as the walkers are.

use std::ffi::CString;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, StatxFlags, CWD};

/// The `getdents64` buffer's size, as the fast engine's.
pub const LISTING_BUFFER: usize = 64 * 1024;

/// Entries statted below and including `root`, and their allocated 512-byte blocks.
pub fn walk(root: &Path) -> io::Result<(u64, u64)> {
    raise_descriptor_limit();
    let mut totals = (0, 0);
    stat(CWD, root, &mut totals)?;
    let fd = open(CWD, root)?;
    let mut buffer = vec![MaybeUninit::uninit(); LISTING_BUFFER];
    folder(fd, &mut buffer, &mut totals)?;
    Ok(totals)
}

/// A chain of folders holds one descriptor per level while it is walked.
pub fn raise_descriptor_limit() {
    let mut limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    limit.current = limit.maximum;
    let _ = rustix::process::setrlimit(rustix::process::Resource::Nofile, limit);
}

/// Lists and stats one folder, then enters its subfolders with the buffer free
/// again; the folder stays open until they are done, as the simplest walk keeps it.
pub fn folder(
    fd: OwnedFd,
    buffer: &mut [MaybeUninit<u8>],
    totals: &mut (u64, u64),
) -> io::Result<()> {
    for name in list_and_stat(&fd, buffer, totals)? {
        folder(open(&fd, &name)?, buffer, totals)?;
    }
    Ok(())
}

/// Lists one folder, statting each entry as the listing reads it; the names of
/// its subfolders.
pub fn list_and_stat(
    fd: &OwnedFd,
    buffer: &mut [MaybeUninit<u8>],
    totals: &mut (u64, u64),
) -> io::Result<Vec<CString>> {
    let mut subfolders = Vec::new();
    let mut dir = RawDir::new(fd, buffer);
    while let Some(entry) = dir.next() {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        if stat(fd, name, totals)? == FileType::Directory {
            subfolders.push(CString::from(name));
        }
    }
    Ok(subfolders)
}

pub fn stat<Fd: AsFd, P: rustix::path::Arg>(
    dir: Fd,
    name: P,
    totals: &mut (u64, u64),
) -> io::Result<FileType> {
    let flags = AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC;
    let stat = rustix::fs::statx(
        dir,
        name,
        flags,
        StatxFlags::BASIC_STATS | StatxFlags::BTIME,
    )?;
    totals.0 += 1;
    totals.1 += stat.stx_blocks;
    Ok(FileType::from_raw_mode(stat.stx_mode.into()))
}

pub fn open<Fd: AsFd, P: rustix::path::Arg>(dir: Fd, name: P) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(dir, name, flags, Mode::empty())?)
}
