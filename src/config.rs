//! Resolves what the user asked for into a [`Matrix`]: arms split shell-word style
//! and checked to exist, trees by name or path, flag sets by group or file. It
//! spawns nothing; every mistake it finds is a usage error (exit 2) naming the flag,
//! file or program.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::fixtures::{self, fingerprint};
use crate::flagset::{self, FlagSetFile};
use crate::matrix::exec::ArmUser;
use crate::matrix::plan::Arm;
use crate::matrix::{Matrix, TreeSource};

/// The run options: the command line's over `eqcheck.toml`'s over the defaults.
#[derive(Debug, Default)]
pub struct RunRequest {
    pub trees: Vec<String>,
    pub sets: String,
    pub reference: Option<String>,
    pub candidate: Option<String>,
    pub jobs: Option<usize>,
    pub timeout: Duration,
    pub json: Option<PathBuf>,
    /// `--as-user NAME|UID`: who the arms run as when eqcheck runs as root.
    pub as_user: Option<String>,
    /// `--as-root`: run the arms as root after all.
    pub as_root: bool,
    /// `--guard metadata|content|off`.
    pub guard: String,
    /// `--keep`: leave built trees in place.
    pub keep: bool,
    /// `--flagsets NAME|FILE`: which flag-set file (default: the built-in one named
    /// after the reference program, else `walk`).
    pub flagsets: Option<String>,
    /// `--runs K`: times each arm runs each case.
    pub runs: Option<usize>,
    /// `--self-check`: run the reference against itself.
    pub self_check: bool,
    /// Environment overrides for both arms (from `eqcheck.toml`).
    pub env: Vec<(String, String)>,
    /// The project config file the request was merged with, if any.
    pub config: Option<String>,
}

/// Runs per arm under `--self-check` when `--runs` does not say.
pub const SELF_CHECK_RUNS: usize = 3;

/// A mistake in the run's options: exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("--{flag}: cannot split `{text}`: {reason}")]
    Split {
        flag: &'static str,
        text: String,
        reason: String,
    },
    #[error("--{flag}: the command is empty")]
    EmptyCommand { flag: &'static str },
    #[error(
        "--ref and --cand go together: give both, or neither to compare eqcheck's own engines"
    )]
    OneArm,
    #[error("{arm} arm: program `{program}` {why}")]
    Program {
        arm: &'static str,
        program: String,
        why: String,
    },
    #[error("cannot find eqcheck's own executable for the default arms: {0}")]
    OwnExe(std::io::Error),
    #[error(transparent)]
    Tree(#[from] fixtures::FixtureError),
    #[error(transparent)]
    FlagSet(#[from] flagset::FlagSetError),
    #[error("-j must be at least 1")]
    NoJobs,
    #[error("--timeout must be more than 0 seconds")]
    NoTime,
    #[error("--tree {path}: cannot resolve the folder")]
    Given {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--as-user {0}: no such user")]
    NoSuchUser(String),
    #[error(
        "--as-user and --as-root need eqcheck to run as root (the arms run as the invoking user)"
    )]
    NotRoot,
    #[error("--guard {0}: expected metadata, content or off")]
    Guard(String),
    #[error("--runs must be at least 1")]
    NoRuns,
    #[error(
        "--tree {}: the arms run as {user}, who may not {} {} (mode {mode:o}); give a tree they can reach, or --as-user / --as-root",
        tree.display(),
        if folder == tree { "list" } else { "pass through" },
        folder.display()
    )]
    TreeUnreachable {
        tree: PathBuf,
        user: String,
        folder: PathBuf,
        mode: u32,
    },
    #[error(
        "--tree {}: the temp folder {} is inside it, and eqcheck's own files would change the tree; set TMPDIR to a folder outside it",
        tree.display(),
        temp.display()
    )]
    TempInsideTree { tree: PathBuf, temp: PathBuf },
    #[error("--self-check runs the reference against itself: give --ref alone, without --cand")]
    SelfCheckWithCandidate,
    #[error("--flagsets {0}: no such file, and no built-in flag sets of that name ({1})")]
    NoFlagSets(String, String),
}

/// Turns the request into a matrix, or says what is wrong with it.
pub fn resolve(request: &RunRequest) -> Result<Matrix, ConfigError> {
    let (reference, candidate) = if request.self_check {
        if request.candidate.is_some() {
            return Err(ConfigError::SelfCheckWithCandidate);
        }
        let reference = match &request.reference {
            Some(text) => arm("ref", text)?,
            None => default_arms()?.0,
        };
        (reference.clone(), reference)
    } else {
        arms(request)?
    };
    let trees = if request.trees.is_empty() {
        fixtures::STANDARD_TREES
            .iter()
            .map(|name| Ok(TreeSource::Spec(fixtures::spec_named(name)?)))
            .collect::<Result<Vec<_>, ConfigError>>()?
    } else {
        request
            .trees
            .iter()
            .map(|t| tree(t))
            .collect::<Result<Vec<_>, _>>()?
    };
    let mut trees = trees;
    distinct_names(&mut trees);
    let mut warnings = Vec::new();
    let (flag_sets, groups) = flag_sets(request, &reference, &mut warnings)?;
    let user = arm_user(request)?;
    for tree in &trees {
        if let TreeSource::Existing { path, .. } = tree {
            if let Some((folder, mode)) = crate::matrix::exec::blocked_for(path, &user, true) {
                return Err(ConfigError::TreeUnreachable {
                    tree: path.clone(),
                    user: user.describe(),
                    folder,
                    mode,
                });
            }
        }
    }
    let runs = match request.runs {
        Some(0) => return Err(ConfigError::NoRuns),
        Some(n) => n,
        None if request.self_check => SELF_CHECK_RUNS,
        None => 1,
    };
    let jobs = match request.jobs {
        Some(0) => return Err(ConfigError::NoJobs),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    if request.timeout.is_zero() {
        return Err(ConfigError::NoTime);
    }
    let guard = match request.guard.as_str() {
        "metadata" => Some(fingerprint::Depth::Metadata),
        "content" => Some(fingerprint::Depth::Content),
        "off" => None,
        other => return Err(ConfigError::Guard(other.to_string())),
    };
    Ok(Matrix {
        reference,
        candidate,
        trees,
        flag_sets,
        groups,
        runs,
        self_check: request.self_check,
        env: request.env.clone(),
        config: request.config.clone(),
        warnings,
        jobs,
        timeout: request.timeout,
        user,
        guard,
        keep: request.keep,
    })
}

fn arms(request: &RunRequest) -> Result<(Arm, Arm), ConfigError> {
    match (&request.reference, &request.candidate) {
        (Some(reference), Some(candidate)) => Ok((arm("ref", reference)?, arm("cand", candidate)?)),
        (None, None) => default_arms(),
        _ => Err(ConfigError::OneArm),
    }
}

/// eqcheck's own engines: reference against fast.
fn default_arms() -> Result<(Arm, Arm), ConfigError> {
    let exe = std::env::current_exe().map_err(ConfigError::OwnExe)?;
    let exe = exe.to_string_lossy().into_owned();
    let engine = |name: &str| Arm {
        command: vec![exe.clone(), "walk".into(), "--engine".into(), name.into()],
        is_eqcheck: true,
        copied_from: None,
    };
    Ok((engine("reference"), engine("fast")))
}

fn arm(flag: &'static str, text: &str) -> Result<Arm, ConfigError> {
    let command = shell_words::split(text).map_err(|e| ConfigError::Split {
        flag,
        text: text.to_string(),
        reason: e.to_string(),
    })?;
    let mut command = command;
    let program = command
        .first_mut()
        .ok_or(ConfigError::EmptyCommand { flag })?;
    let arm_name = if flag == "ref" {
        "reference"
    } else {
        "candidate"
    };
    check_program(program).map_err(|why| ConfigError::Program {
        arm: arm_name,
        program: program.clone(),
        why,
    })?;
    // The arm runs the very file found here, by its absolute path: a bare name
    // looked up again by the arm user could find another file on PATH (one in a
    // folder only eqcheck's user may enter is skipped), and a relative path would
    // not survive the arm starting in its own HOME. Symlinks are not resolved: a
    // multi-call binary looks at the name it was run by.
    if let Some(found) = locate_program(program).and_then(|p| std::path::absolute(p).ok()) {
        *program = found.to_string_lossy().into_owned();
    }
    Ok(Arm {
        command,
        is_eqcheck: false,
        copied_from: None,
    })
}

/// A program named with a path must be a file there; a bare name must be on PATH.
fn check_program(program: &str) -> Result<(), String> {
    match locate_program(program) {
        Some(_) => Ok(()),
        None if Path::new(program).components().count() > 1 => {
            Err("does not exist (or is not a file)".into())
        }
        None => Err("not found on PATH".into()),
    }
}

/// The file a program name runs: the path itself when it has a folder part, else
/// the first match on PATH.
pub fn locate_program(program: &str) -> Option<PathBuf> {
    let path = Path::new(program);
    if path.components().count() > 1 {
        return path.is_file().then(|| path.to_path_buf());
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&search).find_map(|dir| {
        let candidate = dir.join(program);
        if candidate.is_file() {
            Some(candidate)
        } else {
            let exe = candidate.with_extension("exe");
            (cfg!(windows) && exe.is_file()).then_some(exe)
        }
    })
}

fn tree(name: &str) -> Result<TreeSource, ConfigError> {
    let path = Path::new(name);
    // A standard tree's name wins over a folder of the same name in the working
    // folder; `./edge` names the folder.
    if fixtures::is_builtin(name) {
        return Ok(TreeSource::Spec(fixtures::spec_named(name)?));
    }
    if path.is_dir() {
        // The arms get the absolute path, which is also the one distinctive
        // string rewritten to `{tree}` in their output (a relative `t` is not).
        let path = std::fs::canonicalize(path).map_err(|source| ConfigError::Given {
            path: path.to_path_buf(),
            source,
        })?;
        // The run's scratch folder (arm output, HOME) goes in the temp folder:
        // inside the tree, every arm would seem to change the tree.
        let temp = std::env::temp_dir();
        let temp = std::fs::canonicalize(&temp).unwrap_or(temp);
        if temp.starts_with(&path) {
            return Err(ConfigError::TempInsideTree { tree: path, temp });
        }
        return Ok(TreeSource::Existing {
            name: name.trim_end_matches('/').to_string(),
            path,
        });
    }
    Ok(TreeSource::Spec(fixtures::spec_named(name)?))
}

/// Trees named twice get `#2`, `#3`… so every case id stays unique.
fn distinct_names(trees: &mut [TreeSource]) {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for tree in trees {
        let name = match tree {
            TreeSource::Spec(spec) => &mut spec.name,
            TreeSource::Existing { name, .. } => name,
        };
        let count = seen.entry(name.clone()).or_insert(0);
        *count += 1;
        if *count > 1 {
            *name = format!("{name}#{count}");
        }
    }
}

/// The flag-set file and the groups `--sets` selects from it. The file is
/// `--flagsets` (a path or a built-in name), or a file `--sets` names, or the
/// built-in file named after the reference program (`dust`, `du`, `find`; `bfs`
/// takes `find`'s), or `walk`.
/// The built-in flag sets a program's file name points to: the one built-in name
/// among the parts of the name between `-`, `_` and `.` (`dust-old`, `du_9.4`,
/// `new.dust`); `bfs` takes `find`'s. A name with two (`du-dust`) points nowhere.
fn named_after(stem: &str) -> Option<&'static str> {
    let mut found: Vec<&'static str> = stem
        .split(['-', '_', '.'])
        .filter_map(|part| {
            let part = if part == "bfs" { "find" } else { part };
            flagset::builtin_names().find(|name| *name == part)
        })
        .collect();
    found.dedup();
    match found[..] {
        [one] => Some(one),
        _ => None,
    }
}

fn flag_sets(
    request: &RunRequest,
    reference: &Arm,
    warnings: &mut Vec<String>,
) -> Result<(FlagSetFile, Vec<String>), ConfigError> {
    let selector = request.sets.as_str();
    let sets_is_file = sets_names_a_file(selector);
    let file = match (&request.flagsets, sets_is_file) {
        (Some(named), _) => named_flag_sets(named)?,
        (None, true) => flagset::load(Path::new(selector))?,
        (None, false) if reference.is_eqcheck => {
            flagset::builtin("walk").expect("the walk flag sets are built in")
        }
        (None, false) => {
            let program = reference.command.first().map(Path::new);
            let stem = program
                .and_then(Path::file_stem)
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            match named_after(&stem) {
                Some(name) => flagset::builtin(name).expect("a built-in name"),
                None => {
                    warnings.push(format!(
                        "no one built-in flag-set file is named after the reference program `{stem}`, so the walk sets are used; name the right ones with --flagsets (built in: {})",
                        flagset::builtin_names().collect::<Vec<_>>().join(", ")
                    ));
                    flagset::builtin("walk").expect("the walk flag sets are built in")
                }
            }
        }
    };
    let which = if sets_is_file && request.flagsets.is_none() {
        "all"
    } else {
        selector
    };
    let groups = file.select(which)?.iter().map(|g| g.name.clone()).collect();
    Ok((file, groups))
}

/// Whether `--sets` names a flag-set file rather than groups: a file exists at that
/// path, or it ends in `.sets`.
pub fn sets_names_a_file(selector: &str) -> bool {
    Path::new(selector).is_file() || selector.ends_with(".sets")
}

/// `--flagsets`: a file when one exists at that path, else a built-in name.
fn named_flag_sets(named: &str) -> Result<FlagSetFile, ConfigError> {
    let path = Path::new(named);
    if path.is_file() || named.contains(['/', '\\']) || named.ends_with(".sets") {
        return Ok(flagset::load(path)?);
    }
    flagset::builtin(named).ok_or_else(|| {
        ConfigError::NoFlagSets(
            named.to_string(),
            flagset::builtin_names().collect::<Vec<_>>().join(", "),
        )
    })
}

/// The uid and gid arms run as by default when eqcheck runs as root: `nobody`.
#[cfg(unix)]
const UNPRIVILEGED_DEFAULT: u32 = 65534;

/// Who the arms run as: as root, an unprivileged user unless `--as-root`.
#[cfg(unix)]
fn arm_user(request: &RunRequest) -> Result<ArmUser, ConfigError> {
    let uid = rustix::process::geteuid().as_raw();
    if uid != 0 {
        return match (request.as_root, &request.as_user) {
            (false, None) => Ok(ArmUser::Invoker { uid }),
            _ => Err(ConfigError::NotRoot),
        };
    }
    if request.as_root {
        return Ok(ArmUser::Root);
    }
    let wanted = request
        .as_user
        .clone()
        .unwrap_or_else(|| UNPRIVILEGED_DEFAULT.to_string());
    let found = match wanted.parse::<u32>() {
        Ok(uid) => uzers::get_user_by_uid(uid).map_or(
            ArmUser::Unprivileged {
                uid,
                gid: uid,
                name: format!("uid {uid}"),
            },
            |user| unprivileged(&user),
        ),
        Err(_) => uzers::get_user_by_name(&wanted)
            .map(|user| unprivileged(&user))
            .ok_or(ConfigError::NoSuchUser(wanted))?,
    };
    Ok(found)
}

#[cfg(unix)]
fn unprivileged(user: &uzers::User) -> ArmUser {
    ArmUser::Unprivileged {
        uid: user.uid(),
        gid: user.primary_group_id(),
        name: user.name().to_string_lossy().into_owned(),
    }
}

/// Elsewhere the arms run as whoever runs eqcheck.
#[cfg(not(unix))]
fn arm_user(request: &RunRequest) -> Result<ArmUser, ConfigError> {
    match (request.as_root, &request.as_user) {
        (false, None) => Ok(ArmUser::Invoker { uid: 1 }),
        _ => Err(ConfigError::NotRoot),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_sets_are_found_by_the_programs_name() {
        assert_eq!(named_after("dust"), Some("dust"));
        assert_eq!(named_after("dust-1.2.7"), Some("dust"));
        assert_eq!(named_after("du_old"), Some("du"));
        assert_eq!(named_after("bfs"), Some("find"));
        assert_eq!(named_after("bfs-next"), Some("find"));
        assert_eq!(named_after("dusty"), None);
        assert_eq!(named_after("fd"), None);
        assert_eq!(named_after("eqcheck-double"), None);
        assert_eq!(named_after("new.dust"), Some("dust"));
        assert_eq!(named_after("du-dust"), None, "two names: neither is sure");
    }
}
