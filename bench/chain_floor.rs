//! The two-core floor of a chain of folders: the floor's calls (`floor.rs`), made by
//! two threads taking turns down the chain. A thread reads a folder's first
//! `getdents64` batch and, when it names exactly one folder, opens that folder and
//! hands it over at once, then stats the folder's entries, reads the rest of its
//! listing and closes it while the other thread lists the next level. A thread
//! waiting for its turn spins on one shared word, the cheapest hand-over there is,
//! so its wall is what a walk making these calls could take if overlapping levels
//! cost nothing; its CPU counts the spinning and means nothing.
//!
//! A level that names no folder, or several, ends the chain: that thread walks what
//! is below it as the serial floor does, and the other stops waiting, so any tree
//! is walked whole and counted right, but only chains are walked in turns.

use std::ffi::CString;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, FromRawFd, IntoRawFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};

use rustix::fs::{FileType, RawDir, CWD};

use crate::floor::{folder, open, raise_descriptor_limit, stat, LISTING_BUFFER};

/// The hand-over word holds a folder's descriptor, or one of these.
const NOTHING_YET: i32 = -1;
const CHAIN_ENDED: i32 = -2;

/// Entries statted below and including `root`, and their allocated 512-byte blocks.
pub fn walk(root: &Path) -> io::Result<(u64, u64)> {
    raise_descriptor_limit();
    let mut totals = (0, 0);
    stat(CWD, root, &mut totals)?;
    let turns = Turns {
        next: AtomicI32::new(open(CWD, root)?.into_raw_fd()),
    };
    let (mine, theirs) = std::thread::scope(|scope| {
        let other = scope.spawn(|| turns.take());
        let mine = turns.take();
        (mine, other.join().expect("the floor's second thread"))
    });
    for (entries, blocks) in [mine?, theirs?] {
        totals.0 += entries;
        totals.1 += blocks;
    }
    Ok(totals)
}

struct Turns {
    next: AtomicI32,
}

impl Turns {
    /// Walks the levels handed to this thread until the chain has ended.
    fn take(&self) -> io::Result<(u64, u64)> {
        let mut totals = (0, 0);
        let mut buffer = vec![MaybeUninit::uninit(); LISTING_BUFFER];
        while let Some(fd) = self.wait() {
            if let Err(err) = self.level(fd, &mut buffer, &mut totals) {
                self.next.store(CHAIN_ENDED, Ordering::Release);
                return Err(err);
            }
        }
        Ok(totals)
    }

    /// The next level's folder, once handed over; `None` once the chain has ended.
    fn wait(&self) -> Option<OwnedFd> {
        loop {
            match self.next.swap(NOTHING_YET, Ordering::AcqRel) {
                NOTHING_YET => std::hint::spin_loop(),
                CHAIN_ENDED => {
                    self.next.store(CHAIN_ENDED, Ordering::Release);
                    return None;
                }
                // SAFETY: only `level` and `walk` store a descriptor here, each one
                // they opened and gave up; the swap makes this thread its one owner.
                raw => return Some(unsafe { OwnedFd::from_raw_fd(raw) }),
            }
        }
    }

    /// One level: the first batch, the hand-over of its one folder if it names one,
    /// then its stats, the rest of its listing, and any folder not handed over.
    fn level(
        &self,
        fd: OwnedFd,
        buffer: &mut [MaybeUninit<u8>],
        totals: &mut (u64, u64),
    ) -> io::Result<()> {
        let mut dir = RawDir::new(&fd, buffer);
        let mut names: Vec<(CString, FileType)> = Vec::new();
        while let Some(entry) = dir.next() {
            let entry = entry?;
            let name = entry.file_name();
            if name.to_bytes() != b"." && name.to_bytes() != b".." {
                names.push((CString::from(name), entry.file_type()));
            }
            if dir.is_buffer_empty() {
                break;
            }
        }
        let mut folders = names
            .iter()
            .filter(|(_, kind)| *kind == FileType::Directory);
        let handed = match (folders.next(), folders.next()) {
            (Some((name, _)), None) => {
                let next = open(&fd, name)?;
                self.next.store(next.into_raw_fd(), Ordering::Release);
                Some(name.clone())
            }
            _ => {
                self.next.store(CHAIN_ENDED, Ordering::Release);
                None
            }
        };
        let mut subfolders = Vec::new();
        let mut stat_one = |name: CString| -> io::Result<()> {
            if stat(&fd, &name, totals)? == FileType::Directory && Some(&name) != handed.as_ref() {
                subfolders.push(name);
            }
            Ok(())
        };
        for (name, _) in names {
            stat_one(name)?;
        }
        while let Some(entry) = dir.next() {
            let entry = entry?;
            let name = entry.file_name();
            if name.to_bytes() != b"." && name.to_bytes() != b".." {
                stat_one(CString::from(name))?;
            }
        }
        for name in subfolders {
            folder(open(fd.as_fd(), &name)?, buffer, totals)?;
        }
        Ok(())
    }
}
