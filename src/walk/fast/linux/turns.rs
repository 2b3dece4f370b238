//! The hand-over of a chain's levels between the two workers that take turns
//! walking it (see [`super::chain`]): a level's folder, once opened, is handed over
//! here while the worker that opened it finishes the level above. A worker waiting
//! for its turn spins a short while, since a level's turn comes within microseconds
//! and waking a sleeping thread takes tens of them, then sleeps until woken.
//!
//! Whoever holds a level always hands over the next one or ends the chain, and a
//! worker that handed a level over may take it back itself, so the chain is walked
//! whole even when the second worker never comes (a busy or one-thread pool).

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// How long a worker spins for its turn before it sleeps: several levels' time,
/// so a turn is taken at once in a chain of ordinary folders, while a chain on a
/// slow file system (where a level takes a network round trip) costs a core only
/// this long per level.
const SPIN_FOR: Duration = Duration::from_micros(50);
/// Spins between two looks at the clock.
const SPINS_PER_LOOK: u32 = 64;

/// A chain's next level, between the worker that opened it and the one that walks it.
pub(super) struct Turns {
    /// Whether a worker must leave the level it handed over to the other, so the
    /// two strictly alternate: how the tests make sure both take turns.
    alternate: bool,
    /// Whether `state` holds a level or the end: read while spinning, without the lock.
    ready: AtomicBool,
    state: Mutex<State>,
    woken: Condvar,
}

struct State {
    next: Next,
    /// Workers asleep in [`Turns::take`], the only ones a hand-over must wake.
    sleepers: u32,
}

enum Next {
    Nothing,
    /// A folder opened for the level at this depth of the chain (the top is 0), and
    /// the worker that handed it over, when the workers alternate.
    Level(OwnedFd, u32, Option<ThreadId>),
    Ended,
}

impl Turns {
    pub(super) fn new() -> Turns {
        Turns {
            alternate: false,
            ready: AtomicBool::new(false),
            state: Mutex::new(State {
                next: Next::Nothing,
                sleepers: 0,
            }),
            woken: Condvar::new(),
        }
    }

    /// Turns in which a worker never takes the level it handed over, so the two
    /// workers strictly alternate (both must take turns, or the chain waits).
    #[cfg(test)]
    pub(super) fn alternating() -> Turns {
        Turns {
            alternate: true,
            ..Turns::new()
        }
    }

    /// Hands over the folder of the level at `depth`. Only the worker that took the
    /// level above hands one over, and not twice, so nothing is handed over twice
    /// before it is taken.
    pub(super) fn hand_over(&self, folder: OwnedFd, depth: u32) {
        let by = self.alternate.then(|| std::thread::current().id());
        self.publish(Next::Level(folder, depth, by));
    }

    /// Ends the chain: every worker waiting for a turn, and every one to come, stops.
    pub(super) fn end(&self) {
        self.publish(Next::Ended);
    }

    fn publish(&self, next: Next) {
        let mut state = self.lock();
        if !matches!(state.next, Next::Ended) {
            state.next = next;
        }
        self.ready.store(true, Ordering::Release);
        let sleepers = state.sleepers;
        drop(state);
        if sleepers > 0 {
            self.woken.notify_all();
        }
    }

    /// The next level's folder and depth, once handed over; `None` once the chain
    /// has ended.
    pub(super) fn take(&self) -> Option<(OwnedFd, u32)> {
        self.spin_until_ready();
        let me = self.alternate.then(|| std::thread::current().id());
        let mut state = self.lock();
        loop {
            match &state.next {
                Next::Level(_, _, by) if by.is_none() || *by != me => {
                    let Next::Level(folder, depth, _) =
                        std::mem::replace(&mut state.next, Next::Nothing)
                    else {
                        unreachable!("matched a level above")
                    };
                    self.ready.store(false, Ordering::Relaxed);
                    return Some((folder, depth));
                }
                Next::Ended => return None,
                Next::Nothing | Next::Level(..) => {
                    state.sleepers += 1;
                    state = self
                        .woken
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                    state.sleepers -= 1;
                }
            }
        }
    }

    fn spin_until_ready(&self) {
        let started = Instant::now();
        let mut spins = 0u32;
        while !self.ready.load(Ordering::Acquire) {
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins % SPINS_PER_LOOK == 0 && started.elapsed() >= SPIN_FOR {
                return;
            }
        }
    }

    // A worker that panicked while holding the lock left the state whole: every
    // change to it is a single assignment.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Ends the chain when dropped, so a worker that stops for any reason, a panic
/// included, never leaves the other waiting for a turn that cannot come.
pub(super) struct EndsTheChain<'t>(pub(super) &'t Turns);

impl Drop for EndsTheChain<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_folder() -> OwnedFd {
        rustix::fs::open(
            ".",
            rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap()
    }

    #[test]
    fn a_level_handed_over_is_taken_once_and_the_end_stays() {
        let turns = Turns::new();
        turns.hand_over(a_folder(), 7);
        assert_eq!(turns.take().map(|(_, depth)| depth), Some(7));
        turns.end();
        assert!(turns.take().is_none());
        assert!(turns.take().is_none(), "the end is seen by every worker");
        turns.hand_over(a_folder(), 8);
        assert!(
            turns.take().is_none(),
            "nothing is handed over past the end"
        );
    }

    #[test]
    fn alternating_workers_leave_their_own_level_to_the_other() {
        let turns = Turns::alternating();
        turns.hand_over(a_folder(), 1);
        let taken_there = std::thread::scope(|scope| {
            let there = scope.spawn(|| {
                let first = turns.take().map(|(_, depth)| depth);
                turns.hand_over(a_folder(), 2);
                // Its own level 2 is left for this test's thread; 3 comes back.
                (first, turns.take().map(|(_, depth)| depth))
            });
            assert_eq!(turns.take().map(|(_, depth)| depth), Some(2));
            turns.hand_over(a_folder(), 3);
            there.join().unwrap()
        });
        assert_eq!(taken_there, (Some(1), Some(3)));
    }

    #[test]
    fn a_sleeping_worker_is_woken_by_a_hand_over() {
        let turns = std::sync::Arc::new(Turns::new());
        let (taken, taken_here) = std::sync::mpsc::channel();
        let taker = std::sync::Arc::clone(&turns);
        std::thread::spawn(move || taken.send(taker.take().map(|(_, depth)| depth)));
        // Long past the spin, so the taker is asleep when the level comes.
        std::thread::sleep(SPIN_FOR * 100);
        turns.hand_over(a_folder(), 3);
        let woken = taken_here.recv_timeout(Duration::from_secs(30));
        assert_eq!(woken, Ok(Some(3)), "the sleeping taker was not woken");
    }

    #[test]
    fn a_worker_that_stops_ends_the_chain_for_the_other() {
        let turns = Turns::new();
        std::thread::scope(|scope| {
            let taker = scope.spawn(|| turns.take().is_none());
            drop(EndsTheChain(&turns));
            assert!(taker.join().unwrap());
        });
    }
}
