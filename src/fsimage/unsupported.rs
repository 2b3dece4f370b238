//! Platforms without file-system images yet (Windows' VHDs are designed for but
//! not built): only `native` exists, and asking for anything else says so before
//! anything is made.

use super::{FileSystem, FsError};

pub fn images_refused() -> Option<String> {
    Some("file-system images are made on Linux and macOS only; here only --fs native runs".into())
}

pub fn unavailable(_fs: FileSystem) -> Option<String> {
    images_refused()
}

pub fn enter_private_namespace() -> Result<(), FsError> {
    Ok(())
}

/// Never called: nothing is ever mounted here.
pub fn unmount(_point: &std::path::Path) -> Result<(), FsError> {
    Ok(())
}

pub fn unmount_kept(dir: &std::path::Path) -> Result<(), FsError> {
    Err(FsError::NotAnImage {
        dir: dir.to_path_buf(),
    })
}
