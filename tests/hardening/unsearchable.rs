//! Folders that can be listed but not searched: mode 444, walked by a user who is
//! not their owner (nobody, when the tests run as root). Opening and reading such
//! a folder works, so its names are listed, but no name in it can be statted or
//! opened (EACCES). GNU du then says `cannot access 'X': Permission denied` for
//! each name and counts the folder alone; both engines must print exactly what it
//! prints, whether the folder is small (pipelined by the fast engine, which opens
//! subfolders on their `d_type` before any stat), huge (its stats chunked over the
//! pool), inside another such folder, or an operand itself.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::util::{all_pass, assert_exit, lossy, set_mode, skip_unless, temp_dir, Capability};
use crate::walk::{all_cases, unprivileged_arm, walk, ModeGuard};

/// The sets the brief names (none, `-a`), and the flags that change how the fast
/// engine lists: `-L` and `-x` turn its pipelining off, `--inodes` counts names.
const SETS: &str = " | -a | -L -a | -x -a | --inodes -a | -s";

/// Files and subfolders of the huge unsearchable folder: past the 1024 entries
/// from which stats are chunked, and past the 16 subfolders opened ahead.
const HUGE_FILES: usize = 1100;
const HUGE_FOLDERS: usize = 20;

/// Builds `r` with unsearchable folders `ro` (a file, a link and a subfolder),
/// `huge`, `ok/ro2` (one below a searchable folder) and `ro3` (holding another,
/// `ro3/ro4`); gives back the folders to set to 444, deepest first.
fn build(root: &Path) -> Vec<PathBuf> {
    for folder in ["ro/sub", "huge", "ok/ro2", "ro3/ro4"] {
        fs::create_dir_all(root.join(folder)).expect("mkdir");
    }
    for file in ["a", "ro/f", "ro/sub/g", "ok/b", "ok/ro2/c", "ro3/ro4/d"] {
        fs::write(root.join(file), [9u8; 3000]).expect("write");
    }
    symlink("f", root.join("ro/l")).expect("ln -s");
    for i in 0..HUGE_FILES {
        fs::write(root.join(format!("huge/f{i:04}")), b"x").expect("write");
    }
    for i in 0..HUGE_FOLDERS {
        fs::create_dir(root.join(format!("huge/d{i:02}"))).expect("mkdir");
    }
    ["ro3/ro4", "ro3", "ok/ro2", "huge", "ro"]
        .iter()
        .map(|rel| root.join(rel))
        .collect()
}

#[test]
fn a_folder_listed_but_not_searched_prints_what_du_prints() {
    let dir = temp_dir();
    if skip_unless(Capability::OthersCanReach(dir.path())) {
        return;
    }
    let root = dir.path().join("r");
    let unsearchable = build(&root);
    let arm = unprivileged_arm(dir.path());
    let mut guards = Vec::new();
    for folder in unsearchable {
        set_mode(&folder, 0o444);
        guards.push(ModeGuard(folder));
    }
    // The case is real only if the walker may list `ro` but not stat inside it.
    let ro = root.join("ro");
    let out = walk(&arm, "fast", "-a", &[&ro]).output();
    assert_exit(&out, 1);
    let shown = ro.display();
    let said: Vec<String> = ["f", "l", "sub"]
        .map(|name| format!("eqcheck walk: cannot access '{shown}/{name}': Permission denied"))
        .into();
    let mut stderr: Vec<String> = lossy(&out.stderr).lines().map(String::from).collect();
    stderr.sort();
    assert_eq!(stderr, said, "listed, each name refused\n{out}");
    assert_eq!(
        lossy(&out.stdout).lines().count(),
        1,
        "the folder alone\n{out}"
    );
    // A trailing slash on the operand, which du prints back as given.
    let slashed = PathBuf::from(format!("{shown}/"));
    let file = root.join("ro/f");
    let operand_lists: [&[&Path]; 6] = [
        &[&root],
        &[&ro],
        &[&slashed],
        &[&root.join("huge")],
        &[&root.join("ro3"), &root],
        &[&file, &root.join("ok")],
    ];
    let cases = operand_lists
        .iter()
        .flat_map(|operands| all_cases(SETS, operands, &arm));
    all_pass(cases.collect());
}
