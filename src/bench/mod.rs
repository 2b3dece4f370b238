//! `eqcheck bench`: A/B timing of the two arms over the same trees and flag sets as
//! `run`, where every timed run is also an equality run. Rounds run one after
//! another, never in parallel; in each, every row (a flag set with one variant's
//! extra arguments) runs A and B, A first in odd rounds and B first in even ones,
//! so whatever drifts with time (caches, clocks, thermal state) falls on both
//! alike. Warm-up rounds run first and are checked but never counted. A run whose
//! output is not A's first output of its row is wrong: it is shown and never
//! averaged. This file owns the options and the run over the trees; `rounds.rs`
//! one tree's rounds, `check.rs` the correctness of each run, `stats.rs` the
//! arithmetic; the matrix's keeper starts and measures the runs.

mod check;
mod rounds;
pub mod stats;

use crate::cleanup;
use crate::matrix::{self, Matrix, MatrixError};
use crate::outcome::bench::{BenchArm, BenchOutcome, BenchProgress, BENCH_SCHEMA_VERSION};

/// What `eqcheck bench` adds to a run's arms, trees and sets.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Timed rounds per tree.
    pub rounds: usize,
    /// Rounds run first, checked, and left out of the figures.
    pub warmup: usize,
    /// Extra arguments per row, interleaved within each round.
    pub variants: Vec<Variant>,
    /// A lower bound timed once per round on each tree (`find {tree} -printf ''`),
    /// its program already found; `{tree}` is filled in, or the tree appended.
    pub baseline: Option<Vec<String>>,
    /// A shell command run before every timed run, untimed, as the invoking user
    /// (to drop caches, say); `{tree}` is filled in, shell-quoted.
    pub prepare: Option<String>,
    /// Time only the first set of the selected groups: no `--sets` was given, and a
    /// bench of every set would take rounds × sets × variants × 2 runs.
    pub first_set_only: bool,
}

/// One variant: the words added after each set's own, and how the table names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    pub label: String,
    pub words: Vec<String>,
}

impl Variant {
    /// The label `default` means no extra arguments; anything else is split
    /// shell-word style.
    pub fn parse(text: &str) -> Result<Variant, String> {
        let words = match text.trim() {
            "default" => Vec::new(),
            other => shell_words::split(other).map_err(|err| format!("`{text}`: {err}"))?,
        };
        Ok(Variant {
            label: text.trim().to_string(),
            words,
        })
    }
}

/// Times every tree's rows and returns every run with the figures made of them.
pub fn run(
    matrix: &Matrix,
    options: &BenchOptions,
    progress: &dyn BenchProgress,
) -> Result<BenchOutcome, MatrixError> {
    let load_average_start = load_average();
    let prepared = matrix::prepare(matrix)?;
    // Started before any tree is built or fingerprinted, while eqcheck is small.
    let launcher = matrix::keeper::Launcher::start().map_err(MatrixError::Launcher)?;
    let bench = rounds::Bench {
        matrix,
        options,
        prepared: &prepared,
        progress,
        launcher: &launcher,
    };
    let mut trees = Vec::new();
    for (index, source) in matrix.trees.iter().enumerate() {
        if cleanup::interrupted() {
            break;
        }
        let dir = prepared.scratch.path().join(format!("tree-{index}"));
        trees.push(rounds::bench_tree(&bench, source, &dir)?);
    }
    let mut warnings = matrix.warnings.clone();
    warnings.extend(trees.iter().flat_map(stats::warnings));
    let arm = |arm: &matrix::arm::Arm| BenchArm {
        command: arm.command.clone(),
        argv0: arm.argv0.clone(),
    };
    Ok(BenchOutcome {
        schema_version: BENCH_SCHEMA_VERSION,
        eqcheck_version: env!("CARGO_PKG_VERSION").to_string(),
        host: matrix::identity::host(),
        a: arm(&matrix.reference),
        b: arm(&matrix.candidate),
        baseline: options.baseline.clone(),
        prepare: options.prepare.clone(),
        rounds: options.rounds,
        warmup: options.warmup,
        arms_ran_as: matrix.user.describe(),
        load_average_start,
        load_average_end: load_average(),
        trees,
        warnings,
    })
}

/// The system's 1-, 5- and 15-minute load averages.
#[cfg(unix)]
fn load_average() -> Option<[f64; 3]> {
    let mut loads = [0f64; 3];
    // SAFETY: the buffer holds the three values asked for.
    let got = unsafe { libc::getloadavg(loads.as_mut_ptr(), 3) };
    (got == 3).then_some(loads)
}

/// Windows keeps no load average.
#[cfg(not(unix))]
fn load_average() -> Option<[f64; 3]> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_are_default_or_split_words() {
        assert_eq!(
            Variant::parse("default").unwrap().words,
            Vec::<String>::new()
        );
        let threads = Variant::parse("-T 1").unwrap();
        assert_eq!(threads.words, ["-T", "1"]);
        assert_eq!(threads.label, "-T 1");
        assert_eq!(Variant::parse("-e 'a b'").unwrap().words, ["-e", "a b"]);
        let err = Variant::parse("-e 'open").unwrap_err();
        assert!(err.contains("`-e 'open`"), "{err}");
    }
}
