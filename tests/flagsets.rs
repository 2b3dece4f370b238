//! The built-in flag-set files for third-party walkers, end to end: GNU du and GNU
//! find accept every set of theirs and, run against themselves on the small tree,
//! come out equal; find's lines in another order are order-only, and dust's
//! permission-list rule turns a list printed in hash order into an order-only
//! verdict.

use std::ffi::OsStr;

use crate::util::{
    assert_exit, double, eqcheck, json_report, report_cases, skip_unless, temp_dir, Capability,
    Cmd, Output, DOUBLE_PATH,
};

/// Runs eqcheck from a fresh 0755 folder: run as root, eqcheck runs the arms as
/// an unprivileged user in its own folder, and find stops with exit 1 where it
/// cannot return to its starting folder (a checkout only root may enter).
fn run<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(args: I) -> Output {
    let folder = temp_dir();
    Cmd::new(eqcheck()).cwd(folder.path()).args(args).output()
}

/// `--as-root` when eqcheck runs as root and `program` lies where the unprivileged
/// user the arms would run as cannot reach it (a build folder only root may enter).
/// Only for programs that read no tree, so root hides nothing.
fn root_if_unreachable(program: &str) -> Option<&'static str> {
    #[cfg(unix)]
    if crate::util::is_root() && !crate::util::reachable_by_others(program.as_ref()) {
        return Some("--as-root");
    }
    #[cfg(not(unix))]
    let _ = program;
    None
}

fn verdict(case: &serde_json::Value) -> &str {
    case["verdict"]["kind"].as_str().expect("a verdict")
}

/// The reference arm's exit code (None when it did not exit).
fn exit_code(case: &serde_json::Value) -> Option<i64> {
    let status = &case["reference"]["status"];
    (status["kind"] == "exited").then(|| status["code"].as_i64().expect("a code"))
}

/// The names of the rules that fired in a case.
fn fired(case: &serde_json::Value) -> Vec<&str> {
    case["fired"]
        .as_array()
        .expect("fired")
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect()
}

/// Runs the program against itself with its built-in flag sets on `basic`.
fn against_itself(program: &str) -> (Output, serde_json::Value) {
    let out = run([
        "--ref",
        program,
        "--cand",
        program,
        "--flagsets",
        program,
        "--tree",
        "basic",
        "--json",
        "-",
    ]);
    let report = json_report(&out);
    (out, report)
}

/// The group names of a built-in flag-set file.
fn groups_of(name: &str) -> Vec<String> {
    eqcheck::flagset::builtin(name)
        .expect("built in")
        .groups
        .iter()
        .map(|g| g.name.clone())
        .collect()
}

#[test]
fn gnu_du_against_itself_is_identical_with_every_du_set() {
    if skip_unless(Capability::GnuDu) {
        return;
    }
    let (out, report) = against_itself("du");
    assert_exit(&out, 0);
    let cases = report_cases(&report, &out);
    assert!(cases.len() >= 25, "only {} cases\n{out}", cases.len());
    assert!(cases.iter().all(|c| verdict(c) == "identical"), "{out}");
    // du takes every set (a usage error would exit 1 on both sides alike); only
    // `-L` exits 1, for the dangling link it then cannot size.
    for case in cases {
        let follows = case["set"].as_str().unwrap().split(' ').any(|w| w == "-L");
        assert_eq!(exit_code(case), Some(i64::from(follows)), "{case}\n{out}");
    }
    for group in groups_of("du") {
        assert!(
            cases.iter().any(|c| c["group"] == group.as_str()),
            "no case of group {group}\n{out}"
        );
    }
    // The tree goes last, after the set.
    let argv = cases[0]["reference"]["argv"].as_array().unwrap();
    assert_eq!(argv.last(), Some(&report["trees"][0]["path"]), "{out}");
}

#[test]
fn gnu_find_against_itself_is_equal_with_every_find_set() {
    if skip_unless(Capability::GnuFind) {
        return;
    }
    let (out, report) = against_itself("find");
    assert_exit(&out, 0);
    let cases = report_cases(&report, &out);
    assert!(cases.len() >= 20, "only {} cases\n{out}", cases.len());
    assert!(
        cases
            .iter()
            .all(|c| matches!(verdict(c), "identical" | "order-only")),
        "{out}"
    );
    // find takes every set: an unknown predicate would exit 1 on both sides alike.
    assert!(cases.iter().all(|c| exit_code(c) == Some(0)), "{out}");
    for group in groups_of("find") {
        assert!(
            cases.iter().any(|c| c["group"] == group.as_str()),
            "no case of group {group}\n{out}"
        );
    }
    // find takes the tree first, before the expression, and only there.
    let tree = &report["trees"][0]["path"];
    for case in cases {
        let argv = case["reference"]["argv"].as_array().unwrap();
        assert_eq!(&argv[1], tree, "{case}");
        assert_eq!(argv.iter().filter(|a| *a == tree).count(), 1, "{case}");
    }
}

#[test]
fn finds_lines_in_another_order_are_order_only() {
    if skip_unless(Capability::GnuFind) {
        return;
    }
    // The candidate is find with its lines reversed, keeping find's exit status.
    let reversed = "bash -c 'set -o pipefail; find \"$@\" | tac' find";
    let out = run([
        "--ref",
        "find",
        "--cand",
        reversed,
        "--flagsets",
        "find",
        "--tree",
        "basic",
        "--json",
        "-",
    ]);
    assert_exit(&out, 0);
    let report = json_report(&out);
    let cases = report_cases(&report, &out);
    assert!(
        cases
            .iter()
            .all(|c| matches!(verdict(c), "identical" | "order-only")),
        "{out}"
    );
    // Listings of one line or none read the same reversed; the rest must lean on
    // the line-order rule alone.
    let order_only: Vec<&serde_json::Value> = cases
        .iter()
        .filter(|c| verdict(c) == "order-only")
        .collect();
    assert!(order_only.len() >= 20, "{out}");
    assert!(
        order_only.iter().all(|c| fired(c)
            .into_iter()
            .all(|r| r == "line-order" || r == "tree-root")),
        "{out}"
    );
}

#[test]
fn dusts_permission_list_in_hash_order_is_order_only() {
    // Twelve items in an order that changes from run to run, on stderr, as dust
    // prints the folders it could not read; the two arms all but surely disagree.
    let lister = double("items 12 ', ' 'Did not have permissions for directories: ' --stderr");
    let args = [
        "--ref",
        &lister,
        "--cand",
        &lister,
        "--flagsets",
        "dust",
        "--sets",
        "errors",
        "--tree",
        "basic",
        "--json",
        "-",
    ];
    let out = run(args.into_iter().chain(root_if_unreachable(DOUBLE_PATH)));
    assert_exit(&out, 0);
    let report = json_report(&out);
    let case = &report_cases(&report, &out)[0];
    assert_eq!(verdict(case), "order-only", "{out}");
    assert_eq!(fired(case), ["permission-list"], "{out}");
}

/// A bare word is a group or a built-in name, whatever the working folder holds:
/// a file called `all` (the default sets) or `output` (a group), or a program
/// called `du`, takes over nothing. A folder part names a file, and a bare word
/// that names no group but a file there says how to name the file.
#[test]
fn a_bare_name_stays_a_name_whatever_the_working_folder_holds() {
    let folder = temp_dir();
    for name in ["all", "output", "du", "notes"] {
        std::fs::write(folder.path().join(name), b"not a flag-set file\n").unwrap();
    }
    std::fs::create_dir(folder.path().join("fs")).unwrap();
    let eqcheck_here = |more: &[&str]| {
        let arms = ["--ref", "du", "--cand", "du", "--tree", "basic"];
        Cmd::new(eqcheck())
            .cwd(folder.path())
            .args(arms.iter().chain(more))
            .output()
    };
    assert_exit(&eqcheck_here(&["--flagsets", "du"]), 0);
    assert_exit(&eqcheck_here(&["--flagsets", "du", "--sets", "output"]), 0);
    let refused = |more: &[&str], says: &str| {
        let out = eqcheck_here(more);
        assert_exit(&out, 2);
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(text.contains(says), "expected {says:?}\n{out}");
    };
    refused(&["--sets", "./output"], "output:1:");
    refused(
        &["--flagsets", "du", "--sets", "notes"],
        "write it with its folder: ./notes",
    );
    refused(&["--flagsets", "fs"], "not a regular file, but a folder");
}
