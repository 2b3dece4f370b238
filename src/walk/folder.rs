//! One folder at a time, for callers that must look at a tree without holding it:
//! the probe, which puts an engine's look at each entry beside the oracle's as it
//! goes, and the probe's guard, which digests a tree folder by folder. The calls are
//! each engine's own (the fast engine's `getdents64` and `statx` relative to the
//! folder's descriptor on Linux, its `getattrlistbulk` records and `fstatat` on
//! macOS, its directory-information listing on Windows, whose fields are kept for
//! the stat of each name; the reference's `read_dir` and full-path `lstat`, through
//! `/proc/self/fd` past PATH_MAX), without the engines' scheduling. Links are never
//! followed.
//!
//! [`depth_first`] walks a tree holding only the folders on the way down, each with
//! the names of the subfolders still to enter. A folder gives up its descriptor once
//! its last subfolder is open, so a chain of any depth holds a bounded number of
//! descriptors, and a tree at most one per level.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::census::Counters;
use super::reference::{listed_inode, stat_path, Shortened};
use super::{Engine, Listed, StatError, StatFields};

/// One engine's handle on one folder.
pub struct Folder(Inner);

enum Inner {
    /// The folder's descriptor; none once released.
    #[cfg(target_os = "linux")]
    Fast(Option<std::os::fd::OwnedFd>),
    /// The folder's descriptor for the macOS engine's bulk listing; none once
    /// released.
    #[cfg(target_os = "macos")]
    Bulk(Option<std::os::fd::OwnedFd>),
    /// The folder's handle and path, and what its listing gave of each name.
    #[cfg(windows)]
    FastWindows(super::fast::Held),
    /// The folder's path, shortened past PATH_MAX.
    Reference(Shortened),
}

/// One name as a folder's listing gave it, with what the listing said of it.
pub struct Named {
    pub name: OsString,
    pub listed: Option<Listed>,
    /// The entry's stat fields, where the listing itself gave them (a bulk
    /// listing's regular files): the engine stats such an entry no further.
    pub fields: Option<StatFields>,
}

/// Stats a tree's root as `engine` stats an operand, links not followed.
pub fn stat_root(engine: Engine, path: &Path, census: &Counters) -> Result<StatFields, StatError> {
    match engine {
        #[cfg(target_os = "linux")]
        Engine::Fast => super::fast::stat_at(rustix::fs::CWD, path.as_os_str(), census),
        #[cfg(target_os = "macos")]
        Engine::Fast => super::fast::bulk_stat(None, path.as_os_str(), census),
        #[cfg(windows)]
        Engine::Fast => super::fast::stat_root(path, census),
        _ => {
            let _ = census;
            stat_path(path, false)
        }
    }
}

/// Opens a tree's root as `engine` opens an operand.
pub fn open_root(engine: Engine, path: &Path) -> io::Result<Folder> {
    super::raise_descriptor_limit();
    match engine {
        #[cfg(target_os = "linux")]
        Engine::Fast => {
            let fd = super::fast::open_folder_at(rustix::fs::CWD, path.as_os_str(), false)?;
            Ok(Folder(Inner::Fast(Some(fd))))
        }
        #[cfg(target_os = "macos")]
        Engine::Fast => Ok(Folder(Inner::Bulk(Some(super::fast::bulk_open(
            None,
            path.as_os_str(),
        )?)))),
        #[cfg(windows)]
        Engine::Fast => Ok(Folder(Inner::FastWindows(super::fast::Held::open(
            None,
            path.as_os_str(),
        )?))),
        _ => Ok(Folder(Inner::Reference(Shortened::new(path)?))),
    }
}

impl Folder {
    /// Opens the subfolder `name`.
    pub fn open(&self, name: &OsStr) -> io::Result<Folder> {
        match &self.0 {
            #[cfg(target_os = "linux")]
            Inner::Fast(fd) => {
                let fd = fd.as_ref().expect("a released folder opens nothing");
                Ok(Folder(Inner::Fast(Some(super::fast::open_folder_at(
                    fd, name, false,
                )?))))
            }
            #[cfg(target_os = "macos")]
            Inner::Bulk(fd) => {
                let fd = fd.as_ref().expect("a released folder opens nothing");
                Ok(Folder(Inner::Bulk(Some(super::fast::bulk_open(
                    Some(fd),
                    name,
                )?))))
            }
            #[cfg(windows)]
            Inner::FastWindows(held) => Ok(Folder(Inner::FastWindows(super::fast::Held::open(
                Some(held),
                name,
            )?))),
            Inner::Reference(path) => Ok(Folder(Inner::Reference(Shortened::new(
                &path.path().join(name),
            )?))),
        }
    }

    /// The folder's names in the order the engine's listing gives them; the listing
    /// ends after the error that cuts it short. The fast engine counts what its
    /// listing typed in `census`.
    // Only the fast engines on Linux and Windows count their calls.
    #[cfg_attr(not(any(target_os = "linux", windows)), allow(unused_variables))]
    pub fn names<'a>(
        &'a self,
        census: &'a Counters,
    ) -> Box<dyn Iterator<Item = io::Result<Named>> + 'a> {
        match &self.0 {
            #[cfg(target_os = "linux")]
            Inner::Fast(fd) => {
                let fd = fd.as_ref().expect("a released folder lists nothing");
                Box::new(super::fast::names(fd, census).map(|named| {
                    named.map(|(name, listed)| Named {
                        name,
                        listed: Some(listed),
                        fields: None,
                    })
                }))
            }
            #[cfg(target_os = "macos")]
            Inner::Bulk(fd) => {
                let fd = fd.as_ref().expect("a released folder lists nothing");
                let listing = super::fast::bulk_list(fd, census);
                let names = listing.entries.into_iter().map(|entry| {
                    Ok(Named {
                        name: entry.name,
                        listed: entry.listed,
                        fields: entry.fields,
                    })
                });
                Box::new(names.chain(listing.error.map(Err)))
            }
            #[cfg(windows)]
            Inner::FastWindows(held) => {
                // The whole folder is listed at once: the listing is one call chain.
                let (names, error) = held.names(census);
                let names = names.into_iter().map(|(name, listed)| {
                    Ok(Named {
                        name,
                        listed,
                        fields: None,
                    })
                });
                Box::new(names.chain(error.map(Err)))
            }
            Inner::Reference(path) => match fs::read_dir(path.path()) {
                Ok(reader) => Box::new(reader.map(|item| {
                    item.map(|dirent| Named {
                        listed: listed_inode(&dirent),
                        name: dirent.file_name(),
                        fields: None,
                    })
                })),
                Err(err) => Box::new(std::iter::once(Err(err))),
            },
        }
    }

    /// Stats one name in the folder as the engine does; the fast engine counts the
    /// call in `census`.
    // Only the fast engines on Linux and Windows count their calls.
    #[cfg_attr(not(any(target_os = "linux", windows)), allow(unused_variables))]
    pub fn stat(&self, name: &OsStr, census: &Counters) -> Result<StatFields, StatError> {
        match &self.0 {
            #[cfg(target_os = "linux")]
            Inner::Fast(fd) => {
                let fd = fd.as_ref().expect("a released folder stats nothing");
                super::fast::stat_at(fd, name, census)
            }
            #[cfg(target_os = "macos")]
            Inner::Bulk(fd) => {
                let fd = fd.as_ref().expect("a released folder stats nothing");
                super::fast::bulk_stat(Some(fd), name, census)
            }
            #[cfg(windows)]
            Inner::FastWindows(held) => held.stat(name, census),
            Inner::Reference(path) => stat_path(&path.path().join(name), false),
        }
    }

    /// A path naming this very folder while it is held, for calls that take only a
    /// path (inotify): `/proc/self/fd/N` for a folder held by descriptor on Linux,
    /// the folder's path for the reference's.
    pub fn own_path(&self) -> Option<PathBuf> {
        match &self.0 {
            #[cfg(target_os = "linux")]
            Inner::Fast(fd) => {
                use std::os::fd::AsRawFd;
                Some(format!("/proc/self/fd/{}", fd.as_ref()?.as_raw_fd()).into())
            }
            Inner::Reference(path) => Some(path.path().to_path_buf()),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// A listed entry's fields: those its listing gave, else a stat as the engine
    /// makes it.
    pub fn stat_named(&self, named: &Named, census: &Counters) -> Result<StatFields, StatError> {
        match &named.fields {
            Some(fields) => Ok(fields.clone()),
            None => self.stat(&named.name, census),
        }
    }

    /// The target of the symlink `name`.
    pub fn read_link(&self, name: &OsStr) -> io::Result<PathBuf> {
        match &self.0 {
            #[cfg(target_os = "linux")]
            Inner::Fast(Some(fd)) => read_link_at(fd, name),
            #[cfg(target_os = "macos")]
            Inner::Bulk(Some(fd)) => read_link_at(fd, name),
            #[cfg(target_os = "linux")]
            Inner::Fast(None) => panic!("a released folder reads nothing"),
            #[cfg(target_os = "macos")]
            Inner::Bulk(None) => panic!("a released folder reads nothing"),
            #[cfg(windows)]
            Inner::FastWindows(held) => fs::read_link(held.path_of(name)?),
            Inner::Reference(path) => fs::read_link(path.path().join(name)),
        }
    }

    /// Opens the file `name` for reading, never through a link.
    pub fn open_file(&self, name: &OsStr) -> io::Result<fs::File> {
        match &self.0 {
            #[cfg(target_os = "linux")]
            Inner::Fast(Some(fd)) => open_file_at(fd, name),
            #[cfg(target_os = "macos")]
            Inner::Bulk(Some(fd)) => open_file_at(fd, name),
            #[cfg(target_os = "linux")]
            Inner::Fast(None) => panic!("a released folder opens nothing"),
            #[cfg(target_os = "macos")]
            Inner::Bulk(None) => panic!("a released folder opens nothing"),
            #[cfg(windows)]
            Inner::FastWindows(held) => fs::File::open(held.path_of(name)?),
            Inner::Reference(path) => fs::File::open(path.path().join(name)),
        }
    }
}

/// Names taken from a folder's listing before their stats are spread over the
/// walk's pool: enough to keep every worker busy, few enough to hold.
pub const CHUNK: usize = 1024;

/// `work` done on every item on the walk's pool, the results in the items' order;
/// on this thread when there are few, or when the pool cannot start.
pub fn on_pool_in_order<T: Send, R: Send>(
    items: Vec<T>,
    work: impl Fn(T) -> R + Sync + Send,
) -> Vec<R> {
    super::map_on_pool(items, 64, work)
}

#[cfg(any(target_os = "linux", target_os = "macos"))]
fn read_link_at(fd: &std::os::fd::OwnedFd, name: &OsStr) -> io::Result<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let target = rustix::fs::readlinkat(fd, name, Vec::new())?;
    Ok(OsString::from_vec(target.into_bytes()).into())
}

#[cfg(any(target_os = "linux", target_os = "macos"))]
fn open_file_at(fd: &std::os::fd::OwnedFd, name: &OsStr) -> io::Result<fs::File> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(fd, name, flags, Mode::empty())?.into())
}

/// What [`depth_first`] holds per folder: one engine's folder, or several
/// engines' looks at the same folder.
pub trait Held: Sized {
    /// The subfolder `name` of this one.
    fn open(&self, name: &OsStr) -> Self;
    /// Gives up what the subfolders, once all open, no longer need.
    fn release(&mut self);
}

impl Held for io::Result<Folder> {
    fn open(&self, name: &OsStr) -> Self {
        match self {
            Ok(folder) => folder.open(name),
            Err(err) => Err(io::Error::new(err.kind(), "its folder could not be opened")),
        }
    }

    fn release(&mut self) {
        match self {
            #[cfg(target_os = "linux")]
            Ok(Folder(Inner::Fast(fd))) => *fd = None,
            #[cfg(target_os = "macos")]
            Ok(Folder(Inner::Bulk(fd))) => *fd = None,
            // A reference folder holds a descriptor only where its subfolders'
            // shortened paths start from it.
            _ => {}
        }
    }
}

impl<A: Held, B: Held> Held for (A, B) {
    fn open(&self, name: &OsStr) -> Self {
        (self.0.open(name), self.1.open(name))
    }

    fn release(&mut self) {
        self.0.release();
        self.1.release();
    }
}

/// Visits every folder at and below `root`, parents before their children: `visit`
/// gets each folder with its path relative to the root (empty for the root) and
/// returns the names of its subfolders to enter. A folder gives up its handle as
/// soon as its last subfolder is open, so a chain of any depth holds a bounded
/// number of descriptors, and any tree at most one per level.
pub fn depth_first<H: Held>(root: H, mut visit: impl FnMut(&H, &Path) -> Vec<OsString>) {
    let mut relative = PathBuf::new();
    let mut levels = vec![enter(root, &relative, &mut visit)];
    while let Some(level) = levels.last_mut() {
        match level.pending.pop() {
            Some(name) => {
                let held = level.held.open(&name);
                if level.pending.is_empty() {
                    level.held.release();
                }
                relative.push(&name);
                let below = enter(held, &relative, &mut visit);
                levels.push(below);
            }
            None => {
                levels.pop();
                relative.pop();
            }
        }
    }
}

/// A folder on the way down and the subfolders still to enter, last first.
struct Level<H> {
    held: H,
    pending: Vec<OsString>,
}

fn enter<H: Held>(
    held: H,
    relative: &Path,
    visit: &mut impl FnMut(&H, &Path) -> Vec<OsString>,
) -> Level<H> {
    let mut pending = visit(&held, relative);
    pending.reverse();
    Level { held, pending }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// Every path `depth_first` visits, and every entry's kind under each engine.
    fn visited(engine: Engine, root: &Path) -> Vec<(PathBuf, String)> {
        let census = Counters::default();
        let mut seen = Vec::new();
        depth_first(open_root(engine, root), |folder, relative| {
            let Ok(folder) = folder else {
                return Vec::new();
            };
            let mut below = Vec::new();
            for named in folder.names(&census) {
                let named = named.unwrap();
                let stat = folder.stat(&named.name, &census).unwrap();
                seen.push((relative.join(&named.name), format!("{:?}", stat.kind)));
                if stat.kind == super::super::FileKind::Dir {
                    below.push(named.name);
                }
            }
            below
        });
        seen.sort();
        seen
    }

    #[test]
    fn both_engines_visit_every_entry_once_in_a_chain_and_a_wide_folder() {
        let dir = tempfile::tempdir().unwrap();
        let mut chain = dir.path().to_path_buf();
        for level in 0..40 {
            chain.push(format!("c{level}"));
            std::fs::create_dir(&chain).unwrap();
            std::fs::write(chain.join("f"), b"x").unwrap();
        }
        for i in 0..19 {
            std::fs::create_dir_all(dir.path().join(format!("w/{i}/x"))).unwrap();
        }
        std::os::unix::fs::symlink("c0", dir.path().join("link")).unwrap();
        let fast = visited(Engine::Fast, dir.path());
        assert_eq!(fast.len(), 40 * 2 + 1 + 19 * 2 + 1);
        assert_eq!(fast, visited(Engine::Reference, dir.path()));
        assert!(fast.contains(&(PathBuf::from("link"), "Symlink".into())));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_chain_holds_few_descriptors_however_deep() {
        let dir = tempfile::tempdir().unwrap();
        let depth = 400;
        let chain: PathBuf = (0..depth).map(|_| "c").collect();
        std::fs::create_dir_all(dir.path().join(&chain)).unwrap();
        let open_now = || open_under(dir.path());
        let mut deepest = 0;
        let roots = (
            open_root(Engine::Fast, dir.path()),
            open_root(Engine::Reference, dir.path()),
        );
        depth_first(roots, |_, relative| {
            if relative.components().count() == depth {
                deepest = open_now();
                return Vec::new();
            }
            vec![OsString::from("c")]
        });
        assert!(
            deepest > 0 && deepest < 10,
            "{deepest} open under the tree at the bottom"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_comb_holds_at_most_one_descriptor_per_level() {
        // Each level holds four empty subfolders and the one that goes on.
        let dir = tempfile::tempdir().unwrap();
        let depth = 150;
        let mut level = dir.path().to_path_buf();
        for _ in 0..depth {
            for tooth in ["t1", "t2", "t3", "t4"] {
                std::fs::create_dir(level.join(tooth)).unwrap();
            }
            level.push("c");
            std::fs::create_dir(&level).unwrap();
        }
        let open_now = || open_under(dir.path());
        let mut most = 0;
        let roots = (
            open_root(Engine::Fast, dir.path()),
            open_root(Engine::Reference, dir.path()),
        );
        depth_first(roots, |(folder, _), _| {
            most = most.max(open_now());
            let Ok(folder) = folder else {
                return Vec::new();
            };
            let census = Counters::default();
            // The one that goes on first: its siblings wait while it is walked.
            let mut names: Vec<OsString> = folder.names(&census).map(|n| n.unwrap().name).collect();
            names.sort();
            names
        });
        assert!(
            most > depth && most <= depth + 10,
            "{most} open under the tree at most"
        );
    }

    /// Descriptors of this process that point into `tree`. Counting only these,
    /// not every open descriptor, keeps the bound exact while other tests of the
    /// process open files of their own.
    #[cfg(target_os = "linux")]
    fn open_under(tree: &Path) -> usize {
        let tree = tree.canonicalize().unwrap();
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
            .filter(|target| target.starts_with(&tree))
            .count()
    }
}
