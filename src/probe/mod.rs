//! `eqcheck probe`: does a fast listing give the same stat fields as `read_dir` +
//! `lstat`, file by file and field by field? For every entry of every tree, the
//! candidate's fields (eqcheck's own engine, or the records a third-party lister
//! prints) are compared with the oracle's, each field with the source it came
//! from; the listing's own census says what it typed and how many stats it made.
//! Nothing holds a whole tree: the two looks go folder by folder side by side
//! (`look`), and the guard keeps one digest per folder. A tree that changes
//! while probed is an error, never a mismatch.

pub mod compare;
pub mod lister;
mod look;
pub mod outcome;
pub mod record;

use std::path::Path;

use crate::fixtures::fingerprint::{self, FolderDigests};
use crate::matrix::TreeSource;
use crate::walk::stat::Timestamp;
use crate::walk::{self, Census, Counters, Engine};
use compare::{Awaiting, Tally};
use outcome::{Comparison, ProbeOutcome, Side, TreeProbe, PROBE_SCHEMA_VERSION};

/// What a probe compares with `read_dir` + `lstat`.
#[derive(Debug, Clone)]
pub enum Candidate {
    /// One of eqcheck's own engines, run in this process.
    Engine(Engine),
    /// A lister's dump mode: its command, split, with `{tree}` where the tree goes,
    /// and the environment, user and timeout it runs with on each tree.
    Lister {
        command: Vec<String>,
        env: crate::matrix::exec::ArmEnvironment,
    },
}

/// Everything a probe needs, resolved from the command line.
#[derive(Debug)]
pub struct ProbeRequest {
    pub trees: Vec<TreeSource>,
    pub candidate: Candidate,
    /// How closely each tree is fingerprinted around the probe; `None`: not at all.
    pub guard: Option<fingerprint::Depth>,
}

/// A failure of the harness itself: exit code 3.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Tree(#[from] crate::matrix::MatrixError),
    #[error("cannot make the probe's scratch folder")]
    Scratch(#[source] std::io::Error),
}

/// Probes every tree and says what was found.
pub fn run(request: &ProbeRequest) -> Result<ProbeOutcome, ProbeError> {
    crate::cleanup::on_interrupt_clean_up();
    let scratch = tempfile::Builder::new()
        .prefix("eqc-probe-")
        .tempdir()
        .map_err(ProbeError::Scratch)?;
    // Dropping the TempDir removes it after a normal end; an interrupt ends the
    // process before any drop, so the interrupt's cleanup must know it too.
    if !crate::cleanup::register_folder(scratch.path()) {
        let interrupted = std::io::Error::new(std::io::ErrorKind::Interrupted, "interrupted");
        return Err(ProbeError::Scratch(interrupted));
    }
    let mut trees = Vec::new();
    for (index, source) in request.trees.iter().enumerate() {
        let image_dir = scratch.path().join(format!("tree-{index}.image"));
        let tree = crate::matrix::open_tree(source, &image_dir)?;
        // A temp folder behind a symlink (macOS's /var) is named as a lister that
        // resolves its root would name it.
        let root = match source {
            TreeSource::Existing { .. } => tree.root.clone(),
            _ => std::fs::canonicalize(&tree.root).unwrap_or_else(|_| tree.root.clone()),
        };
        trees.push(probe_tree(request, &tree.name, &root, scratch.path()));
    }
    Ok(ProbeOutcome {
        schema_version: PROBE_SCHEMA_VERSION,
        candidate: match &request.candidate {
            Candidate::Engine(Engine::Fast) => "eqcheck's fast engine".into(),
            Candidate::Engine(Engine::Reference) => "eqcheck's reference engine".into(),
            Candidate::Lister { command, .. } => shell_words::join(command),
        },
        trees,
    })
}

/// Probes one tree, guarded: its folders are digested before and after, and the
/// two sides look at it in between.
fn probe_tree(request: &ProbeRequest, name: &str, root: &Path, scratch: &Path) -> TreeProbe {
    let began = now_less(std::time::Duration::from_millis(20));
    // The first digest also reads every folder, which settles directory atimes
    // before either side looks; it is taken with the guard off too.
    let depth = request.guard.unwrap_or_default();
    let baseline = FolderDigests::take(root, depth);
    let mut probe = TreeProbe {
        name: name.to_string(),
        path: root.display().to_string(),
        file_system: walk::file_system::name(root),
        entries: None,
        found: Comparison::default(),
        census: None,
        error: None,
    };
    let times = compare::ProbeTimes {
        began,
        candidate_began: now_less(std::time::Duration::ZERO),
    };
    let mut tally = Tally::new(root, times);
    match look(&request.candidate, root, scratch, &mut tally) {
        Ok((entries, census)) => (probe.entries, probe.census) = (Some(entries), census),
        Err(error) => {
            probe.error = Some(error);
            return probe;
        }
    }
    if request.guard.is_some() {
        let changes = baseline.changes_now(root, depth, 5);
        if !changes.is_empty() {
            let changes = changes.join("; ");
            probe.error = Some(format!("the tree changed while it was probed: {changes}"));
            return probe;
        }
    }
    probe.found = tally.finish();
    probe
}

/// Both sides' looks at the tree, counted in `tally`: how many entries the oracle
/// found, and the candidate's census where it counts one.
fn look(
    candidate: &Candidate,
    root: &Path,
    scratch: &Path,
    tally: &mut Tally,
) -> Result<(usize, Option<Census>), String> {
    match candidate {
        Candidate::Engine(engine) => {
            let census = Counters::default();
            let entries = look::side_by_side(*engine, root, tally, &census);
            Ok((
                entries,
                walk::counts_census(*engine).then(|| census.snapshot()),
            ))
        }
        Candidate::Lister { command, env } => {
            let records = lister::run(command, env, root, scratch)
                .map_err(|err| crate::exit::with_causes(&err))?;
            let mut awaiting = Awaiting::new(records);
            let entries = look::oracle(root, |theirs| match awaiting.claim(&theirs.path) {
                Some(ours) => tally.entry(ours, &theirs),
                None => tally.missing(&theirs.path, Side::Candidate),
            });
            for ours in awaiting.unclaimed() {
                tally.missing(&ours.path, Side::Reference);
            }
            Ok((entries, None))
        }
    }
}

/// The time `less` ago, as a file system stamps times.
fn now_less(less: std::time::Duration) -> Timestamp {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .saturating_sub(less);
    Timestamp {
        secs: since.as_secs() as i64,
        nanos: since.subsec_nanos(),
    }
}
