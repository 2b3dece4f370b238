//! The parallel floor of a wide tree: the floor's calls (`floor.rs`), made by one
//! thread per core sharing a stack of open folders. A thread takes a folder, reads
//! its listing, stats each entry as it is read, opens the subfolders it found,
//! closes the folder and puts the subfolders on the stack; a thread that finds the
//! stack empty sleeps until another puts something there or all are done. It keeps
//! nothing but counts, so its wall is what a walk that makes these calls from a
//! multi-threaded process takes with the least work of its own: the kernel charges a
//! process of several threads more for each call (a descriptor's reference is
//! counted), which the serial floor does not pay.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::{Condvar, Mutex};

use rustix::fs::CWD;

use crate::floor::{list_and_stat, open, raise_descriptor_limit, stat, LISTING_BUFFER};

/// Entries statted below and including `root`, and their allocated 512-byte blocks.
pub fn walk(root: &Path, threads: usize) -> io::Result<(u64, u64)> {
    raise_descriptor_limit();
    let mut totals = (0, 0);
    stat(CWD, root, &mut totals)?;
    let root = open(CWD, root)?;
    grow_descriptor_table(&root);
    let stack = Stack {
        state: Mutex::new(State {
            folders: vec![root],
            working: 0,
            sleeping: 0,
            failed: false,
        }),
        wake: Condvar::new(),
    };
    let walked: Vec<io::Result<(u64, u64)>> = std::thread::scope(|scope| {
        let others: Vec<_> = (1..threads.max(1))
            .map(|_| scope.spawn(|| stack.work()))
            .collect();
        let mine = stack.work();
        let theirs = others
            .into_iter()
            .map(|t| t.join().expect("a floor thread"));
        std::iter::once(mine).chain(theirs).collect()
    });
    for counted in walked {
        let (entries, blocks) = counted?;
        totals.0 += entries;
        totals.1 += blocks;
    }
    Ok(totals)
}

/// Descriptors the table has room for before the threads start.
const TABLE_ROOM: i32 = 4096;

/// Grows the descriptor table while this process has one thread: in a process of
/// several, each growth (at 64, 128, 256 ... descriptors) waits for an RCU grace
/// period, milliseconds here, and a folder's subfolders are all opened at once.
fn grow_descriptor_table(any_open: &OwnedFd) {
    // Closed at once: the table keeps its size.
    let _high = rustix::io::fcntl_dupfd_cloexec(any_open, TABLE_ROOM - 1);
}

struct Stack {
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    folders: Vec<OwnedFd>,
    /// Threads walking a folder they took, which may put more on the stack.
    working: usize,
    sleeping: usize,
    /// A thread's call failed: the others stop at their next take.
    failed: bool,
}

impl Stack {
    /// Walks folders from the stack until none is left and no thread can add any.
    fn work(&self) -> io::Result<(u64, u64)> {
        let mut totals = (0, 0);
        let mut buffer = vec![MaybeUninit::uninit(); LISTING_BUFFER];
        let mut finished = None;
        while let Some(fd) = self.take(finished.take()) {
            let mut found = Vec::new();
            if let Err(err) = one_folder(fd, &mut buffer, &mut totals, &mut found) {
                self.fail();
                return Err(err);
            }
            finished = Some(found);
        }
        Ok(totals)
    }

    /// Puts the subfolders of the folder this thread `finished`, if any, on the
    /// stack and takes the next folder, sleeping while the stack is empty and
    /// another thread may still fill it.
    fn take(&self, finished: Option<Vec<OwnedFd>>) -> Option<OwnedFd> {
        let mut state = self.state.lock().expect("the floor's stack");
        let found = finished.map_or_else(Vec::new, |found| {
            state.working -= 1;
            found
        });
        let woken = found.len().min(state.sleeping);
        state.folders.extend(found);
        // A futex wake is a system call the floor would otherwise not make: only a
        // sleeping thread is woken.
        for _ in 0..woken {
            self.wake.notify_one();
        }
        loop {
            if state.failed {
                return None;
            }
            if let Some(fd) = state.folders.pop() {
                state.working += 1;
                return Some(fd);
            }
            if state.working == 0 {
                self.wake.notify_all();
                return None;
            }
            state.sleeping += 1;
            state = self.wake.wait(state).expect("the floor's stack");
            state.sleeping -= 1;
        }
    }

    fn fail(&self) {
        self.state.lock().expect("the floor's stack").failed = true;
        self.wake.notify_all();
    }
}

/// Lists and stats one folder, then opens its subfolders into `found` and closes it.
fn one_folder(
    fd: OwnedFd,
    buffer: &mut [MaybeUninit<u8>],
    totals: &mut (u64, u64),
    found: &mut Vec<OwnedFd>,
) -> io::Result<()> {
    for name in list_and_stat(&fd, buffer, totals)? {
        found.push(open(&fd, &name)?);
    }
    Ok(())
}
