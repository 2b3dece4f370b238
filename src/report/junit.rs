//! The JUnit XML report (`--junit`): one test suite per flag-set group, one test
//! case per tree × set, so a CI system's test view shows each case as a test.
//! Equal verdicts pass, a difference is a failure carrying the diff, a case that
//! could not be judged is an error, and a flaky case is a failure marked flaky.
//! Times are the arms' own wall times.

use std::io::{self, Write};
use std::time::Duration;

use quick_junit::{
    FlakyOrRerun, NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestRerun, TestSuite,
};

use super::summary;
use crate::outcome::{ArmInfo, CaseOutcome, RunOutcome, StreamVerdict, Verdict};

pub fn write(outcome: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    build(outcome)
        .serialize(&mut *out)
        .map_err(io::Error::other)?;
    out.flush()
}

/// The whole report: suites in the order their groups first appear.
fn build(outcome: &RunOutcome) -> Report {
    let mut suites: Vec<(TestSuite, Duration)> = Vec::new();
    for case in &outcome.cases {
        let at = match suites
            .iter()
            .position(|(s, _)| s.name.as_str() == case.group)
        {
            Some(at) => at,
            None => {
                suites.push((new_suite(outcome, &case.group), Duration::ZERO));
                suites.len() - 1
            }
        };
        let (suite, time) = &mut suites[at];
        let took = arms_time(case);
        *time += took;
        let mut test_case = TestCase::new(format!("{}: {}", case.tree, case.set), status(case));
        test_case
            .set_classname(case.group.as_str())
            .set_time(took)
            .set_system_out(system_out(case));
        suite.add_test_case(test_case);
    }
    let mut report = Report::new("eqcheck");
    let mut total = Duration::ZERO;
    for (mut suite, time) in suites {
        suite.set_time(time);
        total += time;
        report.add_test_suite(suite);
    }
    report.set_time(total);
    report
}

/// A group's suite, with what ran against what as properties, so a suite read on
/// its own still names the builds.
fn new_suite(outcome: &RunOutcome, group: &str) -> TestSuite {
    let mut suite = TestSuite::new(group);
    let arm = |name: &str, arm: &ArmInfo| {
        let mut properties = vec![Property::new(name, shell_words::join(&arm.command))];
        if let Some(sha) = &arm.sha256 {
            properties.push(Property::new(format!("{name}.sha256"), sha.as_str()));
        }
        if let Some(built) = &arm.built_from {
            properties.push(Property::new(
                format!("{name}.built-from"),
                built.describe(),
            ));
        }
        properties
    };
    suite
        .add_properties(arm("reference", &outcome.reference))
        .add_properties(arm("candidate", &outcome.candidate))
        .add_property(Property::new("flag-sets", outcome.flag_sets.as_str()))
        .add_property(Property::new("arms-ran-as", outcome.arms_ran_as.as_str()));
    suite
}

/// Every run of both arms, added up.
fn arms_time(case: &CaseOutcome) -> Duration {
    let millis: f64 = [&case.reference, &case.candidate]
        .iter()
        .flat_map(|arm| &arm.durations_ms)
        .sum();
    Duration::try_from_secs_f64(millis / 1000.0).unwrap_or_default()
}

fn status(case: &CaseOutcome) -> TestCaseStatus {
    match &case.verdict {
        Verdict::Identical | Verdict::OrderOnly | Verdict::EqualAfterNormalization => {
            TestCaseStatus::success()
        }
        Verdict::Differs => {
            let differing: Vec<&str> = case
                .streams
                .iter()
                .filter(|s| s.verdict == StreamVerdict::Differs)
                .map(|s| s.stream.name())
                .collect();
            let diffs: Vec<String> = case
                .streams
                .iter()
                .filter(|s| s.verdict == StreamVerdict::Differs)
                .map(|s| {
                    let diff = s.diff.as_deref().unwrap_or("(no diff)\n");
                    format!("{} differs:\n{diff}", s.stream.name())
                })
                .collect();
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status
                .set_type("differs")
                .set_message(format!("differs: {}", differing.join(", ")))
                .set_description(diffs.join("\n"));
            status
        }
        // An arm that disagreed with itself was never compared, and the run exits 1
        // for it: a failure, with each extra output as a flaky run so CI systems
        // that know flakiness show it as such.
        Verdict::Flaky { arms } => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let which: Vec<&str> = arms.iter().map(|a| a.arm.as_str()).collect();
            status
                .set_type("flaky")
                .set_message(format!(
                    "flaky: the {} arm gave different outputs across runs",
                    which.join(" and ")
                ))
                .set_rerun_kind(FlakyOrRerun::Flaky);
            for arm in arms {
                for (i, variant) in arm.variants.iter().enumerate().skip(1) {
                    let mut rerun = TestRerun::new(NonSuccessKind::Failure);
                    rerun
                        .set_type("flaky")
                        .set_message(format!(
                            "{} arm, variant {} (runs {}): {}",
                            arm.arm,
                            i + 1,
                            summary::runs_list(&variant.runs),
                            variant.status
                        ))
                        .set_description(variant.diff.clone().unwrap_or_default());
                    status.add_rerun(rerun);
                }
            }
            status
        }
        Verdict::Error { .. } | Verdict::TreeChanged { .. } => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            let mut description = vec![
                format!("reference: {}", case.reference.status.describe()),
                format!("candidate: {}", case.candidate.status.describe()),
            ];
            if let Verdict::TreeChanged { changes, .. } = &case.verdict {
                description.extend(changes.iter().map(|c| format!("changed: {c}")));
            }
            status
                .set_type(case.verdict.label())
                .set_message(summary::verdict_text(&case.verdict))
                .set_description(description.join("\n"));
            status
        }
    }
}

/// The verdict, how to run each arm again, the rules that fired and any notes.
fn system_out(case: &CaseOutcome) -> String {
    let mut lines = vec![
        format!("verdict: {}", summary::verdict_text(&case.verdict)),
        format!("reference: {}", case.reference.repro),
        format!("candidate: {}", case.candidate.repro),
    ];
    if let Some(fired) = summary::fired_list(case) {
        lines.push(format!("rules fired: {fired}"));
    }
    lines.extend(case.notes.iter().map(|n| format!("note: {n}")));
    lines.join("\n") + "\n"
}
