//! Entries that vanish or change kind between the listing and the stat. A racer
//! thread keeps deleting and recreating names, as files, folders with a file
//! inside, symlinks or nothing at all, in a wide folder (whose stats the fast engine
//! spreads over the pool in chunks, long after the listing) and a narrow one (which
//! it pipelines, opening subfolders on their `d_type` before their stat is in),
//! while the fast engine walks the tree again and again, with and without `-L` and
//! `-x`. Every state the racer makes is logged before it appears; every entry a
//! walk reports must be one of them, a vanished name must say `No such file or
//! directory` (as GNU du, which also stats after listing, says), no walk may panic
//! or hang, and the census must add up.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use eqcheck::walk::{list_counted, Census, Contents, Engine, Entry, FileKind, ListOptions};
use eqcheck::walk::{StatError, StatFields};

use crate::util::temp_dir;

/// Names in the wide folder: past the 1024 from which the fast engine chunks stats.
const WIDE: usize = 1500;
/// Names in the narrow folder: few enough to be pipelined.
const NARROW: usize = 12;
/// Walks per option set.
const WALKS: usize = 25;
/// A walk still running by then has hung: a safety net, never a timing check.
const WALK_LIMIT: Duration = Duration::from_secs(120);
/// Where each symlink points, from its folder: a file outside the walked tree, so
/// with `-L` no link dangles and no folder is reached twice.
const LINK_TARGET: &str = "../../anchor";

/// One real state of a path below the walked operand: its kind, inode and, for
/// anything but a folder (whose size follows its entries), its size.
type State = (PathBuf, FileKind, u64, Option<u64>);

fn state_of(rel: &Path, meta: &fs::Metadata) -> State {
    let kind = eqcheck::walk::stat::kind_of(meta.file_type());
    let size = (kind != FileKind::Dir).then_some(meta.size());
    (rel.to_path_buf(), kind, meta.ino(), size)
}

/// Every state the racer made, and the paths that were ever a link (with `-L`,
/// such a path reports its target's state).
#[derive(Default)]
struct Log {
    states: HashSet<State>,
    links: HashSet<PathBuf>,
}

/// What a racer put at a name, so it knows how to take it away.
#[derive(Clone, Copy, PartialEq)]
enum Made {
    Nothing,
    File,
    Folder,
    Link,
}

/// The thread that changes the tree. It builds each new entry in a staging folder
/// beside the tree, logs its state there (a rename keeps the inode) and only then
/// renames it into place, so every state a walk can meet is logged before it exists.
struct Racer {
    base: PathBuf,
    rng: fastrand::Rng,
    /// Each racing name, relative to the walked tree, with what is there now.
    names: Vec<(PathBuf, Made)>,
    made: u64,
    log: Arc<Mutex<Log>>,
}

impl Racer {
    fn new(base: &Path, log: Arc<Mutex<Log>>) -> Racer {
        for folder in ["tree/wide", "tree/narrow", "staging"] {
            fs::create_dir_all(base.join(folder)).expect("mkdir");
        }
        fs::write(base.join("anchor"), b"the target of every link").expect("anchor");
        let wide = (0..WIDE).map(|i| PathBuf::from(format!("wide/e{i:04}")));
        let narrow = (0..NARROW).map(|i| PathBuf::from(format!("narrow/e{i:02}")));
        let names = wide.chain(narrow).map(|p| (p, Made::Nothing)).collect();
        let mut racer = Racer {
            base: base.to_path_buf(),
            rng: fastrand::Rng::with_seed(11),
            names,
            made: 0,
            log,
        };
        for folder in ["", "wide", "narrow"] {
            let meta = fs::symlink_metadata(base.join("tree").join(folder)).expect("lstat");
            racer.logged(state_of(Path::new(folder), &meta));
        }
        for index in 0..racer.names.len() {
            let kind = [Made::File, Made::Folder, Made::Link][index % 3];
            racer.put(index, kind);
        }
        racer
    }

    fn logged(&self, state: State) {
        let mut log = self.log.lock().expect("log lock");
        if state.1 == FileKind::Symlink {
            log.links.insert(state.0.clone());
        }
        log.states.insert(state);
    }

    /// One change: a name is emptied, filled anew, or replaced in one rename when
    /// neither the old nor the new entry is a folder.
    fn step(&mut self) {
        // Half the changes in the narrow folder, or its few names would rarely race.
        let index = if self.rng.bool() {
            self.rng.usize(..WIDE)
        } else {
            WIDE + self.rng.usize(..NARROW)
        };
        let new = [Made::Nothing, Made::File, Made::Folder, Made::Link][self.rng.usize(..4)];
        let atomic = self.rng.bool()
            && matches!(self.names[index].1, Made::File | Made::Link)
            && matches!(new, Made::File | Made::Link);
        if !atomic {
            self.take(index);
        }
        if new != Made::Nothing {
            self.put(index, new);
        }
    }

    fn take(&mut self, index: usize) {
        let (rel, made) = self.names[index].clone();
        let path = self.base.join("tree").join(&rel);
        match made {
            Made::Nothing => {}
            Made::File | Made::Link => fs::remove_file(&path).expect("rm"),
            // Out of the tree in one rename: the folder and its file vanish at once.
            Made::Folder => {
                let trash = self.staging("trash");
                fs::rename(&path, &trash).expect("mv out");
                fs::remove_dir_all(&trash).expect("rm -r");
            }
        }
        self.names[index].1 = Made::Nothing;
    }

    fn put(&mut self, index: usize, made: Made) {
        let rel = self.names[index].0.clone();
        let new = self.staging("new");
        match made {
            Made::Nothing => return,
            // Sizes follow the count, so two files rarely share inode and size.
            Made::File => fs::write(&new, vec![b'x'; (self.made % 4000) as usize]).expect("write"),
            Made::Link => symlink(LINK_TARGET, &new).expect("ln -s"),
            Made::Folder => {
                fs::create_dir(&new).expect("mkdir");
                fs::write(new.join("inner"), vec![b'y'; (self.made % 300) as usize])
                    .expect("write inner");
                let inner = fs::symlink_metadata(new.join("inner")).expect("lstat");
                self.logged(state_of(&rel.join("inner"), &inner));
            }
        }
        self.logged(state_of(&rel, &fs::symlink_metadata(&new).expect("lstat")));
        fs::rename(&new, self.base.join("tree").join(&rel)).expect("mv in");
        self.names[index].1 = made;
    }

    fn staging(&mut self, what: &str) -> PathBuf {
        self.made += 1;
        self.base.join(format!("staging/{what}{}", self.made))
    }
}

/// What one walk's report was checked to hold, and what it broke.
#[derive(Default)]
struct Checked {
    problems: Vec<String>,
    /// Entries in the listings the walk returned, below the operand.
    returned: u64,
    /// Names reported as gone.
    vanished: u64,
}

/// Holds a walk's entries to the logged states. With `-L`, a link's state is its
/// target's.
struct Check<'a> {
    log: &'a Log,
    link_target: State,
    follow: bool,
    out: Checked,
    /// Identities of the folders the walk listed.
    listed: HashSet<(u64, u64)>,
    /// With `-L`, folders said to be listed elsewhere, with their identities.
    elsewhere: Vec<(PathBuf, (u64, u64))>,
}

impl Check<'_> {
    fn known(&self, state: &State) -> bool {
        if self.log.states.contains(state) {
            return true;
        }
        let (rel, kind, ino, size) = state;
        let target = &self.link_target;
        self.follow
            && (kind, ino, size) == (&target.1, &target.2, &target.3)
            && self.log.links.contains(rel)
    }

    fn entry(&mut self, rel: PathBuf, entry: &Entry) {
        let fields = match &entry.stat {
            Ok(fields) => fields,
            Err(StatError::Io(err)) if err.kind() == io::ErrorKind::NotFound => {
                self.out.vanished += 1;
                return;
            }
            Err(err) => return self.problem(&rel, format!("stat error {err:?}")),
        };
        let state = reported_state(&rel, fields);
        if !self.known(&state) {
            self.problem(&rel, format!("reported {state:?}, never a state of it"));
        }
        match (&entry.contents, fields.kind) {
            (Contents::Listed { entries, error, .. }, FileKind::Dir) => {
                self.listed.extend(fields.identity());
                if let Some(err) = error {
                    self.listing_error(&rel, err);
                }
                self.out.returned += entries.len() as u64;
                for child in entries {
                    self.entry(rel.join(&child.name), child);
                }
            }
            // With `-L` a folder is listed once per identity, as du counts it once:
            // a reused inode is `Elsewhere` too.
            (Contents::Elsewhere, FileKind::Dir) if self.follow => match fields.identity() {
                Some(id) => self.elsewhere.push((rel, id)),
                None => self.problem(&rel, "listed elsewhere, with no identity".into()),
            },
            (Contents::None, FileKind::Dir) => self.problem(&rel, "a folder left unlisted".into()),
            (Contents::None, _) => {}
            (contents, kind) => self.problem(&rel, format!("a {kind:?} with {contents:?}")),
        }
    }

    /// A folder that vanished, or became a file or a link, between its stat and
    /// its opening: du, which also opens after the stat, says the same.
    fn listing_error(&mut self, rel: &Path, err: &io::Error) {
        let raced = [libc::ENOENT, libc::ENOTDIR, libc::ELOOP];
        if !err.raw_os_error().is_some_and(|code| raced.contains(&code)) {
            self.problem(rel, format!("listing error {err:?}"));
        }
    }

    /// The findings, once every folder said to be listed elsewhere was checked to
    /// be listed at some place of the same walk.
    fn finish(mut self) -> Checked {
        for (rel, id) in std::mem::take(&mut self.elsewhere) {
            if !self.listed.contains(&id) {
                self.problem(&rel, format!("listed elsewhere, but {id:?} nowhere"));
            }
        }
        self.out
    }

    fn problem(&mut self, rel: &Path, what: String) {
        self.out.problems.push(format!("{}: {what}", rel.display()));
    }
}

fn reported_state(rel: &Path, fields: &StatFields) -> State {
    let ino = fields.ino.map_or(u64::MAX, |i| i.value);
    let size = fields.size.map(|s| s.value);
    let size = if fields.kind == FileKind::Dir {
        None
    } else {
        size
    };
    (rel.to_path_buf(), fields.kind, ino, size)
}

/// One walk on a thread of its own, so a hang fails the test instead of stalling
/// it, and a panic is reported as one.
fn walk_once(tree: &Path, options: ListOptions) -> (Entry, Census) {
    let (send, receive) = mpsc::channel();
    let operands = vec![OsString::from(tree)];
    std::thread::spawn(move || {
        let (mut entries, census) = list_counted(Engine::Fast, &operands, options);
        let census = census.expect("the Linux fast engine counts a census");
        let _ = send.send((entries.pop().expect("one operand"), census));
    });
    match receive.recv_timeout(WALK_LIMIT) {
        Ok(walked) => walked,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("a walk did not end in {WALK_LIMIT:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("a walk panicked"),
    }
}

/// The census adds up: what the listings returned, less what the stats overruled,
/// is what the walk reports, and every reported entry (and the operand) was
/// statted at least once.
fn census_problems(census: &Census, checked: &Checked) -> Vec<String> {
    let mut problems = Vec::new();
    if census.returned() != checked.returned {
        let returned = checked.returned;
        problems.push(format!(
            "census {census:?} returns {}, the walk returned {returned}",
            census.returned()
        ));
    }
    if census.stat_calls() < checked.returned + 1 {
        problems.push(format!("census {census:?}: fewer stats than entries"));
    }
    problems
}

/// The racer on its thread, stopped and joined when dropped, so a failed walk
/// does not leave it changing a folder that is being removed.
struct Racing {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Racing {
    fn start(mut racer: Racer) -> Racing {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                racer.step();
            }
        });
        Racing {
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take().expect("joined once");
        thread.join().expect("the racer ran to the end");
    }
}

impl Drop for Racing {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One walk's problems (each prefixed with `what`) and how many names it found gone.
fn check_walk(
    what: &str,
    log: &Log,
    link_target: &State,
    walked: (Entry, Census),
    follow: bool,
) -> (Vec<String>, u64) {
    let (entry, census) = walked;
    let mut check = Check {
        log,
        link_target: link_target.clone(),
        follow,
        out: Checked::default(),
        listed: HashSet::new(),
        elsewhere: Vec::new(),
    };
    check.entry(PathBuf::new(), &entry);
    let checked = check.finish();
    let mut found = census_problems(&census, &checked);
    found.extend(checked.problems);
    let found = found.into_iter().map(|p| format!("{what}: {p}")).collect();
    (found, checked.vanished)
}

#[test]
fn entries_changing_under_the_walk_are_reported_as_one_real_state_or_as_gone() {
    let dir = temp_dir();
    let log = Arc::new(Mutex::new(Log::default()));
    let racing = Racing::start(Racer::new(dir.path(), Arc::clone(&log)));
    let anchor = fs::metadata(dir.path().join("anchor")).expect("stat anchor");
    let link_target = state_of(Path::new(""), &anchor);
    let tree = dir.path().join("tree");
    let options = |follow_symlinks, one_file_system| ListOptions {
        follow_symlinks,
        one_file_system,
    };
    let sets = [
        ("no flags", options(false, false)),
        ("-L", options(true, false)),
        ("-x", options(false, true)),
    ];
    let (mut problems, mut vanished) = (Vec::new(), 0);
    for (flags, options) in sets {
        for walk in 0..WALKS {
            let walked = walk_once(&tree, options);
            let log = log.lock().expect("log lock");
            let what = format!("{flags}, walk {walk}");
            let (found, gone) =
                check_walk(&what, &log, &link_target, walked, options.follow_symlinks);
            problems.extend(found);
            vanished += gone;
        }
    }
    racing.finish();
    let shown: Vec<&String> = problems.iter().take(20).collect();
    assert!(
        problems.is_empty(),
        "{} problems, the first: {shown:#?}",
        problems.len()
    );
    // A racer that never beat a stat would leave this test checking a still tree.
    assert!(
        vanished > 0,
        "no walk met a vanished name: the race was not run"
    );
}
