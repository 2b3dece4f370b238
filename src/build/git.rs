//! The git commands a build from a revision needs: the repository's top, the
//! commit a revision names, and a temporary detached worktree that is removed
//! again on every way out (done, failed, interrupted), its entry in the repository
//! included.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::BuildError;
use crate::cleanup;

/// Runs git in `folder` and gives its stdout, trimmed; `Err(stderr)` when it
/// fails.
fn git(folder: &Path, args: &[&std::ffi::OsStr]) -> Result<Result<String, String>, BuildError> {
    let output = Command::new("git")
        .args(args)
        .current_dir(folder)
        .stdin(Stdio::null())
        .output()
        .map_err(BuildError::NoGit)?;
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).trim().to_string();
    Ok(match output.status.success() {
        true => Ok(text(&output.stdout)),
        false => Err(text(&output.stderr)),
    })
}

/// The top folder of the repository holding `folder`.
pub(super) fn top(folder: &Path) -> Result<PathBuf, BuildError> {
    match git(folder, &["rev-parse".as_ref(), "--show-toplevel".as_ref()])? {
        Ok(top) if !top.is_empty() => Ok(PathBuf::from(top)),
        Ok(_) => Err(BuildError::NotARepository {
            detail: "git names no top folder (a bare repository?)".into(),
        }),
        Err(detail) => Err(BuildError::NotARepository { detail }),
    }
}

/// The full hash of the commit `rev` names. `--end-of-options` keeps a revision
/// from being read as an option, whatever it starts with.
pub(super) fn commit(top: &Path, rev: &str) -> Result<String, BuildError> {
    let spec = format!("{rev}^{{commit}}");
    let args = ["rev-parse", "--verify", "--quiet", "--end-of-options"];
    let mut args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
    args.push(spec.as_ref());
    match git(top, &args)? {
        Ok(commit) if !commit.is_empty() => Ok(commit),
        _ => Err(BuildError::NoCommit {
            rev: rev.to_string(),
            top: top.to_path_buf(),
        }),
    }
}

/// A detached checkout of one commit in a temporary folder.
pub(super) struct Worktree {
    top: PathBuf,
    /// The temporary folder holding the checkout; removed with it.
    temp: PathBuf,
    path: PathBuf,
    /// The command that removes it on interrupt, registered with `cleanup`.
    undo: Option<u64>,
    removed: bool,
}

impl Worktree {
    /// Checks `commit` out, detached, into a fresh temporary folder. Worktrees
    /// whose folders are gone (a run killed outright) are pruned first.
    pub fn add(top: &Path, commit: &str) -> Result<Worktree, BuildError> {
        let _ = git(top, &["worktree".as_ref(), "prune".as_ref()])?;
        let temp = tempfile::Builder::new()
            .prefix("eqc-build-")
            .tempdir()
            .map_err(BuildError::Temp)?
            .keep();
        if !cleanup::register_folder(&temp) {
            return Err(BuildError::Interrupted);
        }
        // Named after the repository: a build may print or use its folder's name.
        let name = top.file_name().unwrap_or("source".as_ref());
        let path = temp.join(name);
        let mut worktree = Worktree {
            top: top.to_path_buf(),
            temp,
            path,
            undo: None,
            removed: false,
        };
        // Registered before it exists: an interrupt while git writes it still
        // removes what git made.
        worktree.undo = cleanup::register_undo(top, worktree.remove_argv());
        let args = [
            "worktree".as_ref(),
            "add".as_ref(),
            "--detach".as_ref(),
            worktree.path.as_os_str(),
            commit.as_ref(),
        ];
        if let Err(detail) = git(top, &args)? {
            return Err(BuildError::Git {
                what: format!(
                    "git worktree add --detach {} {commit}",
                    worktree.path.display()
                ),
                folder: top.to_path_buf(),
                detail,
            });
        }
        Ok(worktree)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn remove_argv(&self) -> Vec<OsString> {
        let words = ["git", "worktree", "remove", "--force"];
        let mut argv: Vec<OsString> = words.iter().map(OsString::from).collect();
        argv.push(self.path.clone().into_os_string());
        argv
    }

    /// Removes the checkout and its entry in the repository, and says when git
    /// could not; dropping a worktree removes it too, quietly.
    pub fn remove(mut self) -> Result<(), BuildError> {
        self.removed = true;
        self.clean_up()
    }

    fn clean_up(&mut self) -> Result<(), BuildError> {
        let argv = self.remove_argv();
        let args: Vec<&std::ffi::OsStr> = argv[1..].iter().map(|a| a.as_os_str()).collect();
        // What git leaves (a checkout it refused to remove) goes with the temp
        // folder, and prune then forgets an entry whose folder is gone: either way
        // the worktree is gone once the folder is.
        let _ = git(&self.top, &args);
        let removed = cleanup::remove_registered_folder(&self.temp);
        let _ = git(&self.top, &["worktree".as_ref(), "prune".as_ref()]);
        if let Some(id) = self.undo.take() {
            cleanup::forget_undo(id);
        }
        removed.map_err(|source| BuildError::RemoveWorktree {
            path: self.path.clone(),
            source,
        })
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        if !self.removed {
            let _ = self.clean_up();
        }
    }
}
