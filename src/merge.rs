//! `eqcheck merge`: joins the JSON reports of a partitioned run's shards
//! (`--partition`) into the report of the whole run, verdict for verdict, in plan
//! order. Only shards of one run are joined: the same eqcheck version, the same
//! arms (by sha256), flag-set file and plan, one partition scheme, every shard once
//! and every case of the plan in exactly one of them. Anything else is refused,
//! naming the reports and what differs or is missing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::outcome::{
    ArmInfo, CaseOutcome, CpuTime, Partition, RuleAudit, RunOutcome, TreeInfo, SCHEMA_VERSION,
};

/// One shard's report, as read.
#[derive(Debug)]
pub struct ShardReport {
    pub path: PathBuf,
    pub outcome: RunOutcome,
}

/// Why shard reports cannot be joined (a usage error: exit 2).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{}: cannot read it", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not an eqcheck JSON report", path.display())]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{}: a report of schema {found}; this eqcheck reads schema {SCHEMA_VERSION}", path.display())]
    Schema { path: PathBuf, found: u32 },
    #[error("{}: the report of a whole run (no --partition): there is nothing to join it with", path.display())]
    NotAShard { path: PathBuf },
    #[error("{0}")]
    Differ(Box<Difference>),
    #[error("shard {shard} is given twice: {} and {}", first.display(), second.display())]
    Twice {
        shard: String,
        first: PathBuf,
        second: PathBuf,
    },
    #[error("shards missing: {missing} (the reports given are {given})")]
    Missing { missing: String, given: String },
    #[error("{}: case {id} is not the shard's to run: the report was changed, or comes from another plan", path.display())]
    Stray { path: PathBuf, id: String },
}

/// Two reports that are not shards of one run, and what tells them apart.
#[derive(Debug)]
pub struct Difference {
    first: PathBuf,
    second: PathBuf,
    what: &'static str,
    first_value: String,
    second_value: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} and {} are not shards of one run: {} differs ({} against {})",
            self.first.display(),
            self.second.display(),
            self.what,
            self.first_value,
            self.second_value
        )
    }
}

/// Reads one shard's JSON report.
pub fn read(path: &Path) -> Result<ShardReport, MergeError> {
    let text = crate::userfile::read(path).map_err(|source| MergeError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let outcome: RunOutcome =
        serde_json::from_slice(&text).map_err(|source| MergeError::Parse {
            path: path.to_path_buf(),
            source,
        })?;
    if outcome.schema_version != SCHEMA_VERSION {
        return Err(MergeError::Schema {
            path: path.to_path_buf(),
            found: outcome.schema_version,
        });
    }
    if outcome.shard.is_none() {
        return Err(MergeError::NotAShard {
            path: path.to_path_buf(),
        });
    }
    Ok(ShardReport {
        path: path.to_path_buf(),
        outcome,
    })
}

/// The whole run's outcome from its shards' (at least one).
pub fn merge(mut shards: Vec<ShardReport>) -> Result<RunOutcome, MergeError> {
    let first = shards.remove(0);
    for other in &shards {
        same_run(&first, other)?;
    }
    shards.insert(0, first);
    every_shard_once(&shards)?;
    for shard in &shards {
        own_cases_only(shard)?;
    }
    Ok(joined(shards))
}

/// What must be the same of an arm in every shard, as one line: its program (by
/// sha256 where known: shards may find one build at different paths), its
/// arguments, the name it saw as its own and the runner it ran under (by the
/// runner program's file name, for the same reason).
fn arm_identity(arm: &ArmInfo) -> String {
    let program = match (&arm.sha256, arm.command.first()) {
        (Some(sha), _) => format!("sha256 {sha}"),
        (None, Some(program)) => program.clone(),
        (None, None) => String::new(),
    };
    let arguments = arm.command.get(1..).unwrap_or_default();
    let mut said = format!("{program}, arguments `{}`", shell_words::join(arguments));
    said.push_str(&format!(", argv[0] `{}`", arm.argv0));
    if let Some((runner, its_arguments)) = arm.runner.as_ref().and_then(|r| r.split_first()) {
        let name = Path::new(runner)
            .file_name()
            .map_or_else(|| runner.clone(), |n| n.to_string_lossy().into_owned());
        let words: Vec<&str> = std::iter::once(name.as_str())
            .chain(its_arguments.iter().map(String::as_str))
            .collect();
        said.push_str(&format!(", under `{}`", shell_words::join(words)));
    }
    said
}

/// What a shard from before arm limits were recorded stands for beside one with them.
const NO_LIMITS_RECORDED: &str = "none recorded: an eqcheck older than the other \
shard's wrote it; run every shard with one eqcheck";

/// Refuses two reports that are not shards of one run.
fn same_run(a: &ShardReport, b: &ShardReport) -> Result<(), MergeError> {
    let (x, y) = (&a.outcome, &b.outcome);
    let arm = |arm: &ArmInfo| arm_identity(arm);
    let scheme = |o: &RunOutcome| {
        let p = o
            .shard
            .as_ref()
            .expect("read() takes shards only")
            .partition;
        Partition { index: 1, ..p }
            .to_string()
            .replace(":1/", ":M/")
    };
    let plan = |o: &RunOutcome| {
        let plan = &o.shard.as_ref().expect("read() takes shards only").plan;
        match plan.first() {
            Some(first) => format!("{} cases, the first `{first}`", plan.len()),
            None => "no cases".to_string(),
        }
    };
    let limits = |o: &RunOutcome| match o.limits {
        Some(l) => format!(
            "--timeout {}, --max-output {}",
            l.timeout_s,
            crate::outcome::size_text(l.max_output_bytes)
        ),
        None => NO_LIMITS_RECORDED.into(),
    };
    let checks: [(&'static str, String, String); 9] = [
        (
            "the eqcheck version",
            x.eqcheck_version.clone(),
            y.eqcheck_version.clone(),
        ),
        ("the reference", arm(&x.reference), arm(&y.reference)),
        ("the candidate", arm(&x.candidate), arm(&y.candidate)),
        (
            "the flag-set file",
            x.flag_sets.clone(),
            y.flag_sets.clone(),
        ),
        ("the partition", scheme(x), scheme(y)),
        ("runs per case", x.runs.to_string(), y.runs.to_string()),
        (
            "who the arms ran as",
            x.arms_ran_as.clone(),
            y.arms_ran_as.clone(),
        ),
        (
            "the self-check",
            x.self_check.to_string(),
            y.self_check.to_string(),
        ),
        (
            "the arm limits (--timeout, --max-output)",
            limits(x),
            limits(y),
        ),
    ];
    for (what, first_value, second_value) in checks {
        if first_value != second_value {
            return Err(differ(a, b, what, first_value, second_value));
        }
    }
    let plans = |o: &RunOutcome| o.shard.as_ref().map(|s| s.plan.clone());
    if plans(x) != plans(y) {
        return Err(differ(
            a,
            b,
            "the plan (trees, groups or sets)",
            plan(x),
            plan(y),
        ));
    }
    Ok(())
}

fn differ(
    a: &ShardReport,
    b: &ShardReport,
    what: &'static str,
    first_value: String,
    second_value: String,
) -> MergeError {
    MergeError::Differ(Box::new(Difference {
        first: a.path.clone(),
        second: b.path.clone(),
        what,
        first_value,
        second_value,
    }))
}

/// Each of the N shards given exactly once.
fn every_shard_once(shards: &[ShardReport]) -> Result<(), MergeError> {
    let partition = |s: &ShardReport| s.outcome.shard.as_ref().expect("shards only").partition;
    let count = partition(&shards[0]).count;
    let mut by_index: Vec<Option<&Path>> = vec![None; count];
    for shard in shards {
        let p = partition(shard);
        if let Some(earlier) = by_index[p.index - 1] {
            return Err(MergeError::Twice {
                shard: p.to_string(),
                first: earlier.to_path_buf(),
                second: shard.path.clone(),
            });
        }
        by_index[p.index - 1] = Some(&shard.path);
    }
    let scheme = partition(&shards[0]);
    let missing: Vec<String> = (1..=count)
        .filter(|&i| by_index[i - 1].is_none())
        .map(|index| Partition { index, ..scheme }.to_string())
        .collect();
    if !missing.is_empty() {
        let given: Vec<String> = (shards.iter())
            .map(|s| format!("{} ({})", partition(s), s.path.display()))
            .collect();
        return Err(MergeError::Missing {
            missing: missing.join(", "),
            given: given.join(", "),
        });
    }
    Ok(())
}

/// Refuses a report holding a case its partition does not give it, or one twice.
fn own_cases_only(shard: &ShardReport) -> Result<(), MergeError> {
    let own = shard.outcome.shard.as_ref().expect("shards only");
    let places: HashMap<&str, usize> = (own.plan.iter().enumerate())
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let mut seen = std::collections::HashSet::new();
    for case in &shard.outcome.cases {
        let fits = places
            .get(case.id.as_str())
            .is_some_and(|&place| own.partition.selects(place, &case.id));
        if !fits || !seen.insert(case.id.as_str()) {
            return Err(MergeError::Stray {
                path: shard.path.clone(),
                id: case.id.clone(),
            });
        }
    }
    Ok(())
}

/// The shards' outcomes as one run's: cases in plan order, trees in the order
/// their first case comes, rules' counts summed, warnings once each.
fn joined(shards: Vec<ShardReport>) -> RunOutcome {
    let plan = (shards[0].outcome.shard.clone()).expect("shards only").plan;
    let place: HashMap<String, usize> = plan
        .into_iter()
        .enumerate()
        .map(|(i, id)| (id, i))
        .collect();
    let mut outcomes: Vec<RunOutcome> = shards.into_iter().map(|s| s.outcome).collect();
    let mut cases: Vec<CaseOutcome> = outcomes
        .iter_mut()
        .flat_map(|o| o.cases.drain(..))
        .collect();
    cases.sort_by_key(|case| place.get(&case.id).copied());
    let mut warnings: Vec<String> = Vec::new();
    for warning in outcomes.iter().flat_map(|o| &o.warnings) {
        if !warnings.contains(warning) {
            warnings.push(warning.clone());
        }
    }
    let trees = joined_trees(&mut outcomes, &cases);
    let rules = joined_rules(&outcomes);
    let cpu = joined_cpu(&outcomes);
    let first = outcomes.swap_remove(0);
    RunOutcome {
        shard: None,
        cpu,
        warnings,
        trees,
        rules,
        cases,
        ..first
    }
}

/// The shards' CPU summed, when every shard measured it: the whole run's cost,
/// wherever its shards ran.
fn joined_cpu(outcomes: &[RunOutcome]) -> Option<CpuTime> {
    outcomes.iter().try_fold(
        CpuTime {
            harness_s: 0.0,
            arms_s: 0.0,
        },
        |sum, o| {
            let cpu = o.cpu?;
            Some(CpuTime {
                harness_s: sum.harness_s + cpu.harness_s,
                arms_s: sum.arms_s + cpu.arms_s,
            })
        },
    )
}

/// Each tree once, in the order of its first case; a tree several shards built
/// counts every shard's fingerprints.
fn joined_trees(outcomes: &mut [RunOutcome], cases: &[CaseOutcome]) -> Vec<TreeInfo> {
    let mut trees: Vec<TreeInfo> = Vec::new();
    for tree in outcomes.iter_mut().flat_map(|o| o.trees.drain(..)) {
        match trees.iter_mut().find(|t| t.name == tree.name) {
            Some(known) => known.fingerprints += tree.fingerprints,
            None => trees.push(tree),
        }
    }
    let first_case = |name: &str| cases.iter().position(|c| c.tree == name);
    trees.sort_by_key(|t| first_case(&t.name));
    trees
}

/// Each rule once, with how often it fired summed over the shards.
fn joined_rules(outcomes: &[RunOutcome]) -> Vec<RuleAudit> {
    let mut rules: Vec<RuleAudit> = Vec::new();
    for rule in outcomes.iter().flat_map(|o| &o.rules) {
        match rules.iter_mut().find(|r| r.name == rule.name) {
            Some(known) => {
                known.cases_fired += rule.cases_fired;
                known.times_fired += rule.times_fired;
                known.unused = known.cases_fired == 0;
            }
            None => rules.push(rule.clone()),
        }
    }
    rules
}

#[cfg(test)]
mod tests;
