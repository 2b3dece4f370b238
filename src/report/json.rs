//! The JSON report: the outcome as it is, under a versioned schema
//! (`schema_version`), pretty-printed so it diffs well between runs.

use std::io::Write;

use crate::outcome::RunOutcome;

pub fn write(outcome: &RunOutcome, out: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, outcome)?;
    writeln!(out)?;
    out.flush()
}
