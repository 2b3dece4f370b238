//! The terminal report: what ran against what, a summary row per tree, then every
//! case that is not identical with each arm's repro command and the diff.

use std::io::{self, Write};

use crate::outcome::{CaseOutcome, RunOutcome, StreamVerdict, Verdict, VERDICT_LABELS};

pub fn write(outcome: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "reference: {}",
        shell_words::join(&outcome.reference.command)
    )?;
    writeln!(
        out,
        "candidate: {}",
        shell_words::join(&outcome.candidate.command)
    )?;
    writeln!(out, "flag sets: {}", outcome.flag_sets)?;
    if outcome.runs > 1 {
        writeln!(out, "runs: each arm ran each case {} times", outcome.runs)?;
    }
    if outcome.self_check {
        writeln!(out, "self-check: the reference ran against itself")?;
    }
    writeln!(out, "arms ran as: {}", outcome.arms_ran_as)?;
    for tree in &outcome.trees {
        let c = tree.counts;
        let origin = match (tree.built, tree.kept) {
            (true, true) => "built and kept",
            (true, false) => "built",
            (false, _) => "given",
        };
        let other = if c.other > 0 {
            format!(", {} other", thousands(c.other))
        } else {
            String::new()
        };
        writeln!(
            out,
            "{}: {} entries ({} files, {} folders, {} symlinks{other}), {origin} at {}",
            tree.name,
            thousands(c.entries),
            thousands(c.files),
            thousands(c.folders),
            thousands(c.symlinks),
            tree.path
        )?;
    }
    for tree in &outcome.trees {
        for skipped in &tree.skipped {
            writeln!(out, "{}: skipped {skipped}", tree.name)?;
        }
    }
    for warning in &outcome.warnings {
        writeln!(out, "warning: {warning}")?;
    }
    writeln!(out)?;
    summary_table(outcome, out)?;
    for case in outcome
        .cases
        .iter()
        .filter(|c| c.verdict != Verdict::Identical)
    {
        writeln!(out)?;
        case_detail(case, out)?;
    }
    if !outcome.rules.is_empty() {
        writeln!(out)?;
        for rule in &outcome.rules {
            let used = if rule.unused {
                "unused: it never fired in this run".to_string()
            } else {
                format!(
                    "fired {} times in {} cases",
                    rule.times_fired, rule.cases_fired
                )
            };
            writeln!(
                out,
                "rule {} ({} on {}, {}): {used}",
                rule.name, rule.kind, rule.stream, rule.declared_at
            )?;
        }
    }
    writeln!(out)?;
    writeln!(out, "{}", closing_line(outcome))?;
    out.flush()
}

fn summary_table(outcome: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    let header = [
        "Tree",
        "Sets",
        "Identical",
        "Order-only",
        "Normalized",
        "Differs",
        "Flaky",
        "Errors",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for tree in &outcome.trees {
        let sets = outcome.cases.iter().filter(|c| c.tree == tree.name).count();
        let mut row = vec![tree.name.clone(), sets.to_string()];
        for label in VERDICT_LABELS {
            row.push(outcome.count(Some(&tree.name), label).to_string());
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| -> String {
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i == 0 {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    writeln!(out, "{}", line(header.to_vec()))?;
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    writeln!(out, "|-{}-|", rule.join("-|-"))?;
    for row in &rows {
        writeln!(out, "{}", line(row.iter().map(String::as_str).collect()))?;
    }
    Ok(())
}

fn case_detail(case: &CaseOutcome, out: &mut dyn Write) -> io::Result<()> {
    let what = match &case.verdict {
        Verdict::Error { reason } => format!("error: {reason}"),
        Verdict::TreeChanged { arm, .. } if arm == crate::matrix::EARLIER => {
            "tree-changed: the tree had already changed before this case".to_string()
        }
        Verdict::TreeChanged { arm, .. } => {
            format!("tree-changed: the tree moved while the {arm} arm ran")
        }
        other => other.label().to_string(),
    };
    writeln!(
        out,
        "== {} [{}] {}: {what}",
        case.tree, case.group, case.set
    )?;
    for (name, arm) in [
        ("reference", &case.reference),
        ("candidate", &case.candidate),
    ] {
        writeln!(
            out,
            "   {name}: {}  ({}, {:.0} ms)",
            arm.repro,
            arm.status.describe(),
            arm.duration_ms
        )?;
    }
    if let Verdict::TreeChanged { changes, .. } = &case.verdict {
        for change in changes {
            writeln!(out, "   changed: {change}")?;
        }
    }
    for stream in &case.streams {
        match stream.verdict {
            StreamVerdict::Identical => {}
            StreamVerdict::OrderOnly => {
                writeln!(
                    out,
                    "   {} is order-only; first displaced lines:",
                    stream.stream.name()
                )?;
                for line in &stream.displaced {
                    writeln!(out, "     {line}")?;
                }
            }
            StreamVerdict::EqualAfterNormalization => {
                writeln!(
                    out,
                    "   {} is equal after normalization",
                    stream.stream.name()
                )?;
            }
            StreamVerdict::Differs => {
                writeln!(out, "   {} differs:", stream.stream.name())?;
                if let Some(diff) = &stream.diff {
                    for line in diff.lines() {
                        writeln!(out, "     {line}")?;
                    }
                }
            }
        }
    }
    if let Verdict::Flaky { arms } = &case.verdict {
        for arm in arms {
            writeln!(
                out,
                "   the {} arm gave {} different outputs:",
                arm.arm,
                arm.variants.len()
            )?;
            for (i, variant) in arm.variants.iter().enumerate() {
                writeln!(
                    out,
                    "     variant {}: {}× (runs {}), {}",
                    i + 1,
                    variant.runs.len(),
                    runs_list(&variant.runs),
                    variant.status
                )?;
                if let Some(diff) = &variant.diff {
                    for line in diff.lines() {
                        writeln!(out, "       {line}")?;
                    }
                }
            }
        }
    }
    if !case.fired.is_empty() {
        let fired: Vec<String> = case
            .fired
            .iter()
            .map(|f| format!("{} ×{}", f.rule, f.times))
            .collect();
        writeln!(out, "   rules fired: {}", fired.join(", "))?;
    }
    for note in &case.notes {
        writeln!(out, "   note: {note}")?;
    }
    Ok(())
}

/// `1, 2, 5` from run numbers, cut after ten.
fn runs_list(runs: &[usize]) -> String {
    let shown: Vec<String> = runs.iter().take(10).map(usize::to_string).collect();
    let more = runs.len().saturating_sub(10);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// `61007` as `61,007`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn closing_line(outcome: &RunOutcome) -> String {
    let counts: Vec<String> = VERDICT_LABELS
        .iter()
        .map(|label| (label, outcome.count(None, label)))
        .filter(|(label, n)| *n > 0 || matches!(**label, "identical" | "differs" | "error"))
        .map(|(label, n)| match *label {
            "error" if n != 1 => format!("{n} errors"),
            "error" => "1 error".to_string(),
            "differs" if n != 1 => format!("{n} differ"),
            other => format!("{n} {other}"),
        })
        .collect();
    let verdict = match outcome.exit_code() {
        crate::exit::ALL_EQUAL if outcome.count(None, "identical") == outcome.cases.len() => {
            "all identical"
        }
        crate::exit::ALL_EQUAL => "all equal (some only after the flag-set file's rules)",
        crate::exit::DIFFERENCES => "DIFFERENCES FOUND",
        _ => "HARNESS ERRORS: some cases could not be judged",
    };
    format!(
        "{} cases: {}: {verdict}",
        outcome.cases.len(),
        counts.join(", ")
    )
}
