//! The folders a tree's cases run in: one per case running at once, each handed
//! to the next case once its case is judged, and all removed after the tree's last
//! case. A case makes its captured streams over the files the case before it left,
//! and keeps the `HOME` that case left when it is still as made, so a matrix makes
//! a few folders and files per tree instead of several per case. That is cheap
//! everywhere and matters on ext4 without a journal, where every new inode is found
//! by a scan past the inodes freed in the last minutes: made per case, they cost
//! about half a millisecond each once a few hundred cases had run, an eighth of
//! eqcheck's own CPU over the 59 dust sets on an npm tree.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::cleanup;

/// The lanes of one tree's folder.
pub(super) struct Lanes<'a> {
    dir: &'a Path,
    /// Lane folders free for the next case, and how many were ever handed out.
    free: Mutex<(Vec<PathBuf>, usize)>,
}

impl<'a> Lanes<'a> {
    /// Lanes in `dir`, which exists; none is made until a case asks for one.
    pub fn new(dir: &'a Path) -> Lanes<'a> {
        Lanes {
            dir,
            free: Mutex::new((Vec::new(), 0)),
        }
    }

    /// Runs `case` with a lane folder no other running case holds, then frees it.
    /// A case that waits inside another (a worker of the pool taking up more work
    /// while it waits) gets a lane of its own.
    pub fn with_lane<T>(&self, case: impl FnOnce(&Path) -> T) -> T {
        let lane = {
            let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
            match free.0.pop() {
                Some(lane) => lane,
                None => {
                    free.1 += 1;
                    self.dir.join(format!("lane-{}", free.1))
                }
            }
        };
        let done = case(&lane);
        let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        free.0.push(lane);
        done
    }

    /// Removes every lane folder, with what the last cases left in them.
    pub fn remove(self) {
        let (lanes, _) = self.free.into_inner().unwrap_or_else(|p| p.into_inner());
        for lane in lanes {
            let _ = cleanup::remove_tree(&lane);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_is_reused_once_freed_and_never_shared_while_held() {
        let dir = tempfile::tempdir().unwrap();
        let lanes = Lanes::new(dir.path());
        let first = lanes.with_lane(Path::to_path_buf);
        assert_eq!(lanes.with_lane(Path::to_path_buf), first);
        let (outer, inner) = lanes.with_lane(|outer| {
            let inner = lanes.with_lane(Path::to_path_buf);
            (outer.to_path_buf(), inner)
        });
        assert_eq!(outer, first);
        assert_ne!(inner, outer);
    }

    #[test]
    fn removing_the_lanes_removes_what_their_cases_left() {
        let dir = tempfile::tempdir().unwrap();
        let lanes = Lanes::new(dir.path());
        lanes.with_lane(|lane| {
            std::fs::create_dir(lane).unwrap();
            std::fs::write(lane.join("reference.out"), b"x").unwrap();
        });
        lanes.remove();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
