//! GitHub Actions: workflow-command annotations (`::error`, `::warning`) for each
//! case that differs, is flaky or could not be judged and for each rule that never
//! fired, and the Markdown report sized for the step summary. Used only when the
//! environment says the run is inside GitHub Actions.

use std::io::{self, Write};

use super::{markdown, summary};
use crate::outcome::{CaseOutcome, RunOutcome, StreamVerdict, Verdict};

/// Annotations of one kind GitHub shows per step; more are dropped silently, so the
/// last one shown says how many more there were.
const ANNOTATIONS_PER_KIND: usize = 10;

/// Bytes a step summary may take: GitHub refuses the whole summary past 1 MiB.
const STEP_SUMMARY_BUDGET: usize = 1_000_000;

/// Diff lines of each stream an annotation carries; the rest is in the summary.
const DIFF_LINES_IN_ANNOTATION: usize = 30;

/// One workflow command waiting to be printed.
struct Annotation {
    title: String,
    message: String,
}

/// Prints the annotations for the run: errors for cases that differ or could not be
/// judged, warnings for flaky cases and rules that never fired.
pub fn write_annotations(outcome: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    for case in &outcome.cases {
        match &case.verdict {
            Verdict::Differs | Verdict::Error { .. } | Verdict::TreeChanged { .. } => {
                errors.push(case_annotation(case));
            }
            Verdict::Flaky { .. } => warnings.push(case_annotation(case)),
            Verdict::Identical | Verdict::OrderOnly | Verdict::EqualAfterNormalization => {}
        }
    }
    for rule in outcome.rules.iter().filter(|r| r.unused) {
        warnings.push(Annotation {
            title: format!("eqcheck: rule {} never fired", rule.name),
            message: format!(
                "the {} rule {} on {}, declared at {}, changed nothing in this run: these trees and sets did not need it, or its pattern no longer matches",
                rule.kind, rule.name, rule.stream, rule.declared_at
            ),
        });
    }
    emit(out, "error", errors)?;
    emit(out, "warning", warnings)?;
    out.flush()
}

/// Prints up to [`ANNOTATIONS_PER_KIND`] commands of one kind, the last saying how
/// many were left out when there are more.
fn emit(out: &mut dyn Write, kind: &str, mut annotations: Vec<Annotation>) -> io::Result<()> {
    if annotations.len() > ANNOTATIONS_PER_KIND {
        let left_out = annotations.len() - (ANNOTATIONS_PER_KIND - 1);
        annotations.truncate(ANNOTATIONS_PER_KIND - 1);
        annotations.push(Annotation {
            title: format!("eqcheck: {left_out} more {kind}s"),
            message: format!(
                "GitHub shows {ANNOTATIONS_PER_KIND} {kind} annotations per step: {left_out} more are in the step summary and the log"
            ),
        });
    }
    for annotation in annotations {
        writeln!(
            out,
            "::{kind} title={}::{}",
            property(&annotation.title),
            data(&annotation.message)
        )?;
    }
    Ok(())
}

fn case_annotation(case: &CaseOutcome) -> Annotation {
    let mut lines = vec![
        summary::verdict_text(&case.verdict),
        format!("reference: {}", case.reference.repro),
        format!("candidate: {}", case.candidate.repro),
    ];
    for stream in &case.streams {
        if stream.verdict != StreamVerdict::Differs {
            continue;
        }
        lines.push(format!("{} differs:", stream.stream.name()));
        if let Some(diff) = &stream.diff {
            let total = diff.lines().count();
            lines.extend(
                diff.lines()
                    .take(DIFF_LINES_IN_ANNOTATION)
                    .map(str::to_string),
            );
            if total > DIFF_LINES_IN_ANNOTATION {
                let more = total - DIFF_LINES_IN_ANNOTATION;
                lines.push(format!("... {more} more diff lines"));
            }
        }
    }
    if let Verdict::Flaky { arms } = &case.verdict {
        for arm in arms {
            lines.push(format!(
                "the {} arm gave {} different outputs",
                arm.arm,
                arm.variants.len()
            ));
        }
    }
    Annotation {
        title: format!("eqcheck: {}: {}", case.name(), case.verdict.label()),
        message: lines.join("\n"),
    }
}

/// The Markdown report for `GITHUB_STEP_SUMMARY`: in full when it fits GitHub's
/// limit, else without the per-case details, which stay in the log.
pub fn step_summary(outcome: &RunOutcome) -> io::Result<Vec<u8>> {
    let mut full = Vec::new();
    markdown::write(outcome, &mut full)?;
    if full.len() <= STEP_SUMMARY_BUDGET {
        return Ok(full);
    }
    let mut short = Vec::new();
    markdown::write_without_cases(outcome, &mut short)?;
    Ok(short)
}

/// Escapes a workflow command's message: GitHub reads `%`, CR and LF specially.
fn data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a workflow command's property value, where `:` and `,` end the value.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_properties_are_escaped_as_github_reads_them() {
        assert_eq!(data("100%\r\nnext"), "100%25%0D%0Anext");
        assert_eq!(property("a: b, c%"), "a%3A b%2C c%25");
    }

    #[test]
    fn past_the_per_step_limit_the_last_annotation_counts_the_rest() {
        let many = (0..12)
            .map(|i| Annotation {
                title: format!("t{i}"),
                message: "m".into(),
            })
            .collect();
        let mut out = Vec::new();
        emit(&mut out, "error", many).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), ANNOTATIONS_PER_KIND, "{text}");
        assert_eq!(
            text.lines().last().unwrap(),
            "::error title=eqcheck%3A 3 more errors::GitHub shows 10 error annotations per step: 3 more are in the step summary and the log"
        );
    }
}
