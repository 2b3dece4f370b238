//! The terminal report: what ran against what, a summary row per tree, then every
//! case that is not identical with each arm's repro command and the diff.

use std::io::{self, Write};

use crate::outcome::{CaseOutcome, RunOutcome, Stream, Verdict};

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
    writeln!(out)?;
    writeln!(out, "{}", closing_line(outcome))?;
    out.flush()
}

fn summary_table(outcome: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    let header = ["Tree", "Sets", "Identical", "Differs", "Errors"];
    let mut rows: Vec<[String; 5]> = Vec::new();
    for tree in &outcome.trees {
        let cases: Vec<&CaseOutcome> = outcome
            .cases
            .iter()
            .filter(|c| c.tree == tree.name)
            .collect();
        let count = |pred: fn(&Verdict) -> bool| {
            cases
                .iter()
                .filter(|c| pred(&c.verdict))
                .count()
                .to_string()
        };
        rows.push([
            tree.name.clone(),
            cases.len().to_string(),
            count(|v| *v == Verdict::Identical),
            count(|v| *v == Verdict::Differs),
            count(Verdict::is_error),
        ]);
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
        Verdict::Identical => "identical".to_string(),
        Verdict::Differs => "differs".to_string(),
        Verdict::Error { reason } => format!("error: {reason}"),
        Verdict::TreeChanged { arm, .. } if arm == crate::matrix::EARLIER => {
            "tree-changed: the tree had already changed before this case".to_string()
        }
        Verdict::TreeChanged { arm, .. } => {
            format!("tree-changed: the tree moved while the {arm} arm ran")
        }
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
    for stream in case.streams.iter().filter(|s| !s.identical) {
        let name = match stream.stream {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
            Stream::Status => "exit status",
        };
        writeln!(out, "   {name} differs:")?;
        if let Some(diff) = &stream.diff {
            for line in diff.lines() {
                writeln!(out, "     {line}")?;
            }
        }
    }
    Ok(())
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
    let total = outcome.cases.len();
    let identical = outcome
        .cases
        .iter()
        .filter(|c| c.verdict == Verdict::Identical)
        .count();
    let differs = outcome
        .cases
        .iter()
        .filter(|c| c.verdict == Verdict::Differs)
        .count();
    let errors = total - identical - differs;
    let verdict = match outcome.exit_code() {
        crate::exit::ALL_EQUAL => "all identical",
        crate::exit::DIFFERENCES => "DIFFERENCES FOUND",
        _ => "HARNESS ERRORS: some cases could not be judged",
    };
    format!("{total} cases: {identical} identical, {differs} differ, {errors} errors: {verdict}")
}
