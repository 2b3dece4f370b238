//! Reading a folder's names with `getdents64` into a per-thread 64 KiB buffer: the
//! first batch alone, so the walk can enter the subfolders it names, and then the
//! rest to the end; or, for a caller that looks at one name at a time, each name as
//! it comes, a batch at a time.

use std::cell::RefCell;
use std::ffi::{OsStr, OsString};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{FileType, RawDir};

/// getdents64 buffer size; larger buffers mean fewer calls on wide folders.
const LISTING_BUFFER: usize = 64 * 1024;

/// One name as getdents64 gave it: with its `d_type` and `d_ino`.
pub(super) struct Named {
    pub(super) name: OsString,
    pub(super) dtype: FileType,
    pub(super) ino: u64,
}

/// A folder's names with their `d_type`s, in the order getdents64 returns them.
pub(super) struct Listing {
    pub(super) names: Vec<Named>,
    /// The error that cut the listing short.
    pub(super) error: Option<io::Error>,
    /// Whether the end has not been met yet: the last call filled a batch, and only
    /// a further call can say whether more follow.
    more: bool,
}

impl Listing {
    /// Indexes of the entries whose `d_type` says folder.
    pub(super) fn named_folders(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.names.len()).filter(|&i| self.names[i].dtype == FileType::Directory)
    }

    /// Reads on from where the first batch stopped, to the end or an error.
    pub(super) fn finish(&mut self, fd: &OwnedFd) {
        if self.more {
            with_listing_buffer(|buffer| read_batches(fd, buffer, self, false));
        }
    }
}

/// The first getdents64 batch of a folder. A small folder's whole listing fits in
/// it, but only a second call that returns nothing proves the end: a batch comes
/// back short also when a signal is pending.
pub(super) fn first_batch(fd: &OwnedFd) -> Listing {
    let mut listing = Listing {
        names: Vec::new(),
        error: None,
        more: true,
    };
    with_listing_buffer(|buffer| read_batches(fd, buffer, &mut listing, true));
    listing
}

fn with_listing_buffer<T>(read: impl FnOnce(&mut [MaybeUninit<u8>]) -> T) -> T {
    thread_local! {
        // A batch is copied out before anything else is listed on this thread, so
        // one buffer per thread serves every folder that thread lists.
        static BUFFER: RefCell<Vec<MaybeUninit<u8>>> = RefCell::new(vec![MaybeUninit::uninit(); LISTING_BUFFER]);
    }
    BUFFER.with_borrow_mut(|buffer| read(buffer))
}

/// Appends names from `fd`'s current position until the end, an error, or (with
/// `first_only`) the end of the first batch, and records which of those it was.
fn read_batches(
    fd: &OwnedFd,
    buffer: &mut [MaybeUninit<u8>],
    listing: &mut Listing,
    first_only: bool,
) {
    let ended = read_names(fd, buffer, &mut listing.names, first_only);
    listing.more = ended.is_none();
    listing.error = ended.and_then(|end| end.err());
}

/// Appends names from `fd`'s current position to `names` until the end, an error,
/// or (with `one_batch`) the end of one getdents64 call's worth. Returns `None`
/// when more may follow, else how the listing ended.
fn read_names(
    fd: &OwnedFd,
    buffer: &mut [MaybeUninit<u8>],
    names: &mut impl Extend<Named>,
    one_batch: bool,
) -> Option<io::Result<()>> {
    let mut dir = RawDir::new(fd, buffer);
    loop {
        match dir.next() {
            None => return Some(Ok(())),
            Some(Err(err)) => return Some(Err(err.into())),
            Some(Ok(entry)) => names.extend(named(&entry)),
        }
        if one_batch && dir.is_buffer_empty() {
            return None;
        }
    }
}

/// A folder's names in the order getdents64 returns them, one batch held at a
/// time, in a buffer of this listing's own: whoever takes the names may list other
/// folders meanwhile. Ends after the error that cuts the listing short, if any.
pub(super) struct Names<'fd> {
    fd: &'fd OwnedFd,
    buffer: Vec<MaybeUninit<u8>>,
    batch: std::collections::VecDeque<Named>,
    error: Option<io::Error>,
    ended: bool,
}

impl<'fd> Names<'fd> {
    pub(super) fn new(fd: &'fd OwnedFd) -> Names<'fd> {
        Names {
            fd,
            buffer: vec![MaybeUninit::uninit(); LISTING_BUFFER],
            batch: std::collections::VecDeque::new(),
            error: None,
            ended: false,
        }
    }

    /// Reads the next batch: up to the end of one getdents64 call's worth.
    fn refill(&mut self) {
        if let Some(end) = read_names(self.fd, &mut self.buffer, &mut self.batch, true) {
            self.ended = true;
            self.error = end.err();
        }
    }
}

impl Iterator for Names<'_> {
    type Item = io::Result<Named>;

    fn next(&mut self) -> Option<io::Result<Named>> {
        while self.batch.is_empty() && !self.ended {
            self.refill();
        }
        match self.batch.pop_front() {
            Some(named) => Some(Ok(named)),
            None => self.error.take().map(Err),
        }
    }
}

/// An entry as the walk keeps it; none for `.` and `..`.
fn named(entry: &rustix::fs::RawDirEntry<'_>) -> Option<Named> {
    let name = entry.file_name().to_bytes();
    (name != b"." && name != b"..").then(|| Named {
        name: OsStr::from_bytes(name).to_os_string(),
        dtype: entry.file_type(),
        ino: entry.ino(),
    })
}
