//! The stat fields a listing yields for one entry, each marked known or unknown and
//! tagged with where it came from. Unknown is never stored as 0: a walker that cannot
//! learn a field (nlink from a Windows directory listing, say) says so, and the
//! accounting and the probe treat it as unknown rather than as a real zero.

use std::io;

/// What kind of entry this is, after following the link when the walk dereferences.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The directory listing call itself (`getdents64`'s `d_ino`, a `getattrlistbulk`
    /// record, a Windows directory-information class).
    Listing,
    /// A per-entry stat relative to the folder's descriptor (`statx`, `fstatat`).
    DirfdStat,
    /// A per-entry stat by full path (`std::fs::symlink_metadata` / `metadata`).
    PathStat,
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

/// Modification time as seconds and nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
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
        let kind = kind_of(meta.file_type());
        let src = Source::PathStat;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            StatFields {
                kind,
                mode: Some(Field::new(meta.mode(), src)),
                size: Some(Field::new(meta.size(), src)),
                blocks: Some(Field::new(meta.blocks(), src)),
                ino: Some(Field::new(meta.ino(), src)),
                dev: Some(Field::new(meta.dev(), src)),
                nlink: Some(Field::new(meta.nlink(), src)),
                mtime: Some(Field::new(
                    Timestamp {
                        secs: meta.mtime(),
                        nanos: meta.mtime_nsec() as u32,
                    },
                    src,
                )),
            }
        }
        #[cfg(not(unix))]
        {
            // std exposes no inode, device, link count or allocation on stable
            // outside Unix: they stay unknown, and blocks are estimated by nobody.
            let mtime = meta.modified().ok().and_then(|t| {
                let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
                Some(Field::new(
                    Timestamp {
                        secs: d.as_secs() as i64,
                        nanos: d.subsec_nanos(),
                    },
                    src,
                ))
            });
            StatFields {
                kind,
                mode: None,
                size: Some(Field::new(meta.len(), src)),
                blocks: None,
                ino: None,
                dev: None,
                nlink: None,
                mtime,
            }
        }
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
/// messages read as GNU du's do: `Permission denied`.
pub fn os_message(err: &io::Error) -> String {
    let text = err.to_string();
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text,
    }
}
