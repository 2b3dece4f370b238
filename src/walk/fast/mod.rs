//! The fast engine: each platform's best listing call, with the stat fields taken
//! from the listing where it can. Linux has its own engine; Windows lists with the
//! directory-information classes through the bulk walk; macOS runs the reference
//! listing until its bulk-listing engine lands, so `walk --engine fast` works
//! everywhere and compares equal there by construction.

// Compiled everywhere, so its tests run on every OS; the macOS and Windows engines
// build on it as they land.
#[allow(dead_code)]
mod bulk;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(windows)]
mod windows;
/// Elsewhere only the Windows engine's record parsers, which call nothing: compiled
/// on every OS so that their tests run everywhere.
#[cfg(not(windows))]
mod windows {
    #[allow(dead_code)]
    mod dir_info;
}

#[cfg(target_os = "linux")]
pub(super) use linux::{names, open_folder_at, stat_at};
#[cfg(windows)]
pub(super) use windows::{stat_root, Held};

use std::ffi::OsString;

use super::{Census, Entry, ListOptions};

/// Lists the operands, with the census of what the listing typed and statted.
#[cfg(target_os = "linux")]
pub fn list(operands: &[OsString], options: ListOptions) -> (Vec<Entry>, Option<Census>) {
    let (entries, census) = linux::list(operands, options);
    (entries, Some(census))
}

/// Lists the operands with the directory-information classes, counting which one
/// served each folder.
#[cfg(windows)]
pub fn list(operands: &[OsString], options: ListOptions) -> (Vec<Entry>, Option<Census>) {
    let (entries, census) = bulk::list::<windows::Windows>(operands, options);
    (entries, Some(census))
}

/// Lists the operands; the reference listing stands in here and counts nothing.
#[cfg(not(any(target_os = "linux", windows)))]
pub fn list(operands: &[OsString], options: ListOptions) -> (Vec<Entry>, Option<Census>) {
    (super::reference::list(operands, options), None)
}
