//! The inotify watch of one tree: a watch on every folder, added through the
//! folder's own descriptor, and what the queue says changed since it was last read.

use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

use super::Drained;
use crate::walk::folder::{self, depth_first, Folder};
use crate::walk::{Counters, Engine, FileKind};

/// Descriptions kept per drain.
const SHOWN: usize = 10;

/// An inotify instance with a watch on every folder of one tree.
pub struct TreeWatch {
    fd: OwnedFd,
    /// Each watch's folder (or linked file), relative to the tree's root.
    folders: HashMap<i32, PathBuf>,
    /// How many of those watches are on files.
    files: usize,
    buffer: Vec<MaybeUninit<u8>>,
}

/// Every change an arm could make to what a walker sees. The `_SELF` events are
/// the root's own: any other folder's removal or move is seen in its parent.
fn changes() -> WatchFlags {
    WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::MODIFY
        | WatchFlags::ATTRIB
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
}

pub fn start(root: &Path) -> Result<TreeWatch, String> {
    let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)
        .map_err(|e| format!("cannot start inotify: {e}"))?;
    let mut folders = HashMap::new();
    let mut failed: Option<String> = None;
    let census = Counters::default();
    depth_first(folder::open_root(Engine::Fast, root), |opened, relative| {
        if failed.is_some() {
            return Vec::new();
        }
        let watched = opened
            .as_ref()
            .map_err(|e| e.to_string())
            .and_then(|folder| watch(&fd, folder));
        match watched {
            Ok(wd) => {
                folders.insert(wd, relative.to_path_buf());
            }
            Err(why) => {
                failed = Some(why_not(relative, &why, folders.len()));
                return Vec::new();
            }
        }
        let Ok(folder) = opened else {
            return Vec::new();
        };
        subfolders(folder, &census)
    });
    match failed {
        Some(why) => Err(why),
        None => Ok(TreeWatch {
            fd,
            folders,
            files: 0,
            buffer: vec![MaybeUninit::uninit(); 16 * 1024],
        }),
    }
}

fn watch(fd: &OwnedFd, folder: &Folder) -> Result<i32, String> {
    let path = folder.own_path().ok_or("no path names the folder")?;
    add_watch(fd, &path, changes())
}

/// One watch; the limit's error is `NOSPC`, which `why_not` words.
fn add_watch(fd: &OwnedFd, path: &Path, flags: WatchFlags) -> Result<i32, String> {
    inotify::add_watch(fd, path, flags).map_err(|e| match e {
        rustix::io::Errno::NOSPC => "NOSPC".to_string(),
        other => other.to_string(),
    })
}

pub(super) fn why_not(relative: &Path, why: &str, watched: usize) -> String {
    if why == "NOSPC" {
        let limit = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
            .map(|l| l.trim().to_string())
            .unwrap_or_else(|_| "?".into());
        return format!(
            "the inotify watch limit (fs.inotify.max_user_watches = {limit}) is too low for the tree: it ran out after {watched} folders"
        );
    }
    format!("cannot watch {}: {why}", shown(relative))
}

/// The subfolders of a folder, by its listing's type or, where it gave none, a stat.
fn subfolders(folder: &Folder, census: &Counters) -> Vec<std::ffi::OsString> {
    (folder.names(census).map_while(Result::ok))
        .filter(|named| match named.listed.map(|l| l.kind) {
            Some(FileKind::Dir) => true,
            Some(FileKind::Unknown) | None => folder
                .stat_named(named, census)
                .is_ok_and(|s| s.kind == FileKind::Dir),
            Some(_) => false,
        })
        .map(|named| named.name)
        .collect()
}

fn shown(relative: &Path) -> String {
    match relative.as_os_str().is_empty() {
        true => ".".into(),
        false => crate::fixtures::names::shown(relative.as_os_str().as_encoded_bytes()),
    }
}

impl TreeWatch {
    /// How many folders are watched.
    pub fn folders(&self) -> usize {
        self.folders.len() - self.files
    }

    /// How many files are watched themselves (see `watch_files`).
    pub fn files(&self) -> usize {
        self.files
    }

    /// Watches each of `files` (relative to `root`) itself: a file with a link
    /// outside the tree can be written through that link, which no folder of the
    /// tree hears of, while a watch on the file's inode hears of every write.
    pub fn watch_files(&mut self, root: &Path, files: &[PathBuf]) -> Result<(), String> {
        let flags = WatchFlags::MODIFY | WatchFlags::ATTRIB;
        for file in files {
            let wd = add_watch(&self.fd, &root.join(file), flags)
                .map_err(|why| why_not(file, &why, self.folders.len()))?;
            // Two links of one file inside the tree are one inode: one watch.
            if let std::collections::hash_map::Entry::Vacant(new) = self.folders.entry(wd) {
                new.insert(file.clone());
                self.files += 1;
            }
        }
        Ok(())
    }

    /// What changed since the last drain.
    pub fn drain(&mut self) -> Drained {
        let mut seen: Vec<String> = Vec::new();
        let mut reader = inotify::Reader::new(&self.fd, &mut self.buffer);
        // Reading stops where nothing more is queued (the descriptor does not block).
        while let Ok(event) = reader.next() {
            let flags = event.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                return Drained::Overflowed;
            }
            if flags.contains(ReadFlags::IGNORED) {
                continue;
            }
            let mut path = self.folders.get(&event.wd()).cloned().unwrap_or_default();
            if let Some(name) = event.file_name().filter(|n| !n.is_empty()) {
                use std::os::unix::ffi::OsStrExt;
                path.push(std::ffi::OsStr::from_bytes(name.to_bytes()));
            }
            let said = format!("{} {}", what(flags), shown(&path));
            if seen.len() < SHOWN && !seen.contains(&said) {
                seen.push(said);
            }
        }
        match seen.is_empty() {
            true => Drained::Quiet,
            false => Drained::Changed(seen),
        }
    }
}

fn what(flags: ReadFlags) -> &'static str {
    if flags.intersects(ReadFlags::CREATE) {
        "created"
    } else if flags.intersects(ReadFlags::DELETE | ReadFlags::DELETE_SELF) {
        "removed"
    } else if flags.intersects(ReadFlags::MOVED_FROM | ReadFlags::MOVE_SELF) {
        "moved away"
    } else if flags.intersects(ReadFlags::MOVED_TO) {
        "moved in"
    } else if flags.intersects(ReadFlags::MODIFY) {
        // Setting a file's mtime reports as a write does.
        "written to or mtime set:"
    } else {
        "mode, owner, links or ctime changed:"
    }
}
