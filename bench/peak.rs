//! Shared by the benchmarks that measure one eqcheck process: run it to the end
//! while sampling its own peak resident memory.
//!
//! The peak is the process's alone. Waiting for the child's resource usage would
//! not give it: a process's max RSS as its parent sees it includes the descendants
//! it waited for (a run's arms). Instead the high-water mark (`VmHWM`) of its own
//! address space is read from `/proc/PID/status` every few milliseconds while it
//! runs, and the last value read is kept; the mark only rises, so only the last
//! milliseconds before exit go unseen. Without `/proc` (macOS, Windows) the peak is
//! unknown.

use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// How often the high-water mark is read.
const SAMPLE_EVERY: Duration = Duration::from_millis(2);

/// One run: how it ended, how long it took, and its peak memory in bytes.
pub struct Sampled {
    pub status: ExitStatus,
    pub wall: Duration,
    pub peak: Option<u64>,
}

/// Runs `command` to the end, sampling its high-water mark.
pub fn run_sampled(command: &mut Command) -> std::io::Result<Sampled> {
    let started = Instant::now();
    let mut child = command.spawn()?;
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = None;
    let status = loop {
        // Read before asking whether it ended: once it has, its memory is gone.
        if let Some(now) = high_water_mark(&status_file) {
            peak = Some(now);
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(SAMPLE_EVERY);
    };
    Ok(Sampled {
        status,
        wall: started.elapsed(),
        peak,
    })
}

/// `VmHWM` from a `/proc/PID/status` file, in bytes.
fn high_water_mark(status_file: &str) -> Option<u64> {
    let text = std::fs::read_to_string(status_file).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kilobytes: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kilobytes * 1024)
}

/// Bytes as megabytes, for a table.
pub fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}
