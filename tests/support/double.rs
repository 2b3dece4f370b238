//! `eqcheck-double`: the test double that stands in for a third-party walker in the
//! test suite and the benchmarks. It prints, sleeps, crashes, or runs eqcheck's own
//! walker (the `eqcheck` binary beside it) and perturbs its output, on request:
//!
//! ```text
//! eqcheck-double print TEXT              TEXT (with \n and \t escapes) on stdout
//! eqcheck-double exit CODE [TEXT]        TEXT as `print` does, then exits with CODE
//! eqcheck-double sleep SECS              sleeps, then prints `woke`
//! eqcheck-double burn SECS               spins until it has used SECS of CPU
//!                                        (Unix; elsewhere SECS of wall time),
//!                                        then prints `burned`
//! eqcheck-double burn-child SECS         runs `burn SECS` as a child, waits for
//!                                        it, then prints `burned`
//! eqcheck-double allocate MIB            fills MIB MiB of memory, then prints
//!                                        `allocated`
//! eqcheck-double dump [PLANTS...] TREE   one JSON record per entry of TREE, as
//!                                        `eqcheck probe --cand` reads them, with
//!                                        faults planted on request (double/dump.rs)
//! eqcheck-double complain NAME...        `ARGV0: cannot access 'NAME'` on stderr for
//!                                        each NAME, where ARGV0 is the name it was
//!                                        run by, then exits 1, as du does
//! eqcheck-double crash                   aborts (SIGABRT on Unix)
//! eqcheck-double signal NAME             ends by signal NAME: SEGV, KILL or ABRT (Unix;
//!                                        elsewhere ABRT aborts and the others exit 134)
//! eqcheck-double walk-drop-line N ARGS   `eqcheck walk ARGS` without its Nth stdout line
//! eqcheck-double walk-alter-line N ARGS  the same with 1 added to line N's size
//! eqcheck-double touch REL ARGS...       appends a byte to REL under the tree (the
//!                                        last argument), then prints `touched`
//! eqcheck-double mutate KIND REL ARGS...  changes REL under the tree (the last
//!                                        argument): KIND is create, delete, rename
//!                                        (to REL.moved), chmod (to 0600), mtime (to
//!                                        the epoch) or flood (creates REL/0 …
//!                                        REL/9999 and removes them), then prints
//!                                        `mutated`
//! eqcheck-double lines N STEP            N numbered lines, line i showing i * STEP
//! eqcheck-double linger FILE SECS        leaves a child behind that writes FILE after
//!                                        SECS, then exits at once
//! eqcheck-double items N SEP PREFIX [--stderr]
//!                                        PREFIX, then `i1` … `iN` joined by SEP in an
//!                                        order that changes from run to run (a list
//!                                        printed from a hash set), then a newline; on
//!                                        stderr with `--stderr`, as dust prints its
//!                                        permission list
//! eqcheck-double bytes SIZE [DIFFER_AT]  SIZE bytes (`10K`, `200M`, `1G`: powers of
//!                                        1024) of 64-byte numbered lines, the same on
//!                                        every run; with DIFFER_AT, line DIFFER_AT
//!                                        (from 1) reads differently, same length;
//!                                        DIFFER_AT may also list lines and ranges,
//!                                        `5,100-199`
//! eqcheck-double drop-every N COUNTER [TEXT...]
//!                                        one line per TEXT (`line 1` … `line 9` when
//!                                        none), without the middle one on every Nth
//!                                        run; COUNTER is a file (outside the tree)
//!                                        that counts the runs, and runs sharing it
//!                                        must not overlap
//! eqcheck-double no-statx ERRNO PROGRAM ARGS...
//!                                        runs PROGRAM ARGS (Linux) under a seccomp
//!                                        filter that fails every `statx` with ERRNO
//!                                        (ENOSYS, EPERM or a number), as an old
//!                                        kernel or container profile does
//! ```
//!
//! `print`, `exit`, `signal`, `items` and `bytes` ignore arguments after their own
//! (such as the tree's path eqcheck appends). `drop-every`'s texts run to the end:
//! give its flag-set file an empty `operand =`, or the tree's path is one more line.

#[cfg(unix)]
#[path = "double/dump.rs"]
mod dump;

use std::io::Write;
use std::process::{Command, ExitCode};

#[cfg(target_os = "linux")]
mod seccomp;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("print") => {
            print!("{}", unescape(args.get(1).map_or("", String::as_str)));
            ExitCode::SUCCESS
        }
        Some("exit") => {
            let Some(code) = args.get(1).and_then(|c| c.parse::<u8>().ok()) else {
                eprintln!("eqcheck-double: exit CODE [TEXT], CODE in 0..=255");
                return ExitCode::from(2);
            };
            print!("{}", unescape(args.get(2).map_or("", String::as_str)));
            ExitCode::from(code)
        }
        Some("sleep") => {
            let secs: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3600.0);
            std::thread::sleep(std::time::Duration::from_secs_f64(secs));
            println!("woke");
            ExitCode::SUCCESS
        }
        Some("burn") => {
            burn(args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1.0));
            println!("burned");
            ExitCode::SUCCESS
        }
        Some("burn-child") => {
            let me = std::env::current_exe().expect("own path");
            let secs = args.get(1).map_or("1", String::as_str);
            let status = Command::new(me).args(["burn", secs]).output();
            match status {
                Ok(out) if out.status.success() => {
                    println!("burned");
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(3),
            }
        }
        Some("allocate") => {
            let mib: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
            let mut memory = vec![0u8; mib << 20];
            // Every page written, so every page is resident.
            for page in memory.chunks_mut(4096) {
                page[0] = 1;
            }
            std::hint::black_box(&memory);
            println!("allocated");
            ExitCode::SUCCESS
        }
        Some("peak") => note_own_peak(args.get(1).map_or("", String::as_str)),
        Some("complain") => complain(&args[1..]),
        #[cfg(unix)]
        Some("dump") => dump::dump(&args[1..]),
        Some("crash") => std::process::abort(),
        Some("signal") => end_by_signal(args.get(1).map_or("", String::as_str)),
        Some("items") => print_items(&args[1..]),
        Some("bytes") => write_bytes(&args[1..]),
        Some("drop-every") => drop_every(&args[1..]),
        Some("lines") => {
            let count: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(0);
            let step: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            for i in 0..count {
                writeln!(out, "line {}", i * step).unwrap();
            }
            ExitCode::SUCCESS
        }
        Some("linger") => {
            let (Some(file), Some(secs)) = (args.get(1), args.get(2)) else {
                return ExitCode::from(2);
            };
            let me = std::env::current_exe().expect("own path");
            // Left unwaited on purpose: the point is a child that outlives its parent.
            #[allow(clippy::zombie_processes)]
            Command::new(me)
                .args(["write-later", file, secs])
                .spawn()
                .expect("the lingering child starts");
            ExitCode::SUCCESS
        }
        Some("write-later") => {
            let secs: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1.0);
            std::thread::sleep(std::time::Duration::from_secs_f64(secs));
            std::fs::write(&args[1], b"late").expect("the file can be written");
            ExitCode::SUCCESS
        }
        Some("touch") => {
            let (Some(relative), Some(tree)) = (args.get(1), args.last()) else {
                eprintln!("eqcheck-double: touch REL ... TREE");
                return ExitCode::from(2);
            };
            let mut file = std::fs::OpenOptions::new()
                .append(true)
                .open(std::path::Path::new(tree).join(relative))
                .expect("the file to touch exists");
            file.write_all(b"!").expect("the file takes a byte");
            println!("touched");
            ExitCode::SUCCESS
        }
        Some("mutate") => mutate(&args[1..]),
        Some("no-statx") => no_statx(&args[1..]),
        Some(mode @ ("walk-drop-line" | "walk-alter-line")) => {
            let line: usize = args
                .get(1)
                .and_then(|s| s.parse().ok())
                .expect("a line number");
            perturbed_walk(mode == "walk-drop-line", line, &args[2..])
        }
        _ => {
            eprintln!("eqcheck-double: unknown request {args:?}");
            ExitCode::from(2)
        }
    }
}

/// Spins until the process has used `secs` of CPU time.
#[cfg(unix)]
fn burn(secs: f64) {
    let used = || {
        // SAFETY: rusage is plain data; getrusage fills it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        seconds(usage.ru_utime) + seconds(usage.ru_stime)
    };
    let mut spin = 0u64;
    while used() < secs {
        for _ in 0..10_000 {
            spin = std::hint::black_box(spin.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

/// Spins for `secs` of wall time, where no CPU clock is read.
#[cfg(not(unix))]
fn burn(secs: f64) {
    let start = std::time::Instant::now();
    let mut spin = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        spin = std::hint::black_box(spin.wrapping_add(1));
    }
}

fn perturbed_walk(drop: bool, target: usize, walk_args: &[String]) -> ExitCode {
    let me = std::env::current_exe().expect("own path");
    let eqcheck = me.with_file_name(format!("eqcheck{}", std::env::consts::EXE_SUFFIX));
    let output = Command::new(eqcheck)
        .arg("walk")
        .args(walk_args)
        .output()
        .expect("eqcheck walk runs");
    let mut stdout = std::io::stdout().lock();
    for (index, line) in output.stdout.split_inclusive(|&b| b == b'\n').enumerate() {
        if index + 1 != target {
            stdout.write_all(line).unwrap();
        } else if !drop {
            let text = String::from_utf8_lossy(line);
            let (size, rest) = text.split_once('\t').expect("a du line");
            let bumped: u64 = size.parse::<u64>().expect("a size") + 1;
            write!(stdout, "{bumped}\t{rest}").unwrap();
        }
    }
    std::io::stderr().write_all(&output.stderr).unwrap();
    ExitCode::from(output.status.code().unwrap_or(1) as u8)
}

/// `\n` and `\t` written out in an argument become a newline and a tab.
fn unescape(text: &str) -> String {
    text.replace("\\n", "\n").replace("\\t", "\t")
}

/// A seed that differs between runs: the clock's nanoseconds and the process id.
fn run_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}

fn print_items(args: &[String]) -> ExitCode {
    let (Some(count), Some(separator), Some(prefix)) = (
        args.first().and_then(|n| n.parse::<usize>().ok()),
        args.get(1),
        args.get(2),
    ) else {
        eprintln!("eqcheck-double: items N SEP PREFIX [--stderr]");
        return ExitCode::from(2);
    };
    let mut items: Vec<String> = (1..=count).map(|i| format!("i{i}")).collect();
    fastrand::Rng::with_seed(run_seed()).shuffle(&mut items);
    let line = format!("{prefix}{}\n", items.join(separator));
    if args.get(3).is_some_and(|flag| flag == "--stderr") {
        std::io::stderr().write_all(line.as_bytes()).unwrap();
    } else {
        std::io::stdout().write_all(line.as_bytes()).unwrap();
    }
    ExitCode::SUCCESS
}

/// `4096`, `10K`, `200M`, `1G` (powers of 1024) as a byte count.
fn parse_size(text: &str) -> Option<u64> {
    let (digits, unit) = match text.char_indices().last()? {
        (at, 'K' | 'k') => (&text[..at], 1 << 10),
        (at, 'M' | 'm') => (&text[..at], 1 << 20),
        (at, 'G' | 'g') => (&text[..at], 1 << 30),
        _ => (text, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// Each line of `bytes` is this long, newline included.
const BYTES_LINE: usize = 64;

/// Lines per block handed to one write: 1 MiB, so a gigabyte takes 1,024 writes.
const BYTES_BLOCK_LINES: usize = 16_384;

/// Writes `SIZE` bytes of numbered 64-byte lines in 1 MiB blocks. Each block is a
/// template whose 12-digit line numbers are rewritten in place, so the cost per
/// gigabyte is a few million digit stores, not a formatted write per line. The
/// last line is cut to fit SIZE and still ends with a newline.
fn write_bytes(args: &[String]) -> ExitCode {
    let Some(size) = args.first().and_then(|s| parse_size(s)) else {
        eprintln!("eqcheck-double: bytes SIZE [DIFFER_AT_LINE], SIZE like 4096, 10K, 200M, 1G");
        return ExitCode::from(2);
    };
    // Anything else after SIZE (a tree's path) is ignored, as before.
    let differ_at = args
        .get(1)
        .and_then(|list| line_ranges(list))
        .unwrap_or_default();
    // Each exactly the 51 bytes between a line's number and its newline.
    const FILLER: &[u8; 51] = b" the same text in every run and arm; numbers change";
    const CHANGED: &[u8; 51] = b" THIS LINE DIFFERS: the arm was asked to change it.";
    let mut block = Vec::with_capacity(BYTES_LINE * BYTES_BLOCK_LINES);
    for _ in 0..BYTES_BLOCK_LINES {
        block.extend_from_slice(b"000000000000");
        block.extend_from_slice(FILLER);
        block.push(b'\n');
    }
    let mut out = std::io::stdout().lock();
    let (mut written, mut first_line) = (0u64, 1u64);
    while written < size {
        for (index, line) in block.chunks_mut(BYTES_LINE).enumerate() {
            let number = first_line + index as u64;
            let mut rest = number;
            for digit in line[..12].iter_mut().rev() {
                *digit = b'0' + (rest % 10) as u8;
                rest /= 10;
            }
            let text = if differ_at.iter().any(|range| range.contains(&number)) {
                CHANGED
            } else {
                FILLER
            };
            line[12..BYTES_LINE - 1].copy_from_slice(text);
        }
        let take = (size - written).min(block.len() as u64) as usize;
        let last = written + take as u64 == size;
        let result = if last {
            // The final line is cut to fit; it still ends like a line.
            let mut tail = block[..take].to_vec();
            if let Some(end) = tail.last_mut() {
                *end = b'\n';
            }
            out.write_all(&tail)
        } else {
            out.write_all(&block)
        };
        if let Err(err) = result {
            eprintln!("eqcheck-double: bytes: {err}");
            return ExitCode::from(1);
        }
        written += take as u64;
        first_line += BYTES_BLOCK_LINES as u64;
    }
    ExitCode::SUCCESS
}

/// `5,100-199` as the line ranges it names.
fn line_ranges(list: &str) -> Option<Vec<std::ops::RangeInclusive<u64>>> {
    list.split(',')
        .map(|part| match part.split_once('-') {
            Some((from, to)) => Some(from.parse().ok()?..=to.parse().ok()?),
            None => part.parse().ok().map(|line| line..=line),
        })
        .collect()
}

fn drop_every(args: &[String]) -> ExitCode {
    let (Some(every), Some(counter)) = (
        args.first()
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|&n| n > 0),
        args.get(1),
    ) else {
        eprintln!("eqcheck-double: drop-every N COUNTER_FILE [TEXT...], N at least 1");
        return ExitCode::from(2);
    };
    let previous: u64 = std::fs::read_to_string(counter)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(0);
    let this_run = previous + 1;
    if let Err(err) = std::fs::write(counter, format!("{this_run}\n")) {
        eprintln!("eqcheck-double: cannot write the run counter {counter}: {err}");
        return ExitCode::from(2);
    }
    let mut lines: Vec<String> = args[2..].iter().map(|t| unescape(t)).collect();
    if lines.is_empty() {
        lines = (1..=9).map(|i| format!("line {i}")).collect();
    }
    if this_run % every == 0 {
        lines.remove(lines.len() / 2);
    }
    let mut out = std::io::stdout().lock();
    for line in lines {
        writeln!(out, "{line}").unwrap();
    }
    ExitCode::SUCCESS
}

/// Ends the process by the named signal, sent to itself. It is sent until it
/// lands: Rust's runtime catches the first SIGSEGV (to tell a stack overflow
/// apart), finds no overflow, puts the default action back and returns.
#[cfg(unix)]
fn end_by_signal(name: &str) -> ExitCode {
    use rustix::process::{getpid, getrlimit, kill_process, setrlimit, Resource, Signal};
    let signal = match name.trim_start_matches("SIG") {
        "SEGV" => Signal::SEGV,
        "KILL" => Signal::KILL,
        "ABRT" => Signal::ABORT,
        _ => {
            eprintln!("eqcheck-double: signal SEGV|KILL|ABRT, not `{name}`");
            return ExitCode::from(2);
        }
    };
    // A crash on request leaves no core file wherever the arm happened to run.
    let mut core = getrlimit(Resource::Core);
    core.current = Some(0);
    let _ = setrlimit(Resource::Core, core);
    loop {
        if let Err(err) = kill_process(getpid(), signal) {
            eprintln!("eqcheck-double: cannot send {name} to itself: {err}");
            return ExitCode::from(2);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Without Unix signals: ABRT aborts, and the others exit as a shell reports a
/// SIGABRT death (128 + 6), so a crash still shows as a different status.
#[cfg(not(unix))]
fn end_by_signal(name: &str) -> ExitCode {
    match name.trim_start_matches("SIG") {
        "ABRT" => std::process::abort(),
        "SEGV" | "KILL" => ExitCode::from(134),
        _ => {
            eprintln!("eqcheck-double: signal SEGV|KILL|ABRT, not `{name}`");
            ExitCode::from(2)
        }
    }
}

/// Errors that name the program as it was run, the way GNU tools print them.
fn complain(names: &[String]) -> ExitCode {
    let argv0 = std::env::args_os().next().unwrap_or_default();
    for name in names {
        eprintln!("{}: cannot access '{name}'", argv0.to_string_lossy());
    }
    ExitCode::from(1)
}

/// `no-statx ERRNO PROGRAM ARGS...`: installs the filter, then becomes PROGRAM, so
/// every thread PROGRAM starts inherits it.
#[cfg(target_os = "linux")]
fn no_statx(args: &[String]) -> ExitCode {
    use std::os::unix::process::CommandExt;
    let errno = match args.first().map(String::as_str) {
        Some("ENOSYS") => Some(libc::ENOSYS),
        Some("EPERM") => Some(libc::EPERM),
        Some(number) => number.parse().ok(),
        None => None,
    };
    let (Some(errno), Some(program)) = (errno.and_then(|e| u16::try_from(e).ok()), args.get(1))
    else {
        eprintln!("eqcheck-double: no-statx ENOSYS|EPERM|NUMBER PROGRAM [ARGS...]");
        return ExitCode::from(2);
    };
    if let Err(err) = seccomp::refuse_statx(errno) {
        eprintln!("eqcheck-double: cannot install the seccomp filter: {err}");
        return ExitCode::from(2);
    }
    let err = Command::new(program).args(&args[2..]).exec();
    eprintln!("eqcheck-double: cannot run {program}: {err}");
    ExitCode::from(2)
}

#[cfg(not(target_os = "linux"))]
fn no_statx(_args: &[String]) -> ExitCode {
    eprintln!("eqcheck-double: no-statx needs Linux (seccomp)");
    ExitCode::from(2)
}

/// `mutate KIND REL ... TREE`: one kind of change to the tree, for the guard's tests.
fn mutate(args: &[String]) -> ExitCode {
    let (Some(kind), Some(relative), Some(tree)) = (args.first(), args.get(1), args.last()) else {
        eprintln!("eqcheck-double: mutate KIND REL ... TREE");
        return ExitCode::from(2);
    };
    let path = std::path::Path::new(tree).join(relative);
    let done = match kind.as_str() {
        "create" => std::fs::write(&path, b"new"),
        "delete" => std::fs::remove_file(&path),
        "rename" => std::fs::rename(&path, path.with_extension("moved")),
        "chmod" => set_mode(&path, 0o600),
        "mtime" => std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(std::time::SystemTime::UNIX_EPOCH)),
        "flood" => (0..10_000)
            .try_for_each(|i| std::fs::write(path.join(i.to_string()), b""))
            .and_then(|()| {
                (0..10_000).try_for_each(|i| std::fs::remove_file(path.join(i.to_string())))
            }),
        other => {
            eprintln!("eqcheck-double: no mutation {other}");
            return ExitCode::from(2);
        }
    };
    match done {
        Ok(()) => {
            println!("mutated");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("eqcheck-double: mutate {kind} {}: {err}", path.display());
            ExitCode::from(2)
        }
    }
}

#[cfg(unix)]
fn set_mode(path: &std::path::Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(path: &std::path::Path, _mode: u32) -> std::io::Result<()> {
    let mut permissions = std::fs::metadata(path)?.permissions();
    permissions.set_readonly(true);
    std::fs::set_permissions(path, permissions)
}

/// Appends this process's own peak resident set (`VmHWM`, in KiB: the kernel's
/// figure for this address space alone, whatever the process it came from held)
/// to `file`, for a test to hold a run's reported peak against.
fn note_own_peak(file: &str) -> ExitCode {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("unknown");
    let noted = std::fs::OpenOptions::new()
        .append(true)
        .open(file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, format!("{kib}\n").as_bytes()));
    match noted {
        Ok(()) => {
            println!("peaked");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("eqcheck-double: peak: {file}: {err}");
            ExitCode::from(2)
        }
    }
}
