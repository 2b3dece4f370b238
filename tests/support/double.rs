//! `eqcheck-double`: the test double that stands in for a third-party walker in the
//! test suite. It prints, sleeps, crashes, or runs eqcheck's own walker (the
//! `eqcheck` binary beside it) and perturbs its output, on request:
//!
//! ```text
//! eqcheck-double print TEXT              TEXT (with \n and \t escapes) on stdout
//! eqcheck-double sleep SECS              sleeps, then prints `woke`
//! eqcheck-double crash                   aborts (SIGABRT on Unix)
//! eqcheck-double walk-drop-line N ARGS   `eqcheck walk ARGS` without its Nth stdout line
//! eqcheck-double walk-alter-line N ARGS  the same with 1 added to line N's size
//! eqcheck-double touch REL ARGS...       appends a byte to REL under the tree (the
//!                                        last argument), then prints `touched`
//! eqcheck-double lines N STEP            N numbered lines, line i showing i * STEP
//! eqcheck-double linger FILE SECS        leaves a child behind that writes FILE after
//!                                        SECS, then exits at once
//! ```

use std::io::Write;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("print") => {
            let text = args.get(1).map_or(String::new(), |t| {
                t.replace("\\n", "\n").replace("\\t", "\t")
            });
            print!("{text}");
            ExitCode::SUCCESS
        }
        Some("sleep") => {
            let secs: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(3600.0);
            std::thread::sleep(std::time::Duration::from_secs_f64(secs));
            println!("woke");
            ExitCode::SUCCESS
        }
        Some("crash") => std::process::abort(),
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
