//! The built-in subject: a du-compatible walker with two listing engines.
//!
//! A walk has two halves. An engine lists the operands into a tree of [`Entry`]
//! values, each with its stat fields and, for folders, its children in the order the
//! OS listed them. The accounting in [`du`] then visits that tree serially, in the
//! OS's order, counting each hard-linked file where GNU du counts it (the first place
//! a depth-first walk meets it), and renders lines in a deterministic order. The
//! engines differ only in how they list, which is exactly what a bulk-listing rewrite
//! changes; GNU du is the independent check on the accounting.

mod census;
pub mod du;
mod fast;
pub mod file_system;
pub mod folder;
mod quote;
mod reference;
pub mod stat;

use std::ffi::OsString;
use std::io;
use std::sync::OnceLock;

pub use census::{Census, Counters};
pub use stat::{FileKind, StatFields};

/// Which listing engine to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    /// `std::fs::read_dir` plus a full-path stat per entry, serial: the oracle.
    Reference,
    /// The platform's fastest listing, in parallel.
    Fast,
}

/// What an engine must know to list: which links to follow and where to stop.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListOptions {
    /// `-L`: stat through symlinks and descend into linked folders.
    pub follow_symlinks: bool,
    /// `-x`: do not descend into folders on another device than their operand.
    pub one_file_system: bool,
}

/// Why an entry has no stat fields.
#[derive(Debug)]
pub enum StatError {
    /// With `-L`, a symlink whose target does not exist (GNU du names no reason).
    DanglingLink,
    Io(io::Error),
}

/// One listed entry. For an operand, `name` is the operand as given.
#[derive(Debug)]
pub struct Entry {
    pub name: OsString,
    pub stat: Result<StatFields, StatError>,
    /// What the folder's listing itself said of the entry, where the engine keeps
    /// it (the fast engine's `d_type` and `d_ino`); none for an operand.
    pub listed: Option<Listed>,
    pub contents: Contents,
}

/// The type and inode a directory listing gives for an entry, before any stat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listed {
    /// `Unknown` where the file system gives no type (DT_UNKNOWN).
    pub kind: FileKind,
    pub ino: u64,
}

/// What is known of an entry's children.
#[derive(Debug)]
pub enum Contents {
    /// Not a folder, or a folder the engine was told not to enter (`-x`).
    None,
    /// The folder's entries in the order the OS listed them, and the error that cut
    /// the listing short (open or read failure), if any. `summed` holds the figures
    /// of the files left out of `entries` when the walk was asked to sum them.
    Listed {
        entries: Vec<Entry>,
        error: Option<io::Error>,
        summed: Summed,
    },
    /// With `-L`, this folder (same device and inode) is listed at another place in
    /// the tree; each folder is listed once, which also ends symlink loops.
    Elsewhere,
}

impl Contents {
    /// A folder that could not be opened or read at all.
    pub fn unreadable(error: io::Error) -> Contents {
        Contents::Listed {
            entries: Vec::new(),
            error: Some(error),
            summed: Summed::default(),
        }
    }
}

/// The figures of a folder's files that a walk for du's accounting adds up instead
/// of keeping: files du only sums into their folder's total (no `-a`), each known
/// to have one link, its size and blocks known, and on its operand's device. Such
/// a file is counted wherever it is met and never printed, so its place in the
/// listing's order does not matter; keeping it would cost an entry of some
/// 300 bytes and a name for each of the tree's files, which a walk of a
/// node_modules tree paid for in page faults and allocator time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summed {
    pub files: u64,
    /// Apparent bytes.
    pub size: u64,
    /// 512-byte units, as `st_blocks`.
    pub blocks: u64,
}

/// What decides whether a walk may sum an entry instead of keeping it, and the
/// figures it then adds: a few of its stat fields, which a stat can give without
/// the whole [`StatFields`] being made for each of the tree's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SumFacts {
    pub(crate) kind: FileKind,
    pub(crate) nlink: Option<u64>,
    pub(crate) dev: Option<u64>,
    pub(crate) size: Option<u64>,
    pub(crate) blocks: Option<u64>,
}

// Only the Linux engine sums files so far.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
impl SumFacts {
    /// The facts of an entry whose fields are already made.
    pub(crate) fn of(stat: &StatFields) -> SumFacts {
        let value = |field: Option<stat::Field<u64>>| field.map(|f| f.value);
        SumFacts {
            kind: stat.kind,
            nlink: value(stat.nlink),
            dev: value(stat.dev),
            size: value(stat.size),
            blocks: value(stat.blocks),
        }
    }
}

// Only the Linux engine sums files so far.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
impl Summed {
    /// Whether a walk that sums files may leave out an entry with these facts (see
    /// [`Summed`]). An unknown link count may hide other links, as
    /// [`StatFields::may_have_other_links`] says, so it keeps the entry.
    pub(crate) fn leaves_out(facts: &SumFacts, root_dev: Option<u64>) -> bool {
        let on_root_device = match (root_dev, facts.dev) {
            (Some(root), Some(dev)) => root == dev,
            _ => false,
        };
        facts.kind != FileKind::Dir
            && facts.nlink.is_some_and(|n| n <= 1)
            && on_root_device
            && facts.size.is_some()
            && facts.blocks.is_some()
    }

    /// Adds the figures of an entry [`Summed::leaves_out`].
    pub(crate) fn add(&mut self, facts: &SumFacts) {
        self.files += 1;
        self.size += facts.size.unwrap_or(0);
        self.blocks += facts.blocks.unwrap_or(0);
    }

    /// Adds the figures of other files left out.
    pub(crate) fn add_all(&mut self, other: &Summed) {
        self.files += other.files;
        self.size += other.size;
        self.blocks += other.blocks;
    }
}

/// Lists every operand with the chosen engine.
pub fn list(engine: Engine, operands: &[OsString], options: ListOptions) -> Vec<Entry> {
    list_counted(engine, operands, options).0
}

/// Lists every operand with the chosen engine, with the census of what the listing
/// typed and statted where the engine counts it (the fast engine on Linux and
/// Windows).
pub fn list_counted(
    engine: Engine,
    operands: &[OsString],
    options: ListOptions,
) -> (Vec<Entry>, Option<Census>) {
    listed(engine, operands, options, false)
}

/// Lists as [`list_counted`] does; with `sum_files`, an engine may leave out the
/// files [`Summed`] describes and keep only their figures.
fn listed(
    engine: Engine,
    operands: &[OsString],
    options: ListOptions,
    sum_files: bool,
) -> (Vec<Entry>, Option<Census>) {
    match engine {
        Engine::Reference => (reference::list(operands, options), None),
        Engine::Fast => fast::list(operands, options, sum_files),
    }
}

/// Whether `engine` counts a census of its listing: the fast engine on Linux and
/// macOS and Windows.
pub fn counts_census(engine: Engine) -> bool {
    cfg!(any(target_os = "linux", target_os = "macos", windows)) && engine == Engine::Fast
}

/// Raises the soft limit on open descriptors to the hard one, once per process.
/// The fast engine keeps a folder open while the pool works through its many
/// subfolders, and the reference keeps one open per level below PATH_MAX depth;
/// failing to raise only means such trees may meet EMFILE, which is then reported
/// as an unreadable folder, never hidden.
pub(crate) fn raise_descriptor_limit() {
    #[cfg(unix)]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            use rustix::process::{getrlimit, setrlimit, Resource};
            let mut limit = getrlimit(Resource::Nofile);
            if limit.current < limit.maximum {
                limit.current = limit.maximum;
                let _ = setrlimit(Resource::Nofile, limit);
            }
        });
    }
}

/// Lets malloc make each thread's heap writable whole (64 MiB) when it makes it,
/// and grow the main heap in 64 MiB steps. A walk's tree of entries takes tens of
/// MB, allocated a few hundred bytes at a time by the pool's threads, and glibc
/// otherwise grows a thread's heap by only what each allocation lacks: a walk of
/// 60,000 entries made over 4,000 `mprotect` calls, each splitting and merging a
/// mapping, about 5% of its CPU. Only address space is set aside; pages are still
/// touched, and charged, only when used.
fn grow_heap_in_large_steps() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a malloc parameter, under malloc's own locks.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
}

/// The key under which a folder is listed only once when links are followed.
pub(crate) type Identity = (u64, u64);

/// Shared by the engines: whether an entry with these fields is a folder to enter,
/// given the device of its operand.
pub(crate) fn should_descend(
    stat: &StatFields,
    root_dev: Option<u64>,
    options: ListOptions,
) -> bool {
    if stat.kind != FileKind::Dir {
        return false;
    }
    if options.one_file_system {
        if let (Some(root), Some(dev)) = (root_dev, stat.dev) {
            return root == dev.value;
        }
    }
    true
}

/// What a folder with these fields holds without being listed: nothing to enter
/// (not a folder, or on another device under `-x`), or, when links are followed,
/// a folder already listed at another place (`claim` records a folder's identity
/// as listed and says whether it was new). None: it is to be listed. Every engine
/// decides this here.
pub(crate) fn settled_without_listing(
    fields: &StatFields,
    root_dev: Option<u64>,
    options: ListOptions,
    claim: impl FnOnce(Identity) -> bool,
) -> Option<Contents> {
    if !should_descend(fields, root_dev, options) {
        return Some(Contents::None);
    }
    match fields.identity() {
        Some(id) if options.follow_symlinks && !claim(id) => Some(Contents::Elsewhere),
        _ => None,
    }
}

/// Stack size for the threads that walk, count or print a tree: every one of those
/// recurses once per folder level. Only what is used is ever committed.
const DEEP_STACK: usize = 1 << 30;

/// The pool every walk runs on, started on first use: its workers have a
/// [`DEEP_STACK`], and the fast engine spreads folders over them.
pub(crate) fn pool() -> Result<&'static rayon::ThreadPool, &'static rayon::ThreadPoolBuildError> {
    static POOL: OnceLock<Result<rayon::ThreadPool, rayon::ThreadPoolBuildError>> = OnceLock::new();
    POOL.get_or_init(|| {
        // Before the workers start: each makes its malloc heap on its first call.
        grow_heap_in_large_steps();
        rayon::ThreadPoolBuilder::new()
            .stack_size(DEEP_STACK)
            .thread_name(|i| format!("walk-{i}"))
            .build()
    })
    .as_ref()
}

/// `work` done on every item, spread over the walk's pool when there are at least
/// `parallel_from` of them (on this thread otherwise, or when the pool cannot
/// start), the results in the items' order. For items of about one cost each, such
/// as the stats of a folder's names; subtrees go to [`map_subtrees_on_pool`].
pub(crate) fn map_on_pool<T: Send, R: Send>(
    items: Vec<T>,
    parallel_from: usize,
    work: impl Fn(T) -> R + Sync + Send,
) -> Vec<R> {
    spread_on_pool(items, parallel_from, usize::MAX, work)
}

/// `work` done on every subtree, as [`map_on_pool`] does it from two subtrees on,
/// each subtree a task of its own. The pool otherwise hands each worker a run of
/// neighbouring items to work through in turn, and a run cannot be taken apart once
/// begun: at the end of a walk one worker went through the rest of its run alone
/// while the others found only the crumbs of its current subtree to take.
pub(crate) fn map_subtrees_on_pool<T: Send, R: Send>(
    subtrees: Vec<T>,
    work: impl Fn(T) -> R + Sync + Send,
) -> Vec<R> {
    spread_on_pool(subtrees, 2, 1, work)
}

/// Items with at least `parallel_from` of them spread over the pool in runs of at
/// most `longest_run` items each.
fn spread_on_pool<T: Send, R: Send>(
    items: Vec<T>,
    parallel_from: usize,
    longest_run: usize,
    work: impl Fn(T) -> R + Sync + Send,
) -> Vec<R> {
    use rayon::prelude::*;
    match pool() {
        Ok(pool) if items.len() >= parallel_from => pool.install(|| {
            (items.into_par_iter().with_max_len(longest_run))
                .map(work)
                .collect()
        }),
        _ => items.into_iter().map(work).collect(),
    }
}

/// Runs `work` on a worker of the walk pool, for the listing, the count and the
/// printing, which recurse once per folder level. A thread of its own would cost a
/// start and a hand-over more; the workers are needed for the listing anyway.
pub fn on_walk_pool<T: Send>(
    work: impl FnOnce() -> T + Send,
) -> Result<T, &'static rayon::ThreadPoolBuildError> {
    Ok(pool()?.install(work))
}

/// What `eqcheck walk` prints besides du's lines and errors.
#[derive(Debug, Clone, Copy, Default)]
pub struct Printed {
    /// The nested JSON form on stdout instead of lines.
    pub json: bool,
    /// After the errors, the engine's census as one JSON line on stderr,
    /// `{"census": {...}}`, or `{"census": null}` where the engine counts nothing.
    /// A test reads it from a walk it cannot run in its own process (one under a
    /// seccomp filter).
    pub census: bool,
}

/// `eqcheck walk`: lists, counts and prints as du does; returns du's exit code
/// (1 when any entry could not be read, after printing everything else).
pub fn command(
    engine: Engine,
    operands: &[OsString],
    list_options: ListOptions,
    du_options: &du::DuOptions,
    printed: Printed,
    stdout: &mut dyn io::Write,
    stderr: &mut dyn io::Write,
) -> u8 {
    // du refuses an empty operand before looking at anything, and goes on.
    let (empty, operands): (Vec<&OsString>, Vec<OsString>) = (
        operands.iter().filter(|o| o.is_empty()).collect(),
        operands.iter().filter(|o| !o.is_empty()).cloned().collect(),
    );
    for _ in &empty {
        let _ = writeln!(stderr, "eqcheck walk: invalid zero-length file name");
    }
    // Only the `eqcheck walk` process calls this, and it exits right after: freeing
    // both trees entry by entry would cost a good part of what listing a chain does.
    // Files du only sums are summed by the walk itself where it can: without `-a`
    // no file below an operand is printed, and without `-L` one with a single link
    // is counted wherever it is met.
    let sum_files = !du_options.all && !du_options.follow_symlinks && !list_options.follow_symlinks;
    let (listed, census) = listed(engine, &operands, list_options, sum_files);
    let listed = std::mem::ManuallyDrop::new(listed);
    let accounted = std::mem::ManuallyDrop::new(du::account(&listed, du_options));
    let written = if printed.json {
        serde_json::to_writer_pretty(&mut *stdout, &du::to_json(&accounted, du_options))
            .map_err(io::Error::from)
            .and_then(|()| writeln!(stdout))
    } else {
        du::write_text(&accounted, du_options, stdout)
    };
    let _ = du::write_errors(&accounted, "eqcheck walk", stderr);
    if printed.census {
        let line = serde_json::json!({ "census": census });
        let _ = writeln!(stderr, "{line}");
    }
    if let Err(err) = written.and_then(|()| stdout.flush()) {
        if err.kind() != io::ErrorKind::BrokenPipe {
            let _ = writeln!(
                stderr,
                "eqcheck walk: write error: {}",
                stat::os_message(&err)
            );
        }
        return 1;
    }
    if accounted.errors.is_empty() && empty.is_empty() {
        0
    } else {
        1
    }
}
