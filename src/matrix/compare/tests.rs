//! Judging whole cases from runs captured on disk: flakiness under `--runs` (how
//! many runs it takes, what is kept of them, which runs each variant lists, how many
//! variants get a diff), the limits past which streams are compared from disk or
//! line by line, order-only against equal after normalization, the exit status, the
//! wording of an arm's error, and the rules tallied on the way.

use std::path::Path;
use std::time::Duration;

use super::show::LONG_LINE;
use super::{judge, CaseRules, Judge, Judged, Tally, DIFF_CAP, NORMALIZE_CAP};
use crate::matrix::exec::Captured;
use crate::normalize::{Rule, RuleDraft};
use crate::outcome::{ArmStatus, Fired, LineCounts, LineOrder, Stream, StreamVerdict, Verdict};

/// Captured runs written to a temp folder of their own.
struct Runs {
    dir: tempfile::TempDir,
    made: usize,
}

impl Runs {
    fn new() -> Runs {
        Runs {
            dir: tempfile::tempdir().expect("a temp folder"),
            made: 0,
        }
    }

    /// A run that exited 0, printed `stdout` and nothing on stderr.
    fn printed(&mut self, stdout: &[u8]) -> Captured {
        self.ended(stdout, ArmStatus::Exited { code: 0 })
    }

    fn ended(&mut self, stdout: &[u8], status: ArmStatus) -> Captured {
        self.gave(stdout, b"", status)
    }

    fn gave(&mut self, stdout: &[u8], stderr: &[u8], status: ArmStatus) -> Captured {
        self.made += 1;
        let (out, err) = (
            self.dir.path().join(format!("{}.out", self.made)),
            self.dir.path().join(format!("{}.err", self.made)),
        );
        std::fs::write(&out, stdout).expect("stdout is written");
        std::fs::write(&err, stderr).expect("stderr is written");
        Captured {
            status,
            stdout: out,
            stderr: err,
            duration: Duration::ZERO,
            left_running: 0,
        }
    }
}

/// A rule named `name` on stdout, for every group, with the keys given.
fn stdout_rule(name: &str, keys: &[(&str, &str)]) -> Rule {
    let keys = [("stream", "stdout")].iter().chain(keys);
    RuleDraft {
        name: name.into(),
        line: 1,
        keys: (keys.enumerate())
            .map(|(i, (key, value))| (key.to_string(), value.to_string(), i + 2))
            .collect(),
    }
    .build()
    .expect("the rule is valid")
}

fn judged(reference: &[Captured], candidate: &[Captured], rules: &[Rule]) -> Judged {
    let rules = CaseRules {
        group: "group",
        rules,
    };
    judge(reference, candidate, Path::new("/no/such/tree"), &rules)
}

fn stdout_verdict(judged: &Judged) -> StreamVerdict {
    judged
        .streams
        .iter()
        .find(|s| s.stream == Stream::Stdout)
        .expect("stdout was compared")
        .verdict
}

/// Lines just over the limit for loading a stream, numbered in order; `swapped`:
/// with the first two the other way round, so the lines are the same but not
/// their order (and any in-order diff is short to find).
fn too_large_to_load(swapped: bool) -> Vec<u8> {
    let line = |i: usize| format!("{i:024}\n").into_bytes();
    let mut lines: Vec<Vec<u8>> = (0..170_000).map(line).collect();
    if swapped {
        lines.swap(0, 1);
    }
    let text = lines.concat();
    assert!(text.len() as u64 > NORMALIZE_CAP);
    text
}

#[test]
fn an_arm_whose_runs_all_agree_is_not_flaky_and_has_no_variants() {
    let mut runs = Runs::new();
    let same: Vec<Captured> = (0..3).map(|_| runs.printed(b"a\nb\n")).collect();
    let rules = CaseRules {
        group: "group",
        rules: &[],
    };
    let mut judge_of_case = Judge {
        root: b"/no/such/tree",
        rules: &rules,
        tally: Tally::default(),
        notes: Vec::new(),
        unjudgeable: None,
        hiding: None,
    };
    let variants = judge_of_case.variants(&same).expect("the runs are read");
    assert!(variants.is_empty(), "{variants:?}");
    assert_eq!(judged(&same, &same, &[]).verdict, Verdict::Identical);
}

#[test]
fn two_runs_that_disagree_make_the_arm_flaky() {
    let mut runs = Runs::new();
    let alternating = [runs.printed(b"a\n"), runs.printed(b"b\n")];
    let steady = [runs.printed(b"a\n"), runs.printed(b"a\n")];
    let Verdict::Flaky { arms } = judged(&alternating, &steady, &[]).verdict else {
        panic!("two runs that disagree are flaky");
    };
    assert_eq!(arms.len(), 1);
    assert_eq!(arms[0].arm, "reference");
    let runs_of: Vec<&[usize]> = arms[0].variants.iter().map(|v| &v.runs[..]).collect();
    assert_eq!(runs_of, [&[1][..], &[2][..]]);
}

#[test]
fn a_variant_lists_every_run_that_gave_it() {
    let mut runs = Runs::new();
    let alternating: Vec<Captured> = (0..5)
        .map(|i| runs.printed(if i % 2 == 0 { b"a\n" } else { b"b\n" }))
        .collect();
    let Verdict::Flaky { arms } = judged(&alternating, &alternating, &[]).verdict else {
        panic!("runs that alternate are flaky");
    };
    let runs_of: Vec<&[usize]> = arms[0].variants.iter().map(|v| &v.runs[..]).collect();
    assert_eq!(runs_of, [&[1, 3, 5][..], &[2, 4][..]]);
}

#[test]
fn variants_past_the_fifth_are_listed_without_a_diff() {
    let mut runs = Runs::new();
    let each_different: Vec<Captured> = (1..=7)
        .map(|i| runs.printed(format!("{i}\n").as_bytes()))
        .collect();
    let steady: Vec<Captured> = (0..7).map(|_| runs.printed(b"1\n")).collect();
    let Verdict::Flaky { arms } = judged(&steady, &each_different, &[]).verdict else {
        panic!("seven different outputs are flaky");
    };
    let diffs: Vec<Option<&str>> = arms[0].variants.iter().map(|v| v.diff.as_deref()).collect();
    assert_eq!(diffs.len(), 7);
    assert_eq!(
        diffs[0], None,
        "the first variant is what the others are shown against"
    );
    for (i, diff) in diffs.iter().enumerate().take(6).skip(1) {
        let changed = format!("-1\n+{}\n", i + 1);
        assert!(diff.is_some_and(|d| d.contains(&changed)), "{i}: {diff:?}");
    }
    assert_eq!(
        diffs[6],
        Some("(diffs are shown for the first 5 variants only)\n")
    );
}

#[test]
fn an_arm_error_names_the_run_only_when_there_were_several() {
    let mut runs = Runs::new();
    let timed_out = ArmStatus::TimedOut { after_secs: 1.5 };
    let twice = [runs.printed(b"a\n"), runs.ended(b"", timed_out.clone())];
    let fine = [runs.printed(b"a\n"), runs.printed(b"a\n")];
    let reason = error_reason(judged(&twice, &fine, &[]), "a timed-out run is an error");
    assert!(
        reason.starts_with("reference arm (run 2) timed out after 1.5s"),
        "{reason}"
    );
    let once = [runs.ended(b"", timed_out)];
    let reason = error_reason(
        judged(&fine[..1], &once, &[]),
        "a timed-out run is an error",
    );
    assert!(
        reason.starts_with("candidate arm timed out after 1.5s"),
        "{reason}"
    );
}

#[test]
fn outputs_too_large_to_load_that_differ_only_in_order_differ_when_no_rule_sorts() {
    let mut runs = Runs::new();
    let ours = runs.printed(&too_large_to_load(false));
    let theirs = runs.printed(&too_large_to_load(true));
    let judged = judged(&[ours], &[theirs], &[]);
    assert_eq!(judged.verdict, Verdict::Differs);
    assert_eq!(stdout_verdict(&judged), StreamVerdict::Differs);
    assert!(
        judged.notes[0].starts_with("stdout: larger than 4 MiB, so compared line by line"),
        "{:?}",
        judged.notes
    );
    // The first two lines swapped: a single line agreeing is no place to agree
    // again, so both count as changed, on each side.
    let counted = LineCounts {
        compared: LineOrder::InOrder,
        only_in_reference: 2,
        only_in_candidate: 2,
        differing: Some(2),
        hunks: Some(1),
    };
    assert_eq!(judged.streams[0].lines, Some(counted));
}

#[test]
fn runs_too_large_to_load_in_another_order_are_flaky_unless_a_rule_sorts_them() {
    let mut runs = Runs::new();
    let (ascending, descending) = (too_large_to_load(false), too_large_to_load(true));
    let shuffled = [runs.printed(&ascending), runs.printed(&descending)];
    let steady = [runs.printed(&ascending), runs.printed(&ascending)];
    let unsorted = judged(&shuffled, &steady, &[]);
    assert!(
        matches!(unsorted.verdict, Verdict::Flaky { .. }),
        "{:?}",
        unsorted.verdict
    );
    let sorted = judged(
        &shuffled,
        &steady,
        &[stdout_rule("order", &[("kind", "sort-lines")])],
    );
    assert_eq!(sorted.verdict, Verdict::Identical, "{:?}", sorted.notes);
}

#[test]
fn outputs_too_large_to_sort_in_another_order_tally_the_sorting_rule() {
    let mut runs = Runs::new();
    let ours = runs.printed(&too_large_to_load(false));
    let theirs = runs.printed(&too_large_to_load(true));
    let judged = judged(
        &[ours],
        &[theirs],
        &[stdout_rule("order", &[("kind", "sort-lines")])],
    );
    assert_eq!(judged.verdict, Verdict::OrderOnly);
    let before_sorting = &judged.streams[0].displaced;
    // One line each, the header first, as every displaced line is.
    assert_eq!(
        before_sorting[0], "(the first difference, before sorting)",
        "{before_sorting:?}"
    );
    assert!(
        before_sorting.len() > 1 && before_sorting.iter().all(|l| !l.contains('\n')),
        "{before_sorting:?}"
    );
    assert!(
        judged.notes[0]
            .starts_with("stdout: larger than 4 MiB, so its lines were compared as a set"),
        "{:?}",
        judged.notes
    );
    assert_eq!(
        judged.fired,
        [Fired {
            rule: "order".into(),
            times: 1
        }]
    );
}

#[test]
fn a_text_of_exactly_the_diff_limit_gets_a_full_diff() {
    // 32-byte lines, exactly as many as fill the limit.
    let line = |i: usize, mark: &str| format!("{mark}{i:030}\n");
    let lines = DIFF_CAP / 32;
    let ours: String = (0..lines).map(|i| line(i, "a")).collect();
    let theirs: String = (0..lines)
        .map(|i| line(i, if i == lines / 2 { "b" } else { "a" }))
        .collect();
    assert_eq!((ours.len(), theirs.len()), (DIFF_CAP, DIFF_CAP));
    let mut runs = Runs::new();
    let judged = judged(
        &[runs.printed(ours.as_bytes())],
        &[runs.printed(theirs.as_bytes())],
        &[],
    );
    assert!(judged.notes.is_empty(), "{:?}", judged.notes);
    let stdout = &judged.streams[0];
    let diff = stdout.diff.as_deref().expect("a diff");
    assert!(
        diff.starts_with("--- reference\n+++ candidate\n@@ "),
        "{diff}"
    );
    assert_eq!(stdout.lines, None, "a full diff counts no lines apart");
}

#[test]
fn a_long_line_on_one_side_shows_only_the_first_difference() {
    let long = format!("{}\n", "x".repeat(LONG_LINE + 1));
    let mut runs = Runs::new();
    let judged = judged(
        &[runs.printed(b"short\n")],
        &[runs.printed(long.as_bytes())],
        &[],
    );
    assert!(
        judged
            .notes
            .iter()
            .any(|n| n.contains("a line longer than 4096 bytes")),
        "{:?}",
        judged.notes
    );
}

/// Why the case was judged an error; `expected` says why it should have been one.
fn error_reason(judged: Judged, expected: &str) -> String {
    match judged.verdict {
        Verdict::Error { reason } => reason,
        other => panic!("{expected}, yet the verdict is {other:?}"),
    }
}

/// The diffs of a flaky arm's variants, the first's (none) left out.
fn variant_diffs(judged: &Judged) -> Vec<String> {
    let Verdict::Flaky { arms } = &judged.verdict else {
        panic!("not flaky: {:?}", judged.verdict);
    };
    (arms[0].variants[1..].iter())
        .map(|v| v.diff.clone().expect("a diff"))
        .collect()
}

#[test]
fn a_variants_diff_shows_only_the_streams_and_the_status_that_differ() {
    let mut runs = Runs::new();
    let ok = || ArmStatus::Exited { code: 0 };
    let varying = [
        runs.gave(b"a\n", b"", ok()),
        runs.gave(b"a\n", b"warn\n", ok()),
        runs.gave(b"a\n", b"", ArmStatus::Exited { code: 1 }),
        runs.gave(b"b\n", b"", ok()),
    ];
    let steady: Vec<Captured> = (0..4).map(|_| runs.printed(b"a\n")).collect();
    let diffs = variant_diffs(&judged(&steady, &varying, &[]));
    assert_eq!(
        diffs,
        [
            "stderr:\n--- variant 1\n+++ this variant\n@@ -0,0 +1 @@\n+warn\n",
            "exit status:\n-exit 0\n+exit 1\n",
            "stdout:\n--- variant 1\n+++ this variant\n@@ -1 +1 @@\n-a\n+b\n",
        ]
    );
}

#[test]
fn variants_too_large_to_load_are_diffed_from_disk_where_they_differ() {
    let mut runs = Runs::new();
    let ok = || ArmStatus::Exited { code: 0 };
    let (ascending, swapped) = (too_large_to_load(false), too_large_to_load(true));
    let in_stdout = [runs.printed(&ascending), runs.printed(&swapped)];
    let steady = [runs.printed(&ascending), runs.printed(&ascending)];
    let diffs = variant_diffs(&judged(&steady, &in_stdout, &[]));
    assert!(diffs[0].starts_with("stdout:\n"), "{}", diffs[0]);
    assert!(
        diffs[0].contains("\n-000000000000000000000000\n"),
        "{}",
        diffs[0]
    );
    let in_stderr = [
        runs.gave(&ascending, b"", ok()),
        runs.gave(&ascending, b"warn\n", ok()),
    ];
    let diffs = variant_diffs(&judged(&steady, &in_stderr, &[]));
    assert!(
        diffs[0].starts_with("stderr:\n"),
        "the equal stdout is left out: {}",
        diffs[0]
    );
}

#[test]
fn runs_too_large_to_normalize_that_differ_raw_cannot_be_told_flaky() {
    let mut runs = Runs::new();
    let (ascending, swapped) = (too_large_to_load(false), too_large_to_load(true));
    let varying = [runs.printed(&ascending), runs.printed(&swapped)];
    let steady = [runs.printed(&ascending), runs.printed(&ascending)];
    let reason = error_reason(
        judged(&steady, &varying, &[mask("ids", "^0000")]),
        "runs that differ raw past the limit, with a rule, cannot be judged",
    );
    assert!(
        reason.contains("whether the arm is flaky cannot be told"),
        "{reason}"
    );
}

#[test]
fn runs_that_agree_only_once_normalized_count_the_rules_they_needed() {
    let mut runs = Runs::new();
    let timed = |ms: u32| format!("ok\nfine\ntook {ms} ms\n").into_bytes();
    let varying = [
        runs.printed(&timed(1)),
        runs.printed(&timed(2)),
        runs.printed(&timed(1)),
    ];
    let steady: Vec<Captured> = (0..3).map(|_| runs.printed(&timed(1))).collect();
    let judged = judged(&steady, &varying, &[mask("timing", "took [0-9]+ ms")]);
    assert_eq!(judged.verdict, Verdict::Identical, "{:?}", judged.notes);
    let timing = Fired {
        rule: "timing".into(),
        times: 1,
    };
    assert_eq!(
        judged.fired,
        [timing],
        "run 2 needed the mask, runs 1 and 3 did not"
    );
}

/// A mask on stdout named `name` with the pattern given.
fn mask(name: &str, pattern: &str) -> Rule {
    stdout_rule(name, &[("kind", "mask"), ("pattern", pattern)])
}

#[test]
fn the_trust_check_fails_rules_that_hide_a_change_in_more_than_half_the_lines() {
    // The mask hides the number of every `n` line, and of no `k` line.
    let lines = |hidden: usize| -> Vec<u8> {
        (0..8)
            .map(|i| format!("{} {i}\n", if i < hidden { 'n' } else { 'k' }))
            .collect::<String>()
            .into_bytes()
    };
    let mut runs = Runs::new();
    let rules = [mask("numbers", "n [0-9]")];
    let half = lines(4);
    let judged_half = judged(&[runs.printed(&half)], &[runs.printed(&half)], &rules);
    assert_eq!(
        judged_half.verdict,
        Verdict::Identical,
        "4 of 8 lines is not more than half"
    );
    let most = lines(5);
    let reason = error_reason(
        judged(&[runs.printed(&most)], &[runs.printed(&most)], &rules),
        "5 of 8 lines is more than half",
    );
    assert!(
        reason.contains("(hidden in 5 of 8 lines sampled: lines 1, 2, 3, 4, 5…)"),
        "{reason}"
    );
}

#[test]
fn the_trust_check_changes_16_places_and_4_in_a_text_over_a_mib() {
    // Digits only, and a mask over every number: every one-byte change is hidden.
    let numbers = |len: usize| -> Vec<u8> {
        let mut text: Vec<u8> = (0..)
            .flat_map(|i| format!("{i:07}\n").into_bytes())
            .take(len)
            .collect();
        *text.last_mut().unwrap() = b'\n';
        text
    };
    let mut runs = Runs::new();
    // The second rule never changes anything, so it hides nothing and is not blamed.
    let rules = [mask("numbers", "[0-9]+"), mask("unused", "zzz")];
    for (len, places) in [(400, 16), (1 << 20, 16), ((1 << 20) + 8, 4)] {
        let text = numbers(len);
        let reason = error_reason(
            judged(&[runs.printed(&text)], &[runs.printed(&text)], &rules),
            "a mask over every number hides every change",
        );
        let tried = format!("(tried at {places} places spread over it)");
        assert!(reason.contains(&tried), "{len} bytes: {reason}");
        assert!(reason.ends_with("after rules numbers"), "{reason}");
    }
}

#[test]
fn the_trust_check_changes_each_place_once_and_punctuation_where_there_is_nothing_else() {
    let mut runs = Runs::new();
    let mut hidden_at = |text: &[u8], rule: Rule| {
        let judged = judged(&[runs.printed(text)], &[runs.printed(text)], &[rule]);
        error_reason(judged, "the mask hides every change the check makes")
    };
    // Two digits: sixteen places asked for, two there to change.
    let reason = hidden_at(b"12\n", mask("numbers", "[0-9]+"));
    assert!(
        reason.contains("(tried at 2 places spread over it)"),
        "{reason}"
    );
    // No letter or digit anywhere: the dashes are changed (to `x`), never the
    // line breaks, whose change would show as lines joined.
    let reason = hidden_at(&b"----\n".repeat(8), mask("dashes", "-x|x-|--"));
    assert!(
        reason.contains("(tried at 16 places spread over it)"),
        "{reason}"
    );
}

#[test]
fn outputs_equal_once_sorted_are_order_only_and_show_what_moved_while_masked_ones_are_not() {
    let mut runs = Runs::new();
    let sorted = stdout_rule("sorted", &[("kind", "sort-lines")]);
    let timing = mask("timing", "[0-9]+ ms");
    let case = |runs: &mut Runs, ours: &str, theirs: &str, rules: &[Rule]| {
        let (ours, theirs) = (
            runs.printed(ours.as_bytes()),
            runs.printed(theirs.as_bytes()),
        );
        judged(&[ours], &[theirs], rules)
    };
    let reordered = case(
        &mut runs,
        "a\nb\nc\n",
        "c\na\nb\n",
        std::slice::from_ref(&sorted),
    );
    assert_eq!(reordered.verdict, Verdict::OrderOnly);
    assert_eq!(stdout_verdict(&reordered), StreamVerdict::OrderOnly);
    assert!(
        !reordered.streams[0].displaced.is_empty(),
        "the lines out of place are shown"
    );
    let masked = case(
        &mut runs,
        "ok\nfine\ntook 1 ms\n",
        "ok\nfine\ntook 2 ms\n",
        std::slice::from_ref(&timing),
    );
    assert_eq!(masked.verdict, Verdict::EqualAfterNormalization);
    assert_eq!(masked.streams[0].displaced, Vec::<String>::new());
    // Sorting alone does not make them equal: the mask was needed too.
    let both = case(
        &mut runs,
        "ok\nfine\ntook 1 ms\n",
        "fine\ntook 2 ms\nok\n",
        &[sorted, timing],
    );
    assert_eq!(both.verdict, Verdict::EqualAfterNormalization);
}

#[test]
fn exit_statuses_that_differ_show_both_and_equal_ones_show_nothing() {
    let mut runs = Runs::new();
    let status = |judged: &Judged| {
        let status = (judged.streams.iter())
            .find(|s| s.stream == Stream::Status)
            .expect("the status was compared");
        (status.verdict, status.diff.clone())
    };
    let ok = runs.printed(b"same\n");
    let failed = runs.ended(b"same\n", ArmStatus::Exited { code: 1 });
    let apart = judged(std::slice::from_ref(&ok), &[failed], &[]);
    assert_eq!(apart.verdict, Verdict::Differs);
    let shown = Some("-exit 0\n+exit 1\n".to_string());
    assert_eq!(status(&apart), (StreamVerdict::Differs, shown));
    let alike = judged(std::slice::from_ref(&ok), &[runs.printed(b"same\n")], &[]);
    assert_eq!(status(&alike), (StreamVerdict::Identical, None));
}

/// An arm that prints `{tree}` where the other prints the tree's path differs:
/// the root rewrite alone never makes two outputs equal.
#[test]
fn a_printed_placeholder_does_not_meet_the_trees_path() {
    let mut runs = Runs::new();
    let ours = runs.printed(b"size 5 /no/such/tree\n");
    let theirs = runs.printed(b"size 5 {tree}\n");
    let judged = judged(&[ours], &[theirs], &[]);
    assert_eq!(judged.verdict, Verdict::Differs, "{:?}", judged.streams);
    let diff = judged.streams[0].diff.as_deref().unwrap_or_default();
    assert!(diff.contains("+size 5 {tree #1}"), "{diff}");
    // The path on both sides is still equal after the rewrite.
    let same = judged_pair(
        &mut runs,
        b"at {tree} /no/such/tree\n",
        b"at {tree} /no/such/tree\n",
    );
    assert_eq!(same, Verdict::Identical);
}

fn judged_pair(runs: &mut Runs, ours: &[u8], theirs: &[u8]) -> Verdict {
    let (ours, theirs) = (runs.printed(ours), runs.printed(theirs));
    judged(&[ours], &[theirs], &[]).verdict
}
