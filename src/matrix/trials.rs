//! One case run again and again on a tree that changes between runs: what
//! `eqcheck shrink` tries. The arms are made ready and the keeper started once;
//! each trial is guarded as a tree of a run is, from its own first fingerprint.

use std::path::Path;

use super::case::{self, Arms};
use super::guard::Guard;
use super::plan::PlannedCase;
use super::{
    fingerprint_and_watch, guarded, keeper, prepare, Matrix, MatrixError, OnTree, Prepared,
};
use crate::flagset::FlagSetFile;
use crate::outcome::CaseOutcome;

/// One case run again and again on a folder that changes between runs: what
/// `eqcheck shrink` tries. Each trial is guarded as a tree of a run is, from its own
/// first fingerprint, so an arm that writes to the tree is caught there too.
pub(crate) struct Trials {
    prepared: Prepared,
    launcher: keeper::Launcher,
}

impl Trials {
    /// Makes the arms ready and starts the keeper, once for every trial.
    pub fn start(matrix: &Matrix) -> Result<Trials, MatrixError> {
        let prepared = prepare(matrix)?;
        let launcher = keeper::Launcher::start().map_err(MatrixError::Launcher)?;
        Ok(Trials { prepared, launcher })
    }

    /// The scratch folder the trials' own folders go in.
    pub fn scratch(&self) -> &Path {
        self.prepared.scratch.path()
    }

    /// Runs `case` with `flag_sets` (the run's, or one whose `common` was cut) on
    /// the tree `at` names, each arm `runs` times.
    pub fn run(
        &self,
        matrix: &Matrix,
        flag_sets: &FlagSetFile,
        at: &TrialAt,
        case: &PlannedCase,
        runs: usize,
    ) -> CaseOutcome {
        let TrialAt { tree, root, dir } = *at;
        let (baseline, watch) = fingerprint_and_watch(root, matrix.guard);
        let guard = (matrix.guard.zip(watch))
            .map(|(depth, watch)| Guard::new(root, depth, &baseline, watch));
        let arms = Arms {
            reference: &self.prepared.reference,
            candidate: &self.prepared.candidate,
            flag_sets,
            env: &self.prepared.env,
            runs: runs.max(1),
            launcher: &self.launcher,
        };
        let on_tree = OnTree {
            name: tree,
            fs: crate::fsimage::FileSystem::Native,
            root,
            rebuild: None,
            dir,
        };
        let mut outcome = case::run_case(&arms, guard.as_ref(), &on_tree, case, dir);
        // Each trial has a folder of its own, so none is left for a later one.
        let _ = crate::cleanup::remove_tree(dir);
        guarded(guard.as_ref(), std::slice::from_mut(&mut outcome));
        outcome
    }
}

/// Where a trial runs: the tree's name as case ids give it, its root, and the
/// trial's own case folder.
#[derive(Clone, Copy)]
pub(crate) struct TrialAt<'a> {
    pub tree: &'a str,
    pub root: &'a Path,
    pub dir: &'a Path,
}
