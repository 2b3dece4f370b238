//! Statting every name a folder listed: relative to the folder's descriptor,
//! spread over the walk's pool in chunks when the folder is huge, and making the
//! entries kept while adding up the files the walk only sums.

use std::ffi::{CStr, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

use rayon::prelude::*;
use rustix::fs::FileType;

use super::listing::{Listing, Named};
use super::stat::{kind_of_type, stat_or_sum, Made};
use super::{in_pool, CHUNKED_FOLDER, STAT_CHUNK};
use crate::walk::census::{Counters, StatTally};
use crate::walk::stat::StatFields;
use crate::walk::{Contents, Entry, Listed, StatError, SumFacts, Summed};

/// What statting a folder's names made: the entries kept, the index each had in the
/// listing, and the figures of the files left out.
#[derive(Default)]
pub(super) struct Statted {
    pub(super) entries: Vec<Entry>,
    pub(super) listed_at: Vec<usize>,
    pub(super) summed: Summed,
}

impl Statted {
    /// Room for the entries these names' `d_type`s say are kept: their folders, which
    /// are never only summed. Most of a tree's entries are files that are, so room
    /// for every name would be mostly given back; a kept file or link past the
    /// guess grows the vectors once.
    fn for_names(names: &[Named]) -> Statted {
        let folders = names.iter().filter(|n| n.dtype == FileType::Directory);
        let folders = folders.count();
        Statted {
            entries: Vec::with_capacity(folders),
            listed_at: Vec::with_capacity(folders),
            summed: Summed::default(),
        }
    }

    /// Keeps the entry of the name at `at` of the listing, with its stat.
    fn keep(&mut self, at: usize, named: &Named, name: &CStr, stat: Result<StatFields, StatError>) {
        self.entries.push(Entry {
            name: OsStr::from_bytes(name.to_bytes()).to_os_string(),
            stat,
            listed: Some(Listed {
                kind: kind_of_type(named.dtype),
                ino: named.ino,
            }),
            contents: Contents::None,
        });
        self.listed_at.push(at);
    }

    /// Adds what a later run of the same listing's names made.
    fn append(&mut self, later: Statted) {
        self.entries.extend(later.entries);
        self.listed_at.extend(later.listed_at);
        self.summed.add_all(&later.summed);
    }
}

/// Whether the walk only sums a file, given its index in the listing.
pub(super) type LeftOut<'a> = dyn Fn(usize, &SumFacts) -> bool + Sync + 'a;
/// The stat already taken of the name at an index of the listing, if any; asked
/// only of names listed as folders, the only ones opened early (see [`super::early`]).
pub(super) type Given<'a> = dyn Fn(usize) -> Option<StatFields> + Sync + 'a;

/// Stats every listed name relative to the folder, spread over the pool in chunks
/// when the folder is huge, and makes the entries; contents are filled in by
/// whoever enters them. A file `left_out` (given its index in the listing) says the
/// walk sums is only added up: it never gets an entry or a name of its own. A name
/// whose stat is `given` (a subfolder statted through its open descriptor) is not
/// statted again.
pub(super) fn stat_all(
    fd: &OwnedFd,
    listing: &Listing,
    follow: bool,
    census: &Counters,
    (left_out, given): (&LeftOut<'_>, &Given<'_>),
) -> Statted {
    // Each run of names (the whole listing, or one chunk of a huge one) counts its
    // stats on its own thread and adds them to the census once (see [`StatTally`]).
    // The run fills its `Statted` in place: each made entry passed along on its way
    // there was copied whole at every step.
    let stat_run = |first: usize, run: &[Named], statted: &mut Statted| {
        let tally = StatTally::default();
        for (at, named) in (first..).zip(run) {
            let name = listing.name(named);
            let given = (named.dtype == FileType::Directory)
                .then(|| given(at))
                .flatten();
            if let Some(stat) = given {
                statted.keep(at, named, name, Ok(stat));
                continue;
            }
            match stat_or_sum(fd, name, follow, &tally, |facts| left_out(at, facts)) {
                Made::Summed(facts) => statted.summed.add(&facts),
                Made::Kept(stat) => statted.keep(at, named, name, stat),
            }
        }
        census.add_tally(&tally);
    };
    let names = &listing.names;
    let mut statted = Statted::for_names(names);
    if names.len() >= CHUNKED_FOLDER {
        // Each chunk keeps only what it makes: room for every name's result, most
        // of them files only summed, cost a fresh page of memory per 12 names. Each
        // chunk is a task of its own: the folder's subfolders wait for its last.
        let chunks: Vec<Statted> = in_pool(|| {
            (names.par_chunks(STAT_CHUNK).with_max_len(1).enumerate())
                .map(|(chunk, run)| {
                    let mut made = Statted::for_names(run);
                    stat_run(chunk * STAT_CHUNK, run, &mut made);
                    made
                })
                .collect()
        });
        for chunk in chunks {
            statted.append(chunk);
        }
    } else {
        stat_run(0, names, &mut statted);
    }
    statted
}
