//! Watching a tree for changes while the arms run, so the guard need not
//! fingerprint it after every arm. On Linux an inotify watch sits on every folder of
//! the tree, for every kind of change (entries created, removed, moved in or out,
//! written to, their mode, mtime, links or owner changed), and on every file with
//! more than one link (a link outside the tree writes it unseen by its folder);
//! reading the tree makes no event it watches for. Access times are not watched, as
//! the fingerprint leaves them out: listing a folder moves them. The watches are
//! added through each folder's own descriptor (`/proc/self/fd/N`), so folders past
//! PATH_MAX are watched too. Elsewhere there is no watch, and the guard
//! fingerprints after every arm as before.

/// What the watch saw since it was last asked.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, PartialEq, Eq)]
pub enum Drained {
    Quiet,
    /// Readable descriptions, `created a/b`, at most a few.
    Changed(Vec<String>),
    /// The kernel's queue overflowed: changes were lost, so the watch cannot speak.
    Overflowed,
}

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::{start, TreeWatch};

#[cfg(not(target_os = "linux"))]
mod elsewhere;
#[cfg(not(target_os = "linux"))]
pub use elsewhere::{start, TreeWatch};

#[cfg(all(test, target_os = "linux"))]
mod tests;
