//! Where this process's control groups are, Linux: the folder of its group in a
//! hierarchy, from `/proc/self/cgroup` (which group) and `/proc/self/mountinfo`
//! (where that hierarchy is mounted). The keepers make their runs' group inside
//! the unified (v2) one; image building reads the memory controller's limit.

use std::path::{Path, PathBuf};

/// A cgroup hierarchy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hierarchy {
    /// cgroup v2: one hierarchy, all controllers (`0::PATH`, type `cgroup2`).
    Unified,
    /// cgroup v1: the hierarchy that holds this controller (`N:memory:PATH`,
    /// type `cgroup` with the controller among its options).
    Controller(&'static str),
}

/// This process's folder in `hierarchy`, where it is mounted so that the two
/// join (see [`folder_in`]).
pub fn own_folder(hierarchy: Hierarchy) -> Option<PathBuf> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    folder_in(&cgroups, &mountinfo, hierarchy)
}

/// The folder of the group `cgroups` (a `/proc/PID/cgroup` text) names in
/// `hierarchy`, under its mount in `mountinfo`. Only a mount that shows the
/// hierarchy from its root, and a path that goes down from there: inside a cgroup
/// namespace or under a mount of a subtree the two do not join, and there is none.
pub fn folder_in(cgroups: &str, mountinfo: &str, hierarchy: Hierarchy) -> Option<PathBuf> {
    let path = path_in(cgroups, hierarchy)?;
    let relative = Path::new(path.strip_prefix('/')?);
    let downward = (relative.components()).all(|c| matches!(c, std::path::Component::Normal(_)));
    let mount = mountinfo
        .lines()
        .find_map(|line| mount_of(line, hierarchy))?;
    downward.then(|| mount.join(relative))
}

/// The group's path in `hierarchy`, from a `/proc/PID/cgroup` text.
pub fn path_in(cgroups: &str, hierarchy: Hierarchy) -> Option<&str> {
    cgroups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let ours = match hierarchy {
            Hierarchy::Unified => controllers.is_empty(),
            Hierarchy::Controller(name) => controllers.split(',').any(|c| c == name),
        };
        ours.then_some(path)
    })
}

/// The mount point of a mountinfo line that mounts `hierarchy` from its root.
/// Its fields: `ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] - FSTYPE
/// SOURCE SUPER`; mount points with spaces are written with `\040`.
fn mount_of(line: &str, hierarchy: Hierarchy) -> Option<PathBuf> {
    let (before, after) = line.split_once(" - ")?;
    let mut after = after.split_whitespace();
    let (fstype, super_options) = (after.next()?, after.nth(1).unwrap_or(""));
    let ours = match hierarchy {
        Hierarchy::Unified => fstype == "cgroup2",
        Hierarchy::Controller(name) => {
            fstype == "cgroup" && super_options.split(',').any(|o| o == name)
        }
    };
    let mut fields = before.split_whitespace();
    if !ours || fields.nth(3)? != "/" {
        return None;
    }
    Some(PathBuf::from(fields.next()?.replace("\\040", " ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
30 25 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
41 30 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw
32 30 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 30 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory";

    #[test]
    fn each_hierarchy_is_found_under_its_own_mount() {
        let cgroups = "5:cpu:/\n4:memory:/jobs/a1\n0::/user.slice/s-1.scope\n";
        assert_eq!(
            folder_in(cgroups, HYBRID, Hierarchy::Unified),
            Some(PathBuf::from("/sys/fs/cgroup/unified/user.slice/s-1.scope"))
        );
        assert_eq!(
            folder_in(cgroups, HYBRID, Hierarchy::Controller("memory")),
            Some(PathBuf::from("/sys/fs/cgroup/memory/jobs/a1"))
        );
        assert_eq!(
            folder_in("5:cpu:/\n", HYBRID, Hierarchy::Controller("memory")),
            None
        );
        let pure = "35 24 0:30 / /sys/fs/my\\040cgroup rw,nosuid - cgroup2 cgroup2 rw";
        assert_eq!(
            folder_in("0::/\n", pure, Hierarchy::Unified),
            Some(PathBuf::from("/sys/fs/my cgroup"))
        );
    }

    #[test]
    fn a_mounted_subtree_or_an_upward_path_joins_nothing() {
        let subtree = "35 24 0:30 /user.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw";
        assert_eq!(folder_in("0::/a\n", subtree, Hierarchy::Unified), None);
        assert_eq!(folder_in("0::/../a\n", HYBRID, Hierarchy::Unified), None);
        assert_eq!(folder_in("0::a\n", HYBRID, Hierarchy::Unified), None);
    }
}
