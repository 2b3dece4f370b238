//! How arms are run: where they start, their HOME and environment, who they run
//! as and which program file, what a tree or temp folder out of their reach does,
//! which flag sets their program's name picks, and that a repro line reproduces
//! them.

use std::path::PathBuf;

use sha2::Digest;

use crate::run::{eqcheck_walk, run_pair, verdicts};
use crate::util::{
    assert_exit, double, json_report, report_cases, run, skip_unless, temp_dir, written,
    Capability, DOUBLE_PATH,
};

#[test]
fn arms_start_in_a_folder_they_may_enter_and_relative_programs_still_run() {
    // eqcheck started from a folder only its owner may enter: GNU find, run as
    // the unprivileged arm user, cannot work from there and fails every case.
    let dir = temp_dir();
    let private = dir.path().join("private");
    std::fs::create_dir(&private).unwrap();
    crate::util::set_mode(&private, 0o700);
    let up: PathBuf = std::iter::repeat_n("..", private.components().count() - 1).collect();
    let relative_double = up.join(std::path::Path::new(DOUBLE_PATH).strip_prefix("/").unwrap());
    let out = crate::util::Cmd::new(crate::util::eqcheck())
        .cwd(&private)
        .args(["--ref", "find", "--cand", "find", "--flagsets", "find"])
        .args(["--tree", "basic", "--sets", "types", "--json", "-"])
        .output();
    assert_exit(&out, 0);
    let report = json_report(&out);
    for case in report_cases(&report, &out) {
        assert_eq!(case["reference"]["status"]["code"], 0, "{out}");
    }
    // A program named relative to the working folder still runs, and the report
    // names it by an absolute path, so its repro line works from anywhere.
    let printer = format!("{} print 'x\\n'", relative_double.display());
    let out = crate::util::Cmd::new(crate::util::eqcheck())
        .cwd(&private)
        .args(["--ref", &printer, "--cand", &printer, "--tree", "basic"])
        .args(["--sets", "depth", "--json", "-"])
        .args(crate::util::as_root())
        .output();
    assert_exit(&out, 0);
    let report = json_report(&out);
    let program = report["cases"][0]["reference"]["argv"][0].as_str().unwrap();
    assert!(std::path::Path::new(program).is_absolute(), "{out}");
    assert_eq!(
        std::fs::canonicalize(program).unwrap(),
        std::fs::canonicalize(DOUBLE_PATH).unwrap()
    );
}

#[test]
fn arms_and_runs_share_one_home_path_and_a_set_home_wins() {
    // A program that prints where it runs prints the same for both arms and every
    // run: the HOME is made anew each time at one path.
    let dir = temp_dir();
    let sets = written(dir.path(), "where.sets", "operand =\n[only]\n(none)\n");
    let printer = "sh -c 'pwd; echo $HOME $XDG_CONFIG_HOME; ls -A'";
    let out = run_pair(
        printer,
        printer,
        &["--sets", &sets, "--runs", "3", "--json", "-"],
    );
    assert_exit(&out, 0);
    assert_eq!(verdicts(&json_report(&out), &out), ["identical"], "{out}");
    // A flag-set file's HOME goes to the arm, over eqcheck's own.
    std::fs::write(
        &sets,
        "operand =\nenv.HOME = /nonexistent/home\n[only]\n(none)\n",
    )
    .unwrap();
    let out = run_pair(
        "sh -c 'echo $HOME'",
        &double("print '/nonexistent/home\\n'"),
        &[&["--sets", &sets], crate::util::as_root()].concat(),
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
    let report = json_report(&out);
    assert_eq!(report["flag_sets"], "flagsets/walk.sets", "{out}");
    let warned = report["warnings"].to_string();
    assert!(
        warned.contains("named after the reference program `eqcheck`"),
        "{out}"
    );
    let out = run_pair("du", "du", &["--sets", "sizes", "--json", "-"]);
    let report = json_report(&out);
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
    let marker = double("print 'm\\n'");
    let out = run_pair(
        probe,
        &marker,
        &["--sets", &sets.to_string_lossy(), "--json", "-"],
    );
    assert_exit(&out, 1);
    let report = json_report(&out);
    let case = &report["cases"][0];
    let repro = case["reference"]["repro"].as_str().unwrap();
    let diff = case["streams"][0]["diff"].as_str().unwrap();
    let arm_said: String = diff
        .lines()
        .filter_map(|l| l.strip_prefix('-').filter(|_| !l.starts_with("---")))
        .map(|l| format!("{l}\n"))
        .collect();
    let again = crate::util::run_repro(repro);
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
fn repro_lines_make_again_the_tree_and_the_program_copy_the_run_removed() {
    // The basic tree is built for the run, and as root the arms run a copy of
    // eqcheck made for the arm user; both are gone after the run. Each arm's repro
    // line, pasted afterwards into a shell whose umask is tighter than the run's,
    // makes its own and prints what a walk of the same tree prints.
    let dir = temp_dir();
    let sets = written(dir.path(), "summary.sets", "[only]\n-s\n");
    let out = run(["--tree", "basic", "--sets", &sets, "--json", "-"]);
    assert_exit(&out, 0);
    let report = json_report(&out);
    let built = report["trees"][0]["path"].as_str().unwrap();
    assert!(
        !std::path::Path::new(built).exists(),
        "{built} is still there"
    );
    let ours = crate::util::built_tree("basic");
    let expected = run(["walk".as_ref(), "-s".as_ref(), ours.path().as_os_str()]);
    let size = |stdout: &[u8]| {
        String::from_utf8_lossy(stdout)
            .split('\t')
            .next()
            .map(String::from)
    };
    for arm in ["reference", "candidate"] {
        let repro = report["cases"][0][arm]["repro"].as_str().unwrap();
        assert!(!repro.contains(built), "{repro}");
        let again = crate::util::run_repro(&format!("umask 077; {repro}"));
        let shown = || format!("{repro}\n{again}");
        assert_exit(&again, 0);
        assert_eq!(size(&again.stdout), size(&expected.stdout), "{}", shown());
        let printed = String::from_utf8_lossy(&again.stdout);
        let path = printed
            .trim_end()
            .split_once('\t')
            .map(|(_, p)| p.to_string());
        let path = path.unwrap_or_else(|| panic!("{}", shown()));
        assert!(path.ends_with("/tree"), "{}", shown());
    }
}

#[test]
fn the_arm_runs_the_very_file_the_report_names_copied_where_its_user_can_reach_it() {
    // A program found on PATH in a folder only root may enter (as a walker in
    // root's ~/.cargo/bin): the arm user must not quietly run another file of the
    // same name further along PATH, nor be refused; it runs a copy of that file.
    if skip_unless(Capability::Root) {
        return;
    }
    let dir = temp_dir();
    crate::util::set_mode(dir.path(), 0o755);
    let (private, public) = (dir.path().join("private"), dir.path().join("public"));
    for (folder, mode) in [(&private, 0o700), (&public, 0o755)] {
        std::fs::create_dir(folder).unwrap();
        std::os::unix::fs::symlink(DOUBLE_PATH, folder.join("walker")).unwrap();
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
        .args(["--tree", "basic", "--sets", "depth", "--flagsets", "walk"])
        .args(["--json", "-"])
        .output();
    assert_exit(&out, 0);
    let report = json_report(&out);
    let named = report["reference"]["binary"].as_str().unwrap();
    assert!(named.starts_with(&*private.to_string_lossy()), "{out}");
    let copy = report["reference"]["copy"].as_str().expect("a copy ran");
    assert!(copy.ends_with("/walker") && !copy.starts_with(&*dir.path().to_string_lossy()));
    let original = std::fs::read(DOUBLE_PATH).unwrap();
    let sha = sha2::Sha256::digest(&original);
    let hex: String = sha.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(report["reference"]["sha256"], hex.as_str(), "{out}");
    let text = String::from_utf8_lossy(&out.stderr);
    let note = format!("ran a copy the arm user can reach: {copy} (of {named}, sha256 {hex})");
    assert!(text.contains(&note), "{out}");
    for case in report_cases(&report, &out) {
        assert_eq!(case["reference"]["status"]["code"], 0, "{out}");
    }
}

#[test]
fn a_tree_or_temp_folder_the_arm_user_cannot_reach_is_refused() {
    // As root the arms run as uid 65534: a tree under a folder only root may
    // enter would give every arm the same "Permission denied", and "identical".
    if skip_unless(Capability::Root) {
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

#[test]
fn two_copies_of_one_program_at_different_paths_are_identical() {
    // GNU tools name themselves by argv[0] in every error: run by their paths,
    // `old/du` and `new/du` would differ on every error line of every set.
    let dir = temp_dir();
    let mut arms = Vec::new();
    for build in ["old", "new"] {
        let folder = dir.path().join(build);
        std::fs::create_dir(&folder).unwrap();
        std::fs::copy(DOUBLE_PATH, folder.join("walker")).unwrap();
        arms.push(format!("{}/walker complain a b c", folder.display()));
    }
    let args = ["--sets", "depth", "--flagsets", "walk", "--json", "-"];
    let out = run_pair(&arms[0], &arms[1], &args);
    assert_exit(&out, 0);
    let report = json_report(&out);
    for case in report_cases(&report, &out) {
        // The exit codes agree and so does stderr; stdout is empty on both sides.
        assert_eq!(case["verdict"]["kind"], "identical", "{out}");
    }
    // The repro line runs the program under the same name.
    let repro = report["cases"][0]["candidate"]["repro"].as_str().unwrap();
    let again = crate::util::run_repro(repro);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.starts_with("walker: cannot access 'a'\n"),
        "{repro}\n{again}"
    );
    // A name set for both arms wins over the file name.
    let out = run_pair(
        &arms[0],
        &arms[1],
        &[&args[..], &["--argv0", "du"]].concat(),
    );
    assert_exit(&out, 0);
    let report = json_report(&out);
    let repro = report["cases"][0]["reference"]["repro"].as_str().unwrap();
    let again = crate::util::run_repro(repro);
    assert!(
        again.stderr.starts_with(b"du: cannot access 'a'\n"),
        "{repro}\n{again}"
    );
}

#[test]
fn private_programs_behind_public_symlinks_run_as_copies_whatever_the_umask() {
    // Walkers in a folder only root may enter, named through symlinks anyone may
    // pass: one a mode 0755 file, whose link alone looks reachable, and one a mode
    // 0700 file. eqcheck starts under umask 077, which must not close the folder it
    // copies programs into, and the repro line makes a copy the arm user may run.
    if skip_unless(Capability::Root) {
        return;
    }
    let dir = temp_dir();
    let private = dir.path().join("private");
    std::fs::create_dir(&private).unwrap();
    let mut arms = Vec::new();
    for (name, mode) in [("open", 0o755), ("closed", 0o700)] {
        let program = private.join(name);
        std::fs::copy(DOUBLE_PATH, &program).unwrap();
        crate::util::set_mode(&program, mode);
        let link = dir.path().join(name);
        std::os::unix::fs::symlink(&program, &link).unwrap();
        arms.push(format!("{} print 'x\\n'", link.display()));
    }
    crate::util::set_mode(&private, 0o700);
    let line = format!(
        "umask 077 && exec {} --ref {} --cand {} --tree basic --sets depth --flagsets walk --json -",
        crate::util::eqcheck().display(),
        shell_words::quote(&arms[0]),
        shell_words::quote(&arms[1]),
    );
    let out = crate::util::Cmd::new("sh").args(["-c", &line]).output();
    assert_exit(&out, 0);
    let report = json_report(&out);
    for arm in ["reference", "candidate"] {
        assert!(report[arm]["copy"].is_string(), "{arm}\n{out}");
        let repro = report["cases"][0][arm]["repro"].as_str().unwrap();
        let again = crate::util::run_repro(repro);
        assert_exit(&again, 0);
        assert_eq!(again.stdout, b"x\n", "{repro}\n{again}");
    }
}

/// A run starts with no signal blocked or ignored, whichever way its keeper
/// starts it (cloned into its control group, or forked by std and moved in) and
/// whoever it runs as: the keeper ignores SIGPIPE, and signal 32, which the GNU C
/// library's `posix_spawn` left ignored when it started the keeper, and neither
/// may reach the program. Where the signals are put back through the C library's
/// `sigaction` alone, which refuses 32, it is not checked.
#[test]
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn runs_start_with_no_signal_blocked_or_ignored() {
    if skip_unless(Capability::ControlGroups) {
        return;
    }
    let dir = temp_dir();
    let sets = written(dir.path(), "signals.sets", "operand =\n[only]\n(none)\n");
    let shown = "grep -E '^Sig(Blk|Ign):' /proc/self/status";
    let expected = double("print 'SigBlk:\\t0000000000000000\\nSigIgn:\\t0000000000000000\\n'");
    let users: [&[&str]; 2] = [&[], crate::util::as_root()];
    for (way, user) in ["clone", "fork"]
        .into_iter()
        .flat_map(|w| users.map(|u| (w, u)))
    {
        let out = crate::util::Cmd::new(crate::util::eqcheck())
            .args(["--ref", shown, "--cand", &expected, "--tree", "basic"])
            .args(["--sets", &sets, "--json", "-"])
            .args(user)
            .env("EQCHECK_KEEPER_SPAWN", way)
            .output();
        assert_exit(&out, 0);
        let verdicts = crate::run::verdicts(&json_report(&out), &out);
        assert_eq!(verdicts, ["identical"], "{way} {user:?}: {out}");
    }
}
