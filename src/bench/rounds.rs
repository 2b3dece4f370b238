//! One tree's bench: its rows (set × variant), then round after round of timed
//! runs, each checked against its row's first output and watched by the tree
//! guard; the figures once the rounds are over. A tree that an arm or `--prepare`
//! changes, or a `--prepare` command that fails, stops the tree's rounds: timings
//! of a changed tree compare nothing, and the run that changed it is not counted.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::check::{Digests, First, Output};
use super::{stats, BenchOptions, Variant};
use crate::cleanup;
use crate::flagset::{command_with_tree, FlagSet, TREE_PLACEHOLDER};
use crate::matrix::compare::CaseRules;
use crate::matrix::exec::{self, Captured};
use crate::matrix::guard::Guard;
use crate::matrix::keeper::{Cost, Launcher};
use crate::matrix::plan::{self, PlannedCase};
use crate::matrix::{self, arm, Matrix, MatrixError, OpenTree, Prepared, TreeSource};
use crate::outcome::bench::{
    BaselineFigures, BenchProgress, BenchRow, BenchTree, Correctness, Side, TimedRun, WrongRun,
};
use crate::outcome::{Blame, Verdict};

/// What every tree of a bench shares.
pub(super) struct Bench<'a> {
    pub matrix: &'a Matrix,
    pub options: &'a BenchOptions,
    pub prepared: &'a Prepared,
    pub progress: &'a dyn BenchProgress,
    pub launcher: &'a Launcher,
}

/// One row as it is run: its case, its argument vectors, its folder, its runs.
struct Row {
    case: PlannedCase,
    variant: String,
    /// The id the guard names the row by.
    id: String,
    a_argv: Vec<OsString>,
    b_argv: Vec<OsString>,
    dir: PathBuf,
    runs: Vec<TimedRun>,
    first: Option<First>,
    /// B's runs made before A first completed, judged once it has.
    waiting: Vec<(usize, Output)>,
    wrong: Vec<WrongRun>,
}

/// Where a run stands in the bench.
#[derive(Clone, Copy)]
struct Slot {
    round: usize,
    warmup: bool,
    place: usize,
}

/// Benches every row of one tree, in `dir`.
pub(super) fn bench_tree(
    bench: &Bench,
    source: &TreeSource,
    dir: &Path,
) -> Result<BenchTree, MatrixError> {
    let tree = matrix::open_tree(source, &dir.with_extension("image"))?;
    let (fingerprint, watch) = matrix::fingerprint_and_watch(&tree.root, bench.matrix.guard);
    std::fs::create_dir(dir).map_err(MatrixError::Scratch)?;
    let mut rows = plan_rows(bench, &tree, dir)?;
    let guard = (bench.matrix.guard.zip(watch))
        .map(|(depth, watch)| Guard::new(&tree.root, depth, &fingerprint, watch));
    let mut baseline = Vec::new();
    let options = bench.options;
    let total = options.warmup + options.rounds;
    let mut stopped = None;
    for round in 1..=total {
        let warmup = round <= options.warmup;
        bench.progress.round(&tree.name, round, total, warmup);
        let on = OnTree {
            bench,
            tree: &tree,
            guard: guard.as_ref(),
        };
        if let Err(why) = on.round(&mut rows, &mut baseline, round, warmup) {
            stopped = Some(why);
            break;
        }
    }
    if let (None, Some(changes)) = (&stopped, guard.as_ref().and_then(Guard::finish)) {
        stopped = Some(format!(
            "the tree changed while the bench ran, and no run was seen making it: {}",
            changes.join("; ")
        ));
    }
    let _ = cleanup::remove_tree(dir);
    Ok(BenchTree {
        name: tree.name.clone(),
        path: tree.root.display().to_string(),
        entries: fingerprint.counts.entries,
        rows: rows.into_iter().map(Row::finish).collect(),
        baseline: options.baseline.as_ref().map(|_| BaselineFigures {
            figures: stats::figures(&baseline, Side::Baseline),
            runs: baseline,
        }),
        stopped,
    })
}

/// Every selected case of the tree (only the first without `--sets`) with every
/// variant, each with a folder of its own.
fn plan_rows(bench: &Bench, tree: &OpenTree, dir: &Path) -> Result<Vec<Row>, MatrixError> {
    let matrix = bench.matrix;
    let mut cases = plan::cases_for_tree(&tree.name, &matrix.flag_sets, &matrix.groups);
    if bench.options.first_set_only {
        cases.truncate(1);
    }
    let mut rows = Vec::new();
    for case in cases {
        for variant in &bench.options.variants {
            let row_dir = dir.join(format!("row-{}", rows.len()));
            std::fs::create_dir(&row_dir).map_err(MatrixError::Scratch)?;
            rows.push(row(bench, tree, case.clone(), variant, row_dir));
        }
    }
    Ok(rows)
}

fn row(bench: &Bench, tree: &OpenTree, case: PlannedCase, variant: &Variant, dir: PathBuf) -> Row {
    let set = FlagSet {
        line: case.set.line,
        args: case
            .set
            .args
            .iter()
            .chain(&variant.words)
            .cloned()
            .collect(),
    };
    let flag_sets = &bench.matrix.flag_sets;
    let prepared = bench.prepared;
    Row {
        id: format!("{} [{}]", case.id, variant.label),
        a_argv: arm::argv(&prepared.reference, flag_sets, &set, &tree.root),
        b_argv: arm::argv(&prepared.candidate, flag_sets, &set, &tree.root),
        variant: variant.label.clone(),
        case,
        dir,
        runs: Vec::new(),
        first: None,
        waiting: Vec::new(),
        wrong: Vec::new(),
    }
}

/// One tree as a round sees it.
struct OnTree<'a> {
    bench: &'a Bench<'a>,
    tree: &'a OpenTree,
    guard: Option<&'a Guard<'a>>,
}

impl OnTree<'_> {
    /// The baseline, then every row with A first in odd rounds and B first in
    /// even ones; `Err` says why the tree's rounds stop.
    fn round(
        &self,
        rows: &mut [Row],
        baseline: &mut Vec<TimedRun>,
        round: usize,
        warmup: bool,
    ) -> Result<(), String> {
        let mut slot = Slot {
            round,
            warmup,
            place: 0,
        };
        if let Some(words) = &self.bench.options.baseline {
            slot.place += 1;
            baseline.push(self.baseline(words, slot)?);
        }
        let order = match round % 2 {
            1 => [Side::A, Side::B],
            _ => [Side::B, Side::A],
        };
        for row in rows.iter_mut() {
            for side in order {
                slot.place += 1;
                self.run_side(row, side, slot)?;
            }
        }
        match cleanup::interrupted() {
            true => Err("interrupted".into()),
            false => Ok(()),
        }
    }

    /// One arm's timed run of a row, checked and recorded.
    fn run_side(&self, row: &mut Row, side: Side, slot: Slot) -> Result<(), String> {
        self.prepare()?;
        let prepared = self.bench.prepared;
        let (arm, argv, blame) = match side {
            Side::A => (&prepared.reference, &row.a_argv, Blame::Reference),
            _ => (&prepared.candidate, &row.b_argv, Blame::Candidate),
        };
        if let Some(guard) = self.guard {
            guard.arm_started(blame, &row.id);
        }
        let (cost, captured) = self.launch(argv, &arm.spawned_as(), &row.dir, side);
        let moved = self.guard.and_then(|guard| guard.check(blame, &row.id));
        let output = Output::read(captured);
        let index = row.runs.len();
        row.runs.push(record(slot, side, &cost, &output));
        self.settle(row, index, output);
        match moved {
            Some(Verdict::TreeChanged { changes, .. }) => {
                // Timed on a tree it was changing: its figure compares nothing.
                row.runs[index].counted = false;
                Err(format!(
                    "{side} ({}) changed the tree in round {} of {}: {}",
                    blame.name(),
                    slot.round,
                    row.id,
                    changes.join("; "),
                    side = side.name()
                ))
            }
            _ => Ok(()),
        }
    }

    /// Judges a recorded run against its row's first output, or makes it the
    /// first; B's runs wait for A's first output when A has none yet.
    fn settle(&self, row: &mut Row, index: usize, output: Output) {
        let side = row.runs[index].side;
        match (&row.first, side, &output.digests) {
            (_, _, None) => output.remove(),
            (None, Side::A, Some(_)) => {
                row.runs[index].correctness = Correctness::First;
                row.runs[index].counted = !row.runs[index].warmup;
                row.first = Some(First::keep(output, &row.dir));
                for (waiting, output) in std::mem::take(&mut row.waiting) {
                    self.judge(row, waiting, output);
                }
            }
            (None, _, Some(_)) => {
                // Kept under its own name until A's first output comes.
                let output = output.kept_as(&row.dir, &format!("waiting-{index}"));
                row.waiting.push((index, output));
            }
            (Some(_), _, Some(_)) => self.judge(row, index, output),
        }
    }

    fn judge(&self, row: &mut Row, index: usize, output: Output) {
        let first = row
            .first
            .as_ref()
            .expect("judged only once A's first run is kept");
        let rules = CaseRules {
            group: &row.case.group,
            rules: &self.bench.matrix.flag_sets.rules,
        };
        let (correctness, how) = first.judge(&output, &self.tree.root, &rules);
        output.remove();
        let run = &mut row.runs[index];
        run.correctness = correctness;
        run.counted = !run.warmup && correctness != Correctness::Wrong;
        if let Some(how) = how {
            row.wrong.push(WrongRun {
                side: run.side,
                round: run.round,
                warmup: run.warmup,
                how,
            });
        }
    }

    /// The baseline's timed run: held to no output, counted when it exited 0 (a
    /// lower bound that failed bounds nothing).
    fn baseline(&self, words: &[String], slot: Slot) -> Result<TimedRun, String> {
        self.prepare()?;
        let argv = command_with_tree(words, &self.tree.root);
        let argv0 = arm::file_name(&words[0]);
        let dir = self.bench.prepared.scratch.path().join("baseline");
        let _ = std::fs::create_dir(&dir);
        let (cost, captured) = self.launch(&argv, &argv0, &dir, Side::Baseline);
        let moved = self
            .guard
            .and_then(|guard| guard.check(Blame::Earlier, "baseline"));
        let output = Output::read(captured);
        output.remove();
        let mut run = record(slot, Side::Baseline, &cost, &output);
        run.counted = !slot.warmup && cost.status.succeeded();
        match moved {
            Some(Verdict::TreeChanged { changes, .. }) => Err(format!(
                "the baseline changed the tree in round {}: {}",
                slot.round,
                changes.join("; ")
            )),
            _ => Ok(run),
        }
    }

    /// Runs `--prepare` through the shell, untimed, as the invoking user.
    fn prepare(&self) -> Result<(), String> {
        let Some(command) = &self.bench.options.prepare else {
            return Ok(());
        };
        let tree = shell_words::quote(&self.tree.root.to_string_lossy()).into_owned();
        let line = command.replace(TREE_PLACEHOLDER, &tree);
        let ran = shell(&line)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output();
        match ran {
            Ok(out) if out.status.success() => self.prepare_left_tree_alone(command),
            Ok(out) => Err(format!(
                "--prepare `{command}` failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(err) => Err(format!("--prepare `{command}` could not start: {err}")),
        }
    }

    /// The guard asked after `--prepare`, so a tree it changed is blamed on it and
    /// not on the run after it.
    fn prepare_left_tree_alone(&self, command: &str) -> Result<(), String> {
        match self
            .guard
            .and_then(|guard| guard.check(Blame::Earlier, "--prepare"))
        {
            Some(Verdict::TreeChanged { changes, .. }) => Err(format!(
                "--prepare `{command}` changed the tree, which the runs must all see alike: {}",
                changes.join("; ")
            )),
            _ => Ok(()),
        }
    }

    /// Starts one timed run as the arms run (pinned environment, fresh HOME, the
    /// arm user), its streams in `dir`.
    fn launch(&self, argv: &[OsString], argv0: &str, dir: &Path, side: Side) -> (Cost, Captured) {
        let env = &self.bench.prepared.env;
        let name = side.name();
        let stdout = dir.join(format!("{name}.out"));
        let stderr = dir.join(format!("{name}.err"));
        let cost = match crate::matrix::home::fresh_home(env, dir) {
            Ok((env, home)) => {
                let request = exec::request(argv, argv0, &env, home, &stdout, &stderr);
                self.bench.launcher.run(&request, &env.user)
            }
            Err(error) => Cost::failed(error),
        };
        let captured = Captured {
            status: cost.status.clone(),
            stdout,
            stderr,
            duration: cost.wall,
            left_running: cost.left_running.unwrap_or(0),
        };
        (cost, captured)
    }
}

#[cfg(unix)]
fn shell(line: &str) -> Command {
    let mut command = Command::new("sh");
    command.arg("-c").arg(line);
    command
}

#[cfg(windows)]
fn shell(line: &str) -> Command {
    let mut command = Command::new("cmd");
    command.arg("/C").arg(line);
    command
}

/// A run as the JSON gives it, before its correctness is settled.
fn record(slot: Slot, side: Side, cost: &Cost, output: &Output) -> TimedRun {
    let millis = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    TimedRun {
        round: slot.round,
        warmup: slot.warmup,
        place: slot.place,
        side,
        status: cost.status.clone(),
        wall_ms: millis(cost.wall),
        user_ms: cost.user.map(millis),
        system_ms: cost.system.map(millis),
        peak_bytes: cost.peak_bytes,
        left_running: cost.left_running.unwrap_or(0),
        stdout_sha256: output.digests.as_ref().map(|d| Digests::hex(&d.stdout)),
        stderr_sha256: output.digests.as_ref().map(|d| Digests::hex(&d.stderr)),
        correctness: Correctness::NotCompared,
        counted: false,
    }
}

impl Row {
    /// The row's figures once its rounds are over. B's runs still waiting for an
    /// A that never completed stay uncounted.
    fn finish(self) -> BenchRow {
        for (_, output) in &self.waiting {
            output.remove();
        }
        let lossy = |argv: &[OsString]| {
            argv.iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        BenchRow {
            group: self.case.group.clone(),
            set: self.case.set.label(),
            variant: self.variant,
            a_argv: lossy(&self.a_argv),
            b_argv: lossy(&self.b_argv),
            a: stats::figures(&self.runs, Side::A),
            b: stats::figures(&self.runs, Side::B),
            ratio: stats::ratio(&self.runs),
            wrong: self.wrong,
            runs: self.runs,
        }
    }
}
