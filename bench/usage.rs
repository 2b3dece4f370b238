//! Running one program to the end and taking what it cost: its wall time, spawn
//! included, and, on Unix, the user and system CPU the kernel charged to it (and to
//! any descendants it waited for), read from `wait4`'s resource usage of that one
//! child, so no other process's CPU is counted. Elsewhere the CPU is unknown.

use std::io;
use std::process::Command;
use std::time::{Duration, Instant};

/// One run of a program.
pub struct Usage {
    /// Whether it exited with status 0.
    pub success: bool,
    pub wall: Duration,
    /// User plus system CPU; `None` where the platform does not say.
    pub cpu: Option<Duration>,
}

/// Runs `command` to the end and takes its wall time and CPU.
#[cfg(unix)]
pub fn run(command: &mut Command) -> io::Result<Usage> {
    let started = Instant::now();
    let child = command.spawn()?;
    let pid = libc::pid_t::try_from(child.id()).map_err(io::Error::other)?;
    let mut status = 0;
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    let waited = loop {
        // SAFETY: `pid` is a child of this process that nothing else waits for
        // (std waits only when asked to); `status` and `usage` are valid to write.
        let waited = unsafe { libc::wait4(pid, &mut status, 0, usage.as_mut_ptr()) };
        if waited != -1 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break waited;
        }
    };
    let wall = started.elapsed();
    if waited != pid {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: wait4 returned the child's pid, so it filled `usage`.
    let usage = unsafe { usage.assume_init() };
    let seconds = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    Ok(Usage {
        success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        wall,
        cpu: Some(seconds(usage.ru_utime) + seconds(usage.ru_stime)),
    })
}

/// Runs `command` to the end and takes its wall time; the CPU is not known here.
#[cfg(not(unix))]
pub fn run(command: &mut Command) -> io::Result<Usage> {
    let started = Instant::now();
    let status = command.status()?;
    Ok(Usage {
        success: status.success(),
        wall: started.elapsed(),
        cpu: None,
    })
}
