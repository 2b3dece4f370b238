//! The bench command's own overhead: a 5 ms command timed 100 times by hyperfine
//! and by `eqcheck bench` (50 rounds of A and B, both the command), in alternating
//! passes so the machine's drift falls on both, and the difference of their
//! medians against the target (≤ 0.3 ms per run). Both run the program directly
//! (`hyperfine -N`), as root when the bench runs as root (`--as-root`), with the
//! same arguments. A plain program run by `cargo bench --bench overhead`: it prints
//! and never asserts, because timings depend on the host.

use std::path::Path;
use std::process::{Command, ExitCode};

const EQCHECK: &str = env!("CARGO_BIN_EXE_eqcheck");
const DOUBLE: &str = env!("CARGO_BIN_EXE_eqcheck-double");

/// Alternating passes of each tool; odd, so the median is a pass.
const PASSES: usize = 5;
/// Runs per pass of each tool.
const RUNS: usize = 100;
/// The target: what eqcheck's median may add to hyperfine's, in ms.
const TARGET_MS: f64 = 0.3;

fn main() -> ExitCode {
    if Command::new("hyperfine").arg("--version").output().is_err() {
        eprintln!("NOT MEASURED: hyperfine is not installed (apt-get install hyperfine)");
        let required = std::env::var("EQCHECK_REQUIRE_ALL").is_ok_and(|v| v == "1");
        return if required {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    let dir = tempfile::tempdir().expect("a temp folder");
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).expect("the tree folder");
    let sets = dir.path().join("one.sets");
    std::fs::write(&sets, "[timing]\n(none)\n").expect("the flag-set file");
    let command = format!("{DOUBLE} sleep 0.005");
    let mut hyperfine = Vec::new();
    let mut eqcheck = Vec::new();
    for pass in 1..=PASSES {
        let h = hyperfine_median(&command, &tree, dir.path());
        let e = eqcheck_median(&command, &tree, &sets, dir.path());
        println!(
            "pass {pass}: hyperfine {h:.3} ms, eqcheck bench {e:.3} ms, difference {:+.3} ms",
            e - h
        );
        hyperfine.push(h);
        eqcheck.push(e);
    }
    let differences: Vec<f64> = eqcheck.iter().zip(&hyperfine).map(|(e, h)| e - h).collect();
    let difference = median(&differences);
    println!(
        "median over {PASSES} passes: hyperfine {:.3} ms, eqcheck bench {:.3} ms; eqcheck adds {difference:+.3} ms per run (target ≤ {TARGET_MS} ms: {})",
        median(&hyperfine),
        median(&eqcheck),
        if difference <= TARGET_MS { "met" } else { "NOT met" }
    );
    ExitCode::SUCCESS
}

/// hyperfine's median wall time of `RUNS` runs, in ms.
fn hyperfine_median(command: &str, tree: &Path, dir: &Path) -> f64 {
    let export = dir.join("hyperfine.json");
    let status = Command::new("hyperfine")
        .args(["-N", "--style", "none", "--warmup", "3", "--runs"])
        .arg(RUNS.to_string())
        .arg("--export-json")
        .arg(&export)
        .arg(format!("{command} {}", tree.display()))
        // Its outlier warnings would bury the figures; they are in the figures.
        .stderr(std::process::Stdio::null())
        .status()
        .expect("hyperfine runs");
    assert!(status.success(), "hyperfine failed");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&export).expect("hyperfine's report")).expect("JSON");
    report["results"][0]["median"].as_f64().expect("a median") * 1000.0
}

/// eqcheck bench's median wall time over both arms' `RUNS` runs, in ms.
fn eqcheck_median(command: &str, tree: &Path, sets: &Path, dir: &Path) -> f64 {
    let export = dir.join("eqcheck.json");
    let mut bench = Command::new(EQCHECK);
    bench
        .args(["bench", "--ref", command, "--cand", command, "--flagsets"])
        .arg(sets)
        .arg("--tree")
        .arg(tree)
        .args(["--warmup", "2", "--rounds"])
        .arg((RUNS / 2).to_string())
        .arg("--json")
        .arg(&export)
        .stdout(std::process::Stdio::null());
    if rustix::process::geteuid().is_root() {
        bench.arg("--as-root");
    }
    let status = bench.status().expect("eqcheck bench runs");
    assert!(status.code() == Some(0), "eqcheck bench failed: {status}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&export).expect("the bench's report")).expect("JSON");
    let walls: Vec<f64> = report["trees"][0]["rows"][0]["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter(|run| run["counted"] == true)
        .filter_map(|run| run["wall_ms"].as_f64())
        .collect();
    assert_eq!(walls.len(), RUNS, "every timed run counted");
    median(&walls)
}

/// The median, as `eqcheck bench` computes it.
fn median(values: &[f64]) -> f64 {
    eqcheck::bench::stats::spread(values).map_or(f64::NAN, |s| s.median)
}
