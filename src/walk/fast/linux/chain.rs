//! Walking a chain of folders (a folder below [`PIPELINE_BELOW_RUN`] folders in a row
//! with one subfolder each) over two workers taking turns: once the first
//! `getdents64` batch of a small folder is in, the subfolders its `d_type`s name are
//! opened; a single one is handed on at once as the next level's job, which another
//! worker takes, while the worker that listed the folder finishes the listing (the
//! call that meets the end), stats every entry and closes it. Two workers thus take
//! turns down a chain, and the levels are settled from the bottom up once their jobs
//! are done. The stats still decide: a folder entered on its `d_type` whose stat says
//! otherwise (it was replaced meanwhile) is dropped, what it listed counted as
//! overruled in the census, and a folder whose `d_type` said nothing is entered once
//! its stat is in. What a name that vanished or changed kind since the listing is
//! reported as is said at [`super::stat::stat_entry`].

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::listing::{first_batch, Listing};
use super::stat::{kind_of_type, stat_open_folder};
use super::stat_all::{stat_all, Statted};
use super::{open_subfolder, run_below, Opened, Walker, CHUNKED_FOLDER, OPEN_AHEAD};
use crate::walk::census::ListingCall;
use crate::walk::stat::StatFields;
use crate::walk::{Contents, Entry, SumFacts, Summed};

/// At most this many pipelined folders are open at once: a level waiting for its job,
/// or held for the subfolders only its stats named. Beyond it a folder is walked
/// without the pipeline; the bound keeps the descriptor table below the size whose
/// growth waits for RCU.
pub(super) const PIPELINED_FOLDERS: usize = 32;
/// A folder is pipelined only below this many folders in a row that each had one
/// subfolder: the pipeline splits a chain, which one worker would otherwise walk
/// alone. Where the tree branches the pool has a folder for every worker already,
/// and handing each folder's second half to another worker cost a node_modules
/// tree about 3% more CPU than walking it whole; there, runs of three such folders
/// are rare (19 of nm's 4,685 folders).
pub(super) const PIPELINE_BELOW_RUN: u32 = 3;

impl Walker {
    /// A slot for pipelining this folder, when its subfolders can be told from
    /// `d_type` alone: links are not followed (a followed link's target is known
    /// only from its stat), `-x` is off (opening a folder on another device could
    /// trigger an automount the stat would have avoided), it ends a long enough run
    /// of single subfolders ([`PIPELINE_BELOW_RUN`]), the first batch is not
    /// already a huge folder's, and it names few subfolders.
    pub(super) fn may_pipeline(&self, listing: &Listing, run: u32) -> Option<PipelineSlot<'_>> {
        if self.options.follow_symlinks || self.options.one_file_system {
            return None;
        }
        if run < PIPELINE_BELOW_RUN {
            return None;
        }
        if listing.names.len() >= CHUNKED_FOLDER || listing.error.is_some() {
            return None;
        }
        let named_folders = listing.named_folders().count();
        if named_folders > OPEN_AHEAD {
            return None;
        }
        PipelineSlot::take(&self.pipelined_now)
    }

    /// Walks a chain of pipelined folders, two workers taking turns down it. Each
    /// level's job opens the subfolders its folder's first batch names; while the
    /// folder opens exactly one subfolder, that subfolder's listing is a new job,
    /// which the other worker takes, and this job finishes its own folder's listing,
    /// stats it and closes it, on the CPU that listed it first. A level that ends the
    /// chain enters its subfolders as usual. Once every job is done the levels are
    /// settled from the bottom up, the stats deciding which listings stand.
    ///
    /// Taking turns keeps each folder on one CPU: when one worker went down the chain
    /// and the other finished every level, the finishing worker met every folder cold
    /// in its caches and freed what the other had allocated, fell behind and left the
    /// chain to be walked a level at a time whenever every slot was taken. No job
    /// calls the next, so a chain of any depth costs no stack per level.
    // Out of line: a chain walked without the pipeline (`-L`, `-x`, or every slot
    // taken) still recurses through `folder`, whose frame would otherwise carry
    // this function's locals at every level.
    #[inline(never)]
    pub(super) fn chain(
        &self,
        fd: OwnedFd,
        listing: Listing,
        slot: PipelineSlot<'_>,
        root_dev: Option<u64>,
        run: u32,
    ) -> Contents {
        let levels = ChainLevels::default();
        rayon::in_place_scope(|scope| {
            let top = ChainLevel {
                fd,
                listing,
                slot,
                depth: 0,
                run,
            };
            self.chain_level(scope, &levels, top, root_dev);
        });
        let (finished, bottom) = levels.into_parts();
        let mut upwards = finished
            .into_iter()
            .enumerate()
            .rev()
            .map(|(depth, level)| {
                let level_run = run.saturating_add(depth.try_into().unwrap_or(u32::MAX));
                (level, level_run)
            });
        let (lowest, lowest_run) = upwards.next().expect("a chain has a top level");
        let mut settled = self.settle(lowest, bottom, root_dev, lowest_run);
        for (level, level_run) in upwards {
            settled = self.settle(level, [settled], root_dev, level_run);
        }
        settled
    }

    /// One level of a chain, its first batch read: opens the subfolders it names,
    /// hands a single one on as the next level's job, and finishes the folder; a
    /// level that ends the chain then enters what it opened.
    fn chain_level<'w: 's, 's>(
        &'w self,
        scope: &rayon::Scope<'s>,
        levels: &'s ChainLevels<'w>,
        level: ChainLevel<'w>,
        root_dev: Option<u64>,
    ) {
        let ChainLevel {
            fd,
            listing,
            slot,
            depth,
            run,
        } = level;
        let named: Vec<usize> = listing.named_folders().collect();
        let opened: Vec<Opened> = named
            .iter()
            .map(|&i| open_subfolder(&fd, listing.name(&listing.names[i]), false))
            .collect();
        let early = EnteredEarly {
            stats: opened.iter().map(|o| self.stat_opened(o)).collect(),
            at: named,
        };
        let ending = match <[Opened; 1]>::try_from(opened) {
            Ok([Opened::Folder(child)]) => {
                let below = run.saturating_add(1);
                scope.spawn(move |scope| {
                    self.chain_below(scope, levels, child, depth + 1, below, root_dev);
                });
                None
            }
            Ok([settled]) => Some(vec![settled]),
            Err(opened) => Some(opened),
        };
        let finished = self.finish_folder(fd, listing, slot, early, root_dev);
        levels.level_finished(depth, finished);
        if let Some(opened) = ending {
            levels.reached_bottom(self.enter_all(opened, root_dev, 0));
        }
    }

    /// The chain's level at `depth`, from its folder just opened: reads the first
    /// batch, then walks the level when it can be pipelined in turn, else lists the
    /// folder as usual, its contents the chain's bottom.
    fn chain_below<'w: 's, 's>(
        &'w self,
        scope: &rayon::Scope<'s>,
        levels: &'s ChainLevels<'w>,
        fd: OwnedFd,
        depth: usize,
        run: u32,
        root_dev: Option<u64>,
    ) {
        self.census.served(ListingCall::Getdents64);
        let listing = first_batch(&fd);
        match self.may_pipeline(&listing, run) {
            Some(slot) => {
                let level = ChainLevel {
                    fd,
                    listing,
                    slot,
                    depth,
                    run,
                };
                self.chain_level(scope, levels, level, root_dev);
            }
            None => {
                let contents = self.unpipelined(fd, listing, root_dev, run);
                levels.reached_bottom(vec![contents]);
            }
        }
    }

    /// A pipelined folder's contents once its stats are in: a listing made on
    /// `d_type` stands only where the stat agrees, and the subfolders only the stats
    /// named are entered now.
    pub(super) fn settle(
        &self,
        finished: FinishedFolder<'_>,
        listed: impl IntoIterator<Item = Contents>,
        root_dev: Option<u64>,
        run: u32,
    ) -> Contents {
        let FinishedFolder {
            mut entries,
            error,
            named,
            late,
            summed,
        } = finished;
        let entered_early = named.len();
        for (i, contents) in named.into_iter().zip(listed) {
            if self.enters(&entries[i], root_dev) {
                entries[i].contents = contents;
            } else {
                self.census.overruled(entries_below(&contents));
            }
        }
        if let Some((fd, slot, late)) = late {
            let run_below = run_below(run, entered_early + late.len());
            self.enter_subfolders(fd, Some(slot), &mut entries, late, root_dev, run_below);
        }
        self.listed(entries, error, summed, root_dev)
    }

    /// The half of a pipelined folder that another worker usually does: finish the
    /// listing and stat every entry. Folders `d_type` did not name (DT_UNKNOWN, or a
    /// batch past the first) are entered once their stats are in, which needs the
    /// folder still open; otherwise it is closed here, off the chain.
    pub(super) fn finish_folder<'w>(
        &'w self,
        fd: OwnedFd,
        mut listing: Listing,
        slot: PipelineSlot<'w>,
        early: EnteredEarly,
        root_dev: Option<u64>,
    ) -> FinishedFolder<'w> {
        let EnteredEarly { at: named, stats } = early;
        listing.finish(&fd);
        self.census
            .listed(listing.names.iter().map(|n| kind_of_type(n.dtype)));
        // A folder entered on its `d_type` is kept until its stat is settled.
        let left_out = |i, facts: &SumFacts| {
            named.binary_search(&i).is_err() && self.left_out(facts, root_dev)
        };
        let given = |i| named.binary_search(&i).ok().and_then(|k| stats[k].clone());
        let Statted {
            entries,
            listed_at,
            summed,
        } = stat_all(&fd, &listing, false, &self.census, (&left_out, &given));
        let error = listing.error;
        let named: Vec<usize> = named
            .iter()
            .map(|i| {
                listed_at
                    .binary_search(i)
                    .expect("a folder entered is kept")
            })
            .collect();
        let late: Vec<usize> = (0..entries.len())
            .filter(|&i| !named.contains(&i) && self.enters(&entries[i], root_dev))
            .collect();
        // The slot goes with the descriptor: a folder kept open for late subfolders
        // waits out the whole subtree entered meanwhile.
        let late = (!late.is_empty()).then_some((fd, slot, late));
        FinishedFolder {
            entries,
            error,
            named,
            late,
            summed,
        }
    }

    /// The stat of a subfolder just opened on its `d_type`, taken from its
    /// descriptor: what a stat of its name would say unless the name changed since
    /// the open, and then what the listing lists. Without a path to look up, it
    /// costs a fraction of a stat by name, and folders are the entries a walk looks
    /// up twice (the stat and the open). `None` leaves the stat to the name.
    fn stat_opened(&self, opened: &Opened) -> Option<StatFields> {
        match opened {
            Opened::Folder(fd) => stat_open_folder(fd, &self.census),
            Opened::Settled(_) => None,
        }
    }
}

/// One level of a chain, handed from job to job: its folder with the first batch
/// read and its slot, how far below the chain's top it is, and its run (see
/// [`Walker::contents`]).
struct ChainLevel<'w> {
    fd: OwnedFd,
    listing: Listing,
    slot: PipelineSlot<'w>,
    depth: usize,
    run: u32,
}

/// What the jobs of a chain leave for its settling: each level's finished folder,
/// by depth, and the contents of the subfolders the bottom level entered.
#[derive(Default)]
struct ChainLevels<'w> {
    finished: Mutex<Vec<Option<FinishedFolder<'w>>>>,
    bottom: Mutex<Option<Vec<Contents>>>,
}

impl<'w> ChainLevels<'w> {
    fn level_finished(&self, depth: usize, finished: FinishedFolder<'w>) {
        let mut levels = self.finished.lock().expect("levels lock");
        if levels.len() <= depth {
            levels.resize_with(depth + 1, || None);
        }
        levels[depth] = Some(finished);
    }

    fn reached_bottom(&self, listed: Vec<Contents>) {
        let mut bottom = self.bottom.lock().expect("bottom lock");
        assert!(bottom.is_none(), "a chain has one bottom");
        *bottom = Some(listed);
    }

    /// Every level from the top down, and the bottom; once the scope has waited
    /// for every job.
    fn into_parts(self) -> (Vec<FinishedFolder<'w>>, Vec<Contents>) {
        let finished = self.finished.into_inner().expect("levels lock");
        let finished = finished
            .into_iter()
            .map(|level| level.expect("every level down to the bottom is finished"))
            .collect();
        let bottom = self.bottom.into_inner().expect("bottom lock");
        (finished, bottom.expect("a chain ends at its bottom"))
    }
}

/// A pipelined folder once listed and statted: its entries, the error that cut the
/// listing short, the indexes of the subfolders entered on `d_type` and, when there
/// are subfolders still to enter, the folder itself (with its slot) and their
/// indexes; and the figures of the files left out.
pub(super) struct FinishedFolder<'w> {
    pub(super) entries: Vec<Entry>,
    pub(super) error: Option<io::Error>,
    pub(super) named: Vec<usize>,
    pub(super) late: Option<(OwnedFd, PipelineSlot<'w>, Vec<usize>)>,
    pub(super) summed: Summed,
}

/// The subfolders a pipelined folder entered on their `d_type`, before their
/// stats: their indexes in its listing, in order, and the stat each one's
/// descriptor gave, where it gave one.
pub(super) struct EnteredEarly {
    pub(super) at: Vec<usize>,
    pub(super) stats: Vec<Option<StatFields>>,
}

/// How many entries a listing holds at every level below it; a loop, not a
/// recursion, since a dropped listing may be a chain of any depth.
fn entries_below(contents: &Contents) -> u64 {
    let (mut count, mut pending) = (0, vec![contents]);
    while let Some(contents) = pending.pop() {
        if let Contents::Listed { entries, .. } = contents {
            count += entries.len() as u64;
            pending.extend(entries.iter().map(|e| &e.contents));
        }
    }
    count
}

/// One of the [`PIPELINED_FOLDERS`] places for a pipelined folder held open; given
/// back when dropped, with the descriptor.
pub(super) struct PipelineSlot<'w>(&'w AtomicUsize);

impl<'w> PipelineSlot<'w> {
    pub(super) fn take(taken: &'w AtomicUsize) -> Option<PipelineSlot<'w>> {
        taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < PIPELINED_FOLDERS).then_some(n + 1)
            })
            .ok()
            .map(|_| PipelineSlot(taken))
    }
}

impl Drop for PipelineSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
