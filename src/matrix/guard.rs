//! The tree-identity guard of one tree: after every arm, whether the tree still
//! matches the fingerprint taken before any arm ran, and whom to blame when not.

use std::path::Path;

use crate::fixtures::fingerprint::{self, Fingerprint};
use crate::outcome::{Blame, Verdict};

/// The tree-identity guard of one tree: its fingerprint before any arm ran, and the
/// first change seen, so later cases can say the tree was already changed.
pub(super) struct Guard<'a> {
    pub root: &'a Path,
    pub depth: fingerprint::Depth,
    pub baseline: &'a Fingerprint,
    pub first_change: std::sync::Mutex<Option<String>>,
}

/// Changed paths named per tree-changed case.
const CHANGES_SHOWN: usize = 10;

impl Guard<'_> {
    /// After an arm: `Some(verdict)` if the tree no longer matches the baseline.
    pub fn check(&self, arm: Blame, case: &str) -> Option<Verdict> {
        if fingerprint::unchanged(self.root, self.depth, self.baseline) {
            return None;
        }
        let now = fingerprint::take(self.root, self.depth);
        let mut changes = fingerprint::changes(self.baseline, &now, CHANGES_SHOWN);
        let mut first = self.first_change.lock().unwrap_or_else(|p| p.into_inner());
        // Only the first arm to see a change is named; later cases ran on a tree
        // that was already changed and blame nobody of their own.
        let blamed = match &*first {
            Some(earlier) => {
                changes.insert(
                    0,
                    format!("(the tree was already changed: first seen after {earlier})"),
                );
                Blame::Earlier
            }
            None => {
                *first = Some(format!("the {} arm of {case}", arm.name()));
                arm
            }
        };
        Some(Verdict::TreeChanged {
            arm: blamed,
            changes,
        })
    }
}
