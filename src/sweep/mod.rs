//! Ending every process a run started, not only the one eqcheck started: a walker
//! that spawns a helper, a crash handler that detaches with `setsid`, or a double
//! fork leaves processes that outlive the run's own and its process group. A
//! process that starts runs makes itself their collector here (`become_keeper`),
//! ends what is left of a run once its main process is reaped
//! (`Collector::end_run`), and
//! eqcheck ends from outside everything a collector still has on an interrupt
//! (`kill_descendants`).
//!
//! How much is caught differs by system. Linux: the collector is a child
//! subreaper, so every orphan of a run, whatever session or group it moved to,
//! becomes its child and is killed and reaped before the run is done; where the
//! collector may make control groups (as root), its runs are in one of their own
//! as well, ended at once with `cgroup.kill` (see `cgroup.rs`). macOS has no
//! subreaper: a run leads a session of its own, and what is still in that session,
//! in its group, or descended from the collector is killed; a process that both
//! left the session (`setsid`) and lost its parent before the run ended has been
//! adopted by launchd and is not found. Windows runs use job objects instead (see
//! the keeper), and nothing here applies.

#[cfg(target_os = "linux")]
mod cgroup;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(unix)]
mod unix;

#[cfg(target_os = "linux")]
pub use cgroup::Container;
#[cfg(unix)]
pub use unix::{become_keeper, kill_descendants, Collector};

/// One process as a sweep sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Process {
    pub pid: u32,
    pub parent: u32,
    pub group: u32,
    pub session: u32,
    /// Dead and waiting to be reaped: it runs nothing and writes nothing.
    pub zombie: bool,
}

/// Every live process whose parent chain leads to `root` (not `root` itself),
/// or that is in one of `sessions` (a run's session, led by its first process).
pub fn doomed(table: &[Process], root: u32, sessions: &[u32]) -> Vec<u32> {
    let mut found = vec![root];
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        next += 1;
        for process in table {
            if process.parent == parent && !found.contains(&process.pid) {
                found.push(process.pid);
            }
        }
    }
    let in_session = table
        .iter()
        .filter(|p| sessions.contains(&p.session) || sessions.contains(&p.group));
    let mut doomed: Vec<u32> = table
        .iter()
        .filter(|p| found[1..].contains(&p.pid))
        .chain(in_session)
        .filter(|p| !p.zombie && p.pid != root)
        .map(|p| p.pid)
        .collect();
    doomed.sort_unstable();
    doomed.dedup();
    doomed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: u32, parent: u32, session: u32, zombie: bool) -> Process {
        Process {
            pid,
            parent,
            group: pid,
            session,
            zombie,
        }
    }

    #[test]
    fn descendants_and_session_members_are_doomed_but_not_the_root_or_zombies() {
        let table = [
            process(1, 0, 1, false),
            process(10, 1, 10, false),
            process(11, 10, 11, false),
            process(12, 11, 12, false),
            process(13, 11, 13, true),
            process(20, 1, 20, false),
            process(30, 1, 11, false),
        ];
        assert_eq!(doomed(&table, 10, &[]), [11, 12]);
        assert_eq!(doomed(&table, 10, &[11]), [11, 12, 30]);
        assert_eq!(doomed(&table, 99, &[]), Vec::<u32>::new());
    }
}
