//! The trees a shrink works on, never the user's own: a spec's tree built afresh,
//! a folder copied, or a spec's tree on a file-system image of its own (`--fs`,
//! `TREE@FS`), each with a holding folder on the same file system for what trials
//! move aside. Every copy goes when dropped (an image is taken down).

use std::path::{Path, PathBuf};

use crate::fixtures::{self, BuiltTree, TreeSpec};
use crate::fsimage::{FileSystem, OnImage};
use crate::matrix::{TreeSource, Trials};

/// One copy of the tree.
pub(super) enum Copy {
    Built(BuiltTree),
    Image(OnImage),
}

impl Copy {
    pub fn root(&self) -> &Path {
        match self {
            Copy::Built(tree) => tree.path(),
            Copy::Image(image) => image.root(),
        }
    }

    /// Where this copy's trials move entries aside: on the image beside the tree
    /// (an image holds one file system), else in the scratch folder.
    pub fn holding_folder(&self, trials: &Trials, job: usize) -> std::io::Result<PathBuf> {
        let held = match self {
            Copy::Image(image) => image.root().with_file_name(format!("held-{job}")),
            Copy::Built(_) => trials.scratch().join(format!("held-{job}")),
        };
        std::fs::create_dir(&held)?;
        Ok(held)
    }
}

/// The copy job `job` works on: `source` made afresh, or a folder copied.
pub(super) fn copy_of(source: &TreeSource, trials: &Trials, job: usize) -> Result<Copy, String> {
    match source {
        TreeSource::Spec(spec) => built(spec),
        TreeSource::Existing { path, name } => fixtures::copy_temp(path, name)
            .map(Copy::Built)
            .map_err(|err| format!("cannot copy the tree: {err}")),
        TreeSource::Image { spec, fs, .. } => on_image(*fs, spec, trials, &format!("image-{job}")),
    }
}

/// A tree built from `spec` where `source`'s trees go: on its file system.
pub(super) fn rebuilt(
    source: &TreeSource,
    spec: &TreeSpec,
    trials: &Trials,
) -> Result<Copy, String> {
    match source.file_system() {
        FileSystem::Native => built(spec),
        fs => on_image(fs, spec, trials, "image-rebuilt"),
    }
}

fn built(spec: &TreeSpec) -> Result<Copy, String> {
    fixtures::build_temp(spec)
        .map(Copy::Built)
        .map_err(|err| format!("cannot build the copy: {err}"))
}

fn on_image(fs: FileSystem, spec: &TreeSpec, trials: &Trials, dir: &str) -> Result<Copy, String> {
    if fs == FileSystem::Squashfs {
        return Err("squashfs is read-only, and shrinking changes the tree: shrink the case on a file system that can be written".into());
    }
    OnImage::build(fs, spec, &trials.scratch().join(dir))
        .map(Copy::Image)
        .map_err(|err| format!("cannot build the tree on {fs}: {err}"))
}
