//! Joining shards' reports, away from a real run: what is summed, what is kept once,
//! and what two shards of one run must agree on. The end-to-end tests in
//! `tests/shards.rs` run real shards; these pin the parts a run with one tree and no
//! warnings cannot reach.

use serde_json::{json, Value};

use super::*;

/// The report of shard `index` of 2 of a run whose plan holds no case, with the
/// fields of `more` in place of the defaults.
fn shard(index: usize, more: Value) -> ShardReport {
    let arm = |name: &str| {
        json!({"command": [name, "{tree}"], "argv0": name, "binary": null,
               "sha256": format!("sha of {name}"), "copy": null, "user": "root"})
    };
    let mut report = json!({
        "schema_version": SCHEMA_VERSION,
        "eqcheck_version": "1.0.0",
        "shard": {"partition": {"how": "count", "index": index, "count": 2}, "plan": []},
        "reference": arm("old"),
        "candidate": arm("new"),
        "config": null,
        "flag_sets": "sets.eqf",
        "runs": 1,
        "self_check": false,
        "arms_ran_as": "root",
        "warnings": [],
        "trees": [],
        "rules": [],
        "cases": [],
    });
    for (key, value) in more.as_object().expect("an object of fields") {
        report[key] = value.clone();
    }
    ShardReport {
        path: PathBuf::from(format!("shard-{index}.json")),
        outcome: serde_json::from_value(report).expect("a report"),
    }
}

fn rule(name: &str, cases_fired: usize, times_fired: usize) -> Value {
    json!({"name": name, "kind": "sort-lines", "declared_at": "sets.eqf:3",
           "stream": "stdout", "groups": [], "cases_fired": cases_fired,
           "times_fired": times_fired, "unused": cases_fired == 0})
}

fn tree(name: &str, fingerprints: usize) -> Value {
    json!({"name": name, "path": format!("/tmp/{name}"), "built": true, "kept": false,
           "skipped": [], "fingerprints": fingerprints,
           "counts": {"entries": 1, "files": 0, "folders": 1, "symlinks": 0, "other": 0}})
}

#[test]
fn warnings_of_every_shard_are_kept_once_each_in_the_order_first_given() {
    let one = shard(
        1,
        json!({"warnings": ["tree a: unreadable fixtures", "same"]}),
    );
    let two = shard(2, json!({"warnings": ["same", "tree b: --keep"]}));
    let whole = merge(vec![one, two]).unwrap();
    assert_eq!(
        whole.warnings,
        ["tree a: unreadable fixtures", "same", "tree b: --keep"]
    );
}

#[test]
fn rules_are_kept_once_with_what_they_did_summed_and_unused_only_if_no_shard_used_them() {
    let one = shard(
        1,
        json!({"rules": [rule("sorted", 0, 0), rule("times", 2, 7), rule("idle", 0, 0)]}),
    );
    let two = shard(
        2,
        json!({"rules": [rule("sorted", 3, 4), rule("times", 1, 1), rule("idle", 0, 0)]}),
    );
    let whole = merge(vec![one, two]).unwrap();
    let said: Vec<(&str, usize, usize, bool)> = (whole.rules.iter())
        .map(|r| (r.name.as_str(), r.cases_fired, r.times_fired, r.unused))
        .collect();
    assert_eq!(
        said,
        [
            ("sorted", 3, 4, false),
            ("times", 3, 8, false),
            ("idle", 0, 0, true)
        ]
    );
}

#[test]
fn a_tree_two_shards_built_is_one_tree_with_both_shards_fingerprints() {
    let one = shard(1, json!({"trees": [tree("web", 2)]}));
    let two = shard(2, json!({"trees": [tree("web", 3), tree("deep", 1)]}));
    let whole = merge(vec![one, two]).unwrap();
    let said: Vec<(&str, usize)> = (whole.trees.iter())
        .map(|t| (t.name.as_str(), t.fingerprints))
        .collect();
    assert_eq!(said, [("web", 5), ("deep", 1)]);
}

#[test]
fn cpu_is_summed_over_the_shards_and_unknown_if_any_shard_did_not_measure_it() {
    let cpu = |harness: f64, arms: f64| json!({"cpu": {"harness_s": harness, "arms_s": arms}});
    let whole = merge(vec![shard(1, cpu(0.5, 4.0)), shard(2, cpu(0.25, 2.0))]).unwrap();
    assert_eq!(
        whole.cpu,
        Some(CpuTime {
            harness_s: 0.75,
            arms_s: 6.0
        })
    );
    let whole = merge(vec![shard(1, cpu(0.5, 4.0)), shard(2, json!({}))]).unwrap();
    assert_eq!(whole.cpu, None);
}

/// The case `id` (its tree the part before the first colon), both arms exiting 0,
/// judged identical.
fn case(id: &str) -> Value {
    let run = json!({"argv": ["old"], "repro": "old", "status": {"kind": "exited", "code": 0},
                     "duration_ms": 1.0, "durations_ms": [1.0]});
    let tree = id.split(':').next().unwrap();
    json!({"id": id, "tree": tree, "group": "g", "set": "s", "reference": run,
           "candidate": run, "verdict": {"kind": "identical"}, "streams": [],
           "fired": [], "notes": []})
}

#[test]
fn cases_come_in_plan_order_and_trees_in_the_order_of_their_first_case() {
    // Dealt in turn: places 0 and 2 to the first shard, 1 to the second.
    let plan = json!(["b:g:one", "a:g:one", "b:g:two"]);
    let part = |index: usize| json!({"partition": {"how": "count", "index": index, "count": 2}, "plan": plan});
    let one = shard(
        1,
        json!({"shard": part(1), "cases": [case("b:g:one"), case("b:g:two")], "trees": [tree("b", 1)]}),
    );
    let two = shard(
        2,
        json!({"shard": part(2), "cases": [case("a:g:one")], "trees": [tree("a", 1)]}),
    );
    let whole = merge(vec![two, one]).unwrap();
    let ids: Vec<&str> = whole.cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        plan.as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect::<Vec<_>>()
    );
    let trees: Vec<&str> = whole.trees.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(trees, ["b", "a"]);
    assert!(whole.shard.is_none(), "the whole run is no shard");
}
