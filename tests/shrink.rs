//! `eqcheck shrink` end to end, with candidates whose difference has one known
//! cause: a file named `trigger` with mode 444 anywhere in the tree, or the two
//! flags `-a` and `-L` together. The reduced spec and set must be exactly the
//! cause, within the run budget, and the printed repro line must show the
//! difference again on a fresh build of the spec; the same with jobs, on an
//! image, on a folder given by path (left as it was), with `common` words, and
//! after Ctrl-C. `shrink_limits.rs` has the cases that must not shrink as they are.

use std::path::Path;

use crate::util::{assert_exit, eqcheck, run, temp_dir, written, Output};

/// The shell condition of a candidate that differs only when a file named
/// `trigger` with mode 444 is anywhere in the tree.
pub(crate) const TRIGGER_PRESENT: &str =
    "[ -n \"$(find \"$tree\" -name trigger -perm 0444 -print 2>/dev/null)\" ]";

/// A candidate that runs `eqcheck walk` but marks its first line when `when` (a
/// shell condition, with `$tree` the tree and `$args` every argument) holds.
pub(crate) fn candidate(dir: &Path, when: &str) -> String {
    let eq = shell_words::quote(&eqcheck().to_string_lossy()).into_owned();
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo candidate 1; exit 0; }}\n\
         args=\"$*\"\nfor tree; do :; done\n\
         if {when}; then {eq} walk \"$@\" | sed '1s/^/X/'; else exec {eq} walk \"$@\"; fi\n"
    );
    let path = written(dir, "candidate", &script);
    crate::util::set_mode(Path::new(&path), 0o755);
    path
}

pub(crate) fn reference() -> String {
    format!("{} walk", shell_words::quote(&eqcheck().to_string_lossy()))
}

/// `eqcheck shrink` of the case `case` names (`--tree`, `--set`), the walk
/// reference against `cand`, with the walk flag-set file, results into `out_dir`.
pub(crate) fn shrink_walk(case: &[&str], cand: &str, out_dir: &Path) -> Output {
    let (reference, out) = (reference(), out_dir.to_string_lossy().into_owned());
    let mut args = vec![
        "shrink",
        "--ref",
        &reference,
        "--cand",
        cand,
        "--flagsets",
        "walk",
    ];
    args.extend(["--out", &out]);
    args.extend(case);
    run(args)
}

/// A folder `tree` in `dir` holding `other` and `WHERE/trigger` with mode 444.
pub(crate) fn folder_with_trigger(dir: &Path, place: &str) -> std::path::PathBuf {
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join(place)).unwrap();
    let trigger = tree.join(place).join("trigger");
    std::fs::write(&trigger, "x").unwrap();
    crate::util::set_mode(&trigger, 0o444);
    std::fs::write(tree.join("other"), "y").unwrap();
    tree
}

/// A file the arms can write, whoever they run as, for a double that counts its runs.
pub(crate) fn counter_file(dir: &Path) -> String {
    let shared = dir.join("shared");
    std::fs::create_dir(&shared).unwrap();
    crate::util::set_mode(&shared, 0o777);
    shared.join("counter").to_string_lossy().into_owned()
}

pub(crate) fn assert_nothing_left(tmp: &Path, said: &str) {
    let left: Vec<_> = std::fs::read_dir(tmp).unwrap().flatten().collect();
    assert!(left.is_empty(), "left in the temp folder: {left:?}\n{said}");
}

/// The JSON the shrink wrote into `out`.
pub(crate) fn shrink_report(out_dir: &Path, out: &Output) -> serde_json::Value {
    let text = std::fs::read_to_string(out_dir.join("shrink.json"))
        .unwrap_or_else(|e| panic!("no shrink.json ({e})\n{out}"));
    serde_json::from_str(&text).unwrap()
}

/// The entry lines of a spec: neither comments nor blank.
pub(crate) fn entry_lines(spec: &str) -> Vec<&str> {
    (spec.lines())
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .collect()
}

#[test]
fn a_mode_444_trigger_in_18000_entries_shrinks_to_the_file_alone_within_200_runs() {
    let dir = temp_dir();
    let (spec, cand) = trigger_case(dir.path());
    let out_dir = dir.path().join("out");
    let out = shrink_walk(&["--tree", &spec, "--set", "-a -b"], &cand, &out_dir);
    assert_exit(&out, 0);
    let report = shrink_report(&out_dir, &out);
    let runs = report["arm_runs"].as_u64().unwrap();
    assert!(runs <= 200, "{runs} arm runs\n{out}");
    assert_eq!(report["set_after"], serde_json::json!([]), "{out}");
    let spec = std::fs::read_to_string(out_dir.join("shrunk.tree")).unwrap();
    let entries = entry_lines(&spec);
    assert!(
        entries.len() <= 2,
        "more than a folder and the file:\n{spec}"
    );
    assert!(
        entries
            .iter()
            .any(|l| l.contains("trigger") && l.contains("mode=0444")),
        "{spec}"
    );
    assert!(spec.starts_with("# shrunk from"), "{spec}");
    repro_differs(&out);
}

/// Runs the repro line the shrink printed: it must find the difference again.
pub(crate) fn repro_differs(out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = (stdout.lines())
        .find_map(|l| l.strip_prefix("repro: "))
        .unwrap_or_else(|| panic!("no repro line\n{out}"));
    let words = shell_words::split(line).unwrap();
    let again = run(&words[1..]);
    assert_exit(&again, 1);
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(text.contains("differs"), "{again}");
}

#[test]
fn a_difference_that_needs_two_flags_keeps_exactly_those_two() {
    let dir = temp_dir();
    let when = "case \" $args \" in *' -a '*) case \" $args \" in *' -L '*) true;; *) false;; esac;; *) false;; esac";
    let cand = candidate(dir.path(), when);
    let out_dir = dir.path().join("out");
    let out = shrink_walk(&["basic:links:-a -L -b"], &cand, &out_dir);
    assert_exit(&out, 0);
    let report = shrink_report(&out_dir, &out);
    assert_eq!(
        report["set_after"],
        serde_json::json!(["-a", "-L"]),
        "{out}"
    );
    assert_eq!(
        report["set_before"],
        serde_json::json!(["-a", "-L", "-b"]),
        "{out}"
    );
    let sets = std::fs::read_to_string(out_dir.join("shrunk.sets")).unwrap();
    assert!(sets.contains("[links]\n-a -L\n"), "{sets}");
    repro_differs(&out);
}

/// candidate that marks its output when the trigger is there.
pub(crate) fn trigger_case(dir: &Path) -> (String, String) {
    let spec = written(
        dir,
        "big.tree",
        "generate node-modules node_modules entries=18000 seed=7\n\
         file node_modules/deep/er/trigger size=100 mode=0444\n",
    );
    (spec, candidate(dir, TRIGGER_PRESENT))
}

#[cfg(unix)]
#[test]
fn an_interrupt_keeps_the_best_result_so_far_and_says_where() {
    use std::io::{BufRead, BufReader};
    let dir = temp_dir();
    let (spec, cand) = trigger_case(dir.path());
    let out_dir = dir.path().join("out");
    let tmp = temp_dir();
    let mut child = std::process::Command::new(eqcheck())
        .args([
            "shrink",
            "--tree",
            &spec,
            "--set",
            "-a",
            "--ref",
            &reference(),
            "--cand",
            &cand,
        ])
        .args(["--flagsets", "walk", "--out", &out_dir.to_string_lossy()])
        .env("TMPDIR", tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("eqcheck shrink: ") {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!("shrink ended before a first kept step\n{said}");
        }
        said.push_str(&line);
    }
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    said.push_str(&rest);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(said.contains("the smallest case so far"), "{said}");
    let kept = std::fs::read_to_string(out_dir.join("shrunk.tree")).unwrap();
    assert!(kept.starts_with("# shrunk from"), "{kept}");
    assert!(
        kept.contains("trigger"),
        "the best so far lost its cause:\n{kept}"
    );
    assert_nothing_left(tmp.path(), &said);
}

#[test]
fn an_existing_folder_is_shrunk_on_a_copy_and_left_as_it_was() {
    let dir = temp_dir();
    let tree = folder_with_trigger(dir.path(), "a/b");
    std::fs::write(tree.join("a/other"), "y").unwrap();
    let xattr = set_note(&tree.join("a/b/trigger"));
    let listing = |root: &Path| -> Vec<String> {
        let mut found = Vec::new();
        let mut folders = vec![root.to_path_buf()];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).unwrap().flatten() {
                let meta = entry.metadata().unwrap();
                found.push(format!(
                    "{} {} {:?}",
                    entry.path().display(),
                    meta.len(),
                    meta.modified().unwrap()
                ));
                if meta.is_dir() {
                    folders.push(entry.path());
                }
            }
        }
        found.sort();
        found
    };
    let before = listing(&tree);
    let cand = candidate(dir.path(), TRIGGER_PRESENT);
    let out_dir = dir.path().join("out");
    let out = shrink_walk(
        &["--tree", &tree.to_string_lossy(), "--set", "-a"],
        &cand,
        &out_dir,
    );
    assert_exit(&out, 0);
    assert_eq!(
        listing(&tree),
        before,
        "the folder given was changed\n{out}"
    );
    let spec = std::fs::read_to_string(out_dir.join("shrunk.tree")).unwrap();
    assert_eq!(entry_lines(&spec).len(), 1, "{spec}");
    if xattr {
        assert!(
            !spec.contains("xattr."),
            "an xattr the difference needs not was kept:\n{spec}"
        );
    }
}

/// Gives `path` an xattr the candidate never looks at; false, said loudly, where
/// the file system refuses one.
fn set_note(path: &Path) -> bool {
    #[cfg(unix)]
    if rustix::fs::lsetxattr(path, "user.note", b"x", rustix::fs::XattrFlags::empty()).is_ok() {
        return true;
    }
    eprintln!("SKIPPED the xattr part: the temp folder's file system refuses user xattrs");
    assert!(
        std::env::var_os("EQCHECK_REQUIRE_ALL").is_none_or(|v| v != "1"),
        "EQCHECK_REQUIRE_ALL=1, but user xattrs cannot be set here"
    );
    false
}

#[test]
fn a_difference_no_entry_causes_leaves_one_entry_that_still_builds() {
    let dir = temp_dir();
    let cand = candidate(dir.path(), "true");
    let out_dir = dir.path().join("out");
    let out = shrink_walk(&["--tree", "basic", "--set", "-a"], &cand, &out_dir);
    assert_exit(&out, 0);
    let spec = std::fs::read_to_string(out_dir.join("shrunk.tree")).unwrap();
    assert_eq!(entry_lines(&spec).len(), 1, "{spec}");
    repro_differs(&out);
    // Sizes count the root, as a run's report counts the same tree.
    let report = shrink_report(&out_dir, &out);
    let matrix =
        crate::util::json_report(&run(["--tree", "basic", "--sets", "sizes", "--json", "-"]));
    let run_counts = &matrix["trees"][0]["counts"]["entries"];
    assert_eq!(&report["before"]["entries"], run_counts, "{out}");
    assert_eq!(report["after"]["entries"], 2, "{out}");
    assert!(spec.contains("\n# 2 entries, "), "{spec}");
}

#[test]
fn jobs_find_what_one_job_finds() {
    let dir = temp_dir();
    let (spec, cand) = trigger_case(dir.path());
    let shrink = |jobs: &str| {
        let out_dir = dir.path().join(format!("out-{jobs}"));
        let out = run([
            "shrink",
            "--tree",
            &spec,
            "--set",
            "-a -b",
            "--ref",
            &reference(),
            "--cand",
            &cand,
            "--flagsets",
            "walk",
            "--out",
            &out_dir.to_string_lossy(),
            "-j",
            jobs,
        ]);
        assert_exit(&out, 0);
        let report = shrink_report(&out_dir, &out);
        let spec = std::fs::read_to_string(out_dir.join("shrunk.tree")).unwrap();
        // Kind, path and mode: times differ from copy to copy.
        let entries: Vec<String> = (entry_lines(&spec).iter())
            .map(|l| {
                l.split(' ')
                    .filter(|w| !w.starts_with("mtime="))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        (
            entries,
            report["set_after"].clone(),
            report["arm_runs"].as_u64().unwrap(),
        )
    };
    let (one, set_one, _) = shrink("1");
    let (three, set_three, runs) = shrink("3");
    assert_eq!(three, one);
    assert_eq!(set_three, set_one);
    assert!(runs <= 500, "{runs}");
}

#[test]
fn common_words_go_only_where_the_flag_set_file_allows_it() {
    let dir = temp_dir();
    let when = "case \" $args \" in *' -a '*) true;; *) false;; esac";
    let cand = candidate(dir.path(), when);
    for (allow, expected) in [
        ("yes", serde_json::json!([])),
        ("no", serde_json::json!(["-c", "-b"])),
    ] {
        let sets = written(
            dir.path(),
            &format!("{allow}.sets"),
            &format!("common = -c -b\nshrink-common = {allow}\n[g]\n-a -x\n"),
        );
        let out_dir = dir.path().join(allow);
        let out = run([
            "shrink",
            "--tree",
            "basic",
            "--set",
            "-a -x",
            "--ref",
            &reference(),
            "--cand",
            &cand,
            "--flagsets",
            &sets,
            "--out",
            &out_dir.to_string_lossy(),
        ]);
        assert_exit(&out, 0);
        let report = shrink_report(&out_dir, &out);
        assert_eq!(report["set_after"], serde_json::json!(["-a"]), "{out}");
        assert_eq!(
            report["common_after"], expected,
            "shrink-common = {allow}\n{out}"
        );
        let sets_written = std::fs::read_to_string(out_dir.join("shrunk.sets")).unwrap();
        let common_line = if allow == "yes" {
            "common ="
        } else {
            "common = -c -b"
        };
        assert!(
            sets_written.lines().any(|l| l.trim() == common_line),
            "{sets_written}"
        );
        repro_differs(&out);
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_case_on_an_image_shrinks_there_and_leaves_no_loop_device() {
    use crate::util::{skip_unless, Capability, Cmd};
    if skip_unless(Capability::Root) || skip_unless(Capability::FileSystemImage("xfs")) {
        return;
    }
    let dir = temp_dir();
    let spec = written(
        dir.path(),
        "small.tree",
        "generate files pkg count=300 size=0..2K\nfile deep/er/trigger size=10 mode=0444\n",
    );
    // The difference shows only on xfs: a copy anywhere else would not reproduce.
    let when = format!("[ \"$(stat -f -c %T \"$tree\")\" = xfs ] && {TRIGGER_PRESENT}");
    let cand = candidate(dir.path(), &when);
    let out_dir = dir.path().join("out");
    let tmp = temp_dir();
    let out = Cmd::new(eqcheck())
        .args([
            "shrink",
            "--tree",
            &spec,
            "--fs",
            "xfs",
            "--set",
            "-a",
            "--ref",
            &reference(),
        ])
        .args([
            "--cand",
            &cand,
            "--flagsets",
            "walk",
            "--out",
            &out_dir.to_string_lossy(),
        ])
        .args(["-j", "2"])
        .env("TMPDIR", tmp.path())
        .output();
    assert_exit(&out, 0);
    let report = shrink_report(&out_dir, &out);
    assert_eq!(report["case"], "small@xfs:sizes:-a", "{out}");
    let spec = std::fs::read_to_string(out_dir.join("shrunk.tree")).unwrap();
    assert_eq!(entry_lines(&spec).len(), 1, "{spec}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("--fs xfs"),
        "{out}"
    );
    let loops = std::process::Command::new("losetup")
        .arg("-a")
        .output()
        .unwrap();
    let tmp_name = tmp.path().to_string_lossy().into_owned();
    assert!(
        !String::from_utf8_lossy(&loops.stdout).contains(&tmp_name),
        "a loop device is left"
    );
    assert_nothing_left(tmp.path(), "");
}
