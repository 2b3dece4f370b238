//! The fast engine: each platform's best listing call, with the stat fields taken
//! from the listing where it can. Linux has its own engine; macOS lists with
//! `getattrlistbulk` and Windows with the directory-information classes, both
//! through the bulk walk; elsewhere the reference listing stands in, so `walk
//! --engine fast` works everywhere.

// Compiled everywhere, so its tests run on every OS.
#[cfg_attr(not(any(target_os = "macos", windows)), allow(dead_code))]
mod bulk;
#[cfg(target_os = "linux")]
mod linux;
// The record parsers are compiled everywhere, so their tests run on every OS.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
mod macos;
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

/// The macOS engine's calls one folder at a time, for [`crate::walk::folder`].
#[cfg(target_os = "macos")]
mod one_folder {
    use std::ffi::OsStr;
    use std::io;
    use std::os::fd::OwnedFd;

    use super::bulk::{list_counted, FolderListing, Platform};
    use super::macos::MacOs;
    use crate::walk::{Counters, StatError, StatFields};

    pub(in crate::walk) fn bulk_open(
        parent: Option<&OwnedFd>,
        name: &OsStr,
    ) -> io::Result<OwnedFd> {
        MacOs::open(parent, name, false)
    }

    pub(in crate::walk) fn bulk_stat(
        parent: Option<&OwnedFd>,
        name: &OsStr,
        census: &Counters,
    ) -> Result<StatFields, StatError> {
        MacOs::stat(parent, name, false, census)
    }

    /// A folder's whole listing, counted in `census`.
    pub(in crate::walk) fn bulk_list(folder: &OwnedFd, census: &Counters) -> FolderListing {
        list_counted::<MacOs>(folder, census)
    }
}

#[cfg(target_os = "macos")]
pub(super) use one_folder::{bulk_list, bulk_open, bulk_stat};

/// Lists the operands, with the census of what the listing typed and statted.
/// With `sum_files`, files only summed are left out (see [`crate::walk::Summed`]).
#[cfg(target_os = "linux")]
pub fn list(
    operands: &[OsString],
    options: ListOptions,
    sum_files: bool,
) -> (Vec<Entry>, Option<Census>) {
    let (entries, census) = linux::list(operands, options, sum_files);
    (entries, Some(census))
}

/// Lists the operands with `getattrlistbulk`, with the census; every file is kept.
#[cfg(target_os = "macos")]
pub fn list(
    operands: &[OsString],
    options: ListOptions,
    _sum_files: bool,
) -> (Vec<Entry>, Option<Census>) {
    let (entries, census) = bulk::list::<macos::MacOs>(operands, options);
    (entries, Some(census))
}

/// Lists the operands with the directory-information classes, counting which one
/// served each folder.
#[cfg(windows)]
pub fn list(
    operands: &[OsString],
    options: ListOptions,
    _sum_files: bool,
) -> (Vec<Entry>, Option<Census>) {
    let (entries, census) = bulk::list::<windows::Windows>(operands, options);
    (entries, Some(census))
}

/// Lists the operands; the reference listing stands in here and counts nothing.
#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
pub fn list(
    operands: &[OsString],
    options: ListOptions,
    _sum_files: bool,
) -> (Vec<Entry>, Option<Census>) {
    (super::reference::list(operands, options), None)
}
