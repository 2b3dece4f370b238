//! What the runner guarantees about the trees and the arms: a candidate that edits
//! the tree is caught and named, an interrupted run leaves nothing behind, arms run
//! unprivileged when eqcheck runs as root (so permission fixtures mean something),
//! and `--keep` keeps.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util::{
    assert_exit, double, eqcheck, json_report, report_cases, run, set_mode, skip_unless, temp_dir,
    Capability, Cmd,
};

fn walk(engine: &str) -> String {
    format!("{} walk --engine {engine}", eqcheck().display())
}

#[test]
fn a_candidate_that_edits_the_tree_is_caught_and_named() {
    // As root the arms run unprivileged and could not write to the tree at all.
    let toucher = double("touch src/main.rs");
    let out = run([
        "--ref",
        &walk("reference"),
        "--cand",
        &toucher,
        "--tree",
        "basic",
        "--sets",
        "depth",
        "-j",
        "1",
        "--json",
        "-",
    ]
    .into_iter()
    .chain(crate::util::as_root().iter().copied()));
    assert_exit(&out, 3);
    let report = json_report(&out);
    let first = &report["cases"][0]["verdict"];
    assert_eq!(first["kind"], "tree-changed", "{out}");
    assert_eq!(first["arm"], "candidate", "{out}");
    let changes: Vec<&str> = first["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c.as_str())
        .collect();
    assert!(
        changes.iter().any(|c| c.starts_with("src/main.rs: size")),
        "{changes:?}\n{out}"
    );
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("tree-changed: the tree moved while the candidate arm ran"),
        "{out}"
    );
    // A later case sees a tree that was already changed and says so.
    let second = &report["cases"][1]["verdict"];
    assert_eq!(second["kind"], "tree-changed", "{out}");
    assert_eq!(
        second["arm"], "earlier",
        "a later case blames none of its own arms\n{out}"
    );
    assert!(
        second["changes"][0]
            .as_str()
            .unwrap()
            .contains("already changed"),
        "{out}"
    );
}

/// A run of the reference walk against a candidate that makes one change to the
/// basic tree, over these sets, as root too (its arms run unprivileged, so
/// `--as-root`).
fn run_mutating(change: &str, sets: &str, extra: &[&str]) -> crate::util::Output {
    let candidate = double(&format!("mutate {change}"));
    let mut args = vec![
        "--ref".to_string(),
        walk("reference"),
        "--cand".into(),
        candidate,
        "--tree".into(),
        "basic".into(),
        "--sets".into(),
        sets.into(),
        "--json".into(),
        "-".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(crate::util::as_root().iter().map(|s| s.to_string()));
    run(args)
}

#[test]
fn every_kind_of_change_an_arm_makes_is_caught_by_the_watch_and_named() {
    for (change, named) in [
        ("create src/new.rs", "added src/new.rs"),
        ("delete src/lib.rs", "removed src/lib.rs"),
        ("rename src/lib.rs", "removed src/lib.rs"),
        ("chmod src/lib.rs", "src/lib.rs: mode"),
        ("mtime src/lib.rs", "src/lib.rs: mtime"),
    ] {
        let out = run_mutating(change, "depth", &["-j", "1"]);
        assert_exit(&out, 3);
        let report = json_report(&out);
        if cfg!(target_os = "linux") {
            let guard = report["trees"][0]["guard"].as_str().unwrap_or_default();
            assert!(
                guard.starts_with("watched (inotify"),
                "{change}: {guard}\n{out}"
            );
        }
        let first = &report["cases"][0]["verdict"];
        assert_eq!(
            (first["kind"].as_str(), first["arm"].as_str()),
            (Some("tree-changed"), Some("candidate")),
            "{change}\n{out}"
        );
        let changes = first["changes"].to_string();
        assert!(
            changes.contains(named),
            "{change}: {named:?} not in {changes}\n{out}"
        );
        // Every later case ran on a changed tree and says so.
        for case in report["cases"].as_array().unwrap().iter().skip(1) {
            assert_eq!(case["verdict"]["arm"], "earlier", "{change}\n{out}");
        }
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_watch_that_loses_events_falls_back_to_fingerprints_and_says_so() {
    // 20,000 events overflow the kernel's queue (16,384 by default).
    if crate::util::skip_unless(crate::util::Capability::InotifyQueueBelow(20_000)) {
        return;
    }
    let out = run_mutating("flood src", "devices", &["-j", "1"]);
    // The flood leaves src's mtime moved: the fingerprint, taken after every arm
    // from then on, names it.
    assert_exit(&out, 3);
    let report = json_report(&out);
    let guard = report["trees"][0]["guard"].as_str().unwrap_or_default();
    assert!(
        guard.contains("queue overflowed, then fingerprinted after every arm"),
        "{out}"
    );
    let changes = report["cases"][0]["verdict"]["changes"].to_string();
    assert!(
        changes.contains("src: ") && changes.contains("mtime"),
        "{changes}\n{out}"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn a_watched_tree_no_arm_changes_is_fingerprinted_only_at_its_two_ends() {
    let out = run([
        "--ref",
        &walk("reference"),
        "--cand",
        &walk("fast"),
        "--tree",
        "basic",
        "--sets",
        "depth",
        "--json",
        "-",
    ]);
    assert_exit(&out, 0);
    let report = json_report(&out);
    assert_eq!(report["trees"][0]["fingerprints"], 2, "{out}");
    let guard = report["trees"][0]["guard"].as_str().unwrap_or_default();
    assert!(
        guard.starts_with("watched (inotify on 11 folders and 1 file with other links)"),
        "{out}"
    );
}

#[test]
fn a_change_another_process_makes_while_the_matrix_runs_is_caught() {
    let dir = crate::util::temp_dir();
    let tree = dir.path().join("given");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("sub/file"), b"one").unwrap();
    let sleeper = double("sleep 0.2");
    let tree_arg = tree.to_string_lossy().into_owned();
    let changer = {
        let file = tree.join("sub/file");
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(700));
            std::fs::write(file, b"changed").unwrap();
        })
    };
    let out = run([
        "--ref", &sleeper, "--cand", &sleeper, "--tree", &tree_arg, "--sets", "depth", "-j", "1",
        "--json", "-",
    ]);
    changer.join().unwrap();
    assert_exit(&out, 3);
    let report = json_report(&out);
    let changed: Vec<&serde_json::Value> = (report["cases"].as_array().unwrap().iter())
        .filter(|c| c["verdict"]["kind"] == "tree-changed")
        .collect();
    assert!(!changed.is_empty(), "{out}");
    assert!(
        changed[0]["verdict"]["changes"]
            .to_string()
            .contains("sub/file: size 3 -> 7"),
        "{out}"
    );
}

#[test]
fn with_the_guard_off_an_edited_tree_goes_unnoticed() {
    // The same edit without the guard is compared as ordinary output: the guard,
    // not the comparison, is what caught it above.
    let toucher = double("touch src/main.rs");
    let out = run([
        "--ref", &toucher, "--cand", &toucher, "--tree", "basic", "--sets", "depth", "--guard",
        "off",
    ]
    .into_iter()
    .chain(crate::util::as_root().iter().copied()));
    assert_exit(&out, 0);
}

/// Every process whose command line mentions `needle`.
pub(crate) fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(needle) {
                found.push(text);
            }
        }
    }
    found
}

pub(crate) fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "gave up waiting until {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn entries_of(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect()
}

#[test]
fn an_interrupted_run_or_bench_kills_its_arms_and_leaves_no_temp_tree() {
    // Far longer than the test waits: an arm left running is still there at the end.
    let sleeper = double("sleep 600");
    let arms = [
        "--ref",
        &sleeper,
        "--cand",
        &sleeper,
        "--tree",
        "basic",
        "--timeout",
        "900",
    ];
    let run: Vec<&str> = arms.iter().copied().chain(["--sets", "sizes"]).collect();
    let bench: Vec<&str> = ["bench"].into_iter().chain(arms).collect();
    // The matrix runs two arms at once; the bench, one run at a time.
    for (signal, command, running) in [
        (libc_signal::INT, &run, 2),
        (libc_signal::TERM, &run, 2),
        (libc_signal::HUP, &run, 2),
        (libc_signal::QUIT, &run, 2),
        (libc_signal::INT, &bench, 1),
        (libc_signal::TERM, &bench, 1),
        (libc_signal::HUP, &bench, 1),
    ] {
        let tmp = temp_dir();
        // Files, not pipes: an arm left running would hold a pipe open, and
        // reading it to its end would wait for that arm instead of failing.
        let logs = temp_dir();
        let (stdout, stderr) = (logs.path().join("out"), logs.path().join("err"));
        let mut child = std::process::Command::new(eqcheck())
            .args(command)
            .env("TMPDIR", tmp.path())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let marker = tmp.path().to_string_lossy().into_owned();
        wait_until("the arms run", || {
            processes_mentioning(&marker).len() >= running
        });
        assert!(
            !entries_of(tmp.path()).is_empty(),
            "the run made its tree under TMPDIR"
        );
        send(child.id(), signal);
        let status = child.wait().unwrap();
        let said = format!(
            "signal {signal} to {command:?}\nstdout:\n{}\nstderr:\n{}",
            std::fs::read_to_string(&stdout).unwrap_or_default(),
            std::fs::read_to_string(&stderr).unwrap_or_default()
        );
        assert_eq!(status.code(), Some(128 + signal), "{said}");
        assert_eq!(
            entries_of(tmp.path()),
            Vec::<PathBuf>::new(),
            "signal {signal} left temp folders"
        );
        wait_until("the arms are gone", || {
            processes_mentioning(&marker).is_empty()
        });
    }
}

#[test]
fn an_interrupted_run_exits_even_when_nobody_reads_its_stderr_any_more() {
    // As when the pipeline or CI step that read eqcheck's output was killed first:
    // the interrupt's message cannot be written, and the run must end all the same.
    let tmp = temp_dir();
    let sleeper = double("sleep 60");
    let mut child = std::process::Command::new(eqcheck())
        .args([
            "--ref", &sleeper, "--cand", &sleeper, "--tree", "basic", "--sets", "sizes",
        ])
        .env("TMPDIR", tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let marker = tmp.path().to_string_lossy().into_owned();
    wait_until("the arms run", || processes_mentioning(&marker).len() >= 2);
    drop(child.stderr.take());
    send(child.id(), libc_signal::TERM);
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("eqcheck did not exit within 60 s of SIGTERM once its stderr was closed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(128 + libc_signal::TERM));
    assert_eq!(
        entries_of(tmp.path()),
        Vec::<PathBuf>::new(),
        "temp folders left"
    );
}

/// The signals a user, a closing terminal or a CI system sends to stop a run.
pub(crate) mod libc_signal {
    pub const HUP: i32 = 1;
    pub const INT: i32 = 2;
    pub const QUIT: i32 = 3;
    pub const TERM: i32 = 15;
}

pub(crate) fn send(pid: u32, signal: i32) {
    let out = Cmd::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .output();
    assert_eq!(out.code, Some(0), "{out}");
}

/// A tree with one folder its owner may not read, inside a folder others can reach.
fn tree_with_a_locked_folder() -> (tempfile::TempDir, PathBuf) {
    let dir = temp_dir();
    let root = dir.path().join("t");
    std::fs::create_dir_all(root.join("open")).unwrap();
    std::fs::create_dir_all(root.join("locked/inside")).unwrap();
    std::fs::write(root.join("locked/inside/f"), b"data").unwrap();
    set_mode(&root.join("locked"), 0o000);
    (dir, root)
}

/// Runs the default arms over the tree from [`tree_with_a_locked_folder`], then
/// unlocks it so it can be removed whatever the checks find.
fn run_on_locked_tree(root: &Path, extra: &[&str]) -> crate::util::Output {
    let mut args: Vec<&std::ffi::OsStr> = vec!["--tree".as_ref(), root.as_os_str()];
    args.extend(["--sets", "sizes", "--json", "-"].map(std::ffi::OsStr::new));
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    let out = run(args);
    set_mode(&root.join("locked"), 0o755);
    out
}

#[test]
fn as_root_the_arms_run_unprivileged_and_see_permission_errors() {
    if skip_unless(Capability::Root) {
        return;
    }
    let (_dir, root) = tree_with_a_locked_folder();
    let out = run_on_locked_tree(&root, &[]);
    assert_exit(&out, 0);
    let report = json_report(&out);
    assert_eq!(
        report["arms_ran_as"], "nobody (uid 65534, gid 65534)",
        "{out}"
    );
    for case in report_cases(&report, &out) {
        assert_eq!(case["reference"]["status"]["code"], 1, "{out}");
        assert_eq!(case["candidate"]["status"]["code"], 1, "{out}");
    }
    assert!(report["warnings"].as_array().unwrap().is_empty(), "{out}");
}

#[test]
fn with_as_root_the_arms_read_everything_and_a_warning_says_so() {
    if skip_unless(Capability::Root) {
        return;
    }
    let (_dir, root) = tree_with_a_locked_folder();
    let out = run_on_locked_tree(&root, &["--as-root"]);
    assert_exit(&out, 0);
    let report = json_report(&out);
    assert_eq!(report["arms_ran_as"], "root (--as-root)", "{out}");
    assert_eq!(
        report["cases"][0]["reference"]["status"]["code"], 0,
        "{out}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("those fixtures test nothing"),
        "{out}"
    );
}

#[test]
fn as_user_names_the_user_and_rejects_unknown_ones() {
    if skip_unless(Capability::Root) {
        return;
    }
    let out = run([
        "--as-user",
        "daemon",
        "--tree",
        "basic",
        "--sets",
        "depth",
        "--json",
        "-",
    ]);
    assert_exit(&out, 0);
    assert!(
        json_report(&out)["arms_ran_as"]
            .as_str()
            .unwrap()
            .starts_with("daemon (uid "),
        "{out}"
    );
    let out = run([
        "--as-user",
        "no-such-user-here",
        "--tree",
        "basic",
        "--sets",
        "depth",
    ]);
    assert_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("--as-user: no such user `no-such-user-here`"),
        "{out}"
    );
}

#[test]
fn keep_leaves_the_built_tree_and_says_where() {
    let tmp = temp_dir();
    let out = Cmd::new(eqcheck())
        .args(["--keep", "--tree", "basic", "--sets", "depth"])
        .env("TMPDIR", tmp.path())
        .output();
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    // `built and kept on FILE-SYSTEM at PATH`, the path last.
    let after = text
        .lines()
        .find_map(|l| l.split_once("built and kept").map(|(_, after)| after))
        .unwrap_or_else(|| panic!("{out}"));
    let kept = PathBuf::from(
        after
            .split_once(" at ")
            .unwrap_or_else(|| panic!("{out}"))
            .1,
    );
    assert!(kept.join("src/main.rs").is_file(), "{out}");
    assert_eq!(
        entries_of(tmp.path()),
        vec![kept],
        "only the kept tree remains"
    );
}

/// With two jobs, the case whose candidate changed the tree is never judged as
/// though it had not: it is blamed, or it says the tree had already changed and
/// the blamed case names it among the arms running at the time. Checks that
/// raced each other once let it through as identical in about one run of four,
/// so the run is made several times.
#[test]
fn with_two_jobs_the_arm_that_changed_the_tree_is_never_judged_as_if_it_had_not() {
    let dir = temp_dir();
    let script = dir.path().join("chmod-on-b");
    let walker = walk("reference");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nsleep 0.3\nif [ \"$1\" = -b ] && [ $# -eq 2 ]; then chmod 600 \"$2/src/lib.rs\"; fi\nexec {walker} \"$@\"\n"
        ),
    )
    .unwrap();
    set_mode(&script, 0o755);
    let candidate = script.to_string_lossy().into_owned();
    for attempt in 1..=4 {
        let out = run([
            "--ref", &walker, "--cand", &candidate, "--tree", "basic", "--sets", "sizes", "-j",
            "2", "--json", "-",
        ]
        .into_iter()
        .chain(crate::util::as_root().iter().copied()));
        assert_exit(&out, 3);
        let report = json_report(&out);
        let cases = report_cases(&report, &out);
        let culprit = (cases.iter())
            .find(|c| c["set"] == "-b")
            .unwrap_or_else(|| panic!("no -b case\n{out}"));
        let verdict = &culprit["verdict"];
        assert_eq!(verdict["kind"], "tree-changed", "attempt {attempt}\n{out}");
        if verdict["arm"] != "candidate" {
            let blamed = (cases.iter())
                .find(|c| c["verdict"]["arm"] == "candidate" || c["verdict"]["arm"] == "reference")
                .unwrap_or_else(|| panic!("attempt {attempt}: nobody blamed\n{out}"));
            let changes = blamed["verdict"]["changes"].to_string();
            assert!(
                changes.contains("arms running while it changed")
                    && changes.contains("the candidate arm of basic:sizes:-b"),
                "attempt {attempt}: the blamed case does not name -b's candidate\n{out}"
            );
        }
    }
}
