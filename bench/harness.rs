//! Harness benchmark: what eqcheck costs on top of the programs it compares. On one
//! tree and one pair of programs it times, interleaved round by round, (a) a plain
//! serial shell loop that runs both programs for each flag set and compares their
//! outputs with `cmp`, and (b) `eqcheck` with its defaults over the same sets; then
//! it prints wall medians, the wall ratio, eqcheck's own CPU as a share of the arms'
//! (from the run's JSON report) and whether the design's targets are met. A plain
//! program run by `cargo bench --bench harness`; it prints and never asserts,
//! because timings depend on the host.
//!
//! The subject comes from `EQCHECK_BENCH_REF` and `EQCHECK_BENCH_CAND` (commands,
//! split shell-word style), `EQCHECK_BENCH_FLAGSETS` (a built-in name or a file)
//! and `EQCHECK_BENCH_TREE` (a folder, only read), as in the targets' run: dust
//! 1.2.6 against 1.2.7 with `dust` on an npm tree. Without them it falls back to
//! eqcheck's own engines with `walk` on the `nm` fixture tree, and says so.

#[path = "rounds.rs"]
mod rounds;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use eqcheck::bench::stats::spread;
use eqcheck::fixtures::{build_temp, spec_named, BuiltTree};
use eqcheck::flagset::{self, FlagSetFile, TREE_PLACEHOLDER};

/// The built binary, timed exactly as users run it.
const EQCHECK: &str = env!("CARGO_BIN_EXE_eqcheck");

/// Timed rounds when `EQCHECK_BENCH_ROUNDS` is unset; odd, so the median is a sample.
const DEFAULT_ROUNDS: usize = 5;

/// The design's targets: eqcheck's own CPU at most this share of the arms'...
const CPU_TARGET: f64 = 0.05;
/// ... and its matrix wall at most this share of the shell loop's.
const WALL_TARGET: f64 = 0.75;

/// The two programs, their flag sets and the tree they run on.
struct Subject {
    reference: Vec<String>,
    candidate: Vec<String>,
    /// As eqcheck's `--flagsets` takes it.
    flagsets: String,
    sets: FlagSetFile,
    tree: PathBuf,
    /// The fallback's tree, removed when the bench ends.
    _built: Option<BuiltTree>,
}

/// One timed run: wall, and CPU of the process and all it waited for; for eqcheck
/// also its own CPU and its arms', as its report gives them.
#[derive(Clone, Copy, Default)]
struct Sample {
    wall: Duration,
    cpu: f64,
    harness: f64,
    arms: f64,
    /// CPU seconds the rest of the machine used meanwhile (Linux), which slows
    /// the run it overlaps.
    foreign: f64,
}

/// A round is disturbed when the rest of the machine took more than this share of
/// one core over either of its runs: on a shared machine other work can turn a
/// ratio either way.
const DISTURBED: f64 = 0.03;

impl Sample {
    fn disturbed(&self) -> bool {
        self.foreign > DISTURBED * self.wall.as_secs_f64()
    }
}

fn main() -> ExitCode {
    let subject = match subject() {
        Ok(subject) => subject,
        Err(why) => {
            eprintln!("harness bench: {why}");
            return ExitCode::FAILURE;
        }
    };
    let Some(scratch) = tempfile::Builder::new().prefix("eqc-bench-").tempdir().ok() else {
        eprintln!("harness bench: cannot make a temp folder");
        return ExitCode::FAILURE;
    };
    let script = scratch.path().join("loop.sh");
    let sets = match write_loop(&subject, &script) {
        Ok(sets) => sets,
        Err(err) => {
            eprintln!("harness bench: cannot write {}: {err}", script.display());
            return ExitCode::FAILURE;
        }
    };
    describe(&subject, sets);
    let rounds = rounds();
    let (mut shell, mut harness) = (Vec::new(), Vec::new());
    // Round 0 is the warm-up, discarded; then the two alternate which goes first,
    // so whatever drifts (the cache, other load) drifts under both alike.
    for round in 0..=rounds {
        let (loop_run, eqcheck_run) = match round % 2 {
            0 => {
                let a = run_loop(&script, scratch.path());
                (a, run_eqcheck(&subject, scratch.path()))
            }
            _ => {
                let b = run_eqcheck(&subject, scratch.path());
                (run_loop(&script, scratch.path()), b)
            }
        };
        let (Some(a), Some(b)) = (loop_run, eqcheck_run) else {
            return ExitCode::FAILURE;
        };
        if round > 0 {
            shell.push(a);
            harness.push(b);
            let ratio = b.wall.as_secs_f64() / a.wall.as_secs_f64();
            let note = match a.disturbed() || b.disturbed() {
                true => format!(
                    "; DISTURBED: other processes took {:.2} s and {:.2} s of CPU meanwhile",
                    a.foreign, b.foreign
                ),
                false => String::new(),
            };
            println!(
                "round {round}: loop {:.2} s, eqcheck {:.2} s (ratio {ratio:.2}; own CPU {:.1}% of the arms'{note})",
                a.wall.as_secs_f64(),
                b.wall.as_secs_f64(),
                100.0 * b.harness / b.arms
            );
        }
    }
    print_figures(&shell, &harness);
    ExitCode::SUCCESS
}

/// The subject from the environment, or the fallback that exists everywhere.
fn subject() -> Result<Subject, String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let words = |name: &str, text: String| {
        shell_words::split(&text).map_err(|e| format!("{name}: {e}: {text}"))
    };
    let (reference, candidate) = match (var("EQCHECK_BENCH_REF"), var("EQCHECK_BENCH_CAND")) {
        (Some(r), Some(c)) => (
            words("EQCHECK_BENCH_REF", r)?,
            words("EQCHECK_BENCH_CAND", c)?,
        ),
        _ => {
            eprintln!("######## EQCHECK_BENCH_REF / EQCHECK_BENCH_CAND unset: FALLING BACK to eqcheck's own engines (walk --engine reference against fast), NOT the targets' run (dust 1.2.6 against 1.2.7) ########");
            let engine = |e: &str| vec![EQCHECK.into(), "walk".into(), "--engine".into(), e.into()];
            (engine("reference"), engine("fast"))
        }
    };
    let flagsets = var("EQCHECK_BENCH_FLAGSETS").unwrap_or_else(|| {
        eprintln!(
            "######## EQCHECK_BENCH_FLAGSETS unset: using the built-in `walk` flag sets ########"
        );
        "walk".into()
    });
    let sets = match flagset::builtin(&flagsets) {
        Some(sets) => sets,
        None => flagset::load(Path::new(&flagsets)).map_err(|e| e.to_string())?,
    };
    let (tree, built) = match var("EQCHECK_BENCH_TREE") {
        Some(tree) => (PathBuf::from(tree), None),
        None => {
            eprintln!("######## EQCHECK_BENCH_TREE unset: building the `nm` fixture tree, NOT an npm tree of ~18,500 entries ########");
            let spec = spec_named("nm").map_err(|e| e.to_string())?;
            let built = build_temp(&spec).map_err(|e| e.to_string())?;
            (built.path().to_path_buf(), Some(built))
        }
    };
    Ok(Subject {
        reference,
        candidate,
        flagsets,
        sets,
        tree,
        _built: built,
    })
}

/// The words one program runs with for one set, as eqcheck builds them (command,
/// the file's common words, the set, the operand; `{tree}` replaced), but with the
/// program started by its path.
fn argv(command: &[String], sets: &FlagSetFile, args: &[String], tree: &Path) -> Vec<String> {
    let tree = tree.to_string_lossy();
    (command.iter())
        .chain(&sets.common)
        .chain(args)
        .chain(&sets.operand)
        .map(|word| word.replace(TREE_PLACEHOLDER, &tree))
        .collect()
}

/// Writes the serial shell loop: per set, both programs with their outputs in
/// files, then `cmp` of stdout, of stderr, and the exit codes. Returns the number
/// of sets.
fn write_loop(subject: &Subject, script: &Path) -> std::io::Result<usize> {
    let mut text = String::from("d=$1\n");
    let mut sets = 0;
    for set in subject.sets.groups.iter().flat_map(|g| &g.sets) {
        let line = |command: &[String]| {
            shell_words::join(argv(command, &subject.sets, &set.args, &subject.tree))
        };
        let label = shell_words::quote(&set.label()).into_owned();
        text.push_str(&format!(
            "{} >\"$d/a.out\" 2>\"$d/a.err\"; a=$?\n{} >\"$d/b.out\" 2>\"$d/b.err\"; b=$?\ncmp -s \"$d/a.out\" \"$d/b.out\" && cmp -s \"$d/a.err\" \"$d/b.err\" && [ $a = $b ] || echo differs: {label}\n",
            line(&subject.reference),
            line(&subject.candidate),
        ));
        sets += 1;
    }
    std::fs::write(script, text)?;
    Ok(sets)
}

fn run_loop(script: &Path, scratch: &Path) -> Option<Sample> {
    let mut command = Command::new("sh");
    command.arg(script).arg(scratch).env("LC_ALL", "C");
    let (sample, output) = timed(command)?;
    if !output.status.success() {
        eprintln!("harness bench: the shell loop failed: {}", output.status);
        return None;
    }
    Some(sample)
}

/// eqcheck with its defaults (jobs, guard, arm user), its report in JSON.
fn run_eqcheck(subject: &Subject, scratch: &Path) -> Option<Sample> {
    let json = scratch.join("report.json");
    let mut command = Command::new(EQCHECK);
    command
        .args(["--color", "never", "--flagsets", &subject.flagsets])
        .arg("--ref")
        .arg(shell_words::join(&subject.reference))
        .arg("--cand")
        .arg(shell_words::join(&subject.candidate))
        .arg("--tree")
        .arg(&subject.tree)
        .arg("--json")
        .arg(&json)
        // A project config in the working folder must not change the run.
        .arg("--no-config");
    let (mut sample, output) = timed(command)?;
    // 1 is "differences found": a finding, not a failure of the run.
    if !matches!(output.status.code(), Some(0 | 1)) {
        eprintln!(
            "harness bench: eqcheck failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        return None;
    }
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).ok()?).ok()?;
    let figure = |name: &str| report["cpu"][name].as_f64();
    let (Some(harness), Some(arms)) = (figure("harness_s"), figure("arms_s")) else {
        eprintln!("harness bench: the report has no CPU figures (measured on Unix only)");
        return None;
    };
    sample.harness = harness;
    sample.arms = arms;
    Some(sample)
}

/// Runs a command to its end with stdout discarded, timing its wall and the CPU of
/// everything it ran (this program runs one child at a time, so the difference in
/// its children's CPU is that child's).
fn timed(mut command: Command) -> Option<(Sample, std::process::Output)> {
    command.stdin(Stdio::null()).stdout(Stdio::null());
    let before = children_cpu();
    let busy = machine_busy();
    let start = Instant::now();
    let output = command.output();
    let wall = start.elapsed();
    let busy = machine_busy()
        .zip(busy)
        .map(|(after, before)| after - before);
    let output = match output {
        Ok(output) => output,
        Err(err) => {
            eprintln!("harness bench: cannot run {command:?}: {err}");
            return None;
        }
    };
    let cpu = children_cpu() - before;
    let sample = Sample {
        wall,
        cpu,
        foreign: busy.map_or(0.0, |busy| (busy - cpu).max(0.0)),
        ..Sample::default()
    };
    Some((sample, output))
}

/// The CPU seconds of every child this program has waited for.
#[cfg(unix)]
fn children_cpu() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable rusage and RUSAGE_CHILDREN is accepted.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) } != 0 {
        return 0.0;
    }
    // SAFETY: getrusage succeeded and filled it (it was zeroed anyway).
    let usage = unsafe { usage.assume_init() };
    let time = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    time(usage.ru_utime) + time(usage.ru_stime)
}

#[cfg(not(unix))]
fn children_cpu() -> f64 {
    0.0
}

/// CPU seconds the whole machine has spent busy (all but idle and I/O wait), from
/// `/proc/stat`; None off Linux.
#[cfg(target_os = "linux")]
fn machine_busy() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let ticks: Vec<f64> = (stat.lines().next()?.split_whitespace().skip(1))
        .filter_map(|t| t.parse().ok())
        .collect();
    let (all, idle) = (
        ticks.iter().take(8).sum::<f64>(),
        ticks.get(3)? + ticks.get(4)?,
    );
    // SAFETY: sysconf reads a constant of the system and has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (per_second > 0.0).then(|| (all - idle) / per_second)
}

#[cfg(not(target_os = "linux"))]
fn machine_busy() -> Option<f64> {
    None
}

fn rounds() -> usize {
    rounds::rounds(DEFAULT_ROUNDS)
}

/// What is compared, counted with `walkdir`, an independent walker.
fn describe(subject: &Subject, sets: usize) {
    let entries = walkdir::WalkDir::new(&subject.tree).into_iter().count();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("reference: {}", shell_words::join(&subject.reference));
    println!("candidate: {}", shell_words::join(&subject.candidate));
    println!(
        "flag sets: {} ({sets} sets); tree: {} ({entries} entries); {cores} cores; {} rounds after one warm-up",
        subject.flagsets,
        subject.tree.display(),
        rounds()
    );
}

/// The median, as `eqcheck bench` computes it (NaN for no values).
fn median(values: Vec<f64>) -> f64 {
    spread(&values).map_or(f64::NAN, |s| s.median)
}

fn range(values: &[f64]) -> (f64, f64) {
    spread(values).map_or((f64::NAN, f64::NAN), |s| (s.min, s.max))
}

/// The figures over the rounds no other work disturbed, or over all when every
/// round was.
fn print_figures(shell: &[Sample], harness: &[Sample]) {
    let clean: Vec<usize> = (0..shell.len())
        .filter(|&i| !shell[i].disturbed() && !harness[i].disturbed())
        .collect();
    let kept = match clean.len() {
        0 => {
            println!();
            println!("EVERY round was disturbed by other processes: the figures below are not to be trusted");
            (0..shell.len()).collect()
        }
        n if n < shell.len() => {
            println!();
            println!(
                "{} of {} rounds were disturbed by other processes and are left out",
                shell.len() - n,
                shell.len()
            );
            clean
        }
        _ => clean,
    };
    let pick = |s: &[Sample]| kept.iter().map(|&i| s[i]).collect::<Vec<_>>();
    print_medians(&pick(shell), &pick(harness));
}

fn print_medians(shell: &[Sample], harness: &[Sample]) {
    let wall = |s: &[Sample]| s.iter().map(|x| x.wall.as_secs_f64()).collect::<Vec<_>>();
    let cpu = |s: &[Sample]| s.iter().map(|x| x.cpu).collect::<Vec<_>>();
    println!();
    println!(
        "{:<12} {:>9} {:>9} {:>9} {:>10}",
        "", "wall s", "min", "max", "CPU s"
    );
    for (name, samples) in [("shell loop", shell), ("eqcheck", harness)] {
        let (min, max) = range(&wall(samples));
        let (w, c) = (median(wall(samples)), median(cpu(samples)));
        println!("{name:<12} {w:>9.2} {min:>9.2} {max:>9.2} {c:>10.2}");
    }
    let ratios: Vec<f64> = (shell.iter().zip(harness))
        .map(|(a, b)| b.wall.as_secs_f64() / a.wall.as_secs_f64())
        .collect();
    let shares: Vec<f64> = harness.iter().map(|s| s.harness / s.arms).collect();
    let (ratio, share) = (median(ratios.clone()), median(shares.clone()));
    let met = |ok: bool| if ok { "target met" } else { "target NOT met" };
    let ((rmin, rmax), (smin, smax)) = (range(&ratios), range(&shares));
    println!();
    // Three decimals: at two, a median just over the target printed as the target
    // itself beside "NOT met".
    println!(
        "wall, eqcheck / shell loop: {ratio:.3} (median of rounds; {rmin:.2} to {rmax:.2}; ratio of medians {:.3}): {} (<= {WALL_TARGET})",
        median(wall(harness)) / median(wall(shell)),
        met(ratio <= WALL_TARGET)
    );
    print_core_limit(shell, harness);
    println!(
        "eqcheck's own CPU: {:.1}% of the arms' (median; {:.1}% to {:.1}%; own {:.2} s, arms {:.2} s): {} (<= {:.0}%)",
        100.0 * share,
        100.0 * smin,
        100.0 * smax,
        median(harness.iter().map(|s| s.harness).collect()),
        median(harness.iter().map(|s| s.arms).collect()),
        met(share <= CPU_TARGET),
        100.0 * CPU_TARGET
    );
}

/// No schedule runs faster than its CPU spread over every core: the wall ratio
/// that limit allows, per round, for the CPU eqcheck and its arms spent, so a
/// missed target reads as the harness's idle cores or as CPU there was no
/// room for. The same limit for the arms' CPU alone is what a harness that cost
/// nothing and never left a core idle would reach: the room the target leaves
/// for everything eqcheck does is the distance from it.
fn print_core_limit(shell: &[Sample], harness: &[Sample]) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let limit = |spent: fn(&Sample) -> f64| {
        let per_round = (shell.iter().zip(harness))
            .map(|(a, b)| spent(b) / cores / a.wall.as_secs_f64())
            .collect();
        median(per_round)
    };
    let busy = |s: &[Sample]| median(s.iter().map(|x| x.cpu / x.wall.as_secs_f64()).collect());
    println!(
        "limit for eqcheck's CPU on {cores} cores: {:.2} of the shell loop's wall (median of rounds); cores busy: shell loop {:.2}, eqcheck {:.2}",
        limit(|b| b.cpu),
        busy(shell),
        busy(harness)
    );
    println!(
        "limit for the arms' CPU alone: {:.2} (a harness costing nothing, no core ever idle); room the target leaves over it: {:+.0}% of the loop's wall{}",
        limit(|b| b.arms),
        100.0 * (WALL_TARGET - limit(|b| b.arms)),
        match limit(|b| b.arms) > WALL_TARGET {
            true => " (below zero: out of reach on this machine)",
            false => "",
        }
    );
}
