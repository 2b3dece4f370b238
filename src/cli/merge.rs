//! `eqcheck merge`: the shards' JSON reports read, refused when they are not shards
//! of one run or when a merged report would replace one of them, and joined into
//! the whole run's reports.

use std::path::PathBuf;

use clap::Args;

use super::ReportArgs;
use crate::exit::Failure;

/// `eqcheck merge`'s arguments.
#[derive(Args, Debug)]
pub(super) struct MergeArgs {
    /// The shards' JSON reports (each written by `--partition HOW:M/N --json FILE`).
    #[arg(required = true, value_name = "REPORT")]
    shards: Vec<PathBuf>,
    #[command(flatten)]
    reports: ReportArgs,
}

pub(super) fn merge(args: MergeArgs) -> Result<u8, Failure> {
    refuse_replacing_a_shard(&args)?;
    let shards = (args.shards.iter())
        .map(|path| crate::merge::read(path))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Failure::usage)?;
    let whole = crate::merge::merge(shards).map_err(Failure::usage)?;
    let reports = args.reports.open(Vec::new())?;
    reports.write(&whole).map_err(Failure::harness)?;
    Ok(whole.exit_code())
}

/// A merged report written over one of the shards it reads would lose that shard
/// for good: refused before anything is read.
fn refuse_replacing_a_shard(args: &MergeArgs) -> Result<(), Failure> {
    let reports = [
        ("--json", &args.reports.json),
        ("--markdown", &args.reports.markdown),
        ("--junit", &args.reports.junit),
    ];
    for (flag, path) in reports {
        let Some(written) = path.as_deref().and_then(|p| std::fs::canonicalize(p).ok()) else {
            continue;
        };
        let shard = (args.shards.iter())
            .find(|shard| std::fs::canonicalize(shard).is_ok_and(|read| read == written));
        if let Some(shard) = shard {
            return Err(Failure::usage(anyhow::anyhow!(
                "{flag} {}: that is the shard {}, which the merge reads; write the merged report to another file",
                path.as_deref().unwrap_or(shard).display(),
                shard.display()
            )));
        }
    }
    Ok(())
}
