//! Probe benchmark: `eqcheck probe` on a tree of one huge folder (the `huge` tree's
//! shape: 1,000,000 empty files by default) against a reference walk of the same
//! tree, run alternately, with each run's wall time and peak memory. It prints the
//! medians, their ratio and PASS or MISS against the design's targets: a probe takes
//! at most 2.5 times the reference walk and at most 150 MB. A plain program run by
//! `cargo bench --bench probe`; it prints and never asserts. `EQCHECK_BENCH_ENTRIES`
//! sets the folder's size and `EQCHECK_BENCH_ROUNDS` the rounds (default 3).

#[path = "peak.rs"]
mod peak;

use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

const EQCHECK: &str = env!("CARGO_BIN_EXE_eqcheck");

/// The design's bounds: time against a reference walk, and peak memory.
const TARGET_RATIO: f64 = 2.5;
const TARGET_BYTES: u64 = 150_000_000;

fn main() -> ExitCode {
    let entries = number("EQCHECK_BENCH_ENTRIES", 1_000_000);
    let rounds = number("EQCHECK_BENCH_ROUNDS", 3).max(1);
    let scratch = match tempfile::Builder::new()
        .prefix("eqc-probe-bench-")
        .tempdir()
    {
        Ok(dir) => dir,
        Err(err) => {
            eprintln!("cannot make a scratch folder: {err}");
            return ExitCode::FAILURE;
        }
    };
    let spec = scratch.path().join("one-folder.tree");
    let tree = scratch.path().join("tree");
    let built =
        std::fs::write(&spec, format!("generate files h count={entries}\n")).and_then(|()| {
            Command::new(EQCHECK)
                .args(["trees", "build"])
                .arg(&spec)
                .arg("--into")
                .arg(&tree)
                .stdout(Stdio::null())
                .status()
        });
    if !built.is_ok_and(|s| s.success()) {
        eprintln!("cannot build the tree in {}", scratch.path().display());
        return ExitCode::FAILURE;
    }
    println!("one folder of {entries} empty files; {rounds} rounds, the two alternating");
    println!("{:<16} {:>8} {:>12}", "run", "wall s", "peak");
    let (mut walks, mut probes) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let walk = || {
            run(
                "reference walk",
                Command::new(EQCHECK)
                    .args(["walk", "--engine", "reference"])
                    .arg(&tree),
            )
        };
        let probe = || {
            let report = scratch.path().join("probe.json");
            let mut command = Command::new(EQCHECK);
            command
                .arg("probe")
                .arg("--tree")
                .arg(&tree)
                .arg("--json")
                .arg(report);
            run("probe", &mut command)
        };
        // Alternate which goes first, so a warming cache favours neither.
        let (a, b) = if round % 2 == 0 {
            (walk(), probe())
        } else {
            (probe(), walk())
        };
        let (w, p) = if round % 2 == 0 { (a, b) } else { (b, a) };
        walks.extend(w);
        probes.extend(p);
    }
    if walks.is_empty() || probes.is_empty() {
        println!("no successful run of one of the two: no figures");
        return ExitCode::FAILURE;
    }
    let (walk, probe) = (median(&walks), median(&probes));
    let ratio = probe.0.as_secs_f64() / walk.0.as_secs_f64();
    let verdict = |ok: bool| if ok { "PASS" } else { "MISS" };
    println!(
        "median: probe {:.2} s, reference walk {:.2} s: {ratio:.2}x (target <= {TARGET_RATIO}x): {}",
        probe.0.as_secs_f64(),
        walk.0.as_secs_f64(),
        verdict(ratio <= TARGET_RATIO)
    );
    match probe.1 {
        Some(bytes) => println!(
            "probe peak {} (target <= {}): {}",
            peak::megabytes(bytes),
            peak::megabytes(TARGET_BYTES),
            verdict(bytes <= TARGET_BYTES)
        ),
        None => println!("probe peak: unknown here (no /proc)"),
    }
    ExitCode::SUCCESS
}

/// One run, printed as a row: its wall time and peak memory; none when it failed,
/// so a failed run's time never stands in a median.
fn run(label: &str, command: &mut Command) -> Option<(Duration, Option<u64>)> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match peak::run_sampled(command) {
        Ok(sampled) => {
            let peak = sampled.peak.map_or("unknown".to_string(), peak::megabytes);
            let ended = if sampled.status.success() {
                String::new()
            } else {
                format!(" ({})", sampled.status)
            };
            println!(
                "{label:<16} {:>8.2} {peak:>12}{ended}",
                sampled.wall.as_secs_f64()
            );
            sampled
                .status
                .success()
                .then_some((sampled.wall, sampled.peak))
        }
        Err(err) => {
            println!("{label:<16} could not run: {err}");
            None
        }
    }
}

/// The run with the median wall time.
fn median(runs: &[(Duration, Option<u64>)]) -> (Duration, Option<u64>) {
    let mut sorted = runs.to_vec();
    sorted.sort_by_key(|r| r.0);
    sorted[sorted.len() / 2]
}

fn number(variable: &str, default: usize) -> usize {
    std::env::var(variable)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
