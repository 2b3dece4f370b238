//! Removing a tree whatever its folders' modes and however deep it goes, and
//! opening a folder to other users: what the cleanup does to the folders it
//! registered, and what other modules use on trees of their own.

use std::io;
use std::path::Path;

/// Removes a tree even where its folders deny the owner writing or searching
/// (mode 000, 444, 555), or where it is deeper than PATH_MAX or the descriptor
/// limit allows `remove_dir_all` to go.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => return Ok(()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(_) => {}
    }
    match remove_what_is_left(path) {
        // Gone is what was wanted, but only the tree itself being gone says so: a
        // folder inside that vanished midway may leave the rest in place.
        Err(err) if err.kind() == io::ErrorKind::NotFound && path.symlink_metadata().is_err() => {
            Ok(())
        }
        other => other,
    }
}

/// One folder open at a time: the removal goes down by name and back up through
/// `..` (checked to be the folder it came from), giving each folder to its owner
/// before emptying it, so neither a locked folder, PATH_MAX nor the descriptor
/// limit stops it. `remove_dir_all` holds a descriptor per level. What vanishes
/// meanwhile (another removal of the same tree) is taken as removed.
#[cfg(unix)]
fn remove_what_is_left(path: &Path) -> io::Result<()> {
    use rustix::fs::{self as rfs, AtFlags, CWD};

    /// A folder on the way down: its name in its parent, who it is, and the
    /// subfolders still to remove.
    struct Level {
        name: std::ffi::OsString,
        identity: crate::walk::Identity,
        subfolders: Vec<std::ffi::OsString>,
    }
    let Some(mut fd) = open_to_empty(CWD, path.as_os_str())? else {
        return Ok(());
    };
    let mut levels = vec![Level {
        name: Default::default(),
        identity: identity(&fd)?,
        subfolders: unlink_all_but_subfolders(&fd)?,
    }];
    loop {
        let top = levels
            .last_mut()
            .expect("the top level stays until the end");
        if let Some(name) = top.subfolders.pop() {
            if let Some(child) = open_to_empty(&fd, &name)? {
                levels.push(Level {
                    name,
                    identity: identity(&child)?,
                    subfolders: unlink_all_but_subfolders(&child)?,
                });
                fd = child;
            }
            continue;
        }
        let emptied = levels.pop().expect("checked above");
        let Some(parent) = levels.last() else {
            break;
        };
        let up = rfs::openat(&fd, "..", folder_flags(), rfs::Mode::empty())?;
        if identity(&up)? != parent.identity {
            let moved = format!("{}: moved while it was being removed", path.display());
            return Err(io::Error::other(moved));
        }
        gone_is_fine(rfs::unlinkat(&up, &emptied.name, AtFlags::REMOVEDIR))?;
        fd = up;
    }
    drop(fd);
    std::fs::remove_dir(path)
}

#[cfg(unix)]
fn folder_flags() -> rustix::fs::OFlags {
    use rustix::fs::OFlags;
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Opens a folder (never through a symlink) and gives its owner full rights on it,
/// through the descriptor, so its entries can be unlinked; `None` when it is gone.
/// A folder its owner may not read gets the rights by name first, the one step
/// where a folder swapped for a link meanwhile would pass them on.
#[cfg(unix)]
fn open_to_empty<Fd: std::os::fd::AsFd>(
    parent: Fd,
    name: &std::ffi::OsStr,
) -> io::Result<Option<std::os::fd::OwnedFd>> {
    use rustix::fs::{self as rfs, AtFlags, Mode};
    let owner_rwx = Mode::from_raw_mode(0o700);
    let opened = match rfs::openat(&parent, name, folder_flags(), Mode::empty()) {
        Err(rustix::io::Errno::ACCESS) => {
            let _ = rfs::chmodat(&parent, name, owner_rwx, AtFlags::empty());
            rfs::openat(&parent, name, folder_flags(), Mode::empty())
        }
        other => other,
    };
    match opened {
        Ok(fd) => {
            let _ = rfs::fchmod(&fd, owner_rwx);
            Ok(Some(fd))
        }
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// What another removal took first counts as removed.
#[cfg(unix)]
fn gone_is_fine(result: rustix::io::Result<()>) -> io::Result<()> {
    match result {
        Err(rustix::io::Errno::NOENT) => Ok(()),
        other => other.map_err(io::Error::from),
    }
}

#[cfg(unix)]
fn identity(fd: &std::os::fd::OwnedFd) -> io::Result<crate::walk::Identity> {
    let stat = rustix::fs::fstat(fd)?;
    Ok((stat.st_dev as u64, stat.st_ino as u64))
}

/// Unlinks everything in the folder but its subfolders, and names those.
#[cfg(unix)]
fn unlink_all_but_subfolders(fd: &std::os::fd::OwnedFd) -> io::Result<Vec<std::ffi::OsString>> {
    use rustix::fs::{self as rfs, AtFlags, FileType};
    use std::os::unix::ffi::OsStrExt;

    let mut listed = Vec::new();
    for entry in rfs::Dir::read_from(fd)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            let name = std::ffi::OsStr::from_bytes(name).to_os_string();
            listed.push((name, entry.file_type()));
        }
    }
    let mut subfolders = Vec::new();
    for (name, mut kind) in listed {
        if kind == FileType::Unknown {
            match rfs::statat(fd, &name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => kind = FileType::from_raw_mode(stat.st_mode),
                Err(rustix::io::Errno::NOENT) => continue,
                Err(err) => return Err(err.into()),
            }
        }
        if kind == FileType::Directory {
            subfolders.push(name);
        } else {
            gone_is_fine(rfs::unlinkat(fd, &name, AtFlags::empty()))?;
        }
    }
    Ok(subfolders)
}

/// Elsewhere: permissions are opened top-down, then everything goes.
#[cfg(not(unix))]
fn remove_what_is_left(path: &Path) -> io::Result<()> {
    open_up(path);
    std::fs::remove_dir_all(path)
}

/// Gives the owner full rights on every folder below `path`, top-down so that each
/// folder is searchable before its children are visited.
#[cfg(not(unix))]
fn open_up(path: &Path) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = set_owner_rwx(path);
    if let Ok(children) = std::fs::read_dir(path) {
        for child in children.flatten() {
            open_up(&child.path());
        }
    }
}

#[cfg(not(unix))]
fn set_owner_rwx(path: &Path) -> io::Result<()> {
    let mut permissions = std::fs::metadata(path)?.permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(path, permissions)
}

/// Mode 0755, whatever the umask, for what eqcheck makes that the arm user must
/// reach (copies of programs, built programs): root-owned (as eqcheck is when it
/// makes them), any user may enter or run it, none but root may change it.
#[cfg(unix)]
pub fn open_to_others(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
pub fn open_to_others(_path: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn locked_folders_are_removed_too() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("t");
        for sub in ["locked/inner", "readonly/inner"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
            std::fs::write(root.join(sub).join("f"), b"x").unwrap();
        }
        std::fs::set_permissions(root.join("locked"), std::fs::Permissions::from_mode(0o000))
            .unwrap();
        std::fs::set_permissions(
            root.join("readonly"),
            std::fs::Permissions::from_mode(0o444),
        )
        .unwrap();
        remove_tree(&root).unwrap();
        assert!(!root.exists());
    }
}
