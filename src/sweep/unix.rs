//! The sweeps themselves, the same on every Unix: what differs is how a system
//! lists processes and what it leaves a run's collector (see `linux.rs` and
//! `macos.rs`).

use std::time::{Duration, Instant};

#[cfg(target_os = "linux")]
use super::linux as platform;
#[cfg(target_os = "macos")]
use super::macos as platform;

/// SIGKILL cannot be ignored, but a process in uninterruptible sleep (on a hung
/// network mount) dies only when it wakes. Past this, a sweep gives up rather than
/// hang eqcheck with it.
pub(super) const GIVE_UP_AFTER: Duration = Duration::from_secs(10);

/// How long a sweep waits between rounds, for the killed to die and their orphans
/// to be re-parented.
pub(super) const ROUND: Duration = Duration::from_millis(1);

/// A process that starts runs and ends everything each leaves.
#[derive(Debug)]
pub struct Collector {
    /// The runs' control group, where this process may make one (Linux).
    #[cfg(target_os = "linux")]
    container: Option<super::cgroup::Container>,
}

/// Makes this process the collector of every orphan its runs leave (Linux), before
/// it starts any, and where it may, puts its runs in a control group of their
/// own. Failing either leaves it an ordinary parent: the run's own process group
/// and session are still killed.
pub fn become_keeper() -> Collector {
    platform::become_subreaper();
    Collector {
        #[cfg(target_os = "linux")]
        container: super::cgroup::Container::make(),
    }
}

impl Collector {
    /// Readies a run's command: its process joins the runs' control group, if
    /// any, before its program starts.
    pub fn prepare(&self, _command: &mut std::process::Command) {
        #[cfg(target_os = "linux")]
        if let Some(container) = &self.container {
            container.hold(_command);
        }
    }

    /// The runs' control group, open, where there is one: a run cloned into it
    /// is in it from its start, and needs neither `prepare` nor `started`.
    #[cfg(target_os = "linux")]
    pub fn group(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.container.as_ref().and_then(|c| c.handle())
    }

    /// Says a run has started as process `_leader`.
    pub fn started(&self, _leader: u32) {
        #[cfg(target_os = "linux")]
        if let Some(container) = &self.container {
            container.adopt(_leader);
        }
    }

    /// Ends what is left of a run whose first process (`leader`, which leads the
    /// run's session and group) has been reaped: the control group at once, if
    /// any; then its group and every process the system lets this process find
    /// (its children, the orphans it collected, the run's session), killed and
    /// reaped round after round until none is left. Says how many processes the
    /// run had left running: every one, from a control group; else those this
    /// process found first (the orphans, whose own children it finds as they die).
    pub fn end_run(&mut self, leader: u32) -> usize {
        #[cfg(target_os = "linux")]
        if let Some(container) = &mut self.container {
            let left = container.end_all();
            container.renew_if_killed();
            end_run(leader);
            return left;
        }
        // Where orphans come home, no child at all means nothing left, and the
        // processes need not be listed for the common run that leaves nothing.
        let left = match platform::ORPHANS_COME_HOME && reap_all() {
            true => 0,
            false => platform::running(platform::left_of_run(leader)).len(),
        };
        end_run(leader);
        left
    }
}

fn end_run(leader: u32) {
    kill_group(leader);
    let deadline = Instant::now() + GIVE_UP_AFTER;
    loop {
        let no_children = reap_all();
        if no_children && platform::ORPHANS_COME_HOME {
            return;
        }
        let left = platform::left_of_run(leader);
        if left.is_empty() && no_children {
            return;
        }
        for pid in left {
            kill(pid);
        }
        if Instant::now() > deadline {
            return;
        }
        std::thread::sleep(ROUND);
    }
}

/// From outside, on an interrupt: kills every process descended from `root` (a
/// collector, which stays alive to reap them) or in one of `sessions`, round
/// after round, until none is left alive.
pub fn kill_descendants(root: u32, sessions: &[u32]) {
    let deadline = Instant::now() + GIVE_UP_AFTER;
    loop {
        let table = platform::processes();
        let doomed = super::doomed(&table, root, sessions);
        if doomed.is_empty() || Instant::now() > deadline {
            return;
        }
        for pid in doomed {
            kill(pid);
        }
        std::thread::sleep(ROUND);
    }
}

/// Reaps every child that has ended; true when this process has no child left.
fn reap_all() -> bool {
    loop {
        let mut status = 0;
        // SAFETY: a valid pointer to a local; WNOHANG never blocks.
        let reaped = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        match reaped {
            0 => return false,
            pid if pid > 0 => continue,
            _ => match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                // ECHILD: no child at all.
                _ => return true,
            },
        }
    }
}

pub(super) fn kill(pid: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

fn kill_group(leader: u32) {
    if let Some(pid) = rustix::process::Pid::from_raw(leader as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}
