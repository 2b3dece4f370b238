//! The stat fields a listing yields for one entry, each marked known or unknown and
//! tagged with where it came from. Unknown is never stored as 0: a walker that cannot
//! learn a field (nlink from a Windows directory listing, say) says so, and the
//! accounting and the probe treat it as unknown rather than as a real zero.

use std::io;

/// What kind of entry this is, after following the link when the walk dereferences.
/// Spelled as the probe's reports and lister dumps spell it: `block_device`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    File,
    Dir,
    Symlink,
    Fifo,
    Socket,
    BlockDevice,
    CharDevice,
    Unknown,
}

/// Where a field's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The directory listing call itself (`getdents64`'s `d_ino`, a `getattrlistbulk`
    /// record, a Windows directory-information class).
    Listing,
    /// `statx` relative to the folder's descriptor.
    Statx,
    /// `fstatat` relative to the folder's descriptor, where `statx` is missing or
    /// refused.
    Fstatat,
    /// A per-entry stat by full path (`std::fs::symlink_metadata` / `metadata`).
    PathStat,
    /// A record another program printed about the entry (`eqcheck probe --cand`).
    Lister,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Listing => "listing",
            Source::Statx => "statx",
            Source::Fstatat => "fstatat",
            Source::PathStat => "path stat",
            Source::Lister => "lister",
        }
    }
}

/// A value together with where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Field<T> {
    pub value: T,
    pub source: Source,
}

impl<T> Field<T> {
    pub fn new(value: T, source: Source) -> Self {
        Field { value, source }
    }
}

/// A time as seconds and nanoseconds since the Unix epoch.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Timestamp {
    pub secs: i64,
    pub nanos: u32,
}

/// The stat fields of one entry. `kind` is always known; every other field may not be.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StatFields {
    pub kind: FileKind,
    /// Permission bits and file type bits as `st_mode` has them.
    pub mode: Option<Field<u32>>,
    /// Apparent size in bytes.
    pub size: Option<Field<u64>>,
    /// Allocated size in 512-byte units, as `st_blocks`.
    pub blocks: Option<Field<u64>>,
    pub ino: Option<Field<u64>>,
    pub dev: Option<Field<u64>>,
    pub nlink: Option<Field<u64>>,
    pub mtime: Option<Field<Timestamp>>,
    /// The preferred I/O block size, as `st_blksize`.
    pub blksize: Option<Field<u64>>,
    pub uid: Option<Field<u32>>,
    pub gid: Option<Field<u32>>,
    pub atime: Option<Field<Timestamp>>,
    pub ctime: Option<Field<Timestamp>>,
    /// Birth (creation) time, where the file system keeps one.
    pub btime: Option<Field<Timestamp>>,
}

impl StatFields {
    /// The identity used to count hard links and already-visited folders once, when
    /// both halves are known.
    pub fn identity(&self) -> Option<(u64, u64)> {
        Some((self.dev?.value, self.ino?.value))
    }

    /// Whether this entry may have other names: true when the link count says so
    /// and also when the link count is unknown, since guessing "one" would count
    /// a hard-linked file twice.
    pub fn may_have_other_links(&self) -> bool {
        self.nlink.is_none_or(|n| n.value > 1)
    }

    /// Builds the fields from `std::fs::Metadata`, taken by full path.
    pub fn from_metadata(meta: &std::fs::Metadata) -> StatFields {
        let src = Source::PathStat;
        let btime = meta.created().ok().and_then(|t| since_epoch(t, src));
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let time = |secs, nanos| stat_time(secs, nanos, src);
            StatFields {
                kind: kind_of(meta.file_type()),
                mode: Some(Field::new(meta.mode(), src)),
                size: Some(Field::new(meta.size(), src)),
                blocks: Some(Field::new(meta.blocks(), src)),
                ino: Some(Field::new(meta.ino(), src)),
                dev: Some(Field::new(meta.dev(), src)),
                nlink: Some(Field::new(meta.nlink(), src)),
                mtime: time(meta.mtime(), meta.mtime_nsec()),
                blksize: Some(Field::new(meta.blksize(), src)),
                uid: Some(Field::new(meta.uid(), src)),
                gid: Some(Field::new(meta.gid(), src)),
                atime: time(meta.atime(), meta.atime_nsec()),
                ctime: time(meta.ctime(), meta.ctime_nsec()),
                btime,
            }
        }
        #[cfg(not(unix))]
        {
            // std exposes no inode, device, link count, owner or allocation on
            // stable outside Unix: they stay unknown, never estimated.
            StatFields {
                size: Some(Field::new(meta.len(), src)),
                mtime: meta.modified().ok().and_then(|t| since_epoch(t, src)),
                atime: meta.accessed().ok().and_then(|t| since_epoch(t, src)),
                btime,
                ..StatFields::unknown(kind_of(meta.file_type()))
            }
        }
    }

    /// Fields of this kind with nothing else known.
    pub fn unknown(kind: FileKind) -> StatFields {
        StatFields {
            kind,
            mode: None,
            size: None,
            blocks: None,
            ino: None,
            dev: None,
            nlink: None,
            mtime: None,
            blksize: None,
            uid: None,
            gid: None,
            atime: None,
            ctime: None,
            btime: None,
        }
    }
}

/// A time as a stat struct gives it, seconds and nanoseconds, from `source`.
#[cfg(unix)]
fn stat_time(secs: i64, nanos: i64, source: Source) -> Option<Field<Timestamp>> {
    Some(Field::new(
        Timestamp {
            secs,
            nanos: nanos as u32,
        },
        source,
    ))
}

/// A system time as a timestamp, when it is after the epoch.
fn since_epoch(time: std::time::SystemTime, source: Source) -> Option<Field<Timestamp>> {
    let d = time.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(Field::new(
        Timestamp {
            secs: d.as_secs() as i64,
            nanos: d.subsec_nanos(),
        },
        source,
    ))
}

/// Maps rustix's file type (a listing's `d_type`, or the type bits of a mode) to
/// ours.
#[cfg(unix)]
pub(crate) fn kind_of_file_type(file_type: rustix::fs::FileType) -> FileKind {
    use rustix::fs::FileType;
    match file_type {
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

/// The fields of a `stat` struct as `fstatat` fills it. Its field widths differ
/// by OS (a 16-bit mode and link count on macOS), hence the widening casts.
#[cfg(unix)]
#[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
pub(crate) fn from_fstatat(st: &rustix::fs::Stat) -> StatFields {
    let src = Source::Fstatat;
    let time = |secs, nanos| stat_time(secs, nanos, src);
    let mode = u32::from(st.st_mode);
    // Only macOS's stat carries the birth time.
    #[cfg(target_os = "macos")]
    let btime = time(st.st_birthtime as i64, st.st_birthtime_nsec as i64);
    #[cfg(not(target_os = "macos"))]
    let btime = None;
    StatFields {
        kind: kind_of_file_type(rustix::fs::FileType::from_raw_mode(st.st_mode)),
        mode: Some(Field::new(mode, src)),
        size: Some(Field::new(st.st_size as u64, src)),
        blocks: Some(Field::new(st.st_blocks as u64, src)),
        ino: Some(Field::new(st.st_ino as u64, src)),
        dev: Some(Field::new(st.st_dev as u64, src)),
        nlink: Some(Field::new(st.st_nlink as u64, src)),
        mtime: time(st.st_mtime as i64, st.st_mtime_nsec as i64),
        blksize: Some(Field::new(st.st_blksize as u64, src)),
        uid: Some(Field::new(st.st_uid, src)),
        gid: Some(Field::new(st.st_gid, src)),
        atime: time(st.st_atime as i64, st.st_atime_nsec as i64),
        ctime: time(st.st_ctime as i64, st.st_ctime_nsec as i64),
        btime,
    }
}

/// Whether a name that led nowhere when followed is a link that dangles, asked of
/// the name as it is now, as du asks: a listing's `d_type` may be out of date, and
/// a link deleted since the listing is gone, not dangling. A link found there is
/// followed once more: a name made again since the stat, as a link to something
/// that exists, was gone when it was statted, and dangles nowhere.
#[cfg(unix)]
pub(crate) fn dangles<Fd: std::os::fd::AsFd, N: rustix::path::Arg + Copy>(
    dir: Fd,
    name: N,
    census: &(impl crate::walk::census::CountsStats + ?Sized),
) -> bool {
    use crate::walk::census::StatCall;
    use rustix::fs::{statat, AtFlags, FileType};
    census.stat(StatCall::Fstatat);
    let is_link = statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink);
    is_link && {
        census.stat(StatCall::Fstatat);
        statat(&dir, name, AtFlags::empty()).err() == Some(rustix::io::Errno::NOENT)
    }
}

/// Maps std's file type to ours.
pub fn kind_of(ft: std::fs::FileType) -> FileKind {
    if ft.is_dir() {
        return FileKind::Dir;
    }
    if ft.is_file() {
        return FileKind::File;
    }
    if ft.is_symlink() {
        return FileKind::Symlink;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return FileKind::Fifo;
        }
        if ft.is_socket() {
            return FileKind::Socket;
        }
        if ft.is_block_device() {
            return FileKind::BlockDevice;
        }
        if ft.is_char_device() {
            return FileKind::CharDevice;
        }
    }
    FileKind::Unknown
}

/// The OS's message for an error without Rust's " (os error N)" suffix, so that
/// messages read as GNU du's do: `Permission denied`. The errors a walk meets are
/// worded as glibc words them, whichever C library this build uses: musl says
/// `Symbolic link loop` where glibc (and so GNU du) says `Too many levels of
/// symbolic links`, and a static build must print what a glibc one prints.
pub fn os_message(err: &io::Error) -> String {
    if let Some(text) = err.raw_os_error().and_then(glibc_words) {
        return text.to_string();
    }
    let text = err.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}

/// glibc's message for the errors a walk may meet, where other C libraries word
/// them differently.
#[cfg(unix)]
fn glibc_words(errno: i32) -> Option<&'static str> {
    Some(match errno {
        libc::EPERM => "Operation not permitted",
        libc::ENOENT => "No such file or directory",
        libc::EIO => "Input/output error",
        libc::ENXIO => "No such device or address",
        libc::EBADF => "Bad file descriptor",
        libc::ENOMEM => "Cannot allocate memory",
        libc::EACCES => "Permission denied",
        libc::EFAULT => "Bad address",
        libc::EBUSY => "Device or resource busy",
        libc::ENODEV => "No such device",
        libc::ENOTDIR => "Not a directory",
        libc::EISDIR => "Is a directory",
        libc::EINVAL => "Invalid argument",
        libc::ENFILE => "Too many open files in system",
        libc::EMFILE => "Too many open files",
        libc::ENAMETOOLONG => "File name too long",
        libc::ENOSYS => "Function not implemented",
        libc::ELOOP => "Too many levels of symbolic links",
        libc::EOVERFLOW => "Value too large for defined data type",
        libc::ESTALE => "Stale file handle",
        libc::EINTR => "Interrupted system call",
        libc::EAGAIN => "Resource temporarily unavailable",
        libc::ENOTCONN => "Transport endpoint is not connected",
        libc::ETIMEDOUT => "Connection timed out",
        libc::EOPNOTSUPP => "Operation not supported",
        _ => return None,
    })
}

#[cfg(not(unix))]
fn glibc_words(_errno: i32) -> Option<&'static str> {
    None
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_glibc_words_them_whatever_the_c_library() {
        // Where musl's words differ from glibc's: a static musl build must print
        // what GNU du prints.
        for (errno, words) in [
            (libc::ELOOP, "Too many levels of symbolic links"),
            (libc::ENAMETOOLONG, "File name too long"),
            (libc::EIO, "Input/output error"),
            (libc::EMFILE, "Too many open files"),
            (libc::EOVERFLOW, "Value too large for defined data type"),
            (libc::EACCES, "Permission denied"),
        ] {
            assert_eq!(os_message(&io::Error::from_raw_os_error(errno)), words);
        }
        let other = io::Error::other("not an OS error");
        assert_eq!(os_message(&other), "not an OS error");
    }
}
