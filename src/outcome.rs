//! What a run found: the only contract between the matrix runner and the reporters.
//! Reporters read these values and nothing else, so the exit code, the terminal
//! report and the JSON report always tell the same story.

use serde::Serialize;

/// The version of the JSON report's schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// A whole run.
#[derive(Debug, Serialize)]
pub struct RunOutcome {
    pub schema_version: u32,
    pub reference: ArmInfo,
    pub candidate: ArmInfo,
    /// The flag-set file the sets came from.
    pub flag_sets: String,
    /// Who the arms ran as.
    pub arms_ran_as: String,
    /// Things the reader must know before trusting the verdicts.
    pub warnings: Vec<String>,
    pub trees: Vec<TreeInfo>,
    pub cases: Vec<CaseOutcome>,
}

/// One arm as configured, before `{tree}` and the set are filled in.
#[derive(Debug, Serialize)]
pub struct ArmInfo {
    pub command: Vec<String>,
}

/// One tree the cases ran over, with what it held when the arms ran.
#[derive(Debug, Serialize)]
pub struct TreeInfo {
    pub name: String,
    pub path: String,
    /// Whether eqcheck built the tree (and removed it afterwards) or was given it.
    pub built: bool,
    /// A built tree left in place by `--keep`.
    pub kept: bool,
    /// Spec entries this platform or file system could not hold, each
    /// `FILE:LINE: PATH: reason`; nothing is left out silently.
    pub skipped: Vec<String>,
    pub counts: TreeCounts,
    /// How many times the tree was fingerprinted to guard it (0 with the guard off).
    pub fingerprints: usize,
}

/// Entry counts of a tree, the operand itself included.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct TreeCounts {
    pub entries: u64,
    pub files: u64,
    pub folders: u64,
    pub symlinks: u64,
    pub other: u64,
}

/// One case: a tree and a flag set, run by both arms.
#[derive(Debug, Serialize)]
pub struct CaseOutcome {
    /// Stable across runs: tree, group and set.
    pub id: String,
    pub tree: String,
    pub group: String,
    pub set: String,
    pub reference: ArmRun,
    pub candidate: ArmRun,
    pub verdict: Verdict,
    /// Per stream, present when both arms ran to completion.
    pub streams: Vec<StreamResult>,
}

/// How one arm of one case ran.
#[derive(Debug, Serialize)]
pub struct ArmRun {
    pub argv: Vec<String>,
    /// The command to paste into a shell to run this arm again by hand.
    pub repro: String,
    pub status: ArmStatus,
    pub duration_ms: f64,
}

/// How an arm ended. Only `Exited` and `Signaled` runs are ever compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ArmStatus {
    Exited { code: i32 },
    Signaled { signal: i32 },
    TimedOut { after_secs: f64 },
    SpawnFailed { error: String },
}

impl ArmStatus {
    pub fn completed(&self) -> bool {
        matches!(self, ArmStatus::Exited { .. } | ArmStatus::Signaled { .. })
    }

    pub fn describe(&self) -> String {
        match self {
            ArmStatus::Exited { code } => format!("exit {code}"),
            ArmStatus::Signaled { signal } => format!("killed by signal {signal}"),
            ArmStatus::TimedOut { after_secs } => {
                format!("timed out after {after_secs}s; its process group was killed")
            }
            ArmStatus::SpawnFailed { error } => format!("could not start: {error}"),
        }
    }
}

/// A case's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Verdict {
    /// Every stream and the exit status equal, byte for byte.
    Identical,
    /// At least one stream or the exit status differs.
    Differs,
    /// The case could not be judged (an arm failed to start, timed out, was killed).
    Error { reason: String },
    /// The tree's fingerprint moved while the arms ran: the outputs describe two
    /// different trees and are not compared.
    TreeChanged { arm: String, changes: Vec<String> },
}

impl Verdict {
    /// Whether the case could not be judged (counted as an error).
    pub fn is_error(&self) -> bool {
        matches!(self, Verdict::Error { .. } | Verdict::TreeChanged { .. })
    }
}

/// Which output a stream result is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stream {
    Stdout,
    Stderr,
    /// The exit code or terminating signal.
    Status,
}

/// One stream's comparison.
#[derive(Debug, Serialize)]
pub struct StreamResult {
    pub stream: Stream,
    pub identical: bool,
    /// A unified diff of the normalized text when the stream differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

impl RunOutcome {
    /// 3 when any case could not be judged, else 1 when any differs, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.cases.iter().any(|c| c.verdict.is_error()) {
            crate::exit::HARNESS_FAILURE
        } else if self.cases.iter().any(|c| c.verdict == Verdict::Differs) {
            crate::exit::DIFFERENCES
        } else {
            crate::exit::ALL_EQUAL
        }
    }
}
