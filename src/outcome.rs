//! What a run found: the only contract between the matrix runner and the reporters.
//! Reporters read these values and nothing else, so the exit code, the terminal
//! report and the JSON report always tell the same story.

use serde::{Deserialize, Serialize};

mod arm;
pub mod bench;
mod shard;

pub use arm::{size_text, ArmRun, ArmStatus, Output};
pub use shard::{Partition, PartitionHow, Shard};

/// The version of the JSON report's schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 2;

/// A whole run.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunOutcome {
    pub schema_version: u32,
    /// The version of the eqcheck that wrote the report; reports written by
    /// different versions are not merged.
    #[serde(default)]
    pub eqcheck_version: String,
    /// The shard of the matrix this run ran (`--partition`); none for a whole run.
    #[serde(default)]
    pub shard: Option<Shard>,
    /// The machine the arms ran on.
    #[serde(default)]
    pub host: Option<Host>,
    pub reference: ArmInfo,
    pub candidate: ArmInfo,
    /// The project config (`eqcheck.toml`) the run read, if any.
    pub config: Option<String>,
    /// The flag-set file the sets came from.
    pub flag_sets: String,
    /// How many times each arm ran each case (`--runs`).
    pub runs: usize,
    /// `--self-check`: the candidate is the reference itself.
    pub self_check: bool,
    /// Who the arms ran as.
    pub arms_ran_as: String,
    /// What bounded each arm run; None in reports written before it was said.
    #[serde(default)]
    pub limits: Option<ArmLimits>,
    /// Things the reader must know before trusting the verdicts.
    pub warnings: Vec<String>,
    pub trees: Vec<TreeInfo>,
    /// Every normalizer rule of the flag-set file and how much it fired.
    pub rules: Vec<RuleAudit>,
    pub cases: Vec<CaseOutcome>,
    /// What the run cost in CPU, eqcheck's own against its arms', so anyone can
    /// see what the harness adds. None where it is not measured (off Unix) and in
    /// reports written before it was.
    #[serde(default)]
    pub cpu: Option<CpuTime>,
}

/// What bounds each arm run: shards run with other bounds could judge the same
/// case differently (a timeout in one, a verdict in another).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ArmLimits {
    /// `--timeout`, in seconds.
    pub timeout_s: f64,
    /// `--max-output`, in bytes per stream.
    pub max_output_bytes: u64,
}

/// CPU seconds (user + system) of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuTime {
    /// eqcheck's own, every thread, from its start to the end of the matrix, its
    /// children left out.
    pub harness_s: f64,
    /// Every process eqcheck started while the matrix ran and waited for: the arms,
    /// with whatever they started and waited for themselves, and the `--version`
    /// asked of each arm's program.
    pub arms_s: f64,
}

impl CpuTime {
    /// The harness's CPU as a share of the arms' (0.05 is 5%); None when the arms
    /// took no measurable CPU.
    pub fn overhead(&self) -> Option<f64> {
        (self.arms_s > 0.0).then(|| self.harness_s / self.arms_s)
    }
}

/// The machine a run was on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// `linux`, `macos`, `windows`, … (Rust's `std::env::consts::OS`).
    pub os: String,
    /// The kernel's name and release (`uname`), where known.
    pub kernel: Option<String>,
    /// `x86_64`, `aarch64`, … (Rust's `std::env::consts::ARCH`).
    pub architecture: String,
    /// eqcheck itself runs translated (under Rosetta 2).
    pub translated: bool,
}

/// One arm as configured, before `{tree}` and the set are filled in.
#[derive(Debug, Serialize, Deserialize)]
pub struct ArmInfo {
    pub command: Vec<String>,
    /// The name the program saw as its own (`argv[0]`).
    pub argv0: String,
    /// The program's file, as found on PATH (absent when it cannot be found).
    pub binary: Option<String>,
    /// The sha256 of that file, so a report says exactly which build ran.
    pub sha256: Option<String>,
    /// The copy of that file that ran in its place, when the arms ran as a user who
    /// could not reach the file where it is (its sha256 is the original's).
    pub copy: Option<String>,
    /// Who the arm ran as.
    pub user: String,
    /// The command the program ran under (`--ref-runner`, `--cand-runner`), its
    /// program by absolute path; none when it ran as it is.
    #[serde(default)]
    pub runner: Option<Vec<String>>,
    /// The program file's size in bytes.
    #[serde(default)]
    pub size: Option<u64>,
    /// The architecture its ELF, Mach-O or PE header names (`x86_64`, `aarch64`,
    /// `universal: x86_64, aarch64`); none for a script or an unknown format.
    #[serde(default)]
    pub architecture: Option<String>,
    /// The first line its `--version` printed, where it has one.
    #[serde(default)]
    pub version: Option<String>,
    /// It ran translated: under a runner, by Rosetta 2, or built for another
    /// architecture than the machine's.
    #[serde(default)]
    pub translated: bool,
    /// How it ran, in words: `native`, `translated (under qemu-aarch64)`, …
    #[serde(default)]
    pub execution: String,
    /// How the program was built, when eqcheck built it (`--ref-rev`, and the
    /// candidate built from the working tree beside it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_from: Option<BuiltFrom>,
}

/// Where a program eqcheck built came from, so a report says which source ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuiltFrom {
    /// The revision as given (`--ref-rev REV`); none for the working tree as it is,
    /// uncommitted changes included.
    pub rev: Option<String>,
    /// The full hash of the commit built: the revision's, or the working tree's
    /// HEAD (none in a repository without commits).
    pub commit: Option<String>,
    /// The build command, split as it ran, with no shell.
    pub command: Vec<String>,
    /// The folder the build ran in: a temporary worktree (removed since) or the
    /// repository itself.
    pub folder: String,
    /// Taken from the build cache: this run built nothing.
    pub cached: bool,
}

impl BuiltFrom {
    /// `main, commit 1a2b…: `cargo build --release` in FOLDER`, or `the working
    /// tree at HEAD 1a2b…: …`, for the reports' arm headers.
    pub fn describe(&self) -> String {
        let commit = self.commit.as_deref().unwrap_or("(none yet)");
        let command = shell_words::join(&self.command);
        let source = match &self.rev {
            Some(rev) => format!("{rev}, commit {commit}"),
            None => format!("the working tree at HEAD {commit}"),
        };
        match self.cached {
            true => format!("{source}: `{command}`, cached in {}", self.folder),
            false => format!("{source}: `{command}` in {}", self.folder),
        }
    }
}

/// A normalizer rule and how often it changed something over the whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RuleAudit {
    pub name: String,
    pub kind: String,
    /// `FILE:LINE` of its `[rule NAME]` header.
    pub declared_at: String,
    pub stream: String,
    /// The groups it is scoped to; empty for all.
    pub groups: Vec<String>,
    /// Cases in which it changed something.
    pub cases_fired: usize,
    /// Changes it made, summed over all cases, both arms and both streams. In a
    /// case the trust check failed, a rule caught hiding a difference counts with
    /// the changes it made to the altered copy it hid (even where the arms' own
    /// outputs were equal and needed no rule): that is how the case used it.
    pub times_fired: usize,
    /// It never changed anything in this run: the run's trees and sets did not need
    /// it (a list with one item needs no sorting), or its pattern no longer matches.
    /// Never true of a rule the trust check caught hiding a difference.
    pub unused: bool,
}

/// One tree the cases ran over, with what it held when the arms ran.
#[derive(Debug, Serialize, Deserialize)]
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
    /// The file system the tree is on (`ext2/3/4`, `apfs`, …), where it can be told.
    #[serde(default)]
    pub file_system: Option<String>,
    /// The `--fs` the tree was built on (`ext4`, `exfat`, …): `native` for the
    /// temp folder's own file system and for a given folder.
    #[serde(default = "native")]
    pub fs: String,
    /// How the tree was guarded (`watched (inotify on N folders), …` or
    /// `fingerprinted after every arm: why`); none with the guard off.
    #[serde(default)]
    pub guard: Option<String>,
    /// How many times the tree was fingerprinted to guard it (0 with the guard off).
    pub fingerprints: usize,
}

/// What a report from before the file-system dimension ran on.
fn native() -> String {
    "native".to_string()
}

/// Entry counts of a tree, the operand itself included.
#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
pub struct TreeCounts {
    pub entries: u64,
    pub files: u64,
    pub folders: u64,
    pub symlinks: u64,
    pub other: u64,
}

/// One case: a tree and a flag set, run by both arms.
#[derive(Debug, Serialize, Deserialize)]
pub struct CaseOutcome {
    /// Stable across runs: tree, group and set.
    pub id: String,
    /// The tree's name, `TREE@FS` on a file system of `--fs`.
    pub tree: String,
    /// The `--fs` the tree was on: `native` for the temp folder's own.
    #[serde(default = "native")]
    pub fs: String,
    pub group: String,
    pub set: String,
    pub reference: ArmRun,
    pub candidate: ArmRun,
    pub verdict: Verdict,
    /// Per stream, present when both arms ran to completion and agreed with
    /// themselves.
    pub streams: Vec<StreamResult>,
    /// Rules (and the tree-root rewrite) that changed something in this case, with
    /// how many times, over both arms and both streams.
    pub fired: Vec<Fired>,
    /// Limits that were hit (output too large to normalize or diff in full).
    pub notes: Vec<String>,
}

impl CaseOutcome {
    /// `TREE [GROUP] SET`, as every report names a case.
    pub fn name(&self) -> String {
        format!("{} [{}] {}", self.tree, self.group, self.set)
    }

    /// Both arms' runs, each with the name reports give it.
    pub fn arms(&self) -> [(&'static str, &ArmRun); 2] {
        [
            ("reference", &self.reference),
            ("candidate", &self.candidate),
        ]
    }
}

/// A rule that changed something in a case, and how many times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fired {
    pub rule: String,
    pub times: usize,
}

/// A case's verdict, from best to worst: identical, order-only,
/// equal-after-normalization; then differs, flaky, and the two that mean the case
/// could not be judged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Verdict {
    /// Every stream and the exit status equal, byte for byte.
    Identical,
    /// Equal once the sorting rules ran (and no other rule was needed).
    OrderOnly,
    /// Equal once rewriting rules (masks, canonical JSON, the tree root) ran.
    EqualAfterNormalization,
    /// At least one stream or the exit status differs after normalization.
    Differs,
    /// With `--runs`, an arm disagreed with itself; the arms are not compared.
    Flaky { arms: Vec<FlakyArm> },
    /// The case could not be judged (an arm failed to start, timed out, was
    /// killed, or the normalizers were caught hiding a difference).
    Error { reason: String },
    /// The tree's fingerprint moved while the arms ran: the outputs describe two
    /// different trees and are not compared.
    TreeChanged { arm: Blame, changes: Vec<String> },
}

/// Whom a tree-changed verdict blames: the arm that ran when the change was first
/// seen, or nobody of this case's when the tree had changed before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Blame {
    Reference,
    Candidate,
    /// The change was first seen in an earlier case.
    Earlier,
}

impl Blame {
    pub fn name(self) -> &'static str {
        match self {
            Blame::Reference => "reference",
            Blame::Candidate => "candidate",
            Blame::Earlier => "earlier",
        }
    }
}

/// One arm that disagreed with itself: each different output it gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlakyArm {
    pub arm: String,
    pub variants: Vec<Variant>,
}

/// One of the outputs a flaky arm gave, and in which runs (numbered from 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variant {
    pub runs: Vec<usize>,
    pub status: String,
    /// For every variant but the first: a diff from the first variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

impl Verdict {
    /// Whether the case could not be judged (counted as an error).
    pub fn is_error(&self) -> bool {
        matches!(self, Verdict::Error { .. } | Verdict::TreeChanged { .. })
    }

    /// Whether the arms were judged equal (raw, order-only, or after normalization).
    pub fn is_equal(&self) -> bool {
        matches!(
            self,
            Verdict::Identical | Verdict::OrderOnly | Verdict::EqualAfterNormalization
        )
    }

    /// The kind summaries count the verdict under.
    pub fn kind(&self) -> VerdictKind {
        match self {
            Verdict::Identical => VerdictKind::Identical,
            Verdict::OrderOnly => VerdictKind::OrderOnly,
            Verdict::EqualAfterNormalization => VerdictKind::EqualAfterNormalization,
            Verdict::Differs => VerdictKind::Differs,
            Verdict::Flaky { .. } => VerdictKind::Flaky,
            Verdict::Error { .. } | Verdict::TreeChanged { .. } => VerdictKind::Error,
        }
    }

    /// The verdict's name as reports print it.
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Identical => "identical",
            Verdict::OrderOnly => "order-only",
            Verdict::EqualAfterNormalization => "equal-after-normalization",
            Verdict::Differs => "differs",
            Verdict::Flaky { .. } => "flaky",
            Verdict::Error { .. } => "error",
            Verdict::TreeChanged { .. } => "tree-changed",
        }
    }
}

/// Which output a stream result is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stream {
    Stdout,
    Stderr,
    /// The exit code or terminating signal.
    Status,
}

impl Stream {
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
            Stream::Status => "exit status",
        }
    }
}

/// How one stream compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StreamVerdict {
    Identical,
    OrderOnly,
    EqualAfterNormalization,
    Differs,
}

/// One stream's comparison.
#[derive(Debug, Serialize, Deserialize)]
pub struct StreamResult {
    pub stream: Stream,
    pub verdict: StreamVerdict,
    /// Order-only: the first lines that stand in different places.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub displaced: Vec<String>,
    /// A unified diff of the normalized text when the stream differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// How many lines differ, where a text too large for a full diff was compared
    /// line by line as it streamed; the diff then shows only its first hunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<LineCounts>,
}

/// Differing lines of one stream, counted over the whole of both texts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineCounts {
    /// `in-order`: the texts were aligned line by line with a bounded look-ahead;
    /// `multiset`: sorting lines was the stream's only rule, so lines were matched
    /// in any order.
    pub compared: LineOrder,
    /// Lines of the reference the candidate has no counterpart for.
    pub only_in_reference: u64,
    /// Lines of the candidate the reference has no counterpart for.
    pub only_in_candidate: u64,
    /// In order only: the differing lines, where a reference line changed into a
    /// candidate line counts once (each run of changes counts its longer side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub differing: Option<u64>,
    /// In order only: the hunks of a unified diff with three lines of context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hunks: Option<u64>,
}

/// How a stream's lines were matched when they were counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LineOrder {
    InOrder,
    Multiset,
}

impl RunOutcome {
    /// 3 when any case could not be judged, else 1 when any differs or is flaky,
    /// else 0 (identical, order-only and equal-after-normalization are all allowed).
    pub fn exit_code(&self) -> u8 {
        if self.cases.iter().any(|c| c.verdict.is_error()) {
            crate::exit::HARNESS_FAILURE
        } else if self.cases.iter().any(|c| !c.verdict.is_equal()) {
            crate::exit::DIFFERENCES
        } else {
            crate::exit::ALL_EQUAL
        }
    }

    /// How many cases (of one tree, or of all) have a verdict of this kind.
    pub fn count(&self, tree: Option<&str>, kind: VerdictKind) -> usize {
        self.cases
            .iter()
            .filter(|c| tree.is_none_or(|t| c.tree == t))
            .filter(|c| c.verdict.kind() == kind)
            .count()
    }
}

/// Verdicts as summaries count them: tree-changed counts as an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerdictKind {
    Identical,
    OrderOnly,
    EqualAfterNormalization,
    Differs,
    Flaky,
    Error,
}

impl VerdictKind {
    /// Every kind, from best to worst: the order of summary columns and tallies.
    pub const ALL: [VerdictKind; 6] = [
        VerdictKind::Identical,
        VerdictKind::OrderOnly,
        VerdictKind::EqualAfterNormalization,
        VerdictKind::Differs,
        VerdictKind::Flaky,
        VerdictKind::Error,
    ];

    /// The kind's name as tallies print it.
    pub fn label(self) -> &'static str {
        match self {
            VerdictKind::Identical => "identical",
            VerdictKind::OrderOnly => "order-only",
            VerdictKind::EqualAfterNormalization => "equal-after-normalization",
            VerdictKind::Differs => "differs",
            VerdictKind::Flaky => "flaky",
            VerdictKind::Error => "error",
        }
    }

    /// The kind's place in [`VerdictKind::ALL`], for arrays of counts.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Hears about the run as it goes, for a progress display. Called from the
/// runner's worker threads.
pub trait Progress: Sync {
    /// Before a tree's cases: the tree's name and how many cases it has.
    fn tree_started(&self, _tree: &str, _cases: usize) {}
    /// After each case is judged.
    fn case_done(&self, _case: &CaseOutcome) {}
}

/// `61007` as `61,007`: how every report and diff prints a count, so counts are
/// read at a glance and alike everywhere.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_the_largest_whole_unit() {
        assert_eq!(size_text(4 << 30), "4 GiB");
        assert_eq!(size_text(1536 << 10), "1536 KiB");
        assert_eq!(size_text(1000), "1000 bytes");
        assert_eq!(size_text(0), "0 bytes");
    }

    #[test]
    fn every_arm_status_reads_back_as_written() {
        let statuses = [
            ArmStatus::Exited { code: 3 },
            ArmStatus::Signaled { signal: 9 },
            ArmStatus::TimedOut { after_secs: 0.3 },
            ArmStatus::SpawnFailed {
                error: "no such file".into(),
            },
            ArmStatus::OutputCapped {
                stream: Output::Stderr,
                cap_bytes: 4 << 30,
            },
        ];
        for status in statuses {
            let text = serde_json::to_string(&status).unwrap();
            let back: ArmStatus =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(back, status, "{text}");
        }
    }
}
