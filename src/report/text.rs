//! The terminal report: what ran against what, a summary row per tree, then every
//! case that is not identical with each arm's repro command and the diff. Verdict
//! words and diff lines are coloured when the caller says the stream may take it.

use std::io::{self, Write};

use anstyle::{AnsiColor, Style};

use super::summary;
use crate::counted::{counted, noun};
use crate::outcome::{
    thousands, CaseOutcome, FlakyArm, RunOutcome, StreamResult, StreamVerdict, Verdict,
};

/// Whether the report carries ANSI colour codes; decided by the caller from
/// `--color`, `NO_COLOR` and whether the stream is a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Colors {
    pub enabled: bool,
}

impl Colors {
    /// Plain text, for files and pipes.
    pub const NONE: Colors = Colors { enabled: false };

    fn paint(self, style: Style, text: &str) -> String {
        if self.enabled {
            format!("{style}{text}{style:#}")
        } else {
            text.to_string()
        }
    }

    /// A verdict label in its colour: green for identical, cyan for equal only
    /// after the flag-set file's rules, red for differences, yellow for flaky
    /// arms, bold red for cases that could not be judged.
    fn verdict(self, verdict: &Verdict) -> String {
        let color = |c: AnsiColor| Style::new().fg_color(Some(c.into()));
        let style = match verdict {
            Verdict::Identical => color(AnsiColor::Green),
            Verdict::OrderOnly | Verdict::EqualAfterNormalization => color(AnsiColor::Cyan),
            Verdict::Differs => color(AnsiColor::Red),
            Verdict::Flaky { .. } => color(AnsiColor::Yellow),
            Verdict::Error { .. } | Verdict::TreeChanged { .. } => color(AnsiColor::Red).bold(),
        };
        self.paint(style, verdict.label())
    }

    /// A unified-diff line: removals red, additions green, hunk headers cyan, the
    /// `---`/`+++` file headers bold.
    fn diff_line(self, line: &str) -> String {
        let color = |c: AnsiColor| Style::new().fg_color(Some(c.into()));
        let style = if line.starts_with("---") || line.starts_with("+++") {
            Style::new().bold()
        } else if line.starts_with('-') {
            color(AnsiColor::Red)
        } else if line.starts_with('+') {
            color(AnsiColor::Green)
        } else if line.starts_with("@@") {
            color(AnsiColor::Cyan)
        } else {
            return line.to_string();
        };
        self.paint(style, line)
    }

    /// The closing verdict: green when all equal, red otherwise.
    fn overall(self, outcome: &RunOutcome) -> String {
        let color = match outcome.exit_code() {
            crate::exit::ALL_EQUAL => AnsiColor::Green,
            _ => AnsiColor::Red,
        };
        let style = Style::new().fg_color(Some(color.into())).bold();
        self.paint(style, summary::overall(outcome))
    }
}

pub fn write(outcome: &RunOutcome, out: &mut dyn Write, colors: Colors) -> io::Result<()> {
    run_header(outcome, out)?;
    trees(outcome, out)?;
    for warning in summary::warnings(outcome) {
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
        case_detail(case, out, colors)?;
    }
    if !outcome.rules.is_empty() {
        writeln!(out)?;
        rules(outcome, out)?;
    }
    writeln!(out)?;
    if let Some(cpu) = summary::cpu_note(outcome) {
        writeln!(out, "{cpu}")?;
    }
    writeln!(
        out,
        "{}: {}",
        summary::tally(outcome),
        colors.overall(outcome)
    )?;
    out.flush()
}

/// What ran against what, and how.
fn run_header(outcome: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    for (name, arm) in [
        ("reference", &outcome.reference),
        ("candidate", &outcome.candidate),
    ] {
        writeln!(out, "{name}: {}", shell_words::join(&arm.command))?;
        if let Some(program) = summary::program_note(arm) {
            writeln!(out, "  program: {program}")?;
        }
        if let Some(runner) = &arm.runner {
            writeln!(out, "  run under: {}", shell_words::join(runner))?;
        }
        if !arm.execution.is_empty() {
            writeln!(out, "  ran: {}", arm.execution)?;
        }
        if let Some(built) = &arm.built_from {
            writeln!(out, "  built from {}", built.describe())?;
        }
        if let Some(note) = summary::copy_note(arm) {
            writeln!(out, "  {note}")?;
        }
    }
    if let Some(config) = &outcome.config {
        writeln!(out, "config: {config}")?;
    }
    writeln!(out, "flag sets: {}", outcome.flag_sets)?;
    if let Some(note) = summary::shard_note(outcome) {
        writeln!(out, "{note}")?;
    }
    if outcome.runs > 1 {
        writeln!(out, "runs: each arm ran each case {} times", outcome.runs)?;
    }
    if outcome.self_check {
        writeln!(out, "self-check: the reference ran against itself")?;
    }
    if let Some(host) = summary::host_note(outcome) {
        writeln!(out, "host: {host}")?;
    }
    writeln!(out, "arms ran as: {}", outcome.arms_ran_as)
}

/// Each tree's entry counts and where it is, then what was skipped on each.
fn trees(outcome: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
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
        // The path comes last, to be copied whole.
        let on = (tree.file_system.as_ref())
            .map(|fs| format!(" on {fs}"))
            .unwrap_or_default();
        let shown = |n: u64, one, many| format!("{} {}", thousands(n), noun(n, one, many));
        writeln!(
            out,
            "{}: {} ({}, {}, {}{other}), {origin}{on} at {}",
            tree.name,
            shown(c.entries, "entry", "entries"),
            shown(c.files, "file", "files"),
            shown(c.folders, "folder", "folders"),
            shown(c.symlinks, "symlink", "symlinks"),
            tree.path
        )?;
        if let Some(guard) = &tree.guard {
            writeln!(out, "  guard: {guard}")?;
        }
    }
    for tree in &outcome.trees {
        let all_at = "the JSON report (--json) lists each";
        for line in summary::skipped_lines(&tree.name, &tree.skipped, all_at) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// How often each rule fired, or that it never did.
fn rules(outcome: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    for rule in &outcome.rules {
        let used = if rule.unused {
            "unused: it never fired in this run".to_string()
        } else {
            format!(
                "fired {} in {}",
                counted(rule.times_fired as u64, "time", "times"),
                counted(rule.cases_fired as u64, "case", "cases")
            )
        };
        writeln!(
            out,
            "rule {} ({} on {}, {}): {used}",
            rule.name, rule.kind, rule.stream, rule.declared_at
        )?;
    }
    Ok(())
}

fn summary_table(outcome: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    let header = summary::summary_header(outcome);
    let rows = summary::summary_rows(outcome);
    let words = summary::word_columns(outcome);
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
                if i < words {
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

fn case_detail(case: &CaseOutcome, out: &mut dyn Write, colors: Colors) -> io::Result<()> {
    let detail = summary::verdict_detail(&case.verdict)
        .map(|d| format!(": {d}"))
        .unwrap_or_default();
    writeln!(
        out,
        "== {}: {}{detail}",
        case.name(),
        colors.verdict(&case.verdict)
    )?;
    for (name, arm) in case.arms() {
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
        stream_detail(stream, out, colors)?;
    }
    if let Verdict::Flaky { arms } = &case.verdict {
        for arm in arms {
            flaky_arm(arm, out, colors)?;
        }
    }
    if let Some(fired) = summary::fired_list(case) {
        writeln!(out, "   rules fired: {fired}")?;
    }
    for note in &case.notes {
        writeln!(out, "   note: {note}")?;
    }
    Ok(())
}

/// A stream that is not identical: its displaced lines or its diff.
fn stream_detail(stream: &StreamResult, out: &mut dyn Write, colors: Colors) -> io::Result<()> {
    let name = stream.stream.name();
    match stream.verdict {
        StreamVerdict::Identical => {}
        StreamVerdict::OrderOnly => {
            writeln!(out, "   {name} is order-only; first displaced lines:")?;
            for line in &stream.displaced {
                writeln!(out, "     {line}")?;
            }
        }
        StreamVerdict::EqualAfterNormalization => {
            writeln!(out, "   {name} is equal after normalization")?;
        }
        StreamVerdict::Differs => {
            writeln!(out, "   {name} differs:")?;
            if let Some(diff) = &stream.diff {
                for line in diff.lines() {
                    writeln!(out, "     {}", colors.diff_line(line))?;
                }
            }
        }
    }
    Ok(())
}

/// An arm that disagreed with itself: each output it gave, as a diff against its
/// first.
fn flaky_arm(arm: &FlakyArm, out: &mut dyn Write, colors: Colors) -> io::Result<()> {
    writeln!(
        out,
        "   the {} arm gave {} different outputs:",
        arm.arm,
        arm.variants.len()
    )?;
    for (i, variant) in arm.variants.iter().enumerate() {
        writeln!(out, "     {}", summary::variant_line(i, variant))?;
        if let Some(diff) = &variant.diff {
            for line in diff.lines() {
                writeln!(out, "       {}", colors.diff_line(line))?;
            }
        }
    }
    Ok(())
}
