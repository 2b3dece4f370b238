//! The Linux fast engine: `openat` + `getdents64` into a 64 KiB buffer, then
//! `statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC)` per entry (with
//! `fstatat` where the kernel has no `statx`), never a full-path stat below an
//! operand. Folders are spread over a work-stealing pool; a huge folder's stats are
//! split into chunks so one folder does not hold one thread for its whole length.
//!
//! The few subfolders a listing's `d_type`s name are opened before the stats and
//! statted through their descriptors (see [`early`]). A chain of folders (one
//! subfolder a level) is walked in a loop by two workers taking turns at its levels
//! (see [`chain`]).
//!
//! Descriptors: a folder with few subfolders opens them and closes itself before
//! they are listed, unless it waits for subfolders only its stats name; at most
//! [`chain::CHAINED_FOLDERS`] chained folders are open at once, so a chain of any
//! depth holds a bounded number of descriptors. A folder with many subfolders stays
//! open while the pool works through them. The soft limit is raised to the hard one
//! once per process all the same.

mod chain;
mod early;
mod listing;
mod stat;
mod stat_all;
mod turns;

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;

use rustix::fs::{Mode, OFlags, CWD};
use rustix::path::Arg;

use crate::walk::census::{Census, Counters, ListingCall};
use crate::walk::stat::StatFields;
use crate::walk::{
    settled_without_listing, should_descend, Contents, Entry, Identity, ListOptions, Listed,
    SumFacts, Summed,
};
use chain::ChainSlot;
use listing::{first_batch, Listing};
use stat::{kind_of_type, stat_entry};
use stat_all::stat_all;

/// A folder with at least this many entries has its stats spread over the pool.
const CHUNKED_FOLDER: usize = 1024;
/// Entries per chunk when a folder's stats are spread.
const STAT_CHUNK: usize = 256;
/// A folder with at most this many subfolders opens them all before closing its
/// own descriptor. Keeping descriptors few matters beyond the limit: growing the
/// descriptor table of a multi-threaded process waits for an RCU grace period.
const OPEN_AHEAD: usize = 16;
/// Lists the operands, and counts what the listing typed and what was statted.
/// With `sum_files`, files only summed are left out (see [`Summed`]).
pub fn list(operands: &[OsString], options: ListOptions, sum_files: bool) -> (Vec<Entry>, Census) {
    crate::walk::raise_descriptor_limit();
    let walker = Walker {
        options,
        sum_files,
        listed_once: Mutex::new(HashSet::new()),
        chained_now: AtomicUsize::new(0),
        census: Counters::default(),
    };
    // On the pool even for a chain: its bottom may branch, and where folders are not
    // chained (`-L`, `-x`) the walk recurses once per level, on the workers' deep stacks.
    let entries = pool().install(|| operands.iter().map(|op| walker.operand(op)).collect());
    (entries, walker.census.snapshot())
}

/// Runs parallel work on the walk's pool (inline when already on it).
fn in_pool<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    pool().install(work)
}

fn pool() -> &'static rayon::ThreadPool {
    crate::walk::pool().expect("the walk pool must start")
}

struct Walker {
    options: ListOptions,
    sum_files: bool,
    listed_once: Mutex<HashSet<Identity>>,
    /// How many chained folders are held open (see [`ChainSlot`]).
    chained_now: AtomicUsize,
    census: Counters,
}

impl Walker {
    fn operand(&self, operand: &OsStr) -> Entry {
        let stat = stat_entry(CWD, operand, self.options.follow_symlinks, &self.census);
        let contents = match &stat {
            Ok(fields) => {
                let root_dev = fields.dev.map(|d| d.value);
                let opened = self.open_folder(CWD, operand, fields, root_dev);
                self.contents(opened, root_dev, 0)
            }
            Err(_) => Contents::None,
        };
        Entry {
            name: operand.to_os_string(),
            stat,
            listed: None,
            contents,
        }
    }

    /// Opens one folder relative to its parent's descriptor, or says why its
    /// contents are already settled (not a folder to enter, listed elsewhere, or
    /// unopenable).
    fn open_folder<Fd: AsFd>(
        &self,
        parent: Fd,
        name: &OsStr,
        fields: &StatFields,
        root_dev: Option<u64>,
    ) -> Opened {
        let claim = |id| self.listed_once.lock().expect("claims lock").insert(id);
        if let Some(settled) = settled_without_listing(fields, root_dev, self.options, claim) {
            return Opened::Settled(settled);
        }
        open_subfolder(parent, name, self.options.follow_symlinks)
    }

    /// The contents of an opened folder, `run` the folders in a row right above it
    /// that each had one subfolder (see [`chain::CHAIN_BELOW_RUN`]).
    fn contents(&self, opened: Opened, root_dev: Option<u64>, run: u32) -> Contents {
        match opened {
            Opened::Folder(fd) => self.folder(fd, root_dev, run),
            Opened::Settled(contents) => contents,
        }
    }

    fn folder(&self, fd: OwnedFd, root_dev: Option<u64>, run: u32) -> Contents {
        self.census.served(ListingCall::Getdents64);
        let listing = first_batch(&fd);
        match self.may_chain(&listing, run) {
            Some(slot) => self.chain(fd, listing, slot, root_dev, run),
            None => self.unchained(fd, listing, root_dev, run),
        }
    }

    /// Finishes the listing, opens the few subfolders its `d_type`s name (see
    /// [`early`]), stats it on this thread (or, for a huge folder, on the pool),
    /// then enters the subfolders the stats name.
    // Kept out of line: its locals would otherwise widen the frame of `folder`, and
    // a chain walked outside [`chain`] recurses through both at every level.
    #[inline(never)]
    fn unchained(
        &self,
        fd: OwnedFd,
        mut listing: Listing,
        root_dev: Option<u64>,
        run: u32,
    ) -> Contents {
        listing.finish(&fd);
        self.census
            .listed(listing.names.iter().map(|n| kind_of_type(n.dtype)));
        let (mut opened_early, early) = self.open_early(&fd, &listing);
        let left_out = |_, facts: &SumFacts| self.left_out(facts, root_dev);
        let follow = self.options.follow_symlinks;
        let given = |i| early.stat(i);
        let statted = stat_all(&fd, &listing, follow, &self.census, (&left_out, &given));
        let (mut entries, summed, error) = (statted.entries, statted.summed, listing.error);
        let subfolders: Vec<Subfolder> = (0..entries.len())
            .filter(|&i| self.enters(&entries[i], root_dev))
            .map(|i| (i, opened_early.take(statted.listed_at[i])))
            .collect();
        // What was opened early and is no folder to enter is closed before the
        // subtrees are walked.
        drop(opened_early);
        let run_below = run_below(run, subfolders.len());
        self.enter_subfolders(fd, None, &mut entries, subfolders, root_dev, run_below);
        self.listed(entries, error, summed, root_dev)
    }

    /// Enters the subfolders of `fd` among its `entries` and fills in their
    /// contents; `fd` and the chain slot it holds, if any, are given up together.
    /// `run_below` is the subfolders' run (see [`Walker::contents`]).
    fn enter_subfolders(
        &self,
        fd: OwnedFd,
        slot: Option<ChainSlot<'_>>,
        entries: &mut [Entry],
        subfolders: Vec<Subfolder>,
        root_dev: Option<u64>,
        run_below: u32,
    ) {
        let open = |entry: &Entry, early: Option<Opened>| match (early, &entry.stat) {
            (Some(opened), _) => opened,
            (None, Ok(fields)) => self.open_folder(&fd, &entry.name, fields, root_dev),
            (None, Err(_)) => Opened::Settled(Contents::None),
        };
        let listed: Vec<(usize, Contents)> = if subfolders.len() <= OPEN_AHEAD {
            // Open the few subfolders now and close this folder before entering
            // them, so a chain holds one descriptor here, not one per level.
            let (indexes, opened): (Vec<usize>, Vec<Opened>) = (subfolders.into_iter())
                .map(|(i, early)| (i, open(&entries[i], early)))
                .unzip();
            drop((fd, slot));
            let listed = self.enter_all(opened, root_dev, run_below);
            indexes.into_iter().zip(listed).collect()
        } else {
            let shared: &[Entry] = entries;
            crate::walk::map_subtrees_on_pool(subfolders, |(i, early)| {
                let opened = open(&shared[i], early);
                (i, self.contents(opened, root_dev, run_below))
            })
        };
        for (i, contents) in listed {
            entries[i].contents = contents;
        }
    }

    /// A listed folder's contents, with `summed` the files its stats left out; a
    /// folder entered on its `d_type` that its stat says is a file to sum is summed
    /// and left out here (see [`Summed`]).
    fn listed(
        &self,
        mut entries: Vec<Entry>,
        error: Option<io::Error>,
        mut summed: Summed,
        root_dev: Option<u64>,
    ) -> Contents {
        if self.sum_files {
            entries.retain(|entry| match &entry.stat {
                Ok(stat) if self.left_out(&SumFacts::of(stat), root_dev) => {
                    summed.add(&SumFacts::of(stat));
                    false
                }
                _ => true,
            });
            // What is left out goes back to the allocator for the next folders.
            entries.shrink_to_fit();
        }
        Contents::Listed {
            entries,
            error,
            summed,
        }
    }

    /// Whether the walk sums an entry with these fields instead of keeping it.
    fn left_out(&self, facts: &SumFacts, root_dev: Option<u64>) -> bool {
        self.sum_files && Summed::leaves_out(facts, root_dev)
    }

    /// Whether an entry with these stat fields is a folder to enter.
    fn enters(&self, entry: &Entry, root_dev: Option<u64>) -> bool {
        entry
            .stat
            .as_ref()
            .is_ok_and(|s| should_descend(s, root_dev, self.options))
    }

    /// Lists opened subfolders, spread over the pool when there are several.
    fn enter_all(&self, opened: Vec<Opened>, root_dev: Option<u64>, run: u32) -> Vec<Contents> {
        crate::walk::map_subtrees_on_pool(opened, |o| self.contents(o, root_dev, run))
    }
}

/// A subfolder to enter: its index in its folder's entries, and the folder opened
/// for it early, if it was (see [`early`]).
type Subfolder = (usize, Option<Opened>);

/// A subfolder about to be listed, or the reason it needs no listing.
enum Opened {
    Folder(OwnedFd),
    Settled(Contents),
}

/// The run of a folder's subfolders (see [`Walker::contents`]), given the folder's
/// own run and how many subfolders it has.
fn run_below(run: u32, subfolders: usize) -> u32 {
    if subfolders == 1 {
        run.saturating_add(1)
    } else {
        0
    }
}

/// Opens a subfolder relative to its parent's descriptor, through a link only when
/// links are followed. Chained folders open their subfolders on `d_type` alone,
/// before the stat is in; the stat later decides whether what is listed stands.
fn open_subfolder<Fd: AsFd, N: Arg>(parent: Fd, name: N, follow_symlinks: bool) -> Opened {
    match open_folder_at(parent, name, follow_symlinks) {
        Ok(fd) => Opened::Folder(fd),
        Err(err) => Opened::Settled(Contents::unreadable(err)),
    }
}

/// Opens a folder relative to a descriptor (or `CWD`), through a link only when
/// links are followed.
pub(in crate::walk) fn open_folder_at<Fd: AsFd, N: Arg>(
    parent: Fd,
    name: N,
    follow_symlinks: bool,
) -> io::Result<OwnedFd> {
    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if !follow_symlinks {
        flags |= OFlags::NOFOLLOW;
    }
    Ok(rustix::fs::openat(parent, name, flags, Mode::empty())?)
}

/// The walk's own listing of one folder, a name at a time, each counted in
/// `census` as the walk counts it.
pub(in crate::walk) fn names<'a>(
    fd: &'a OwnedFd,
    census: &'a Counters,
) -> impl Iterator<Item = io::Result<(OsString, Listed)>> + 'a {
    census.served(ListingCall::Getdents64);
    listing::Names::new(fd).map(move |named| {
        let (name, dtype, ino) = named?;
        let kind = kind_of_type(dtype);
        census.listed(std::iter::once(kind));
        Ok((name, Listed { kind, ino }))
    })
}

/// The walk's own stat of one name relative to a folder, links not followed.
pub(in crate::walk) fn stat_at<Fd: AsFd>(
    dir: Fd,
    name: &OsStr,
    census: &Counters,
) -> Result<StatFields, crate::walk::StatError> {
    stat_entry(dir, name, false, census)
}

#[cfg(test)]
mod tests;
