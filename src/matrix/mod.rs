//! The matrix: every case (tree × flag set) run by both arms on the same on-disk
//! tree, cases in parallel, each judged as soon as both arms finish. Trees named by
//! spec are built fresh before their cases and removed after them; a tree given by
//! path is only read.

pub mod compare;
pub mod exec;
pub mod plan;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rayon::prelude::*;

use crate::fixtures::{self, cleanup, TreeSpec};
use crate::flagset::FlagSetFile;
use crate::outcome::{
    ArmInfo, ArmRun, CaseOutcome, RunOutcome, TreeCounts, TreeInfo, SCHEMA_VERSION,
};
use exec::ArmEnvironment;
use plan::{Arm, PlannedCase};

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
    pub jobs: usize,
    pub timeout: Duration,
}

/// A failure of the harness itself (not of an arm): exit code 3.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    #[error(transparent)]
    Fixture(#[from] fixtures::FixtureError),
    #[error("cannot make the run's scratch folder: {0}")]
    Scratch(std::io::Error),
    #[error("cannot start {jobs} worker threads: {source}")]
    Pool {
        jobs: usize,
        source: rayon::ThreadPoolBuildError,
    },
}

/// Runs every case and returns what was found.
pub fn run(matrix: &Matrix) -> Result<RunOutcome, MatrixError> {
    cleanup::on_interrupt_clean_up();
    let scratch = Scratch::new()?;
    let home = scratch.path().join("home");
    std::fs::create_dir(&home).map_err(MatrixError::Scratch)?;
    let env = ArmEnvironment::pinned(&home, matrix.timeout);
    pin_umask();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(matrix.jobs)
        .build()
        .map_err(|source| MatrixError::Pool {
            jobs: matrix.jobs,
            source,
        })?;

    let mut trees = Vec::new();
    let mut cases = Vec::new();
    for (tree_index, source) in matrix.trees.iter().enumerate() {
        let (name, built) = match source {
            TreeSource::Spec(spec) => (spec.name.clone(), Some(fixtures::build_temp(spec)?)),
            TreeSource::Existing { name, .. } => (name.clone(), None),
        };
        let root = match (&built, source) {
            (Some(tree), _) => tree.path().to_path_buf(),
            (None, TreeSource::Existing { path, .. }) => path.clone(),
            (None, TreeSource::Spec(_)) => unreachable!("a spec tree is always built"),
        };
        // Counting reads every folder once, which also settles directory atimes
        // before the first arm looks.
        let counts = count_entries(&root);
        let planned = plan::cases_for_tree(&name, &matrix.flag_sets, &matrix.groups);
        let case_dir = scratch.path().join(format!("tree-{tree_index}"));
        std::fs::create_dir(&case_dir).map_err(MatrixError::Scratch)?;
        let outcomes: Vec<CaseOutcome> = pool.install(|| {
            planned
                .par_iter()
                .enumerate()
                .map(|(i, case)| {
                    run_case(
                        matrix,
                        &env,
                        &name,
                        &root,
                        case,
                        &case_dir.join(i.to_string()),
                    )
                })
                .collect()
        });
        cases.extend(outcomes);
        trees.push(TreeInfo {
            name,
            path: root.display().to_string(),
            built: built.is_some(),
            counts,
        });
    }
    Ok(RunOutcome {
        schema_version: SCHEMA_VERSION,
        reference: ArmInfo {
            command: matrix.reference.command.clone(),
        },
        candidate: ArmInfo {
            command: matrix.candidate.command.clone(),
        },
        flag_sets: matrix.flag_sets.file.clone(),
        trees,
        cases,
    })
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
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = cleanup::remove_registered_folder(&self.0);
    }
}

fn run_case(
    matrix: &Matrix,
    env: &ArmEnvironment,
    tree: &str,
    root: &Path,
    case: &PlannedCase,
    dir: &Path,
) -> CaseOutcome {
    let common = &matrix.flag_sets.common;
    let ref_argv = plan::argv(&matrix.reference, common, &case.set, root);
    let cand_argv = plan::argv(&matrix.candidate, common, &case.set, root);
    let (reference, candidate) = match std::fs::create_dir(dir) {
        Ok(()) => (
            exec::run_arm(&ref_argv, env, dir, "reference"),
            exec::run_arm(&cand_argv, env, dir, "candidate"),
        ),
        Err(err) => {
            let failed = || exec::Captured::failed(format!("cannot make {}: {err}", dir.display()));
            (failed(), failed())
        }
    };
    let (verdict, streams) = compare::judge(&reference, &candidate, root);
    let _ = std::fs::remove_dir_all(dir);
    CaseOutcome {
        id: case.id.clone(),
        tree: tree.to_string(),
        group: case.group.clone(),
        set: case.set.label(),
        reference: arm_run(&ref_argv, reference),
        candidate: arm_run(&cand_argv, candidate),
        verdict,
        streams,
    }
}

fn arm_run(argv: &[std::ffi::OsString], captured: exec::Captured) -> ArmRun {
    ArmRun {
        argv: argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        repro: plan::repro(argv),
        status: captured.status,
        duration_ms: captured.duration.as_secs_f64() * 1000.0,
    }
}

/// Counts a tree's entries by kind, the root included, without following links.
pub fn count_entries(root: &Path) -> TreeCounts {
    let mut counts = TreeCounts::default();
    for entry in walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .flatten()
    {
        let kind = entry.file_type();
        counts.entries += 1;
        if kind.is_dir() {
            counts.folders += 1;
        } else if kind.is_file() {
            counts.files += 1;
        } else if kind.is_symlink() {
            counts.symlinks += 1;
        } else {
            counts.other += 1;
        }
    }
    counts
}

/// Arms create nothing in the tree, but what they write elsewhere (and the tree's
/// own files) gets the same permissions on every machine.
#[cfg(unix)]
fn pin_umask() {
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
}

#[cfg(not(unix))]
fn pin_umask() {}
