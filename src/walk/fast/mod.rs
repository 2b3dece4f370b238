//! The fast engine: each platform's best listing call, with the stat fields taken
//! from the listing where it can. Linux has its own engine; macOS and Windows run
//! the reference listing until their bulk-listing engines land, so `walk --engine
//! fast` works everywhere and compares equal there by construction.

#[cfg(target_os = "linux")]
mod linux;

use std::ffi::OsString;

use super::{Entry, ListOptions};

#[cfg(target_os = "linux")]
pub fn list(operands: &[OsString], options: ListOptions) -> Vec<Entry> {
    linux::list(operands, options)
}

#[cfg(not(target_os = "linux"))]
pub fn list(operands: &[OsString], options: ListOptions) -> Vec<Entry> {
    super::reference::list(operands, options)
}
