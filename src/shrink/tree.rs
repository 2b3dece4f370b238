//! The private copy being reduced, and every change a trial makes to it, each with
//! its undo. Entries a trial does without are moved aside into a holding folder on
//! the same file system (one rename each, whatever their size) and moved back when
//! the difference goes with them; simplifications (a file cut short, xattrs
//! dropped, a folder of one child flattened) keep what they need to undo
//! themselves. A folder whose mode forbids the move is opened for it and given
//! its mode back, so the tree keeps the modes that may be the cause.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

/// One entry of the copy, by its path below the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Child {
    pub rel: PathBuf,
    /// A folder (not a link to one): something to descend into.
    pub is_dir: bool,
}

/// The copy and its holding folder.
pub struct WorkTree {
    pub root: PathBuf,
    held: PathBuf,
    made: usize,
}

/// Files above this allocated size are not cut short: undoing a cut keeps a copy.
const LARGEST_CUT: u64 = 64 << 20;
/// What "one block" is when a file is cut to one block.
pub const ONE_BLOCK: u64 = 4096;

impl WorkTree {
    /// `held` must be an empty folder on the same file system as `root`.
    pub fn new(root: PathBuf, held: PathBuf) -> WorkTree {
        WorkTree {
            root,
            held,
            made: 0,
        }
    }

    fn path(&self, rel: &Path) -> PathBuf {
        self.root.join(rel)
    }

    fn next_held(&mut self) -> PathBuf {
        self.made += 1;
        self.held.join(self.made.to_string())
    }

    /// A folder's entries, sorted by name.
    pub fn children(&self, rel: &Path) -> io::Result<Vec<Child>> {
        let mut children = Vec::new();
        for entry in fs::read_dir(self.path(rel))? {
            let entry = entry?;
            let is_dir = entry.file_type()?.is_dir();
            children.push(Child {
                rel: rel.join(entry.file_name()),
                is_dir,
            });
        }
        children.sort_by(|a, b| a.rel.cmp(&b.rel));
        Ok(children)
    }

    /// Every entry below the root, parents before their contents.
    pub fn all(&self) -> io::Result<Vec<Child>> {
        let mut all = Vec::new();
        let mut folders = vec![PathBuf::new()];
        while let Some(folder) = folders.pop() {
            for child in self.children(&folder)? {
                if child.is_dir {
                    folders.push(child.rel.clone());
                }
                all.push(child);
            }
        }
        Ok(all)
    }

    /// Moves `rels` aside; `Undo::apply` puts them back.
    pub fn hold(&mut self, rels: &[PathBuf]) -> io::Result<Undo> {
        let mut undo = Undo::default();
        for rel in rels {
            let aside = self.next_held();
            if let Err(err) = rename_in(&self.path(rel), &aside) {
                let _ = undo.apply();
                return Err(with_path(err, &self.path(rel)));
            }
            undo.steps.push(Step::Moved {
                from: aside,
                to: self.path(rel),
            });
        }
        Ok(undo)
    }

    /// Cuts each file of `rels` to at most `len` bytes, its mtime kept.
    pub fn cut(&mut self, rels: &[PathBuf], len: u64) -> io::Result<Undo> {
        let mut undo = Undo::default();
        for rel in rels {
            let path = self.path(rel);
            let kept = self.next_held();
            let result = (|| {
                let meta = fs::symlink_metadata(&path)?;
                fs::copy(&path, &kept)?;
                File::options().write(true).open(&path)?.set_len(len)?;
                set_mtime(&path, &meta)
            })();
            if let Err(err) = result {
                let _ = undo.apply();
                return Err(with_path(err, &path));
            }
            undo.steps.push(Step::Cut { kept, file: path });
        }
        Ok(undo)
    }

    /// Whether cutting this file to `len` bytes is worth a trial.
    pub fn cuttable(&self, rel: &Path, len: u64) -> bool {
        let Ok(meta) = fs::symlink_metadata(self.path(rel)) else {
            return false;
        };
        // A file with holes is left whole: putting it back would fill them in.
        let holes = allocated(&meta) + ONE_BLOCK < meta.len();
        meta.is_file() && meta.len() > len && allocated(&meta) <= LARGEST_CUT && !holes
    }

    /// Replaces the folder `rel`, which holds only `child`, by that child under
    /// the child's own name, in the folder's place. `None` when the parent already
    /// holds that name.
    pub fn flatten(&mut self, rel: &Path, child: &Path) -> io::Result<Option<Undo>> {
        let (Some(parent), Some(name)) = (rel.parent(), child.file_name()) else {
            return Ok(None);
        };
        let landing = self.path(&parent.join(name));
        if landing != self.path(rel) && fs::symlink_metadata(&landing).is_ok() {
            return Ok(None);
        }
        let child_aside = self.next_held();
        let folder_aside = self.next_held();
        rename_in(&self.path(child), &child_aside).map_err(|e| with_path(e, &self.path(child)))?;
        let mut undo = Undo::default();
        undo.steps.push(Step::Moved {
            from: child_aside.clone(),
            to: self.path(child),
        });
        if let Err(err) = rename_in(&self.path(rel), &folder_aside) {
            let _ = undo.apply();
            return Err(with_path(err, &self.path(rel)));
        }
        undo.steps.push(Step::Moved {
            from: folder_aside,
            to: self.path(rel),
        });
        if let Err(err) = rename_in(&child_aside, &landing) {
            let _ = undo.apply();
            return Err(with_path(err, &landing));
        }
        undo.steps.push(Step::Moved {
            from: landing,
            to: child_aside,
        });
        Ok(Some(undo))
    }

    /// Renames each `(from, to)` pair, both paths below the root.
    pub fn rename(&mut self, renames: &[(PathBuf, PathBuf)]) -> io::Result<Undo> {
        let mut undo = Undo::default();
        for (from, to) in renames {
            if let Err(err) = rename_in(&self.path(from), &self.path(to)) {
                let _ = undo.apply();
                return Err(with_path(err, &self.path(from)));
            }
            undo.steps.push(Step::Moved {
                from: self.path(to),
                to: self.path(from),
            });
        }
        Ok(undo)
    }

    /// Removes every xattr of each entry of `rels`, keeping them to put back.
    #[cfg(unix)]
    pub fn drop_xattrs(&mut self, rels: &[PathBuf]) -> io::Result<Undo> {
        let mut undo = Undo::default();
        for rel in rels {
            let path = self.path(rel);
            let saved =
                crate::fixtures::describe::xattrs_of(&path).map_err(|e| with_path(e, &path))?;
            // Recorded first: a removal that fails half way puts back all of them.
            undo.steps.push(Step::Xattrs {
                path: path.clone(),
                saved: saved.clone(),
            });
            for (name, _) in &saved {
                if let Err(err) = rustix::fs::lremovexattr(&path, name.as_slice()) {
                    let _ = undo.apply();
                    return Err(with_path(err.into(), &path));
                }
            }
        }
        Ok(undo)
    }

    /// Whether the entry has xattrs to drop.
    #[cfg(unix)]
    pub fn has_xattrs(&self, rel: &Path) -> bool {
        crate::fixtures::describe::xattrs_of(&self.path(rel)).is_ok_and(|x| !x.is_empty())
    }

    /// Empties the holding folder of what was given up for good.
    pub fn forget(&self, undo: Undo) {
        for step in undo.steps {
            let gone = match step {
                Step::Moved { from, .. } => from,
                Step::Cut { kept, .. } => kept,
                Step::Xattrs { .. } => continue,
            };
            if !gone.starts_with(&self.held) {
                continue;
            }
            // remove_tree takes folders only; a held file, link or FIFO goes by
            // itself.
            let is_folder = fs::symlink_metadata(&gone).is_ok_and(|m| m.is_dir());
            let _ = match is_folder {
                true => crate::cleanup::remove_tree(&gone),
                false => fs::remove_file(&gone),
            };
        }
    }
}

/// What a change did, to be undone in reverse order.
#[derive(Default)]
pub struct Undo {
    steps: Vec<Step>,
}

enum Step {
    /// `from` goes back to `to`.
    Moved { from: PathBuf, to: PathBuf },
    /// `file` gets its contents back from `kept`.
    Cut { kept: PathBuf, file: PathBuf },
    /// `path` gets these xattrs back.
    #[cfg_attr(not(unix), allow(dead_code))]
    Xattrs {
        path: PathBuf,
        saved: Vec<(Vec<u8>, Vec<u8>)>,
    },
}

impl Undo {
    /// Puts everything back; the first failure is returned, after trying the rest.
    pub fn apply(mut self) -> io::Result<()> {
        let mut first = Ok(());
        while let Some(step) = self.steps.pop() {
            let done = match &step {
                Step::Moved { from, to } => rename_in(from, to).map_err(|e| with_path(e, to)),
                Step::Cut { kept, file } => uncut(kept, file).map_err(|e| with_path(e, file)),
                Step::Xattrs { path, saved } => put_xattrs(path, saved),
            };
            if first.is_ok() {
                first = done;
            }
        }
        first
    }
}

#[cfg(unix)]
fn put_xattrs(path: &Path, saved: &[(Vec<u8>, Vec<u8>)]) -> io::Result<()> {
    for (name, value) in saved {
        let flags = rustix::fs::XattrFlags::empty();
        rustix::fs::lsetxattr(path, name.as_slice(), value, flags)
            .map_err(|e| with_path(e.into(), path))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn put_xattrs(_path: &Path, _saved: &[(Vec<u8>, Vec<u8>)]) -> io::Result<()> {
    Ok(())
}

fn uncut(kept: &Path, file: &Path) -> io::Result<()> {
    let meta = fs::symlink_metadata(file)?;
    let mut from = File::open(kept)?;
    let mut to = File::options().write(true).truncate(true).open(file)?;
    io::copy(&mut from, &mut to)?;
    drop(to);
    set_mtime(file, &meta)?;
    fs::remove_file(kept)
}

fn set_mtime(path: &Path, before: &fs::Metadata) -> io::Result<()> {
    let modified = before.modified()?;
    File::options()
        .write(true)
        .open(path)?
        .set_times(fs::FileTimes::new().set_modified(modified))
}

fn with_path(err: io::Error, path: &Path) -> io::Error {
    io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}

#[cfg(unix)]
fn allocated(meta: &fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.blocks() * 512
}

#[cfg(not(unix))]
fn allocated(meta: &fs::Metadata) -> u64 {
    meta.len()
}

/// Renames `from` to `to`, the folders on both sides keeping their mtimes (a
/// folder's time may be what a difference hangs on, and a trial that moved
/// something through it must leave it as it was). Where a mode forbids the move
/// (not as root), the folders on both sides, and a moved folder itself (whose
/// `..` changes), are opened for it and given their modes back.
fn rename_in(from: &Path, to: &Path) -> io::Result<()> {
    let parents: Vec<&Path> = [from.parent(), to.parent()].into_iter().flatten().collect();
    let times: Vec<(&Path, Option<std::time::SystemTime>)> = (parents.iter())
        .map(|p| (*p, fs::metadata(p).and_then(|m| m.modified()).ok()))
        .collect();
    let renamed = match fs::rename(from, to) {
        Err(err) if err.kind() == io::ErrorKind::PermissionDenied => {
            with_folders_open(&parents, from, to, || fs::rename(from, to))
        }
        other => other,
    };
    for (parent, time) in times {
        if let Some(time) = time {
            let _ = set_folder_mtime(parent, time);
        }
    }
    renamed
}

/// Sets a folder's mtime by its path, its atime left as it is: the folder need
/// not be readable, only owned (or root's).
#[cfg(unix)]
fn set_folder_mtime(folder: &Path, time: std::time::SystemTime) -> io::Result<()> {
    use rustix::fs::{Timespec, Timestamps, UTIME_OMIT};
    let since = time.duration_since(std::time::UNIX_EPOCH);
    let (tv_sec, tv_nsec) = match since {
        Ok(after) => (after.as_secs() as i64, i64::from(after.subsec_nanos())),
        Err(before) => {
            let d = before.duration();
            let nanos = i64::from(d.subsec_nanos());
            match nanos {
                0 => (-(d.as_secs() as i64), 0),
                _ => (-(d.as_secs() as i64) - 1, 1_000_000_000 - nanos),
            }
        }
    };
    let times = Timestamps {
        last_access: Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_OMIT,
        },
        last_modification: Timespec {
            tv_sec,
            tv_nsec: tv_nsec as _,
        },
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        folder,
        &times,
        rustix::fs::AtFlags::empty(),
    )?;
    Ok(())
}

/// Windows opens no folder as a file here: its folders keep the time the move gives.
#[cfg(not(unix))]
fn set_folder_mtime(_folder: &Path, _time: std::time::SystemTime) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn with_folders_open(
    parents: &[&Path],
    from: &Path,
    to: &Path,
    rename: impl FnOnce() -> io::Result<()>,
) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode_of =
        |p: &Path| fs::symlink_metadata(p).map(|m| (m.is_dir(), m.permissions().mode() & 0o7777));
    let mut opened: Vec<(PathBuf, u32)> = Vec::new();
    for parent in parents {
        let (_, mode) = mode_of(parent)?;
        if mode & 0o300 != 0o300 && !opened.iter().any(|(p, _)| p == parent) {
            fs::set_permissions(parent, fs::Permissions::from_mode(mode | 0o300))?;
            opened.push((parent.to_path_buf(), mode));
        }
    }
    let moved = match mode_of(from)? {
        (true, mode) if mode & 0o200 == 0 => {
            fs::set_permissions(from, fs::Permissions::from_mode(mode | 0o200))?;
            Some(mode)
        }
        _ => None,
    };
    let renamed = rename();
    if let Some(mode) = moved {
        let now = if renamed.is_ok() { to } else { from };
        fs::set_permissions(now, fs::Permissions::from_mode(mode))?;
    }
    for (parent, mode) in opened.into_iter().rev() {
        fs::set_permissions(&parent, fs::Permissions::from_mode(mode))?;
    }
    renamed
}

#[cfg(not(unix))]
fn with_folders_open(
    _parents: &[&Path],
    _from: &Path,
    _to: &Path,
    rename: impl FnOnce() -> io::Result<()>,
) -> io::Result<()> {
    rename()
}

/// A short name that `folder` does not hold yet: `a` … `z`, then `a0`, `a1`, ….
pub fn short_name(taken: &[OsString], index: usize) -> OsString {
    let letter = (b'a' + (index % 26) as u8) as char;
    let mut name = letter.to_string();
    if index >= 26 {
        name.push_str(&(index / 26 - 1).to_string());
    }
    let name = OsString::from(name);
    if taken.contains(&name) {
        return short_name(taken, index + 26);
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, WorkTree) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let held = dir.path().join("held");
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::write(root.join("a/b/f"), vec![7u8; 10_000]).unwrap();
        fs::write(root.join("g"), "x").unwrap();
        fs::create_dir(&held).unwrap();
        (dir, WorkTree::new(root, held))
    }

    #[test]
    fn held_entries_come_back_where_they_were() {
        let (_dir, mut work) = tree();
        let undo = work.hold(&["a".into(), "g".into()]).unwrap();
        assert!(work.children(Path::new("")).unwrap().is_empty());
        undo.apply().unwrap();
        let names: Vec<_> = work.all().unwrap().into_iter().map(|c| c.rel).collect();
        assert_eq!(
            names,
            [PathBuf::from("a"), "g".into(), "a/b".into(), "a/b/f".into()]
        );
    }

    #[test]
    fn a_cut_file_gets_its_contents_and_mtime_back() {
        let (_dir, mut work) = tree();
        let f = PathBuf::from("a/b/f");
        let before = fs::metadata(work.path(&f)).unwrap().modified().unwrap();
        assert!(work.cuttable(&f, 0) && !work.cuttable(Path::new("g"), 1));
        let undo = work.cut(std::slice::from_ref(&f), 0).unwrap();
        assert_eq!(fs::metadata(work.path(&f)).unwrap().len(), 0);
        assert_eq!(
            fs::metadata(work.path(&f)).unwrap().modified().unwrap(),
            before
        );
        undo.apply().unwrap();
        assert_eq!(fs::read(work.path(&f)).unwrap(), vec![7u8; 10_000]);
        assert_eq!(
            fs::metadata(work.path(&f)).unwrap().modified().unwrap(),
            before
        );
    }

    #[test]
    fn flattening_puts_the_only_child_in_its_folders_place_and_back() {
        let (_dir, mut work) = tree();
        let undo = work
            .flatten(Path::new("a/b"), Path::new("a/b/f"))
            .unwrap()
            .unwrap();
        assert!(work.path(Path::new("a/f")).is_file());
        assert!(!work.path(Path::new("a/b")).exists());
        undo.apply().unwrap();
        assert!(work.path(Path::new("a/b/f")).is_file());
        assert!(!work.path(Path::new("a/f")).exists());
    }

    #[cfg(unix)]
    #[test]
    fn dropped_xattrs_come_back() {
        let (_dir, mut work) = tree();
        let g = work.path(Path::new("g"));
        if rustix::fs::lsetxattr(&g, "user.note", b"kept", rustix::fs::XattrFlags::empty()).is_err()
        {
            eprintln!("SKIPPED dropped_xattrs_come_back: the temp folder's file system refuses user xattrs");
            assert!(std::env::var_os("EQCHECK_REQUIRE_ALL").is_none_or(|v| v != "1"));
            return;
        }
        assert!(work.has_xattrs(Path::new("g")));
        let undo = work.drop_xattrs(&["g".into()]).unwrap();
        assert!(!work.has_xattrs(Path::new("g")));
        undo.apply().unwrap();
        let back = crate::fixtures::describe::xattrs_of(&g).unwrap();
        assert_eq!(back, [(b"user.note".to_vec(), b"kept".to_vec())]);
    }

    #[test]
    fn short_names_skip_the_taken_ones() {
        assert_eq!(short_name(&[], 0), "a");
        assert_eq!(short_name(&["a".into()], 0), "a0");
        assert_eq!(short_name(&[], 27), "b0");
    }
}
