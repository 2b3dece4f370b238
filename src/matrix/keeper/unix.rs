//! Waiting for a run on Unix: `wait4` gives its exit status and the resource use of
//! the process and every descendant it waited for. `wait` waits in this process,
//! with a watchdog thread that kills the run's group at its timeout (the
//! benchmarks' peers); the keeper waits with `wait4` and its own timer. Also the
//! signal dispositions a run starts with.

use std::ffi::c_int;
use std::os::unix::process::ExitStatusExt;
use std::sync::{mpsc, OnceLock};
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

/// The signals this process ignores, asked once. A run starts with each of them
/// back at its default, so that how eqcheck was started does not reach the arms:
/// Rust ignores SIGPIPE, a parent may leave signals such as SIGUSR1 or SIGTTOU
/// ignored, and the GNU C library's `posix_spawn`, which starts the keeper, leaves
/// its internal real-time signal 32 ignored in the program it starts. `exec` keeps
/// an ignored signal ignored.
pub(super) fn ignored_signals() -> &'static [c_int] {
    static IGNORED: OnceLock<Vec<c_int>> = OnceLock::new();
    IGNORED.get_or_init(|| {
        (1..=64)
            .filter(|&signal| sigaction::disposition(signal) == Some(libc::SIG_IGN))
            .collect()
    })
}

/// Puts `signals` back to their defaults: in a run's process before its exec,
/// where only async-signal-safe calls may be made.
pub(super) fn default_signals(signals: &[c_int]) {
    for &signal in signals {
        sigaction::set_default(signal);
    }
}

/// Through the C library's `sigaction`.
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
mod sigaction {
    use std::ffi::c_int;

    /// The signal's handler (`SIG_DFL`, `SIG_IGN` or a function), or none for a
    /// number that is no signal here.
    pub(super) fn disposition(signal: c_int) -> Option<libc::sighandler_t> {
        // SAFETY: asks for the disposition only, into a local.
        let mut now: libc::sigaction = unsafe { std::mem::zeroed() };
        let asked = unsafe { libc::sigaction(signal, std::ptr::null(), &mut now) };
        (asked == 0).then_some(now.sa_sigaction)
    }

    pub(super) fn set_default(signal: c_int) {
        // SAFETY: sigaction is async-signal-safe; the struct is a local.
        unsafe {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(signal, &default, std::ptr::null_mut());
        }
    }
}

/// Through the system call itself: the C library's `sigaction` refuses the
/// signals it keeps for itself (32 and 33 in the GNU one), which a process
/// inherits as it inherits any.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod sigaction {
    use std::ffi::c_int;

    /// The kernel's `struct sigaction` on x86-64 and AArch64.
    #[repr(C)]
    #[derive(Default)]
    struct KernelSigaction {
        handler: libc::sighandler_t,
        flags: libc::c_ulong,
        restorer: usize,
        mask: u64,
    }

    fn rt_sigaction(signal: c_int, new: Option<&KernelSigaction>) -> Option<KernelSigaction> {
        let mut old = KernelSigaction::default();
        let new = new.map_or(std::ptr::null(), |n| n as *const KernelSigaction);
        // SAFETY: valid pointers to structs of the kernel's layout and the size of
        // its signal set; async-signal-safe.
        let done = unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                signal,
                new,
                &mut old as *mut KernelSigaction,
                std::mem::size_of::<u64>(),
            )
        };
        (done == 0).then_some(old)
    }

    /// The signal's handler (`SIG_DFL`, `SIG_IGN` or a function), or none for a
    /// number that is no signal here.
    pub(super) fn disposition(signal: c_int) -> Option<libc::sighandler_t> {
        rt_sigaction(signal, None).map(|now| now.handler)
    }

    pub(super) fn set_default(signal: c_int) {
        let default = KernelSigaction {
            handler: libc::SIG_DFL,
            ..KernelSigaction::default()
        };
        rt_sigaction(signal, Some(&default));
    }
}

/// Has `command`'s process put the ignored signals back to their defaults
/// before its program starts (std puts back SIGPIPE alone).
pub(super) fn start_with_default_signals(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let ignored = ignored_signals();
    // SAFETY: `default_signals` is async-signal-safe and reads a static.
    unsafe {
        command.pre_exec(move || {
            default_signals(ignored);
            Ok(())
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
