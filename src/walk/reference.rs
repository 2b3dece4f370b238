//! The reference engine: `std::fs::read_dir` plus a full-path `symlink_metadata` (or
//! `metadata` with `-L`) per entry, serial, in the order the OS lists. It is the
//! oracle the fast engine is held to, so it stays short enough to trust by reading.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::Path;

use super::stat::StatFields;
use super::{settled_without_listing, Contents, Entry, Identity, ListOptions, StatError};

#[cfg(windows)]
mod by_handle;

pub fn list(operands: &[OsString], options: ListOptions) -> Vec<Entry> {
    super::raise_descriptor_limit();
    let mut listed_once = HashSet::new();
    operands
        .iter()
        .map(|operand| {
            let path = Path::new(operand);
            let stat = stat_path(path, options.follow_symlinks);
            let root_dev = stat.as_ref().ok().and_then(|s| s.dev).map(|d| d.value);
            let contents = match &stat {
                Ok(fields) => contents_of(path, fields, root_dev, options, &mut listed_once),
                Err(_) => Contents::None,
            };
            Entry {
                name: operand.clone(),
                stat,
                listed: None,
                contents,
            }
        })
        .collect()
}

/// Stats one path, through a symlink when following; on Windows the fields std
/// lacks are added by handle.
pub(super) fn stat_path(path: &Path, follow: bool) -> Result<StatFields, StatError> {
    let fields = |meta: &fs::Metadata| {
        let fields = StatFields::from_metadata(meta);
        #[cfg(windows)]
        let fields = by_handle::add(fields, path, follow);
        fields
    };
    if !follow {
        return fs::symlink_metadata(path)
            .map(|m| fields(&m))
            .map_err(StatError::Io);
    }
    match fs::metadata(path) {
        Ok(meta) => Ok(fields(&meta)),
        Err(err) if err.kind() == io::ErrorKind::NotFound && dangles(path) => {
            Err(StatError::DanglingLink)
        }
        Err(err) => Err(StatError::Io(err)),
    }
}

/// Whether a path that led nowhere is a link that dangles now: a name made again
/// since the stat, as a link to something that exists, was gone, not dangling.
fn dangles(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
        && fs::metadata(path).is_err_and(|err| err.kind() == io::ErrorKind::NotFound)
}

/// Paths longer than this are reached through the open folder instead (below).
#[cfg(target_os = "linux")]
const SHORT_ENOUGH: usize = 3072;

/// A folder's path, or, once the full path grows past [`SHORT_ENOUGH`], a short
/// path through a descriptor held open for as long as the folder is listed:
/// `/proc/self/fd/N`. Paths below it grow from that anchor until they pass the
/// limit again, so a tree holds one descriptor per [`SHORT_ENOUGH`] bytes of depth. Full paths past PATH_MAX cannot be opened or stat'ed at all,
/// and du walks such trees, so the oracle must too; below the limit nothing
/// changes, so the reference keeps paying for full-path lookups as a plain walker
/// does.
pub(super) struct Shortened {
    path: std::path::PathBuf,
    #[cfg(target_os = "linux")]
    _open: Option<fs::File>,
}

impl Shortened {
    #[cfg(target_os = "linux")]
    pub(super) fn new(path: &Path) -> io::Result<Shortened> {
        use std::os::fd::AsRawFd;
        if path.as_os_str().len() <= SHORT_ENOUGH {
            return Ok(Shortened {
                path: path.to_path_buf(),
                _open: None,
            });
        }
        let folder = fs::File::open(path)?;
        Ok(Shortened {
            path: format!("/proc/self/fd/{}", folder.as_raw_fd()).into(),
            _open: Some(folder),
        })
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn new(path: &Path) -> io::Result<Shortened> {
        Ok(Shortened {
            path: path.to_path_buf(),
        })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

fn contents_of(
    path: &Path,
    fields: &StatFields,
    root_dev: Option<u64>,
    options: ListOptions,
    listed_once: &mut HashSet<Identity>,
) -> Contents {
    let claim = |id| listed_once.insert(id);
    if let Some(settled) = settled_without_listing(fields, root_dev, options, claim) {
        return settled;
    }
    let opened = Shortened::new(path).and_then(|held| Ok((fs::read_dir(held.path())?, held)));
    let (reader, held) = match opened {
        Ok(opened) => opened,
        Err(err) => return Contents::unreadable(err),
    };
    let path = held.path();
    // Read the whole listing before entering any subfolder, so that a folder's
    // directory stream is closed by the time its children are walked: the number
    // of open descriptors then stays independent of depth.
    let mut names = Vec::new();
    let mut error = None;
    for item in reader {
        match item {
            Ok(dirent) => names.push((dirent.file_name(), listed_inode(&dirent))),
            Err(err) => {
                error = Some(err);
                break;
            }
        }
    }
    let mut entries = Vec::with_capacity(names.len());
    for (name, listed) in names {
        let child = path.join(&name);
        let stat = stat_path(&child, options.follow_symlinks);
        let contents = match &stat {
            Ok(f) => contents_of(&child, f, root_dev, options, listed_once),
            Err(_) => Contents::None,
        };
        // The oracle takes nothing from the listing but names; the inode the
        // listing gave is kept only for the probe to hold a fast listing's to.
        entries.push(Entry {
            name,
            stat,
            listed,
            contents,
        });
    }
    Contents::Listed {
        entries,
        error,
        summed: super::Summed::default(),
    }
}

/// The inode `read_dir` listed an entry with; its type is not asked, since std
/// would stat for it where the listing gives none.
#[cfg(unix)]
pub(super) fn listed_inode(dirent: &fs::DirEntry) -> Option<super::Listed> {
    use std::os::unix::fs::DirEntryExt;
    Some(super::Listed {
        kind: super::FileKind::Unknown,
        ino: dirent.ino(),
    })
}

#[cfg(not(unix))]
pub(super) fn listed_inode(_dirent: &fs::DirEntry) -> Option<super::Listed> {
    None
}
