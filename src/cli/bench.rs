//! `eqcheck bench`'s command line: the arms, trees and sets as `run` takes them,
//! the bench's own options checked once here, and the reports it writes.

use std::path::PathBuf;

use clap::Args;

use super::{given, resolve_subject, SubjectArgs};
use crate::bench::{BenchOptions, Variant};
use crate::exit::Failure;
use crate::settings::{Given, RunMode};

/// `eqcheck bench`'s arguments.
#[derive(Args, Debug)]
pub(super) struct BenchArgs {
    #[command(flatten)]
    subject: SubjectArgs,
    /// Timed rounds per row: each runs A and B once, alternating which goes first.
    #[arg(long, value_name = "N", default_value_t = 9,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    rounds: u32,
    /// Rounds run first, checked for correctness, and left out of the figures.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(0..=100_000))]
    warmup: u32,
    /// Extra arguments per variant, each split shell-word style and added after the
    /// set's own; `default` adds none. Variants are interleaved within each round:
    /// `--variants default '-T 1'`. It takes every word after it, so it goes last.
    #[arg(long, value_name = "ARGS", num_args = 1.., allow_hyphen_values = true,
          default_value = "default")]
    variants: Vec<String>,
    /// A lower bound timed once per round on each tree and reported as a ratio,
    /// split shell-word style and run as the arms are; `{tree}` is replaced by the
    /// tree's path, else the path is appended: `--baseline "find {tree} -printf ''"`.
    #[arg(long, value_name = "CMD ARGS")]
    baseline: Option<String>,
    /// A shell command run before every timed run, untimed, as the invoking user;
    /// `{tree}` is replaced by the tree's path, quoted.
    #[arg(long, value_name = "SHELL-CMD")]
    prepare: Option<String>,
    /// Write the JSON report, every run included, here (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write the table in Markdown, to paste into a pull request, here (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    markdown: Option<PathBuf>,
}

pub(super) fn bench(args: BenchArgs) -> Result<u8, Failure> {
    let mode = RunMode {
        self_check: false,
        as_root: args.subject.as_root,
    };
    let resolved = resolve_subject(&args.subject, given(&args.subject), mode, false, None)?;
    let options = options(&args, resolved.options.sets.is_none())?;
    let reports = crate::report::open(&crate::report::ReportRequest {
        json: args.json.clone(),
        markdown: args.markdown.clone(),
        junit: None,
        color: crate::report::ColorChoice::Never,
        environment: crate::report::Environment::current(),
        trees_read: super::trees_read(&resolved.matrix.trees),
    })
    .map_err(Failure::usage)?;
    let matrix = resolved.build_arms()?;
    let outcome = crate::bench::run(&matrix, &options, reports.bench_progress());
    reports.end_progress();
    crate::cleanup::exit_if_interrupted();
    let outcome = outcome.map_err(Failure::harness)?;
    reports.write_bench(&outcome).map_err(Failure::harness)?;
    Ok(outcome.exit_code())
}

/// The bench's own options, each checked once, an error naming its flag.
fn options(args: &BenchArgs, no_sets_given: bool) -> Result<BenchOptions, Failure> {
    swallowed_flag(&args.variants)?;
    let variants = (args.variants.iter())
        .map(|text| Variant::parse(text))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| Failure::usage(anyhow::anyhow!("--variants: {err}")))?;
    distinct(&variants)?;
    let baseline = match &args.baseline {
        Some(text) => Some(baseline(&Given::flag("--baseline", text.clone()))?),
        None => None,
    };
    Ok(BenchOptions {
        rounds: args.rounds as usize,
        warmup: args.warmup as usize,
        variants,
        baseline,
        prepare: args.prepare.clone(),
        first_set_only: no_sets_given,
    })
}

/// `--variants` takes every word after it, since a variant starts with a hyphen:
/// a word that is one of bench's own flags, alone or as `--flag=value`, was meant
/// for bench, not for the arms. A quoted variant of several words (`'--rounds 3'`)
/// cannot be a bench option and is the arms'.
fn swallowed_flag(variants: &[String]) -> Result<(), Failure> {
    use clap::{Args, Command};
    let command = BenchArgs::augment_args(Command::new("bench"));
    let flags: Vec<String> = (command.get_arguments())
        .filter_map(|arg| arg.get_long())
        .map(|long| format!("--{long}"))
        .collect();
    let is_flag = |word: &str| {
        let name = word.split_once('=').map_or(word, |(name, _)| name);
        flags.iter().any(|flag| flag == name)
    };
    match variants.iter().map(|v| v.trim()).find(|v| is_flag(v)) {
        Some(word) => Err(Failure::usage(anyhow::anyhow!(
            "--variants took `{word}` as a variant: it takes every word after it, so put it after bench's other options"
        ))),
        None => Ok(()),
    }
}

/// Every variant names a row of its own in the table: none empty, none twice.
fn distinct(variants: &[Variant]) -> Result<(), Failure> {
    let usage = |text: String| Err(Failure::usage(anyhow::anyhow!(text)));
    for (i, variant) in variants.iter().enumerate() {
        if variant.label.is_empty() {
            return usage(
                "--variants: an empty variant; `default` is the one that adds no arguments".into(),
            );
        }
        if variants[..i].iter().any(|v| v.words == variant.words) {
            return usage(format!(
                "--variants: `{}` adds the same arguments as a variant before it: its row would time the same command twice",
                variant.label
            ));
        }
    }
    Ok(())
}

/// The baseline's words, its program found as an arm's is.
fn baseline(given: &Given<String>) -> Result<Vec<String>, Failure> {
    crate::settings::resolve::program_command(given).map_err(Failure::usage)
}
