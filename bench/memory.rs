//! Memory benchmark: eqcheck's own peak memory while it compares two 1 GiB outputs.
//! It runs the built eqcheck as a child, with both arms `eqcheck-double bytes 1G`
//! (identical outputs), then again with the candidate's outputs differing: one line
//! changed (the whole of both outputs is still read, line by line, to count the
//! differing lines), every line changed (one hunk as long as the outputs, a search
//! for where they agree again at every line), and one line changed under a
//! `sort-lines` rule (the lines each arm lacks counted as a multiset, spilled to
//! disk). Each runs over a one-file tree and prints the output size, wall time,
//! eqcheck's peak resident memory, the verdict, and PASS or MISS against the 200 MB
//! target. A plain program run by `cargo bench --bench memory`; it prints and
//! never asserts.
//!
//! The peak is eqcheck's alone, not its arms': `bench/peak.rs` says how.
//!
//! Everything goes in one folder under the system temp folder (eqcheck's own
//! scratch too, through `TMPDIR`), which is removed at the end. The arms' outputs
//! need twice the size on disk at once, and the sorted case's spilled digests
//! (24 bytes for each 64-byte line) some 40% more: 2.8 GiB by default.
//! `EQCHECK_BENCH_SIZE=200M` runs a smaller version.

#[path = "peak.rs"]
mod peak;

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

/// The built binaries, so eqcheck is measured exactly as users run it.
const EQCHECK: &str = env!("CARGO_BIN_EXE_eqcheck");
const DOUBLE: &str = env!("CARGO_BIN_EXE_eqcheck-double");

/// Each arm's output size unless `EQCHECK_BENCH_SIZE` says otherwise.
const DEFAULT_SIZE: &str = "1G";

/// The design's bound on eqcheck's peak memory, whatever the output size.
const TARGET_BYTES: u64 = 200_000_000;

/// One measured run of eqcheck.
struct Measured {
    wall: Duration,
    /// Bytes; `None` where `/proc` cannot say.
    peak: Option<u64>,
    exit: Option<i32>,
    verdict: String,
    notes: Vec<String>,
    /// The first line of the stdout diff, which counts the differing lines.
    count: Option<String>,
}

fn main() -> ExitCode {
    let size = std::env::var("EQCHECK_BENCH_SIZE").unwrap_or_else(|_| DEFAULT_SIZE.into());
    let Some(bytes) = size_in_bytes(&size) else {
        eprintln!("EQCHECK_BENCH_SIZE={size}: expected a size such as 200M or 1G");
        return ExitCode::FAILURE;
    };
    let scratch = match scratch_folder() {
        Ok(dir) => dir,
        Err(err) => {
            eprintln!(
                "cannot make a folder under {}: {err}",
                std::env::temp_dir().display()
            );
            return ExitCode::FAILURE;
        }
    };
    let sets = scratch.path().join("one.sets");
    let sorted = scratch.path().join("sorted.sets");
    let tree = scratch.path().join("tiny");
    let prepared = std::fs::write(&sets, "operand =\n[only]\n(none)\n")
        .and_then(|()| {
            let rule = "[rule order]\nkind = sort-lines\nstream = stdout\n";
            std::fs::write(&sorted, format!("operand =\n[only]\n(none)\n{rule}"))
        })
        .and_then(|()| std::fs::create_dir(&tree))
        .and_then(|()| std::fs::write(tree.join("file"), "x\n"));
    if let Err(err) = prepared {
        eprintln!("cannot prepare {}: {err}", scratch.path().display());
        return ExitCode::FAILURE;
    }

    // The changed line is in the middle: before it, both outputs are read in
    // step; after it, both are still read to the end, to count.
    let middle_line = bytes / 64 / 2;
    let same = format!("{DOUBLE} bytes {size}");
    let changed = format!("{DOUBLE} bytes {size} {middle_line}");
    let all_changed = format!("{DOUBLE} bytes {size} 1-{}", bytes / 64 + 1);
    // Label, candidate, flag-set file, and the exit expected: 0 equal, 1 differs.
    let scenarios = [
        ("identical", &same, &sets, 0),
        ("one line", &changed, &sets, 1),
        ("all lines", &all_changed, &sets, 1),
        ("sorted, one", &changed, &sorted, 1),
    ];
    println!(
        "each arm writes {} ({bytes} bytes); target: eqcheck's peak RSS <= {} MB",
        size,
        TARGET_BYTES / 1_000_000
    );
    println!(
        "{:<12} {:>8} {:>14} {:<10} result",
        "outputs", "wall s", "eqcheck peak", "verdict"
    );
    let mut failed = false;
    for (label, candidate, sets, expected) in scenarios {
        let measured = match measure(&same, candidate, sets, &tree, scratch.path()) {
            Ok(measured) => measured,
            Err(err) => {
                eprintln!("cannot run eqcheck: {err}");
                return ExitCode::FAILURE;
            }
        };
        failed |= !print_row(label, &measured, expected, scratch.path());
    }
    drop(scratch);
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Prints one measured run as a row of the table, with its notes and count line;
/// whether eqcheck exited as `expected` (if not, its messages follow).
fn print_row(label: &str, measured: &Measured, expected: i32, scratch: &Path) -> bool {
    let (peak, result) = match measured.peak {
        Some(peak) if peak <= TARGET_BYTES => (peak::megabytes(peak), "PASS"),
        Some(peak) => (peak::megabytes(peak), "MISS"),
        None => ("unknown".to_string(), "SKIP (no /proc)"),
    };
    println!(
        "{:<12} {:>8.1} {:>14} {:<10} {result}",
        label,
        measured.wall.as_secs_f64(),
        peak,
        measured.verdict
    );
    for note in &measured.notes {
        println!("             note: {note}");
    }
    if let Some(count) = &measured.count {
        println!("             count: {count}");
    }
    if measured.exit == Some(expected) {
        return true;
    }
    println!(
        "             eqcheck exited {:?}, expected {expected}; its messages:",
        measured.exit
    );
    let messages = std::fs::read_to_string(scratch.join("eqcheck.err"));
    for line in messages.unwrap_or_default().lines().take(40) {
        println!("             | {line}");
    }
    false
}

/// A 0755 folder under the system temp folder, removed when dropped; 0755 so that
/// arms run as another user (when eqcheck runs as root) can reach their HOME.
fn scratch_folder() -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix("eqc-memory-")
        .tempdir_in(std::env::temp_dir())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
    }
    Ok(dir)
}

/// Runs eqcheck once and samples its high-water mark until it exits.
fn measure(
    reference: &str,
    candidate: &str,
    sets: &Path,
    tree: &Path,
    scratch: &Path,
) -> std::io::Result<Measured> {
    let report = scratch.join("report.json");
    let mut command = Command::new(EQCHECK);
    command
        .args(["--ref", reference, "--cand", candidate, "--timeout", "3600"])
        .arg("--sets")
        .arg(sets)
        .arg("--tree")
        .arg(tree)
        .arg("--json")
        .arg(&report)
        .env("TMPDIR", scratch)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(scratch.join("eqcheck.out"))?)
        .stderr(std::fs::File::create(scratch.join("eqcheck.err"))?);
    let sampled = peak::run_sampled(&mut command)?;
    let (status, wall, peak) = (sampled.status, sampled.wall, sampled.peak);
    let (verdict, notes, count) = verdict_of(&report);
    Ok(Measured {
        wall,
        peak,
        exit: status.code(),
        verdict,
        notes,
        count,
    })
}

/// The only case's verdict, notes and the count line of its stdout diff, from the
/// JSON report.
fn verdict_of(report: &Path) -> (String, Vec<String>, Option<String>) {
    let parsed: Option<serde_json::Value> = std::fs::read(report)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let Some(case) = parsed.as_ref().map(|r| &r["cases"][0]) else {
        return ("no report".into(), Vec::new(), None);
    };
    let verdict = case["verdict"]["kind"].as_str().unwrap_or("?").to_string();
    let notes = case["notes"]
        .as_array()
        .map(|notes| {
            notes
                .iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let count = case["streams"][0]["diff"]
        .as_str()
        .and_then(|diff| diff.lines().next())
        .map(str::to_string);
    (verdict, notes, count)
}

/// `200M`, `1G` (powers of 1024, as the double reads them) in bytes.
fn size_in_bytes(text: &str) -> Option<u64> {
    let (digits, unit) = match text.char_indices().last()? {
        (at, 'K' | 'k') => (&text[..at], 1u64 << 10),
        (at, 'M' | 'm') => (&text[..at], 1 << 20),
        (at, 'G' | 'g') => (&text[..at], 1 << 30),
        _ => (text, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(unit)
}
