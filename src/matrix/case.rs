//! One case: both arms run on the same tree, alternating run by run, the tree
//! guarded after each, then judged; and each arm's runs as the report gives them.

use std::path::Path;

use super::arm::{self, Arm};
use super::compare;
use super::exec::{self, ArmEnvironment};
use super::guard::Guard;
use super::plan::PlannedCase;
use crate::flagset::FlagSetFile;
use crate::outcome::{ArmRun, Blame, CaseOutcome, Verdict};

/// The two arms as they are run, and what every case shares.
pub(super) struct Arms<'a> {
    pub reference: &'a Arm,
    pub candidate: &'a Arm,
    pub flag_sets: &'a FlagSetFile,
    pub env: &'a ArmEnvironment,
    pub runs: usize,
    /// What starts the runs.
    pub launcher: &'a super::keeper::Launcher,
}

/// Runs both arms of one case on `tree`, whose `rebuild` says how a repro line
/// builds the tree again when the run removes it. The case's files go in `dir`,
/// made when missing and emptied once judged, for the next case in that folder to
/// write into (see [`super::lanes`]); the caller removes it.
pub(super) fn run_case(
    arms: &Arms,
    guard: Option<&Guard>,
    tree: &super::OnTree,
    case: &PlannedCase,
    dir: &Path,
) -> CaseOutcome {
    let (root, rebuild) = (tree.root, tree.rebuild);
    let ref_argv = arm::argv(arms.reference, arms.flag_sets, &case.set, root);
    let cand_argv = arm::argv(arms.candidate, arms.flag_sets, &case.set, root);
    let mut moved = None;
    let mut reference = Vec::new();
    let mut candidate = Vec::new();
    match made(dir) {
        Ok(()) => {
            // Runs alternate between the arms, so whatever drifts with time (the
            // clock, the cache) drifts under both alike.
            for run in 1..=arms.runs {
                let name = |arm: &str| match arms.runs {
                    1 => arm.to_string(),
                    _ => format!("{arm}.{run}"),
                };
                let on = |arm, argv, blame| Guarded {
                    arm,
                    argv,
                    blame,
                    case: &case.id,
                    guard,
                };
                let reference_arm = on(arms.reference, &ref_argv, Blame::Reference);
                let (ran, seen) = reference_arm.run(arms, dir, &name("reference"));
                reference.push(share_repeated_output(reference.first(), ran));
                moved = moved.or(seen);
                let candidate_arm = on(arms.candidate, &cand_argv, Blame::Candidate);
                let (ran, seen) = candidate_arm.run(arms, dir, &name("candidate"));
                candidate.push(share_repeated_output(candidate.first(), ran));
                moved = moved.or(seen);
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
    let judged = judged(arms, case, root, moved, (&reference, &candidate));
    let mut outcome = CaseOutcome {
        id: case.id.clone(),
        tree: tree.name.to_string(),
        fs: tree.fs.name().to_string(),
        group: case.group.clone(),
        set: case.set.label(),
        reference: arm_run(arms.reference, &ref_argv, arms.env, rebuild, reference),
        candidate: arm_run(arms.candidate, &cand_argv, arms.env, rebuild, candidate),
        verdict: judged.verdict,
        streams: judged.streams,
        fired: judged.fired,
        notes: judged.notes,
    };
    outcome.notes.extend(left_running_notes(&outcome));
    outcome
}

/// The case's verdict: the tree change an arm made, or what comparing the runs
/// finds. The runs' files are emptied after, for the next case in the folder.
fn judged(
    arms: &Arms,
    case: &PlannedCase,
    root: &Path,
    moved: Option<Verdict>,
    (reference, candidate): (&[exec::Captured], &[exec::Captured]),
) -> compare::Judged {
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
        None => compare::judge(reference, candidate, root, &rules),
    };
    for run in reference.iter().chain(candidate) {
        emptied(&run.stdout);
        emptied(&run.stderr);
    }
    judged
}

/// What an arm left running is not in its output, yet it is behaviour: a walker
/// that leaves a helper behind, or one that its rewrite stopped leaving.
fn left_running_notes(case: &CaseOutcome) -> Vec<String> {
    (case.arms().into_iter())
        .filter(|(_, arm)| arm.left_running > 0)
        .map(|(name, arm)| {
            let (processes, killed) = match arm.left_running {
                1 => ("a process".to_string(), "it was killed"),
                n => (format!("{n} processes"), "they were killed"),
            };
            format!("the {name} left {processes} running past its end; {killed}")
        })
        .collect()
}

/// One arm of one case, with the tree's guard.
struct Guarded<'a> {
    arm: &'a Arm,
    argv: &'a [std::ffi::OsString],
    blame: Blame,
    case: &'a str,
    guard: Option<&'a Guard<'a>>,
}

impl Guarded<'_> {
    /// Runs the arm once, the guard told before and asked after: what the arm
    /// captured, and the tree-changed verdict if the tree moved.
    fn run(&self, arms: &Arms, dir: &Path, name: &str) -> (exec::Captured, Option<Verdict>) {
        if let Some(guard) = self.guard {
            guard.arm_started(self.blame, self.case);
        }
        let argv0 = self.arm.spawned_as();
        let ran = exec::run_arm(arms.launcher, self.argv, &argv0, arms.env, dir, name);
        let moved = self.guard.and_then(|g| g.check(self.blame, self.case));
        (ran, moved)
    }
}

/// The case's folder, made unless an earlier case left it.
fn made(dir: &Path) -> std::io::Result<()> {
    match std::fs::create_dir(dir) {
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// A captured file truncated to nothing, where there is one: kept, not removed, so
/// the next case writes into it and needs no new inode, and emptied here rather
/// than when it is opened again (see the keeper's `empty_output`).
fn emptied(path: &Path) {
    if path.as_os_str().is_empty() {
        return;
    }
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|file| file.set_len(0));
}

/// A later run whose output is byte for byte its arm's first is pointed at the
/// first run's files and its own are emptied, so `--runs 50` of a large output
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
        emptied(&later.stdout);
        emptied(&later.stderr);
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
    let left_running = runs.iter().map(|r| r.left_running).max().unwrap_or(0);
    let first = runs
        .into_iter()
        .next()
        .expect("every case runs each arm once");
    ArmRun {
        argv: argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        repro: arm::repro(arm, argv, env, rebuild),
        status: first.status,
        duration_ms: durations_ms[0],
        durations_ms,
        left_running,
    }
}
