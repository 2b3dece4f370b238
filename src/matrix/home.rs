//! The arm's `HOME`: an empty folder at `CASE_FOLDER/home`, mode 0700 and owned by
//! the arm user, that no run finds anything of another run's in. The folder a run
//! left is kept for the next when it is still exactly as made (empty, same mode and
//! owner, no extended attributes), and made anew otherwise. Keeping it is what
//! makes it cheap: a folder made per run costs a new inode, and on ext4 without a
//! journal each new inode is found by a scan past every inode freed in the last
//! minutes, about half a millisecond each once a matrix has run a few hundred arms.

use std::path::{Path, PathBuf};

use super::exec::{give_to, ArmEnvironment, ArmUser};
use crate::cleanup;

/// The mode a `HOME` is made with, whatever eqcheck's umask: the mode `mktemp -d`
/// gives the folder a repro line makes.
#[cfg(unix)]
const MODE: rustix::fs::Mode = rustix::fs::Mode::RWXU;

/// An empty `HOME` at `dir/home`, as made, and the environment that points the arm
/// at it; `Err` says why not, or that eqcheck is being interrupted.
pub fn fresh_home(env: &ArmEnvironment, dir: &Path) -> Result<(ArmEnvironment, PathBuf), String> {
    let home = dir.join("home");
    if cleanup::interrupted() {
        return Err("interrupted".into());
    }
    if !as_made(&home, &env.user) {
        if let Err(err) = make(&home, &env.user) {
            return Err(format!("cannot make {}: {err}", home.display()));
        }
    }
    Ok((env.with_home(&home), home))
}

/// Makes `home` anew: whatever is there removed, then an empty folder with its
/// mode and owner.
fn make(home: &Path, user: &ArmUser) -> std::io::Result<()> {
    cleanup::remove_tree(home)?;
    std::fs::create_dir(home)?;
    #[cfg(unix)]
    rustix::fs::chmod(home, MODE)?;
    give_to(home, user)
}

/// Whether the folder at `home` is one `make` made for `user` and no run has
/// changed since: a folder (not a link to one), with the mode and owner it was
/// given, no names in it and no extended attributes. Anything else, or any doubt,
/// is `false`, and the folder is made anew.
#[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
fn as_made(home: &Path, user: &ArmUser) -> bool {
    use rustix::fs::{FileType, Mode};
    let Ok(stat) = rustix::fs::lstat(home) else {
        return false;
    };
    let (uid, gid) = owner(user);
    // The permission bits, setuid, setgid and sticky included; not the type.
    let mode = Mode::from_raw_mode(stat.st_mode);
    FileType::from_raw_mode(stat.st_mode) == FileType::Directory
        && mode == MODE
        && stat.st_uid == uid
        && stat.st_gid == gid
        && matches!(rustix::fs::llistxattr_query(home), Ok(0))
        && std::fs::read_dir(home).is_ok_and(|mut names| names.next().is_none())
}

/// Elsewhere the folder is made anew for every run: there is no cheap way here to
/// tell it unchanged.
#[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
fn as_made(_home: &Path, _user: &ArmUser) -> bool {
    false
}

/// Who owns a `HOME` made for `user`: the arm user when eqcheck gives it one,
/// otherwise eqcheck itself.
#[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
fn owner(user: &ArmUser) -> (u32, u32) {
    match user {
        ArmUser::Unprivileged { uid, gid, .. } => (*uid, *gid),
        ArmUser::Invoker { .. } | ArmUser::Root => (
            rustix::process::geteuid().as_raw(),
            rustix::process::getegid().as_raw(),
        ),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests;
