//! The gate between writing a result that must be whole and the interrupt's
//! removal of temp folders: a write reads a temp tree (a shrink's best case is
//! described from its working copy) and must not see it half removed, or it
//! writes something that is not the result at all. The removal waits for a write
//! under way; once it has begun, no write starts.

use std::sync::Mutex;

/// Open until `close`; a write passes only while it is open.
pub struct Gate {
    closed: Mutex<bool>,
}

impl Gate {
    pub const fn new() -> Gate {
        Gate {
            closed: Mutex::new(false),
        }
    }

    /// Runs `write` unless the gate is closed; the gate cannot close while it
    /// runs. None: closed, nothing written.
    pub fn pass<T>(&self, write: impl FnOnce() -> T) -> Option<T> {
        let closed = self.closed.lock().unwrap_or_else(|p| p.into_inner());
        (!*closed).then(write)
    }

    /// Closes the gate, once any write under way has ended.
    pub fn close(&self) {
        *self.closed.lock().unwrap_or_else(|p| p.into_inner()) = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[test]
    fn closing_waits_for_the_write_under_way_and_no_write_passes_after() {
        let gate = Gate::new();
        let written = AtomicBool::new(false);
        let (gate, written) = (&gate, &written);
        std::thread::scope(|scope| {
            let (started, wait) = std::sync::mpsc::channel();
            scope.spawn(move || {
                gate.pass(|| {
                    started.send(()).unwrap();
                    std::thread::sleep(Duration::from_millis(200));
                    written.store(true, Ordering::SeqCst);
                })
            });
            wait.recv().unwrap();
            gate.close();
            assert!(
                written.load(Ordering::SeqCst),
                "the gate closed in the middle of a write"
            );
        });
        assert_eq!(gate.pass(|| "written"), None);
    }
}
