//! Differences in outputs too large for a full diff, end to end: every differing
//! line counted and the first hunks shown, in the text report and the JSON report
//! alike, whether the texts were normalized in memory (over the diff limit, 2 MiB)
//! or compared from disk (over the normalizing limit, 4 MiB); and, where the only
//! rule sorts lines, the lines each arm lacks counted in any order.

use serde_json::Value;

use crate::util::{assert_exit, temp_dir, Output};
use crate::util::{double, json_report};
use crate::verdicts::{one_set_file, only_case, run_sets, text_report};

/// Eight runs of 5,000 lines changed in place, 1,000 lines apart: 40,000 lines.
const EIGHT_RUNS: &str =
    "1-5000,6001-11000,12001-17000,18001-23000,24001-29000,30001-35000,36001-41000,42001-47000";

/// The case's stdout result.
fn stdout_of(case: &Value, out: &Output) -> Value {
    let streams = case["streams"].as_array().expect("streams");
    let found = streams.iter().find(|s| s["stream"] == "stdout");
    found
        .unwrap_or_else(|| panic!("no stdout stream\n{out}"))
        .clone()
}

#[test]
fn forty_thousand_changed_lines_are_counted_and_five_hunks_shown() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    let mut diffs = Vec::new();
    // 3 MiB: loaded, over the diff limit; 6 MiB: compared from disk.
    for size in ["3M", "6M"] {
        let ours = double(&format!("bytes {size}"));
        let theirs = double(&format!("bytes {size} {EIGHT_RUNS}"));
        let out = run_sets(&ours, &theirs, &sets, &[]);
        assert_exit(&out, 1);
        let stdout = stdout_of(&only_case(&json_report(&out), &out), &out);
        let diff = stdout["diff"].as_str().expect("a diff").to_string();
        let count = "40,000 lines differ (40,000 only in the reference, 40,000 only in the candidate); the first 5 of 8 hunks are shown\n--- reference\n+++ candidate\n@@ -1,5003 +1,5003 @@\n";
        assert!(diff.starts_with(count), "{size}: {diff}");
        let headers: Vec<&str> = diff.lines().filter(|l| l.starts_with("@@")).collect();
        assert_eq!(headers.len(), 5, "{size}: {diff}");
        assert_eq!(headers[1], "@@ -5998,5006 +5998,5006 @@", "{size}");
        assert_eq!(headers[4], "@@ -23998,5006 +23998,5006 @@", "{size}");
        let lines = &stdout["lines"];
        assert_eq!(lines["compared"], "in-order", "{size}: {lines}");
        assert_eq!(lines["differing"], 40_000, "{size}: {lines}");
        assert_eq!(lines["only_in_reference"], 40_000, "{size}: {lines}");
        assert_eq!(lines["only_in_candidate"], 40_000, "{size}: {lines}");
        assert_eq!(lines["hunks"], 8, "{size}: {lines}");
        let text = text_report(&out);
        assert!(text.contains("40,000 lines differ ("), "{size}: {text}");
        assert_eq!(text.matches("     @@ -").count(), 5, "{size}: {text}");
        diffs.push(diff);
    }
    assert_eq!(diffs[0], diffs[1], "in memory and from disk alike");
}

#[test]
fn lines_too_many_to_sort_are_counted_as_a_multiset() {
    let dir = temp_dir();
    let sorted = one_set_file(
        dir.path(),
        "[rule order]\nkind = sort-lines\nstream = stdout\n",
    );
    // 200,000 lines of 25 bytes, over the 4 MiB limit; the candidate's are in the
    // other order and six of each arm's are not in the other.
    let up = "sh -c 'seq -f %024g 1 200000'";
    let down = "sh -c 'seq -f %024g 200006 -1 7'";
    let out = run_sets(up, down, &sorted, &[]);
    assert_exit(&out, 1);
    let case = only_case(&json_report(&out), &out);
    let stdout = stdout_of(&case, &out);
    let lines = &stdout["lines"];
    assert_eq!(lines["compared"], "multiset", "{out}");
    assert_eq!(lines["only_in_reference"], 6, "{out}");
    assert_eq!(lines["only_in_candidate"], 6, "{out}");
    let diff = stdout["diff"].as_str().expect("a diff");
    assert!(
        diff.starts_with("6 lines only in the reference and 6 only in the candidate"),
        "{diff}"
    );
    for shown in [
        "@@ only in the reference: lines 1, 2, 3, 4, 5, the first 5 of 6 @@\n-000000000000000000000001\n",
        "@@ only in the candidate: lines 1, 2, 3, 4, 5, the first 5 of 6 @@\n+000000000000000000200006\n",
    ] {
        assert!(diff.contains(shown), "{shown}\n{out}");
        let indented = shown.replace('\n', "\n     ");
        assert!(text_report(&out).contains(indented.trim_end()), "{out}");
    }
    // The rule made the comparison a multiset's: it was used, not unused.
    assert_eq!(case["fired"][0]["rule"], "order", "{out}");
    assert!(!text_report(&out).contains("unused"), "{out}");
}

#[test]
fn outputs_of_five_mib_that_differ_only_in_line_order_differ_when_no_rule_sorts() {
    let dir = temp_dir();
    let sets = one_set_file(dir.path(), "");
    // 210,000 lines of 25 bytes: over 5 MiB, each arm's in the other order.
    let up = "sh -c 'seq -f %024g 1 210000'";
    let down = "sh -c 'seq -f %024g 210000 -1 1'";
    let out = run_sets(up, down, &sets, &[]);
    assert_exit(&out, 1);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(case["verdict"]["kind"], "differs", "{out}");
    let stdout = stdout_of(&case, &out);
    assert_eq!(stdout["verdict"], "differs", "{out}");
    assert_eq!(stdout["lines"]["compared"], "in-order", "{out}");
}
