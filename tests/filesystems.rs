//! Both walk engines and `eqcheck run` on real file systems: ext4, ext2 without
//! `filetype` (every entry DT_UNKNOWN), xfs, btrfs, tmpfs and an overlay over two
//! layers (on one file system, and on two), each its own test so a failure names
//! its file system. Each test starts this test binary again inside a private mount
//! namespace (`unshare --mount --propagation private`), where `mount.rs` makes the
//! file system and builds the `basic` and `edge` trees onto it, and the checks run:
//! the two engines print the same bytes and exit alike for a few flag sets, as root
//! and as uid 65534, and `eqcheck --tree` with the default pair finds every case of
//! every walk set identical, with every folder watched by the tree guard. The
//! mounts never reach the host's mount table and die with the namespace, even on a
//! crash; the test outside removes the scratch folder.
#![cfg(unix)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::run::verdicts;
use crate::util::{
    all_pass, json_report, lossy, run, skip_unless, temp_dir, Capability, Case, Cmd, Output,
};
use crate::walk::{engine_cases, me, unprivileged_arm, Arm};

mod mount;

use mount::{prepare, FileSystem};

/// The flag sets both engines are held to on every file system; `-a` in most, so
/// every entry is printed, and `-x` for btrfs's subvolumes, which are devices.
const WALK_SETS: &str = "-a | -a -b | --inodes -a | -a -L | -s | -a -x";

/// The test run inside the namespace, and what tells it which file system and
/// which scratch folder.
const INSIDE: &str = "filesystems::checks_inside_a_private_mount_namespace";
const FS_VAR: &str = "EQCHECK_FS";
const SCRATCH_VAR: &str = "EQCHECK_FS_SCRATCH";

#[test]
fn ext4() {
    check(FileSystem::Ext4);
}

#[test]
fn ext2_without_filetype() {
    check(FileSystem::Ext2NoFiletype);
}

#[test]
fn xfs() {
    check(FileSystem::Xfs);
}

#[test]
fn btrfs() {
    check(FileSystem::Btrfs);
}

#[test]
fn tmpfs() {
    check(FileSystem::Tmpfs);
}

#[test]
fn overlay_over_two_layers() {
    check(FileSystem::Overlay);
}

#[test]
fn overlay_with_layers_on_two_file_systems() {
    check(FileSystem::OverlayAcross);
}

/// Runs the checks on `fs` in a private mount namespace of their own, and fails
/// naming the file system and each failed case when any check failed there.
fn check(fs: FileSystem) {
    if fs.needs().into_iter().any(skip_unless) {
        return;
    }
    // 0755 under the temp folder: the arms that run as uid 65534 reach the mounts.
    let scratch = temp_dir();
    if skip_unless(Capability::OthersCanReach(scratch.path())) {
        return;
    }
    let test_binary = std::env::current_exe().expect("the test binary");
    let inside = Cmd::new("unshare")
        .args(["--mount", "--propagation", "private", "--"])
        .arg(test_binary)
        .args(["--exact", INSIDE, "--ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(FS_VAR, fs.name())
        .env(SCRATCH_VAR, scratch.path())
        .output();
    // A filter that matched nothing would pass having checked nothing.
    let ran = lossy(&inside.stdout).contains("test result: ok. 1 passed");
    if inside.code != Some(0) || !ran {
        panic!("on {fs}: {}\n{inside}", failed_cases(&inside));
    }
}

/// The headline of each failed case the run inside printed (the full outputs of
/// both sides follow in its stderr, which can be long).
fn failed_cases(inside: &Output) -> String {
    let stderr = lossy(&inside.stderr);
    let cases: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("## case "))
        .collect();
    if cases.is_empty() {
        return "the checks inside the mount namespace failed".to_string();
    }
    format!("{} cases failed:\n{}", cases.len(), cases.join("\n"))
}

#[test]
#[ignore = "run by each file-system test above, inside a private mount namespace"]
fn checks_inside_a_private_mount_namespace() {
    let var = |name: &str| std::env::var_os(name).unwrap_or_else(|| panic!("{name} unset"));
    let name = var(FS_VAR).into_string().expect("a file system's name");
    let fs = FileSystem::named(&name).unwrap_or_else(|| panic!("no file system {name:?}"));
    let scratch = PathBuf::from(var(SCRATCH_VAR));
    let prepared = prepare(fs, &scratch);
    for line in &prepared.skipped {
        eprintln!("{fs}: trees build: {line}");
    }
    let mut cases = probe_cases(fs, &prepared.trees);
    let arms = [("root", me()), ("uid 65534", unprivileged_arm(&scratch))];
    for tree in &prepared.trees {
        for (who, arm) in &arms {
            cases.extend(walk_cases(fs, who, arm, tree));
        }
    }
    cases.push((
        format!("{fs}: eqcheck run"),
        run_finds_all_identical(&prepared.trees),
    ));
    all_pass(cases);
}

/// `eqcheck probe` on each tree: the fast engine's fields agree with read_dir +
/// lstat or have a reason, and the census says what the file system's listing
/// does: on ext2 made without `filetype` every entry is unknown and stat'ed at
/// least once; elsewhere getdents64 types every entry.
fn probe_cases(fs: FileSystem, trees: &[PathBuf]) -> Vec<Case> {
    let mut cases = Vec::new();
    for tree in trees {
        let out = run([
            OsString::from("probe"),
            "--tree".into(),
            tree.clone().into_os_string(),
            "--json".into(),
            "-".into(),
        ]);
        let name = format!("{fs}: eqcheck probe --tree {}", tree.display());
        cases.push((name, probe_result(fs, &out)));
    }
    cases
}

fn probe_result(fs: FileSystem, out: &Output) -> Result<(), String> {
    if out.code != Some(0) {
        return Err(format!(
            "exit {:?}, not 0 (no unexplained difference)\n{out}",
            out.code
        ));
    }
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("not JSON: {e}\n{out}"))?;
    let explained = report["trees"][0]["explained"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if let Some(other) = explained.iter().find(|e| e["field"] != "atime") {
        return Err(format!(
            "explained other than a folder's atime: {other}\n{out}"
        ));
    }
    let census = &report["trees"][0]["census"];
    let count = |key: &str| census[key].as_u64().unwrap_or(0);
    let listed: u64 = ["folders", "files", "symlinks", "other", "unknown"]
        .iter()
        .map(|k| count(k))
        .sum();
    let stats = count("statx") + count("fstatat");
    let expected_unknown = match fs {
        FileSystem::Ext2NoFiletype => listed,
        _ => 0,
    };
    if listed == 0 || count("unknown") != expected_unknown || stats < listed {
        return Err(format!(
            "census: {listed} listed, {} unknown (expected {expected_unknown}), {stats} stats\n{out}",
            count("unknown")
        ));
    }
    Ok(())
}

/// Each set of [`WALK_SETS`] on one tree run by one arm: both engines print the
/// same bytes and exit alike. Named with the file system and the user.
fn walk_cases(fs: FileSystem, who: &str, arm: &Arm, tree: &Path) -> Vec<Case> {
    let cases = engine_cases(WALK_SETS, &[tree], arm);
    let named = |(name, result): Case| (format!("{fs}: as {who}: {name}"), result);
    cases.into_iter().map(named).collect()
}

/// `eqcheck --tree ...` with the default pair (reference engine against fast
/// engine, every set of `flagsets/walk.sets`): exit 0, every case identical, and
/// every folder of every tree watched.
fn run_finds_all_identical(trees: &[PathBuf]) -> Result<(), String> {
    let mut args: Vec<OsString> = vec!["--json".into(), "-".into()];
    for tree in trees {
        args.extend(["--tree".into(), tree.clone().into_os_string()]);
    }
    let out = run(args);
    if out.code != Some(0) {
        return Err(format!("exit {:?}, not 0 (all identical)\n{out}", out.code));
    }
    let report = json_report(&out);
    watched_every_folder(&report)?;
    let verdicts = verdicts(&report, &out);
    let identical = verdicts.iter().filter(|v| *v == "identical").count();
    // walk.sets has some 30 sets: fewer cases than 20 a tree is a run that
    // compared less than it should.
    if identical != verdicts.len() || verdicts.len() < 20 * trees.len() {
        let total = verdicts.len();
        return Err(format!("{identical} of {total} cases identical\n{out}"));
    }
    Ok(())
}

/// Each tree's guard watched all its folders, the root included: where the listing
/// types no entry (ext2 without `filetype`), the watch finds the subfolders by stat.
fn watched_every_folder(report: &serde_json::Value) -> Result<(), String> {
    for tree in report["trees"].as_array().into_iter().flatten() {
        let folders = &tree["counts"]["folders"];
        let guard = tree["guard"].as_str().unwrap_or_default();
        // Files with other links are watched too, and counted apart.
        let all = format!("watched (inotify on {folders} folders");
        let rest = guard.strip_prefix(&all).unwrap_or_default();
        if !(rest.starts_with(')') || rest.starts_with(" and ")) {
            return Err(format!(
                "{}: {folders} folders, guard {guard:?}",
                tree["name"]
            ));
        }
    }
    Ok(())
}
