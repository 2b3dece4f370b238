//! What `eqcheck bench` found: every timed run as it happened, and the figures
//! made from the runs that count. The bench runner fills these in; the bench
//! reporters (terminal table, Markdown, JSON) read nothing else.

use serde::{Deserialize, Serialize};

use super::{ArmStatus, Host};

/// The version of the bench JSON report's schema; bumped on any incompatible change.
pub const BENCH_SCHEMA_VERSION: u32 = 1;

/// A whole bench.
#[derive(Debug, Serialize, Deserialize)]
pub struct BenchOutcome {
    pub schema_version: u32,
    pub eqcheck_version: String,
    pub host: Host,
    /// A is the reference arm, B the candidate: B/A below 1 means B is faster.
    pub a: BenchArm,
    pub b: BenchArm,
    /// The lower bound timed beside the arms (`--baseline`), split shell-word style.
    pub baseline: Option<Vec<String>>,
    /// The shell command run before every timed run (`--prepare`).
    pub prepare: Option<String>,
    /// Timed rounds per row, and the warm-up rounds before them that are run,
    /// checked for correctness, and left out of every figure.
    pub rounds: usize,
    pub warmup: usize,
    /// Who the arms ran as.
    pub arms_ran_as: String,
    /// The 1-, 5- and 15-minute load averages when the bench began and ended,
    /// where the system tells them.
    pub load_average_start: Option<[f64; 3]>,
    pub load_average_end: Option<[f64; 3]>,
    pub trees: Vec<BenchTree>,
    /// What makes the figures less trustworthy (a ratio that ranged too widely,
    /// too few rounds that count, a loaded machine).
    pub warnings: Vec<String>,
}

/// One arm as configured.
#[derive(Debug, Serialize, Deserialize)]
pub struct BenchArm {
    pub command: Vec<String>,
    /// The name the program saw as its own (`argv[0]`).
    pub argv0: String,
}

/// One tree's rows, and its baseline.
#[derive(Debug, Serialize, Deserialize)]
pub struct BenchTree {
    pub name: String,
    pub path: String,
    /// Entries of the tree (files, folders, links, others), from its first fingerprint.
    pub entries: u64,
    pub rows: Vec<BenchRow>,
    /// The `--baseline` command's figures on this tree, timed once per round.
    pub baseline: Option<BaselineFigures>,
    /// Why the tree's rounds stopped early (the tree changed under an arm, an
    /// interrupt), if they did.
    pub stopped: Option<String>,
}

/// One row of the table: a flag set with one variant's extra arguments.
#[derive(Debug, Serialize, Deserialize)]
pub struct BenchRow {
    pub group: String,
    /// The set's words, or `(none)`.
    pub set: String,
    /// The variant's label as given (`default` for no extra arguments).
    pub variant: String,
    /// The argument vectors A and B ran with.
    pub a_argv: Vec<String>,
    pub b_argv: Vec<String>,
    pub a: Figures,
    pub b: Figures,
    /// B's figure over A's in each timed round where both counted.
    pub ratio: Option<RatioFigures>,
    /// Runs whose output was not A's first output: shown, never averaged.
    pub wrong: Vec<WrongRun>,
    /// Every run of this row, warm-up included, in the order they ran.
    pub runs: Vec<TimedRun>,
}

impl BenchRow {
    /// The row as notes and warnings name it: `TREE GROUP:SET [VARIANT]`, as a case
    /// id names the set, so two groups' sets of one label stay apart.
    pub fn named(&self, tree: &str) -> String {
        format!("{tree} {}:{} [{}]", self.group, self.set, self.variant)
    }
}

/// The median, least and greatest of one figure over the runs that count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

/// One arm's figures on one row, over its timed runs that completed with the
/// right output.
#[derive(Debug, Serialize, Deserialize)]
pub struct Figures {
    /// Runs that count.
    pub counted: usize,
    /// Timed runs that failed (could not start, timed out, killed) or were wrong.
    pub left_out: usize,
    pub wall_ms: Option<Spread>,
    /// User plus system CPU of the arm's whole process tree.
    pub cpu_ms: Option<Spread>,
    pub user_ms: Option<Spread>,
    pub system_ms: Option<Spread>,
    /// Peak resident set of the largest process of the arm's tree (Unix), or peak
    /// committed memory of its largest process (Windows).
    pub peak_bytes: Option<Spread>,
}

/// B over A, round by round.
#[derive(Debug, Serialize, Deserialize)]
pub struct RatioFigures {
    pub wall: Spread,
    pub cpu: Option<Spread>,
    /// Each timed round's wall ratio, in round order (None where a side did not count).
    pub wall_by_round: Vec<Option<f64>>,
}

/// The baseline's figures and its runs; the reports give each arm's median wall
/// time over the baseline's.
#[derive(Debug, Serialize, Deserialize)]
pub struct BaselineFigures {
    pub figures: Figures,
    pub runs: Vec<TimedRun>,
}

/// Which command a timed run ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    A,
    B,
    Baseline,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::A => "A",
            Side::B => "B",
            Side::Baseline => "baseline",
        }
    }
}

/// How a run's output compared with A's first run of its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Correctness {
    /// This is A's first run: the output every other run is held to.
    First,
    /// Byte for byte the same streams and exit status.
    Same,
    /// Equal once the flag-set file's rules ran (sorting, masks).
    EqualAfterRules,
    /// Differs: a correctness failure.
    Wrong,
    /// Not compared: the run did not complete (or, for the baseline, is not held to
    /// any output).
    NotCompared,
}

/// One timed run, as it happened.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TimedRun {
    /// 1-based; warm-up rounds come first and are marked.
    pub round: usize,
    pub warmup: bool,
    /// 1-based place in its round, over every run of the tree's round: shows the
    /// alternation of A and B and the interleaving of rows.
    pub place: usize,
    pub side: Side,
    pub status: ArmStatus,
    pub wall_ms: f64,
    pub user_ms: Option<f64>,
    pub system_ms: Option<f64>,
    pub peak_bytes: Option<u64>,
    /// Processes the run left running past its end, which were then killed: its
    /// time does not include what they went on to do.
    #[serde(default)]
    pub left_running: usize,
    pub stdout_sha256: Option<String>,
    pub stderr_sha256: Option<String>,
    pub correctness: Correctness,
    /// Whether the run is in the figures: timed, completed and correct.
    pub counted: bool,
}

/// A run whose output was not A's first output.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WrongRun {
    pub side: Side,
    pub round: usize,
    pub warmup: bool,
    /// What differs, as the matrix report says it, with the start of the diff.
    pub how: String,
}

/// Hears where a bench is, for a progress line. Called between timed runs, never
/// during one.
pub trait BenchProgress: Sync {
    /// A round of `tree` begins: `round` of `rounds` (warm-up rounds included).
    fn round(&self, tree: &str, round: usize, rounds: usize, warmup: bool);
}

impl BenchOutcome {
    /// Whether any run gave the wrong output.
    pub fn any_wrong(&self) -> bool {
        self.trees
            .iter()
            .flat_map(|t| &t.rows)
            .any(|r| !r.wrong.is_empty())
    }

    /// Whether any run failed to complete, a baseline run failed, or a tree stopped
    /// early.
    pub fn any_failed(&self) -> bool {
        self.trees.iter().any(|t| {
            t.stopped.is_some()
                || t.rows
                    .iter()
                    .flat_map(|r| &r.runs)
                    .any(|r| !r.status.ran_to_its_end())
                || (t.baseline.iter())
                    .flat_map(|b| &b.runs)
                    .any(|r| !r.status.succeeded())
        })
    }

    /// The exit code: a wrong output is a difference (1), else a run that failed
    /// or a tree that stopped is the harness's (3), else 0.
    pub fn exit_code(&self) -> u8 {
        if self.any_wrong() {
            crate::exit::DIFFERENCES
        } else if self.any_failed() {
            crate::exit::HARNESS_FAILURE
        } else {
            crate::exit::ALL_EQUAL
        }
    }
}
