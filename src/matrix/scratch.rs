//! The run's own temp folder: the arms' output and HOMEs, and copies of arm
//! programs the arm user could not reach where they are. Removed at the end of the
//! run or on interrupt.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::arm::Arm;
use super::exec::{self, ArmUser};
use super::MatrixError;
use crate::cleanup;

/// The run's own temp folder (arm output, the arms' HOME), removed at the end or on
/// interrupt.
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    pub fn new() -> Result<Scratch, MatrixError> {
        let dir = tempfile::Builder::new()
            .prefix("eqc-run-")
            .tempdir()
            .map_err(MatrixError::Scratch)?
            .keep();
        if !cleanup::register_folder(&dir) {
            let interrupted = std::io::Error::new(std::io::ErrorKind::Interrupted, "interrupted");
            return Err(MatrixError::Scratch(interrupted));
        }
        Ok(Scratch(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The arm as it will run. When another user runs the arms, a program that
    /// user may not reach or run where it is (eqcheck's own binary in a build
    /// folder, a walker in root's home) is copied into this folder, root-owned and
    /// mode 0755, if it is one regular file, in a subfolder named after the
    /// original's path: two programs of one file name do not meet, and two arms of
    /// one program (`--self-check`) run one copy. Anything else runs from where it
    /// is, and the arm says why it cannot start.
    pub fn reachable_arm(&self, arm: &Arm, user: &ArmUser) -> Result<Arm, MatrixError> {
        let program = Path::new(&arm.command[0]);
        // A symlink the user may pass can still lead into a folder they may not.
        let unreachable = || {
            let target = std::fs::canonicalize(program);
            exec::blocked_for(program, user, true).is_some()
                || target.is_ok_and(|t| exec::blocked_for(&t, user, true).is_some())
        };
        let copy_it = matches!(user, ArmUser::Unprivileged { .. })
            && (arm.is_eqcheck || unreachable())
            && program.is_file();
        if !copy_it {
            return Ok(arm.clone());
        }
        if let Some(mount) = noexec_mount(&self.0) {
            return Err(MatrixError::NoExec {
                folder: self.0.clone(),
                mount,
            });
        }
        let digest = Sha256::digest(program.as_os_str().as_encoded_bytes());
        let short: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        let folder = self.0.join(format!("program-{short}"));
        let copy = folder.join(program.file_name().unwrap_or("program".as_ref()));
        if copy.exists() {
            return Ok(copied(arm, &copy));
        }
        // The run's umask is not pinned yet: set each mode outright.
        let made = std::fs::create_dir(&folder)
            .and_then(|()| crate::cleanup::open_to_others(&folder))
            .and_then(|()| std::fs::copy(program, &copy))
            .and_then(|_| crate::cleanup::open_to_others(&copy));
        made.map_err(|source| {
            // A copy cut short holds room the message is to measure.
            let _ = std::fs::remove_file(&copy);
            MatrixError::ForUser {
                user: user.describe(),
                doing: copying(program, &copy, &source),
                source,
            }
        })?;
        Ok(copied(arm, &copy))
    }

    /// Lets the arm user through the scratch folder to its HOME and binary.
    pub fn open_to_arms(&self, user: &ArmUser) -> Result<(), MatrixError> {
        crate::cleanup::open_to_others(&self.0).map_err(|source| MatrixError::ForUser {
            user: user.describe(),
            doing: format!("opening {} to them", self.0.display()),
            source,
        })?;
        match exec::blocked_for(&self.0, user, true) {
            Some((folder, mode)) => Err(MatrixError::TempUnreachable {
                user: user.describe(),
                folder,
                mode,
            }),
            None => Ok(()),
        }
    }
}

/// Where `folder`'s file system is mounted, when it is mounted `noexec`: a copy of
/// an arm's program there cannot run. (Linux: macOS's statvfs has no such flag.)
#[cfg(target_os = "linux")]
fn noexec_mount(folder: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let flags = rustix::fs::statvfs(folder).ok()?.f_flag;
    if !flags.contains(rustix::fs::StatVfsMountFlags::NOEXEC) {
        return None;
    }
    // The mount point: the highest folder on the way up on the same device.
    let device = std::fs::metadata(folder).ok()?.dev();
    let mut mount = folder.to_path_buf();
    for up in folder.ancestors().skip(1) {
        match std::fs::metadata(up) {
            Ok(meta) if meta.dev() == device => mount = up.to_path_buf(),
            _ => break,
        }
    }
    Some(mount)
}

#[cfg(not(target_os = "linux"))]
fn noexec_mount(_folder: &Path) -> Option<PathBuf> {
    None
}

/// What copying the program for the arm user was, for its error: the paths, and
/// when the copy ran out of room, the program's size against the room there was.
fn copying(program: &Path, copy: &Path, err: &std::io::Error) -> String {
    use crate::fixtures::room::{free_in, size_text};
    let doing = format!("copying {} to {}", program.display(), copy.display());
    let full = err.kind() == std::io::ErrorKind::StorageFull;
    let size = std::fs::metadata(program).map(|m| m.len());
    match (full, size, copy.parent().and_then(free_in)) {
        (true, Ok(size), Some(free)) => format!(
            "{doing} ({}, with {} free there; set TMPDIR to a roomier folder)",
            size_text(size),
            size_text(free.bytes)
        ),
        _ => doing,
    }
}

/// The arm with its program replaced by `copy`, naming the original.
fn copied(arm: &Arm, copy: &Path) -> Arm {
    let mut command = arm.command.clone();
    let original = std::mem::replace(&mut command[0], copy.to_string_lossy().into_owned());
    Arm {
        command,
        copied_from: Some(original.into()),
        ..arm.clone()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = cleanup::remove_registered_folder(&self.0);
    }
}
