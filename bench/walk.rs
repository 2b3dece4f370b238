//! Walk benchmark: builds the `nm` and `deep` fixture trees, then times the fast
//! engine against the reference engine, `du -s` and `find -printf` on the same
//! on-disk tree in one run, and prints medians, ratios and whether the design's
//! targets are met. A plain program run by `cargo bench --bench walk`; it prints and
//! never asserts, because timings depend on the host.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use eqcheck::fixtures::{build_temp, spec_named, BuiltTree};

/// The built binary, so the engines are timed exactly as users run them.
const EQCHECK: &str = env!("CARGO_BIN_EXE_eqcheck");

/// Timed rounds when `EQCHECK_BENCH_ROUNDS` is unset; odd, so the median is a sample.
const DEFAULT_ROUNDS: usize = 7;

/// Each program timed: label, program, arguments before the tree and after it.
const PROGRAMS: &[(&str, &str, &[&str], &[&str])] = &[
    ("fast", EQCHECK, &["walk", "--engine", "fast", "-s"], &[]),
    (
        "reference",
        EQCHECK,
        &["walk", "--engine", "reference", "-s"],
        &[],
    ),
    ("du -s", "du", &["-s"], &[]),
    ("find -printf", "find", &[], &["-printf", r"%s %b %i\n"]),
];

/// Where the programs the targets compare sit in `PROGRAMS`.
const FAST: usize = 0;
const REFERENCE: usize = 1;
const DU: usize = 2;

/// One program timed on one tree; `None` program means it is not installed here.
#[derive(Default)]
struct Timed {
    label: &'static str,
    program: Option<PathBuf>,
    args: Vec<OsString>,
    samples: Vec<Duration>,
    failed: bool,
}

impl Timed {
    /// Same pinned locale and null streams for every program, so none pays for a
    /// terminal or a locale lookup the others skip.
    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .args(&self.args)
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        command
    }

    /// Runs once with stdout discarded and returns the wall time, spawn included.
    fn run_timed(&mut self) -> Option<Duration> {
        let program = self.program.as_ref()?;
        let mut command = self.command(program);
        command.stdout(Stdio::null());
        let start = Instant::now();
        let status = command.status();
        let elapsed = start.elapsed();
        if !status.is_ok_and(|s| s.success()) {
            self.failed = true;
        }
        Some(elapsed)
    }

    /// Runs once capturing stdout, for the equality check; never timed, because
    /// piping output costs what `/dev/null` does not.
    fn run_captured(&self) -> Option<Vec<u8>> {
        let program = self.program.as_ref()?;
        self.command(program).output().ok().map(|o| o.stdout)
    }

    fn median(&self) -> Option<Duration> {
        let mut sorted = self.samples.clone();
        sorted.sort();
        sorted.get(sorted.len() / 2).copied()
    }

    fn min(&self) -> Option<Duration> {
        self.samples.iter().min().copied()
    }
}

/// An absolute program if it exists, else the first match on `PATH`; `None` when
/// missing, because a missing peer is skipped, not an error.
fn locate(program: &str) -> Option<PathBuf> {
    let path = Path::new(program);
    if path.is_absolute() {
        return path.is_file().then(|| path.to_path_buf());
    }
    let dirs = std::env::var_os("PATH")?;
    std::env::split_paths(&dirs)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

fn rounds() -> usize {
    std::env::var("EQCHECK_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.trim().parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(DEFAULT_ROUNDS)
}

/// Counts with `walkdir`, an independent walker, so the counts do not trust either
/// engine under test. The root is not counted; the specs make no special files.
fn describe(name: &str, tree: &BuiltTree, build_time: Duration) {
    let (mut files, mut folders, mut symlinks) = (0u64, 0u64, 0u64);
    let walk = walkdir::WalkDir::new(tree.path()).min_depth(1);
    for kind in walk.into_iter().flatten().map(|entry| entry.file_type()) {
        if kind.is_symlink() {
            symlinks += 1;
        } else if kind.is_dir() {
            folders += 1;
        } else {
            files += 1;
        }
    }
    let build_ms = ms(build_time);
    println!(
        "{name}: {files} files, {folders} folders, {symlinks} symlinks; built in {build_ms:.0} ms"
    );
}

fn peers(tree: &Path) -> Vec<Timed> {
    let words = |words: &[&str]| words.iter().map(OsString::from).collect::<Vec<_>>();
    let timed = |&(label, program, before, after): &(&'static str, &str, &[&str], &[&str])| {
        let args = [words(before), vec![tree.into()], words(after)].concat();
        let program = locate(program);
        Timed {
            label,
            program,
            args,
            ..Timed::default()
        }
    };
    PROGRAMS.iter().map(timed).collect()
}

/// Fast, reference and `du -s` get the same path, so their stdout must be the same
/// bytes; a timing of a walker that prints something else means nothing.
fn check_outputs(name: &str, timed: &[Timed]) {
    let Some(fast) = timed[FAST].run_captured() else {
        println!("OUTPUT MISSING on {name}: the fast engine could not be run");
        return;
    };
    for other in [&timed[REFERENCE], &timed[DU]] {
        match other.run_captured() {
            Some(theirs) if theirs != fast => println!(
                "OUTPUT DIFFERS on {name}: fast printed {:?}, {} printed {:?}",
                String::from_utf8_lossy(&fast).trim_end(),
                other.label,
                String::from_utf8_lossy(&theirs).trim_end()
            ),
            _ => {}
        }
    }
}

/// Round-robin with the starting command rotated each round, so no command always
/// runs right after the same neighbour and slow drift in the host spreads evenly.
fn time_all(timed: &mut [Timed], rounds: usize) {
    for round in 0..=rounds {
        for i in 0..timed.len() {
            let index = (i + round) % timed.len();
            let elapsed = timed[index].run_timed();
            if let (true, Some(elapsed)) = (round > 0, elapsed) {
                timed[index].samples.push(elapsed);
            }
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn print_table(name: &str, timed: &[Timed]) {
    let fast = timed[FAST].median();
    for t in timed {
        let (Some(median), Some(min)) = (t.median(), t.min()) else {
            println!("{name:<6} {:<14} not installed", t.label);
            continue;
        };
        let ratio = fast.map_or(f64::NAN, |f| f.as_secs_f64() / median.as_secs_f64());
        let failed = if t.failed { "  (exited non-zero)" } else { "" };
        println!(
            "{name:<6} {:<14} {:>10.1} {:>10.1} {:>10.3}{failed}",
            t.label,
            ms(median),
            ms(min),
            ratio
        );
    }
}

/// The design's targets: fast/reference on each tree and fast/du on both.
fn print_targets(name: &str, timed: &[Timed]) {
    let reference_target = if name == "deep" { 0.1 } else { 0.6 };
    let fast = timed[FAST].median();
    for (other, target) in [(&timed[REFERENCE], reference_target), (&timed[DU], 0.8)] {
        let label = format!("{name}: fast <= {target} x {}", other.label);
        match (fast, other.median()) {
            (Some(f), Some(o)) => {
                let ratio = f.as_secs_f64() / o.as_secs_f64();
                let verdict = if ratio <= target { "PASS" } else { "MISS" };
                println!("{verdict}  {label:<32} (measured {ratio:.3})");
            }
            _ => println!("SKIP  {label:<32} ({} not installed)", other.label),
        }
    }
}

fn main() -> ExitCode {
    let rounds = rounds();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("cores: {cores}; rounds: {rounds} after one warm-up; times are wall ms");

    let mut results = Vec::new();
    for name in ["nm", "deep"] {
        let built = spec_named(name).and_then(|spec| {
            let start = Instant::now();
            build_temp(&spec).map(|tree| (tree, start.elapsed()))
        });
        let (tree, build_time) = match built {
            Ok(built) => built,
            Err(err) => {
                eprintln!("cannot build tree {name}: {err}");
                return ExitCode::FAILURE;
            }
        };
        describe(name, &tree, build_time);
        let mut timed = peers(tree.path());
        check_outputs(name, &timed);
        time_all(&mut timed, rounds);
        results.push((name, timed));
    }

    println!();
    println!(
        "{:<6} {:<14} {:>10} {:>10} {:>10}",
        "tree", "command", "median ms", "min ms", "fast/this"
    );
    for (name, timed) in &results {
        print_table(name, timed);
    }
    println!();
    for (name, timed) in &results {
        print_targets(name, timed);
    }
    ExitCode::SUCCESS
}
