//! The fast engine's walk where the best listing call returns stat fields with the
//! names (`getattrlistbulk` on macOS, the directory-information classes on
//! Windows). Each platform says how to open a folder, list it whole and stat one
//! name ([`Platform`]); this walk does the rest as the Linux engine does: an entry
//! whose fields the listing gave is not stat'ed again (except a link when links are
//! followed), every other entry is stat'ed relative to its folder, subfolders are
//! spread over the walk's pool and a huge folder's stats split into chunks, with
//! `-L` each folder is listed once, and with `-x` nothing on another device is
//! entered. A folder with few subfolders opens them all and closes itself before
//! they are walked, so a chain holds few descriptors however deep.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::io;
use std::sync::Mutex;

use rayon::prelude::*;

use crate::walk::census::{Census, Counters, ListingCall};
use crate::walk::stat::StatFields;
use crate::walk::StatError;
use crate::walk::{
    settled_without_listing, should_descend, Contents, Entry, FileKind, Identity, ListOptions,
    Listed, Summed,
};

/// A folder with at least this many entries has its stats spread over the pool.
const CHUNKED_FOLDER: usize = 1024;
/// Entries per chunk when a folder's stats are spread.
const STAT_CHUNK: usize = 256;
/// A folder with at most this many subfolders opens them all before it closes.
const OPEN_AHEAD: usize = 16;

/// One entry as a bulk listing gave it.
pub(in crate::walk) struct BulkEntry {
    pub(in crate::walk) name: OsString,
    /// The type and file id the listing gave, where it gave them.
    pub(in crate::walk) listed: Option<Listed>,
    /// The entry's fields, where the listing gave all the engine takes from it;
    /// otherwise the walk stats the name.
    pub(in crate::walk) fields: Option<StatFields>,
}

/// A folder's whole listing.
pub(in crate::walk) struct FolderListing {
    pub(in crate::walk) entries: Vec<BulkEntry>,
    /// The error that cut the listing short.
    pub(in crate::walk) error: Option<io::Error>,
    /// The call that served it.
    pub(in crate::walk) call: ListingCall,
}

/// A platform's calls, one folder at a time.
pub(super) trait Platform {
    type Folder: Send + Sync;

    /// Opens the operand `name` (with no `parent`) or the subfolder `name` of
    /// `parent`, through a link only when `follow`.
    fn open(parent: Option<&Self::Folder>, name: &OsStr, follow: bool) -> io::Result<Self::Folder>;

    /// Lists a folder whole, with what the listing gave of each entry; counts the
    /// stat calls it makes in `census`.
    fn list(folder: &Self::Folder, census: &Counters) -> FolderListing;

    /// Stats the operand `name` (with no `parent`) or `name` in `parent`, through a
    /// link when `follow`.
    fn stat(
        parent: Option<&Self::Folder>,
        name: &OsStr,
        follow: bool,
        census: &Counters,
    ) -> Result<StatFields, StatError>;
}

/// Lists the operands with `P`'s calls, and counts what the listing typed and what
/// was stat'ed.
pub(super) fn list<P: Platform>(
    operands: &[OsString],
    options: ListOptions,
) -> (Vec<Entry>, Census) {
    crate::walk::raise_descriptor_limit();
    let walker = Walker::<P> {
        options,
        listed_once: Mutex::new(HashSet::new()),
        census: Counters::default(),
        platform: std::marker::PhantomData,
    };
    let pool = crate::walk::pool().expect("the walk pool must start");
    let entries = pool.install(|| operands.iter().map(|op| walker.operand(op)).collect());
    (entries, walker.census.snapshot())
}

/// Lists a folder with `P`'s calls, counting in `census` the call that served
/// and what the listing typed.
pub(super) fn list_counted<P: Platform>(folder: &P::Folder, census: &Counters) -> FolderListing {
    let listing = P::list(folder, census);
    census.served(listing.call);
    census.listed((listing.entries.iter()).map(|e| e.listed.map_or(FileKind::Unknown, |l| l.kind)));
    listing
}

struct Walker<P: Platform> {
    options: ListOptions,
    listed_once: Mutex<HashSet<Identity>>,
    census: Counters,
    platform: std::marker::PhantomData<fn() -> P>,
}

/// A subfolder about to be listed, or the reason it needs no listing.
enum Opened<F> {
    Folder(F),
    Settled(Contents),
}

impl<P: Platform> Walker<P> {
    fn operand(&self, operand: &OsStr) -> Entry {
        let stat = P::stat(None, operand, self.options.follow_symlinks, &self.census);
        let contents = match &stat {
            Ok(fields) => {
                let root_dev = fields.dev.map(|d| d.value);
                let opened = self.open(None, operand, fields, root_dev);
                self.contents(opened, root_dev)
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

    /// Opens a folder to list, or says why its contents are already settled.
    fn open(
        &self,
        parent: Option<&P::Folder>,
        name: &OsStr,
        fields: &StatFields,
        root_dev: Option<u64>,
    ) -> Opened<P::Folder> {
        let claim = |id| self.listed_once.lock().expect("claims lock").insert(id);
        if let Some(settled) = settled_without_listing(fields, root_dev, self.options, claim) {
            return Opened::Settled(settled);
        }
        match P::open(parent, name, self.options.follow_symlinks) {
            Ok(folder) => Opened::Folder(folder),
            Err(err) => Opened::Settled(Contents::unreadable(err)),
        }
    }

    fn contents(&self, opened: Opened<P::Folder>, root_dev: Option<u64>) -> Contents {
        match opened {
            Opened::Folder(folder) => self.folder(folder, root_dev),
            Opened::Settled(contents) => contents,
        }
    }

    fn folder(&self, folder: P::Folder, root_dev: Option<u64>) -> Contents {
        let FolderListing { entries, error, .. } = list_counted::<P>(&folder, &self.census);
        let mut entries = self.stat_all(&folder, entries);
        let subfolders: Vec<usize> = (0..entries.len())
            .filter(|&i| {
                (entries[i].stat.as_ref()).is_ok_and(|s| should_descend(s, root_dev, self.options))
            })
            .collect();
        let open = |entry: &Entry, folder: &P::Folder| match &entry.stat {
            Ok(fields) => self.open(Some(folder), &entry.name, fields, root_dev),
            Err(_) => Opened::Settled(Contents::None),
        };
        let listed: Vec<(usize, Contents)> = if subfolders.len() <= OPEN_AHEAD {
            let opened: Vec<(usize, Opened<P::Folder>)> = (subfolders.into_iter())
                .map(|i| (i, open(&entries[i], &folder)))
                .collect();
            drop(folder);
            crate::walk::map_subtrees_on_pool(opened, |(i, o)| (i, self.contents(o, root_dev)))
        } else {
            let shared: &[Entry] = &entries;
            crate::walk::map_subtrees_on_pool(subfolders, |i| {
                (i, self.contents(open(&shared[i], &folder), root_dev))
            })
        };
        for (i, contents) in listed {
            entries[i].contents = contents;
        }
        Contents::Listed {
            entries,
            error,
            summed: Summed::default(),
        }
    }

    /// Makes the entries: the listing's fields where it gave them (a link's are its
    /// own, so with `-L` a link is stat'ed through), a stat relative to the folder
    /// otherwise, spread over the pool in chunks when the folder is huge.
    fn stat_all(&self, folder: &P::Folder, listed: Vec<BulkEntry>) -> Vec<Entry> {
        let follow = self.options.follow_symlinks;
        let entry = |bulk: BulkEntry| {
            let trusted = bulk
                .fields
                .filter(|f| !(follow && f.kind == FileKind::Symlink));
            let stat = match trusted {
                Some(fields) => Ok(fields),
                None => P::stat(Some(folder), &bulk.name, follow, &self.census),
            };
            Entry {
                name: bulk.name,
                stat,
                listed: bulk.listed,
                contents: Contents::None,
            }
        };
        if listed.len() >= CHUNKED_FOLDER {
            (listed.into_par_iter().with_min_len(STAT_CHUNK))
                .map(entry)
                .collect()
        } else {
            listed.into_iter().map(entry).collect()
        }
    }
}

// Its tree has Unix symlinks; on Windows the engine's own tests walk this code.
#[cfg(all(test, unix))]
mod tests;
