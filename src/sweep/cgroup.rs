//! Linux, where the collector may make control groups (root, or a delegated
//! cgroup v2 subtree): the collector's runs go into a cgroup of their own, and what
//! is left of a run is ended through it. Stronger than the subreaper's rounds
//! alone: `cgroup.kill` ends every process in the group at once, so a run that
//! forks as fast as it is killed cannot outrun it, and a process is in the group
//! from before its program starts, whatever session, group or parent it moves to.
//!
//! The group is `eqcheck-keeper-PID` (`eqcheck-keeper-PID-N` for the Nth that
//! replaced a killed one), inside the collector's own cgroup in the cgroup v2
//! hierarchy; eqcheck enables no controller in it, so it changes nothing of the
//! machine's own layout. It is removed when the collector ends; one left by a
//! collector that was killed is removed, once empty, by the next that starts.

use std::cell::Cell;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::unix::{kill, GIVE_UP_AFTER, ROUND};
use crate::cgroups::Hierarchy;

const NAME_PREFIX: &str = "eqcheck-keeper-";

/// A cgroup holding one collector's runs.
#[derive(Debug)]
pub struct Container {
    dir: PathBuf,
    /// `cgroup.procs`, opened here: the run writes itself into it between fork
    /// and exec, after it has dropped to the arm user, and the kernel checks the
    /// opener's rights, not the writer's.
    procs: File,
    /// The group's folder, open: a run cloned into the group names it so.
    handle: File,
    /// How many groups this process made before this one.
    generation: u32,
    /// Whether the group was ended through `cgroup.kill`.
    killed: Cell<bool>,
}

impl Container {
    /// A cgroup for this process's runs, or none where there is no cgroup v2
    /// hierarchy or this process may not make a group in it.
    pub fn make() -> Option<Container> {
        let parent = crate::cgroups::own_folder(Hierarchy::Unified)?;
        remove_abandoned(&parent);
        Container::make_in(&parent, 0)
    }

    /// The group numbered `generation` in `parent`: the first is named after
    /// this process alone, each that replaces a killed one carries its number.
    fn make_in(parent: &Path, generation: u32) -> Option<Container> {
        let name = match generation {
            0 => format!("{NAME_PREFIX}{}", std::process::id()),
            n => format!("{NAME_PREFIX}{}-{n}", std::process::id()),
        };
        let dir = parent.join(name);
        std::fs::create_dir(&dir).ok()?;
        let procs = File::options().write(true).open(dir.join("cgroup.procs"));
        match procs.and_then(|procs| Ok((procs, File::open(&dir)?))) {
            Ok((procs, handle)) => Some(Container {
                dir,
                procs,
                handle,
                generation,
                killed: Cell::new(false),
            }),
            Err(_) => {
                let _ = std::fs::remove_dir(&dir);
                None
            }
        }
    }

    /// A group once ended through `cgroup.kill` is replaced by a new one: some
    /// kernels (6.18 among them) kill each process later cloned into it at its
    /// start. Where no new one can be made, the old stays, and no run is cloned
    /// into it.
    pub fn renew_if_killed(&mut self) {
        if !self.killed.get() {
            return;
        }
        let parent = self.dir.parent().map(Path::to_path_buf);
        let next = parent.and_then(|p| Container::make_in(&p, self.generation + 1));
        if let Some(next) = next {
            // The old group, empty now, is removed as it drops.
            *self = next;
        }
    }

    /// The folder of the group in the cgroup file system.
    pub fn folder(&self) -> &Path {
        &self.dir
    }

    /// The group's folder, open, for `clone3(CLONE_INTO_CGROUP)`; none for a
    /// group that was killed (see `renew_if_killed`).
    pub fn handle(&self) -> Option<BorrowedFd<'_>> {
        (!self.killed.get()).then(|| self.handle.as_fd())
    }

    /// The command's process joins the group before its program starts, so
    /// nothing it starts is ever outside.
    pub fn hold(&self, command: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let procs = self.procs.as_raw_fd();
        // SAFETY: write(2) is async-signal-safe; the closure touches only a
        // constant buffer and a descriptor that stays open in the parent.
        unsafe {
            command.pre_exec(move || {
                // "0" is the writer itself. A kernel that checks the writer's own
                // rights (before 5.16) refuses an unprivileged arm: `adopt` after
                // the start moves it then.
                libc::write(procs, b"0".as_ptr().cast(), 1);
                Ok(())
            });
        }
    }

    /// Moves a started run's process into the group, where `hold` could not: a
    /// move takes the kernel's cgroup locks, so a process already in is left be.
    pub fn adopt(&self, pid: u32) {
        use std::io::Write;
        let inside = std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
            .ok()
            .and_then(|text| {
                let path = crate::cgroups::path_in(&text, Hierarchy::Unified)?;
                Some(self.dir.ends_with(path.trim_start_matches('/')))
            });
        if inside != Some(true) {
            // One write: the cgroup file system reads each write as one request.
            let _ = (&self.procs).write(pid.to_string().as_bytes());
        }
    }

    /// Ends every process in the group and waits until none is left in it (a
    /// process that has ended but is not yet reaped is not in it any more); says
    /// how many were in it at first.
    pub fn end_all(&self) -> usize {
        let deadline = Instant::now() + GIVE_UP_AFTER;
        let mut first = None;
        loop {
            let members = members(&self.dir);
            let found = *first.get_or_insert(members.len());
            if members.is_empty() || Instant::now() > deadline {
                return found;
            }
            // Kernels before 5.14 have no `cgroup.kill`: each member, then.
            match std::fs::write(self.dir.join("cgroup.kill"), "1") {
                Ok(()) => self.killed.set(true),
                Err(_) => members.into_iter().for_each(kill),
            }
            std::thread::sleep(ROUND);
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = self.end_all();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The pids in a group's `cgroup.procs`; none when it cannot be read.
fn members(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .map(|text| {
            text.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Groups a collector that no longer runs left behind (it was killed before it
/// could remove its own) and that hold no process any more are removed. One that
/// still holds processes is left alone: its collector may run in another PID
/// namespace, where this one cannot see it.
fn remove_abandoned(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let owner = name.to_str().and_then(|n| n.strip_prefix(NAME_PREFIX));
        // PID, or PID-GENERATION for a group that replaced a killed one.
        let pid = owner.and_then(|o| o.split('-').next());
        let Some(pid) = pid.and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        // This process's own pid: a group from a collector before it with the
        // same pid, which would keep this one from making its own.
        let stale = pid == std::process::id() || !Path::new(&format!("/proc/{pid}")).exists();
        if stale {
            // Removing a group that holds processes fails: it stays.
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}
