//! What the human-readable reports (terminal, Markdown, GitHub annotations) say the
//! same way: the per-tree counts table, the closing tally and verdict, and how a
//! case and its verdict are named. Kept in one place so a PR comment and the
//! terminal never disagree on a number or a word.

use crate::outcome::{thousands, ArmInfo, Blame, CaseOutcome, RunOutcome, Verdict, VerdictKind};

/// The summary table's columns: the tree, its file system where any tree was on a
/// file system of `--fs`, its case count, then one per verdict kind in the order
/// of [`VerdictKind::ALL`].
pub fn summary_header(outcome: &RunOutcome) -> Vec<&'static str> {
    let fs = has_fs_column(outcome).then_some("File system");
    let kinds = [
        "Identical",
        "Order-only",
        "Normalized",
        "Differs",
        "Flaky",
        "Errors",
    ];
    ["Tree"]
        .into_iter()
        .chain(fs)
        .chain(["Sets"])
        .chain(kinds)
        .collect()
}

/// One row per tree, cells in the order of [`summary_header`].
pub fn summary_rows(outcome: &RunOutcome) -> Vec<Vec<String>> {
    let fs_column = has_fs_column(outcome);
    outcome
        .trees
        .iter()
        .map(|tree| {
            let sets = outcome.cases.iter().filter(|c| c.tree == tree.name).count();
            let counts = VerdictKind::ALL
                .iter()
                .map(|kind| outcome.count(Some(&tree.name), *kind).to_string());
            // `TREE@FS` is the id; with a column of its own, the tree is TREE.
            let suffix = format!("@{}", tree.fs);
            let (name, fs) = match fs_column {
                true => (
                    tree.name.strip_suffix(&suffix).unwrap_or(&tree.name),
                    Some(tree.fs.clone()),
                ),
                false => (tree.name.as_str(), None),
            };
            std::iter::once(name.to_string())
                .chain(fs)
                .chain([sets.to_string()])
                .chain(counts)
                .collect()
        })
        .collect()
}

/// How many of the first columns hold words (left-aligned); the rest are counts.
pub fn word_columns(outcome: &RunOutcome) -> usize {
    1 + usize::from(has_fs_column(outcome))
}

/// Whether the file system is a dimension of the run: some tree was on one of
/// `--fs` other than `native`.
fn has_fs_column(outcome: &RunOutcome) -> bool {
    outcome.trees.iter().any(|tree| tree.fs != "native")
}

/// At most this many of a tree's skipped entries are listed one by one.
const SKIPS_LISTED: usize = 10;

/// Lines that say what a tree left out, from entries `FILE:LINE: PATH: reason`:
/// each entry when there are few; else a count, one line per reason (the text
/// after the last `: `) with how many and the first entry, and `all_at`, which
/// says where every one is. `nm` on exFAT leaves out over a thousand symlinks and
/// hard links, which listed one by one would bury the rest of the report.
pub fn skipped_lines(tree: &str, skipped: &[String], all_at: &str) -> Vec<String> {
    if skipped.len() <= SKIPS_LISTED {
        return skipped
            .iter()
            .map(|s| format!("{tree}: skipped {s}"))
            .collect();
    }
    let mut reasons: Vec<(&str, usize, &str)> = Vec::new();
    for entry in skipped {
        let reason = entry.rsplit_once(": ").map_or(entry.as_str(), |(_, r)| r);
        match reasons.iter_mut().find(|(r, _, _)| *r == reason) {
            Some((_, count, _)) => *count += 1,
            None => reasons.push((reason, 1, entry)),
        }
    }
    reasons.sort_by_key(|(_, count, _)| std::cmp::Reverse(*count));
    let head = format!(
        "{tree}: skipped {} spec entries ({all_at}):",
        thousands(skipped.len() as u64)
    );
    let each = reasons.into_iter().map(|(reason, count, first)| {
        format!("  {} × {reason}, as {first}", thousands(count as u64))
    });
    std::iter::once(head).chain(each).collect()
}

/// `12 cases: 10 identical, 2 differ, 0 errors`.
pub fn tally(outcome: &RunOutcome) -> String {
    use VerdictKind::{Differs, Error, Identical};
    let counts: Vec<String> = VerdictKind::ALL
        .into_iter()
        .map(|kind| (kind, outcome.count(None, kind)))
        .filter(|(kind, n)| *n > 0 || matches!(kind, Identical | Differs | Error))
        .map(|(kind, n)| match kind {
            Error if n != 1 => format!("{n} errors"),
            Error => "1 error".to_string(),
            Differs if n != 1 => format!("{n} differ"),
            other => format!("{n} {}", other.label()),
        })
        .collect();
    let cases = crate::counted::counted(outcome.cases.len() as u64, "case", "cases");
    format!("{cases}: {}", counts.join(", "))
}

/// Which shard of how large a matrix this run was, when it was one.
pub fn shard_note(outcome: &RunOutcome) -> Option<String> {
    let shard = outcome.shard.as_ref()?;
    let whole = shard.plan.len();
    Some(match outcome.cases.len() {
        0 => format!(
            "shard {}: none of the matrix's {whole} cases fall in this shard",
            shard.partition
        ),
        n => format!(
            "shard {}: {n} of the matrix's {whole} cases",
            shard.partition
        ),
    })
}

/// Every warning a report gives: the run's own, then those its cases add up to
/// (told from the cases, so a merged run says them once, over all its shards).
pub fn warnings(outcome: &RunOutcome) -> Vec<String> {
    let mut warnings = outcome.warnings.clone();
    warnings.extend(left_running_warning(outcome));
    warnings
}

/// Arms that left processes running past their end, over the whole run: in how
/// many cases, and the first few with who left how many.
fn left_running_warning(outcome: &RunOutcome) -> Option<String> {
    const NAMED: usize = 3;
    let cases: Vec<String> = (outcome.cases.iter())
        .filter_map(|case| {
            let arms: Vec<String> = (case.arms().into_iter())
                .filter(|(_, arm)| arm.left_running > 0)
                .map(|(name, arm)| format!("{name} {}", arm.left_running))
                .collect();
            (!arms.is_empty()).then(|| format!("{} ({})", case.name(), arms.join(", ")))
        })
        .collect();
    if cases.is_empty() {
        return None;
    }
    let more = match cases.len().saturating_sub(NAMED) {
        0 => String::new(),
        n => format!(", and {n} more"),
    };
    Some(format!(
        "arms left processes running past their end, which were killed, in {} case(s): {}{more}",
        cases.len(),
        cases[..cases.len().min(NAMED)].join(", ")
    ))
}

/// `cpu: eqcheck 0.41 s, arms 12.03 s (eqcheck's own is 3.4% of the arms')`: what
/// the harness cost beside what it ran, where it was measured.
pub fn cpu_note(outcome: &RunOutcome) -> Option<String> {
    let cpu = outcome.cpu?;
    let share = match cpu.overhead() {
        Some(share) => format!("eqcheck's own is {:.1}% of the arms'", share * 100.0),
        None => "the arms took no measurable CPU".to_string(),
    };
    Some(format!(
        "cpu: eqcheck {:.2} s, arms {:.2} s ({share})",
        cpu.harness_s, cpu.arms_s
    ))
}

/// The run's verdict in a few words, following its exit code.
pub fn overall(outcome: &RunOutcome) -> &'static str {
    if outcome.cases.is_empty() && outcome.shard.is_some() {
        return "no case in this shard";
    }
    match outcome.exit_code() {
        crate::exit::ALL_EQUAL
            if outcome.count(None, VerdictKind::Identical) == outcome.cases.len() =>
        {
            "all identical"
        }
        crate::exit::ALL_EQUAL => "all equal (some only after the flag-set file's rules)",
        crate::exit::DIFFERENCES => "DIFFERENCES FOUND",
        _ => "HARNESS ERRORS: some cases could not be judged",
    }
}

/// What follows the verdict's label, for the verdicts that carry a reason.
pub fn verdict_detail(verdict: &Verdict) -> Option<String> {
    match verdict {
        Verdict::Error { reason } => Some(reason.clone()),
        Verdict::TreeChanged {
            arm: Blame::Earlier,
            ..
        } => Some("the tree had already changed before this case".to_string()),
        Verdict::TreeChanged { arm, .. } => {
            Some(format!("the tree moved while the {} arm ran", arm.name()))
        }
        _ => None,
    }
}

/// The verdict's label followed by its reason, if any: `error: could not start`.
pub fn verdict_text(verdict: &Verdict) -> String {
    match verdict_detail(verdict) {
        Some(detail) => format!("{}: {detail}", verdict.label()),
        None => verdict.label().to_string(),
    }
}

/// `rule ×2, tree-root ×4`, or `None` when no rule changed anything.
pub fn fired_list(case: &CaseOutcome) -> Option<String> {
    if case.fired.is_empty() {
        return None;
    }
    let fired: Vec<String> = case
        .fired
        .iter()
        .map(|f| format!("{} ×{}", f.rule, f.times))
        .collect();
    Some(fired.join(", "))
}

/// `variant 2: 1× (runs 17), exit 0`: one output of a flaky arm, numbered from 1.
pub fn variant_line(index: usize, variant: &crate::outcome::Variant) -> String {
    format!(
        "variant {}: {}× (runs {}), {}",
        index + 1,
        variant.runs.len(),
        runs_list(&variant.runs),
        variant.status
    )
}

/// `1, 2, 5` from run numbers, cut after ten.
pub fn runs_list(runs: &[usize]) -> String {
    let shown: Vec<String> = runs.iter().take(10).map(usize::to_string).collect();
    let more = runs.len().saturating_sub(10);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// `x86_64, 1,234,567 bytes, sha256 0a1b2c3d4e5f…, version: du (GNU coreutils) 9.1`:
/// which build an arm's program is; none when its file was not found.
pub fn program_note(arm: &ArmInfo) -> Option<String> {
    let sha = arm.sha256.as_deref()?;
    let mut parts = vec![arm
        .architecture
        .clone()
        .unwrap_or("architecture unknown".into())];
    if let Some(size) = arm.size {
        parts.push(format!("{} bytes", thousands(size)));
    }
    parts.push(format!("sha256 {}…", &sha[..sha.len().min(12)]));
    if let Some(version) = &arm.version {
        parts.push(format!("version: {version}"));
    }
    Some(parts.join(", "))
}

/// `linux (Linux 6.1.0), x86_64`: the machine a run was on.
pub fn host_note(outcome: &RunOutcome) -> Option<String> {
    let host = outcome.host.as_ref()?;
    let kernel = host
        .kernel
        .as_ref()
        .map(|k| format!(" ({k})"))
        .unwrap_or_default();
    let translated = match host.translated {
        true => ", eqcheck itself translated by Rosetta 2",
        false => "",
    };
    Some(format!(
        "{}{kernel}, {}{translated}",
        host.os, host.architecture
    ))
}

/// `ran a copy: PATH (of FILE, sha256 …)` for an arm whose program the arm user
/// could not reach, so it ran a copy eqcheck made.
pub fn copy_note(arm: &ArmInfo) -> Option<String> {
    let copy = arm.copy.as_ref()?;
    Some(format!(
        "ran a copy the arm user can reach: {copy} (of {}, sha256 {})",
        arm.binary.as_deref().unwrap_or("?"),
        arm.sha256.as_deref().unwrap_or("?")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_skips_are_listed_and_many_are_counted_by_reason() {
        let entry = |n: usize, reason: &str| format!("t.tree:{n}: d/e{n}: {reason}");
        let few: Vec<String> = (1..=SKIPS_LISTED)
            .map(|n| entry(n, "fat has no symlinks"))
            .collect();
        let lines = skipped_lines("t@vfat", &few, "the JSON lists each");
        assert_eq!(lines.len(), SKIPS_LISTED);
        assert_eq!(
            lines[0],
            "t@vfat: skipped t.tree:1: d/e1: fat has no symlinks"
        );
        let mut many: Vec<String> = (1..=1200)
            .map(|n| entry(n, "fat has no symlinks"))
            .collect();
        many.insert(3, entry(0, "mode 644: fat has no Unix modes"));
        many.push(entry(9999, "mode 600: fat has no Unix modes"));
        let lines = skipped_lines("t@vfat", &many, "the JSON lists each");
        assert_eq!(
            lines,
            [
                "t@vfat: skipped 1,202 spec entries (the JSON lists each):",
                "  1,200 × fat has no symlinks, as t.tree:1: d/e1: fat has no symlinks",
                "  2 × fat has no Unix modes, as t.tree:0: d/e0: mode 644: fat has no Unix modes",
            ]
        );
    }
}
