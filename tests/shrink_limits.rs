//! `eqcheck shrink` where a case should not shrink as it stands: flaky and equal
//! cases and unknown sets refused, a timed-out arm a harness failure, a difference of another kind not followed, one
//! that stops showing midway or does not hold on a fresh build said so, an arm
//! that writes to the tree stopping the shrink, and what a reduction must keep
//! about the tree (a folder's time, the root's own name, no earlier result read,
//! no output inside the tree).

use std::path::Path;

use crate::shrink::{
    candidate, counter_file, entry_lines, folder_with_trigger, reference, shrink_report,
    shrink_walk,
};
use crate::util::{assert_exit, double, eqcheck, run, temp_dir, written};

#[test]
fn a_flaky_case_is_refused_with_a_pointer_to_runs() {
    let dir = temp_dir();
    let counter = counter_file(dir.path());
    let out = run([
        "shrink",
        "--tree",
        "basic",
        "--set",
        "(none)",
        "--ref",
        &double("print 'line 1\\n'"),
        "--cand",
        &double(&format!("drop-every 2 {counter}")),
        "--out",
        &dir.path().join("out").to_string_lossy(),
    ]);
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("flaky") && stderr.contains("--runs"),
        "{out}"
    );
}

/// A candidate that starts to differ only from its third run on: the copy's two
/// runs agree, the folder's differ, and so do the copy's again. That is a case
/// that changes from run to run, not one that hangs on what a copy keeps.
#[test]
fn a_case_that_starts_to_differ_midway_is_not_blamed_on_the_copy() {
    let dir = temp_dir();
    let counter = counter_file(dir.path());
    let from_the_third = format!(
        "n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}; [ $n -ge 3 ]"
    );
    let cand = candidate(dir.path(), &from_the_third);
    let tree = folder_with_trigger(dir.path(), "sub");
    let case = ["--tree", tree.to_str().unwrap(), "--set", "-a"];
    let out = shrink_walk(&case, &cand, &dir.path().join("out"));
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("changes from run to run") && !stderr.contains("a copy does not keep"),
        "{out}"
    );
}

#[test]
fn an_equal_case_and_an_unknown_set_are_refused() {
    let dir = temp_dir();
    let out_dir = dir.path().join("out").to_string_lossy().into_owned();
    let out = run(["shrink", "basic:sizes:-a", "--out", &out_dir]);
    assert_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not differ"),
        "{out}"
    );
    let out = run(["shrink", "basic:sizes:--no-such-flag", "--out", &out_dir]);
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no set `--no-such-flag` in group `sizes` of flagsets/walk.sets"),
        "{out}"
    );
}

/// A tree spec of 18,000 entries with a mode-444 `trigger` deep inside, and the
/// A timeout or a tree changed on the first runs is the harness failing to judge
/// the case, not the user's input at fault: exit 3, as `run` gives for it, and
/// never a refusal.
#[test]
fn a_case_whose_arm_times_out_or_writes_to_the_tree_is_a_harness_failure() {
    let dir = temp_dir();
    let out = run([
        "shrink",
        "--tree",
        "basic",
        "--set",
        "-a",
        "--ref",
        &reference(),
        "--cand",
        &double("sleep 10"),
        "--timeout",
        "0.5",
        "--out",
        &dir.path().join("out").to_string_lossy(),
    ]);
    assert_exit(&out, 3);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("could not be judged"), "{out}");
    // So is an arm that writes to the tree on its first run: the arm and the
    // change are named, as a run names them.
    let mut args = vec![
        "shrink".to_string(),
        "basic:sizes:-a".into(),
        "--ref".into(),
        reference(),
        "--cand".into(),
        double("touch .hidden"),
        "--out".into(),
        dir.path().join("out").to_string_lossy().into_owned(),
    ];
    args.extend(crate::util::as_root().iter().map(|s| s.to_string()));
    let out = run(&args);
    assert_exit(&out, 3);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("could not be judged: the tree moved while the candidate arm ran: ")
            && stderr.contains(".hidden"),
        "{out}"
    );
}

#[test]
fn a_difference_that_stops_showing_midway_ends_with_the_best_so_far_and_why() {
    let dir = temp_dir();
    let counter = counter_file(dir.path());
    let when = format!(
        "n=$(cat {counter} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {counter}; [ $n -le 6 ]"
    );
    let cand = candidate(dir.path(), &when);
    let out_dir = dir.path().join("out");
    let out = shrink_walk(&["--tree", "basic", "--set", "-a"], &cand, &out_dir);
    assert_exit(&out, 1);
    let report = shrink_report(&out_dir, &out);
    let stopped = report["stopped"].as_str().unwrap_or_default();
    assert!(stopped.contains("stopped showing"), "{out}");
    assert_eq!(report["reproduced"], false, "{out}");
    assert!(out_dir.join("shrunk.tree").is_file(), "{out}");
}

/// A candidate that marks its stdout when the trigger is there, and otherwise
/// fails with a line on stderr: a difference of another kind.
fn two_way_candidate(dir: &Path) -> (String, String) {
    let spec = written(
        dir,
        "two.tree",
        "generate files pkg count=200 size=0..2K\nfile deep/er/trigger size=10 mode=0444\n",
    );
    let eq = shell_words::quote(&eqcheck().to_string_lossy()).into_owned();
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo candidate 1; exit 0; }}\n\
         for tree; do :; done\n\
         if [ -n \"$(find \"$tree\" -name trigger -perm 0444 -print 2>/dev/null)\" ]; then\n\
         {eq} walk \"$@\" | sed '1s/^/X/'\nelse\n{eq} walk \"$@\"; echo 'cand: lost' >&2; exit 1\nfi\n"
    );
    let cand = written(dir, "candidate", &script);
    crate::util::set_mode(Path::new(&cand), 0o755);
    (spec, cand)
}

#[test]
fn a_difference_of_another_kind_is_not_followed_unless_any_difference_is_asked() {
    let dir = temp_dir();
    let (spec, cand) = two_way_candidate(dir.path());
    let shrink = |out_dir: &Path, extra: &[&str]| {
        let mut args = vec!["shrink", "--tree", &spec, "--set", "-a", "--ref"];
        let (reference, out) = (reference(), out_dir.to_string_lossy().into_owned());
        args.extend([
            reference.as_str(),
            "--cand",
            &cand,
            "--flagsets",
            "walk",
            "--out",
            &out,
        ]);
        args.extend(extra);
        let out = run(args);
        assert_exit(&out, 0);
        std::fs::read_to_string(out_dir.join("shrunk.tree")).unwrap()
    };
    let same = shrink(&dir.path().join("same"), &[]);
    assert!(same.contains("trigger"), "the cause was lost:\n{same}");
    let any = shrink(&dir.path().join("any"), &["--any-difference"]);
    assert!(
        !any.contains("trigger"),
        "--any-difference kept what it need not:\n{any}"
    );
}

#[test]
fn a_result_that_does_not_hold_on_a_fresh_build_is_said_so() {
    let dir = temp_dir();
    // Past 4 KiB a file's contents are not written into the spec: the marker at
    // its end is lost on a fresh build, and cutting the file loses it too.
    let text = format!("{}MAGIC\n", "a".repeat(6000));
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("big.txt"), text).unwrap();
    std::fs::write(tree.join("small.txt"), "b").unwrap();
    let cand = candidate(dir.path(), "grep -rq MAGIC \"$tree\"");
    let out_dir = dir.path().join("out");
    let out = shrink_walk(
        &["--tree", &tree.to_string_lossy(), "--set", "-a"],
        &cand,
        &out_dir,
    );
    assert_exit(&out, 1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("did NOT differ the same way"), "{out}");
    assert!(stdout.contains("contents not kept"), "{out}");
}

#[test]
fn a_walker_that_prints_the_root_folder_name_still_reproduces_on_a_fresh_build() {
    let dir = temp_dir();
    let tree = folder_with_trigger(dir.path(), "a");
    // Both print the tree root's own name, as dust does; the candidate marks it
    // when the trigger is there.
    let script = |name: &str, mark: &str| {
        let text = format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo {name} 1; exit 0; }}\n\
             for tree; do :; done\nm=''\n\
             [ -n \"$(find \"$tree\" -name trigger -perm 0444 -print)\" ] && m='{mark}'\n\
             echo \"$(basename \"$tree\") 3$m\"\n"
        );
        let path = written(dir.path(), name, &text);
        crate::util::set_mode(Path::new(&path), 0o755);
        path
    };
    let (reference, cand) = (script("reference", ""), script("candidate", " X"));
    let out_dir = dir.path().join("out");
    let out = run([
        "shrink",
        "--tree",
        &tree.to_string_lossy(),
        "--set",
        "(none)",
        "--ref",
        &reference,
        "--cand",
        &cand,
        "--flagsets",
        "walk",
        "--out",
        &out_dir.to_string_lossy(),
    ]);
    assert_exit(&out, 0);
    let spec = std::fs::read_to_string(out_dir.join("shrunk.tree")).unwrap();
    assert!(spec.contains("trigger"), "{spec}");
}

#[test]
fn a_folder_time_the_difference_needs_survives_the_trials_around_it() {
    let dir = temp_dir();
    let spec = written(
        dir.path(),
        "timed.tree",
        "dir old mtime=@1000000000\nfile old/x\nfile old/y\ngenerate files other count=40\n",
    );
    // Differs only while the folder `old` keeps its time from 2001.
    let when = "[ -n \"$(find \"$tree\" -maxdepth 1 -name old ! -newermt 2005-01-01)\" ]";
    let cand = candidate(dir.path(), when);
    let out_dir = dir.path().join("out");
    let out = shrink_walk(&["--tree", &spec, "--set", "-a"], &cand, &out_dir);
    assert_exit(&out, 0);
    let spec = std::fs::read_to_string(out_dir.join("shrunk.tree")).unwrap();
    let entries = entry_lines(&spec);
    assert_eq!(entries.len(), 1, "{spec}");
    assert!(
        entries[0].starts_with("dir ") && entries[0].contains("mtime=@1000000000"),
        "{spec}"
    );
}

#[test]
fn an_arm_that_changes_the_tree_stops_the_shrink_with_the_best_result_before_it() {
    let dir = temp_dir();
    let eq = shell_words::quote(&eqcheck().to_string_lossy()).into_owned();
    // Without -b in its words the candidate writes into the tree.
    let script = format!(
        "#!/bin/sh\n[ \"$1\" = --version ] && {{ echo c 1; exit 0; }}\nfor tree; do :; done\n\
         case \" $* \" in *' -b '*) ;; *) touch \"$tree/junk\";; esac\n\
         {eq} walk \"$@\" | sed '1s/^/X/'\n"
    );
    let cand = written(dir.path(), "candidate", &script);
    crate::util::set_mode(Path::new(&cand), 0o755);
    let out_dir = dir.path().join("out");
    let mut args = vec![
        "shrink".to_string(),
        "basic:sizes:-a -b".into(),
        "--ref".into(),
        reference(),
        "--cand".into(),
        cand,
        "--out".into(),
        out_dir.to_string_lossy().into_owned(),
    ];
    args.extend(crate::util::as_root().iter().map(|s| s.to_string()));
    let out = run(&args);
    let report = shrink_report(&out_dir, &out);
    let stopped = report["stopped"].as_str().unwrap_or_default();
    assert!(stopped.contains("an arm changed the tree"), "{out}");
    let spec = std::fs::read_to_string(out_dir.join("shrunk.tree")).unwrap();
    assert!(
        !spec.contains("junk"),
        "what the arm wrote became part of the result:\n{spec}"
    );
    assert_eq!(
        report["set_after"],
        serde_json::json!(["-a", "-b"]),
        "{out}"
    );
}

#[test]
fn results_of_an_earlier_shrink_are_never_read_and_out_may_not_be_inside_the_tree() {
    let dir = temp_dir();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    std::fs::write(out_dir.join("shrunk.tree"), "file stale\n").unwrap();
    let out = run([
        "shrink",
        "basic:sizes:-a",
        "--out",
        &out_dir.to_string_lossy(),
    ]);
    assert_exit(&out, 2);
    assert!(
        !out_dir.join("shrunk.tree").exists(),
        "an old result was left\n{out}"
    );
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("f"), "x").unwrap();
    let inside = tree.join("shrunk").to_string_lossy().into_owned();
    let out = run([
        "shrink",
        "--tree",
        &tree.to_string_lossy(),
        "--set",
        "-a",
        "--flagsets",
        "walk",
        "--out",
        &inside,
    ]);
    assert_exit(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is inside the tree"),
        "{out}"
    );
    assert!(
        !tree.join("shrunk").exists(),
        "the tree was written to\n{out}"
    );
}
