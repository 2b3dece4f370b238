//! What a probe found: per tree, each field's tally by source, what was unknown,
//! the differences that have a reason and the first ones that have none, and the
//! census. The terminal, Markdown and JSON reports read these values only; the JSON
//! report is this structure (documented in `docs/probe.md`).

use serde::Serialize;

use super::record::FieldName;
use crate::walk::stat::Source;
use crate::walk::Census;

/// The version of the probe's JSON report; bumped on any incompatible change.
pub const PROBE_SCHEMA_VERSION: u32 = 2;

/// A whole probe.
#[derive(Debug, Serialize)]
pub struct ProbeOutcome {
    pub schema_version: u32,
    /// What was probed: `eqcheck's fast engine`, or the lister's command.
    pub candidate: String,
    pub trees: Vec<TreeProbe>,
}

/// One tree's probe.
#[derive(Debug, Serialize)]
pub struct TreeProbe {
    pub name: String,
    pub path: String,
    /// The file system the tree's root is on, where it can be told (Linux).
    pub file_system: Option<String>,
    /// Entries read_dir + lstat found, the root included; null when the tree
    /// could not be probed far enough to count them.
    pub entries: Option<usize>,
    /// What comparing the two sides found (its keys stand in the tree's own).
    #[serde(flatten)]
    pub found: Comparison,
    /// What the listing typed and how many stats it made, where the candidate
    /// counts it (eqcheck's fast engine on Linux); a lister's is not known.
    pub census: Option<Census>,
    /// Why the tree could not be probed (it changed while probed, the lister
    /// failed): the tree's result is then an error, not a mismatch.
    pub error: Option<String>,
}

/// What comparing one tree's two sides found.
#[derive(Debug, Default, Serialize)]
pub struct Comparison {
    /// One row per field and the source that gave the candidate's value.
    pub rows: Vec<Row>,
    /// How often a field was unknown, per side.
    pub unknown: Vec<UnknownCount>,
    /// Differences that have a reason, per reason and field.
    pub explained: Vec<ExplainedCount>,
    /// The first unexplained differences of each field and source.
    pub mismatches: Vec<Mismatch>,
    /// Entries one side has and the other lacks (the first of each side).
    pub missing: Vec<MissingEntry>,
    pub missing_in_candidate: usize,
    pub missing_in_reference: usize,
    /// Entries one side could stat and the other could not (the first of each).
    pub stat_failures: Vec<StatFailure>,
    pub stat_failed_in_candidate: usize,
    pub stat_failed_in_reference: usize,
}

/// An entry one side could stat and the other could not.
#[derive(Debug, Clone, Serialize)]
pub struct StatFailure {
    pub path: String,
    /// The side that could not.
    pub failed_on: Side,
    pub error: String,
}

/// One field as one source gave it, over every entry both sides know it for.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub field: FieldName,
    pub source: Source,
    pub compared: usize,
    pub equal: usize,
    pub explained: usize,
    pub unexplained: usize,
}

/// Which side did not know a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    Candidate,
    Reference,
}

/// How many entries one side did not know a field for.
#[derive(Debug, Clone, Serialize)]
pub struct UnknownCount {
    pub field: FieldName,
    pub side: Side,
    pub count: usize,
}

/// How many differences one reason explains, for one field.
#[derive(Debug, Clone, Serialize)]
pub struct ExplainedCount {
    pub reason: String,
    pub field: FieldName,
    pub count: usize,
}

/// One difference with no reason.
#[derive(Debug, Clone, Serialize)]
pub struct Mismatch {
    pub field: FieldName,
    pub source: Source,
    pub path: String,
    pub reference: String,
    pub candidate: String,
}

/// An entry only one side has.
#[derive(Debug, Clone, Serialize)]
pub struct MissingEntry {
    pub path: String,
    /// The side that lacks it.
    pub missing_from: Side,
}

impl TreeProbe {
    /// Differences no reason explains, entries one side lacks included.
    pub fn unexplained(&self) -> usize {
        let found = &self.found;
        let fields: usize = found.rows.iter().map(|r| r.unexplained).sum();
        fields
            + found.missing_in_candidate
            + found.missing_in_reference
            + found.stat_failed_in_candidate
            + found.stat_failed_in_reference
    }
}

impl ProbeOutcome {
    /// 3 when a tree could not be probed, else 1 on any unexplained difference,
    /// else 0.
    pub fn exit_code(&self) -> u8 {
        if self.trees.iter().any(|t| t.error.is_some()) {
            crate::exit::HARNESS_FAILURE
        } else if self.trees.iter().any(|t| t.unexplained() > 0) {
            crate::exit::DIFFERENCES
        } else {
            crate::exit::ALL_EQUAL
        }
    }
}
