//! The matrix: every case (tree × flag set) run by both arms on the same on-disk
//! tree, cases in parallel, each judged as soon as both arms finish. Trees named by
//! spec are built fresh before their cases and removed after them; a tree given by
//! path is only read.

pub mod arm;
mod case;
pub mod compare;
mod cpu;
pub mod exec;
pub(crate) mod guard;
pub mod home;
pub mod identity;
pub mod keeper;
mod lanes;
mod open;
pub mod plan;
pub(crate) mod scratch;
mod trials;
pub mod watch;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rayon::prelude::*;

use crate::cleanup;
use crate::fixtures::fingerprint;
use crate::fixtures::{self, TreeSpec};
use crate::flagset::FlagSetFile;
use crate::outcome::{
    ArmInfo, ArmLimits, ArmRun, ArmStatus, CaseOutcome, Host, Partition, Progress, RuleAudit,
    RunOutcome, Shard, TreeInfo, SCHEMA_VERSION,
};
use arm::Arm;
use case::Arms;
use exec::{ArmEnvironment, ArmUser};
use guard::Guard;
use open::rebuild;
pub(crate) use open::{fingerprint_and_watch, open_tree, OpenTree};
use plan::PlannedCase;
use scratch::Scratch;
pub(crate) use trials::{TrialAt, Trials};
/// Where a tree comes from.
#[derive(Debug)]
pub enum TreeSource {
    /// Built fresh from a spec, removed afterwards.
    Spec(TreeSpec),
    /// An existing folder, never written to.
    Existing { name: String, path: PathBuf },
    /// Built fresh from a spec onto an image of its own file system, mounted in
    /// eqcheck's private mount namespace, taken down afterwards; named
    /// `TREE@FS`.
    Image {
        name: String,
        spec: TreeSpec,
        fs: crate::fsimage::FileSystem,
    },
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
    /// The most an arm may write to each of its streams, in bytes.
    pub max_output: u64,
    pub user: ArmUser,
    /// How closely trees are guarded while the arms run; `None` turns the guard off.
    pub guard: Option<fingerprint::Depth>,
    /// Leave built trees in place and say where.
    pub keep: bool,
    /// The shard of the cases this run takes (`--partition`); none: all of them.
    pub partition: Option<Partition>,
    /// What must be built before the arms can run (`--ref-rev`); the arms' programs
    /// are the paths the build leaves them at until it has run.
    pub build: Option<crate::build::Plan>,
}

impl TreeSource {
    /// The tree's name, as case ids and reports give it.
    pub fn name(&self) -> &str {
        match self {
            TreeSource::Spec(spec) => &spec.name,
            TreeSource::Existing { name, .. } | TreeSource::Image { name, .. } => name,
        }
    }

    /// The file system of `--fs` the tree goes on: `native` but for an image.
    pub fn file_system(&self) -> crate::fsimage::FileSystem {
        match self {
            TreeSource::Image { fs, .. } => *fs,
            TreeSource::Spec(_) | TreeSource::Existing { .. } => crate::fsimage::FileSystem::Native,
        }
    }
}

/// A failure of the harness itself (not of an arm): exit code 3.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    #[error(transparent)]
    Fixture(#[from] fixtures::FixtureError),
    #[error(transparent)]
    Image(#[from] crate::fsimage::FsError),
    #[error("cannot make the run's scratch folder: {0}")]
    Scratch(std::io::Error),
    #[error("cannot prepare the run's scratch folder for {user}: {doing}")]
    ForUser {
        user: String,
        /// What was being done, to which paths.
        doing: String,
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
    #[error(
        "the temp folder {} is on a file system mounted noexec at {}: the arms' programs copied there for the arm user could not run; set TMPDIR to a folder on a mount that allows running programs, or --as-root",
        folder.display(),
        mount.display()
    )]
    NoExec { folder: PathBuf, mount: PathBuf },
    #[error("cannot start the keeper, the process that starts the arms' runs")]
    Launcher(#[source] std::io::Error),
    #[error("cannot start {jobs} worker threads")]
    Pool {
        jobs: usize,
        source: rayon::ThreadPoolBuildError,
    },
}
/// What every run of the arms needs before the first one (the matrix's, the
/// bench's): the run's scratch folder, the arms as they will run (copied where the
/// arm user cannot reach them), and their pinned environment.
pub(crate) struct Prepared {
    pub scratch: Scratch,
    pub reference: Arm,
    pub candidate: Arm,
    pub env: ArmEnvironment,
}

/// Makes the scratch folder and the arms ready, and the umask pinned, with the
/// temp trees cleaned up on an interrupt from now on.
pub(crate) fn prepare(matrix: &Matrix) -> Result<Prepared, MatrixError> {
    cleanup::on_interrupt_clean_up();
    let scratch = Scratch::new()?;
    let reference = scratch.reachable_arm(&matrix.reference, &matrix.user)?;
    let candidate = scratch.reachable_arm(&matrix.candidate, &matrix.user)?;
    scratch.open_to_arms(&matrix.user)?;
    let mut env = ArmEnvironment::pinned(matrix.user.clone(), matrix.timeout);
    env.max_output = matrix.max_output;
    env.set(matrix.flag_sets.env.iter().chain(&matrix.env));
    pin_umask();
    Ok(Prepared {
        scratch,
        reference,
        candidate,
        env,
    })
}

/// The threads `-j N` runs cases on.
fn job_pool(jobs: usize) -> Result<rayon::ThreadPool, MatrixError> {
    (rayon::ThreadPoolBuilder::new().num_threads(jobs).build())
        .map_err(|source| MatrixError::Pool { jobs, source })
}

/// Runs every case and returns what was found.
pub fn run(matrix: &Matrix, progress: &dyn Progress) -> Result<RunOutcome, MatrixError> {
    let cpu_at_start = cpu::used();
    let Prepared {
        scratch,
        reference,
        candidate,
        env,
    } = prepare(matrix)?;
    let pool = job_pool(matrix.jobs)?;
    let launcher = keeper::Launcher::start().map_err(MatrixError::Launcher)?;
    let arms = Arms {
        reference: &reference,
        candidate: &candidate,
        flag_sets: &matrix.flag_sets,
        env: &env,
        runs: matrix.runs.max(1),
        launcher: &launcher,
    };
    let runner = Runner {
        matrix,
        arms: &arms,
        pool: &pool,
        progress,
    };
    let mut found = Found {
        trees: Vec::new(),
        cases: Vec::new(),
        warnings: matrix.warnings.clone(),
    };
    let names: Vec<&str> = matrix.trees.iter().map(TreeSource::name).collect();
    let (planned, plan) = plan::shard(&names, &matrix.flag_sets, &matrix.groups, matrix.partition);
    for (index, (source, cases)) in matrix.trees.iter().zip(planned).enumerate() {
        // A shard builds only the trees it has cases on.
        if matrix.partition.is_some() && cases.is_empty() {
            continue;
        }
        let dir = scratch.path().join(format!("tree-{index}"));
        runner.tree(source, &cases, &dir, &mut found)?;
    }
    let user = matrix.user.describe();
    let host = identity::host();
    let about = About {
        user: &user,
        host: &host,
        timeout: matrix.timeout,
        launcher: &launcher,
        dir: scratch.path(),
    };
    let reference = arm_info(&matrix.reference, &reference, &about, "ref");
    let candidate = arm_info(&matrix.candidate, &candidate, &about, "cand");
    // The keepers are reaped here, so that their runs' CPU is counted below.
    launcher.close();
    Ok(RunOutcome {
        schema_version: SCHEMA_VERSION,
        eqcheck_version: env!("CARGO_PKG_VERSION").to_string(),
        shard: matrix.partition.map(|partition| Shard { partition, plan }),
        reference,
        candidate,
        host: Some(host),
        config: matrix.config.clone(),
        flag_sets: matrix.flag_sets.file.clone(),
        runs: arms.runs,
        self_check: matrix.self_check,
        arms_ran_as: user,
        limits: Some(ArmLimits {
            timeout_s: matrix.timeout.as_secs_f64(),
            max_output_bytes: matrix.max_output,
        }),
        warnings: found.warnings,
        trees: found.trees,
        rules: audit(&matrix.flag_sets, &found.cases),
        cases: found.cases,
        // After the arms' `--version`, which is the arms' CPU too.
        cpu: cpu::since(cpu_at_start),
    })
}

/// What every tree of a run shares.
struct Runner<'a> {
    matrix: &'a Matrix,
    arms: &'a Arms<'a>,
    pool: &'a rayon::ThreadPool,
    progress: &'a dyn Progress,
}

/// What the run found so far.
struct Found {
    trees: Vec<TreeInfo>,
    cases: Vec<CaseOutcome>,
    warnings: Vec<String>,
}

impl Runner<'_> {
    /// Runs every case of one tree, built fresh from its spec or read where it is,
    /// with its own case folders in `dir`.
    fn tree(
        &self,
        source: &TreeSource,
        planned: &[PlannedCase],
        dir: &Path,
        found: &mut Found,
    ) -> Result<(), MatrixError> {
        let matrix = self.matrix;
        let opened = open_tree(source, &dir.with_extension("image"))?;
        let skipped = opened.skipped();
        let OpenTree {
            name,
            mut built,
            image,
            root,
        } = opened;
        let (baseline, watch) = fingerprint_and_watch(&root, matrix.guard);
        if matrix.user.is_root() && baseline.has_permission_fixtures() {
            found.warnings.push(format!(
                "tree {name} has folders or files their owner may not read, but the arms run as {}: those fixtures test nothing",
                matrix.user.describe()
            ));
        }
        self.progress.tree_started(&name, planned.len());
        std::fs::create_dir(dir).map_err(MatrixError::Scratch)?;
        let rebuild = rebuild(
            source,
            &root,
            built.is_some() || image.is_some(),
            matrix.keep,
        );
        let guard = (matrix.guard.zip(watch))
            .map(|(depth, watch)| Guard::new(&root, depth, &baseline, watch));
        let fs = source.file_system();
        let on_tree = OnTree {
            name: &name,
            fs,
            root: &root,
            rebuild: rebuild.as_ref(),
            dir,
        };
        let mut cases = self.cases(&on_tree, guard.as_ref(), planned);
        let (how, fingerprints) = guarded(guard.as_ref(), &mut cases);
        found
            .warnings
            .extend(cases.iter().filter_map(equal_crashes));
        found.cases.extend(cases);
        if let (true, Some(tree)) = (matrix.keep, built.as_mut()) {
            tree.keep();
        }
        if let (true, Some(again)) = (matrix.keep && image.is_some(), rebuild.as_ref()) {
            found.warnings.push(format!(
                "--keep does not keep {name}: an image is mounted only inside eqcheck's private mount namespace, which ends with it; `eqcheck trees build {} --fs {fs} --into DIR` builds it again",
                again.source,
            ));
        }
        found.trees.push(TreeInfo {
            skipped,
            path: root.display().to_string(),
            built: built.is_some() || image.is_some(),
            // An image lives in eqcheck's private mount namespace and goes with it.
            kept: matrix.keep && built.is_some(),
            counts: baseline.counts,
            file_system: crate::walk::file_system::name(&root),
            fs: fs.name().to_string(),
            guard: how,
            fingerprints,
            name,
        });
        Ok(())
    }

    /// Every planned case of one tree, judged, in plan order.
    fn cases(
        &self,
        tree: &OnTree,
        guard: Option<&Guard>,
        planned: &[PlannedCase],
    ) -> Vec<CaseOutcome> {
        let lanes = lanes::Lanes::new(tree.dir);
        let one = |case: &PlannedCase| {
            let outcome =
                lanes.with_lane(|lane| case::run_case(self.arms, guard, tree, case, lane));
            self.progress.case_done(&outcome);
            outcome
        };
        // With one job the cases run in file order, so a tree change is pinned on
        // the arm that made it.
        let cases = if self.matrix.jobs == 1 {
            planned.iter().map(one).collect()
        } else {
            (self.pool).install(|| planned.par_iter().map(one).collect())
        };
        lanes.remove();
        cases
    }
}

/// One tree as its cases see it.
pub(super) struct OnTree<'a> {
    pub name: &'a str,
    /// The `--fs` it was built on: `native` for the temp folder's own.
    pub fs: crate::fsimage::FileSystem,
    pub root: &'a Path,
    pub rebuild: Option<&'a arm::Rebuild>,
    dir: &'a Path,
}

/// A case called equal though both arms crashed: true (the candidate crashes as
/// the reference does), but the walk it was to test never ran to its end, which a
/// summary of passes would hide. One warning per case, so shards' warnings merge.
fn equal_crashes(case: &CaseOutcome) -> Option<String> {
    let crashed = |run: &ArmRun| matches!(run.status, ArmStatus::Signaled { .. });
    (case.verdict.is_equal() && case.arms().iter().all(|(_, run)| crashed(run))).then(|| {
        format!(
            "{}: both arms crashed ({}), so the case passed without testing the walk",
            case.name(),
            case.reference.status.describe()
        )
    })
}

/// How the tree was guarded and how many fingerprints that took, once its final
/// fingerprint has been compared: a change no arm was blamed for errs the last case.
fn guarded(guard: Option<&Guard>, cases: &mut [CaseOutcome]) -> (Option<String>, usize) {
    let Some(guard) = guard else {
        return (None, 1);
    };
    if let (Some(mut changes), Some(last)) = (guard.finish(), cases.last_mut()) {
        changes.insert(
            0,
            "(found by the tree's final fingerprint: no arm was seen making it)".into(),
        );
        last.verdict = crate::outcome::Verdict::TreeChanged {
            arm: crate::outcome::Blame::Earlier,
            changes,
        };
    }
    let (how, fingerprints) = guard.report();
    (Some(how), fingerprints)
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

/// What every arm's entry in the report shares: who the arms ran as, the host, the
/// run's timeout, and what starts the `--version` run.
struct About<'a> {
    user: &'a str,
    host: &'a Host,
    timeout: Duration,
    launcher: &'a keeper::Launcher,
    /// The run's scratch folder: each arm's `--version` output goes in a folder
    /// of its own there.
    dir: &'a Path,
}

/// The arm as the report names it: its command, the file that ran (size, sha256,
/// architecture, version), how it ran, and the copy that ran in its place when the
/// arm user could not reach it.
fn arm_info(arm: &Arm, ran: &Arm, about: &About, folder: &str) -> ArmInfo {
    let About {
        user,
        host,
        timeout,
        launcher,
        dir,
    } = *about;
    let binary = arm.command.first().and_then(|p| arm::locate_program(p));
    let file = binary.as_deref().and_then(identity::program_file);
    let architecture = file.as_ref().and_then(|f| f.architecture.clone());
    let (translated, execution) = identity::execution(arm, architecture.as_deref(), host);
    ArmInfo {
        command: arm.command.clone(),
        argv0: ran.argv0.clone(),
        size: file.as_ref().map(|f| f.size),
        binary: binary.map(|b| b.display().to_string()),
        sha256: file.map(|f| f.sha256),
        copy: (ran.copied_from.as_ref()).and_then(|_| ran.command.first().cloned()),
        user: user.to_string(),
        runner: arm.runner.as_ref().map(|r| r.command.clone()),
        version: identity::version(arm, timeout, launcher, &dir.join(folder)),
        architecture,
        translated,
        execution,
        built_from: arm.built_from.clone(),
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
