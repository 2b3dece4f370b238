//! The trust check end to end (rules that would hide a real difference fail the
//! case; rules that hide only a thread id or a timing pass; a mask that swallows
//! whole lines is refused when the file loads), and outputs too large to
//! normalize in memory.

use crate::util::{assert_exit, double, json_report, temp_dir};
use crate::verdicts::{line_of, one_set_file, only_case, run_sets, text_report};

#[test]
fn a_mask_that_hides_a_changed_size_fails_the_trust_check() {
    let dir = temp_dir();
    // Allowed when the file loads (it leaves most of an ordinary line alone), but
    // on an output of sizes alone it masks everything.
    let rule = "[rule sizes]\nkind = mask\nstream = stdout\npattern = [0-9]+\n";
    let sets = one_set_file(dir.path(), rule);
    let out = run_sets(
        &double("print '4096\\n12\\n8\\n'"),
        &double("print '4096\\n13\\n8\\n'"),
        &sets,
        &[],
    );
    assert_exit(&out, 3);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(case["verdict"]["kind"], "error", "{out}");
    let reason = case["verdict"]["reason"].as_str().expect("a reason");
    assert!(
        reason.starts_with("normalizers hide differences: on stdout")
            && reason.ends_with("after rules sizes"),
        "{out}"
    );
    assert!(
        text_report(&out).contains("normalizers hide differences"),
        "{out}"
    );
}

#[test]
fn a_rule_caught_hiding_is_never_reported_unused() {
    // Equal outputs need no rule to compare, but the trust check still finds the
    // mask would hide a changed size: the report must not also call it unused.
    let dir = temp_dir();
    let rule = "[rule sizes]\nkind = mask\nstream = stdout\npattern = [0-9]+\n";
    let sets = one_set_file(dir.path(), rule);
    let same = double("print '4096\\n12\\n8\\n'");
    let out = run_sets(&same, &same, &sets, &[]);
    assert_exit(&out, 3);
    let report = json_report(&out);
    let case = only_case(&report, &out);
    let reason = case["verdict"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("normalizers hide differences"), "{out}");
    let rules = report["rules"].as_array().expect("the rule audit");
    let sizes = rules
        .iter()
        .find(|r| r["name"] == "sizes")
        .expect("rule sizes");
    assert_eq!(sizes["unused"], false, "{out}");
    assert!(sizes["cases_fired"].as_u64() >= Some(1), "{out}");
    assert!(!text_report(&out).contains("never fired"), "{out}");
}

#[test]
fn a_mask_over_every_size_of_du_style_lines_fails_the_trust_check() {
    // Each line keeps its path, so a change sampled in a path is seen; but the
    // mask hides the size at the start of every line, and so every real change.
    let dir = temp_dir();
    let rule = "[rule sizes]\nkind = mask\nstream = stdout\npattern = (?m)^[0-9]+\n";
    let sets = one_set_file(dir.path(), rule);
    let out = run_sets(
        &double("print '4\\tweb/a/index.html\\n12\\tweb/a\\n8\\tweb/b/app.js\\n24\\tweb\\n'"),
        &double("print '4\\tweb/a/index.html\\n13\\tweb/a\\n8\\tweb/b/app.js\\n25\\tweb\\n'"),
        &sets,
        &[],
    );
    assert_exit(&out, 3);
    let case = only_case(&json_report(&out), &out);
    let reason = case["verdict"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("normalizers hide differences") && reason.contains("in a word of a line"),
        "{out}"
    );
}

/// Runs eqcheck's walker against the double that alters one line's size, with
/// one set and one rule, and checks the trust check fails the case.
fn assert_rule_hides_a_walker_size(set: &str, rule: &str, altered_line: usize) {
    let dir = temp_dir();
    let sets = dir.path().join("sizes.sets");
    std::fs::write(&sets, format!("[only]\n{set}\n{rule}")).unwrap();
    let reference = format!("{} walk --engine reference", env!("CARGO_BIN_EXE_eqcheck"));
    let candidate = double(&format!("walk-alter-line {altered_line} --engine fast"));
    let out = run_sets(&reference, &candidate, &sets, &[]);
    assert_exit(&out, 3);
    let case = only_case(&json_report(&out), &out);
    let reason = case["verdict"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("normalizers hide differences"), "{out}");
}

#[test]
fn a_mask_over_the_last_digit_of_every_size_fails_the_trust_check() {
    // `-a -b` with one size off by one in the candidate: a mask over the last
    // digit of every size would hide it.
    let rule = "[rule last-digit]\nkind = mask\nstream = stdout\npattern = \\d\\t\nplaceholder = \"#\\t\"\n";
    assert_rule_hides_a_walker_size("-a -b", rule, 3);
}

#[test]
fn a_mask_over_the_size_of_a_one_line_summary_fails_the_trust_check() {
    // `-s` prints one line; a mask over its size hides every real change.
    let rule = "[rule size]\nkind = mask\nstream = stdout\npattern = ^\\d+\n";
    assert_rule_hides_a_walker_size("-s", rule, 1);
}

#[test]
fn a_mask_over_the_last_column_of_long_lines_fails_the_trust_check() {
    // Lines of more words than the check changes one by one: the last column is
    // still among them.
    let dir = temp_dir();
    let rule = "[rule size]\nkind = mask\nstream = stdout\npattern = (?m) \\d+$\n";
    let sets = one_set_file(dir.path(), rule);
    let words: String = (0..60).map(|i| format!("d{i}/")).collect();
    let lines = |size: u32| -> String {
        (0..4)
            .map(|i| format!("{words}f{i} {}\\n", size + i))
            .collect()
    };
    let out = run_sets(
        &double(&format!("print '{}'", lines(100))),
        &double(&format!("print '{}'", lines(900))),
        &sets,
        &[],
    );
    assert_exit(&out, 3);
    let case = only_case(&json_report(&out), &out);
    let reason = case["verdict"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("normalizers hide differences"), "{out}");
}

#[test]
fn a_short_output_with_a_timing_masked_passes_the_trust_check() {
    // Most of the first line is the timing, which the mask is there to hide; the
    // other line is compared whole.
    let dir = temp_dir();
    let rule = "[rule timing]\nkind = mask\nstream = stdout\npattern = \\d+ ?(ns|us)\n";
    let sets = one_set_file(dir.path(), rule);
    let out = run_sets(
        &double("print 'took 987654321us\\nwalked 12 folders\\n'"),
        &double("print 'took 987654321us\\nwalked 12 folders\\n'"),
        &sets,
        &[],
    );
    assert_exit(&out, 0);
    let out = run_sets(
        &double("print 'took 987654321us\\nwalked 12 folders\\n'"),
        &double("print 'took 12us\\nwalked 12 folders\\n'"),
        &sets,
        &[],
    );
    assert_exit(&out, 0);
}

#[test]
fn an_output_too_large_to_normalize_is_an_error_where_rules_apply() {
    // Over the in-memory limit a mask cannot run: "differs" could be wrong, so
    // the case cannot be judged. Without a rule it is a plain difference.
    let dir = temp_dir();
    let masked = one_set_file(
        dir.path(),
        "[rule numbers]\nkind = mask\nstream = stdout\npattern = line [0-9]+\n",
    );
    let (ours, theirs) = (double("bytes 6M"), double("bytes 6M 10"));
    let out = run_sets(&ours, &theirs, &masked, &[]);
    assert_exit(&out, 3);
    let case = only_case(&json_report(&out), &out);
    let reason = case["verdict"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("too large to normalize"), "{out}");
    let exact = dir.path().join("exact.sets");
    std::fs::write(&exact, "operand =\n[only]\n(none)\n").unwrap();
    let out = run_sets(&ours, &theirs, &exact, &[]);
    assert_exit(&out, 1);
    let out = run_sets(&ours, &ours, &masked, &[]);
    assert_exit(&out, 0);
}

#[test]
fn lines_too_many_to_sort_in_memory_are_compared_as_a_set() {
    // Where sorting lines is the only rule, a large output in another order is
    // still order-only, and one with a changed line still differs.
    let dir = temp_dir();
    let sorted = one_set_file(
        dir.path(),
        "[rule order]\nkind = sort-lines\nstream = stdout\n",
    );
    // 200,000 lines of 25 bytes: over the 4 MiB limit.
    let up = "sh -c 'seq -f %024g 1 200000'";
    let down = "sh -c 'seq -f %024g 200000 -1 1'";
    let out = run_sets(up, down, &sorted, &["--runs", "2"]);
    assert_exit(&out, 0);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(case["verdict"]["kind"], "order-only", "{out}");
    assert!(
        case["notes"].to_string().contains("compared as a set"),
        "{out}"
    );
    // The rule that made it a set's comparison fired, and the first difference
    // is shown a line at a time under its header.
    assert_eq!(case["fired"][0]["rule"], "order", "{out}");
    let text = text_report(&out);
    let shown = (text.lines())
        .skip_while(|l| !l.contains("first displaced lines"))
        .skip(1)
        .take_while(|l| l.starts_with("     "))
        .count();
    assert!(
        shown >= 3,
        "the displaced lines are indented under their header\n{text}"
    );
    let out = run_sets(up, "sh -c 'seq -f %024g 2 200001'", &sorted, &[]);
    assert_exit(&out, 1);
    let out = run_sets(up, "sh -c 'seq -f %024g 1 200000; echo 1'", &sorted, &[]);
    assert_exit(&out, 1);
}

#[test]
fn a_mask_over_a_thread_id_passes_the_trust_check() {
    // The mask a panic message needs hides a few bytes of one line: allowed.
    let dir = temp_dir();
    let rule = "[rule thread-id]\nkind = mask\nstream = stdout\npattern = \\(\\d+\\) panicked\nplaceholder = (<id>) panicked\n";
    let sets = one_set_file(dir.path(), rule);
    let panic = |id: &str| {
        double(&format!(
            "print \"thread 'main' ({id}) panicked at src/main.rs:3:5:\\nboom\\nnote: run with RUST_BACKTRACE=1\\n\""
        ))
    };
    let out = run_sets(&panic("123"), &panic("98765"), &sets, &[]);
    assert_exit(&out, 0);
    let case = only_case(&json_report(&out), &out);
    assert_eq!(
        case["verdict"]["kind"], "equal-after-normalization",
        "{out}"
    );
}

#[test]
fn a_mask_that_swallows_whole_lines_is_refused_when_the_file_loads() {
    let dir = temp_dir();
    for (pattern, why) in [
        (".*", "pattern `.*` matches the empty text"),
        (".+", "mask `.+` swallows the whole line"),
    ] {
        let rule = format!("[rule everything]\nkind = mask\nstream = both\npattern = {pattern}\n");
        let sets = one_set_file(dir.path(), &rule);
        let printer = double("print 'a\\n'");
        let out = run_sets(&printer, &printer, &sets, &[]);
        assert_exit(&out, 2);
        let expected = format!("{}:{}: {why}", sets.display(), line_of(&sets, "pattern ="));
        assert!(text_report(&out).contains(&expected), "{expected}\n{out}");
        assert!(out.stdout.is_empty(), "no case ran\n{out}");
    }
}
