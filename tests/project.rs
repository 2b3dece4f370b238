//! `eqcheck.toml` end to end: the config in the working folder picks the arms, flag
//! sets, trees and environment; the command line overrides it; `--no-config` ignores
//! it and parent folders are never searched; a malformed file, or a program, tree
//! or flag-set file it names that the run would use but cannot find or load, stops
//! the run with exit 2 at its line and column; a file named by `--config` has its
//! paths start at its own folder.

use std::fs;
use std::path::Path;

use crate::util::{
    assert_exit, double, eqcheck, json_report, report_cases, temp_dir, Cmd, Output, DOUBLE_PATH,
};

/// An arm's command line as a TOML string, for the config's `reference` and
/// `candidate`.
fn toml_string(command: &str) -> String {
    format!("{command:?}")
}

/// Arms that print different words: a run that uses them differs in every case,
/// where eqcheck's own engines, used without the file, are identical.
fn differing_arms() -> String {
    format!(
        "reference = {}\ncandidate = {}\nsets = \"depth\"\n",
        toml_string(&double("print same")),
        toml_string(&double("print other")),
    )
}

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    fs::create_dir_all(path.parent().expect("a folder")).expect("make the folder");
    fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

fn eqcheck_in(dir: &Path, args: &[&str]) -> Output {
    Cmd::new(eqcheck()).cwd(dir).args(args).output()
}

/// Each case's flag-set group, in report order.
fn groups(out: &Output) -> Vec<String> {
    report_cases(&json_report(out), out)
        .iter()
        .map(|c| c["group"].as_str().expect("a group").to_string())
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_configs_arms_and_sets_are_used() {
    let dir = temp_dir();
    write(dir.path(), "eqcheck.toml", &differing_arms());
    let out = eqcheck_in(dir.path(), &["--tree", "basic", "--json", "-"]);
    assert_exit(&out, 1);
    let report = json_report(&out);
    assert_eq!(report["reference"]["command"][0], DOUBLE_PATH, "{out}");
    assert!(groups(&out).iter().all(|g| g == "depth"), "{out}");
    assert_eq!(report["config"], "eqcheck.toml", "{out}");
    assert!(stderr(&out).contains("\nconfig: eqcheck.toml\n"), "{out}");
}

#[test]
fn a_command_line_sets_overrides_the_configs() {
    let dir = temp_dir();
    write(dir.path(), "eqcheck.toml", &differing_arms());
    let out = eqcheck_in(
        dir.path(),
        &["--tree", "basic", "--sets", "sizes", "--json", "-"],
    );
    assert_exit(&out, 1);
    assert!(groups(&out).iter().all(|g| g == "sizes"), "{out}");
}

#[test]
fn cand_alone_replaces_only_the_configs_candidate() {
    let dir = temp_dir();
    write(dir.path(), "eqcheck.toml", &differing_arms());
    let candidate = double("print same");
    let out = eqcheck_in(dir.path(), &["--tree", "basic", "--cand", &candidate]);
    // The file's reference prints `same` too: every case is identical.
    assert_exit(&out, 0);
}

#[test]
fn no_config_ignores_the_file() {
    let dir = temp_dir();
    write(dir.path(), "eqcheck.toml", &differing_arms());
    let args = [
        "--no-config",
        "--tree",
        "basic",
        "--sets",
        "depth",
        "--json",
        "-",
    ];
    let out = eqcheck_in(dir.path(), &args);
    // eqcheck's own engines, which agree.
    assert_exit(&out, 0);
    assert_eq!(
        json_report(&out)["reference"]["command"][1],
        "walk",
        "{out}"
    );
    assert!(!stderr(&out).contains("config:"), "{out}");
}

#[test]
fn only_the_working_folder_is_searched() {
    let dir = temp_dir();
    write(dir.path(), "eqcheck.toml", &differing_arms());
    let below = dir.path().join("below");
    fs::create_dir(&below).expect("make a subfolder");
    let out = eqcheck_in(&below, &["--tree", "basic", "--sets", "depth"]);
    assert_exit(&out, 0);
    assert!(!stderr(&out).contains("config:"), "{out}");
}

#[test]
fn a_malformed_config_stops_the_run_at_its_line_and_column() {
    let cases = [
        (
            "sets = \"depth\"\nruns = \"two\"\n",
            "eqcheck.toml:2:8: runs: invalid type",
        ),
        (
            "\n\ncolour = 1\n",
            "eqcheck.toml:3:1: unknown key `colour`; known keys:",
        ),
        (
            "runs = 0\n",
            "eqcheck.toml:1:8: runs: must be from 1 to 1000, not 0",
        ),
        (
            "trees = [\"basic\"\n",
            "eqcheck.toml:1:17: trees: unclosed array",
        ),
    ];
    for (text, expected) in cases {
        let dir = temp_dir();
        write(dir.path(), "eqcheck.toml", text);
        let out = eqcheck_in(dir.path(), &["--tree", "basic"]);
        assert_exit(&out, 2);
        assert!(
            stderr(&out).contains(expected),
            "expected {expected:?}\n{out}"
        );
        assert!(out.stdout.is_empty(), "{out}");
    }
}

#[cfg(unix)]
#[test]
fn env_from_the_config_reaches_the_arms_over_the_pinned_one() {
    // `TZ` is pinned to UTC0 for every arm; the file's value must win.
    let text = format!(
        "reference = {:?}\ncandidate = {}\nsets = \"depth\"\n[env]\nEQC_FROM_FILE = \"from the file\"\nTZ = \"EST5\"\n",
        "sh -c 'echo \"$EQC_FROM_FILE $TZ\"'",
        toml_string(&double("print 'from the file EST5\\n'")),
    );
    let dir = temp_dir();
    write(dir.path(), "eqcheck.toml", &text);
    let out = eqcheck_in(dir.path(), &["--tree", "basic"]);
    assert_exit(&out, 0);
}

#[test]
fn a_named_configs_paths_start_at_its_folder() {
    let dir = temp_dir();
    let config = "flagsets = \"mine.sets\"\ntrees = [\"web\"]\n";
    write(dir.path(), "proj/eqcheck.toml", config);
    write(dir.path(), "proj/mine.sets", "[only]\n-a\n");
    write(dir.path(), "proj/web/page.html", "<p>hello</p>\n");
    let args = ["--config", "proj/eqcheck.toml", "--json", "-"];
    let out = eqcheck_in(dir.path(), &args);
    assert_exit(&out, 0);
    let report = json_report(&out);
    assert_eq!(report["trees"][0]["name"], "proj/web", "{out}");
    assert_eq!(report["flag_sets"], "proj/mine.sets", "{out}");
    assert_eq!(groups(&out), ["only"], "{out}");
    assert_eq!(report["config"], "proj/eqcheck.toml", "{out}");
}

/// A config whose first line is `line`, then working arms and a tree for the keys
/// `line` does not set.
fn config_with(line: &str) -> String {
    let defaults = [
        ("reference", toml_string(&double("print same"))),
        ("candidate", toml_string(&double("print same"))),
        ("trees", "[\"basic\"]".to_string()),
    ];
    let mut text = format!("{line}\n");
    for (key, value) in defaults {
        if !line.starts_with(&format!("{key} ")) {
            text += &format!("{key} = {value}\n");
        }
    }
    text
}

#[test]
fn a_configs_value_that_names_nothing_is_reported_at_its_place() {
    let cases = [
        (
            "reference = \"bin/nope -x\"",
            "eqcheck.toml:1:13: reference: program `bin/nope` does not exist (or is not a file)",
        ),
        (
            "candidate = \"no-such-walker-here\"",
            "eqcheck.toml:1:13: candidate: program `no-such-walker-here` not found on PATH",
        ),
        (
            "trees = [\"basic\", \"nosuchtree\"]",
            "eqcheck.toml:1:19: trees: unknown tree `nosuchtree` (known: ",
        ),
        (
            "trees = [\"/\"]",
            "eqcheck.toml:1:10: trees: /: the temp folder ",
        ),
        (
            "trees = [\"missing.tree\"]",
            "eqcheck.toml:1:10: trees: cannot read tree spec missing.tree: ",
        ),
        (
            "trees = [\"bad.tree\"]",
            "eqcheck.toml:1:10: trees: bad.tree:2: unknown entry kind `folder`",
        ),
        (
            "flagsets = \"missing.sets\"",
            "eqcheck.toml:1:12: flagsets: cannot read flag-set file missing.sets: ",
        ),
        (
            "flagsets = \"bad.sets\"",
            "eqcheck.toml:1:12: flagsets: bad.sets:2: bad header `[]`",
        ),
        (
            "flagsets = \"dusst\"",
            "eqcheck.toml:1:12: flagsets: `dusst`: no such file, and no built-in flag sets \
             of that name (walk, dust, du, find)",
        ),
        (
            "sets = \"missing.sets\"",
            "eqcheck.toml:1:8: sets: cannot read flag-set file missing.sets: ",
        ),
    ];
    for (line, expected) in cases {
        let dir = temp_dir();
        write(dir.path(), "eqcheck.toml", &config_with(line));
        write(dir.path(), "bad.tree", "dir a\nfolder b\n");
        write(dir.path(), "bad.sets", "[only]\n[]\n");
        let out = eqcheck_in(dir.path(), &[]);
        assert_exit(&out, 2);
        assert!(
            stderr(&out).contains(expected),
            "expected {expected:?}\n{out}"
        );
        assert!(out.stdout.is_empty(), "{out}");
    }
    // A named config's paths start at its folder, and the message names them so.
    let dir = temp_dir();
    write(
        dir.path(),
        "proj/eqcheck.toml",
        &config_with("reference = \"bin/nope\""),
    );
    let out = eqcheck_in(dir.path(), &["--config", "proj/eqcheck.toml"]);
    assert_exit(&out, 2);
    let expected = "proj/eqcheck.toml:1:13: reference: program `proj/bin/nope` does not exist";
    assert!(stderr(&out).contains(expected), "{out}");
}

#[test]
fn a_group_the_configs_sets_names_but_the_flag_set_file_lacks_is_reported_at_sets() {
    let dir = temp_dir();
    write(
        dir.path(),
        "eqcheck.toml",
        &config_with("sets = \"depth,nosuch\""),
    );
    let out = eqcheck_in(dir.path(), &[]);
    assert_exit(&out, 2);
    let expected = "eqcheck.toml:1:8: sets: flagsets/walk.sets: no group `nosuch` (groups: ";
    assert!(stderr(&out).contains(expected), "{out}");
    // A group given on the command line is named by its flag.
    let out = eqcheck_in(dir.path(), &["--sets", "nosuch"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).starts_with("eqcheck: --sets: flagsets/walk.sets: no group `nosuch`"),
        "{out}"
    );
}

#[test]
fn a_configs_value_the_command_line_replaces_is_not_checked() {
    let dir = temp_dir();
    let text = format!(
        "reference = {}\ncandidate = \"bin/not-built-yet\"\ntrees = [\"nosuchtree\"]\nflagsets = \"missing.sets\"\n",
        toml_string(&double("print same")),
    );
    write(dir.path(), "eqcheck.toml", &text);
    write(dir.path(), "mine.sets", "[only]\n(none)\n");
    let args = ["--self-check", "--tree", "basic", "--flagsets", "mine.sets"];
    let out = eqcheck_in(dir.path(), &args);
    assert_exit(&out, 0);
}

#[test]
fn a_bad_value_on_the_command_line_is_named_by_its_flag() {
    let dir = temp_dir();
    write(dir.path(), "eqcheck.toml", &config_with("sets = \"depth\""));
    let out = eqcheck_in(dir.path(), &["--tree", "nosuchtree"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).starts_with("eqcheck: --tree: unknown tree `nosuchtree` (known: "),
        "{out}"
    );
    let out = eqcheck_in(dir.path(), &["--ref", "bin/nope"]);
    assert_exit(&out, 2);
    let expected = "eqcheck: --ref: program `bin/nope` does not exist";
    assert!(stderr(&out).starts_with(expected), "{out}");
}

#[cfg(unix)]
#[test]
fn a_config_tree_the_arm_user_cannot_reach_is_reported_at_its_place() {
    // As root the arms run as an unprivileged user; a tree they may not list is
    // refused at the config's line, not as if `--tree` had named it.
    use crate::util::{skip_unless, Capability};
    let dir = temp_dir();
    if skip_unless(Capability::Root) || skip_unless(Capability::OthersCanReach(dir.path())) {
        return;
    }
    write(dir.path(), "private/a", "x\n");
    crate::util::set_mode(&dir.path().join("private"), 0o700);
    write(
        dir.path(),
        "eqcheck.toml",
        &config_with("trees = [\"private\"]"),
    );
    let out = eqcheck_in(dir.path(), &[]);
    assert_exit(&out, 2);
    let expected = "eqcheck.toml:1:10: trees: ";
    assert!(
        stderr(&out).contains(expected),
        "expected {expected:?}\n{out}"
    );
    assert!(stderr(&out).contains("may not list"), "{out}");
}
