//! `eqcheck probe` end to end: the fast engine against read_dir + lstat on the edge
//! tree, every field compared and the census counted; and a lister's dump with
//! faults planted by the test double (blocks off by one for sparse files, fields
//! left out, a bad line, a missing entry, a tree changed while probed), each
//! reported as what it is.

use serde_json::Value;

use crate::util::{assert_exit, double, json_report, run, temp_dir, written, Output};

/// A small tree with what a lister gets wrong first: sparse files, an empty file,
/// a hard link, a symlink and a name that is not UTF-8.
const SPEC: &str = "\
dir   d
file  d/a       size=100 content=random seed=1
hardlink d/b -> d/a
sparse d/holes  size=1M data=0:4K
sparse big      size=10M
file  empty     size=0
symlink link -> d/a
file  \"caf\\xe9\" size=10
";

fn probe_dump(plants: &str) -> (Output, Value) {
    let dir = temp_dir();
    let spec = written(dir.path(), "lister.tree", SPEC);
    let lister = double(&format!("dump {plants}"));
    let out = run(["probe", "--tree", &spec, "--cand", &lister, "--json", "-"]);
    let report = json_report(&out);
    (out, report)
}

fn tree(report: &Value) -> &Value {
    &report["trees"][0]
}

/// The row of one field and source.
fn row<'a>(report: &'a Value, field: &str) -> Option<&'a Value> {
    tree(report)["rows"]
        .as_array()?
        .iter()
        .find(|r| r["field"] == field)
}

#[test]
fn the_fast_engine_agrees_with_lstat_on_every_field_of_the_edge_tree() {
    let out = run(["probe", "--tree", "edge", "--json", "-"]);
    assert_exit(&out, 0);
    let report = json_report(&out);
    let tree = tree(&report);
    let entries = tree["entries"].as_u64().unwrap();
    assert!(entries > 3000, "{out}");
    for field in [
        "type",
        "mode",
        "size",
        "blocks",
        "block_size",
        "inode",
        "device",
        "nlink",
        "uid",
        "gid",
        "atime",
        "mtime",
        "ctime",
    ] {
        let compared: u64 = (tree["rows"].as_array().unwrap().iter())
            .filter(|r| r["field"] == field && r["source"] != "listing")
            .map(|r| r["compared"].as_u64().unwrap())
            .sum();
        assert_eq!(
            compared, entries,
            "{field} not compared for every entry\n{out}"
        );
    }
    for row in tree["rows"].as_array().unwrap() {
        assert_eq!(row["unexplained"], 0, "{row}\n{out}");
        // Only the listing itself may move something here: a folder's atime.
        if row["field"] != "atime" {
            assert_eq!(row["explained"], 0, "{row}\n{out}");
        }
    }
    // The listing typed every entry below the root, and each cost a stat.
    let census = &tree["census"];
    let listed: u64 = ["folders", "files", "symlinks", "other", "unknown"]
        .iter()
        .map(|k| census[k].as_u64().unwrap())
        .sum();
    assert_eq!(listed, entries - 1, "{out}");
    let stats = census["statx"].as_u64().unwrap() + census["fstatat"].as_u64().unwrap();
    assert!(stats >= entries, "{out}");
    // Every folder was listed once, by getdents64: the root and those listed as
    // folders (as root, the edge tree's unreadable folders open too).
    if crate::util::is_root() {
        let folders = census["folders"].as_u64().unwrap() + 1;
        assert_eq!(census["listed_by"]["getdents64"], folders, "{out}");
    }
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("census: the listing typed"), "{out}");
    assert!(text.contains(" by getdents64"), "{out}");
}

#[test]
fn a_lister_whose_blocks_are_off_by_one_for_sparse_files_is_caught_naming_them() {
    let (out, report) = probe_dump("--sparse-blocks-plus-one");
    assert_exit(&out, 1);
    let blocks = row(&report, "blocks").expect("blocks compared");
    assert_eq!(blocks["unexplained"], 2, "{out}");
    let mut named: Vec<&str> = (tree(&report)["mismatches"].as_array().unwrap().iter())
        .map(|m| {
            assert_eq!(m["field"], "blocks", "{out}");
            m["path"].as_str().unwrap()
        })
        .collect();
    named.sort();
    assert_eq!(named, ["big", "d/holes"], "{out}");
}

#[test]
fn fields_a_lister_leaves_out_are_unknown_not_mismatched() {
    let (out, report) = probe_dump("--omit uid,gid");
    assert_exit(&out, 0);
    let entries = tree(&report)["entries"].as_u64().unwrap();
    for field in ["uid", "gid"] {
        assert!(row(&report, field).is_none(), "{field} compared\n{out}");
        let unknown = (tree(&report)["unknown"].as_array().unwrap().iter())
            .find(|u| u["field"] == field && u["side"] == "candidate")
            .map(|u| u["count"].as_u64().unwrap());
        assert_eq!(unknown, Some(entries), "{out}");
    }
    // What it did print is all compared, the name that is not UTF-8 included.
    assert_eq!(row(&report, "size").unwrap()["compared"], entries, "{out}");
}

#[test]
fn a_clean_dump_with_absolute_paths_agrees() {
    let (out, report) = probe_dump("--absolute");
    assert_exit(&out, 0);
    assert_eq!(tree(&report)["missing_in_candidate"], 0, "{out}");
    assert!(tree(&report)["census"].is_null(), "{out}");
}

#[test]
fn an_entry_the_lister_leaves_out_is_missing() {
    let (out, report) = probe_dump("--drop d/a");
    assert_exit(&out, 1);
    assert_eq!(tree(&report)["missing_in_candidate"], 1, "{out}");
    let missing = &tree(&report)["missing"][0];
    assert_eq!(
        (missing["path"].as_str(), missing["missing_from"].as_str()),
        (Some("d/a"), Some("candidate"))
    );
}

#[test]
fn a_malformed_line_or_a_changed_tree_is_an_error_not_a_mismatch() {
    let (out, report) = probe_dump("--bad-line 3");
    assert_exit(&out, 3);
    let error = tree(&report)["error"].as_str().unwrap_or_default();
    assert!(error.contains("the lister's line 3: "), "{out}");
    let (out, report) = probe_dump("--touch d/a");
    assert_exit(&out, 3);
    let error = tree(&report)["error"].as_str().unwrap_or_default();
    // The guard names the folder whose entry moved.
    assert!(
        error.starts_with("the tree changed while it was probed: d: "),
        "{out}"
    );
    // Both sides did look, so the count stands beside the error.
    assert_eq!(tree(&report)["entries"], 9, "{out}");
}

#[test]
fn the_markdown_report_has_the_table_and_the_census() {
    let out = run(["probe", "--tree", "basic", "--markdown", "-"]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("## eqcheck probe: eqcheck's fast engine"),
        "{out}"
    );
    assert!(
        text.contains("| field | source | compared | equal | explained | unexplained | unknown |"),
        "{out}"
    );
    assert!(
        text.contains("\n| size | statx | 32 | 32 | 0 | 0 | 0 |\n"),
        "{out}"
    );
    assert!(text.contains("- census: the listing typed"), "{out}");
    // The text report goes to stderr when a report takes stdout.
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("1 tree probed"),
        "{out}"
    );
}

/// A lister runs as an arm does: one that hangs is killed, with all it started, at
/// `--timeout`, and the tree's probe is an error that says so.
#[test]
fn a_lister_that_hangs_is_killed_at_the_timeout_and_the_probe_is_an_error() {
    let lister = double("sleep 3600");
    let out = run([
        "probe",
        "--tree",
        "basic",
        "--cand",
        &lister,
        "--timeout",
        "0.5",
        "--json",
        "-",
    ]);
    assert_exit(&out, 3);
    let report = json_report(&out);
    let error = tree(&report)["error"].to_string();
    assert!(
        error.contains("timed out after 0.5s; its process group was killed; its stderr was empty"),
        "{out}"
    );
    // A tree the lister never listed has no count, not a count of nothing.
    assert_eq!(tree(&report)["entries"], Value::Null, "{out}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tree_line = stderr.lines().find(|l| l.starts_with("tree basic"));
    assert!(
        tree_line.is_some_and(|l| l.contains(": not probed (") && !l.contains("entries")),
        "{out}"
    );
}

/// What a lister leaves running when it exits is ended before its records are
/// read, as an arm's is: it must not go on writing after the probe.
#[test]
fn what_a_lister_leaves_running_is_ended_with_it() {
    let dir = temp_dir();
    let late = dir.path().join("late");
    let lister = double(&format!("linger {} 1", late.display()));
    let out = run(["probe", "--tree", "basic", "--cand", &lister, "--json", "-"]);
    // It printed no records: every entry is missing from the candidate.
    assert_exit(&out, 1);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(!late.exists(), "the lister's child wrote after it\n{out}");
}
