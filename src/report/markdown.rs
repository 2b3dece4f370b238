//! The Markdown report (`--markdown`, and the GitHub step summary): a heading with
//! the run's verdict, the arms with their builds' digests, the same summary table
//! as the terminal, then each case that is not identical folded in a `<details>`
//! block with its repro commands and diffs, and the rules that never fired. Text
//! from the arms and the file system is escaped so that no output can break the
//! page's structure: fences are always longer than any backtick run inside them.

use std::io::{self, Write};

use super::summary;
use crate::outcome::{ArmInfo, ArmRun, CaseOutcome, RunOutcome, StreamVerdict, Verdict};

/// Lines of one diff shown before it is cut: a PR comment holds at most 65,536
/// characters, and a longer diff is read in the terminal or JSON report anyway.
const DIFF_LINES_SHOWN: usize = 400;

pub fn write(outcome: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    write_with(outcome, out, true)
}

/// The report without the per-case details, for where the whole would not fit
/// (GitHub's step summary); it says where the details are instead.
pub fn write_without_cases(outcome: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    write_with(outcome, out, false)
}

fn write_with(outcome: &RunOutcome, out: &mut dyn Write, with_cases: bool) -> io::Result<()> {
    writeln!(out, "## eqcheck: {}", summary::overall(outcome))?;
    writeln!(out)?;
    writeln!(out, "{}", summary::tally(outcome))?;
    writeln!(out)?;
    arms(outcome, out)?;
    writeln!(out)?;
    let mut facts = vec![format!("flag sets: {}", code(&outcome.flag_sets))];
    facts.extend(summary::shard_note(outcome));
    facts.extend(summary::host_note(outcome).map(|host| format!("host: {}", plain(&host))));
    if outcome.runs > 1 {
        facts.push(format!("each arm ran each case {} times", outcome.runs));
    }
    if outcome.self_check {
        facts.push("self-check: the reference ran against itself".to_string());
    }
    for fact in facts {
        writeln!(out, "- {fact}")?;
    }
    for warning in summary::warnings(outcome) {
        writeln!(out, "- **warning**: {}", plain(&warning))?;
    }
    writeln!(out)?;
    summary_table(outcome, out)?;
    let shown: Vec<&CaseOutcome> = outcome
        .cases
        .iter()
        .filter(|c| c.verdict != Verdict::Identical)
        .collect();
    if !shown.is_empty() && !with_cases {
        writeln!(out)?;
        let (cases, are) = match shown.len() {
            1 => ("1 case that is".to_string(), "is"),
            n => (format!("{n} cases that are"), "are"),
        };
        writeln!(
            out,
            "The {cases} not identical {are} too large to show here: see the log."
        )?;
    } else if !shown.is_empty() {
        writeln!(out)?;
        writeln!(out, "### Cases that are not identical")?;
        for case in shown {
            writeln!(out)?;
            case_details(case, out)?;
        }
    }
    let unused: Vec<_> = outcome.rules.iter().filter(|r| r.unused).collect();
    if !unused.is_empty() {
        writeln!(out)?;
        writeln!(out, "### Rules that never fired")?;
        writeln!(out)?;
        for rule in unused {
            writeln!(
                out,
                "- {} ({} on {}), declared at {}",
                code(&rule.name),
                plain(&rule.kind),
                plain(&rule.stream),
                code(&rule.declared_at)
            )?;
        }
    }
    out.flush()
}

fn arms(outcome: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "| Arm | Command | Program | Ran | Ran as |")?;
    writeln!(out, "|---|---|---|---|---|")?;
    let row = |name: &str, arm: &ArmInfo| {
        let program = match summary::program_note(arm) {
            Some(note) => cell(&plain(&note)),
            None => "program not found".to_string(),
        };
        let ran = match &arm.runner {
            Some(runner) => format!(
                "{} under {}",
                cell(&plain(&arm.execution)),
                cell(&code(&shell_words::join(runner)))
            ),
            None => cell(&plain(&arm.execution)),
        };
        format!(
            "| {name} | {} | {program} | {ran} | {} |",
            cell(&code(&shell_words::join(&arm.command))),
            cell(&plain(&arm.user))
        )
    };
    writeln!(out, "{}", row("reference", &outcome.reference))?;
    writeln!(out, "{}", row("candidate", &outcome.candidate))?;
    for (name, arm) in [
        ("reference", &outcome.reference),
        ("candidate", &outcome.candidate),
    ] {
        if let Some(built) = &arm.built_from {
            writeln!(
                out,
                "\nThe {name} arm was built from {}.",
                plain(&built.describe())
            )?;
        }
        if let Some(note) = summary::copy_note(arm) {
            writeln!(out, "\nThe {name} arm {}", plain(&note))?;
        }
    }
    Ok(())
}

fn summary_table(outcome: &RunOutcome, out: &mut dyn Write) -> io::Result<()> {
    let header = summary::summary_header(outcome);
    let words = summary::word_columns(outcome);
    writeln!(out, "| {} |", header.join(" | "))?;
    let align: Vec<&str> = (0..header.len())
        .map(|i| if i < words { "---" } else { "---:" })
        .collect();
    writeln!(out, "|{}|", align.join("|"))?;
    for row in summary::summary_rows(outcome) {
        let cells: Vec<String> = row.iter().map(|c| cell(&plain(c))).collect();
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    Ok(())
}

fn case_details(case: &CaseOutcome, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "<details>")?;
    writeln!(
        out,
        "<summary><b>{}</b>: {}</summary>",
        html(&case.name()),
        html(&summary::verdict_text(&case.verdict))
    )?;
    // The blank line ends the HTML block, so what follows is read as Markdown.
    writeln!(out)?;
    for (name, arm) in case.arms() {
        arm_run(name, arm, out)?;
    }
    if let Some(fired) = summary::fired_list(case) {
        writeln!(out, "Rules fired: {}", plain(&fired))?;
        writeln!(out)?;
    }
    for note in &case.notes {
        writeln!(out, "Note: {}", plain(note))?;
        writeln!(out)?;
    }
    if let Verdict::TreeChanged { changes, .. } = &case.verdict {
        writeln!(out, "Changed in the tree:")?;
        writeln!(out)?;
        write!(out, "{}", fence(&changes.join("\n"), ""))?;
        writeln!(out)?;
    }
    for stream in &case.streams {
        let name = stream.stream.name();
        match stream.verdict {
            StreamVerdict::Identical => {}
            StreamVerdict::OrderOnly => {
                writeln!(out, "**{name}** is order-only; first displaced lines:")?;
                writeln!(out)?;
                write!(out, "{}", fence(&stream.displaced.join("\n"), ""))?;
                writeln!(out)?;
            }
            StreamVerdict::EqualAfterNormalization => {
                writeln!(out, "**{name}** is equal after normalization.")?;
                writeln!(out)?;
            }
            StreamVerdict::Differs => {
                writeln!(out, "**{name}** differs:")?;
                writeln!(out)?;
                if let Some(diff) = &stream.diff {
                    write!(out, "{}", fence(&cut(diff), "diff"))?;
                    writeln!(out)?;
                }
            }
        }
    }
    if let Verdict::Flaky { arms } = &case.verdict {
        for arm in arms {
            writeln!(
                out,
                "The **{}** arm gave {} different outputs:",
                plain(&arm.arm),
                arm.variants.len()
            )?;
            writeln!(out)?;
            for (i, variant) in arm.variants.iter().enumerate() {
                writeln!(out, "- {}", plain(&summary::variant_line(i, variant)))?;
            }
            writeln!(out)?;
            for (i, variant) in arm.variants.iter().enumerate() {
                if let Some(diff) = &variant.diff {
                    writeln!(out, "Variant {} against variant 1:", i + 1)?;
                    writeln!(out)?;
                    write!(out, "{}", fence(&cut(diff), "diff"))?;
                    writeln!(out)?;
                }
            }
        }
    }
    writeln!(out, "</details>")
}

fn arm_run(name: &str, arm: &ArmRun, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "The {name} arm ({}, {:.0} ms):",
        plain(&arm.status.describe()),
        arm.duration_ms
    )?;
    writeln!(out)?;
    write!(out, "{}", fence(&arm.repro, "sh"))?;
    writeln!(out)
}

/// The first [`DIFF_LINES_SHOWN`] lines of a diff, saying how many were left out.
fn cut(diff: &str) -> String {
    let total = diff.lines().count();
    if total <= DIFF_LINES_SHOWN {
        return diff.to_string();
    }
    let mut shown: Vec<&str> = diff.lines().take(DIFF_LINES_SHOWN).collect();
    let more = format!(
        "... {} more lines: see the terminal or JSON report",
        total - DIFF_LINES_SHOWN
    );
    shown.push(&more);
    shown.join("\n")
}

/// The longest run of backticks in `text`.
fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// A fenced code block holding `text` verbatim. The fence is longer than any
/// backtick run inside, so no line of the text (a diff line of ``` included) can
/// close it early.
fn fence(text: &str, info: &str) -> String {
    let ticks = "`".repeat((longest_backtick_run(text) + 1).max(3));
    let body = text.strip_suffix('\n').unwrap_or(text);
    format!("{ticks}{info}\n{body}\n{ticks}\n")
}

/// An inline code span holding `text` on one line; delimiters longer than any
/// backtick run inside, padded when the text starts or ends with a backtick.
fn code(text: &str) -> String {
    let one_line = text.replace(['\n', '\r'], " ");
    let ticks = "`".repeat(longest_backtick_run(&one_line) + 1);
    let pad = if one_line.starts_with('`') || one_line.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{one_line}{pad}{ticks}")
}

/// Text shown as written: on one line, with the characters Markdown would read as
/// markup (emphasis, links, HTML, entities, code, table cells) escaped.
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '&' | '#' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// A table cell: GitHub splits cells at every unescaped `|`, even inside a code
/// span, where `\|` still shows as `|`.
fn cell(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut escaped = false;
    for c in markdown.chars() {
        if c == '|' && !escaped {
            out.push('\\');
        }
        escaped = c == '\\' && !escaped;
        out.push(c);
    }
    out
}

/// Text inside an HTML element (`<summary>`), where Markdown is not read.
fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fence_outlasts_any_backtick_run_inside() {
        let diff = "-a\n+```\n+````rust\n";
        let fenced = fence(diff, "diff");
        assert!(fenced.starts_with("`````diff\n"), "{fenced}");
        assert!(fenced.ends_with("\n`````\n"), "{fenced}");
        assert_eq!(fence("x", ""), "```\nx\n```\n");
    }

    #[test]
    fn a_code_span_holds_backticks_and_pipes_stay_in_their_cell() {
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(cell(&code("a|b")), "`a\\|b`");
        assert_eq!(cell(&plain("a|b")), "a\\|b");
    }

    #[test]
    fn plain_text_cannot_open_markup() {
        assert_eq!(plain("*x* <b> [l](u)\nz"), "\\*x\\* \\<b\\> \\[l\\](u) z");
    }
}
