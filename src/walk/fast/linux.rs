//! The Linux fast engine: `openat` + `getdents64` into a 64 KiB buffer, then
//! `statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC)` per entry (with
//! `fstatat` where the kernel has no `statx`), never a full-path stat below an
//! operand. Folders are spread over a work-stealing pool; a huge folder's stats are
//! split into chunks so one folder does not hold one thread for its whole length.
//!
//! A chain of folders is pipelined over two threads: once the first `getdents64`
//! batch of a small folder is in, the subfolders its `d_type`s name are opened and
//! entered at once, while another worker finishes the listing (the call that meets
//! the end), stats every entry and closes the folder. The stats still decide: a
//! folder entered on its `d_type` whose stat says otherwise is dropped, and a folder
//! whose `d_type` said nothing is entered once its stat is in.
//!
//! Descriptors: a folder with few subfolders opens them and hands itself to the
//! stat job (or closes itself) before they are listed; at most
//! [`PIPELINED_FOLDERS`] folders wait on stat jobs at once, so a chain of any depth
//! holds a bounded number of descriptors. A folder with many subfolders stays open
//! while the pool works through them. The soft limit is raised to the hard one once
//! per process all the same.

use std::cell::RefCell;
use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, StatxFlags, CWD};

use crate::walk::stat::{Field, FileKind, Source, StatFields, Timestamp};
use crate::walk::{should_descend, Contents, Entry, Identity, ListOptions, StatError};

/// getdents64 buffer size; larger buffers mean fewer calls on wide folders.
const LISTING_BUFFER: usize = 64 * 1024;
/// A folder with at least this many entries has its stats spread over the pool.
const CHUNKED_FOLDER: usize = 1024;
/// Entries per chunk when a folder's stats are spread.
const STAT_CHUNK: usize = 256;
/// A folder with at most this many subfolders opens them all before closing its
/// own descriptor. Keeping descriptors few matters beyond the limit: growing the
/// descriptor table of a multi-threaded process waits for an RCU grace period.
const OPEN_AHEAD: usize = 16;
/// At most this many folders wait, open, for another worker to finish their listing
/// and stats. Beyond it a folder is finished by the thread that listed it; the bound
/// keeps the descriptor table below the size whose growth waits for RCU.
const PIPELINED_FOLDERS: usize = 32;
/// Worker stacks are large because the walk recurses once per folder level.
const WORKER_STACK: usize = crate::walk::DEEP_STACK;

pub fn list(operands: &[OsString], options: ListOptions) -> Vec<Entry> {
    crate::walk::raise_descriptor_limit();
    let walker = Walker {
        options,
        listed_once: Mutex::new(HashSet::new()),
        pipelined_now: AtomicUsize::new(0),
    };
    // Even a chain runs on the pool: its stat jobs are what the other workers take.
    pool().install(|| operands.iter().map(|op| walker.operand(op)).collect())
}

/// Runs parallel work on the walk's pool (inline when already on it).
fn in_pool<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    pool().install(work)
}

fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .stack_size(WORKER_STACK)
            .thread_name(|i| format!("walk-{i}"))
            .build()
            .expect("the walk pool must start")
    })
}

struct Walker {
    options: ListOptions,
    listed_once: Mutex<HashSet<Identity>>,
    /// How many folders are held open for their stat jobs (see [`PipelineSlot`]).
    pipelined_now: AtomicUsize,
}

impl Walker {
    fn operand(&self, operand: &OsStr) -> Entry {
        let stat = stat_entry(CWD, operand, self.options.follow_symlinks, None);
        let contents = match &stat {
            Ok(fields) => {
                let root_dev = fields.dev.map(|d| d.value);
                self.contents(self.open_folder(CWD, operand, fields, root_dev), root_dev)
            }
            Err(_) => Contents::None,
        };
        Entry {
            name: operand.to_os_string(),
            stat,
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
        if !should_descend(fields, root_dev, self.options) {
            return Opened::Settled(Contents::None);
        }
        if self.options.follow_symlinks {
            if let Some(id) = fields.identity() {
                if !self.listed_once.lock().expect("claims lock").insert(id) {
                    return Opened::Settled(Contents::Elsewhere);
                }
            }
        }
        let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        if !self.options.follow_symlinks {
            flags |= OFlags::NOFOLLOW;
        }
        match rustix::fs::openat(parent, name, flags, Mode::empty()) {
            Ok(fd) => Opened::Folder(fd),
            Err(err) => Opened::Settled(Contents::unreadable(err.into())),
        }
    }

    fn contents(&self, opened: Opened, root_dev: Option<u64>) -> Contents {
        match opened {
            Opened::Folder(fd) => self.folder(fd, root_dev),
            Opened::Settled(contents) => contents,
        }
    }

    fn folder(&self, fd: OwnedFd, root_dev: Option<u64>) -> Contents {
        let listing = first_batch(&fd);
        match self.may_pipeline(&listing) {
            Some(slot) => self.pipelined(fd, listing, slot, root_dev),
            None => self.unpipelined(fd, listing, root_dev),
        }
    }

    /// Finishes the listing and stats it on this thread (or, for a huge folder, on
    /// the pool), then enters the subfolders the stats name.
    // Kept out of line: its locals would otherwise widen the frame of every level
    // of a chain, which recurses through `folder`.
    #[inline(never)]
    fn unpipelined(&self, fd: OwnedFd, mut listing: Listing, root_dev: Option<u64>) -> Contents {
        listing.finish(&fd);
        let Listing { names, error, .. } = listing;
        let stats = stat_all(&fd, &names, self.options.follow_symlinks);
        let mut entries = unlisted_entries(names, stats);
        let subfolders: Vec<usize> = (0..entries.len())
            .filter(|&i| self.enters(&entries[i], root_dev))
            .collect();
        self.enter_subfolders(fd, None, &mut entries, subfolders, root_dev);
        Contents::Listed { entries, error }
    }

    /// Enters the subfolders of `fd` at `indexes` of its `entries` and fills in
    /// their contents; `fd` and the pipeline slot it holds, if any, are given up
    /// together.
    fn enter_subfolders(
        &self,
        fd: OwnedFd,
        slot: Option<PipelineSlot<'_>>,
        entries: &mut [Entry],
        indexes: Vec<usize>,
        root_dev: Option<u64>,
    ) {
        let open = |entry: &Entry| match &entry.stat {
            Ok(fields) => self.open_folder(&fd, &entry.name, fields, root_dev),
            Err(_) => Opened::Settled(Contents::None),
        };
        let listed: Vec<Contents> = if indexes.len() <= OPEN_AHEAD {
            // Open the few subfolders now and close this folder before entering
            // them, so a chain holds one descriptor here, not one per level.
            let opened: Vec<Opened> = indexes.iter().map(|&i| open(&entries[i])).collect();
            drop((fd, slot));
            self.enter_all(opened, root_dev)
        } else {
            let shared: &[Entry] = entries;
            in_pool(|| {
                indexes
                    .par_iter()
                    .map(|&i| self.contents(open(&shared[i]), root_dev))
                    .collect()
            })
        };
        for (i, contents) in indexes.into_iter().zip(listed) {
            entries[i].contents = contents;
        }
    }

    /// A slot for pipelining this folder, when its subfolders can be told from
    /// `d_type` alone: links are not followed (a followed link's target is known
    /// only from its stat), `-x` is off (opening a folder on another device could
    /// trigger an automount the stat would have avoided), the first batch is not
    /// already a huge folder's, and it names few subfolders.
    fn may_pipeline(&self, listing: &Listing) -> Option<PipelineSlot<'_>> {
        if self.options.follow_symlinks || self.options.one_file_system {
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

    /// Opens the subfolders `d_type` names and enters them on this thread while a
    /// job, which another worker usually takes, finishes the listing, stats every
    /// entry and closes the folder. Once both are done the stats decide which
    /// listings stand.
    fn pipelined(
        &self,
        fd: OwnedFd,
        listing: Listing,
        slot: PipelineSlot<'_>,
        root_dev: Option<u64>,
    ) -> Contents {
        let named: Vec<usize> = listing.named_folders().collect();
        let opened: Vec<Opened> = named
            .iter()
            .map(|&i| open_named_folder(&fd, &listing.names[i].0))
            .collect();
        let (listed, finished) = rayon::join(
            || self.enter_all(opened, root_dev),
            || self.finish_folder(fd, listing, slot, &named, root_dev),
        );
        let mut entries = finished.entries;
        // A listing made on `d_type` stands only where the stat agrees.
        for (&i, contents) in named.iter().zip(listed) {
            if self.enters(&entries[i], root_dev) {
                entries[i].contents = contents;
            }
        }
        if let Some((fd, slot)) = finished.held {
            self.enter_subfolders(fd, Some(slot), &mut entries, finished.late, root_dev);
        }
        Contents::Listed {
            entries,
            error: finished.error,
        }
    }

    /// The half of a pipelined folder that another worker usually does: finish the
    /// listing and stat every entry. Folders `d_type` did not name (DT_UNKNOWN, or a
    /// batch past the first) are entered once their stats are in, which needs the
    /// folder still open; otherwise it is closed here, off the chain.
    fn finish_folder<'w>(
        &'w self,
        fd: OwnedFd,
        mut listing: Listing,
        slot: PipelineSlot<'w>,
        named: &[usize],
        root_dev: Option<u64>,
    ) -> FinishedFolder<'w> {
        listing.finish(&fd);
        let Listing { names, error, .. } = listing;
        let stats = stat_all(&fd, &names, false);
        let entries = unlisted_entries(names, stats);
        let late: Vec<usize> = (0..entries.len())
            .filter(|&i| !named.contains(&i) && self.enters(&entries[i], root_dev))
            .collect();
        // The slot goes with the descriptor: a folder kept open for late subfolders
        // waits out the whole subtree entered meanwhile.
        let held = (!late.is_empty()).then_some((fd, slot));
        FinishedFolder {
            entries,
            error,
            late,
            held,
        }
    }

    /// Whether an entry with these stat fields is a folder to enter.
    fn enters(&self, entry: &Entry, root_dev: Option<u64>) -> bool {
        entry
            .stat
            .as_ref()
            .is_ok_and(|s| should_descend(s, root_dev, self.options))
    }

    /// Lists opened subfolders, spread over the pool when there are several.
    fn enter_all(&self, opened: Vec<Opened>, root_dev: Option<u64>) -> Vec<Contents> {
        if opened.len() > 1 {
            in_pool(|| {
                opened
                    .into_par_iter()
                    .map(|o| self.contents(o, root_dev))
                    .collect()
            })
        } else {
            opened
                .into_iter()
                .map(|o| self.contents(o, root_dev))
                .collect()
        }
    }
}

/// A pipelined folder once listed and statted: its entries, the error that cut the
/// listing short, the subfolders still to enter, and the folder itself (with its
/// slot) while they are.
struct FinishedFolder<'w> {
    entries: Vec<Entry>,
    error: Option<io::Error>,
    late: Vec<usize>,
    held: Option<(OwnedFd, PipelineSlot<'w>)>,
}

/// A subfolder about to be listed, or the reason it needs no listing.
enum Opened {
    Folder(OwnedFd),
    Settled(Contents),
}

/// A folder's names with their `d_type`s, in the order getdents64 returns them.
struct Listing {
    names: Vec<(OsString, FileType)>,
    /// The error that cut the listing short.
    error: Option<io::Error>,
    /// Whether the end has not been met yet: the last call filled a batch, and only
    /// a further call can say whether more follow.
    more: bool,
}

impl Listing {
    /// Indexes of the entries whose `d_type` says folder.
    fn named_folders(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.names.len()).filter(|&i| self.names[i].1 == FileType::Directory)
    }

    /// Reads on from where the first batch stopped, to the end or an error.
    fn finish(&mut self, fd: &OwnedFd) {
        if self.more {
            with_listing_buffer(|buffer| read_batches(fd, buffer, self, false));
        }
    }
}

/// The first getdents64 batch of a folder. A small folder's whole listing fits in
/// it, but only a second call that returns nothing proves the end: a batch comes
/// back short also when a signal is pending.
fn first_batch(fd: &OwnedFd) -> Listing {
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
    let mut dir = RawDir::new(fd, buffer);
    loop {
        match dir.next() {
            None => {
                listing.more = false;
                return;
            }
            Some(Err(err)) => {
                listing.error = Some(err.into());
                listing.more = false;
                return;
            }
            Some(Ok(entry)) => {
                let name = entry.file_name().to_bytes();
                if name != b"." && name != b".." {
                    let name = OsStr::from_bytes(name).to_os_string();
                    listing.names.push((name, entry.file_type()));
                }
            }
        }
        if first_only && dir.is_buffer_empty() {
            return;
        }
    }
}

/// Stats every listed name relative to the folder, spread over the pool in chunks
/// when the folder is huge.
fn stat_all(
    fd: &OwnedFd,
    names: &[(OsString, FileType)],
    follow: bool,
) -> Vec<Result<StatFields, StatError>> {
    let stat_one =
        |(name, dtype): &(OsString, FileType)| stat_entry(fd, name, follow, Some(*dtype));
    if names.len() >= CHUNKED_FOLDER {
        in_pool(|| {
            names
                .par_chunks(STAT_CHUNK)
                .flat_map_iter(|chunk| chunk.iter().map(stat_one))
                .collect()
        })
    } else {
        names.iter().map(stat_one).collect()
    }
}

/// Pairs names with their stats; contents are filled in by whoever enters them.
fn unlisted_entries(
    names: Vec<(OsString, FileType)>,
    stats: Vec<Result<StatFields, StatError>>,
) -> Vec<Entry> {
    names
        .into_iter()
        .zip(stats)
        .map(|((name, _), stat)| Entry {
            name,
            stat,
            contents: Contents::None,
        })
        .collect()
}

/// Opens a subfolder on its `d_type` alone, never through a link, before its stat
/// is in; the stat later decides whether what is listed through it stands.
fn open_named_folder(parent: &OwnedFd, name: &OsStr) -> Opened {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    match rustix::fs::openat(parent, name, flags, Mode::empty()) {
        Ok(fd) => Opened::Folder(fd),
        Err(err) => Opened::Settled(Contents::unreadable(err.into())),
    }
}

/// One of the [`PIPELINED_FOLDERS`] places for a folder held open for its stat job;
/// given back when dropped.
struct PipelineSlot<'w>(&'w AtomicUsize);

impl<'w> PipelineSlot<'w> {
    fn take(taken: &'w AtomicUsize) -> Option<PipelineSlot<'w>> {
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

/// Stats one name relative to a folder's descriptor; `dtype` is what the listing
/// said, used to tell a dangling link from a missing entry when following links.
fn stat_entry<Fd: AsFd>(
    dir: Fd,
    name: &OsStr,
    follow: bool,
    dtype: Option<FileType>,
) -> Result<StatFields, StatError> {
    let mut flags = AtFlags::STATX_DONT_SYNC;
    if !follow {
        flags |= AtFlags::SYMLINK_NOFOLLOW;
    }
    let mask = StatxFlags::TYPE
        | StatxFlags::MODE
        | StatxFlags::NLINK
        | StatxFlags::INO
        | StatxFlags::SIZE
        | StatxFlags::BLOCKS
        | StatxFlags::MTIME;
    let result = match rustix::fs::statx(&dir, name, flags, mask) {
        Err(rustix::io::Errno::NOSYS) => statat_fallback(&dir, name, follow),
        other => other.map(|s| from_statx(&s)),
    };
    match result {
        Ok(fields) => Ok(fields),
        Err(rustix::io::Errno::NOENT) if follow && is_link(&dir, name, dtype) => {
            Err(StatError::DanglingLink)
        }
        Err(errno) => Err(StatError::Io(errno.into())),
    }
}

fn is_link<Fd: AsFd>(dir: Fd, name: &OsStr, dtype: Option<FileType>) -> bool {
    match dtype {
        Some(FileType::Symlink) => true,
        Some(FileType::Unknown) | None => rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink),
        Some(_) => false,
    }
}

fn statat_fallback<Fd: AsFd>(
    dir: Fd,
    name: &OsStr,
    follow: bool,
) -> rustix::io::Result<StatFields> {
    let flags = if follow {
        AtFlags::empty()
    } else {
        AtFlags::SYMLINK_NOFOLLOW
    };
    let st = rustix::fs::statat(dir, name, flags)?;
    let src = Source::DirfdStat;
    Ok(StatFields {
        kind: kind_of_mode(st.st_mode),
        mode: Some(Field::new(st.st_mode, src)),
        size: Some(Field::new(st.st_size as u64, src)),
        blocks: Some(Field::new(st.st_blocks as u64, src)),
        ino: Some(Field::new(st.st_ino, src)),
        dev: Some(Field::new(st.st_dev, src)),
        nlink: Some(Field::new(st.st_nlink, src)),
        mtime: Some(Field::new(
            Timestamp {
                secs: st.st_mtime,
                nanos: st.st_mtime_nsec as u32,
            },
            src,
        )),
    })
}

fn from_statx(s: &rustix::fs::Statx) -> StatFields {
    let src = Source::DirfdStat;
    let has = |bit: StatxFlags| s.stx_mask & bit.bits() != 0;
    let mode = u32::from(s.stx_mode);
    StatFields {
        kind: kind_of_mode(mode),
        mode: has(StatxFlags::MODE).then(|| Field::new(mode, src)),
        size: has(StatxFlags::SIZE).then(|| Field::new(s.stx_size, src)),
        blocks: has(StatxFlags::BLOCKS).then(|| Field::new(s.stx_blocks, src)),
        ino: has(StatxFlags::INO).then(|| Field::new(s.stx_ino, src)),
        dev: Some(Field::new(
            rustix::fs::makedev(s.stx_dev_major, s.stx_dev_minor),
            src,
        )),
        nlink: has(StatxFlags::NLINK).then(|| Field::new(u64::from(s.stx_nlink), src)),
        mtime: has(StatxFlags::MTIME).then(|| {
            Field::new(
                Timestamp {
                    secs: s.stx_mtime.tv_sec,
                    nanos: s.stx_mtime.tv_nsec,
                },
                src,
            )
        }),
    }
}

fn kind_of_mode(mode: u32) -> FileKind {
    match FileType::from_raw_mode(mode) {
        FileType::RegularFile => FileKind::File,
        FileType::Directory => FileKind::Dir,
        FileType::Symlink => FileKind::Symlink,
        FileType::Fifo => FileKind::Fifo,
        FileType::Socket => FileKind::Socket,
        FileType::BlockDevice => FileKind::BlockDevice,
        FileType::CharacterDevice => FileKind::CharDevice,
        FileType::Unknown => FileKind::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walker() -> Walker {
        Walker {
            options: ListOptions::default(),
            listed_once: Mutex::new(HashSet::new()),
            pipelined_now: AtomicUsize::new(0),
        }
    }

    /// `sub/inner/f` and a file `g`, listed whole.
    fn listed_folder() -> (tempfile::TempDir, OwnedFd, Listing) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sub/inner")).unwrap();
        std::fs::write(dir.path().join("sub/inner/f"), b"f").unwrap();
        std::fs::write(dir.path().join("g"), b"g").unwrap();
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = rustix::fs::open(dir.path(), flags, Mode::empty()).unwrap();
        let mut listing = first_batch(&fd);
        listing.finish(&fd);
        (dir, fd, listing)
    }

    fn child<'a>(entries: &'a [Entry], name: &str) -> &'a Entry {
        entries.iter().find(|e| e.name == name).unwrap()
    }

    fn entries(contents: &Contents) -> &[Entry] {
        match contents {
            Contents::Listed { entries, error } => {
                assert!(error.is_none(), "{error:?}");
                entries
            }
            other => panic!("not listed: {other:?}"),
        }
    }

    fn pipelined(fd: OwnedFd, listing: Listing) -> Contents {
        let walker = walker();
        let slot = PipelineSlot::take(&walker.pipelined_now).expect("a free slot");
        let contents = walker.pipelined(fd, listing, slot, None);
        assert_eq!(walker.pipelined_now.load(Ordering::Acquire), 0);
        contents
    }

    #[test]
    fn folders_whose_d_type_says_nothing_are_entered_once_stat_names_them() {
        let (_dir, fd, mut listing) = listed_folder();
        for (_, dtype) in &mut listing.names {
            *dtype = FileType::Unknown;
        }
        let top = pipelined(fd, listing);
        let sub = child(entries(&top), "sub");
        let inner = child(entries(&sub.contents), "inner");
        assert_eq!(entries(&inner.contents).len(), 1);
    }

    #[test]
    fn a_d_type_the_stat_contradicts_lists_nothing() {
        let (_dir, fd, mut listing) = listed_folder();
        for (name, dtype) in &mut listing.names {
            if name == "g" {
                *dtype = FileType::Directory;
            }
        }
        let top = pipelined(fd, listing);
        let g = child(entries(&top), "g");
        assert!(matches!(g.contents, Contents::None), "{:?}", g.contents);
        assert_eq!(g.stat.as_ref().unwrap().kind, FileKind::File);
    }

    #[test]
    fn a_folder_held_open_for_late_subfolders_keeps_its_slot() {
        let walker = walker();
        for late_folder in [false, true] {
            let (_dir, fd, mut listing) = listed_folder();
            if late_folder {
                for (_, dtype) in &mut listing.names {
                    *dtype = FileType::Unknown;
                }
            }
            let named: Vec<usize> = listing.named_folders().collect();
            let slot = PipelineSlot::take(&walker.pipelined_now).expect("a free slot");
            let finished = walker.finish_folder(fd, listing, slot, &named, None);
            let taken = walker.pipelined_now.load(Ordering::Acquire);
            assert_eq!(finished.held.is_some(), late_folder);
            assert_eq!(
                taken,
                usize::from(late_folder),
                "late folder: {late_folder}"
            );
            drop(finished);
            assert_eq!(walker.pipelined_now.load(Ordering::Acquire), 0);
        }
    }

    #[test]
    fn slots_run_out_at_the_bound_and_come_back() {
        let walker = walker();
        let slots: Vec<PipelineSlot> = (0..PIPELINED_FOLDERS)
            .map(|_| PipelineSlot::take(&walker.pipelined_now).expect("below the bound"))
            .collect();
        assert!(PipelineSlot::take(&walker.pipelined_now).is_none());
        drop(slots);
        assert!(PipelineSlot::take(&walker.pipelined_now).is_some());
    }
}
