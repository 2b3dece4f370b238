//! `eqcheck.toml` end to end: the config in the working folder picks the arms, flag
//! sets, trees and environment; the command line overrides it; `--no-config` ignores
//! it and parent folders are never searched; a malformed file stops the run with
//! exit 2 at its line and column; a file named by `--config` has its paths start at
//! its own folder.

use std::fs;
use std::path::Path;

use crate::util::{assert_exit, eqcheck, temp_dir, Cmd, Output};

/// The test double built beside eqcheck (tests/support/double.rs).
fn double() -> String {
    env!("CARGO_BIN_EXE_eqcheck-double").to_string()
}

/// A command line as a TOML string: the program shell-quoted, as `--ref` takes it.
fn command(program: &str, rest: &str) -> String {
    format!("{:?}", format!("{} {rest}", shell_words::quote(program)))
}

/// Arms that print different words: a run that uses them differs in every case,
/// where eqcheck's own engines, used without the file, are identical.
fn differing_arms() -> String {
    format!(
        "reference = {}\ncandidate = {}\nsets = \"depth\"\n",
        command(&double(), "print same"),
        command(&double(), "print other"),
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

fn json_report(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON: {e}\n{out}"))
}

/// Each case's flag-set group, in report order.
fn groups(out: &Output) -> Vec<String> {
    let report = json_report(out);
    let cases = report["cases"].as_array().expect("cases").clone();
    assert!(!cases.is_empty(), "no cases\n{out}");
    cases
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
    assert_eq!(report["reference"]["command"][0], double(), "{out}");
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
    let candidate = format!("{} print same", shell_words::quote(&double()));
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
            "eqcheck.toml:2:8: invalid type",
        ),
        (
            "\n\ncolour = 1\n",
            "eqcheck.toml:3:1: unknown key `colour`; known keys:",
        ),
        ("runs = 0\n", "eqcheck.toml:1:8: `runs` must be at least 1"),
        ("trees = [\"basic\"\n", "eqcheck.toml:1:17: unclosed array"),
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
        command(&double(), "print 'from the file EST5\\n'"),
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
