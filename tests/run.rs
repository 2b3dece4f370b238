//! `eqcheck run` end to end: the default pair is identical, a planted difference
//! is caught with its diff, hung and crashing arms are never called equal, and bad
//! input stops the run with exit 2 and a message naming what is wrong.

use std::path::PathBuf;

use crate::util::{assert_exit, run, temp_dir, Output};

/// The test double built beside eqcheck (tests/support/double.rs).
fn double() -> String {
    env!("CARGO_BIN_EXE_eqcheck-double").to_string()
}

fn eqcheck_walk(engine: &str) -> String {
    format!("{} walk --engine {engine}", env!("CARGO_BIN_EXE_eqcheck"))
}

/// Runs eqcheck with these two arms and further arguments.
fn run_pair(reference: &str, candidate: &str, rest: &[&str]) -> Output {
    // The small tree unless one is named: the standard set is too large here.
    let mut args = vec!["--ref", reference, "--cand", candidate];
    if !rest.contains(&"--tree") {
        args.extend(["--tree", "basic"]);
    }
    args.extend_from_slice(rest);
    run(args)
}

fn json_report(stdout: &[u8]) -> serde_json::Value {
    // With `--json -` stdout holds the JSON report alone; the text goes to stderr.
    serde_json::from_slice(stdout).expect("stdout is one JSON document")
}

fn verdicts(report: &serde_json::Value) -> Vec<String> {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            c["verdict"]["kind"]
                .as_str()
                .expect("a verdict")
                .to_string()
        })
        .collect()
}

#[test]
fn the_default_pair_is_identical_with_every_walk_set() {
    // The default arms and flag sets; the tree is named because the standard set
    // includes trees too large for a debug build to walk 60 times quickly.
    let out = run(["--tree", "basic", "--json", "-"]);
    assert_exit(&out, 0);
    let report = json_report(&out.stdout);
    let verdicts = verdicts(&report);
    assert!(verdicts.len() >= 20, "only {} cases\n{out}", verdicts.len());
    assert!(verdicts.iter().all(|v| v == "identical"), "{out}");
    assert_eq!(report["schema_version"], 2);
    assert_eq!(report["trees"][0]["name"], "basic");
    assert!(report["trees"][0]["counts"]["entries"].as_u64().unwrap() > 20);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("| basic |"), "{out}");
}

#[test]
fn run_is_also_a_named_subcommand() {
    let out = run(["run", "--tree", "basic", "--sets", "depth"]);
    assert_exit(&out, 0);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("cases: 7 identical"),
        "{out}"
    );
}

#[test]
fn a_dropped_line_is_reported_as_differing_with_its_diff() {
    let cand = format!("{} walk-drop-line 3 --engine fast", double());
    let out = run_pair(
        &eqcheck_walk("reference"),
        &cand,
        &["--sets", "sizes", "--json", "-"],
    );
    assert_exit(&out, 1);
    let report = json_report(&out.stdout);
    assert!(verdicts(&report).iter().all(|v| v == "differs"), "{out}");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("stdout differs:"), "{out}");
    assert!(
        text.contains("--- reference") && text.contains("+++ candidate"),
        "{out}"
    );
    // The dropped third line of the plain set is the `{tree}/data` folder's.
    let removed: Vec<&str> = text
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-') && !l.starts_with("---"))
        .collect();
    assert!(
        removed.iter().any(|l| l.ends_with("\t{tree}/data")),
        "{removed:?}\n{out}"
    );
    assert!(text.contains("DIFFERENCES FOUND"), "{out}");
}

#[test]
fn an_altered_size_is_reported_as_differing() {
    let cand = format!("{} walk-alter-line 1 --engine fast", double());
    let out = run_pair(&eqcheck_walk("reference"), &cand, &["--sets", "depth"]);
    assert_exit(&out, 1);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("7 differ"), "{out}");
}

#[test]
fn hung_arms_time_out_and_are_never_called_identical() {
    // Both arms would print the same `woke` if they were allowed to finish.
    let sleeper = format!("{} sleep 30", double());
    let out = run_pair(
        &sleeper,
        &sleeper,
        &[
            "--sets",
            "output",
            "--timeout",
            "0.3",
            "-j",
            "8",
            "--json",
            "-",
        ],
    );
    assert_exit(&out, 3);
    let report = json_report(&out.stdout);
    assert!(verdicts(&report).iter().all(|v| v == "error"), "{out}");
    assert_eq!(
        report["cases"][0]["reference"]["status"]["kind"],
        "timed-out"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("timed out after 0.3s"),
        "{out}"
    );
}

#[test]
fn a_crashing_candidate_differs_in_its_exit_status() {
    let cand = format!("{} crash", double());
    let out = run_pair(
        &eqcheck_walk("reference"),
        &cand,
        &["--sets", "depth", "--json", "-"],
    );
    assert_exit(&out, 1);
    let report = json_report(&out.stdout);
    let status = &report["cases"][0]["candidate"]["status"];
    assert_eq!(status["kind"], "signaled", "{out}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exit status differs"),
        "{out}"
    );
}

#[test]
fn the_tree_placeholder_is_filled_in_and_rewritten_back() {
    let printer = format!("{} print 'root={{tree}}\\n'", double());
    let out = run_pair(&printer, &printer, &["--sets", "depth", "--json", "-"]);
    assert_exit(&out, 0);
    let report = json_report(&out.stdout);
    let argv = report["cases"][0]["reference"]["argv"].as_array().unwrap();
    let tree = report["trees"][0]["path"].as_str().unwrap();
    let placed: Vec<&str> = argv
        .iter()
        .filter_map(|a| a.as_str())
        .filter(|a| a.starts_with("root="))
        .collect();
    assert_eq!(placed, [format!("root={tree}\\n")], "{out}");
    // The tree was placed, so it is not appended as well.
    assert!(!argv.iter().any(|a| a.as_str() == Some(tree)), "{out}");
}

#[test]
fn a_missing_binary_is_a_usage_error_that_names_it() {
    let out = run_pair("no-such-walker -s", &eqcheck_walk("fast"), &[]);
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("reference arm: program `no-such-walker` not found on PATH"),
        "{out}"
    );
    let out = run(["--ref", &eqcheck_walk("fast"), "--cand", "./missing/walker"]);
    assert_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("candidate arm: program `./missing/walker`"),
        "{out}"
    );
}

#[test]
fn a_malformed_flag_set_file_is_a_usage_error_with_file_and_line() {
    let dir = temp_dir();
    let file = dir.path().join("broken.sets");
    std::fs::write(&file, "description = broken\n[g]\n-a\n-d 'unclosed\n").unwrap();
    let out = run([std::ffi::OsStr::new("--sets"), file.as_os_str()]);
    assert_exit(&out, 2);
    let expected = format!(
        "{}:4: cannot split set: missing closing quote",
        file.display()
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&expected),
        "{out}"
    );
}

#[test]
fn unknown_groups_and_trees_are_usage_errors() {
    let out = run(["--sets", "nonesuch"]);
    assert_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no group `nonesuch` (groups: sizes,"),
        "{out}"
    );
    let out = run(["--tree", "nonesuch"]);
    assert_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown tree `nonesuch`"),
        "{out}"
    );
}

#[test]
fn a_malformed_tree_spec_is_a_usage_error_with_file_and_line() {
    let dir = temp_dir();
    let spec = dir.path().join("odd.tree");
    std::fs::write(&spec, "dir a\nfile a/b size=lots\n").unwrap();
    let out = run([std::ffi::OsStr::new("--tree"), spec.as_os_str()]);
    assert_exit(&out, 2);
    let expected = format!("{}:2: bad size `lots`", spec.display());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&expected),
        "{out}"
    );
}

#[test]
fn a_tree_given_by_path_is_compared_and_left_as_it_was() {
    let dir = temp_dir();
    let root = dir.path().join("given");
    eqcheck::fixtures::build_named("basic", &root).unwrap();
    let before = snapshot(&root);
    let out = run([
        std::ffi::OsStr::new("--tree"),
        root.as_os_str(),
        "--sets".as_ref(),
        "sizes".as_ref(),
    ]);
    assert_exit(&out, 0);
    assert_eq!(before, snapshot(&root), "the given tree changed");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("given at"),
        "{out}"
    );
}

/// Every path with its type, size and modification time.
fn snapshot(root: &std::path::Path) -> Vec<(PathBuf, String)> {
    let mut entries: Vec<(PathBuf, String)> = walkdir::WalkDir::new(root)
        .into_iter()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            (
                e.path().to_path_buf(),
                format!(
                    "{:?} {} {:?}",
                    meta.file_type(),
                    meta.len(),
                    meta.modified().ok()
                ),
            )
        })
        .collect();
    entries.sort();
    entries
}

#[test]
fn large_differing_outputs_are_diffed_against_a_deadline_and_cut() {
    // 150,000 lines (under the 2 MiB diff cap) that differ almost everywhere: a plain diff of this takes
    // minutes; the report must still come, with a cut diff.
    let ours = format!("{} lines 150000 1", double());
    let theirs = format!("{} lines 150000 3", double());
    let dir = temp_dir();
    let one_set = dir.path().join("one.sets");
    std::fs::write(
        &one_set,
        "[only]
(none)
",
    )
    .unwrap();
    let one_set = one_set.to_string_lossy().into_owned();
    let out = run_pair(&ours, &theirs, &["--sets", &one_set]);
    assert_exit(&out, 1);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("more diff lines not shown"), "{out}");
}

#[test]
fn what_an_arm_leaves_running_is_ended_with_it() {
    let dir = temp_dir();
    let late = dir.path().join("late");
    let lingerer = format!("{} linger {} 1", double(), late.display());
    let out = run_pair(&lingerer, &lingerer, &["--sets", "depth", "--as-root"]);
    assert_exit(&out, 0);
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(
        !late.exists(),
        "a child the arm left behind went on running\n{out}"
    );
}

#[test]
fn json_on_stdout_is_one_document_and_the_text_goes_to_stderr() {
    let out = run(["--tree", "basic", "--sets", "depth", "--json", "-"]);
    assert_exit(&out, 0);
    json_report(&out.stdout);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("| basic |"),
        "{out}"
    );
}

#[test]
fn a_json_path_that_cannot_be_written_stops_the_run_before_it_starts() {
    let out = run([
        "--sets",
        "depth",
        "--json",
        "/nonexistent-folder/report.json",
    ]);
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--json /nonexistent-folder/report.json"),
        "{out}"
    );
    assert!(out.stdout.is_empty(), "no case ran\n{out}");
}

#[test]
fn entries_a_tree_could_not_hold_are_named_in_the_report() {
    // Linux refuses user.* xattrs on symlinks: the link is made, its xattr skipped.
    let dir = temp_dir();
    let spec = dir.path().join("skips.tree");
    std::fs::write(&spec, "file a size=10\nsymlink l -> a xattr.user.c=1\n").unwrap();
    let spec = spec.to_string_lossy().into_owned();
    let out = run(["--tree", &spec, "--sets", "depth", "--json", "-"]);
    assert_exit(&out, 0);
    let report = json_report(&out.stdout);
    let skipped = report["trees"][0]["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{out}");
    assert!(
        skipped[0]
            .as_str()
            .unwrap()
            .starts_with(&format!("{spec}:2: ")),
        "{out}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("skips: skipped "),
        "{out}"
    );
}

#[test]
fn arms_start_in_a_folder_they_may_enter_and_relative_programs_still_run() {
    // eqcheck started from a folder only its owner may enter: GNU find, run as
    // the unprivileged arm user, cannot work from there and fails every case.
    let dir = temp_dir();
    let private = dir.path().join("private");
    std::fs::create_dir(&private).unwrap();
    crate::util::set_mode(&private, 0o700);
    let up: PathBuf = std::iter::repeat_n("..", private.components().count() - 1).collect();
    let relative_double = up.join(std::path::Path::new(&double()).strip_prefix("/").unwrap());
    let out = crate::util::Cmd::new(crate::util::eqcheck())
        .cwd(&private)
        .args(["--ref", "find", "--cand", "find", "--flagsets", "find"])
        .args(["--tree", "basic", "--sets", "types", "--json", "-"])
        .output();
    assert_exit(&out, 0);
    let report = json_report(&out.stdout);
    for case in report["cases"].as_array().unwrap() {
        assert_eq!(case["reference"]["status"]["code"], 0, "{out}");
    }
    // A program named relative to the working folder still runs, and the report
    // names it by an absolute path, so its repro line works from anywhere.
    let printer = format!("{} print 'x\\n'", relative_double.display());
    let out = crate::util::Cmd::new(crate::util::eqcheck())
        .cwd(&private)
        .args(["--ref", &printer, "--cand", &printer, "--tree", "basic"])
        .args(["--sets", "depth", "--as-root", "--json", "-"])
        .output();
    assert_exit(&out, 0);
    let report = json_report(&out.stdout);
    let program = report["cases"][0]["reference"]["argv"][0].as_str().unwrap();
    assert!(std::path::Path::new(program).is_absolute(), "{out}");
    assert_eq!(
        std::fs::canonicalize(program).unwrap(),
        std::fs::canonicalize(double()).unwrap()
    );
}

#[test]
fn arms_and_runs_share_one_home_path_and_a_set_home_wins() {
    // A program that prints where it runs prints the same for both arms and every
    // run: the HOME is made anew each time at one path.
    let dir = temp_dir();
    let sets = dir.path().join("where.sets");
    std::fs::write(&sets, "operand =\n[only]\n(none)\n").unwrap();
    let sets = sets.to_string_lossy().into_owned();
    let printer = "sh -c 'pwd; echo $HOME $XDG_CONFIG_HOME; ls -A'";
    let out = run_pair(
        printer,
        printer,
        &["--sets", &sets, "--runs", "3", "--json", "-"],
    );
    assert_exit(&out, 0);
    assert_eq!(verdicts(&json_report(&out.stdout)), ["identical"], "{out}");
    // A flag-set file's HOME goes to the arm, over eqcheck's own.
    std::fs::write(
        &sets,
        "operand =\nenv.HOME = /nonexistent/home\n[only]\n(none)\n",
    )
    .unwrap();
    let out = run_pair(
        "sh -c 'echo $HOME'",
        &format!("{} print '/nonexistent/home\\n'", double()),
        &["--sets", &sets, "--as-root"],
    );
    assert_exit(&out, 0);
}

#[test]
fn a_tree_holding_the_temp_folder_is_refused() {
    let dir = temp_dir();
    let temp = dir.path().join("tmp");
    std::fs::create_dir(&temp).unwrap();
    let out = crate::util::Cmd::new(crate::util::eqcheck())
        .env("TMPDIR", &temp)
        .args(["--tree", &dir.path().to_string_lossy(), "--sets", "depth"])
        .output();
    assert_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the temp folder"),
        "{out}"
    );
}

#[test]
fn flag_sets_follow_the_programs_name_or_a_warning_says_they_did_not() {
    let out = run_pair(
        &eqcheck_walk("reference"),
        &eqcheck_walk("fast"),
        &["--sets", "depth", "--json", "-"],
    );
    assert_exit(&out, 0);
    // Arms given with --ref/--cand: the program's name decides, and `eqcheck`
    // names no flag-set file, so the walk sets come with a warning.
    let report = json_report(&out.stdout);
    assert_eq!(report["flag_sets"], "flagsets/walk.sets", "{out}");
    let warned = report["warnings"].to_string();
    assert!(
        warned.contains("named after the reference program `eqcheck`"),
        "{out}"
    );
    let out = run_pair("du", "du", &["--sets", "sizes", "--json", "-"]);
    let report = json_report(&out.stdout);
    assert_eq!(report["flag_sets"], "flagsets/du.sets", "{out}");
    assert!(
        !report["warnings"].to_string().contains("named after"),
        "{out}"
    );
}

#[test]
fn a_repro_line_run_in_a_shell_gives_what_the_arm_gave() {
    // The arm prints who and where it is and what it was given; its repro line,
    // pasted into a shell, must print the same.
    let dir = temp_dir();
    let sets = dir.path().join("self.sets");
    std::fs::write(&sets, "operand =\nenv.EXTRA = a b\n[only]\n(none)\n").unwrap();
    let probe = "sh -c 'id -u; id -g; umask; env | sort | grep -v \"^PWD=\"; pwd; ls -A; cat'";
    let marker = format!("{} print 'm\\n'", double());
    let out = run_pair(
        probe,
        &marker,
        &["--sets", &sets.to_string_lossy(), "--json", "-"],
    );
    assert_exit(&out, 1);
    let report = json_report(&out.stdout);
    let case = &report["cases"][0];
    let repro = case["reference"]["repro"].as_str().unwrap();
    let diff = case["streams"][0]["diff"].as_str().unwrap();
    let arm_said: String = diff
        .lines()
        .filter_map(|l| l.strip_prefix('-').filter(|_| !l.starts_with("---")))
        .map(|l| format!("{l}\n"))
        .collect();
    let again = std::process::Command::new("sh")
        .args(["-c", repro])
        .output()
        .unwrap();
    let home_free = |text: &str| -> String {
        // Only the temporary folder's name may differ.
        text.lines()
            .map(|l| {
                if l.starts_with('/') || l.contains("HOME=") {
                    "(home)".to_string()
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        home_free(&String::from_utf8_lossy(&again.stdout)),
        home_free(&arm_said),
        "{repro}\n{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(arm_said.contains("EXTRA=a b"), "{arm_said}");
}

#[test]
fn the_arm_runs_the_very_file_the_report_names() {
    // A program found on PATH in a folder only root may enter: the arm user must
    // not quietly run another file of the same name further along PATH.
    if !crate::util::is_root() {
        return;
    }
    let dir = temp_dir();
    crate::util::set_mode(dir.path(), 0o755);
    let (private, public) = (dir.path().join("private"), dir.path().join("public"));
    for (folder, mode) in [(&private, 0o700), (&public, 0o755)] {
        std::fs::create_dir(folder).unwrap();
        std::os::unix::fs::symlink(double(), folder.join("walker")).unwrap();
        crate::util::set_mode(folder, mode);
    }
    let path = format!(
        "{}:{}:{}",
        private.display(),
        public.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = crate::util::Cmd::new(crate::util::eqcheck())
        .env("PATH", path)
        .args(["--ref", "walker print x", "--cand", "walker print x"])
        .args([
            "--tree",
            "basic",
            "--sets",
            "depth",
            "--flagsets",
            "walk",
            "--json",
            "-",
        ])
        .output();
    assert_exit(&out, 3);
    let report = json_report(&out.stdout);
    let named = report["reference"]["binary"].as_str().unwrap();
    assert!(named.starts_with(&*private.to_string_lossy()), "{out}");
    let status = report["cases"][0]["reference"]["status"].to_string();
    assert!(status.contains("make the program reachable"), "{out}");
}

#[test]
fn a_tree_or_temp_folder_the_arm_user_cannot_reach_is_refused() {
    // As root the arms run as uid 65534: a tree under a folder only root may
    // enter would give every arm the same "Permission denied", and "identical".
    if !crate::util::is_root() {
        return;
    }
    let dir = temp_dir();
    let private = dir.path().join("private");
    std::fs::create_dir_all(private.join("web")).unwrap();
    std::fs::write(private.join("web/page"), "x").unwrap();
    crate::util::set_mode(&private, 0o700);
    let web = private.join("web");
    let out = run(["--tree", &*web.to_string_lossy(), "--sets", "depth"]);
    assert_exit(&out, 2);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("may not pass through") && said.contains("(mode 700)"),
        "{out}"
    );
    // The same tree is fine for root.
    let out = run([
        "--tree",
        &*web.to_string_lossy(),
        "--sets",
        "depth",
        "--as-root",
    ]);
    assert_exit(&out, 0);
    // A temp folder the arm user cannot reach is named as such.
    let temp = private.join("tmp");
    std::fs::create_dir(&temp).unwrap();
    let out = crate::util::Cmd::new(crate::util::eqcheck())
        .env("TMPDIR", &temp)
        .args(["--tree", "basic", "--sets", "depth"])
        .output();
    assert_exit(&out, 3);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("set TMPDIR"),
        "{out}"
    );
}
