//! The tree-identity guard of one tree: whether the tree still matches the
//! fingerprint taken before any arm ran, and whom to blame when not. Where the tree
//! can be watched (inotify on Linux), the watch speaks after each arm and the tree is
//! fingerprinted fully only at the two ends (and to name what moved); elsewhere,
//! or once the watch has lost events, it is fingerprinted after every arm.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::watch::{Drained, TreeWatch};
use crate::fixtures::fingerprint::{self, Fingerprint};
use crate::outcome::{Blame, Verdict};

/// The tree-identity guard of one tree: its fingerprint before any arm ran, its
/// watch if it has one, and the first change seen, so later cases can say the tree
/// was already changed.
pub(crate) struct Guard<'a> {
    root: &'a Path,
    depth: fingerprint::Depth,
    baseline: &'a Fingerprint,
    first_change: Mutex<Option<String>>,
    /// None: the tree is fingerprinted after every arm.
    watch: Mutex<Option<TreeWatch>>,
    /// How the tree was guarded, as the report says it.
    how: Mutex<String>,
    /// Fingerprints taken, the baseline included.
    fingerprints: AtomicUsize,
    /// Arms that ran since the watch last spoke, and those running now.
    window: Mutex<Vec<String>>,
    running: Mutex<Vec<String>>,
}

/// Changed paths named per tree-changed case.
const CHANGES_SHOWN: usize = 10;

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl<'a> Guard<'a> {
    /// Guards the tree at `root` whose fingerprint before any arm is `baseline`,
    /// with its watch (from `watch::start`) or why it has none.
    pub fn new(
        root: &'a Path,
        depth: fingerprint::Depth,
        baseline: &'a Fingerprint,
        watch: Result<TreeWatch, String>,
    ) -> Guard<'a> {
        let (watch, how) = match watch {
            Ok(watch) => {
                let files = match watch.files() {
                    0 => String::new(),
                    n => format!(
                        " and {} with other links",
                        crate::counted::counted(n as u64, "file", "files")
                    ),
                };
                let folders = crate::counted::counted(watch.folders() as u64, "folder", "folders");
                let how = format!(
                    "watched (inotify on {folders}{files}), fingerprinted at the start and the end"
                );
                (Some(watch), how)
            }
            Err(why) => (None, format!("fingerprinted after every arm: {why}")),
        };
        Guard {
            root,
            depth,
            baseline,
            first_change: Mutex::new(None),
            watch: Mutex::new(watch),
            how: Mutex::new(how),
            fingerprints: AtomicUsize::new(1),
            window: Mutex::new(Vec::new()),
            running: Mutex::new(Vec::new()),
        }
    }

    /// How the tree was guarded, and how many fingerprints that took.
    pub fn report(&self) -> (String, usize) {
        (
            locked(&self.how).clone(),
            self.fingerprints.load(Ordering::Relaxed),
        )
    }

    /// Before an arm: it is running from now on, and in the window the watch
    /// speaks for.
    pub fn arm_started(&self, arm: Blame, case: &str) {
        let label = label(arm, case);
        locked(&self.running).push(label.clone());
        locked(&self.window).push(label);
    }

    /// After an arm: `Some(verdict)` if the tree no longer matches the baseline.
    pub fn check(&self, arm: Blame, case: &str) -> Option<Verdict> {
        let me = label(arm, case);
        locked(&self.running).retain(|l| *l != me);
        let mut watch = locked(&self.watch);
        let Some(watching) = watch.as_mut() else {
            drop(watch);
            return self.fingerprinted(arm, case);
        };
        match watching.drain() {
            Drained::Quiet => {
                self.window_spoke();
                drop(watch);
                self.already_changed()
            }
            Drained::Changed(events) => {
                // The window and the blame are settled before the lock goes: naming
                // what moved takes a whole fingerprint, and a check by another arm
                // meanwhile must see the tree as already changed, not as quiet.
                let window = self.window_spoke();
                let blamed = self.claim(arm, case);
                drop(watch);
                let mut changes = self.named_changes();
                if changes.is_empty() {
                    changes = events;
                }
                if window.len() > 1 {
                    changes.push(format!(
                        "(arms running while it changed: {})",
                        window.join(", ")
                    ));
                }
                Some(blamed.verdict(changes))
            }
            Drained::Overflowed => {
                *watch = None;
                *locked(&self.how) = "watched until the inotify queue overflowed, then fingerprinted after every arm".into();
                drop(watch);
                self.fingerprinted(arm, case)
            }
        }
    }

    /// After the last case: what the tree's final fingerprint finds moved that no
    /// arm was blamed for (a watch misses nothing it watches, but the two ends are
    /// compared all the same).
    pub fn finish(&self) -> Option<Vec<String>> {
        let watched = locked(&self.watch).is_some();
        if !watched || locked(&self.first_change).is_some() {
            return None;
        }
        let changes = self.named_changes();
        (!changes.is_empty()).then_some(changes)
    }

    /// The window of arms the watch just spoke for; those still running stay in it.
    fn window_spoke(&self) -> Vec<String> {
        let running = locked(&self.running).clone();
        std::mem::replace(&mut *locked(&self.window), running)
    }

    /// The fingerprint compared with the baseline: what moved, by path.
    fn named_changes(&self) -> Vec<String> {
        self.fingerprints.fetch_add(1, Ordering::Relaxed);
        let now = off_the_pool(|| fingerprint::take(self.root, self.depth));
        fingerprint::changes(self.baseline, &now, CHANGES_SHOWN)
    }

    /// A later case's verdict once the tree was seen changed.
    fn already_changed(&self) -> Option<Verdict> {
        let earlier = locked(&self.first_change).clone()?;
        Some(Verdict::TreeChanged {
            arm: Blame::Earlier,
            changes: vec![format!(
                "(the tree was already changed: first seen after {earlier})"
            )],
        })
    }

    /// The guard without a watch: a fingerprint after every arm.
    fn fingerprinted(&self, arm: Blame, case: &str) -> Option<Verdict> {
        self.fingerprints.fetch_add(1, Ordering::Relaxed);
        if off_the_pool(|| fingerprint::unchanged(self.root, self.depth, self.baseline)) {
            return None;
        }
        let changes = self.named_changes();
        Some(self.blame(arm, case, changes))
    }

    /// Only the first arm to see a change is named; later cases ran on a tree that
    /// was already changed and blame nobody of their own.
    fn blame(&self, arm: Blame, case: &str, changes: Vec<String>) -> Verdict {
        self.claim(arm, case).verdict(changes)
    }

    /// The change is this arm's if no arm saw one before it.
    fn claim(&self, arm: Blame, case: &str) -> Claimed {
        let mut first = locked(&self.first_change);
        match &*first {
            Some(earlier) => Claimed::Earlier(earlier.clone()),
            None => {
                *first = Some(label(arm, case));
                Claimed::First(arm)
            }
        }
    }
}

/// Whom a tree change is pinned on: the arm that saw it first, or an arm before.
enum Claimed {
    First(Blame),
    Earlier(String),
}

impl Claimed {
    fn verdict(self, mut changes: Vec<String>) -> Verdict {
        let arm = match self {
            Claimed::First(arm) => arm,
            Claimed::Earlier(earlier) => {
                changes.insert(
                    0,
                    format!("(the tree was already changed: first seen after {earlier})"),
                );
                Blame::Earlier
            }
        };
        Verdict::TreeChanged { arm, changes }
    }
}

/// Runs a fingerprint from a thread of its own. A case runs on a worker of the
/// matrix's pool, and a worker waiting on the walk's pool runs other cases of its
/// own pool meanwhile: one started inside a check would be judged before the
/// check that found its tree changed had said so.
fn off_the_pool<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(work)
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn label(arm: Blame, case: &str) -> String {
    format!("the {} arm of {case}", arm.name())
}

// Unix only: the tests change a file's mode.
#[cfg(all(test, unix))]
mod tests;
