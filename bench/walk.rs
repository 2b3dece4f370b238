//! Walk benchmark: builds the `nm` and `deep` fixture trees, then runs the fast
//! engine, the reference engine, GNU `du -s`, `bfs`, dust and the list + stat floor
//! (`floor.rs`) on the same on-disk tree, interleaved, in one run. It prints medians
//! of each one's wall time and CPU (user + system), then the fast engine's CPU
//! against the floor's and its wall time against the fastest peer's and the
//! reference's, each as the median of per-round ratios, and whether the design's
//! targets are met. On `deep` it also times the floor's calls made by two threads
//! taking turns down the chain (`chain_floor.rs`), what a walk of that chain could
//! take if overlapping its levels cost nothing; on `nm`, the same calls made by a
//! thread per core sharing a stack of folders (`pool_floor.rs`), the least a
//! parallel walk of a wide tree spends on its own work. A third tree, one empty folder, times what each program costs
//! to start, list almost nothing and exit, so a reader can tell a walk's own time
//! from its start. A plain program run by `cargo bench --bench walk`; it
//! prints and never asserts, because timings depend on the host.
//!
//! `EQCHECK_BENCH_ROUNDS` sets the rounds; `EQCHECK_BENCH_DUST` names the dust
//! program when it is not `dust` on `PATH`.

#[cfg(target_os = "linux")]
#[path = "chain_floor.rs"]
mod chain_floor;
#[cfg(target_os = "linux")]
#[path = "floor.rs"]
mod floor;
#[cfg(target_os = "linux")]
#[path = "pool_floor.rs"]
mod pool_floor;
#[path = "rounds.rs"]
mod rounds;
#[path = "usage.rs"]
mod usage;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use eqcheck::fixtures::{build_temp, spec, spec_named, BuiltTree, FixtureError, TreeSpec};

/// The built binary, so the engines are timed exactly as users run them.
const EQCHECK: &str = env!("CARGO_BIN_EXE_eqcheck");

/// Timed rounds when `EQCHECK_BENCH_ROUNDS` is unset; odd, so the median is a sample.
const DEFAULT_ROUNDS: usize = 9;

/// The argument that makes this program the floor walk of one tree (see `floor.rs`).
const FLOOR_ARG: &str = "--floor";
/// The argument that makes it the two-core floor of a chain (see `chain_floor.rs`).
const CHAIN_FLOOR_ARG: &str = "--chain-floor";
/// The two-core floor's label; it is timed on `deep` alone, the one chain.
const CHAIN_FLOOR: &str = "floor 2c";
/// The argument that makes it the parallel floor of a wide tree (see
/// `pool_floor.rs`), with one thread per core.
const POOL_FLOOR_ARG: &str = "--pool-floor";
/// The parallel floor's label; it is timed on `nm` alone, the wide tree.
const POOL_FLOOR: &str = "floor pool";

/// The design's targets.
const CPU_OVER_FLOOR: f64 = 1.3;
const WALL_OVER_FASTEST_PEER: f64 = 0.6;
const NM_OVER_REFERENCE: f64 = 0.6;
const DEEP_OVER_REFERENCE: f64 = 0.1;

/// The tree that times each program's start: a folder holding one empty folder (a
/// spec needs an entry).
const START: &str = "start";

/// The peers whose fastest the fast engine's wall time is held against.
const PEERS: &[&str] = &["du -s", "bfs", "dust"];

/// One program timed on one tree; `None` program means it is not installed here.
#[derive(Default)]
struct Timed {
    label: &'static str,
    program: Option<PathBuf>,
    args: Vec<OsString>,
    walls: Vec<Duration>,
    cpus: Vec<Duration>,
    failed: bool,
}

impl Timed {
    fn new(label: &'static str, program: Option<PathBuf>, args: Vec<OsString>) -> Timed {
        Timed {
            label,
            program,
            args,
            ..Timed::default()
        }
    }

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

    /// Runs once with stdout discarded and keeps the wall time (spawn included) and
    /// the CPU when `keep`.
    fn run_timed(&mut self, keep: bool) {
        let Some(program) = self.program.as_ref() else {
            return;
        };
        let mut command = self.command(program);
        command.stdout(Stdio::null());
        match usage::run(command) {
            Ok(run) if keep => {
                self.failed |= !run.success;
                self.walls.push(run.wall);
                self.cpus.extend(run.cpu);
            }
            Ok(run) => self.failed |= !run.success,
            Err(_) => self.failed = true,
        }
    }

    /// Runs once capturing stdout, for the equality check; never timed, because
    /// piping output costs what `/dev/null` does not.
    fn run_captured(&self) -> Option<Vec<u8>> {
        let program = self.program.as_ref()?;
        self.command(program).output().ok().map(|o| o.stdout)
    }

    fn wall(&self) -> Option<Duration> {
        median(&self.walls)
    }

    fn cpu(&self) -> Option<Duration> {
        median(&self.cpus)
    }
}

fn median(samples: &[Duration]) -> Option<Duration> {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied()
}

/// An absolute program if it exists, else the first match on `PATH`; `None` when
/// missing, because a missing peer is reported, not an error.
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
    rounds::rounds(DEFAULT_ROUNDS)
}

/// Counts with `walkdir`, an independent walker, so the counts do not trust either
/// engine under test; returns the entries, the root included, as every walker
/// here stats them.
fn describe(name: &str, tree: &BuiltTree, build_time: Duration) -> u64 {
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
    files + folders + symlinks + 1
}

/// Every program timed on the tree `name` at `tree`: each does the work of `du -s`
/// (list and stat every entry) and prints at most a summary.
fn programs(name: &str, tree: &Path) -> Vec<Timed> {
    let args = |before: &[&str], after: &[&str]| {
        let words = |w: &[&str]| w.iter().map(OsString::from).collect::<Vec<_>>();
        [words(before), vec![tree.into()], words(after)].concat()
    };
    let eqcheck = locate(EQCHECK);
    let dust = std::env::var("EQCHECK_BENCH_DUST").unwrap_or_else(|_| "dust".into());
    let floor = cfg!(target_os = "linux")
        .then(|| std::env::current_exe().ok())
        .flatten();
    let chain_floor = Timed::new(CHAIN_FLOOR, floor.clone(), args(&[CHAIN_FLOOR_ARG], &[]));
    let chain_floor = (name == "deep").then_some(chain_floor);
    let pool_floor = Timed::new(POOL_FLOOR, floor.clone(), args(&[POOL_FLOOR_ARG], &[]));
    let pool_floor = (name == "nm").then_some(pool_floor);
    let mut programs = vec![
        Timed::new("floor", floor, args(&[FLOOR_ARG], &[])),
        Timed::new(
            "fast",
            eqcheck.clone(),
            args(&["walk", "--engine", "fast", "-s"], &[]),
        ),
        Timed::new(
            "reference",
            eqcheck,
            args(&["walk", "--engine", "reference", "-s"], &[]),
        ),
        Timed::new("du -s", locate("du"), args(&["-s"], &[])),
        // bfs has no summary: a test that needs every entry's stat and matches
        // nothing makes it list and stat the whole tree and print nothing.
        Timed::new("bfs", locate("bfs"), args(&[], &["-links", "0"])),
        // dust's `-s` is apparent size; depth 0 without bars, colours or progress
        // is its one-line summary.
        Timed::new(
            "dust",
            locate(&dust),
            args(&["-d", "0", "-c", "-b", "-P"], &[]),
        ),
    ];
    programs.extend(chain_floor);
    programs.extend(pool_floor);
    programs
}

fn find<'t>(timed: &'t [Timed], label: &str) -> &'t Timed {
    find_on_this_tree(timed, label).expect("every label is in `programs`")
}

/// A program timed on some trees only.
fn find_on_this_tree<'t>(timed: &'t [Timed], label: &str) -> Option<&'t Timed> {
    timed.iter().find(|t| t.label == label)
}

/// Fast, reference and `du -s` get the same path, so their stdout must be the same
/// bytes; a timing of a walker that prints something else means nothing.
fn check_outputs(name: &str, timed: &[Timed]) {
    let Some(fast) = find(timed, "fast").run_captured() else {
        println!("OUTPUT MISSING on {name}: the fast engine could not be run");
        return;
    };
    for other in [find(timed, "reference"), find(timed, "du -s")] {
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

/// A floor walk must see every entry the independent count sees, or its figures
/// are for another tree.
fn check_floors(name: &str, timed: &[Timed], entries: u64) {
    let floors = ["floor", CHAIN_FLOOR, POOL_FLOOR];
    for floor in floors.map(|label| find_on_this_tree(timed, label)) {
        let Some(floor) = floor else { continue };
        let Some(out) = floor.run_captured() else {
            continue;
        };
        let text = String::from_utf8_lossy(&out);
        let counted = text.split_whitespace().next().and_then(|n| n.parse().ok());
        if counted != Some(entries) {
            println!(
                "FLOOR MISCOUNTS on {name}: {} printed {text:?}, walkdir counts {entries}",
                floor.label
            );
        }
    }
}

/// Round-robin with the starting program rotated each round, so no program always
/// runs right after the same neighbour and slow drift in the host spreads evenly.
/// Round 0 is a warm-up and is discarded.
fn time_all(timed: &mut [Timed], rounds: usize) {
    for round in 0..=rounds {
        for i in 0..timed.len() {
            let index = (i + round) % timed.len();
            timed[index].run_timed(round > 0);
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn micros_per(d: Duration, entries: u64) -> f64 {
    d.as_secs_f64() * 1e6 / entries as f64
}

fn print_table(name: &str, entries: u64, timed: &[Timed]) {
    let fast = find(timed, "fast").wall();
    for t in timed {
        let (Some(wall), cpu) = (t.wall(), t.cpu()) else {
            println!("{name:<6} {:<10} NOT INSTALLED", t.label);
            continue;
        };
        let (cpu_ms, per_entry) =
            cpu.map_or((f64::NAN, f64::NAN), |c| (ms(c), micros_per(c, entries)));
        let ratio = fast.map_or(f64::NAN, |f| f.as_secs_f64() / wall.as_secs_f64());
        let failed = if t.failed { "  (exited non-zero)" } else { "" };
        println!(
            "{name:<6} {:<10} {:>9.1} {:>9.1} {:>9.1} {:>10.2} {:>9.3}{failed}",
            t.label,
            ms(wall),
            ms(*t.walls.iter().min().expect("a median has samples")),
            cpu_ms,
            per_entry,
            ratio
        );
    }
}

fn verdict(ratio: f64, target: f64) -> &'static str {
    if ratio <= target {
        "target met"
    } else {
        "target NOT met"
    }
}

/// Ratios of `a` to `b` round by round: each program runs once per round, so the
/// i-th samples of two programs were taken side by side, and a drift in the host's
/// load cancels out of their ratio. `None` when a run is missing from either.
fn per_round(a: &[Duration], b: &[Duration]) -> Option<Vec<f64>> {
    (a.len() == b.len() && !a.is_empty()).then(|| {
        a.iter()
            .zip(b)
            .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
            .collect()
    })
}

/// The median of per-round ratios, and their range as text.
fn ratio_spread(mut ratios: Vec<f64>) -> (f64, String) {
    ratios.sort_by(f64::total_cmp);
    let range = format!("{:.2}-{:.2}", ratios[0], ratios[ratios.len() - 1]);
    (ratios[ratios.len() / 2], range)
}

/// Fast CPU per entry against the floor's: the design's 1.3x, on nm.
fn print_cpu_target(name: &str, entries: u64, timed: &[Timed]) {
    let (fast, floor) = (find(timed, "fast"), find(timed, "floor"));
    let (Some(fast_cpu), Some(floor_cpu), Some(ratios)) =
        (fast.cpu(), floor.cpu(), per_round(&fast.cpus, &floor.cpus))
    else {
        println!("{name}: CPU per entry not measured (needs Linux for the floor and wait4)");
        return;
    };
    let (ratio, range) = ratio_spread(ratios);
    // The design sets this target on nm, a wide tree; a chain of folders walked on
    // two threads spends CPU on the hand-over between them to save wall time.
    let judged = if name == "nm" {
        format!(
            "(target <= {CPU_OVER_FLOOR}): {}",
            verdict(ratio, CPU_OVER_FLOOR)
        )
    } else {
        "(no target on this tree)".to_string()
    };
    println!(
        "{name}: floor CPU {:.2} us/entry; fast CPU {:.2} us/entry; fast/floor per round \
         {ratio:.3} (range {range}) {judged}",
        micros_per(floor_cpu, entries),
        micros_per(fast_cpu, entries),
    );
}

/// The fastest installed peer (by median wall) with that median, and the fastest
/// peer's wall of each round; `None`, after saying why, when no peer is installed.
fn fastest_peers<'t>(
    name: &str,
    timed: &'t [Timed],
) -> Option<(&'t Timed, Duration, Vec<Duration>)> {
    let mut installed = Vec::new();
    for peer in PEERS.iter().map(|label| find(timed, label)) {
        match peer.wall() {
            Some(wall) => installed.push((peer, wall)),
            None => println!(
                "{name}: {} NOT INSTALLED: left out of the peers",
                peer.label
            ),
        }
    }
    let Some(&(fastest, wall)) = installed.iter().min_by_key(|(_, wall)| *wall) else {
        println!("{name}: NO PEER INSTALLED: fast vs the fastest peer not measured");
        return None;
    };
    let rounds = find(timed, "fast").walls.len();
    let each_round = (0..rounds)
        .filter_map(|i| installed.iter().filter_map(|(p, _)| p.walls.get(i)).min())
        .copied()
        .collect();
    Some((fastest, wall, each_round))
}

/// Fast wall time against the fastest of the installed peers, round by round, and
/// how far below that target the floor itself would be if spread perfectly over
/// the cores: no walker that makes the floor's calls can beat that bound, so the
/// gap between it and the target is all a parallel engine has for its own work,
/// its start and the tail where a core waits.
fn print_peer_target(name: &str, timed: &[Timed], cores: usize) {
    let fast = find(timed, "fast");
    let Some((fastest, wall, fastest_each_round)) = fastest_peers(name, timed) else {
        return;
    };
    let (Some(fast_wall), Some(ratios)) =
        (fast.wall(), per_round(&fast.walls, &fastest_each_round))
    else {
        return;
    };
    let (ratio, range) = ratio_spread(ratios);
    println!(
        "{name}: fast wall {:.1} ms, fastest peer {} {:.1} ms; fast/fastest peer per round \
         {ratio:.3} (range {range}) (target <= {WALL_OVER_FASTEST_PEER}): {}",
        ms(fast_wall),
        fastest.label,
        ms(wall),
        verdict(ratio, WALL_OVER_FASTEST_PEER)
    );
    let floor = find(timed, "floor");
    let spread: Vec<Duration> = floor
        .cpus
        .iter()
        .map(|cpu| *cpu / cores.max(1) as u32)
        .collect();
    if let Some(bounds) = per_round(&spread, &fastest_each_round) {
        let (bound, range) = ratio_spread(bounds);
        let room = (WALL_OVER_FASTEST_PEER / bound - 1.0) * 100.0;
        println!(
            "{name}: the floor's CPU spread perfectly over {cores} cores, per round: {bound:.3} \
             of the fastest peer's wall (range {range}); the target leaves {room:.0}% over it"
        );
    }
    print_pool_floor(name, timed, &fastest_each_round);
}

/// The parallel floor's wall and CPU against the fastest peer's wall and the fast
/// engine's CPU: what the floor's calls cost when several threads make them, the
/// nearest bound a parallel engine has.
fn print_pool_floor(name: &str, timed: &[Timed], fastest_each_round: &[Duration]) {
    let Some(pool) = find_on_this_tree(timed, POOL_FLOOR) else {
        return;
    };
    let fast = find(timed, "fast");
    let (Some(walls), Some(cpus)) = (
        per_round(&pool.walls, fastest_each_round),
        per_round(&fast.cpus, &pool.cpus),
    ) else {
        return;
    };
    let ((wall, wall_range), (cpu, cpu_range)) = (ratio_spread(walls), ratio_spread(cpus));
    println!(
        "{name}: {POOL_FLOOR}/fastest peer wall per round {wall:.3} (range {wall_range}); \
         fast/{POOL_FLOOR} CPU per round {cpu:.2} (range {cpu_range})"
    );
}

fn print_reference_target(name: &str, timed: &[Timed]) {
    let target = if name == "deep" {
        DEEP_OVER_REFERENCE
    } else {
        NM_OVER_REFERENCE
    };
    let (fast, reference) = (find(timed, "fast"), find(timed, "reference"));
    if let Some(ratios) = per_round(&fast.walls, &reference.walls) {
        let (ratio, range) = ratio_spread(ratios);
        println!(
            "{name}: fast/reference wall per round {ratio:.3} (range {range}) \
             (target <= {target}): {}",
            verdict(ratio, target)
        );
    }
    // What the target asks against what the floor's calls take, made on one core
    // and, on a chain, on two taking turns at no cost: no walk that makes these calls
    // and lists a level before it opens the next can do better than the latter.
    for floor in ["floor", CHAIN_FLOOR].map(|label| find_on_this_tree(timed, label)) {
        let Some(floor) = floor else { continue };
        if let Some(ratios) = per_round(&floor.walls, &reference.walls) {
            let (ratio, range) = ratio_spread(ratios);
            println!(
                "{name}: {}/reference wall per round {ratio:.3} (range {range})",
                floor.label
            );
        }
    }
}

/// The 1-minute load average, where the system says it (`/proc/loadavg`).
fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Other work on the host slows a walker that needs every core more than a serial
/// one, so wall ratios from a busy host say little; the reader is told.
fn print_load(start: Option<f64>, cores: usize) {
    let (Some(start), Some(end)) = (start, load_average()) else {
        return;
    };
    println!("load average: {start:.2} at start, {end:.2} at end, {cores} cores");
    if start.max(end) > cores as f64 - 0.5 {
        println!(
            "WARNING: the host was busy with other work: wall ratios of the parallel fast \
             engine against serial peers are pessimistic (see the min column)"
        );
    }
}

/// How a floor walk makes the floor's calls.
#[derive(Clone, Copy)]
enum Floor {
    Serial,
    /// Two threads taking turns down a chain.
    Chain,
    /// A thread per core sharing a stack of folders.
    Pool,
}

/// The floor walk of one tree, when this program was started as one.
fn floor_mode() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    let floor = match args.next()? {
        arg if arg == FLOOR_ARG => Floor::Serial,
        arg if arg == CHAIN_FLOOR_ARG => Floor::Chain,
        arg if arg == POOL_FLOOR_ARG => Floor::Pool,
        _ => return None,
    };
    Some(floor_walk(&PathBuf::from(args.next()?), floor))
}

#[cfg(target_os = "linux")]
fn floor_walk(tree: &Path, floor: Floor) -> ExitCode {
    let walked = match floor {
        Floor::Serial => floor::walk(tree),
        Floor::Chain => chain_floor::walk(tree),
        Floor::Pool => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            pool_floor::walk(tree, cores)
        }
    };
    match walked {
        Ok((entries, blocks)) => {
            println!("{entries} {blocks}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("floor walk of {}: {err}", tree.display());
            ExitCode::FAILURE
        }
    }
}

/// The floor is `statx`, which only Linux has.
#[cfg(not(target_os = "linux"))]
fn floor_walk(_tree: &Path, _floor: Floor) -> ExitCode {
    ExitCode::FAILURE
}

fn main() -> ExitCode {
    if let Some(code) = floor_mode() {
        return code;
    }
    let rounds = rounds();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("cores: {cores}; rounds: {rounds}, interleaved, after one warm-up; medians");
    let load_at_start = load_average();

    let mut results = Vec::new();
    for name in ["nm", "deep", START] {
        let built = bench_spec(name).and_then(|spec| {
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
        let entries = describe(name, &tree, build_time);
        let mut timed = programs(name, tree.path());
        check_outputs(name, &timed);
        check_floors(name, &timed, entries);
        time_all(&mut timed, rounds);
        results.push((name, entries, timed));
    }

    println!();
    println!(
        "{:<6} {:<10} {:>9} {:>9} {:>9} {:>10} {:>9}",
        "tree", "command", "wall ms", "min ms", "CPU ms", "CPU us/ent", "fast/this"
    );
    for (name, entries, timed) in &results {
        print_table(name, *entries, timed);
    }
    println!();
    print_load(load_at_start, cores);
    for (name, entries, timed) in results.iter().filter(|(name, ..)| *name != START) {
        print_cpu_target(name, *entries, timed);
        if *name == "nm" {
            print_peer_target(name, timed, cores);
        }
        print_reference_target(name, timed);
    }
    print_start(&results);
    ExitCode::SUCCESS
}

fn bench_spec(name: &str) -> Result<TreeSpec, FixtureError> {
    if name == START {
        return Ok(spec::parse("bench/walk.rs", START, "dir empty")?);
    }
    spec_named(name)
}

/// What the fast and reference engines' start costs (their median on the start
/// tree), and the deep ratio with it taken from both: the target is on whole runs,
/// and this says how much of a miss is the walk and how much the process.
fn print_start(results: &[(&str, u64, Vec<Timed>)]) {
    let medians = |tree: &str, label: &str| {
        let (_, _, timed) = results.iter().find(|(name, ..)| *name == tree)?;
        find(timed, label).wall()
    };
    let (Some(fast_start), Some(reference_start)) =
        (medians(START, "fast"), medians(START, "reference"))
    else {
        return;
    };
    println!(
        "start (one empty folder): fast {:.1} ms, reference {:.1} ms",
        ms(fast_start),
        ms(reference_start)
    );
    if let (Some(fast), Some(reference)) = (medians("deep", "fast"), medians("deep", "reference")) {
        let walk = |whole: Duration, start: Duration| ms(whole.saturating_sub(start));
        let (fast_walk, reference_walk) =
            (walk(fast, fast_start), walk(reference, reference_start));
        println!(
            "deep, each start taken away (medians; the target is on whole runs): fast {fast_walk:.1} ms, \
             reference {reference_walk:.1} ms, fast/reference {:.3}",
            fast_walk / reference_walk
        );
    }
}
