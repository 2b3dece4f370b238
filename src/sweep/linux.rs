//! Linux: the collector is a child subreaper, so every orphan of its runs becomes
//! its own child, found in `/proc/self/task/*/children`; other processes are read
//! from `/proc/PID/stat`.

use super::Process;

/// Every orphan comes back to the collector: no child left means nothing left.
pub(super) const ORPHANS_COME_HOME: bool = true;

pub(super) fn become_subreaper() {
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
}

/// The collector's children: the run's processes still attached to it, and every
/// orphan re-parented to it.
pub(super) fn left_of_run(_leader: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return own_children_by_scan();
    };
    let mut children = Vec::new();
    for task in tasks.flatten() {
        match std::fs::read_to_string(task.path().join("children")) {
            Ok(text) => children.extend(
                text.split_whitespace()
                    .filter_map(|w| w.parse::<u32>().ok()),
            ),
            // A kernel built without the children file.
            Err(_) => return own_children_by_scan(),
        }
    }
    children
}

/// Those of `pids` still running: not ended, not waiting to be reaped.
pub(super) fn running(pids: Vec<u32>) -> Vec<u32> {
    pids.into_iter()
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parse_stat(pid, &stat))
                .is_some_and(|process| !process.zombie)
        })
        .collect()
}

fn own_children_by_scan() -> Vec<u32> {
    let me = std::process::id();
    let table = processes();
    table
        .iter()
        .filter(|p| p.parent == me)
        .map(|p| p.pid)
        .collect()
}

/// Every process `/proc` shows; one that ends while it is read is left out.
pub(super) fn processes() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// `PID (COMM) STATE PPID PGRP SESSION ...`: the name may hold spaces and
/// parentheses, so the fields are counted from its last `)`.
fn parse_stat(pid: u32, stat: &str) -> Option<Process> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    let state = fields.next()?;
    let mut number = || fields.next()?.parse::<u32>().ok();
    Some(Process {
        pid,
        parent: number()?,
        group: number()?,
        session: number()?,
        zombie: state == "Z" || state == "X",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_with_spaces_and_parentheses_is_skipped_whole() {
        let stat = "42 (a) b (c) S 7 42 40 0 -1 4194560";
        assert_eq!(
            parse_stat(42, stat),
            Some(Process {
                pid: 42,
                parent: 7,
                group: 42,
                session: 40,
                zombie: false
            })
        );
        assert!(parse_stat(42, "42 (z) Z 1 2 3").unwrap().zombie);
        assert_eq!(parse_stat(42, "42 (broken"), None);
    }

    #[test]
    fn this_process_is_listed_with_its_parent() {
        let me = std::process::id();
        let table = processes();
        let found = table.iter().find(|p| p.pid == me).expect("listed");
        assert_eq!(found.parent, std::os::unix::process::parent_id());
    }
}
