//! `--partition` and `eqcheck merge` end to end: shards of a run, merged, give the
//! whole run's verdicts case for case and its exit code; an empty shard says so;
//! merge refuses a missing or doubled shard, another run's shard (other arms,
//! plan or arm limits), and a whole run.

use serde_json::Value;

use crate::run::{eqcheck_walk, run_pair};
use crate::util::{assert_exit, double, run, temp_dir, Output};

/// Two arms whose cases differ where the output has a third line, so a run has
/// both verdicts.
fn arms() -> (String, String) {
    (
        eqcheck_walk("reference"),
        double("walk-alter-line 3 --engine fast"),
    )
}

/// A run of the arms over basic's `depth` and `links` sets, with more arguments,
/// its JSON report written to `json`.
fn run_to(json: &std::path::Path, more: &[&str]) -> Output {
    let (reference, candidate) = arms();
    let json = json.to_string_lossy().into_owned();
    let mut rest = vec!["--sets", "depth,links", "--json", json.as_str()];
    rest.extend_from_slice(more);
    run_pair(&reference, &candidate, &rest)
}

/// The candidate's program as a shard's report names it.
fn report_program(path: &str) -> String {
    read(std::path::Path::new(path))["candidate"]["command"][0]
        .as_str()
        .unwrap()
        .to_string()
}

fn read(path: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Each case's id and verdict, in report order.
fn verdicts(report: &Value) -> Vec<(String, String)> {
    (report["cases"].as_array().unwrap().iter())
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["verdict"]["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn hash_and_count_shards_merged_give_the_whole_runs_verdicts_and_exit_code() {
    let dir = temp_dir();
    let whole = dir.path().join("whole.json");
    assert_exit(&run_to(&whole, &[]), 1);
    let expected = verdicts(&read(&whole));
    let kinds: std::collections::BTreeSet<&str> =
        expected.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(
        kinds.len(),
        2,
        "the run must have both verdicts: {expected:?}"
    );
    for how in ["hash", "count"] {
        let mut shards = Vec::new();
        let mut ran = 0;
        let mut cpu = [0.0, 0.0];
        for m in 1..=3 {
            let path = dir.path().join(format!("{how}-{m}.json"));
            let out = run_to(&path, &["--partition", &format!("{how}:{m}/3")]);
            let report = read(&path);
            ran += verdicts(&report).len();
            for (sum, name) in cpu.iter_mut().zip(["harness_s", "arms_s"]) {
                *sum += report["cpu"][name].as_f64().unwrap_or(f64::NAN);
            }
            assert_eq!(report["shard"]["partition"]["index"], m, "{out}");
            shards.push(path);
        }
        assert_eq!(
            ran,
            expected.len(),
            "{how}: the shards together ran every case once"
        );
        // Given in any order.
        shards.reverse();
        let merged = dir.path().join(format!("{how}-merged.json"));
        let mut args = vec!["merge".to_string()];
        args.extend(shards.iter().map(|p| p.to_string_lossy().into_owned()));
        args.extend(["--json".into(), merged.to_string_lossy().into_owned()]);
        let out = run(&args);
        assert_exit(&out, 1);
        let report = read(&merged);
        assert_eq!(verdicts(&report), expected, "{how}\n{out}");
        assert!(report["shard"].is_null(), "{out}");
        assert_eq!(report["trees"].as_array().unwrap().len(), 1, "{out}");
        if cfg!(unix) {
            // The whole run's cost is the shards' together, wherever they ran.
            let merged_cpu = ["harness_s", "arms_s"].map(|n| report["cpu"][n].as_f64());
            let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-6);
            assert!(
                close(merged_cpu[0], cpu[0]) && close(merged_cpu[1], cpu[1]),
                "{how}: merged cpu {merged_cpu:?}, shards' sum {cpu:?}\n{out}"
            );
        }
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("DIFFERENCES FOUND"), "{out}");
    }
}

#[test]
fn a_shard_with_no_case_says_so_and_passes() {
    let dir = temp_dir();
    let path = dir.path().join("empty.json");
    // More shards than the 12 cases: the last holds none.
    let out = run_to(&path, &["--partition", "count:20/20"]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("shard count:20/20: none of the matrix's 12 cases fall in this shard"),
        "{out}"
    );
    assert!(text.contains("no case in this shard"), "{out}");
    let report = read(&path);
    assert_eq!(report["cases"].as_array().map(Vec::len), Some(0));
    assert_eq!(
        report["trees"].as_array().map(Vec::len),
        Some(0),
        "no tree was built"
    );
}

#[test]
fn merge_refuses_a_missing_or_doubled_shard_another_runs_shard_and_a_whole_run() {
    let dir = temp_dir();
    let shard = |m: usize, name: &str, more: &[&str]| {
        let path = dir.path().join(name);
        let partition = format!("hash:{m}/2");
        let mut args = vec!["--partition", partition.as_str()];
        args.extend_from_slice(more);
        run_to(&path, &args);
        path.to_string_lossy().into_owned()
    };
    let first = shard(1, "1.json", &[]);
    let second = shard(2, "2.json", &[]);
    let refused = |args: &[&str], says: &str| {
        let mut all = vec!["merge"];
        all.extend_from_slice(args);
        let out = run(&all);
        assert_exit(&out, 2);
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(text.contains(says), "expected {says:?}\n{out}");
    };
    refused(&[&first], "shards missing: hash:2/2");
    refused(&[&first, &first, &second], "shard hash:1/2 is given twice");
    // Another selection of sets is another plan.
    let (reference, candidate) = arms();
    let other = dir.path().join("other.json").to_string_lossy().into_owned();
    let partition = ["--partition", "hash:2/2"];
    let json = ["--json", &other];
    run_pair(
        &reference,
        &candidate,
        &[&["--sets", "depth"][..], &json, &partition].concat(),
    );
    refused(
        &[&first, &other],
        "the plan (trees, groups or sets) differs",
    );
    // Another candidate build is another run.
    let path = dir.path().join("other-arm.json");
    let json = path.to_string_lossy().into_owned();
    run_to(&path, &partition);
    let mut report = read(&path);
    report["candidate"]["sha256"] = Value::from("0".repeat(64));
    std::fs::write(&path, report.to_string()).unwrap();
    refused(&[&first, &json], "the candidate differs");
    // The same build with other arguments, another argv[0] or under a runner is
    // another run too.
    let edits: [(&str, Value); 3] = [
        (
            "command",
            serde_json::json!([report_program(&second), "--apparent-size"]),
        ),
        ("argv0", Value::from("other")),
        ("runner", serde_json::json!(["/usr/bin/env"])),
    ];
    for (field, value) in edits {
        let mut report = read(std::path::Path::new(&second));
        report["candidate"][field] = value;
        std::fs::write(&path, report.to_string()).unwrap();
        refused(&[&first, &json], "the candidate differs");
    }
    // Other bounds on the arms could judge a case otherwise: a timeout in one
    // shard is a verdict in another.
    let bounded = dir.path().join("bounded.json");
    run_to(
        &bounded,
        &[&partition[..], &["--max-output", "1M"]].concat(),
    );
    let limits = "the arm limits (--timeout, --max-output) differs";
    refused(&[&first, &bounded.to_string_lossy()], limits);
    let mut report = read(std::path::Path::new(&second));
    report["limits"]["timeout_s"] = Value::from(7.5);
    std::fs::write(&path, report.to_string()).unwrap();
    refused(
        &[&first, &json],
        "(--timeout 60, --max-output 4 GiB against --timeout 7.5, --max-output 4 GiB)",
    );
    // A shard from before limits were recorded says why it cannot join.
    report.as_object_mut().unwrap().remove("limits");
    std::fs::write(&path, report.to_string()).unwrap();
    refused(
        &[&first, &json],
        "none recorded: an eqcheck older than the other shard's wrote it",
    );
    // A merged report written over a shard would lose it.
    let before = std::fs::read(&first).unwrap();
    refused(
        &[&first, &second, "--json", &first],
        "which the merge reads",
    );
    assert_eq!(
        std::fs::read(&first).unwrap(),
        before,
        "the shard is intact"
    );
    // A case the shard does not run, or one twice: the report was edited.
    let mut report = read(std::path::Path::new(&first));
    let copy = report["cases"][0].clone();
    report["cases"].as_array_mut().unwrap().push(copy);
    let edited = dir.path().join("edited.json");
    std::fs::write(&edited, report.to_string()).unwrap();
    refused(
        &[&edited.to_string_lossy(), &second],
        "is not the shard's to run",
    );
    let whole = dir.path().join("whole.json");
    run_to(&whole, &[]);
    refused(&[&whole.to_string_lossy()], "the report of a whole run");
    refused(
        &[&dir.path().join("nowhere.json").to_string_lossy()],
        "cannot read it",
    );
}

#[test]
fn a_partition_that_makes_no_sense_is_a_usage_error_naming_the_flag() {
    for bad in ["hash:0/3", "hash:4/3", "modulo:1/2", "hash:1"] {
        let out = run(["--tree", "basic", "--partition", bad]);
        assert_exit(&out, 2);
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(
            text.contains("--partition: expected hash:M/N or count:M/N"),
            "{out}"
        );
    }
}

#[test]
fn a_shard_with_a_timed_out_arm_merges_and_exits_as_the_run_did() {
    let dir = temp_dir();
    let json = dir.path().join("shard.json");
    let (sleeper, quick) = (double("sleep 30"), double("print same"));
    let shard = json.to_string_lossy().into_owned();
    let out = run([
        "--ref",
        &sleeper,
        "--cand",
        &quick,
        "--tree",
        "basic",
        "--sets",
        "depth",
        "--timeout",
        "0.3",
        "--partition",
        "count:1/1",
        "--json",
        &shard,
    ]);
    assert_exit(&out, 3);
    // The report names the timeout in seconds, a float, which must read back.
    let merged = run(["merge", shard.as_str(), "--json", "-"]);
    assert_exit(&merged, 3);
    let report: Value = serde_json::from_slice(&merged.stdout).unwrap();
    let status = &report["cases"][0]["reference"]["status"];
    assert_eq!(status["kind"], "timed-out", "{merged}");
    assert_eq!(status["after_secs"].as_f64(), Some(0.3), "{merged}");
}
