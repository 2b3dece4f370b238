//! A tree made ready for the arms: built from its spec (on disk or onto an image)
//! or taken where it is, its first fingerprint and watch taken before any arm
//! runs, and how a repro line builds it again once the run has removed it.

use std::path::{Path, PathBuf};

use super::{arm, watch, MatrixError, TreeSource};
use crate::fixtures::{self, fingerprint, BuiltTree};

/// A tree ready for the arms: its name, its root, and, when it was built from a
/// spec, the built tree (removed when dropped, unless kept) or its image (taken
/// down when dropped).
pub(crate) struct OpenTree {
    pub name: String,
    pub built: Option<BuiltTree>,
    pub image: Option<crate::fsimage::OnImage>,
    pub root: PathBuf,
}

impl OpenTree {
    /// Entries the tree's file system could not hold, `FILE:LINE: PATH: reason`.
    pub fn skipped(&self) -> Vec<String> {
        let skipped = match (&self.built, &self.image) {
            (Some(tree), _) => tree.skipped(),
            (None, Some(image)) => image.skipped(),
            (None, None) => &[],
        };
        skipped.iter().map(fixtures::Skipped::entry).collect()
    }
}

/// The tree's first fingerprint, and its watch when it is guarded. The fingerprint
/// reads every folder once, which also settles directory atimes before the first
/// arm looks. The watch is set up beside it: both only read, and no arm runs until
/// both are done.
pub(crate) fn fingerprint_and_watch(
    root: &Path,
    guard: Option<fingerprint::Depth>,
) -> (
    fingerprint::Fingerprint,
    Option<Result<watch::TreeWatch, String>>,
) {
    std::thread::scope(|scope| {
        let watching = guard.map(|_| scope.spawn(|| watch::start(root)));
        let baseline = fingerprint::take(root, guard.unwrap_or_default());
        let watch = watching.map(|w| {
            let started = (w.join()).unwrap_or_else(|_| Err("the watch's setup panicked".into()));
            // Only the fingerprint knows which files have links elsewhere.
            let linked = baseline.linked_files();
            started.and_then(|mut watch| watch.watch_files(root, &linked).map(|()| watch))
        });
        (baseline, watch)
    })
}

/// Builds a spec tree fresh (onto an image in `image_dir`, which must not exist
/// yet, when it has a file system of its own), or takes an existing folder where
/// it is.
pub(crate) fn open_tree(source: &TreeSource, image_dir: &Path) -> Result<OpenTree, MatrixError> {
    Ok(match source {
        TreeSource::Spec(spec) => {
            let built = fixtures::build_temp(spec)?;
            OpenTree {
                name: spec.name.clone(),
                root: built.path().to_path_buf(),
                built: Some(built),
                image: None,
            }
        }
        TreeSource::Existing { name, path } => OpenTree {
            name: name.clone(),
            built: None,
            image: None,
            root: path.clone(),
        },
        TreeSource::Image { name, spec, fs } => {
            let image = crate::fsimage::OnImage::build(*fs, spec, image_dir)?;
            OpenTree {
                name: name.clone(),
                root: image.root().to_path_buf(),
                built: None,
                image: Some(image),
            }
        }
    })
}

/// How a repro line builds again a tree the run builds and removes (an image
/// always: it goes with eqcheck's mount namespace).
pub(super) fn rebuild(
    source: &TreeSource,
    root: &Path,
    built: bool,
    keep: bool,
) -> Option<arm::Rebuild> {
    let eqcheck = std::env::current_exe().unwrap_or_else(|_| "eqcheck".into());
    match source {
        TreeSource::Spec(spec) if built && !keep => Some(arm::Rebuild {
            eqcheck,
            source: spec_argument(&spec.source),
            root: root.to_path_buf(),
            fs: None,
        }),
        TreeSource::Image { spec, fs, .. } if built => Some(arm::Rebuild {
            eqcheck,
            source: spec_argument(&spec.source),
            root: root.to_path_buf(),
            fs: Some(*fs),
        }),
        _ => None,
    }
}

/// A spec as `eqcheck trees build` takes it from any folder: a built-in name as is,
/// a spec file by its absolute path.
fn spec_argument(source: &str) -> String {
    if fixtures::is_builtin(source) {
        return source.to_string();
    }
    std::fs::canonicalize(source).map_or(source.to_string(), |p| p.display().to_string())
}
