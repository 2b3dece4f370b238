//! Resolves the merged options into a [`Matrix`]: arms split shell-word style and
//! checked to exist (or, with `--ref-rev`, the build that will make them), trees
//! by name or path, flag sets by group or file, counts, the timeout, the user and
//! the environment. Every value is checked here and
//! only here, once, and a mistake is reported at the place the value was written
//! (a flag, or `FILE:LINE:COL: key`). It spawns nothing; every mistake is a usage
//! error (exit 2), and only not finding eqcheck's own executable is the harness's.

use std::path::Path;
use std::time::Duration;

mod built;
mod file_systems;
mod flag_sets;

use super::{user, Given, Guard, Layer, Origin, RunMode};
use crate::fixtures::{self, fingerprint};
use crate::flagset;
use crate::matrix::arm::{self, Arm, Runner};
use crate::matrix::exec::DEFAULT_MAX_OUTPUT;
use crate::matrix::{Matrix, TreeSource};
use crate::outcome::Partition;

/// `--sets` when neither the command line nor the file says.
pub const DEFAULT_SETS: &str = "all";
/// `--timeout` when neither says.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest `--timeout`: a day, far past any walk, and far from the overflow
/// of a deadline computed from it.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);
/// The most `--runs`: a thousand runs find a flake of one in a few hundred; more
/// would only fill the disk with outputs.
pub const MAX_RUNS: usize = 1000;
/// The most `--jobs` per core: cases mostly wait on their arms, but past this the
/// threads only fight over the cores (and each holds a stack and a case folder).
pub const MAX_JOBS_PER_CORE: usize = 4;
/// Runs per arm under `--self-check` when `--runs` does not say.
pub const SELF_CHECK_RUNS: usize = 3;

/// A mistake in the run's options (exit code 2), or eqcheck's own file missing.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A value that is wrong, at the place it was written.
    #[error("{origin}: {message}")]
    At { origin: Origin, message: String },
    #[error(
        "{flag} gives the {has} arm, but nothing gives the {lacks}: add {other} (or `{lacks}` in eqcheck.toml); with neither arm given, eqcheck compares its own engines"
    )]
    OneArm {
        flag: &'static str,
        has: &'static str,
        lacks: &'static str,
        other: &'static str,
    },
    #[error("{}: gives `{has}` but no `{lacks}`: add `{lacks}`, or give --{flag}", file.display())]
    HalfArmsInFile {
        file: std::path::PathBuf,
        has: &'static str,
        lacks: &'static str,
        flag: &'static str,
    },
    #[error("--self-check runs the reference against itself: give --ref alone, without --cand")]
    SelfCheckWithCandidate,
    /// A spec's tree is larger than the temp folder's file system has room for.
    #[error(transparent)]
    NoRoom(fixtures::FixtureError),
    #[error("cannot find eqcheck's own executable for the default arms: {0}")]
    OwnExe(std::io::Error),
    #[error(
        "--as-user and --as-root need eqcheck to run as root (the arms run as the invoking user)"
    )]
    NotRoot,
}

impl SettingsError {
    pub fn at<T>(given: &Given<T>, message: String) -> SettingsError {
        SettingsError::At {
            origin: given.origin.clone(),
            message,
        }
    }
}

/// What the run needs besides the merged options.
#[derive(Debug, Default, Clone)]
pub struct RunExtras {
    pub mode: RunMode,
    /// `--keep`: leave built trees in place.
    pub keep: bool,
    /// The project config file the options were merged with, if any.
    pub config: Option<String>,
    /// `--partition`: the shard of the cases this run takes.
    pub partition: Option<Given<String>>,
}

/// Turns the options into a matrix, or says what is wrong with the first value
/// that is.
pub fn resolve(options: &Layer, extras: &RunExtras) -> Result<Matrix, SettingsError> {
    let self_check = extras.mode.self_check;
    let (mut reference, mut candidate, build) = match &options.ref_rev {
        Some(rev) => built::arms(rev, options, self_check).map(|(r, c, p)| (r, c, Some(p)))?,
        None => arms(options, self_check).map(|(r, c)| (r, c, None))?,
    };
    let trees = trees(&options.trees)?;
    let mut warnings = Vec::new();
    let file_systems = file_systems::chosen(&options.fs, &mut warnings)?;
    let (flag_sets, groups) = flag_sets::chosen(options, &reference, &mut warnings)?;
    let argv0 = (options.argv0.as_ref())
        .map(|given| program_name(given).map(Some))
        .unwrap_or_else(|| Ok(flag_sets.argv0.clone()))?;
    name_arms(argv0, &mut reference, &mut candidate, &mut warnings);
    (reference.runner, candidate.runner) = runners(options)?;
    for (arm, given) in [
        (&reference, &options.reference),
        (&candidate, &options.candidate),
    ] {
        if let (None, Some(given)) = (&arm.runner, given) {
            can_start(&arm.command, given)?;
        }
    }
    let user = user::arm_user(options.as_user.as_ref(), extras.mode.as_root)?;
    for (tree, given) in trees.iter().zip(&options.trees) {
        reachable(tree, given, &user)?;
    }
    let trees = file_systems::place(trees, &file_systems, &mut warnings);
    let runs = match &options.runs {
        Some(runs) => count_within(runs, MAX_RUNS, String::new())?,
        None if self_check => SELF_CHECK_RUNS,
        None => 1,
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let jobs = match &options.jobs {
        Some(jobs) => {
            let why = format!(" ({MAX_JOBS_PER_CORE} per core; this machine has {cores})");
            count_within(jobs, MAX_JOBS_PER_CORE * cores, why)?
        }
        None => cores,
    };
    Ok(Matrix {
        reference,
        candidate,
        trees,
        flag_sets,
        groups,
        runs,
        self_check,
        env: environment(&options.env)?,
        config: extras.config.clone(),
        warnings,
        jobs,
        timeout: options
            .timeout
            .as_ref()
            .map_or(Ok(DEFAULT_TIMEOUT), timeout)?,
        max_output: (options.max_output.as_ref()).map_or(Ok(DEFAULT_MAX_OUTPUT), max_output)?,
        user,
        guard: match options.guard.as_ref().map_or(Guard::default(), |g| g.value) {
            Guard::Metadata => Some(fingerprint::Depth::Metadata),
            Guard::Content => Some(fingerprint::Depth::Content),
            Guard::Off => None,
        },
        keep: extras.keep,
        partition: (extras.partition.as_ref())
            .map(|given| Partition::parse(&given.value).map_err(|m| SettingsError::at(given, m)))
            .transpose()?,
        build,
    })
}

fn arms(options: &Layer, self_check: bool) -> Result<(Arm, Arm), SettingsError> {
    if self_check {
        if options.candidate.is_some() {
            return Err(SettingsError::SelfCheckWithCandidate);
        }
        let reference = match &options.reference {
            Some(given) => arm(given)?,
            None => default_arms()?.0,
        };
        return Ok((reference.clone(), reference));
    }
    match (&options.reference, &options.candidate) {
        (Some(reference), Some(candidate)) => Ok((arm(reference)?, arm(candidate)?)),
        (None, None) => default_arms(),
        (Some(one), None) | (None, Some(one)) => Err(half_arms(one, options)),
    }
}

/// Gives both arms the argv[0] the options or the flag-set file name, or warns
/// when their own differ.
fn name_arms(
    argv0: Option<String>,
    reference: &mut Arm,
    candidate: &mut Arm,
    warnings: &mut Vec<String>,
) {
    match argv0 {
        Some(name) => {
            reference.argv0.clone_from(&name);
            candidate.argv0 = name;
        }
        None if reference.argv0 != candidate.argv0 => warnings.push(format!(
            "the arms run as `{}` and `{}` (their programs' file names), so lines that name the program differ; set one name with --argv0 or `argv0` in eqcheck.toml or the flag-set file",
            reference.argv0, candidate.argv0
        )),
        None => {}
    }
}

/// The runners of the reference and the candidate; `--same-runner` gives the
/// candidate's to both.
fn runners(options: &Layer) -> Result<(Option<Runner>, Option<Runner>), SettingsError> {
    let candidate = options.cand_runner.as_ref().map(runner).transpose()?;
    let same = options.same_runner.as_ref().filter(|given| given.value);
    match (same, &options.ref_runner) {
        (Some(same), Some(_)) => Err(SettingsError::at(
            same,
            "runs the reference under the candidate's runner: give no reference runner besides"
                .into(),
        )),
        (Some(same), None) if candidate.is_none() => Err(SettingsError::at(
            same,
            "there is no candidate runner to share: give --cand-runner or `cand_runner`".into(),
        )),
        (Some(_), None) => Ok((candidate.clone(), candidate)),
        (None, reference) => Ok((reference.as_ref().map(runner).transpose()?, candidate)),
    }
}

fn runner(given: &Given<String>) -> Result<Runner, SettingsError> {
    let command = command(given)?;
    can_start(&command, given)?;
    Ok(Runner::new(command))
}

/// One arm without the other: said at the file when the file gave the only one.
fn half_arms(one: &Given<String>, options: &Layer) -> SettingsError {
    let (has, lacks, flag) = match options.reference.is_some() {
        true => ("reference", "candidate", "cand"),
        false => ("candidate", "reference", "ref"),
    };
    let place = match &one.origin {
        Origin::File(place) => place,
        Origin::Flag(given) => {
            return SettingsError::OneArm {
                flag: given,
                has,
                lacks,
                other: if flag == "cand" { "--cand" } else { "--ref" },
            }
        }
    };
    SettingsError::HalfArmsInFile {
        file: place.file.clone(),
        has,
        lacks,
        flag,
    }
}

/// The trees named, each by a built-in name, a folder or a spec file, with names
/// made distinct; the standard trees when none is named. Each spec's tree must fit
/// in the temp folder it will be built in, which is checked here, before anything
/// is built (trees are built one at a time, each removed before the next).
pub fn trees(named: &[Given<String>]) -> Result<Vec<TreeSource>, SettingsError> {
    let mut trees = match named.is_empty() {
        true => standard_trees()?,
        false => named.iter().map(tree).collect::<Result<_, _>>()?,
    };
    distinct_names(&mut trees);
    let temp = std::env::temp_dir();
    for tree in &trees {
        if let TreeSource::Spec(spec) = tree {
            let built_in = fixtures::room::BuiltIn::TempFolder;
            fixtures::room::check(spec, &temp, built_in).map_err(SettingsError::NoRoom)?;
        }
    }
    Ok(trees)
}

/// The trees named (as `trees` finds them), each on every file system `fs`
/// names; what `all` had to leave out is said in `warnings`. For commands that
/// take trees but no arms (`probe`).
pub fn trees_on(
    named: &[Given<String>],
    fs: &[Given<String>],
    warnings: &mut Vec<String>,
) -> Result<Vec<TreeSource>, SettingsError> {
    let trees = trees(named)?;
    let chosen = file_systems::chosen(fs, warnings)?;
    Ok(file_systems::place(trees, &chosen, warnings))
}

/// A command other than an arm's (`probe --cand`'s lister, `bench --baseline`):
/// split and its program found, as an arm's.
pub fn program_command(given: &Given<String>) -> Result<Vec<String>, SettingsError> {
    let command = arm(given)?.command;
    can_start(&command, given)?;
    Ok(command)
}

/// eqcheck's own engines: reference against fast.
fn default_arms() -> Result<(Arm, Arm), SettingsError> {
    let exe = std::env::current_exe().map_err(SettingsError::OwnExe)?;
    let exe = exe.to_string_lossy().into_owned();
    let engine = |name: &str| Arm {
        command: vec![exe.clone(), "walk".into(), "--engine".into(), name.into()],
        argv0: "eqcheck".into(),
        is_eqcheck: true,
        copied_from: None,
        runner: None,
        built_from: None,
    };
    Ok((engine("reference"), engine("fast")))
}

/// An arm's command: split once, shell-word style, its program found as it will
/// be run.
fn arm(given: &Given<String>) -> Result<Arm, SettingsError> {
    let command = command(given)?;
    Ok(Arm {
        argv0: arm::file_name(&command[0]),
        command,
        is_eqcheck: false,
        copied_from: None,
        runner: None,
        built_from: None,
    })
}

/// A command split once, shell-word style, its program found as it will be run. A
/// relative program path with a folder part starts where the command was written (a
/// config's folder); a bare name is looked up on PATH.
fn command(given: &Given<String>) -> Result<Vec<String>, SettingsError> {
    let mut command = shell_words::split(&given.value)
        .map_err(|e| SettingsError::at(given, format!("cannot split `{}`: {e}", given.value)))?;
    let Some(program) = command.first_mut() else {
        return Err(SettingsError::at(given, "the command is empty".into()));
    };
    if Path::new(program.as_str()).components().count() > 1 {
        *program = given.origin.path(program);
    }
    // The arm runs the very file found here, by its absolute path: a bare name
    // looked up again by the arm user could find another file on PATH (one in a
    // folder only eqcheck's user may enter is skipped), and a relative path would
    // not survive the arm starting in its own HOME. Symlinks are not resolved: a
    // multi-call binary looks at the name it was run by, which is argv[0].
    let found = arm::locate_program(program).ok_or_else(|| {
        let why = match Path::new(program.as_str()).components().count() > 1 {
            true => "does not exist (or is not a file)",
            false => "not found on PATH",
        };
        SettingsError::at(given, format!("program `{program}` {why}"))
    })?;
    *program = std::path::absolute(&found)
        .unwrap_or(found)
        .to_string_lossy()
        .into_owned();
    Ok(command)
}

/// Whether the program of `command` (found already) can be started as it is: an
/// arm under a runner is the runner's to open, and not asked. Refused here, not
/// left to fail case by case (or to run anyway from a copy made for the arm user,
/// which is given the copy's own mode).
fn can_start(command: &[String], given: &Given<String>) -> Result<(), SettingsError> {
    let program = &command[0];
    let found = Path::new(program);
    if !arm::is_executable(found) {
        return Err(SettingsError::at(
            given,
            format!("program `{program}` is not executable: make it so (chmod +x), or name its interpreter first (`sh {program}`)"),
        ));
    }
    if let Some(interpreter) = arm::missing_interpreter(found) {
        return Err(SettingsError::at(
            given,
            format!("program `{program}` is a script for `{interpreter}` (its first line, #!), which does not exist or cannot be run here"),
        ));
    }
    Ok(())
}

/// A program name both arms run with (`argv0`), checked as a flag-set file's is.
fn program_name(given: &Given<String>) -> Result<String, SettingsError> {
    match flagset::argv0_problem(&given.value) {
        Some(problem) => Err(SettingsError::at(given, problem.to_string())),
        None => Ok(given.value.clone()),
    }
}

fn standard_trees() -> Result<Vec<TreeSource>, SettingsError> {
    let spec = |name: &&str| fixtures::spec_named(name).expect("the standard trees load");
    Ok(fixtures::STANDARD_TREES
        .iter()
        .map(|name| TreeSource::Spec(spec(name)))
        .collect())
}

/// A tree: a built-in name (which wins over a folder of the same name: `./edge`
/// names the folder), an existing folder, or a `.tree` spec file.
fn tree(given: &Given<String>) -> Result<TreeSource, SettingsError> {
    let name = &given.value;
    let fixture =
        |err: fixtures::FixtureError| SettingsError::at(given, crate::exit::with_causes(&err));
    if fixtures::is_builtin(name) {
        return fixtures::spec_named(name)
            .map(TreeSource::Spec)
            .map_err(fixture);
    }
    let written = given.origin.path(name);
    let path = Path::new(&written);
    if !path.is_dir() {
        return fixtures::spec_named(&written)
            .map(TreeSource::Spec)
            .map_err(fixture);
    }
    // The arms get the absolute path, which is also the one distinctive string
    // rewritten to `{tree}` in their output (a relative `t` is not).
    let path = std::fs::canonicalize(path).map_err(|err| {
        SettingsError::at(
            given,
            format!("cannot resolve the folder `{written}`: {err}"),
        )
    })?;
    // The run's scratch folder (arm output, HOME) goes in the temp folder: inside
    // the tree, every arm would seem to change the tree.
    let temp = std::env::temp_dir();
    let temp = std::fs::canonicalize(&temp).unwrap_or(temp);
    if temp.starts_with(&path) {
        let message = format!(
            "{}: the temp folder {} is inside it, and eqcheck's own files would change the tree; set TMPDIR to a folder outside it",
            path.display(),
            temp.display()
        );
        return Err(SettingsError::at(given, message));
    }
    Ok(TreeSource::Existing {
        name: written.trim_end_matches('/').to_string(),
        path,
    })
}

/// A folder the arms are to read must be reachable by the user they run as.
fn reachable(
    tree: &TreeSource,
    given: &Given<String>,
    user: &crate::matrix::exec::ArmUser,
) -> Result<(), SettingsError> {
    let TreeSource::Existing { path, .. } = tree else {
        return Ok(());
    };
    let Some((folder, mode)) = crate::matrix::exec::blocked_for(path, user, true) else {
        return Ok(());
    };
    let verb = if &folder == path {
        "list"
    } else {
        "pass through"
    };
    let message = format!(
        "{}: the arms run as {}, who may not {verb} {} (mode {mode:o}); give a tree they can reach, or --as-user / --as-root",
        path.display(),
        user.describe(),
        folder.display()
    );
    Err(SettingsError::at(given, message))
}

/// Trees named twice get `#2`, `#3`… so every case id stays unique.
fn distinct_names(trees: &mut [TreeSource]) {
    let mut seen = std::collections::HashMap::<String, usize>::new();
    for tree in trees {
        let name = match tree {
            TreeSource::Spec(spec) => &mut spec.name,
            TreeSource::Existing { name, .. } | TreeSource::Image { name, .. } => name,
        };
        let count = seen.entry(name.clone()).or_insert(0);
        *count += 1;
        if *count > 1 {
            *name = format!("{name}#{count}");
        }
    }
}

/// A count from 1 to `max`; `why` says where the bound comes from.
fn count_within(count: &Given<usize>, max: usize, why: String) -> Result<usize, SettingsError> {
    match count.value {
        n if (1..=max).contains(&n) => Ok(n),
        n => Err(SettingsError::at(
            count,
            format!("must be from 1 to {max}{why}, not {n}"),
        )),
    }
}

/// A size as the tree specs write one (`4G`), more than 0 and at most 1 TiB.
fn max_output(size: &Given<String>) -> Result<u64, SettingsError> {
    match fixtures::spec::parse_size(size.value.trim()) {
        Ok(0) => Err(SettingsError::at(size, "must be more than 0 bytes".into())),
        Ok(bytes) => Ok(bytes),
        Err(message) => Err(SettingsError::at(size, message)),
    }
}

/// `--timeout` (or the file's `timeout`), checked: every command that takes one
/// takes it in the same bounds, with the same error.
pub fn timeout(secs: &Given<f64>) -> Result<Duration, SettingsError> {
    Some(secs.value)
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .filter(|d| *d <= MAX_TIMEOUT)
        .ok_or_else(|| {
            // A huge value as written would print hundreds of digits.
            let given = match secs.value.abs() >= 1e9 {
                true => format!("{:e}", secs.value),
                false => secs.value.to_string(),
            };
            let message = format!(
                "must be seconds more than 0 and at most {}, not {given}",
                MAX_TIMEOUT.as_secs(),
            );
            SettingsError::at(secs, message)
        })
}

/// The arms' environment overrides, each name and value fit for an environment.
fn environment(env: &[(Given<String>, String)]) -> Result<Vec<(String, String)>, SettingsError> {
    for (name, value) in env {
        if name.value.is_empty() || name.value.contains(['=', '\0']) {
            let message = format!(
                "`{}`: a name must be non-empty, without `=` or NUL",
                name.value
            );
            return Err(SettingsError::at(name, message));
        }
        if value.contains('\0') {
            let message = format!("`{}`: the value holds a NUL", name.value);
            return Err(SettingsError::at(name, message));
        }
    }
    Ok(env
        .iter()
        .map(|(name, value)| (name.value.clone(), value.clone()))
        .collect())
}

#[cfg(test)]
mod tests;
