//! `eqcheck probe`: does a fast listing give the same stat fields as `read_dir` +
//! `lstat`, file by file and field by field? For every entry of every tree, the
//! candidate's fields (eqcheck's own engine, or the records a third-party lister
//! prints) are compared with the oracle's, each field with the source it came
//! from; the listing's own census says what it typed and how many stats it made.
//! The tree is guarded as `run` guards it: a tree that changes while probed is an
//! error, never a mismatch.

pub mod compare;
pub mod lister;
pub mod outcome;
pub mod record;

use std::ffi::OsString;
use std::path::Path;

use crate::fixtures::{self, fingerprint};
use crate::matrix::TreeSource;
use crate::walk::stat::Timestamp;
use crate::walk::{self, Engine, ListOptions};
use outcome::{Comparison, ProbeOutcome, TreeProbe, PROBE_SCHEMA_VERSION};
use record::Record;

/// What a probe compares with `read_dir` + `lstat`.
#[derive(Debug, Clone)]
pub enum Candidate {
    /// One of eqcheck's own engines, run in this process.
    Engine(Engine),
    /// A lister's dump mode: its command, split, with `{tree}` where the tree goes.
    Lister(Vec<String>),
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
    Fixture(#[from] fixtures::FixtureError),
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
    let mut trees = Vec::new();
    for source in &request.trees {
        let built = match source {
            TreeSource::Spec(spec) => Some(fixtures::build_temp(spec)?),
            TreeSource::Existing { .. } => None,
        };
        let (name, root) = match (source, &built) {
            // A temp folder behind a symlink (macOS's /var) is named as a lister
            // that resolves its root would name it.
            (TreeSource::Spec(spec), Some(tree)) => {
                let path = tree.path();
                let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
                (spec.name.clone(), real)
            }
            (TreeSource::Existing { name, path }, _) => (name.clone(), path.clone()),
            (TreeSource::Spec(_), None) => unreachable!("a spec tree is always built"),
        };
        trees.push(probe_tree(request, &name, &root, scratch.path()));
    }
    Ok(ProbeOutcome {
        schema_version: PROBE_SCHEMA_VERSION,
        candidate: match &request.candidate {
            Candidate::Engine(Engine::Fast) => "eqcheck's fast engine".into(),
            Candidate::Engine(Engine::Reference) => "eqcheck's reference engine".into(),
            Candidate::Lister(command) => shell_words::join(command),
        },
        trees,
    })
}

/// Probes one tree: the candidate's look first, then the oracle's, each guarded.
fn probe_tree(request: &ProbeRequest, name: &str, root: &Path, scratch: &Path) -> TreeProbe {
    let began = now_less(std::time::Duration::from_millis(20));
    // The first fingerprint also reads every folder, which settles directory atimes
    // before either side looks; it is taken with the guard off too.
    let depth = request.guard.unwrap_or_default();
    let baseline = fingerprint::take(root, depth);
    let mut probe = TreeProbe {
        name: name.to_string(),
        path: root.display().to_string(),
        file_system: compare::file_system_magic(root).map(compare::file_system_name),
        entries: 0,
        found: Comparison::default(),
        census: None,
        error: None,
    };
    let times = compare::ProbeTimes {
        began,
        candidate_began: now_less(std::time::Duration::ZERO),
    };
    let candidate = match candidate_records(&request.candidate, root, scratch) {
        Ok((records, census)) => {
            probe.census = census;
            records
        }
        Err(error) => {
            probe.error = Some(error);
            return probe;
        }
    };
    let reference = match walked(Engine::Reference, root) {
        Ok((records, _)) => records,
        Err(error) => {
            probe.error = Some(error);
            return probe;
        }
    };
    if request.guard.is_some() && !fingerprint::unchanged(root, depth, &baseline) {
        let now = fingerprint::take(root, depth);
        let changes = fingerprint::changes(&baseline, &now, 5).join("; ");
        probe.error = Some(format!("the tree changed while it was probed: {changes}"));
        return probe;
    }
    probe.entries = reference.len();
    probe.found = compare::compare(&candidate, &reference, root, times);
    probe
}

type Records = (Vec<Record>, Option<walk::Census>);

fn candidate_records(
    candidate: &Candidate,
    root: &Path,
    scratch: &Path,
) -> Result<Records, String> {
    match candidate {
        Candidate::Engine(engine) => walked(*engine, root),
        Candidate::Lister(command) => lister::run(command, root, scratch)
            .map(|records| (records, None))
            .map_err(|err| crate::exit::with_causes(&err)),
    }
}

/// One engine's records of the tree, with its census where it counts one. Links
/// are never followed: the probe compares what lstat says.
fn walked(engine: Engine, root: &Path) -> Result<Records, String> {
    let operands = [OsString::from(root)];
    let (entries, census) =
        walk::on_walk_pool(|| walk::list_counted(engine, &operands, ListOptions::default()))
            .map_err(|err| format!("cannot start the walk: {err}"))?;
    let records = entries.first().map(record::from_walk).unwrap_or_default();
    Ok((records, census))
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
