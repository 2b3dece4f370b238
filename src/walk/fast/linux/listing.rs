//! Reading a folder's names with `getdents64` into a per-thread 64 KiB buffer: the
//! first batch alone, so the walk can enter the subfolders it names, and then the
//! rest to the end; or, for a caller that looks at one name at a time, each name as
//! it comes, a batch at a time.

use std::cell::RefCell;
use std::ffi::{CStr, OsStr, OsString};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{FileType, RawDir};

/// getdents64 buffer size; larger buffers mean fewer calls on wide folders.
const LISTING_BUFFER: usize = 64 * 1024;
/// Room a listing starts with, in names and in bytes of names: enough for nine in
/// ten folders of a node_modules tree, so that most listings never grow. Growing
/// one a name at a time cost more than any other work the walk does itself.
const NAMES_AHEAD: usize = 32;
const NAME_BYTES_AHEAD: usize = 512;

// Room for the first names stays a small allocation: glibc serves a request above
// 1008 bytes from its large bins, which skips the thread's cache, takes the arena's
// lock and first consolidates the arena's freed small chunks, for every folder.
const _: () = assert!(NAMES_AHEAD * std::mem::size_of::<Named>() <= 1008);

/// One name as getdents64 gave it: where it starts in its listing's bytes and how
/// long it is with its NUL, with its `d_type` and `d_ino`; kept small (see the
/// assertion above).
pub(super) struct Named {
    at: usize,
    /// At most a record's length, which getdents64 gives as 16 bits.
    len: u16,
    pub(super) dtype: FileType,
    pub(super) ino: u64,
}

/// A folder's names with their `d_type`s, in the order getdents64 returns them.
/// The names are kept one after another in one buffer, each ended by a NUL: a
/// name of its own for each entry cost an allocation and a free per file, though
/// most files end up only summed and a stat takes the name as a C string anyway.
pub(super) struct Listing {
    pub(super) names: Vec<Named>,
    bytes: Vec<u8>,
    /// The error that cut the listing short.
    pub(super) error: Option<io::Error>,
    /// Whether the end has not been met yet: the last call filled a batch, and only
    /// a further call can say whether more follow.
    more: bool,
}

impl Listing {
    fn new() -> Listing {
        Listing {
            names: Vec::with_capacity(NAMES_AHEAD),
            bytes: Vec::with_capacity(NAME_BYTES_AHEAD),
            error: None,
            more: true,
        }
    }

    /// The name of one of this listing's entries. Its bounds are kept, not looked
    /// for: finding the end of each name again cost a tenth of the walk's own
    /// instructions.
    pub(super) fn name(&self, named: &Named) -> &CStr {
        let name = &self.bytes[named.at..named.at + usize::from(named.len)];
        debug_assert_eq!(name.iter().position(|&b| b == 0), Some(name.len() - 1));
        // SAFETY: `push` stored the bytes of a C string there, its NUL last and none
        // before it.
        unsafe { CStr::from_bytes_with_nul_unchecked(name) }
    }

    /// Keeps an entry of a getdents64 batch; not `.` and `..`.
    fn push(&mut self, entry: &rustix::fs::RawDirEntry<'_>) {
        let name = entry.file_name().to_bytes_with_nul();
        if name == b".\0" || name == b"..\0" {
            return;
        }
        self.names.push(Named {
            at: self.bytes.len(),
            len: u16::try_from(name.len()).expect("a name fits its 16-bit record length"),
            dtype: entry.file_type(),
            ino: entry.ino(),
        });
        self.bytes.extend_from_slice(name);
    }

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
    let mut listing = Listing::new();
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
    let ended = read_names(fd, buffer, listing, first_only);
    listing.more = ended.is_none();
    listing.error = ended.and_then(|end| end.err());
}

/// Appends names from `fd`'s current position to `listing` until the end, an
/// error, or (with `one_batch`) the end of one getdents64 call's worth. Returns
/// `None` when more may follow, else how the listing ended.
fn read_names(
    fd: &OwnedFd,
    buffer: &mut [MaybeUninit<u8>],
    listing: &mut Listing,
    one_batch: bool,
) -> Option<io::Result<()>> {
    let mut dir = RawDir::new(fd, buffer);
    loop {
        match dir.next() {
            None => return Some(Ok(())),
            Some(Err(err)) => return Some(Err(err.into())),
            Some(Ok(entry)) => listing.push(&entry),
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
    batch: Listing,
    /// How many of the batch's names were taken.
    taken: usize,
    error: Option<io::Error>,
    ended: bool,
}

impl<'fd> Names<'fd> {
    pub(super) fn new(fd: &'fd OwnedFd) -> Names<'fd> {
        Names {
            fd,
            buffer: vec![MaybeUninit::uninit(); LISTING_BUFFER],
            batch: Listing::new(),
            taken: 0,
            error: None,
            ended: false,
        }
    }

    /// Reads the next batch: up to the end of one getdents64 call's worth.
    fn refill(&mut self) {
        self.batch = Listing::new();
        self.taken = 0;
        if let Some(end) = read_names(self.fd, &mut self.buffer, &mut self.batch, true) {
            self.ended = true;
            self.error = end.err();
        }
    }
}

impl Iterator for Names<'_> {
    /// A name with its `d_type` and `d_ino`.
    type Item = io::Result<(OsString, FileType, u64)>;

    fn next(&mut self) -> Option<Self::Item> {
        while self.taken == self.batch.names.len() && !self.ended {
            self.refill();
        }
        match self.batch.names.get(self.taken) {
            Some(named) => {
                self.taken += 1;
                let name = OsStr::from_bytes(self.batch.name(named).to_bytes());
                Some(Ok((name.to_os_string(), named.dtype, named.ino)))
            }
            None => self.error.take().map(Err),
        }
    }
}
