//! Arms run under a runner (`--ref-runner`, `--cand-runner`, `--same-runner`, and
//! the same keys in eqcheck.toml): the runner really runs the program, the report
//! and the repro line name it, sharing it cancels what it adds, and a runner that
//! cannot be used is a usage error at the place it was given.

use crate::run::{eqcheck_walk, run_pair};
use crate::util::{assert_exit, json_report, report_cases, run, temp_dir, written};

/// A runner that says so on stdout before it runs the program it is given.
const ANNOUNCING: &str = r#"sh -c 'echo under-the-runner; exec "$@"' runner"#;

#[test]
fn a_candidate_runner_runs_the_candidate_and_is_named_in_the_report_and_repro() {
    let walk = eqcheck_walk("reference");
    let out = run_pair(
        &walk,
        &walk,
        &[
            "--sets",
            "depth",
            "--cand-runner",
            ANNOUNCING,
            "--json",
            "-",
        ],
    );
    // The runner's line is the candidate's only difference.
    assert_exit(&out, 1);
    let report = json_report(&out);
    let runner = report["candidate"]["runner"]
        .as_array()
        .expect("the runner");
    assert!(runner[0].as_str().unwrap().ends_with("/sh"), "{out}");
    assert!(report["reference"]["runner"].is_null(), "{out}");
    for case in report_cases(&report, &out) {
        assert_eq!(case["verdict"]["kind"], "differs", "{out}");
        let repro = case["candidate"]["repro"].as_str().unwrap();
        assert!(repro.contains("echo under-the-runner"), "{repro}");
        let argv: Vec<&str> = (case["candidate"]["argv"].as_array().unwrap().iter())
            .map(|w| w.as_str().unwrap())
            .collect();
        assert!(
            argv[0].ends_with("/sh") && argv[4].ends_with("/eqcheck"),
            "{argv:?}"
        );
    }
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("  run under: "), "{out}");
}

#[test]
fn the_same_runner_for_both_arms_cancels_what_it_adds() {
    let walk = eqcheck_walk("reference");
    let out = run_pair(
        &walk,
        &walk,
        &[
            "--sets",
            "depth",
            "--cand-runner",
            ANNOUNCING,
            "--same-runner",
            "--json",
            "-",
        ],
    );
    assert_exit(&out, 0);
    let report = json_report(&out);
    assert_eq!(
        report["reference"]["runner"], report["candidate"]["runner"],
        "{out}"
    );
    assert!(!report["reference"]["runner"].is_null(), "{out}");
}

#[test]
fn a_runner_that_cannot_be_used_is_a_usage_error_where_it_was_given() {
    let walk = eqcheck_walk("reference");
    let refused = |args: &[&str], says: &str| {
        let out = run_pair(&walk, &walk, args);
        assert_exit(&out, 2);
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(text.contains(says), "expected {says:?}\n{out}");
    };
    refused(
        &["--cand-runner", "no-such-runner-anywhere"],
        "--cand-runner: program `no-such-runner-anywhere` not found on PATH",
    );
    refused(
        &["--same-runner"],
        "--same-runner: there is no candidate runner to share",
    );
    let dir = temp_dir();
    written(
        dir.path(),
        "eqcheck.toml",
        "same_runner = true\ncand_runner = \"env\"\nref_runner = \"env\"\n",
    );
    let config = dir.path().join("eqcheck.toml");
    let out = run([
        "--config",
        &config.to_string_lossy(),
        "--ref",
        &walk,
        "--cand",
        &walk,
        "--tree",
        "basic",
    ]);
    assert_exit(&out, 2);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains(
            "eqcheck.toml:1:15: same_runner: runs the reference under the candidate's runner"
        ),
        "{out}"
    );
}
