//! Fixture build benchmark: how fast eqcheck makes trees. It builds `generate files
//! x count=100000` (empty files) and, side by side in the same run, makes the same
//! number of empty files with a bare loop of the cheapest creating call (the floor
//! any builder can reach here), then times each standard tree's build. A plain
//! program run by `cargo bench --bench trees`; it prints and never asserts, because
//! timings depend on the host.
//!
//! Every tree stays on disk until the end: on ext4 without a journal, inodes freed
//! in the last minute are skipped one by one when new ones are allocated, so
//! deleting a tree slows the next build for minutes and would skew what follows.

use std::path::Path;
use std::time::{Duration, Instant};

use eqcheck::fixtures::{build_temp, spec, spec_named, BuiltTree, STANDARD_TREES};

/// Rounds of the empty-file race when `EQCHECK_BENCH_ROUNDS` is unset; odd, so the
/// median is a sample.
const DEFAULT_ROUNDS: usize = 3;

const FILES: usize = 100_000;

/// The floor for the build rate.
const TARGET_PER_SECOND: f64 = 50_000.0;

fn main() {
    let rounds = std::env::var("EQCHECK_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(DEFAULT_ROUNDS);
    let mut kept: Vec<BuiltTree> = Vec::new();
    let mut floors: Vec<tempfile::TempDir> = Vec::new();
    let (mut build, mut floor) = (Vec::new(), Vec::new());
    let text = format!("generate files x count={FILES}\n");
    let empty = spec::parse("bench", "empty-files", &text).expect("the bench spec parses");
    // Interleaved, so both see the same state of the file system.
    for _ in 0..rounds {
        let start = Instant::now();
        kept.push(build_temp(&empty).unwrap_or_else(|e| panic!("{e}")));
        build.push(start.elapsed());
        let dir = tempfile::Builder::new()
            .prefix("eqc-floor-")
            .tempdir()
            .expect("a temp folder");
        let start = Instant::now();
        make_empty_files(dir.path(), FILES);
        floor.push(start.elapsed());
        floors.push(dir);
    }
    let (build, floor) = (median(&mut build), median(&mut floor));
    let rate = FILES as f64 / build.as_secs_f64();
    let floor_rate = FILES as f64 / floor.as_secs_f64();
    println!("empty files ({FILES} in one folder, median of {rounds}):");
    println!(
        "  eqcheck build  {:>9.0} files/s  ({:.0} ms)",
        rate,
        ms(build)
    );
    println!(
        "  bare loop      {:>9.0} files/s  ({:.0} ms)   build = {:.2}× the floor's time",
        floor_rate,
        ms(floor),
        build.as_secs_f64() / floor.as_secs_f64()
    );
    let met = if rate >= TARGET_PER_SECOND {
        "met"
    } else {
        "MISSED"
    };
    println!("  target ≥ {TARGET_PER_SECOND:.0} files/s: {met}");
    println!();
    println!("standard trees (one build each):");
    println!(
        "  {:<6} {:>9} {:>10} {:>12}",
        "tree", "entries", "build", "entries/s"
    );
    for name in STANDARD_TREES {
        let spec = spec_named(name).unwrap_or_else(|e| panic!("{e}"));
        let start = Instant::now();
        let tree = build_temp(&spec).unwrap_or_else(|e| panic!("{e}"));
        let took = start.elapsed();
        let entries = walkdir::WalkDir::new(tree.path()).into_iter().count() - 1;
        println!(
            "  {:<6} {:>9} {:>7.0} ms {:>12.0}",
            name,
            entries,
            ms(took),
            entries as f64 / took.as_secs_f64()
        );
        for skip in tree.skipped() {
            println!("         skipped: {skip}");
        }
        kept.push(tree);
    }
    drop(floors);
    drop(kept);
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The floor: one `mknodat` per file relative to an open folder on Linux (what the
/// build uses for empty files), one create-and-close elsewhere.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn make_empty_files(dir: &Path, count: usize) {
    use rustix::fs::{mknodat, open, FileType, Mode, OFlags};
    let fd = open(dir, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).expect("open");
    let mode = Mode::from_raw_mode(0o644);
    let names: Vec<String> = (0..count).map(|i| format!("file-{i:06}")).collect();
    for name in &names {
        mknodat(&fd, name.as_str(), FileType::RegularFile, mode, 0).expect("mknodat");
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn make_empty_files(dir: &Path, count: usize) {
    let names: Vec<String> = (0..count).map(|i| format!("file-{i:06}")).collect();
    for name in &names {
        std::fs::File::create(dir.join(name)).expect("create");
    }
}
