//! A program built from source, for `--ref-rev REV`: the revision resolved to its
//! commit in the repository holding the working folder, checked out into a
//! temporary git worktree, built there with the project's build command, and the
//! built file copied into the user's build cache, keyed by the commit and the
//! build, so that a second run builds nothing. The candidate beside it may be the
//! same program built from the working tree as it is (never cached: it changes
//! under the user's hands). This module takes plain values and never sees the
//! command line; what it cannot find before building is a usage error, what fails
//! while building is the harness's ([`BuildError::is_usage`]).

mod cache;
mod git;
mod run;

use std::path::{Path, PathBuf};

use crate::outcome::BuiltFrom;

pub use run::SHOWN_LINES;

/// `[build] command` when eqcheck.toml does not say.
pub const DEFAULT_COMMAND: &str = "cargo build --release";

/// What a run asks to build: settled (and checked) when the options are resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The revision as given.
    pub rev: String,
    /// The build command, split shell-word style; it runs at the repository's top.
    pub command: Vec<String>,
    /// Where the build leaves the program: a path from the repository's top
    /// (`[build] program`), or none to take the candidate program's path within
    /// the repository.
    pub program: Option<String>,
    /// Whether the candidate is built too, from the working tree.
    pub candidate: CandidateBuild,
}

/// What the candidate arm is when the reference is built from a revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CandidateBuild {
    /// The candidate was given (`--cand`, `candidate`): nothing to build.
    Given,
    /// The same program built from the working tree.
    WorkingTree,
    /// `--self-check`: the built reference runs against itself.
    TheReference,
}

/// The revision found: the repository, where the working folder is in it, and the
/// commit.
#[derive(Debug, Clone)]
pub struct Located {
    /// The repository's top folder (its working tree).
    pub top: PathBuf,
    pub rev: String,
    /// The full hash of the commit the revision names.
    pub commit: String,
}

/// A program eqcheck built, or took from its cache.
#[derive(Debug, Clone)]
pub struct Built {
    /// The program file, by absolute path.
    pub program: PathBuf,
    pub from: BuiltFrom,
}

/// Why a program could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cannot run git (needed to build a revision): {0}")]
    NoGit(std::io::Error),
    #[error("the working folder is not in a git repository ({detail})")]
    NotARepository { detail: String },
    #[error("`{rev}` names no commit in the repository at {}", top.display())]
    NoCommit { rev: String, top: PathBuf },
    #[error(
        "the candidate's program {} is not inside the repository at {}: name the file the build makes with `program` in the `[build]` table of eqcheck.toml",
        program.display(), top.display()
    )]
    ProgramOutside { program: PathBuf, top: PathBuf },
    #[error("{what} failed in {}: {detail}", folder.display())]
    Git {
        what: String,
        folder: PathBuf,
        detail: String,
    },
    #[error("cannot remove the temporary worktree {}", path.display())]
    RemoveWorktree {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot make a temporary folder for the build: {0}")]
    Temp(std::io::Error),
    #[error("cannot start the build `{command}` in {}", folder.display())]
    Spawn {
        command: String,
        folder: PathBuf,
        source: std::io::Error,
    },
    #[error("the build `{command}` failed in {} ({status}); its last lines:\n{last_lines}", folder.display())]
    Failed {
        command: String,
        folder: PathBuf,
        status: String,
        last_lines: String,
    },
    #[error("the build `{command}` succeeded in {} but made no file {program}", folder.display())]
    NoProgram {
        command: String,
        folder: PathBuf,
        program: String,
    },
    #[error("cannot tell where the user's cache folder is: set XDG_CACHE_HOME (or HOME)")]
    NoCacheFolder,
    #[error("cannot store the build in the cache at {}", path.display())]
    Cache {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("interrupted")]
    Interrupted,
}

impl BuildError {
    /// Found before anything was built: what was asked for cannot be built here.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            BuildError::NoGit(_)
                | BuildError::NotARepository { .. }
                | BuildError::NoCommit { .. }
                | BuildError::ProgramOutside { .. }
        )
    }
}

/// Finds the repository holding the working folder and the commit `rev` names.
pub fn locate(rev: &str) -> Result<Located, BuildError> {
    let here = std::env::current_dir().map_err(BuildError::NoGit)?;
    let top = git::top(&here)?;
    let commit = git::commit(&top, rev)?;
    Ok(Located {
        top,
        rev: rev.to_string(),
        commit,
    })
}

/// Where the build leaves the program, from the repository's top: `[build]
/// program`, else the candidate's program (an absolute path, as resolved) when it
/// lies inside the repository.
pub fn program_path(
    plan: &Plan,
    located: &Located,
    candidate: &Path,
) -> Result<String, BuildError> {
    if let Some(program) = &plan.program {
        return Ok(program.clone());
    }
    let outside = || BuildError::ProgramOutside {
        program: candidate.to_path_buf(),
        top: located.top.clone(),
    };
    let top = std::fs::canonicalize(&located.top).map_err(|_| outside())?;
    let program = std::fs::canonicalize(candidate).map_err(|_| outside())?;
    let inside = program.strip_prefix(&top).map_err(|_| outside())?;
    // Forward slashes on every OS: the path is part of the cache key.
    let words: Vec<String> = inside
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Ok(words.join("/"))
}

/// Whether the located revision was built this way before (and is in the cache).
pub fn is_cached(located: &Located, command: &[String], program: &str) -> bool {
    cache::entry(&located.commit, command, program)
        .is_ok_and(|entry| entry.lookup(program).is_some())
}

/// The program as built from the located revision: from the cache when this
/// commit was built the same way before, else built in a temporary worktree
/// (removed afterwards, whatever happens) and stored in the cache.
pub fn from_revision(
    located: &Located,
    command: &[String],
    program: &str,
) -> Result<Built, BuildError> {
    let entry = cache::entry(&located.commit, command, program)?;
    let from = |folder: &Path, cached| BuiltFrom {
        rev: Some(located.rev.clone()),
        commit: Some(located.commit.clone()),
        command: command.to_vec(),
        folder: folder.display().to_string(),
        cached,
    };
    if let Some(found) = entry.lookup(program) {
        return Ok(Built {
            program: found,
            from: from(&entry.path, true),
        });
    }
    let worktree = git::Worktree::add(&located.top, &located.commit)?;
    run::build(command, worktree.path())?;
    let made = worktree.path().join(program);
    if !made.is_file() {
        return Err(BuildError::NoProgram {
            command: shell_words::join(command),
            folder: worktree.path().to_path_buf(),
            program: program.to_string(),
        });
    }
    let stored = entry.store(&made, command, program)?;
    let built = Built {
        program: stored,
        from: from(worktree.path(), false),
    };
    worktree.remove()?;
    Ok(built)
}

/// The program as built from the working tree, in the repository itself; not
/// cached, since uncommitted changes are part of it.
pub fn from_working_tree(
    located: &Located,
    command: &[String],
    program: &str,
) -> Result<Built, BuildError> {
    run::build(command, &located.top)?;
    let made = located.top.join(program);
    if !made.is_file() {
        return Err(BuildError::NoProgram {
            command: shell_words::join(command),
            folder: located.top.clone(),
            program: program.to_string(),
        });
    }
    Ok(Built {
        program: std::path::absolute(&made).unwrap_or(made),
        from: BuiltFrom {
            rev: None,
            commit: git::commit(&located.top, "HEAD").ok(),
            command: command.to_vec(),
            folder: located.top.display().to_string(),
            cached: false,
        },
    })
}
