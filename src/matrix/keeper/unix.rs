//! Waiting for a run on Unix: `wait4` gives its exit status and the resource use of
//! the process and every descendant it waited for. `wait` waits in this process,
//! with a watchdog thread that kills the run's group at its timeout (the
//! benchmarks' peers); the keeper waits with `wait4` and its own timer.

use std::os::unix::process::ExitStatusExt;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::Cost;
use crate::cleanup;
use crate::outcome::ArmStatus;

/// `wait4` on the child, with a watchdog thread that kills its process group
/// when the timeout passes first.
pub fn wait(child: std::process::Child, started: Instant, timeout: Duration) -> Cost {
    let pid = child.id();
    let (done, finished) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || match finished.recv_timeout(timeout) {
        Err(mpsc::RecvTimeoutError::Timeout) => {
            cleanup::kill_group(pid);
            true
        }
        _ => false,
    });
    let waited = wait4(pid);
    let wall = started.elapsed();
    let _ = done.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    // Whatever the run left in its group would go on using the machine (and
    // the tree) during the next timed run.
    cleanup::kill_group(pid);
    // Reaped by wait4 above: the Child must not be waited for again.
    drop(child);
    match waited {
        Ok((raw_status, usage)) => cost_of(raw_status, &usage, wall, timed_out.then_some(timeout)),
        Err(err) => Cost::failed(format!("waiting for process {pid}: {err}")),
    }
}

/// The run may write no file past `cap` bytes but one: the byte past the cap
/// stops it (SIGXFSZ, or a failed write where it ignores that signal), and the one
/// byte more tells a run that passed the cap from one that wrote exactly that much.
/// The limit holds for everything the run starts, which cannot raise it again.
pub(super) fn limit_file_size(command: &mut std::process::Command, cap: u64) {
    use std::os::unix::process::CommandExt;
    let limit = rustix::process::Rlimit {
        current: Some(cap.saturating_add(1)),
        maximum: Some(cap.saturating_add(1)),
    };
    // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent's.
    unsafe {
        command.pre_exec(move || {
            rustix::process::setrlimit(rustix::process::Resource::Fsize, limit).map_err(Into::into)
        });
    }
}

/// What a reaped run cost, from `wait4`'s status and resource use; a run whose
/// `timeout` passed is timed out, whatever its status says.
pub(super) fn cost_of(
    raw_status: i32,
    usage: &libc::rusage,
    wall: Duration,
    timed_out: Option<Duration>,
) -> Cost {
    let status = match timed_out {
        Some(timeout) => ArmStatus::TimedOut {
            after_secs: timeout.as_secs_f64(),
        },
        None => crate::matrix::exec::status_of(std::process::ExitStatus::from_raw(raw_status)),
    };
    Cost {
        status,
        wall,
        user: Some(duration_of(usage.ru_utime)),
        system: Some(duration_of(usage.ru_stime)),
        peak_bytes: Some(peak_bytes(usage.ru_maxrss)),
        left_running: None,
    }
}

pub(super) fn wait4(pid: u32) -> std::io::Result<(i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: rusage is plain old data, all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both pointers are to live locals of the right types; the pid
        // is our own unreaped child.
        let reaped = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
        if reaped >= 0 {
            return Ok((status, usage));
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

fn duration_of(time: libc::timeval) -> Duration {
    Duration::from_secs(time.tv_sec.max(0) as u64)
        + Duration::from_micros(time.tv_usec.max(0) as u64)
}

/// `ru_maxrss` is in KiB on Linux and the BSDs, in bytes on macOS.
fn peak_bytes(maxrss: libc::c_long) -> u64 {
    let maxrss = maxrss.max(0) as u64;
    match cfg!(target_os = "macos") {
        true => maxrss,
        false => maxrss * 1024,
    }
}
