//! Watching a tree for changes while the arms run, so the guard need not
//! fingerprint it after every arm. On Linux an inotify watch sits on every folder of
//! the tree, for every kind of change (entries created, removed, moved in or out,
//! written to, their mode, mtime, links or owner changed); reading the tree makes
//! no event it watches for. Access times are not watched, as the fingerprint leaves
//! them out: listing a folder moves them. The watches are added through each folder's own descriptor
//! (`/proc/self/fd/N`), so folders past PATH_MAX are watched too. Elsewhere there is
//! no watch, and the guard fingerprints after every arm as before.

/// What the watch saw since it was last asked.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, PartialEq, Eq)]
pub enum Drained {
    Quiet,
    /// Readable descriptions, `created a/b`, at most a few.
    Changed(Vec<String>),
    /// The kernel's queue overflowed: changes were lost, so the watch cannot speak.
    Overflowed,
}

#[cfg(target_os = "linux")]
pub use linux::TreeWatch;

/// Starts watching every folder of the tree, or says why it cannot.
#[cfg(not(target_os = "linux"))]
pub fn start(_root: &std::path::Path) -> Result<TreeWatch, String> {
    Err("no watch API is used on this OS".into())
}

/// No watch exists off Linux.
#[cfg(not(target_os = "linux"))]
pub enum TreeWatch {}

#[cfg(not(target_os = "linux"))]
impl TreeWatch {
    pub fn drain(&mut self) -> Drained {
        match *self {}
    }

    pub fn folders(&self) -> usize {
        match *self {}
    }
}

#[cfg(target_os = "linux")]
pub use linux::start;

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashMap;
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::path::{Path, PathBuf};

    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

    use super::Drained;

    /// Descriptions kept per drain.
    const SHOWN: usize = 10;
    use crate::walk::folder::{self, depth_first, Folder};
    use crate::walk::{Counters, Engine, FileKind};

    /// An inotify instance with a watch on every folder of one tree.
    pub struct TreeWatch {
        fd: OwnedFd,
        /// Each watch's folder, relative to the tree's root.
        folders: HashMap<i32, PathBuf>,
        buffer: Vec<MaybeUninit<u8>>,
    }

    /// Every change an arm could make to what a walker sees.
    fn changes() -> WatchFlags {
        WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::ONLYDIR
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
                buffer: vec![MaybeUninit::uninit(); 16 * 1024],
            }),
        }
    }

    fn watch(fd: &OwnedFd, folder: &Folder) -> Result<i32, String> {
        let path = folder.own_path().ok_or("no path names the folder")?;
        inotify::add_watch(fd, &path, changes()).map_err(|e| match e {
            rustix::io::Errno::NOSPC => "NOSPC".to_string(),
            other => other.to_string(),
        })
    }

    fn why_not(relative: &Path, why: &str, watched: usize) -> String {
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
            false => crate::fixtures::names::escaped(relative.as_os_str().as_encoded_bytes()),
        }
    }

    impl TreeWatch {
        /// How many folders are watched.
        pub fn folders(&self) -> usize {
            self.folders.len()
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
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_change_is_seen_and_reading_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let at = |p: &str| dir.path().join(p);
        std::fs::create_dir_all(at("a/deep")).unwrap();
        std::fs::write(at("a/deep/f"), b"x").unwrap();
        std::fs::write(at("g"), b"y").unwrap();
        let mut watch = start(dir.path()).unwrap();
        assert_eq!(watch.folders(), 3);
        // Reading (listing, stat, opening and reading a file) is no change.
        let _ = std::fs::read_dir(at("a/deep")).unwrap().count();
        let _ = std::fs::read(at("a/deep/f")).unwrap();
        assert_eq!(watch.drain(), Drained::Quiet);
        let changed = |watch: &mut TreeWatch, change: &dyn Fn(), expected: &str| {
            change();
            match watch.drain() {
                Drained::Changed(seen) => assert!(
                    seen.iter().any(|s| s == expected),
                    "{expected:?} not in {seen:?}"
                ),
                other => panic!("{expected}: {other:?}"),
            }
        };
        use std::os::unix::fs::PermissionsExt;
        changed(
            &mut watch,
            &|| std::fs::write(at("a/deep/f"), b"xx").unwrap(),
            "written to or mtime set: a/deep/f",
        );
        changed(
            &mut watch,
            &|| std::fs::write(at("a/new"), b"").unwrap(),
            "created a/new",
        );
        changed(
            &mut watch,
            &|| std::fs::remove_file(at("a/new")).unwrap(),
            "removed a/new",
        );
        changed(
            &mut watch,
            &|| std::fs::rename(at("g"), at("a/g")).unwrap(),
            "moved away g",
        );
        changed(
            &mut watch,
            &|| {
                std::fs::set_permissions(at("a/g"), std::fs::Permissions::from_mode(0o600)).unwrap()
            },
            "mode, owner, links or ctime changed: a/g",
        );
        changed(
            &mut watch,
            &|| {
                let file = std::fs::File::options()
                    .write(true)
                    .open(at("a/g"))
                    .unwrap();
                file.set_modified(std::time::SystemTime::UNIX_EPOCH)
                    .unwrap();
            },
            "written to or mtime set: a/g",
        );
        assert_eq!(watch.drain(), Drained::Quiet);
    }
}
