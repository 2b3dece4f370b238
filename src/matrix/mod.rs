//! The matrix: every case (tree × flag set) run by both arms on the same on-disk
//! tree, cases in parallel, each judged as soon as both arms finish. Trees named by
//! spec are built fresh before their cases and removed after them; a tree given by
//! path is only read.

pub mod arm;
pub mod compare;
pub mod exec;
pub mod plan;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rayon::prelude::*;

use crate::cleanup;
use crate::fixtures::fingerprint::{self, Fingerprint};
use crate::fixtures::{self, TreeSpec};
use crate::flagset::FlagSetFile;
use crate::outcome::{
    ArmInfo, ArmRun, Blame, CaseOutcome, Progress, RuleAudit, RunOutcome, TreeInfo, Verdict,
    SCHEMA_VERSION,
};
use arm::Arm;
use exec::{ArmEnvironment, ArmUser};
use plan::PlannedCase;

/// Where a tree comes from.
#[derive(Debug)]
pub enum TreeSource {
    /// Built fresh from a spec, removed afterwards.
    Spec(TreeSpec),
    /// An existing folder, never written to.
    Existing { name: String, path: PathBuf },
}

/// Everything a run needs, resolved from the command line.
#[derive(Debug)]
pub struct Matrix {
    pub reference: Arm,
    pub candidate: Arm,
    pub trees: Vec<TreeSource>,
    pub flag_sets: FlagSetFile,
    pub groups: Vec<String>,
    /// How many times each arm runs each case; more than one finds flaky arms.
    pub runs: usize,
    /// The candidate is the reference itself (`--self-check`).
    pub self_check: bool,
    /// Environment overrides from the project config, over the flag-set file's.
    pub env: Vec<(String, String)>,
    /// The project config file the run was configured from, if any.
    pub config: Option<String>,
    /// What the configuration had to guess, for the report's warnings.
    pub warnings: Vec<String>,
    pub jobs: usize,
    pub timeout: Duration,
    pub user: ArmUser,
    /// How closely trees are guarded while the arms run; `None` turns the guard off.
    pub guard: Option<fingerprint::Depth>,
    /// Leave built trees in place and say where.
    pub keep: bool,
}

/// A failure of the harness itself (not of an arm): exit code 3.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    #[error(transparent)]
    Fixture(#[from] fixtures::FixtureError),
    #[error("cannot make the run's scratch folder: {0}")]
    Scratch(std::io::Error),
    #[error("cannot prepare the run's scratch folder for {user}")]
    ForUser {
        user: String,
        source: std::io::Error,
    },
    #[error(
        "the arms run as {user}, who may not pass through {} (mode {mode:o}) to their HOME in the temp folder: set TMPDIR to a folder they can reach, or --as-root",
        folder.display()
    )]
    TempUnreachable {
        user: String,
        folder: PathBuf,
        mode: u32,
    },
    #[error("cannot start {jobs} worker threads")]
    Pool {
        jobs: usize,
        source: rayon::ThreadPoolBuildError,
    },
}

/// Runs every case and returns what was found.
pub fn run(matrix: &Matrix, progress: &dyn Progress) -> Result<RunOutcome, MatrixError> {
    cleanup::on_interrupt_clean_up();
    let scratch = Scratch::new()?;
    let reference = scratch.reachable_arm(&matrix.reference, &matrix.user)?;
    let candidate = scratch.reachable_arm(&matrix.candidate, &matrix.user)?;
    scratch.open_to_arms(&matrix.user)?;
    let mut env = ArmEnvironment::pinned(matrix.user.clone(), matrix.timeout);
    env.set(matrix.flag_sets.env.iter().chain(&matrix.env));
    pin_umask();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(matrix.jobs)
        .build()
        .map_err(|source| MatrixError::Pool {
            jobs: matrix.jobs,
            source,
        })?;
    let arms = Arms {
        reference: &reference,
        candidate: &candidate,
        flag_sets: &matrix.flag_sets,
        env: &env,
        runs: matrix.runs.max(1),
    };

    let mut trees = Vec::new();
    let mut cases = Vec::new();
    let mut warnings = matrix.warnings.clone();
    for (tree_index, source) in matrix.trees.iter().enumerate() {
        let (name, mut built) = match source {
            TreeSource::Spec(spec) => (spec.name.clone(), Some(fixtures::build_temp(spec)?)),
            TreeSource::Existing { name, .. } => (name.clone(), None),
        };
        let root = match (&built, source) {
            (Some(tree), _) => tree.path().to_path_buf(),
            (None, TreeSource::Existing { path, .. }) => path.clone(),
            (None, TreeSource::Spec(_)) => unreachable!("a spec tree is always built"),
        };
        // The first fingerprint reads every folder once, which also settles
        // directory atimes before the first arm looks.
        let baseline = fingerprint::take(&root, matrix.guard.unwrap_or_default());
        if matrix.user.is_root() && baseline.has_permission_fixtures() {
            warnings.push(format!(
                "tree {name} has folders or files their owner may not read, but the arms run as {}: those fixtures test nothing",
                matrix.user.describe()
            ));
        }
        let guard = matrix.guard.map(|depth| Guard {
            root: &root,
            depth,
            baseline: &baseline,
            first_change: std::sync::Mutex::new(None),
        });
        let rebuild = match (source, &built) {
            (TreeSource::Spec(spec), Some(tree)) if !matrix.keep => Some(arm::Rebuild {
                eqcheck: std::env::current_exe().unwrap_or_else(|_| "eqcheck".into()),
                source: spec_argument(&spec.source),
                root: tree.path().to_path_buf(),
            }),
            _ => None,
        };
        let planned = plan::cases_for_tree(&name, &matrix.flag_sets, &matrix.groups);
        progress.tree_started(&name, planned.len());
        let case_dir = scratch.path().join(format!("tree-{tree_index}"));
        std::fs::create_dir(&case_dir).map_err(MatrixError::Scratch)?;
        let one = |(i, case): (usize, &PlannedCase)| {
            let outcome = run_case(
                &arms,
                guard.as_ref(),
                &name,
                &root,
                rebuild.as_ref(),
                case,
                &case_dir.join(i.to_string()),
            );
            progress.case_done(&outcome);
            outcome
        };
        // With one job the cases run in file order, so a tree change is pinned on
        // the arm that made it.
        let outcomes: Vec<CaseOutcome> = if matrix.jobs == 1 {
            planned.iter().enumerate().map(one).collect()
        } else {
            pool.install(|| planned.par_iter().enumerate().map(one).collect())
        };
        cases.extend(outcomes);
        let kept = matrix.keep && built.is_some();
        if let (true, Some(tree)) = (matrix.keep, built.as_mut()) {
            tree.keep();
        }
        let skipped = built.as_ref().map_or(Vec::new(), |tree| {
            let said =
                |s: &fixtures::Skipped| format!("{}:{}: {}: {}", s.spec, s.line, s.path, s.reason);
            tree.skipped().iter().map(said).collect()
        });
        trees.push(TreeInfo {
            name,
            skipped,
            path: root.display().to_string(),
            built: built.is_some(),
            kept,
            counts: baseline.counts,
            fingerprints: if matrix.guard.is_some() {
                1 + 2 * planned.len() * arms.runs
            } else {
                1
            },
        });
    }
    let rules = audit(&matrix.flag_sets, &cases);
    let user = matrix.user.describe();
    Ok(RunOutcome {
        schema_version: SCHEMA_VERSION,
        reference: arm_info(&matrix.reference, &user),
        candidate: arm_info(&matrix.candidate, &user),
        config: matrix.config.clone(),
        flag_sets: matrix.flag_sets.file.clone(),
        runs: arms.runs,
        self_check: matrix.self_check,
        arms_ran_as: user,
        warnings,
        trees,
        rules,
        cases,
    })
}

/// Every rule of the flag-set file with how much it fired over the run's cases.
fn audit(flag_sets: &FlagSetFile, cases: &[CaseOutcome]) -> Vec<RuleAudit> {
    flag_sets
        .rules
        .iter()
        .map(|rule| {
            let fired: Vec<usize> = cases
                .iter()
                .filter_map(|c| c.fired.iter().find(|f| f.rule == rule.name))
                .map(|f| f.times)
                .collect();
            RuleAudit {
                name: rule.name.clone(),
                kind: rule.kind.name().to_string(),
                declared_at: format!("{}:{}", flag_sets.file, rule.line),
                stream: rule.streams.to_string(),
                groups: rule.groups.clone().unwrap_or_default(),
                cases_fired: fired.len(),
                times_fired: fired.iter().sum(),
                unused: fired.is_empty(),
            }
        })
        .collect()
}

/// The arm as the report names it: its command, the file that ran and its sha256.
fn arm_info(arm: &Arm, user: &str) -> ArmInfo {
    let binary = arm.command.first().and_then(|p| arm::locate_program(p));
    let sha256 = binary
        .as_deref()
        .and_then(|b| compare::digest_file(b).ok())
        .map(|d| d.iter().map(|b| format!("{b:02x}")).collect());
    ArmInfo {
        command: arm.command.clone(),
        binary: binary.map(|b| b.display().to_string()),
        sha256,
        user: user.to_string(),
    }
}

/// The two arms as they are run, and what every case shares.
struct Arms<'a> {
    reference: &'a Arm,
    candidate: &'a Arm,
    flag_sets: &'a FlagSetFile,
    env: &'a ArmEnvironment,
    runs: usize,
}

/// The tree-identity guard of one tree: its fingerprint before any arm ran, and the
/// first change seen, so later cases can say the tree was already changed.
struct Guard<'a> {
    root: &'a Path,
    depth: fingerprint::Depth,
    baseline: &'a Fingerprint,
    first_change: std::sync::Mutex<Option<String>>,
}

/// Changed paths named per tree-changed case.
const CHANGES_SHOWN: usize = 10;

impl Guard<'_> {
    /// After an arm: `Some(verdict)` if the tree no longer matches the baseline.
    fn check(&self, arm: Blame, case: &str) -> Option<Verdict> {
        if fingerprint::unchanged(self.root, self.depth, self.baseline) {
            return None;
        }
        let now = fingerprint::take(self.root, self.depth);
        let mut changes = fingerprint::changes(self.baseline, &now, CHANGES_SHOWN);
        let mut first = self.first_change.lock().unwrap_or_else(|p| p.into_inner());
        // Only the first arm to see a change is named; later cases ran on a tree
        // that was already changed and blame nobody of their own.
        let blamed = match &*first {
            Some(earlier) => {
                changes.insert(
                    0,
                    format!("(the tree was already changed: first seen after {earlier})"),
                );
                Blame::Earlier
            }
            None => {
                *first = Some(format!("the {} arm of {case}", arm.name()));
                arm
            }
        };
        Some(Verdict::TreeChanged {
            arm: blamed,
            changes,
        })
    }
}

/// The run's own temp folder (arm output, the arms' HOME), removed at the end or on
/// interrupt.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Result<Scratch, MatrixError> {
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

    fn path(&self) -> &Path {
        &self.0
    }

    /// The arm as it will run: eqcheck's own binary is copied into the scratch
    /// folder when another user runs the arms, since that user may not be able to
    /// reach the build folder it lives in.
    fn reachable_arm(&self, arm: &Arm, user: &ArmUser) -> Result<Arm, MatrixError> {
        if !arm.is_eqcheck || !matches!(user, ArmUser::Unprivileged { .. }) {
            return Ok(arm.clone());
        }
        let copy = self
            .0
            .join(format!("eqcheck{}", std::env::consts::EXE_SUFFIX));
        if !copy.exists() {
            std::fs::copy(&arm.command[0], &copy).map_err(|source| MatrixError::ForUser {
                user: user.describe(),
                source,
            })?;
        }
        let mut command = arm.command.clone();
        let original = std::mem::replace(&mut command[0], copy.to_string_lossy().into_owned());
        Ok(Arm {
            command,
            argv0: arm.argv0.clone(),
            is_eqcheck: true,
            copied_from: Some(original.into()),
        })
    }

    /// Lets the arm user through the scratch folder to its HOME and binary.
    fn open_to_arms(&self, user: &ArmUser) -> Result<(), MatrixError> {
        open_to_others(&self.0).map_err(|source| MatrixError::ForUser {
            user: user.describe(),
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

#[cfg(unix)]
fn open_to_others(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn open_to_others(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = cleanup::remove_registered_folder(&self.0);
    }
}

/// Runs both arms of one case on the tree `tree` at `root`; `rebuild` says how a
/// repro line builds the tree again when the run removes it.
fn run_case(
    arms: &Arms,
    guard: Option<&Guard>,
    tree: &str,
    root: &Path,
    rebuild: Option<&arm::Rebuild>,
    case: &PlannedCase,
    dir: &Path,
) -> CaseOutcome {
    let ref_argv = arm::argv(arms.reference, arms.flag_sets, &case.set, root);
    let cand_argv = arm::argv(arms.candidate, arms.flag_sets, &case.set, root);
    let mut moved = None;
    let mut reference = Vec::new();
    let mut candidate = Vec::new();
    match std::fs::create_dir(dir) {
        Ok(()) => {
            // Runs alternate between the arms, so whatever drifts with time (the
            // clock, the cache) drifts under both alike.
            for run in 1..=arms.runs {
                let name = |arm: &str| match arms.runs {
                    1 => arm.to_string(),
                    _ => format!("{arm}.{run}"),
                };
                let ran = exec::run_arm(
                    &ref_argv,
                    &arms.reference.argv0,
                    arms.env,
                    dir,
                    &name("reference"),
                );
                reference.push(share_repeated_output(reference.first(), ran));
                moved = moved.or_else(|| guard.and_then(|g| g.check(Blame::Reference, &case.id)));
                let ran = exec::run_arm(
                    &cand_argv,
                    &arms.candidate.argv0,
                    arms.env,
                    dir,
                    &name("candidate"),
                );
                candidate.push(share_repeated_output(candidate.first(), ran));
                moved = moved.or_else(|| guard.and_then(|g| g.check(Blame::Candidate, &case.id)));
                if moved.is_some() {
                    break;
                }
            }
        }
        Err(err) => {
            let failed = || exec::Captured::failed(format!("cannot make {}: {err}", dir.display()));
            reference.push(failed());
            candidate.push(failed());
        }
    };
    let rules = compare::CaseRules {
        group: &case.group,
        rules: &arms.flag_sets.rules,
    };
    let judged = match moved {
        Some(tree_changed) => compare::Judged {
            verdict: tree_changed,
            streams: Vec::new(),
            fired: Vec::new(),
            notes: Vec::new(),
        },
        None => compare::judge(&reference, &candidate, root, &rules),
    };
    let _ = std::fs::remove_dir_all(dir);
    CaseOutcome {
        id: case.id.clone(),
        tree: tree.to_string(),
        group: case.group.clone(),
        set: case.set.label(),
        reference: arm_run(arms.reference, &ref_argv, arms.env, rebuild, reference),
        candidate: arm_run(arms.candidate, &cand_argv, arms.env, rebuild, candidate),
        verdict: judged.verdict,
        streams: judged.streams,
        fired: judged.fired,
        notes: judged.notes,
    }
}

/// A spec as `eqcheck trees build` takes it from any folder: a built-in name as is,
/// a spec file by its absolute path.
fn spec_argument(source: &str) -> String {
    if fixtures::is_builtin(source) {
        return source.to_string();
    }
    std::fs::canonicalize(source).map_or(source.to_string(), |p| p.display().to_string())
}

/// A later run whose output is byte for byte its arm's first is pointed at the
/// first run's files and its own are removed, so `--runs 50` of a large output
/// keeps one copy on disk, not fifty.
fn share_repeated_output(
    first: Option<&exec::Captured>,
    mut later: exec::Captured,
) -> exec::Captured {
    let Some(first) = first else {
        return later;
    };
    let same = |a: &Path, b: &Path| compare::same_contents(a, b).unwrap_or(false);
    if later.status == first.status
        && same(&first.stdout, &later.stdout)
        && same(&first.stderr, &later.stderr)
    {
        let _ = std::fs::remove_file(&later.stdout);
        let _ = std::fs::remove_file(&later.stderr);
        later.stdout = first.stdout.clone();
        later.stderr = first.stderr.clone();
    }
    later
}

/// One arm's runs of a case as the report gives them. Its repro line makes again
/// what the run made for itself: the tree, with `rebuild`, and the arm's program,
/// when the arm ran a copy.
fn arm_run(
    arm: &Arm,
    argv: &[std::ffi::OsString],
    env: &ArmEnvironment,
    rebuild: Option<&arm::Rebuild>,
    runs: Vec<exec::Captured>,
) -> ArmRun {
    let durations_ms: Vec<f64> = runs
        .iter()
        .map(|r| r.duration.as_secs_f64() * 1000.0)
        .collect();
    let first = runs
        .into_iter()
        .next()
        .expect("every case runs each arm once");
    ArmRun {
        argv: argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        repro: arm::repro(argv, &arm.argv0, env, rebuild, arm.copied_from.as_deref()),
        status: first.status,
        duration_ms: durations_ms[0],
        durations_ms,
    }
}

/// Arms create nothing in the tree, but what they write elsewhere (and the tree's
/// own files) gets the same permissions on every machine.
#[cfg(unix)]
fn pin_umask() {
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
}

#[cfg(not(unix))]
fn pin_umask() {}
