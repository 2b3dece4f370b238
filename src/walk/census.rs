//! The d_type census of a walk: how many entries the listing typed as folder, file,
//! symlink, other or unknown, and how many stat calls of each kind the engine made,
//! counted as it went. A listing that gives no type (DT_UNKNOWN) costs a stat per
//! entry, and these counts are that cost, measured rather than estimated.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

use super::FileKind;

/// What one walk listed and statted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Census {
    /// Entries the listing typed as a folder.
    pub folders: u64,
    pub files: u64,
    pub symlinks: u64,
    /// Entries typed as a FIFO, socket or device.
    pub other: u64,
    /// Entries the listing gave no type (DT_UNKNOWN): the walk must stat them to know.
    pub unknown: u64,
    /// `statx` calls made.
    pub statx: u64,
    /// `fstatat` calls made: where `statx` is refused, and, with `-L`, to tell a
    /// dangling link from a name that is gone.
    pub fstatat: u64,
    /// `statx` calls the kernel refused (ENOSYS, or EPERM under an old seccomp
    /// profile), each answered by `fstatat` instead.
    pub statx_refused: u64,
    /// Entries listed, and counted above, below folders opened on their `d_type`
    /// whose stat then said not to enter them (replaced by a file or a link between
    /// the listing and the stat): listed, but not in the walk's result.
    pub overruled: u64,
    /// Folders listed, by the call that served each: a platform falls back per
    /// folder when its best call is refused, and this says which one did.
    pub listed_by: ListedBy,
}

/// A listing call a fast engine may use for a folder.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListingCall {
    Getdents64,
    Getattrlistbulk,
    FileIdExtdDirectoryInfo,
    FileIdBothDirectoryInfo,
    FindFirstFileEx,
    /// `read_dir` and a stat per entry: where the platform's calls were refused.
    ReadDir,
}

/// How many folders each listing call served.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ListedBy {
    pub getdents64: u64,
    pub getattrlistbulk: u64,
    pub file_id_extd_directory_info: u64,
    pub file_id_both_directory_info: u64,
    pub find_first_file_ex: u64,
    pub read_dir: u64,
}

impl ListedBy {
    /// Each call that served any folder, with its count, as reports name them.
    pub fn served(&self) -> Vec<(&'static str, u64)> {
        [
            ("getdents64", self.getdents64),
            ("getattrlistbulk", self.getattrlistbulk),
            ("FileIdExtdDirectoryInfo", self.file_id_extd_directory_info),
            ("FileIdBothDirectoryInfo", self.file_id_both_directory_info),
            ("FindFirstFileExW", self.find_first_file_ex),
            ("read_dir", self.read_dir),
        ]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .collect()
    }
}

impl Census {
    /// Entries the listing returned.
    pub fn listed(&self) -> u64 {
        self.folders + self.files + self.symlinks + self.other + self.unknown
    }

    /// Entries in the walk's result: those listed, less those overruled.
    pub fn returned(&self) -> u64 {
        self.listed() - self.overruled
    }

    /// Stat calls of every kind.
    pub fn stat_calls(&self) -> u64 {
        self.statx + self.fstatat
    }
}

/// The census's counters, shared by the threads of one walk. Only the Linux engine
/// counts yet; elsewhere the census is not known.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, Default)]
pub struct Counters {
    folders: AtomicU64,
    files: AtomicU64,
    symlinks: AtomicU64,
    other: AtomicU64,
    unknown: AtomicU64,
    statx: AtomicU64,
    fstatat: AtomicU64,
    statx_refused: AtomicU64,
    overruled: AtomicU64,
    /// Folders served by each [`ListingCall`], in its order.
    listed_by: [AtomicU64; 6],
}

/// One kind of stat call.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, Clone, Copy)]
pub(crate) enum StatCall {
    Statx,
    Fstatat,
    /// A `statx` refused, then answered by `fstatat` (counted as both calls).
    StatxRefused,
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
impl StatCall {
    /// What one such call adds to the statx, fstatat and refused counts.
    fn counts(self) -> [u64; 3] {
        match self {
            StatCall::Statx => [1, 0, 0],
            StatCall::Fstatat => [0, 1, 0],
            StatCall::StatxRefused => [1, 1, 1],
        }
    }
}

/// Where a stat call is counted: the walk's shared [`Counters`], or the
/// [`StatTally`] of one thread's run of stats, added to them once.
pub(crate) trait CountsStats {
    fn stat(&self, call: StatCall);
}

/// The stat calls one thread makes for one folder, counted without atomics and
/// added to the walk's [`Counters`] once: an atomic add right after each stat
/// (uncontended, on a counter of the thread's own) cost about 2% of a one-thread
/// walk's CPU, since the locked add waits on what the kernel's return left behind.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
#[derive(Debug, Default)]
pub(crate) struct StatTally {
    /// The statx, fstatat and refused counts, in [`StatCall::counts`]'s order.
    counts: Cell<[u64; 3]>,
}

impl CountsStats for StatTally {
    fn stat(&self, call: StatCall) {
        let mut counts = self.counts.get();
        for (count, n) in counts.iter_mut().zip(call.counts()) {
            *count += n;
        }
        self.counts.set(counts);
    }
}

impl CountsStats for Counters {
    fn stat(&self, call: StatCall) {
        self.add_stat_counts(call.counts());
    }
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
impl Counters {
    /// Counts the listing's types of one folder's entries at once.
    pub(crate) fn listed(&self, kinds: impl Iterator<Item = FileKind>) {
        let mut counts = [0u64; 5];
        for kind in kinds {
            let slot = match kind {
                FileKind::Dir => 0,
                FileKind::File => 1,
                FileKind::Symlink => 2,
                FileKind::Unknown => 4,
                _ => 3,
            };
            counts[slot] += 1;
        }
        let into = [
            &self.folders,
            &self.files,
            &self.symlinks,
            &self.other,
            &self.unknown,
        ];
        for (counter, n) in into.iter().zip(counts) {
            if n > 0 {
                counter.fetch_add(n, Relaxed);
            }
        }
    }

    /// Adds statx, fstatat and refused counts, in [`StatCall::counts`]'s order.
    fn add_stat_counts(&self, counts: [u64; 3]) {
        let counters = [&self.statx, &self.fstatat, &self.statx_refused];
        for (counter, n) in counters.into_iter().zip(counts) {
            if n > 0 {
                counter.fetch_add(n, Relaxed);
            }
        }
    }

    /// Counts one folder listed by `call`.
    pub(crate) fn served(&self, call: ListingCall) {
        self.listed_by[call as usize].fetch_add(1, Relaxed);
    }

    /// Counts entries listed that the walk will not return.
    pub(crate) fn overruled(&self, entries: u64) {
        self.overruled.fetch_add(entries, Relaxed);
    }

    /// Adds the stat calls a [`StatTally`] counted.
    pub(crate) fn add_tally(&self, tally: &StatTally) {
        self.add_stat_counts(tally.counts.get());
    }

    pub fn snapshot(&self) -> Census {
        let get = |c: &AtomicU64| c.load(Relaxed);
        Census {
            folders: get(&self.folders),
            files: get(&self.files),
            symlinks: get(&self.symlinks),
            other: get(&self.other),
            unknown: get(&self.unknown),
            statx: get(&self.statx),
            fstatat: get(&self.fstatat),
            statx_refused: get(&self.statx_refused),
            overruled: get(&self.overruled),
            listed_by: ListedBy {
                getdents64: get(&self.listed_by[ListingCall::Getdents64 as usize]),
                getattrlistbulk: get(&self.listed_by[ListingCall::Getattrlistbulk as usize]),
                file_id_extd_directory_info: get(
                    &self.listed_by[ListingCall::FileIdExtdDirectoryInfo as usize]
                ),
                file_id_both_directory_info: get(
                    &self.listed_by[ListingCall::FileIdBothDirectoryInfo as usize]
                ),
                find_first_file_ex: get(&self.listed_by[ListingCall::FindFirstFileEx as usize]),
                read_dir: get(&self.listed_by[ListingCall::ReadDir as usize]),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A statx the kernel refused, then answered by fstatat, counts as both calls
    /// and as one refusal, whether tallied first or counted straight away.
    #[test]
    fn a_refused_statx_counts_as_both_calls_and_one_refusal() {
        let tally = StatTally::default();
        tally.stat(StatCall::StatxRefused);
        tally.stat(StatCall::Fstatat);
        let counters = Counters::default();
        counters.add_tally(&tally);
        counters.stat(StatCall::StatxRefused);
        counters.stat(StatCall::Statx);
        let census = counters.snapshot();
        let counts = (census.statx, census.fstatat, census.statx_refused);
        assert_eq!(counts, (3, 3, 2), "{census:?}");
    }
}
