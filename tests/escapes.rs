//! Arms whose processes leave their group, session or parent (`setsid`, `setsid
//! -w`, a child that ignores SIGTERM and SIGHUP, a double fork, `nohup`): every one
//! of them ends with its arm, before the next run starts, so nothing they write
//! reaches a later run's HOME or changes a verdict, and nothing of them runs after
//! eqcheck ends, whether it finishes or is interrupted. Linux: the processes are
//! looked for in `/proc`.

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util::{as_root, eqcheck, set_mode, skip_unless, temp_dir, Capability, Cmd};

/// One way a program leaves a process behind, as a line of shell that starts
/// `CHILD` (a quoted shell script) in the background.
const ESCAPES: [(&str, &str); 5] = [
    ("setsid", "setsid sh -c CHILD &"),
    ("setsid -w", "setsid -w sh -c CHILD &"),
    (
        "a new session ignoring SIGTERM and SIGHUP",
        "setsid sh -c \"trap '' TERM HUP; sh -c CHILD\" &",
    ),
    ("a double fork", "( (sh -c CHILD) & )"),
    ("nohup", "nohup sh -c CHILD >/dev/null 2>&1 &"),
];

/// Where the escaped processes note their pids and what they wrote late; open
/// to every user, as the arms may run as uid 65534.
struct Notes {
    dir: tempfile::TempDir,
}

impl Notes {
    fn new() -> Notes {
        let dir = temp_dir();
        set_mode(dir.path(), 0o777);
        let notes = Notes { dir };
        std::fs::write(notes.pids(), "").unwrap();
        set_mode(&notes.pids(), 0o666);
        notes
    }

    fn pids(&self) -> PathBuf {
        self.dir.path().join("pids")
    }

    fn late(&self) -> PathBuf {
        self.dir.path().join("late")
    }

    /// The arm's program: after `pause` seconds it prints what an earlier run
    /// left in its HOME, then leaves a child behind `escape`'s way that notes its
    /// pid, waits `linger` seconds, then writes into HOME (the path the next run
    /// of the case gets as its own) and notes that it did; once the child has
    /// noted its pid, the arm runs `then` and ends.
    fn arm(&self, escape: &str, pause: f64, linger: f64, then: &str) -> String {
        let child = format!(
            "echo $$ >> {pids}; sleep {linger}; echo evil > \"$HOME/evil.conf\"; echo $$ >> {late}",
            pids = self.pids().display(),
            late = self.late().display(),
        );
        let pids = shell_words::quote(&self.pids().to_string_lossy()).into_owned();
        let noted = format!("$(wc -l < {pids})");
        let script = format!(
            "#!/bin/sh\nsleep {pause}\ncat \"$HOME/evil.conf\" 2>/dev/null\nn={noted}\n{}\n\
             while [ {noted} -le $n ]; do sleep 0.01; done\n{then}\necho done\n",
            escape.replace("CHILD", &shell_words::quote(&child))
        );
        let path = self.dir.path().join("arm.sh");
        std::fs::write(&path, script).unwrap();
        set_mode(&path, 0o755);
        path.display().to_string()
    }

    /// The noted pids of processes that still run (a zombie runs nothing).
    fn running(&self) -> Vec<u32> {
        let pids = std::fs::read_to_string(self.pids()).unwrap_or_default();
        pids.split_whitespace()
            .filter_map(|p| p.parse().ok())
            .filter(|pid| runs(*pid))
            .collect()
    }

    /// How many children wrote into HOME (while their arm ran, a child may).
    fn writes(&self) -> usize {
        let late = std::fs::read_to_string(self.late()).unwrap_or_default();
        late.lines().count()
    }

    fn noted(&self) -> usize {
        let pids = std::fs::read_to_string(self.pids()).unwrap_or_default();
        pids.lines().count()
    }
}

fn runs(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .next();
    !matches!(state, None | Some("Z") | Some("X"))
}

/// A flag-set file of two sets, so a case follows another.
fn two_sets(dir: &Path) -> String {
    let path = dir.join("two.sets");
    std::fs::write(&path, "operand =\n[g]\n-a\n-b\n").unwrap();
    path.display().to_string()
}

#[test]
fn what_an_arm_starts_outside_its_group_ends_with_it_and_changes_no_verdict() {
    if skip_unless(Capability::Program("setsid")) || skip_unless(Capability::Program("nohup")) {
        return;
    }
    // As root the arms run as uid 65534 unless `--as-root` says otherwise.
    let users: [&[&str]; 2] = [&[], as_root()];
    let mut failures = Vec::new();
    for (name, escape) in ESCAPES {
        for user in users.iter().take(if name == "setsid" { 2 } else { 1 }) {
            if let Err(failure) = escape_ends_with_its_arm(escape, user) {
                failures.push(format!("{name} {user:?}: {failure}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Two cases of an arm that leaves a child `escape`'s way, as `user` flags say.
fn escape_ends_with_its_arm(escape: &str, user: &[&str]) -> Result<(), String> {
    let notes = Notes::new();
    let arm = notes.arm(escape, 0.3, 0.2, "");
    let sets = two_sets(notes.dir.path());
    let mut args = vec!["--ref", &arm, "--cand", &arm, "--tree", "basic"];
    args.extend(["--sets", &sets, "-j", "1"]);
    args.extend(user.iter());
    // Each arm's `--version` runs in eqcheck's own environment: its HOME too.
    let out = Cmd::new(eqcheck())
        .args(&args)
        .env("HOME", notes.dir.path())
        .output();
    // The reference's child would write into the candidate's HOME while the
    // candidate pauses, and the candidate would print it.
    if out.code != Some(0) {
        return Err(format!("a verdict changed\n{out}"));
    }
    // Four runs, and each arm's `--version`.
    if notes.noted() < 4 {
        return Err(format!("not every run left a child\n{out}"));
    }
    let left = notes.running();
    if !left.is_empty() {
        return Err(format!("{left:?} still run after eqcheck ended\n{out}"));
    }
    let before = notes.writes();
    std::thread::sleep(Duration::from_millis(400));
    if notes.writes() != before {
        return Err(format!("a child wrote after eqcheck ended\n{out}"));
    }
    Ok(())
}

/// eqcheck started in the background on a case whose arms each leave a child in a
/// session of its own that writes late, once both children run: the process, its
/// temp folder, and where its stderr goes.
fn started_with_escapes(notes: &Notes) -> (std::process::Child, tempfile::TempDir, PathBuf) {
    let arm = notes.arm("setsid sh -c CHILD &", 0.0, 1.5, "sleep 60");
    let tmp = temp_dir();
    let err = notes.dir.path().join("eqcheck.err");
    let child = std::process::Command::new(eqcheck())
        .args(["--ref", &arm, "--cand", &arm, "--tree", "basic", "--sets"])
        .arg(two_sets(notes.dir.path()))
        .args(["-j", "2"])
        .env("TMPDIR", tmp.path())
        .env("HOME", notes.dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while notes.noted() < 2 {
        assert!(start.elapsed() < Duration::from_secs(60), "no arm started");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, tmp, err)
}

fn signal(child: &std::process::Child, name: &str) {
    let sent = std::process::Command::new("kill")
        .args([format!("-{name}"), child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let listed = std::fs::read_dir(dir).unwrap().flatten();
    listed.map(|e| e.path()).collect()
}

#[test]
fn an_interrupt_ends_what_an_arm_started_outside_its_group_before_removing_folders() {
    if skip_unless(Capability::Program("setsid")) {
        return;
    }
    let notes = Notes::new();
    let (mut child, tmp, err) = started_with_escapes(&notes);
    signal(&child, "HUP");
    let status = child.wait().unwrap();
    let said = std::fs::read_to_string(err).unwrap_or_default();
    assert_eq!(status.code(), Some(129), "{said}");
    assert_eq!(notes.running(), Vec::<u32>::new(), "left running\n{said}");
    assert_eq!(
        entries(tmp.path()),
        Vec::<PathBuf>::new(),
        "temp folders left\n{said}"
    );
    let before = notes.writes();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        notes.writes(),
        before,
        "a child wrote after the end\n{said}"
    );
    assert_eq!(
        entries(tmp.path()),
        Vec::<PathBuf>::new(),
        "made again after the end\n{said}"
    );
}

/// SIGKILL leaves eqcheck no time to clean up (its temp folder stays), but the
/// keepers see their stdin close and end their runs.
#[test]
fn a_killed_eqcheck_leaves_no_arm_running() {
    if skip_unless(Capability::Program("setsid")) {
        return;
    }
    let notes = Notes::new();
    let (mut child, _tmp, _err) = started_with_escapes(&notes);
    signal(&child, "KILL");
    child.wait().unwrap();
    let start = Instant::now();
    while !notes.running().is_empty() {
        let left = notes.running();
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{left:?} still run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = notes.writes();
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(notes.writes(), before, "a child wrote after the end");
}

/// Where the cgroup v2 hierarchy is mounted.
fn cgroup2_mount() -> PathBuf {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let line = mountinfo
        .lines()
        .find(|l| l.contains(" - cgroup2 "))
        .unwrap();
    PathBuf::from(line.split_whitespace().nth(4).unwrap())
}

/// Where eqcheck may make control groups (as root), every run, as the arm user
/// or as root, is in its keeper's group, and the group is gone once eqcheck ends.
#[test]
fn runs_are_in_their_keepers_control_group_which_is_gone_after() {
    if skip_unless(Capability::ControlGroups) {
        return;
    }
    let users: [&[&str]; 2] = [&[], as_root()];
    // Cloned into the group (the default), and forked then moved, as on kernels
    // before 5.7.
    let ways = users
        .iter()
        .flat_map(|user| ["clone", "fork"].map(|way| (*user, way)));
    for (user, way) in ways {
        let notes = Notes::new();
        let seen = notes.dir.path().join("cgroups");
        std::fs::write(&seen, "").unwrap();
        set_mode(&seen, 0o666);
        let arm = notes.dir.path().join("arm.sh");
        let script = format!(
            "#!/bin/sh\ngrep '^0::' /proc/self/cgroup >> {}\necho same\n",
            seen.display()
        );
        std::fs::write(&arm, script).unwrap();
        set_mode(&arm, 0o755);
        let arm = arm.display().to_string();
        let sets = two_sets(notes.dir.path());
        let mut args = vec!["--ref", &arm, "--cand", &arm, "--tree", "basic"];
        args.extend(["--sets", &sets, "-j", "1"]);
        args.extend(user.iter());
        let out = Cmd::new(eqcheck())
            .args(&args)
            .env("EQCHECK_KEEPER_SPAWN", way)
            .output();
        assert_eq!(out.code, Some(0), "{way} {user:?}: {out}");
        let seen = std::fs::read_to_string(&seen).unwrap();
        let groups: Vec<&str> = seen.lines().map(|l| &l[3..]).collect();
        assert!(groups.len() >= 4, "{way} {user:?}: runs seen: {seen}");
        for group in &groups {
            let name = Path::new(group).file_name().unwrap().to_string_lossy();
            assert!(
                name.starts_with("eqcheck-keeper-"),
                "{way} {user:?}: a run in {group}\n{out}"
            );
            let folder = cgroup2_mount().join(group.trim_start_matches('/'));
            assert!(!folder.exists(), "{} is left\n{out}", folder.display());
        }
    }
}

/// A run that leaves a process behind has its group ended through
/// `cgroup.kill`; on some kernels each process later cloned into that group
/// would be killed at its start, so the runs after it go into a new group.
#[test]
fn runs_after_one_that_left_a_process_are_cloned_into_a_new_group() {
    if skip_unless(Capability::ControlGroups) {
        return;
    }
    let notes = Notes::new();
    let seen = notes.dir.path().join("cgroups");
    let arm = notes.dir.path().join("arm.sh");
    let script = format!(
        "#!/bin/sh\ngrep '^0::' /proc/self/cgroup >> {}\n\
         sleep 30 </dev/null >/dev/null 2>&1 &\necho same\n",
        seen.display()
    );
    std::fs::write(&arm, script).unwrap();
    set_mode(&arm, 0o755);
    let arm = arm.display().to_string();
    let sets = two_sets(notes.dir.path());
    let args = ["--ref", &arm, "--cand", &arm, "--tree", "basic"];
    let out = Cmd::new(eqcheck())
        .args(args)
        .args(["--sets", &sets, "-j", "1", "--as-root"])
        .env("EQCHECK_KEEPER_SPAWN", "clone")
        .output();
    assert_eq!(out.code, Some(0), "{out}");
    let seen = std::fs::read_to_string(&seen).unwrap();
    let groups: Vec<&str> = seen.lines().map(|l| &l[3..]).collect();
    assert!(groups.len() >= 4, "runs seen: {seen}");
    let unique: std::collections::BTreeSet<&str> = groups.iter().copied().collect();
    assert_eq!(unique.len(), groups.len(), "a group held two runs: {seen}");
    for group in &groups {
        let folder = cgroup2_mount().join(group.trim_start_matches('/'));
        assert!(!folder.exists(), "{} is left\n{out}", folder.display());
    }
}

/// The control group ends what no sweep of the collector would find: a process
/// that left its session and lost its parent to init, as the test process is no
/// subreaper.
#[test]
fn a_control_group_alone_ends_a_process_that_left_its_session_and_its_parent() {
    if skip_unless(Capability::ControlGroups) || skip_unless(Capability::Program("setsid")) {
        return;
    }
    let _one_at_a_time = crate::util::in_process_cgroups();
    let container = eqcheck::sweep::Container::make().expect("a group");
    let folder = container.folder().to_path_buf();
    let mut command = std::process::Command::new("sh");
    command
        .args(["-c", "setsid sleep 30 >/dev/null 2>&1 & echo $!"])
        .stdout(std::process::Stdio::piped());
    container.hold(&mut command);
    let out = command.output().unwrap();
    let orphan: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(runs(orphan), "the orphan {orphan} should still run");
    container.end_all();
    // Out of the group, a killed process may still be a moment from a zombie.
    let start = Instant::now();
    while runs(orphan) && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!runs(orphan), "the orphan {orphan} outlived its group");
    drop(container);
    assert!(!folder.exists(), "{} is left", folder.display());
}

/// A group whose keeper was killed before it could remove it is removed by the
/// next keeper that starts.
#[test]
fn a_group_left_by_a_killed_keeper_is_removed_by_the_next() {
    if skip_unless(Capability::ControlGroups) {
        return;
    }
    let _one_at_a_time = crate::util::in_process_cgroups();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let probe = eqcheck::sweep::Container::make().expect("a group");
    let parent = probe.folder().parent().unwrap().to_path_buf();
    drop(probe);
    let left = parent.join(format!("eqcheck-keeper-{}", gone.id()));
    std::fs::create_dir(&left).unwrap();
    let next = eqcheck::sweep::Container::make().expect("a group");
    let still_there = left.exists();
    drop(next);
    let _ = std::fs::remove_dir(&left);
    assert!(!still_there, "{} is left", left.display());
}

/// eqcheck running an arm that hangs, with `tmp` as its temp folder and its stderr
/// in `err`, once the arm has started: both arms are `arm.sh` in `work`, which
/// waits a minute.
fn hanging(work: &Path, tmp: &Path, tree: &std::ffi::OsStr, err: &Path) -> std::process::Child {
    let started = work.join("started");
    let arm = work.join("arm.sh");
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = --version ] && exit 0\ntouch {}\nsleep 60\n",
        started.display()
    );
    std::fs::write(&arm, script).unwrap();
    set_mode(&arm, 0o755);
    let child = std::process::Command::new(eqcheck())
        .args([
            "--ref".as_ref(),
            arm.as_os_str(),
            "--cand".as_ref(),
            arm.as_os_str(),
        ])
        .args(["--tree".as_ref(), tree, "--sets".as_ref()])
        .arg(two_sets(work))
        .args(["-j", "1"])
        .args(as_root())
        .env("TMPDIR", tmp)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(err).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !started.exists() {
        assert!(start.elapsed() < Duration::from_secs(120), "no arm started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// A second signal while the first one's cleanup runs exits at once with the
/// second's status, and names what was not removed yet: here the cleanup is kept
/// busy removing a tree of 300,000 files (on /dev/shm, where it builds in seconds)
/// when the second SIGTERM comes.
#[test]
fn a_second_signal_during_cleanup_exits_at_once_naming_what_is_left() {
    let work = temp_dir();
    let tmp = tempfile::Builder::new()
        .prefix("eqc-test-")
        .tempdir_in("/dev/shm")
        .unwrap();
    let tree = work.path().join("big.tree");
    std::fs::write(&tree, "generate files many count=300000 size=0\n").unwrap();
    let err = work.path().join("eqcheck.err");
    let mut child = hanging(work.path(), tmp.path(), tree.as_os_str(), &err);
    signal(&child, "TERM");
    std::thread::sleep(Duration::from_millis(100));
    signal(&child, "TERM");
    let status = child.wait().unwrap();
    let said = std::fs::read_to_string(&err).unwrap_or_default();
    assert_eq!(status.code(), Some(143), "{said}");
    let line = said
        .lines()
        .find(|l| l.contains("a second signal: stopped cleaning up; left behind: "))
        .unwrap_or_else(|| panic!("no second-signal line\n{said}"));
    let left = entries(tmp.path());
    assert!(!left.is_empty(), "the cleanup finished first\n{said}");
    for folder in &left {
        let named = folder.display().to_string();
        assert!(
            line.contains(&named),
            "{named} is left but not named\n{said}"
        );
    }
}

/// `timeout -s INT` signals eqcheck and then its whole process group, eqcheck
/// included: the same signal twice at once is one interrupt, whose cleanup runs to
/// its end and removes everything.
#[test]
fn the_same_signal_twice_at_once_is_one_interrupt_that_cleans_up_everything() {
    let work = temp_dir();
    let tmp = temp_dir();
    let err = work.path().join("eqcheck.err");
    let mut child = hanging(work.path(), tmp.path(), "basic".as_ref(), &err);
    let pid = child.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid, &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    let said = std::fs::read_to_string(&err).unwrap_or_default();
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(!said.contains("a second signal"), "{said}");
    assert_eq!(entries(tmp.path()), Vec::<PathBuf>::new(), "{said}");
}
