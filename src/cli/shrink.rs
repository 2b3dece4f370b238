//! `eqcheck shrink`'s command line: the case, named by its id from a report or by
//! `--tree` and `--set`, resolved against the same arms and config as `run`; the
//! budget; and what is printed at the end.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{given, resolve_subject, SubjectArgs};
use crate::exit::Failure;
use crate::flagset::{FlagSet, FlagSetFile};
use crate::settings::RunMode;
use crate::shrink::{ShrinkOptions, ShrinkReport};

/// `eqcheck shrink`'s arguments.
#[derive(Args, Debug)]
pub(super) struct ShrinkArgs {
    /// The case, by its id in a report: `TREE:GROUP:SET`, or `TREE@FS:GROUP:SET` for
    /// a tree on a file-system image. Or give --tree and --set (and --fs).
    #[arg(value_name = "CASE")]
    case: Option<String>,
    #[command(flatten)]
    subject: SubjectArgs,
    /// The set to shrink, with --tree, as one argument: `--set '-a -L'`, or
    /// `--set '(none)'`. Its group is the first that holds it.
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    set: Option<String>,
    /// The most arm runs the reduction may take; each trial runs both arms once.
    #[arg(long, value_name = "N", default_value_t = 500,
          value_parser = clap::value_parser!(u32).range(4..=1_000_000))]
    max_runs: u32,
    /// Keep any difference, not only one like the case's (the same streams, exit
    /// statuses and first differing line, numbers and paths masked).
    #[arg(long)]
    any_difference: bool,
    /// Trials run at once, each on a copy of the tree of its own (default: 1; the
    /// arms of one trial already keep cores busy). Unix only.
    #[arg(short = 'j', long = "jobs", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    jobs: u32,
    /// The folder for shrunk.tree, shrunk.sets and shrink.json (made if missing;
    /// those three files are replaced).
    #[arg(long, value_name = "DIR", default_value = "shrunk")]
    out: PathBuf,
}

pub(super) fn shrink(mut args: ShrinkArgs) -> Result<u8, Failure> {
    let named = match &args.case {
        Some(id) => Some(CaseId::parse(id).map_err(Failure::usage)?),
        None => None,
    };
    if let Some(named) = &named {
        if !args.subject.trees.is_empty() || args.set.is_some() || args.subject.fs.is_some() {
            let why = "give a case id, or --tree and --set (and --fs), not both";
            return Err(Failure::usage(anyhow::anyhow!(why)));
        }
        args.subject.trees = vec![named.tree.clone()];
        args.subject.fs = named.fs.clone();
    }
    if args.subject.trees.len() != 1 {
        let why = "shrink takes one case: a case id, or one --tree and a --set";
        return Err(Failure::usage(anyhow::anyhow!(why)));
    }
    if args.jobs > 1 && !cfg!(unix) {
        let why = "-j: more than one job needs Unix, where each job's copy of the tree is made with cp -a";
        return Err(Failure::usage(anyhow::anyhow!(why)));
    }
    let mode = RunMode {
        self_check: false,
        as_root: args.subject.as_root,
    };
    let resolved = resolve_subject(&args.subject, given(&args.subject), mode, false, None)?;
    let Some(source) = resolved
        .matrix
        .trees
        .first()
        .filter(|_| resolved.matrix.trees.len() == 1)
    else {
        let why = "--fs: shrink takes one file system";
        return Err(Failure::usage(anyhow::anyhow!(why)));
    };
    let case_tree = source.name().to_string();
    let (group, set) = match (&named, &args.set) {
        (Some(named), _) => named.find(&resolved.matrix.flag_sets)?,
        (None, Some(words)) => by_words(&resolved.matrix.flag_sets, words)?,
        (None, None) => {
            let why = "with --tree, --set names the set to shrink";
            return Err(Failure::usage(anyhow::anyhow!(why)));
        }
    };
    let options = ShrinkOptions {
        case_id: format!("{case_tree}:{group}:{}", set.label()),
        group,
        set,
        max_runs: args.max_runs as usize,
        any_difference: args.any_difference,
        out: args.out.clone(),
        jobs: args.jobs as usize,
    };
    let matrix = resolved.build_arms()?;
    let outcome = crate::shrink::run(&matrix, &options);
    crate::cleanup::exit_if_interrupted();
    let mut report = outcome.map_err(|err| match err.is_refusal() {
        true => Failure::usage(err),
        false => Failure::harness(err),
    })?;
    report.repro = repro(&matrix, &args, &report);
    write_json(&options, &report)?;
    print(&report);
    Ok(report.exit_code())
}

/// A case id as reports give it: `TREE:GROUP:SET` or `TREE@FS:GROUP:SET`, the
/// set as its label.
struct CaseId {
    tree: String,
    fs: Option<String>,
    group: String,
    set: String,
}

impl CaseId {
    /// A tree's path may hold `:` (a folder `./a:b`), and so may a set: the tree
    /// ends at the first `:` before which stands a tree that exists (a folder or
    /// spec file there, or a standard tree's name), the group at the next `:`.
    /// Where none exists, at the first `:`, and the tree's error says so.
    fn parse(id: &str) -> anyhow::Result<CaseId> {
        let splits: Vec<CaseId> = (id.match_indices(':'))
            .filter_map(|(end, _)| {
                let (group, set) = id[end + 1..].split_once(':')?;
                let (tree, fs) = match id[..end].rsplit_once('@') {
                    Some((tree, fs)) => (tree, Some(fs.to_string())),
                    None => (&id[..end], None),
                };
                Some(CaseId {
                    tree: tree.into(),
                    fs,
                    group: group.into(),
                    set: set.into(),
                })
            })
            .collect();
        let exists = |tree: &str| {
            Path::new(tree).symlink_metadata().is_ok() || crate::fixtures::spec_named(tree).is_ok()
        };
        let mut splits = splits.into_iter();
        let first = splits.next().ok_or_else(|| {
            anyhow::anyhow!("case `{id}`: expected TREE:GROUP:SET, as a report's case ids are")
        })?;
        if exists(&first.tree) {
            return Ok(first);
        }
        Ok(splits.find(|split| exists(&split.tree)).unwrap_or(first))
    }

    fn find(&self, flag_sets: &FlagSetFile) -> Result<(String, FlagSet), Failure> {
        let group = (flag_sets.groups.iter())
            .find(|g| g.name == self.group)
            .ok_or_else(|| {
                let file = &flag_sets.file;
                Failure::usage(anyhow::anyhow!("no group `{}` in {file}", self.group))
            })?;
        let set = (group.sets.iter())
            .find(|s| s.label() == self.set)
            .ok_or_else(|| {
                let (file, set, name) = (&flag_sets.file, &self.set, &group.name);
                Failure::usage(anyhow::anyhow!(
                    "no set `{set}` in group `{name}` of {file}"
                ))
            })?;
        Ok((group.name.clone(), set.clone()))
    }
}

/// The set `--set` gives, in the first group that holds it; a set the file does not
/// hold goes in a group of its own, where only rules for every group apply.
fn by_words(flag_sets: &FlagSetFile, words: &str) -> Result<(String, FlagSet), Failure> {
    let args = match words.trim() {
        "(none)" => Vec::new(),
        text => shell_words::split(text)
            .map_err(|err| Failure::usage(anyhow::anyhow!("--set `{words}`: {err}")))?,
    };
    for group in &flag_sets.groups {
        if let Some(set) = group.sets.iter().find(|s| s.args == args) {
            return Ok((group.name.clone(), set.clone()));
        }
    }
    Ok(("given".into(), FlagSet { line: 0, args }))
}

/// The command that shows the shrunk case's difference on a fresh build of its spec.
fn repro(matrix: &crate::matrix::Matrix, args: &ShrinkArgs, report: &ShrinkReport) -> String {
    let exe =
        std::env::current_exe().map_or_else(|_| "eqcheck".into(), |p| p.display().to_string());
    let mut words = vec![exe];
    words.extend(crate::shrink::repro_words(report));
    words.push("--ref".into());
    words.push(shell_words::join(&matrix.reference.command));
    if matrix.candidate.command != matrix.reference.command {
        words.push("--cand".into());
        words.push(shell_words::join(&matrix.candidate.command));
    }
    let subject = &args.subject;
    let fs = matrix.trees[0].file_system();
    if fs != crate::fsimage::FileSystem::Native {
        words.extend(["--fs".to_string(), fs.name().to_string()]);
    }
    let guard = (subject.guard)
        .and_then(|g| clap::ValueEnum::to_possible_value(&g).map(|v| v.get_name().to_string()));
    let passed: [(&str, Option<String>); 8] = [
        ("--timeout", subject.timeout.map(|t| t.to_string())),
        ("--max-output", subject.max_output.clone()),
        ("--guard", guard),
        ("--as-user", subject.as_user.clone()),
        ("--ref-runner", subject.ref_runner.clone()),
        ("--cand-runner", subject.cand_runner.clone()),
        ("--argv0", subject.argv0.clone()),
        (
            "--config",
            subject.config.as_ref().map(|p| p.display().to_string()),
        ),
    ];
    for (flag, value) in passed {
        if let Some(value) = value {
            words.extend([flag.to_string(), value]);
        }
    }
    for (flag, on) in [
        ("--as-root", subject.as_root),
        ("--same-runner", subject.same_runner),
        ("--no-config", subject.no_config),
    ] {
        if on {
            words.push(flag.into());
        }
    }
    shell_words::join(words)
}

fn write_json(options: &ShrinkOptions, report: &ShrinkReport) -> Result<(), Failure> {
    let path = options.out.join("shrink.json");
    let text = serde_json::to_string_pretty(report).map_err(Failure::harness)?;
    std::fs::write(&path, text + "\n")
        .map_err(|err| Failure::harness(anyhow::anyhow!("cannot write {}: {err}", path.display())))
}

/// The result as the terminal shows it.
fn print(report: &ShrinkReport) {
    let label = |words: &[String]| {
        FlagSet {
            line: 0,
            args: words.to_vec(),
        }
        .label()
    };
    println!("shrunk {}", report.case);
    println!(
        "  tree: {} -> {}",
        report.before.tree_words(),
        report.after.tree_words()
    );
    println!(
        "  set:  {} -> {} ({} -> {} words)",
        label(&report.set_before),
        label(&report.set_after),
        report.before.flag_words,
        report.after.flag_words
    );
    println!("  differs in: {}", report.signature.streams.join(", "));
    println!(
        "  arm runs: {} (the reduction may take {}; the last check's runs come on top)",
        report.arm_runs, report.max_runs
    );
    if let Some(why) = &report.stopped {
        println!("  stopped early: {why}");
    }
    for note in &report.approximations {
        println!("  not kept exactly: {note}");
    }
    println!("  spec: {}", report.spec.display());
    println!("  flag sets: {}", report.flag_sets.display());
    match (&report.reproduced, &report.rebuilt_seen) {
        (true, _) => println!("  a fresh build of the spec differs the same way"),
        (false, seen) => println!(
            "  a fresh build of the spec did NOT differ the same way: {}",
            seen.as_deref().unwrap_or("?")
        ),
    }
    println!("repro: {}", report.repro);
}

#[cfg(test)]
mod tests {
    use super::CaseId;

    /// A tree's path and a set may both hold `:`; the tree is the part that exists.
    #[test]
    fn a_case_id_splits_after_the_tree_that_exists() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("co:lon");
        std::fs::create_dir(&folder).unwrap();
        let id = format!("{}:sizes:-a", folder.display());
        let parsed = CaseId::parse(&id).unwrap();
        assert_eq!(parsed.tree, folder.display().to_string());
        assert_eq!(
            (parsed.group.as_str(), parsed.set.as_str()),
            ("sizes", "-a")
        );
        let parsed = CaseId::parse("basic@ext4:time:--time-style=+%H:%M").unwrap();
        assert_eq!(parsed.tree, "basic");
        assert_eq!(parsed.fs.as_deref(), Some("ext4"));
        assert_eq!(parsed.set, "--time-style=+%H:%M");
        let parsed = CaseId::parse("nowhere:g:s:t").unwrap();
        assert_eq!(
            (parsed.tree.as_str(), parsed.group.as_str()),
            ("nowhere", "g")
        );
        assert!(CaseId::parse("basic:sizes").is_err());
    }
}
