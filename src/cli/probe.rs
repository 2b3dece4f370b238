//! `eqcheck probe`'s command line: which trees, which candidate (one of eqcheck's
//! engines, or a lister's dump command), the guard and the report files, turned
//! into a [`ProbeRequest`] and run.

use crate::matrix::exec::{ArmEnvironment, DEFAULT_MAX_OUTPUT};
use std::path::PathBuf;

use clap::Args;

use super::walk::EngineArg;
use super::GuardArg;
use crate::exit::Failure;
use crate::probe::{self, Candidate, ProbeRequest};
use crate::report::probe::ProbeReports;
use crate::settings::{resolve, Given, Guard};
use crate::walk::Engine;

#[derive(Args, Debug)]
pub(super) struct ProbeArgs {
    /// A tree from trees/ by name, or an existing folder (never written to).
    /// Repeatable; the standard trees when none is named.
    #[arg(long = "tree", value_name = "NAME|PATH")]
    trees: Vec<String>,
    /// The file systems each tree named by spec is built on, as for a run
    /// (`native,ext2-nodtype`, `all`). Images need Linux and root.
    #[arg(long = "fs", value_name = "LIST")]
    fs: Option<String>,
    /// Which of eqcheck's engines to probe. [default: fast]
    #[arg(long, value_enum, conflicts_with = "candidate")]
    engine: Option<EngineArg>,
    /// Probe a lister instead: its dump command, split shell-word style, which
    /// prints one JSON object per entry (see docs/probe.md); `{tree}` is replaced
    /// by the tree's path, which is appended otherwise.
    #[arg(long = "cand", value_name = "CMD ARGS")]
    candidate: Option<String>,
    /// Seconds the lister may run on one tree before it and all it started are
    /// killed. [default: 60]
    #[arg(long, value_name = "SECS", requires = "candidate")]
    timeout: Option<f64>,
    /// How closely each tree is fingerprinted around the probe. [default: metadata]
    #[arg(long, value_enum, value_name = "HOW")]
    guard: Option<GuardArg>,
    /// Write the JSON report here (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write a Markdown report here (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    markdown: Option<PathBuf>,
}

/// Resolves the probe's options, runs it and writes its reports; the exit code is
/// 1 on any unexplained difference.
pub(super) fn probe(args: ProbeArgs) -> Result<u8, Failure> {
    let named: Vec<Given<String>> = (args.trees.iter())
        .map(|t| Given::flag("--tree", t.clone()))
        .collect();
    let fs: Vec<Given<String>> = args
        .fs
        .iter()
        .map(|f| Given::flag("--fs", f.clone()))
        .collect();
    let mut warnings = Vec::new();
    let trees = resolve::trees_on(&named, &fs, &mut warnings).map_err(Failure::usage)?;
    for warning in &warnings {
        eprintln!("eqcheck: warning: {warning}");
    }
    super::enter_namespace_for(&trees)?;
    let candidate = match &args.candidate {
        Some(text) => {
            let given = Given::flag("--cand", text.clone());
            let timeout = (args.timeout.map(|t| Given::flag("--timeout", t)).as_ref())
                .map_or(Ok(resolve::DEFAULT_TIMEOUT), resolve::timeout)
                .map_err(Failure::usage)?;
            Candidate::Lister {
                command: resolve::program_command(&given).map_err(Failure::usage)?,
                // eqcheck's own user and environment, as a command typed by hand has.
                env: ArmEnvironment {
                    vars: std::env::vars_os().collect(),
                    user: crate::settings::user::invoker(),
                    timeout,
                    max_output: DEFAULT_MAX_OUTPUT,
                },
            }
        }
        None => Candidate::Engine(match args.engine {
            Some(EngineArg::Reference) => Engine::Reference,
            Some(EngineArg::Fast) | None => Engine::Fast,
        }),
    };
    let guard = match args.guard.map(Guard::from).unwrap_or_default() {
        Guard::Metadata => Some(crate::fixtures::fingerprint::Depth::Metadata),
        Guard::Content => Some(crate::fixtures::fingerprint::Depth::Content),
        Guard::Off => None,
    };
    let trees_read = super::trees_read(&trees);
    let reports = ProbeReports::open(args.json.as_deref(), args.markdown.as_deref(), &trees_read)
        .map_err(Failure::usage)?;
    let request = ProbeRequest {
        trees,
        candidate,
        guard,
    };
    let outcome = probe::run(&request);
    crate::cleanup::exit_if_interrupted();
    let outcome = outcome.map_err(Failure::harness)?;
    reports.write(&outcome).map_err(Failure::harness)?;
    Ok(outcome.exit_code())
}
