//! The probe's reports: a table per tree (field | source | compared | equal |
//! explained | unexplained | unknown), the reasons that explained differences, the
//! census and the first unexplained differences, as terminal text or Markdown. The
//! JSON report is the outcome itself.

use std::io::{self, Write};

use crate::outcome::thousands;
use crate::probe::outcome::{ProbeOutcome, Side, TreeProbe};
use crate::probe::record::FieldName;

/// The table's header cells.
const HEADER: [&str; 7] = [
    "field",
    "source",
    "compared",
    "equal",
    "explained",
    "unexplained",
    "unknown",
];

/// The terminal report.
pub fn write_text(outcome: &ProbeOutcome, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "probe: {} against read_dir + lstat", outcome.candidate)?;
    for tree in &outcome.trees {
        writeln!(out)?;
        writeln!(out, "{}", tree_line(tree))?;
        if let Some(error) = &tree.error {
            writeln!(out, "  error: {error}")?;
            continue;
        }
        let rows = table(tree);
        let widths: Vec<usize> = (0..HEADER.len())
            .map(|i| {
                rows.iter()
                    .map(|r| r[i].len())
                    .chain([HEADER[i].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for row in std::iter::once(HEADER.map(String::from).to_vec()).chain(rows) {
            let cells: Vec<String> = (row.iter().zip(&widths).enumerate())
                .map(|(i, (cell, w))| match i {
                    0 | 1 => format!("{cell:<w$}"),
                    _ => format!("{cell:>w$}"),
                })
                .collect();
            writeln!(out, "  {}", cells.join("  "))?;
        }
        for line in details(tree) {
            writeln!(out, "  {line}")?;
        }
    }
    writeln!(out)?;
    writeln!(out, "{}", verdict(outcome))
}

/// The Markdown report, to paste into a pull request.
pub fn write_markdown(outcome: &ProbeOutcome, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "## eqcheck probe: {}", outcome.candidate)?;
    writeln!(out)?;
    writeln!(out, "**{}**", verdict(outcome))?;
    for tree in &outcome.trees {
        writeln!(out)?;
        writeln!(out, "### {}", tree_line(tree))?;
        writeln!(out)?;
        if let Some(error) = &tree.error {
            writeln!(out, "Error: {error}")?;
            continue;
        }
        writeln!(out, "| {} |", HEADER.join(" | "))?;
        writeln!(out, "|{}", "---|".repeat(HEADER.len()))?;
        for row in table(tree) {
            writeln!(out, "| {} |", row.join(" | "))?;
        }
        writeln!(out)?;
        for line in details(tree) {
            writeln!(out, "- {}", line.replace('|', "\\|"))?;
        }
    }
    Ok(())
}

/// `tree edge: 3,646 entries on ext2/3/4 (/tmp/…)`, or `tree edge on ext2/3/4:
/// not probed (/tmp/…)` when the count never came.
fn tree_line(tree: &TreeProbe) -> String {
    let on = tree
        .file_system
        .as_deref()
        .map_or(String::new(), |fs| format!(" on {fs}"));
    let (name, path) = (&tree.name, &tree.path);
    match tree.entries {
        Some(n) => {
            let entries = crate::counted::noun(n as u64, "entry", "entries");
            format!(
                "tree {name}: {} {entries}{on} ({path})",
                thousands(n as u64)
            )
        }
        None => format!("tree {name}{on}: not probed ({path})"),
    }
}

/// The table's rows: one per field and source compared, and one for a field no
/// source gave.
fn table(tree: &TreeProbe) -> Vec<Vec<String>> {
    let unknown = |field: FieldName| {
        let of = |side| {
            (tree.found.unknown.iter())
                .find(|u| u.field == field && u.side == side)
                .map_or(0, |u| u.count)
        };
        match (of(Side::Candidate), of(Side::Reference)) {
            (c, 0) => thousands(c as u64),
            (c, r) => format!(
                "{} (+{} reference)",
                thousands(c as u64),
                thousands(r as u64)
            ),
        }
    };
    let mut rows = Vec::new();
    for field in FieldName::ALL {
        let of_field: Vec<_> = tree
            .found
            .rows
            .iter()
            .filter(|r| r.field == field)
            .collect();
        if of_field.is_empty() {
            let zero = "0".to_string();
            rows.push(vec![
                field.name().into(),
                "-".into(),
                zero.clone(),
                zero.clone(),
                zero.clone(),
                zero,
                unknown(field),
            ]);
        }
        for row in of_field {
            rows.push(vec![
                field.name().into(),
                row.source.name().into(),
                thousands(row.compared as u64),
                thousands(row.equal as u64),
                thousands(row.explained as u64),
                thousands(row.unexplained as u64),
                unknown(field),
            ]);
        }
    }
    rows
}

/// The census, the reasons, the first mismatches and missing entries, a line each.
fn details(tree: &TreeProbe) -> Vec<String> {
    let mut lines = Vec::new();
    match &tree.census {
        Some(c) => lines.push(format!(
            "census: the listing typed {} folders, {} files, {} symlinks, {} other and {} unknown; {} stat calls, {:.2} per entry ({} statx, {} fstatat; statx refused {} times)",
            thousands(c.folders),
            thousands(c.files),
            thousands(c.symlinks),
            thousands(c.other),
            thousands(c.unknown),
            thousands(c.stat_calls()),
            c.stat_calls() as f64 / c.listed().max(1) as f64,
            thousands(c.statx),
            thousands(c.fstatat),
            thousands(c.statx_refused),
        )),
        None => lines.push("census: not counted by this candidate".into()),
    }
    if let Some(census) = &tree.census {
        let served: Vec<String> = (census.listed_by.served().into_iter())
            .map(|(call, folders)| format!("{} by {call}", thousands(folders)))
            .collect();
        if !served.is_empty() {
            lines.push(format!("folders listed: {}", served.join(", ")));
        }
    }
    for explained in &tree.found.explained {
        lines.push(format!(
            "explained: {} {}: {}",
            thousands(explained.count as u64),
            explained.field.name(),
            explained.reason
        ));
    }
    for m in &tree.found.mismatches {
        lines.push(format!(
            "unexplained: {} ({}) of {}: reference {}, candidate {}",
            m.field.name(),
            m.source.name(),
            clipped(&m.path),
            m.reference,
            m.candidate
        ));
    }
    for f in &tree.found.stat_failures {
        let side = match f.failed_on {
            Side::Candidate => "the candidate",
            Side::Reference => "lstat",
        };
        lines.push(format!(
            "unexplained: {side} could not stat {}: {}",
            clipped(&f.path),
            f.error
        ));
    }
    for m in &tree.found.missing {
        let side = match m.missing_from {
            Side::Candidate => "the candidate",
            Side::Reference => "read_dir + lstat",
        };
        lines.push(format!(
            "missing: {} is not known to {side}",
            clipped(&m.path)
        ));
    }
    lines
}

/// Characters of a path shown in a line; fixture paths run past 4,096 bytes.
const PATH_SHOWN: usize = 160;

/// A path as a line shows it: printable, and cut with its length when long.
fn clipped(path: &str) -> String {
    match path.char_indices().nth(PATH_SHOWN) {
        Some((cut, _)) => format!("{}… ({} bytes)", &path[..cut], path.len()),
        None => path.to_string(),
    }
}

/// The probe's result in a line, following its exit code.
fn verdict(outcome: &ProbeOutcome) -> String {
    let unexplained: usize = outcome.trees.iter().map(TreeProbe::unexplained).sum();
    let errors = outcome.trees.iter().filter(|t| t.error.is_some()).count();
    let trees = outcome.trees.len();
    let trees = match trees {
        1 => "1 tree".to_string(),
        n => format!("{n} trees"),
    };
    match (errors, unexplained) {
        (0, 0) => format!("{trees} probed: every field agrees or has a reason"),
        (0, n) => format!(
            "{trees} probed: {} UNEXPLAINED DIFFERENCES",
            thousands(n as u64)
        ),
        (e, _) => format!("{trees} probed: {e} COULD NOT BE PROBED"),
    }
}

/// The probe's report files, opened before the probe runs so that a path that
/// cannot be written is a usage error before any tree is built.
pub struct ProbeReports {
    json: Option<super::destination::Destination>,
    markdown: Option<super::destination::Destination>,
    /// Whether a report goes to stdout, so the text goes to stderr.
    stdout_taken: bool,
}

impl ProbeReports {
    pub fn open(
        json: Option<&std::path::Path>,
        markdown: Option<&std::path::Path>,
        trees_read: &[std::path::PathBuf],
    ) -> io::Result<ProbeReports> {
        for (flag, path) in [("--json", json), ("--markdown", markdown)] {
            let Some(path) = path.filter(|p| !super::is_stdout(p)) else {
                continue;
            };
            if let Some(tree) = super::inside_a_tree(path, trees_read) {
                let message = format!(
                    "{flag} {}: inside the tree {}, which the probe reads: eqcheck never writes into a tree it compares; write the report outside it",
                    path.display(),
                    tree.display()
                );
                return Err(io::Error::new(io::ErrorKind::InvalidInput, message));
            }
        }
        if let (Some(a), Some(b)) = (json, markdown) {
            if a == b {
                let message = format!("--json and --markdown both name {}", a.display());
                return Err(io::Error::new(io::ErrorKind::InvalidInput, message));
            }
        }
        let open = |path: Option<&std::path::Path>| {
            path.map(super::destination::Destination::open).transpose()
        };
        Ok(ProbeReports {
            stdout_taken: [json, markdown]
                .iter()
                .flatten()
                .any(|p| super::is_stdout(p)),
            json: open(json)?,
            markdown: open(markdown)?,
        })
    }

    /// Writes the text report to stdout (stderr when a report file is `-`) and the
    /// report files.
    pub fn write(self, outcome: &ProbeOutcome) -> io::Result<()> {
        if self.stdout_taken {
            write_text(outcome, &mut io::stderr().lock())?;
        } else {
            write_text(outcome, &mut io::stdout().lock())?;
        }
        if let Some(mut json) = self.json {
            serde_json::to_writer_pretty(json.writer(), outcome)?;
            writeln!(json.writer())?;
            json.finish()?;
        }
        if let Some(mut markdown) = self.markdown {
            write_markdown(outcome, markdown.writer())?;
            markdown.finish()?;
        }
        Ok(())
    }
}
