//! Platforms without file-system images yet (macOS's `hdiutil` and Windows'
//! VHDs are designed for but not built): only `native` exists, and asking for
//! anything else says so.

use std::path::Path;

use super::{FileSystem, FsError};
use crate::fixtures::{Skipped, TreeSpec};

pub fn images_refused() -> Option<String> {
    Some("file-system images are made on Linux only; here only --fs native runs".into())
}

pub fn unavailable(_fs: FileSystem) -> Option<String> {
    images_refused()
}

pub fn enter_private_namespace() -> Result<(), FsError> {
    Ok(())
}

/// Never made: `build` refuses first.
#[derive(Debug)]
pub enum Mounted {}

impl Mounted {
    pub fn root(&self) -> &Path {
        match *self {}
    }
    pub fn mount_point(&self) -> &Path {
        match *self {}
    }
    pub fn file_system(&self) -> FileSystem {
        match *self {}
    }
    pub fn keep(&mut self) {
        match *self {}
    }
    pub fn take_down(self) -> Result<(), FsError> {
        match self {}
    }
}

pub fn build(
    fs: FileSystem,
    _spec: &TreeSpec,
    _dir: &Path,
) -> Result<(Mounted, Vec<Skipped>), FsError> {
    Err(FsError::Unavailable {
        fs,
        reason: images_refused().unwrap_or_default(),
    })
}

pub fn unmount_kept(dir: &Path) -> Result<(), FsError> {
    Err(FsError::NotAnImage {
        dir: dir.to_path_buf(),
    })
}
