//! Walking a chain of folders (a folder below [`CHAIN_BELOW_RUN`] folders in a row
//! with one subfolder each) in a loop, two workers taking turns at its levels: once
//! the first `getdents64` batch of a small folder is in, the subfolders its
//! `d_type`s name are opened, and a subfolder opened there takes its stat from its
//! own descriptor; a single subfolder is handed over as the next level at once (see
//! [`super::turns`]), and while the other worker lists it, this one finishes the
//! folder's listing (the call that meets the end), stats every entry and closes the
//! folder. The levels are settled from the bottom up once the bottom is reached. The
//! stats still decide: a folder entered on its `d_type` whose stat says otherwise (it
//! was replaced meanwhile) is dropped, what it listed counted as overruled in the
//! census, and a folder whose `d_type` said nothing is entered once its stat is in.
//! What a name that vanished or changed kind since the listing is reported as is
//! said at [`super::stat::stat_entry`].
//!
//! Only a level's list-then-open must wait for the level above, so the turns take
//! about 0.7 of one worker's wall on a 1,000-level chain. The hand-over is a
//! spin on one word: handing each level over as a job on the pool (as this walk once
//! did) took the same wall as one worker, the wake-up of a sleeping worker eating
//! the overlap, and about 1.5 times the CPU.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::early::EnteredEarly;
use super::listing::{first_batch, Listing};
use super::stat::kind_of_type;
use super::stat_all::{stat_all, Statted};
use super::turns::{EndsTheChain, Turns};
use super::{run_below, Opened, Walker, CHUNKED_FOLDER, OPEN_AHEAD};
use crate::walk::census::ListingCall;
use crate::walk::{Contents, Entry, SumFacts, Summed};

/// At most this many chained folders are open at once: a level about to be
/// listed, or held for the subfolders only its stats named. Beyond it a folder is
/// walked outside a chain; the bound keeps the descriptor table below the size
/// whose growth waits for RCU.
pub(super) const CHAINED_FOLDERS: usize = 32;
/// A folder is walked as a chain's level only below this many folders in a row that
/// each had one subfolder. Lower bounds measured no different on a node_modules
/// tree (CPU 1.007 times with 0 and with 1), where runs of three such folders are
/// rare (19 of nm's 4,685 folders); the chain is what deep single-subfolder trees
/// need, for its loop costs no stack per level.
pub(super) const CHAIN_BELOW_RUN: u32 = 3;

impl Walker {
    /// A slot for walking this folder as a chain's level, when its subfolders can
    /// be told from `d_type` alone: links are not followed (a followed link's target
    /// is known only from its stat), `-x` is off (opening a folder on another device
    /// could trigger an automount the stat would have avoided), it ends a long
    /// enough run of single subfolders ([`CHAIN_BELOW_RUN`]), the first batch is not
    /// already a huge folder's, and it names few subfolders.
    pub(super) fn may_chain(&self, listing: &Listing, run: u32) -> Option<ChainSlot<'_>> {
        if self.options.follow_symlinks || self.options.one_file_system {
            return None;
        }
        if run < CHAIN_BELOW_RUN {
            return None;
        }
        if listing.names.len() >= CHUNKED_FOLDER || listing.error.is_some() {
            return None;
        }
        let named_folders = listing.named_folders().count();
        if named_folders > OPEN_AHEAD {
            return None;
        }
        ChainSlot::take(&self.chained_now)
    }

    /// Walks a chain from its top level down, two workers taking turns at its
    /// levels (see [`turns`](super::turns)), until a level does not open exactly one
    /// subfolder that can be chained in turn; that level's subfolders are the
    /// chain's bottom, entered as usual. Then the levels are settled from the bottom
    /// up, the stats deciding which listings stand. Loops, not a recursion, so a
    /// chain of any depth costs no stack per level.
    // Out of line: a chain walked level by level instead (`-L`, `-x`, or every slot
    // taken) recurses through `folder`, whose frame would otherwise carry this
    // function's locals at every level.
    #[inline(never)]
    pub(super) fn chain(
        &self,
        fd: OwnedFd,
        listing: Listing,
        slot: ChainSlot<'_>,
        root_dev: Option<u64>,
        run: u32,
    ) -> Contents {
        self.chain_in_turns(Turns::new(), fd, listing, slot, (root_dev, run))
    }

    /// [`Walker::chain`], its levels handed over in `turns`; `at` is the top's
    /// root device and run.
    pub(super) fn chain_in_turns(
        &self,
        turns: Turns,
        fd: OwnedFd,
        listing: Listing,
        slot: ChainSlot<'_>,
        (root_dev, run): (Option<u64>, u32),
    ) -> Contents {
        let top = ChainLevel {
            fd,
            listing,
            slot,
            depth: 0,
        };
        let walk = |top| self.take_turns(&turns, top, root_dev, run);
        let (mine, theirs) = rayon::join(|| walk(Some(top)), || walk(None));
        let mut finished: Vec<(u32, FinishedFolder<'_>)> = mine.finished;
        finished.extend(theirs.finished);
        finished.sort_unstable_by_key(|(depth, _)| *depth);
        let bottom = (mine.bottom.or(theirs.bottom)).expect("a chain has a bottom");
        let mut upwards = finished
            .into_iter()
            .rev()
            .map(|(depth, level)| (level, run.saturating_add(depth)));
        let (lowest, lowest_run) = upwards.next().expect("a chain has a top level");
        let mut settled = self.settle(lowest, bottom, root_dev, lowest_run);
        for (level, level_run) in upwards {
            settled = self.settle(level, [settled], root_dev, level_run);
        }
        settled
    }

    /// One worker's turns down a chain, starting with `top` when it has it: each
    /// level it takes it walks (see [`Walker::chain_level`]) until the chain has
    /// ended. What it finished, and the bottom's contents if it reached the bottom.
    fn take_turns<'w>(
        &'w self,
        turns: &Turns,
        top: Option<ChainLevel<'w>>,
        root_dev: Option<u64>,
        run: u32,
    ) -> Turned<'w> {
        let _ends = EndsTheChain(turns);
        let mut turned = Turned {
            finished: Vec::new(),
            bottom: None,
        };
        let mut next = top;
        loop {
            let level = match next.take() {
                Some(level) => level,
                None => match turns.take() {
                    Some((fd, depth)) => match self.below(turns, fd, depth, root_dev, run) {
                        Ok(level) => level,
                        Err(bottom) => {
                            turned.bottom = Some(bottom);
                            return turned;
                        }
                    },
                    None => return turned,
                },
            };
            let depth = level.depth;
            let (finished, bottom) = self.chain_level(turns, level, root_dev);
            turned.finished.push((depth, finished));
            if let Some(opened) = bottom {
                turned.bottom = Some(self.enter_all(opened, root_dev, 0));
                return turned;
            }
        }
    }

    /// One level of a chain, its first batch read: opens the subfolders it names,
    /// hands over the next level when it opened a single subfolder (else ends the
    /// chain), and finishes the folder. The finished level, and what it opened when
    /// it is the chain's bottom, to be entered as usual.
    ///
    /// Nothing here before the hand-over or the end runs on the pool: a worker
    /// waiting for its turn inside a pool call made here would wait for a level
    /// only this worker's frame below could hand over.
    fn chain_level<'w>(
        &'w self,
        turns: &Turns,
        level: ChainLevel<'w>,
        root_dev: Option<u64>,
    ) -> (FinishedFolder<'w>, Option<Vec<Opened>>) {
        let ChainLevel {
            fd,
            listing,
            slot,
            depth,
        } = level;
        let (opened, early) = self.open_named(&fd, &listing, listing.named_folders().collect());
        let bottom = match <[Opened; 1]>::try_from(opened) {
            Ok([Opened::Folder(child)]) => {
                turns.hand_over(child, depth.saturating_add(1));
                None
            }
            Ok(settled) => Some(settled.into()),
            Err(opened) => Some(opened),
        };
        if bottom.is_some() {
            turns.end();
        }
        // The folder is finished before its bottom is entered: its descriptor and
        // slot are given back first, and its listing is still in this CPU's caches.
        let finished = self.finish_folder(fd, listing, slot, early, root_dev);
        (finished, bottom)
    }

    /// The level at `depth` of a chain, its folder `fd` handed over: its first
    /// batch read, the level when it can be chained in turn; else the chain ends and
    /// its contents, listed as usual, are the chain's bottom.
    fn below<'w>(
        &'w self,
        turns: &Turns,
        fd: OwnedFd,
        depth: u32,
        root_dev: Option<u64>,
        run: u32,
    ) -> Result<ChainLevel<'w>, Vec<Contents>> {
        let run = run.saturating_add(depth);
        self.census.served(ListingCall::Getdents64);
        let listing = first_batch(&fd);
        match self.may_chain(&listing, run) {
            Some(slot) => Ok(ChainLevel {
                fd,
                listing,
                slot,
                depth,
            }),
            None => {
                turns.end();
                Err(vec![self.unchained(fd, listing, root_dev, run)])
            }
        }
    }

    /// A chained folder's contents once its stats are in: a listing made on
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
            let late = late.into_iter().map(|i| (i, None)).collect();
            self.enter_subfolders(fd, Some(slot), &mut entries, late, root_dev, run_below);
        }
        self.listed(entries, error, summed, root_dev)
    }

    /// A chained folder's listing finished and every entry statted. Folders
    /// `d_type` did not name (DT_UNKNOWN, or a batch past the first) are entered once
    /// their stats are in, which needs the folder still open; otherwise it is closed
    /// here, before the level below is listed.
    pub(super) fn finish_folder<'w>(
        &'w self,
        fd: OwnedFd,
        mut listing: Listing,
        slot: ChainSlot<'w>,
        early: EnteredEarly,
        root_dev: Option<u64>,
    ) -> FinishedFolder<'w> {
        listing.finish(&fd);
        self.census
            .listed(listing.names.iter().map(|n| kind_of_type(n.dtype)));
        // A folder entered on its `d_type` is kept until its stat is settled.
        let left_out = |i, facts: &SumFacts| {
            early.at.binary_search(&i).is_err() && self.left_out(facts, root_dev)
        };
        let given = |i| early.stat(i);
        let Statted {
            entries,
            listed_at,
            summed,
        } = stat_all(&fd, &listing, false, &self.census, (&left_out, &given));
        let error = listing.error;
        let named: Vec<usize> = (early.at.iter())
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
}

/// One level of a chain, about to be walked: its folder with the first batch read,
/// its slot, and its depth in the chain (the top is 0).
struct ChainLevel<'w> {
    fd: OwnedFd,
    listing: Listing,
    slot: ChainSlot<'w>,
    depth: u32,
}

/// What one worker did in its turns down a chain: the levels it finished, with
/// their depths, and the contents of the subfolders the bottom level entered, if
/// this worker walked the bottom.
struct Turned<'w> {
    finished: Vec<(u32, FinishedFolder<'w>)>,
    bottom: Option<Vec<Contents>>,
}

/// A chained folder once listed and statted: its entries, the error that cut the
/// listing short, the indexes of the subfolders entered on `d_type` and, when there
/// are subfolders still to enter, the folder itself (with its slot) and their
/// indexes; and the figures of the files left out.
pub(super) struct FinishedFolder<'w> {
    pub(super) entries: Vec<Entry>,
    pub(super) error: Option<io::Error>,
    pub(super) named: Vec<usize>,
    pub(super) late: Option<(OwnedFd, ChainSlot<'w>, Vec<usize>)>,
    pub(super) summed: Summed,
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

/// One of the [`CHAINED_FOLDERS`] places for a chained folder held open; given
/// back when dropped, with the descriptor.
pub(super) struct ChainSlot<'w>(&'w AtomicUsize);

impl<'w> ChainSlot<'w> {
    pub(super) fn take(taken: &'w AtomicUsize) -> Option<ChainSlot<'w>> {
        taken
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < CHAINED_FOLDERS).then_some(n + 1)
            })
            .ok()
            .map(|_| ChainSlot(taken))
    }
}

impl Drop for ChainSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
