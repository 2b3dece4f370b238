//! The bench's reports: a table shaped like the dust change's (Tree | Variant |
//! Wall A | Wall B | CPU A | CPU B | Peak A | Peak B | B/A), aligned for the
//! terminal or in Markdown, with the baseline, wrong runs, left-out runs and
//! warnings under it; and the JSON with every raw run. A row with a wrong run says
//! WRONG in its B/A column: a faster candidate that is wrong is never a speed-up.

use std::io::{self, Write};

use crate::outcome::bench::{BenchOutcome, BenchRow, BenchTree, Figures, Side, Spread};

/// How the table is laid out.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Columns padded to line up in a terminal.
    Aligned,
    /// A Markdown table.
    Markdown,
}

/// The JSON report: the whole outcome, every run included.
pub fn write_json(outcome: &BenchOutcome, out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, outcome)?;
    writeln!(out)
}

/// The table and what goes under it.
pub fn write_table(outcome: &BenchOutcome, layout: Layout, out: &mut dyn Write) -> io::Result<()> {
    write_heading(outcome, layout, out)?;
    let with_set = outcome.trees.iter().any(|t| {
        let set = |r: &BenchRow| (r.group.clone(), r.set.clone());
        t.rows
            .iter()
            .any(|r| t.rows.first().is_some_and(|first| set(first) != set(r)))
    });
    // Groups are shown only where two of them hold a set of one label.
    let with_group = outcome.trees.iter().any(|t| {
        t.rows
            .iter()
            .any(|r| (t.rows.iter()).any(|other| other.set == r.set && other.group != r.group))
    });
    let mut table = vec![header(with_set)];
    for tree in &outcome.trees {
        table
            .extend((tree.rows.iter()).map(|row| cells(tree, row, with_set.then_some(with_group))));
    }
    write_rows(&table, layout, out)?;
    writeln!(out)?;
    write_notes(outcome, layout, out)
}

fn write_heading(outcome: &BenchOutcome, layout: Layout, out: &mut dyn Write) -> io::Result<()> {
    let (a, b) = (
        shell_words::join(&outcome.a.command),
        shell_words::join(&outcome.b.command),
    );
    let warmup = match outcome.warmup {
        0 => String::new(),
        n => format!(" after {n} warm-up round(s)"),
    };
    let loads = |l: &Option<[f64; 3]>| {
        l.map_or("unknown".into(), |l| {
            format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2])
        })
    };
    let lines = [
        format!("A: {a}"),
        format!("B: {b}"),
        format!(
            "{} timed round(s){warmup}, A and B alternating which runs first; arms ran as {}",
            outcome.rounds, outcome.arms_ran_as
        ),
        format!(
            "load average {} at the start, {} at the end",
            loads(&outcome.load_average_start),
            loads(&outcome.load_average_end)
        ),
    ];
    for line in lines {
        match layout {
            Layout::Aligned => writeln!(out, "{line}")?,
            Layout::Markdown => writeln!(out, "- {}", line.replace('|', "\\|"))?,
        }
    }
    writeln!(out)
}

fn header(with_set: bool) -> Vec<String> {
    let mut header = vec!["Tree"];
    if with_set {
        header.push("Set");
    }
    header.extend([
        "Variant", "Wall A", "Wall B", "CPU A", "CPU B", "Peak A", "Peak B", "B/A",
    ]);
    header.into_iter().map(String::from).collect()
}

/// A row's cells; `set` is whether the table has a Set column and, if so,
/// whether it names each set's group as well (`GROUP:SET`).
fn cells(tree: &BenchTree, row: &BenchRow, set: Option<bool>) -> Vec<String> {
    let mut cells = vec![tree.name.clone()];
    match set {
        Some(true) => cells.push(format!("{}:{}", row.group, row.set)),
        Some(false) => cells.push(row.set.clone()),
        None => {}
    }
    let median =
        |s: Option<Spread>, show: fn(f64) -> String| s.map_or("-".into(), |s| show(s.median));
    let (a, b): (&Figures, &Figures) = (&row.a, &row.b);
    cells.extend([
        row.variant.clone(),
        median(a.wall_ms, millis),
        median(b.wall_ms, millis),
        median(a.cpu_ms, millis),
        median(b.cpu_ms, millis),
        median(a.peak_bytes, bytes),
        median(b.peak_bytes, bytes),
        ratio_cell(row),
    ]);
    cells
}

/// The median B/A with its range, or WRONG when any run's output was wrong, with
/// how many of each side's runs (warm-up ones too) were.
fn ratio_cell(row: &BenchRow) -> String {
    if !row.wrong.is_empty() {
        let sides: Vec<String> = [Side::A, Side::B]
            .into_iter()
            .filter_map(|side| {
                let wrong = row.wrong.iter().filter(|w| w.side == side).count();
                let runs = row.runs.iter().filter(|r| r.side == side).count();
                (wrong > 0).then(|| format!("{} in {wrong} of {runs}", side.name()))
            })
            .collect();
        return format!("WRONG ({} runs)", sides.join(", "));
    }
    match &row.ratio {
        Some(ratio) => format!(
            "{:.3} ({:.3}-{:.3})",
            ratio.wall.median, ratio.wall.min, ratio.wall.max
        ),
        None => "-".into(),
    }
}

fn millis(ms: f64) -> String {
    match ms {
        ms if ms >= 1000.0 => format!("{:.2} s", ms / 1000.0),
        ms if ms >= 10.0 => format!("{ms:.1} ms"),
        ms => format!("{ms:.2} ms"),
    }
}

fn bytes(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / (1024.0 * 1024.0))
}

fn write_rows(table: &[Vec<String>], layout: Layout, out: &mut dyn Write) -> io::Result<()> {
    let columns = table.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            table
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (i, row) in table.iter().enumerate() {
        let padded: Vec<String> = (row.iter().zip(&widths))
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        match layout {
            Layout::Aligned => writeln!(out, "{}", padded.join("  ").trim_end())?,
            Layout::Markdown => {
                let escaped: Vec<String> = padded.iter().map(|c| c.replace('|', "\\|")).collect();
                writeln!(out, "| {} |", escaped.join(" | "))?;
                if i == 0 {
                    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
                    writeln!(out, "| {} |", rule.join(" | "))?;
                }
            }
        }
    }
    Ok(())
}

/// The baseline, wrong and left-out runs, stopped trees and warnings.
fn write_notes(outcome: &BenchOutcome, layout: Layout, out: &mut dyn Write) -> io::Result<()> {
    let mut notes = Vec::new();
    for tree in &outcome.trees {
        notes.extend(baseline_notes(outcome, tree));
        if let Some(why) = &tree.stopped {
            notes.push(format!("{}: STOPPED: {why}", tree.name));
        }
        for row in &tree.rows {
            notes.extend(row_notes(tree, row));
        }
    }
    notes.extend(outcome.warnings.iter().map(|w| format!("warning: {w}")));
    for note in notes {
        match layout {
            Layout::Aligned => writeln!(out, "{note}")?,
            Layout::Markdown if note.contains('\n') => {
                let (first, rest) = note.split_once('\n').unwrap_or((&note, ""));
                writeln!(
                    out,
                    "- {first}\n\n  ```diff\n  {}\n  ```",
                    rest.replace('\n', "\n  ")
                )?
            }
            Layout::Markdown => writeln!(out, "- {note}")?,
        }
    }
    Ok(())
}

/// The baseline against each row's medians (one row: in one line), and its runs
/// that failed, which stay out of its figure.
fn baseline_notes(outcome: &BenchOutcome, tree: &BenchTree) -> Vec<String> {
    let (Some(words), Some(baseline)) = (&outcome.baseline, &tree.baseline) else {
        return Vec::new();
    };
    let command = shell_words::join(words);
    let failed: Vec<String> = (baseline.runs.iter())
        .filter(|r| !r.status.succeeded())
        .map(|r| format!("{}: {}", round_name(r.warmup, r.round), r.status.describe()))
        .collect();
    let mut notes = Vec::new();
    if !failed.is_empty() {
        notes.push(format!(
            "{}: baseline `{command}` FAILED ({}); left out of its figure",
            tree.name,
            failed.join("; ")
        ));
    }
    let Some(base) = baseline.figures.wall_ms else {
        notes.push(format!(
            "{}: baseline `{command}`: no run counted, no ratio",
            tree.name
        ));
        return notes;
    };
    let over = |figures: &Figures| {
        figures
            .wall_ms
            .map_or("-".into(), |w| format!("{:.2}×", w.median / base.median))
    };
    let lead = format!(
        "{}: baseline `{command}` {}",
        tree.name,
        millis(base.median)
    );
    match tree.rows.as_slice() {
        [row] => notes.push(format!(
            "{lead}; A {} and B {} the baseline",
            over(&row.a),
            over(&row.b)
        )),
        rows => {
            let each: Vec<String> = (rows.iter())
                .map(|row| {
                    format!(
                        "{} [{}]: A {}, B {}",
                        row.set,
                        row.variant,
                        over(&row.a),
                        over(&row.b)
                    )
                })
                .collect();
            notes.push(format!("{lead}; against it, {}", each.join("; ")));
        }
    }
    notes
}

/// A round as the notes name it.
fn round_name(warmup: bool, round: usize) -> String {
    match warmup {
        true => format!("warm-up round {round}"),
        false => format!("round {round}"),
    }
}

fn row_notes(tree: &BenchTree, row: &BenchRow) -> Vec<String> {
    let name = row.named(&tree.name);
    let mut notes = Vec::new();
    // One difference seen in many runs is told once, with every run it was seen in.
    let mut told: Vec<(&str, &str, Vec<String>)> = Vec::new();
    for wrong in &row.wrong {
        let round = round_name(wrong.warmup, wrong.round);
        match told
            .iter_mut()
            .find(|(side, how, _)| *side == wrong.side.name() && *how == wrong.how)
        {
            Some((_, _, rounds)) => rounds.push(round),
            None => told.push((wrong.side.name(), &wrong.how, vec![round])),
        }
    }
    for (side, how, rounds) in told {
        notes.push(format!(
            "{name}: WRONG: {side} in {}: {how}",
            rounds.join(", ")
        ));
    }
    for (side, figures) in [(Side::A, &row.a), (Side::B, &row.b)] {
        let failed: Vec<String> = (row.runs.iter())
            .filter(|r| r.side == side && !r.warmup && !r.status.ran_to_its_end())
            .map(|r| format!("round {}: {}", r.round, r.status.describe()))
            .collect();
        if figures.left_out > 0 {
            notes.push(format!(
                "{name}: {}: {} timed run(s) left out of the figures{}",
                side.name(),
                figures.left_out,
                match failed.is_empty() {
                    true => String::new(),
                    false => format!(" ({})", failed.join("; ")),
                }
            ));
        }
    }
    notes
}
