//! Opening a folder's subfolders on their `d_type`, before the folder's stats, and
//! taking each one's stat from its own descriptor. Folders are the entries a walk
//! looks up twice, once to stat and once to open; a stat of an open descriptor
//! needs no path lookup, so the stat of each such subfolder costs a fraction of a
//! stat by name. The stats still decide: a subfolder opened early whose stat by
//! name says it is no folder to enter (it was replaced meanwhile) is closed unlisted.

use std::os::fd::OwnedFd;

use super::listing::Listing;
use super::stat::stat_open_folder;
use super::{open_subfolder, Opened, Walker, OPEN_AHEAD};
use crate::walk::stat::StatFields;

/// The subfolders a folder opened on their `d_type`, before their stats: their
/// indexes in its listing, in order, and the stat each one's descriptor gave, where
/// it gave one.
pub(super) struct EnteredEarly {
    pub(super) at: Vec<usize>,
    pub(super) stats: Vec<Option<StatFields>>,
}

impl EnteredEarly {
    /// Nothing opened early.
    pub(super) fn none() -> EnteredEarly {
        EnteredEarly {
            at: Vec::new(),
            stats: Vec::new(),
        }
    }

    /// The stat the descriptor of the subfolder at this index of the listing gave.
    pub(super) fn stat(&self, listed_at: usize) -> Option<StatFields> {
        let k = self.at.binary_search(&listed_at).ok()?;
        self.stats[k].clone()
    }
}

/// Subfolders opened early, each taken once by the index it has in the listing.
pub(super) struct OpenedEarly {
    at: Vec<usize>,
    opened: Vec<Option<Opened>>,
}

impl OpenedEarly {
    /// The subfolder opened early at this index of the listing, if it was.
    pub(super) fn take(&mut self, listed_at: usize) -> Option<Opened> {
        let k = self.at.binary_search(&listed_at).ok()?;
        self.opened[k].take()
    }
}

impl Walker {
    /// Opens the subfolders at `named` (indexes of `listing`, in order) relative
    /// to `fd`, links not followed, and stats each one opened through its descriptor.
    pub(super) fn open_named(
        &self,
        fd: &OwnedFd,
        listing: &Listing,
        named: Vec<usize>,
    ) -> (Vec<Opened>, EnteredEarly) {
        let opened: Vec<Opened> = named
            .iter()
            .map(|&i| open_subfolder(fd, listing.name(&listing.names[i]), false))
            .collect();
        let stats = opened.iter().map(|o| self.stat_opened(o)).collect();
        (opened, EnteredEarly { at: named, stats })
    }

    /// Opens early the subfolders of a whole listing that its `d_type`s name, when
    /// that cannot change what the walk finds: links are not followed (a followed
    /// link's target is known only from its stat), `-x` is off (opening a folder on
    /// another device could trigger an automount the stat would have avoided), and
    /// they are few, so the descriptors held stay as bounded as a folder holds once
    /// its stats are in (see [`OPEN_AHEAD`]).
    pub(super) fn open_early(
        &self,
        fd: &OwnedFd,
        listing: &Listing,
    ) -> (OpenedEarly, EnteredEarly) {
        let few = || listing.named_folders().nth(OPEN_AHEAD).is_none();
        let early = !self.options.follow_symlinks && !self.options.one_file_system && few();
        let named: Vec<usize> = if early {
            listing.named_folders().collect()
        } else {
            Vec::new()
        };
        if named.is_empty() {
            let none = OpenedEarly {
                at: Vec::new(),
                opened: Vec::new(),
            };
            return (none, EnteredEarly::none());
        }
        let (opened, entered) = self.open_named(fd, listing, named);
        let opened = OpenedEarly {
            at: entered.at.clone(),
            opened: opened.into_iter().map(Some).collect(),
        };
        (opened, entered)
    }

    /// The stat of a subfolder just opened on its `d_type`, taken from its
    /// descriptor: what a stat of its name would say unless the name changed since
    /// the open, and then what the listing lists. `None` leaves the stat to the name.
    fn stat_opened(&self, opened: &Opened) -> Option<StatFields> {
        match opened {
            Opened::Folder(fd) => stat_open_folder(fd, &self.census),
            Opened::Settled(_) => None,
        }
    }
}
