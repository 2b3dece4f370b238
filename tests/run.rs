//! `eqcheck run` end to end: the default pair is identical, a planted difference
//! is caught with its diff, hung and crashing arms are never called equal, and bad
//! input stops the run with exit 2 and a message naming what is wrong.

use std::path::PathBuf;

use crate::util::{assert_exit, double, json_report, report_cases, run, temp_dir, written, Output};

pub(crate) fn eqcheck_walk(engine: &str) -> String {
    format!("{} walk --engine {engine}", env!("CARGO_BIN_EXE_eqcheck"))
}

/// Runs eqcheck with these two arms and further arguments.
pub(crate) fn run_pair(reference: &str, candidate: &str, rest: &[&str]) -> Output {
    // The small tree unless one is named: the standard set is too large here.
    let mut args = vec!["--ref", reference, "--cand", candidate];
    if !rest.contains(&"--tree") {
        args.extend(["--tree", "basic"]);
    }
    args.extend_from_slice(rest);
    run(args)
}

/// Each case's verdict, in report order (never none).
pub(crate) fn verdicts(report: &serde_json::Value, out: &Output) -> Vec<String> {
    report_cases(report, out)
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
    let report = json_report(&out);
    let verdicts = verdicts(&report, &out);
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
    let cand = double("walk-drop-line 3 --engine fast");
    let out = run_pair(
        &eqcheck_walk("reference"),
        &cand,
        &["--sets", "sizes", "--json", "-"],
    );
    assert_exit(&out, 1);
    let report = json_report(&out);
    assert!(
        verdicts(&report, &out).iter().all(|v| v == "differs"),
        "{out}"
    );
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
    let cand = double("walk-alter-line 1 --engine fast");
    let out = run_pair(&eqcheck_walk("reference"), &cand, &["--sets", "depth"]);
    assert_exit(&out, 1);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("7 differ"), "{out}");
}

#[test]
fn hung_arms_time_out_and_are_never_called_identical() {
    // Both arms would print the same `woke` if they were allowed to finish.
    let sleeper = double("sleep 30");
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
    let report = json_report(&out);
    assert!(
        verdicts(&report, &out).iter().all(|v| v == "error"),
        "{out}"
    );
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
    let cand = double("crash");
    let out = run_pair(
        &eqcheck_walk("reference"),
        &cand,
        &["--sets", "depth", "--json", "-"],
    );
    assert_exit(&out, 1);
    let report = json_report(&out);
    let status = &report["cases"][0]["candidate"]["status"];
    assert_eq!(status["kind"], "signaled", "{out}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exit status differs"),
        "{out}"
    );
}

#[test]
fn the_tree_placeholder_is_filled_in_and_rewritten_back() {
    let printer = double("print 'root={tree}\\n'");
    let out = run_pair(&printer, &printer, &["--sets", "depth", "--json", "-"]);
    assert_exit(&out, 0);
    let report = json_report(&out);
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
        err.contains("--ref: program `no-such-walker` not found on PATH"),
        "{out}"
    );
    let out = run(["--ref", &eqcheck_walk("fast"), "--cand", "./missing/walker"]);
    assert_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--cand: program `./missing/walker`"),
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
    let given = format!(" at {}", root.display());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains(", given") && l.ends_with(&given)),
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
    let ours = double("lines 150000 1");
    let theirs = double("lines 150000 3");
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
    let lingerer = double(&format!("linger {} 1", late.display()));
    let rest = [&["--sets", "depth"], crate::util::as_root()].concat();
    let out = run_pair(&lingerer, &lingerer, &rest);
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
    json_report(&out);
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
    let spec = written(
        dir.path(),
        "skips.tree",
        "file a size=10\nsymlink l -> a xattr.user.c=1\n",
    );
    let out = run(["--tree", &spec, "--sets", "depth", "--json", "-"]);
    assert_exit(&out, 0);
    let report = json_report(&out);
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

#[cfg(target_os = "linux")]
#[test]
fn a_report_that_cannot_be_written_after_the_run_is_a_harness_failure() {
    // /dev/full opens, so the run goes ahead; every write to it then fails. The
    // matrix ran and was judged: what failed is the harness, not the command line.
    let out = run(["--tree", "basic", "--sets", "depth", "--json", "/dev/full"]);
    assert_exit(&out, 3);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected =
        "eqcheck: cannot write the JSON report to /dev/full: No space left on device (os error 28)\n";
    assert_eq!(stderr, expected, "{out}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("7 cases: 7 identical"),
        "{out}"
    );
}

/// A file that may not be run is refused before any arm runs, by its path or on
/// PATH (where, as a shell does, the lookup passes it by), whoever the arms run as.
#[cfg(unix)]
#[test]
fn a_program_that_is_not_executable_is_a_usage_error_that_says_so() {
    let dir = temp_dir();
    let script = refused_script(dir.path(), "echo ran\n", 0o644, "is not executable");
    let out = crate::util::Cmd::new(crate::util::eqcheck())
        .args([
            "--ref",
            "walker.sh",
            "--cand",
            &eqcheck_walk("fast"),
            "--tree",
            "basic",
        ])
        .env("PATH", dir.path())
        .output();
    assert_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("`walker.sh` not found on PATH"),
        "{out}"
    );
    // Under a runner the file is the runner's to open: it runs, and differs.
    let out = run([
        "--ref",
        &script,
        "--ref-runner",
        "sh",
        "--cand",
        &eqcheck_walk("fast"),
        "--tree",
        "basic",
        "--sets",
        "depth",
    ]);
    assert_exit(&out, 1);
}

/// A tree or a program named by bytes that are not UTF-8 is refused naming the
/// argument, the flag it is the value of, and its bytes, not with a bare "invalid
/// UTF-8 somewhere".
#[cfg(unix)]
#[test]
fn an_argument_that_is_not_utf8_is_named_with_its_flag() {
    use std::os::unix::ffi::OsStrExt;
    let tree = std::ffi::OsStr::from_bytes(b"/tmp/caf\xe9");
    let out = crate::util::Cmd::new(crate::util::eqcheck())
        .arg("--tree")
        .arg(tree)
        .output();
    assert_exit(&out, 2);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("argument 2 (the value of --tree) is not UTF-8: `/tmp/caf\\xe9`"),
        "{out}"
    );
}

/// What an arm leaves running is counted before it is ended, and told: in the
/// JSON per arm, as a note on each case, and once as a warning over the run. Run
/// as root (a control group counts every process) and, where the tests run as
/// root, as an unprivileged user too (no control group: the orphans are counted).
#[cfg(unix)]
#[test]
fn what_an_arm_leaves_running_is_counted_and_told() {
    let dir = temp_dir();
    crate::util::set_mode(dir.path(), 0o777);
    let late = dir.path().join("late");
    let lingerer = double(&format!("linger {} 1", late.display()));
    let quiet = double("print ''");
    let mut users = vec![None];
    if crate::util::is_root() {
        users.push(Some((65534, 65534)));
    }
    for user in users {
        let out = crate::util::Cmd::new(crate::util::eqcheck())
            .args(["--ref", &quiet, "--cand", &lingerer, "--tree", "basic"])
            .args(["--sets", "depth", "--json", "-"])
            .env("TMPDIR", dir.path())
            .cwd(dir.path())
            .user(user)
            .output();
        assert_exit(&out, 0);
        let report = json_report(&out);
        for case in crate::util::report_cases(&report, &out) {
            assert_eq!(case["candidate"]["left_running"], 1, "{user:?}\n{out}");
            assert_eq!(case["reference"]["left_running"], 0, "{user:?}\n{out}");
            let notes = case["notes"].to_string();
            assert!(
                notes.contains("the candidate left a process running past its end; it was killed"),
                "{user:?}\n{out}"
            );
        }
        assert!(
            String::from_utf8_lossy(&out.stderr)
                .contains("arms left processes running past their end, which were killed, in "),
            "{user:?}\n{out}"
        );
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(
        !late.exists(),
        "a child the arm left behind went on running"
    );
}

/// A script whose `#!` line names an interpreter that is not there is refused up
/// front, naming the interpreter: the kernel's "no such file" in every case
/// would read as if the script itself were missing.
#[cfg(unix)]
#[test]
fn a_script_whose_interpreter_is_missing_is_refused_naming_the_interpreter() {
    let dir = temp_dir();
    refused_script(
        dir.path(),
        "#!/no/such/sh -e\necho ran\n",
        0o755,
        "is a script for `/no/such/sh` (its first line, #!), which does not exist",
    );
}

/// A script of `text` and `mode`, given as the reference: the run must be refused
/// before any arm runs (exit 2), saying `said`. Its path, for more runs.
#[cfg(unix)]
fn refused_script(dir: &std::path::Path, text: &str, mode: u32, said: &str) -> String {
    let script = written(dir, "walker.sh", text);
    crate::util::set_mode(std::path::Path::new(&script), mode);
    let fast = eqcheck_walk("fast");
    let out = run(["--ref", &script, "--cand", &fast, "--tree", "basic"]);
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains(said), "{out}");
    script
}

/// Cases in one folder, one after another, each write over the files the case
/// before left: a long output followed by a short one must not keep the long
/// one's tail. The first case differs (x's against y's); the second prints the
/// same short line on both sides and must be identical.
#[test]
fn a_case_never_sees_what_the_case_before_it_wrote() {
    let dir = temp_dir();
    let arm = |name: &str, long: &str| {
        let script = format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && exit 0\ncase \"$1\" in\n-a) printf '{long}\\n' ;;\n*) printf 'a\\n' ;;\nesac\n"
        );
        let path = written(dir.path(), name, &script);
        crate::util::set_mode(std::path::Path::new(&path), 0o755);
        path
    };
    let (reference, candidate) = (
        arm("ref.sh", &"x".repeat(5000)),
        arm("cand.sh", &"y".repeat(5000)),
    );
    let sets = written(dir.path(), "two.sets", "operand =\n[g]\n-a\n-b\n");
    let out = run_pair(
        &reference,
        &candidate,
        &[
            "--flagsets",
            &sets,
            "--argv0",
            "arm",
            "-j",
            "1",
            "--runs",
            "2",
            "--json",
            "-",
        ],
    );
    assert_exit(&out, 1);
    assert_eq!(
        verdicts(&json_report(&out), &out),
        ["differs", "identical"],
        "{out}"
    );
}
