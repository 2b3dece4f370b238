//! Where no watch API is used (every OS but Linux, until FSEvents or
//! ReadDirectoryChangesW is done): a watch that cannot start, so the guard
//! fingerprints the tree after every arm.

use super::Drained;

/// Starts watching every folder of the tree, or says why it cannot.
pub fn start(_root: &std::path::Path) -> Result<TreeWatch, String> {
    Err("no watch API is used on this OS".into())
}

/// No watch exists off Linux.
pub enum TreeWatch {}

impl TreeWatch {
    pub fn drain(&mut self) -> Drained {
        match *self {}
    }

    pub fn folders(&self) -> usize {
        match *self {}
    }

    pub fn files(&self) -> usize {
        match *self {}
    }

    pub fn watch_files(
        &mut self,
        _root: &std::path::Path,
        _files: &[std::path::PathBuf],
    ) -> Result<(), String> {
        match *self {}
    }
}
