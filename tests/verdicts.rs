//! Every verdict `eqcheck run` can give, reached end to end through the built binary
//! with the test double as both arms and a one-set flag-set file per test: identical,
//! order-only, equal after normalization, differs (on the exit status and on a
//! stream), flaky under `--runs`, error (a timeout, a SIGKILL, and rules caught
//! hiding a difference by the trust check), a mask refused when its file loads, the
//! audit of rules that never fired, and `--self-check`. Each test checks the JSON
//! report and the exit code (0, 1, 2 or 3) that goes with the verdict.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::util::{
    assert_exit, double, json_report, report_cases, run, set_mode, temp_dir, Output,
};

/// A flag-set file with one group `only` holding the empty set, then `rules`
/// (`[rule NAME]` sections). The tree is not put on the arms' command lines: the
/// double does not walk it, and `drop-every` would print its path as a line.
pub(crate) fn one_set_file(dir: &Path, rules: &str) -> PathBuf {
    let file = dir.join("one.sets");
    let text =
        format!("description = one set for the verdict tests\noperand =\n[only]\n(none)\n{rules}");
    std::fs::write(&file, text).expect("the flag-set file can be written");
    file
}

/// The line of `file` that starts with `start`, counted from 1.
pub(crate) fn line_of(file: &Path, start: &str) -> usize {
    let text = std::fs::read_to_string(file).expect("the flag-set file reads");
    1 + text
        .lines()
        .position(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting with `{start}` in {text}"))
}

/// A run counter for `drop-every`, outside the tree, starting at zero and writable
/// by the unprivileged user the arms run as when the tests run as root.
fn counter_file(dir: &Path, name: &str) -> String {
    let file = dir.join(name);
    std::fs::write(&file, "0\n").expect("the counter can be written");
    set_mode(&file, 0o666);
    file.to_string_lossy().into_owned()
}

/// Runs the two arms over the `basic` tree with the flag-set file, its one case at
/// a time, the JSON report on stdout and the text report on stderr.
pub(crate) fn run_sets(reference: &str, candidate: &str, sets: &Path, rest: &[&str]) -> Output {
    let sets = sets.to_string_lossy();
    let mut args = vec![
        "--ref", reference, "--cand", candidate, "--tree", "basic", "--sets", &sets, "-j", "1",
        "--json", "-",
    ];
    args.extend_from_slice(rest);
    run(args)
}

/// The report's only case.
pub(crate) fn only_case(report: &Value, out: &Output) -> Value {
    let cases = report_cases(report, out);
    assert_eq!(cases.len(), 1, "one case expected\n{out}");
    cases[0].clone()
}

/// The case's result for one stream (`stdout`, `stderr`, `status`).
fn stream<'a>(case: &'a Value, name: &str) -> &'a Value {
    case["streams"]
        .as_array()
        .expect("streams")
        .iter()
        .find(|s| s["stream"] == name)
        .unwrap_or_else(|| panic!("no {name} stream in {case:#}"))
}

pub(crate) fn text_report(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The run numbers of each variant of a flaky arm, in the report's order.
fn variant_runs(arm: &Value) -> Vec<Vec<u64>> {
    arm["variants"]
        .as_array()
        .expect("variants")
        .iter()
        .map(|v| {
            v["runs"]
                .as_array()
                .expect("runs")
                .iter()
                .map(|r| r.as_u64().expect("a run number"))
                .collect()
        })
        .collect()
}

#[test]
fn equal_outputs_are_identical_and_exit_0() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    let printer = double("print 'a\\nb\\n'");
    let out = run_sets(&printer, &printer, &sets, &[]);
    assert_exit(&out, 0);
    let report = json_report(&out);
    let case = only_case(&report, &out);
    assert_eq!(case["verdict"]["kind"], "identical", "{out}");
    for name in ["stdout", "stderr", "status"] {
        assert_eq!(stream(&case, name)["verdict"], "identical", "{out}");
    }
    assert_eq!(case["fired"], serde_json::json!([]), "{out}");
}

/// dust prints the folders it could not read from a hash set, so their order
/// changes from run to run; a sort-items rule makes that order-only.
const PERMISSION_LIST: &str = "[rule permission-list]
kind = sort-items
stream = stderr
pattern = ^Did not have permissions for directories: (?P<items>.+)$
separator = \", \"
";

fn permission_list_arm() -> String {
    // Twelve items: two runs print them in the same order once in 479,001,600.
    double("items 12 ', ' 'Did not have permissions for directories: ' --stderr")
}

#[test]
fn a_list_in_another_order_is_order_only_and_names_the_rule() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), PERMISSION_LIST);
    let arm = permission_list_arm();
    let out = run_sets(&arm, &arm, &sets, &[]);
    assert_exit(&out, 0);
    let report = json_report(&out);
    let case = only_case(&report, &out);
    assert_eq!(case["verdict"]["kind"], "order-only", "{out}");
    assert_eq!(stream(&case, "stdout")["verdict"], "identical", "{out}");
    let stderr = stream(&case, "stderr");
    assert_eq!(stderr["verdict"], "order-only", "{out}");
    let displaced = stderr["displaced"].as_array().expect("displaced lines");
    let first = displaced[0].as_str().expect("a displaced line");
    assert!(
        first.starts_with("line 1: reference `Did not have permissions for directories: i")
            && first.contains("`, candidate `Did not have permissions for directories: i"),
        "{out}"
    );
    // One list per arm, each put in order once.
    assert_eq!(
        case["fired"],
        serde_json::json!([{"rule": "permission-list", "times": 2}]),
        "{out}"
    );
    let rule = &report["rules"][0];
    assert_eq!(rule["name"], "permission-list", "{out}");
    assert_eq!(rule["unused"], false, "{out}");
    assert_eq!(rule["times_fired"], 2, "{out}");
    assert!(text_report(&out).contains("stderr is order-only"), "{out}");
}

#[test]
fn the_same_list_in_another_order_differs_without_the_rule() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    let arm = permission_list_arm();
    let out = run_sets(&arm, &arm, &sets, &[]);
    assert_exit(&out, 1);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(case["verdict"]["kind"], "differs", "{out}");
    assert_eq!(stream(&case, "stderr")["verdict"], "differs", "{out}");
}

#[test]
fn a_masked_timing_is_equal_after_normalization() {
    let dir = temp_dir();
    let rule = "[rule timing]\nkind = mask\nstream = stdout\npattern = took [0-9]+ ms\nplaceholder = took <t> ms\n";
    let sets = one_set_file(dir.path(), rule);
    let out = run_sets(
        &double("print 'took 12 ms\\nresult ok\\n'"),
        &double("print 'took 345 ms\\nresult ok\\n'"),
        &sets,
        &[],
    );
    assert_exit(&out, 0);
    let report = json_report(&out);
    let case = only_case(&report, &out);
    assert_eq!(
        case["verdict"]["kind"], "equal-after-normalization",
        "{out}"
    );
    assert_eq!(
        stream(&case, "stdout")["verdict"],
        "equal-after-normalization",
        "{out}"
    );
    assert_eq!(
        case["fired"],
        serde_json::json!([{"rule": "timing", "times": 2}]),
        "{out}"
    );
}

#[test]
fn a_different_exit_status_differs_with_the_statuses_shown() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    let out = run_sets(
        &double("exit 0 'same\\n'"),
        &double("exit 3 'same\\n'"),
        &sets,
        &[],
    );
    assert_exit(&out, 1);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(case["verdict"]["kind"], "differs", "{out}");
    assert_eq!(stream(&case, "stdout")["verdict"], "identical", "{out}");
    let status = stream(&case, "status");
    assert_eq!(status["verdict"], "differs", "{out}");
    assert_eq!(status["diff"], "-exit 0\n+exit 3\n", "{out}");
    assert!(text_report(&out).contains("exit status differs"), "{out}");
}

#[test]
fn a_changed_line_differs_with_its_diff() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    let out = run_sets(
        &double("print 'a\\nb\\nc\\n'"),
        &double("print 'a\\nB\\nc\\n'"),
        &sets,
        &[],
    );
    assert_exit(&out, 1);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(case["verdict"]["kind"], "differs", "{out}");
    let stdout = stream(&case, "stdout");
    assert_eq!(stdout["verdict"], "differs", "{out}");
    let diff = stdout["diff"].as_str().expect("a diff");
    assert!(
        diff.starts_with("--- reference\n+++ candidate\n") && diff.contains("\n-b\n+B\n"),
        "{out}"
    );
    assert_eq!(stream(&case, "status")["verdict"], "identical", "{out}");
    let text = text_report(&out);
    assert!(text.contains("stdout differs:"), "{out}");
    assert!(text.contains("DIFFERENCES FOUND"), "{out}");
}

/// The nine lines `drop-every` prints when given no text.
const NINE_LINES: &str =
    "print 'line 1\\nline 2\\nline 3\\nline 4\\nline 5\\nline 6\\nline 7\\nline 8\\nline 9\\n'";

/// Runs the nine lines against a candidate that drops line 5 every `every`th run,
/// `runs` times each: the output, and the one flaky arm, checked to be the
/// candidate's.
fn flaky_candidate(every: u32, runs: u32) -> (Output, Value) {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    let counter = counter_file(dir.path(), "runs");
    let out = run_sets(
        &double(NINE_LINES),
        &double(&format!("drop-every {every} {counter}")),
        &sets,
        &["--runs", &runs.to_string()],
    );
    assert_exit(&out, 1);
    let report = json_report(&out);
    assert_eq!(report["runs"], runs, "{out}");
    let case = only_case(&report, &out);
    assert_eq!(case["verdict"]["kind"], "flaky", "{out}");
    let arms = case["verdict"]["arms"].as_array().expect("flaky arms");
    assert_eq!(arms.len(), 1, "only the candidate varies\n{out}");
    assert_eq!(arms[0]["arm"], "candidate", "{out}");
    let arm = arms[0].clone();
    (out, arm)
}

#[test]
fn an_arm_that_varies_between_runs_is_flaky_with_its_variants() {
    let (out, arm) = flaky_candidate(2, 4);
    assert_eq!(variant_runs(&arm), [vec![1, 3], vec![2, 4]], "{out}");
    let diff = arm["variants"][1]["diff"].as_str().expect("a diff");
    assert!(diff.contains("\n-line 5\n"), "{out}");
    assert!(
        text_report(&out).contains("the candidate arm gave 2 different outputs"),
        "{out}"
    );
}

#[test]
fn two_runs_are_enough_to_find_an_arm_that_alternates() {
    let (out, arm) = flaky_candidate(2, 2);
    assert_eq!(variant_runs(&arm), [vec![1], vec![2]], "{out}");
}

#[test]
fn an_arm_that_gives_the_same_output_every_run_is_not_flaky() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    let out = run_sets(
        &double(NINE_LINES),
        &double(NINE_LINES),
        &sets,
        &["--runs", "3"],
    );
    assert_exit(&out, 0);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(case["verdict"]["kind"], "identical", "{out}");
    assert_eq!(case["verdict"].get("arms"), None, "no variants\n{out}");
    assert!(!text_report(&out).contains("variant"), "{out}");
}

#[test]
fn a_line_dropped_once_in_fifty_runs_is_found_with_fifty_runs() {
    let (out, arm) = flaky_candidate(50, 50);
    let runs = variant_runs(&arm);
    assert_eq!(runs, [(1..50).collect::<Vec<u64>>(), vec![50]], "{out}");
    assert!(
        arm["variants"][1]["diff"]
            .as_str()
            .is_some_and(|d| d.contains("\n-line 5\n")),
        "{out}"
    );
}

#[test]
fn a_timed_out_arm_is_an_error_and_exits_3() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    let out = run_sets(
        &double("sleep 30"),
        &double("print 'woke\\n'"),
        &sets,
        &["--timeout", "0.5"],
    );
    assert_exit(&out, 3);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(case["verdict"]["kind"], "error", "{out}");
    let reason = case["verdict"]["reason"].as_str().expect("a reason");
    assert!(
        reason.starts_with("reference arm timed out after 0.5s"),
        "{out}"
    );
    assert_eq!(
        case["streams"],
        serde_json::json!([]),
        "never compared\n{out}"
    );
}

#[test]
fn a_crash_on_one_side_differs_in_the_exit_status() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    // Neither arm prints anything: only the way they ended can differ.
    let out = run_sets(&double("print ''"), &double("signal SEGV"), &sets, &[]);
    assert_exit(&out, 1);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(case["verdict"]["kind"], "differs", "{out}");
    assert_eq!(
        case["candidate"]["status"],
        serde_json::json!({"kind": "signaled", "signal": 11}),
        "{out}"
    );
    assert_eq!(stream(&case, "stdout")["verdict"], "identical", "{out}");
    let status = stream(&case, "status");
    assert_eq!(status["verdict"], "differs", "{out}");
    assert_eq!(status["diff"], "-exit 0\n+killed by signal 11\n", "{out}");
}

#[test]
fn the_same_crash_on_both_sides_is_compared_like_an_exit_code() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    let crasher = double("signal ABRT");
    let out = run_sets(&crasher, &crasher, &sets, &[]);
    assert_exit(&out, 0);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(case["verdict"]["kind"], "identical", "{out}");
    assert_eq!(
        case["reference"]["status"],
        serde_json::json!({"kind": "signaled", "signal": 6}),
        "{out}"
    );
    // Equal, yet the walk never ran to its end: the report must not let it pass quietly.
    let warnings = json_report(&out)["warnings"].to_string();
    assert!(
        warnings.contains("both arms crashed (killed by signal 6)"),
        "{out}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("both arms crashed"),
        "{out}"
    );
}

#[test]
fn an_arm_ended_by_sigkill_is_an_error_never_compared() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    // Both arms end alike, yet output cut short by SIGKILL is never called equal.
    let killed = double("signal KILL");
    let out = run_sets(&killed, &killed, &sets, &[]);
    assert_exit(&out, 3);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(case["verdict"]["kind"], "error", "{out}");
    let reason = case["verdict"]["reason"].as_str().expect("a reason");
    assert!(
        reason.starts_with("reference arm killed by signal 9"),
        "{out}"
    );
}

#[test]
fn a_rule_that_never_fires_is_reported_unused() {
    let dir = temp_dir();
    let rules = "[rule timing]\nkind = mask\nstream = stdout\npattern = took [0-9]+ ms\n\
                 [rule stale]\nkind = json\nstream = both\n";
    let sets = one_set_file(dir.path(), rules);
    let out = run_sets(
        &double("print 'took 1 ms\\nok\\n'"),
        &double("print 'took 2 ms\\nok\\n'"),
        &sets,
        &[],
    );
    assert_exit(&out, 0);
    let report = json_report(&out);
    let audit: Vec<(String, bool)> = report["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| (r["name"].as_str().unwrap().to_string(), r["unused"] == true))
        .collect();
    assert_eq!(
        audit,
        [("timing".to_string(), false), ("stale".to_string(), true)],
        "{out}"
    );
    let said: Vec<(&Value, &Value)> = (report["rules"].as_array().unwrap().iter())
        .map(|r| (&r["kind"], &r["stream"]))
        .collect();
    assert_eq!(
        said,
        [
            (&json!("mask"), &json!("stdout")),
            (&json!("json"), &json!("stdout and stderr"))
        ],
        "the kind and streams as declared\n{out}"
    );
    let stale = &report["rules"][1];
    assert_eq!(stale["times_fired"], 0, "{out}");
    assert_eq!(
        stale["declared_at"],
        format!("{}:{}", sets.display(), line_of(&sets, "[rule stale]")),
        "{out}"
    );
    let text = text_report(&out);
    let said = text
        .lines()
        .find(|l| l.starts_with("rule stale "))
        .unwrap_or_else(|| panic!("no line for rule stale\n{out}"));
    assert!(said.contains("unused"), "{said}\n{out}");
    let timing = text.lines().find(|l| l.starts_with("rule timing "));
    assert!(timing.is_some_and(|l| !l.contains("unused")), "{out}");
}

#[test]
fn a_self_check_of_the_default_walker_is_all_identical_over_three_runs() {
    let out = run([
        "--self-check",
        "--tree",
        "basic",
        "--sets",
        "depth",
        "--json",
        "-",
    ]);
    assert_exit(&out, 0);
    let report = json_report(&out);
    assert_eq!(report["self_check"], true, "{out}");
    assert_eq!(report["runs"], 3, "{out}");
    for case in report_cases(&report, &out) {
        assert_eq!(case["verdict"]["kind"], "identical", "{out}");
        assert_eq!(
            case["reference"]["argv"], case["candidate"]["argv"],
            "{out}"
        );
        let runs = case["candidate"]["durations_ms"].as_array().unwrap();
        assert_eq!(runs.len(), 3, "{out}");
    }
}

#[test]
fn a_self_check_of_a_flaky_reference_reports_it_flaky() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    let counter = counter_file(dir.path(), "runs");
    // The two arms share the counter and alternate: runs 1-6 are reference 1,
    // candidate 1, reference 2, ...; every third drops a line, so each arm has
    // one run that drops and the self-check sees both arms disagree with themselves.
    let flaky = double(&format!("drop-every 3 {counter}"));
    let sets = sets.to_string_lossy();
    let out = run([
        "--self-check",
        "--ref",
        &flaky,
        "--tree",
        "basic",
        "--sets",
        &sets,
        "--json",
        "-",
    ]);
    assert_exit(&out, 1);
    let report = json_report(&out);
    assert_eq!(report["runs"], 3, "{out}");
    let case = only_case(&report, &out);
    assert_eq!(case["verdict"]["kind"], "flaky", "{out}");
    let arms = case["verdict"]["arms"].as_array().expect("flaky arms");
    assert_eq!(arms[0]["arm"], "reference", "{out}");
    assert_eq!(variant_runs(&arms[0]), [vec![1, 3], vec![2]], "{out}");
    assert_eq!(variant_runs(&arms[1]), [vec![1, 2], vec![3]], "{out}");
}
