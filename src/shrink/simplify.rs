//! The simplifications after the entries are few: a folder that holds one entry
//! replaced by that entry, files cut to nothing and then to one block, xattrs
//! dropped, and long names made one letter. Each is a trial kept only when the
//! difference holds; cuts, xattrs and renames go by delta debugging over the
//! candidates, so a tree whose every file may be cut takes one trial, not one per
//! file.

use std::collections::{HashSet, VecDeque};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::attempt::Change;
use super::ddmin::{self, Tried};
use super::tree::{short_name, Child, ONE_BLOCK};
use super::{describe_chunk, Phase, Shrinker};

/// Every simplification in turn; false once told to stop.
pub(super) fn all(s: &mut Shrinker) -> bool {
    flatten(s)
        && cut(s, 0, Phase::CutToEmpty)
        && cut(s, ONE_BLOCK, Phase::CutToOneBlock)
        && drop_xattrs(s)
        && short_names(s)
}

/// Folders of one entry, flattened one trial at a time, until none is left
/// untried.
fn flatten(s: &mut Shrinker) -> bool {
    let mut tried: HashSet<PathBuf> = HashSet::new();
    while let Some((folder, child)) = next_single(s, &tried) {
        tried.insert(folder.clone());
        let what = format!("{} in the place of {}", child.display(), folder.display());
        let one = s.tree_try(what, Change::Flatten(folder, child));
        if s.attempt_one(Phase::Flatten, one) == Tried::Stop {
            return false;
        }
    }
    true
}

/// The first folder not tried yet that holds exactly one entry, with that entry.
fn next_single(s: &Shrinker, tried: &HashSet<PathBuf>) -> Option<(PathBuf, PathBuf)> {
    let all = s.work().all().ok()?;
    all.iter()
        .filter(|c| c.is_dir && !tried.contains(&c.rel))
        .find_map(|folder| {
            let mut inside = all.iter().filter(|c| c.rel.parent() == Some(&folder.rel));
            match (inside.next(), inside.next()) {
                (Some(only), None) => Some((folder.rel.clone(), only.rel.clone())),
                _ => None,
            }
        })
}

/// Delta debugging over `candidates`, each chunk tried changed by `change`.
fn each_chunk(
    s: &mut Shrinker,
    phase: Phase,
    candidates: Vec<PathBuf>,
    how: &str,
    change: &dyn Fn(Vec<PathBuf>) -> Change,
) -> bool {
    let jobs = s.jobs();
    let (_, stopped) = ddmin::minimize_in_batches(candidates, jobs, &mut |chunks| {
        let tries = (chunks.iter())
            .map(|chunk| {
                s.tree_try(
                    format!("{} {how}", describe_chunk(chunk)),
                    change(chunk.to_vec()),
                )
            })
            .collect();
        s.attempt(phase, tries)
    });
    !stopped
}

/// Files longer than `len`, cut to it.
fn cut(s: &mut Shrinker, len: u64, phase: Phase) -> bool {
    let Ok(all) = s.work().all() else {
        return true;
    };
    let files: Vec<PathBuf> = (all.into_iter())
        .filter(|c| !c.is_dir)
        .map(|c| c.rel)
        .filter(|rel| s.work().cuttable(rel, len))
        .collect();
    each_chunk(s, phase, files, &format!("cut to {len} bytes"), &|rels| {
        Change::Cut(rels, len)
    })
}

/// Entries with xattrs, without them.
#[cfg(unix)]
fn drop_xattrs(s: &mut Shrinker) -> bool {
    let Ok(all) = s.work().all() else {
        return true;
    };
    let marked: Vec<PathBuf> = (all.into_iter())
        .map(|c| c.rel)
        .filter(|rel| s.work().has_xattrs(rel))
        .collect();
    each_chunk(
        s,
        Phase::DropXattrs,
        marked,
        "without xattrs",
        &Change::DropXattrs,
    )
}

/// Windows keeps no xattrs the builder makes.
#[cfg(not(unix))]
fn drop_xattrs(_s: &mut Shrinker) -> bool {
    true
}

/// Names longer than one character made one letter, folder by folder from the
/// root down.
fn short_names(s: &mut Shrinker) -> bool {
    let mut folders = VecDeque::from([PathBuf::new()]);
    while let Some(folder) = folders.pop_front() {
        let Ok(children) = s.work().children(&folder) else {
            continue;
        };
        let long: Vec<Child> = (children.iter())
            .filter(|c| c.rel.file_name().is_some_and(|n| n.len() > 1))
            .cloned()
            .collect();
        let jobs = s.jobs();
        let (_, stopped) = ddmin::minimize_in_batches(long, jobs, &mut |chunks| {
            let tries = (chunks.iter())
                .map(|chunk| {
                    let rels: Vec<PathBuf> = chunk.iter().map(|c| c.rel.clone()).collect();
                    let what = format!("{} renamed short", describe_chunk(&rels));
                    s.tree_try(what, Change::Rename(renames(s, &folder, chunk)))
                })
                .collect();
            s.attempt(Phase::ShortNames, tries)
        });
        if stopped {
            return false;
        }
        let Ok(now) = s.work().children(&folder) else {
            continue;
        };
        folders.extend(now.into_iter().filter(|c| c.is_dir).map(|c| c.rel));
    }
    true
}

/// Each entry of `chunk` with a one-letter name its folder does not hold yet.
fn renames(s: &Shrinker, folder: &Path, chunk: &[Child]) -> Vec<(PathBuf, PathBuf)> {
    let present = s.work().children(folder).unwrap_or_default();
    let mut taken: Vec<OsString> = (present.iter())
        .filter_map(|c| c.rel.file_name().map(|n| n.to_os_string()))
        .collect();
    let mut renames = Vec::new();
    for child in chunk {
        // Asked of the disk too: on a file system that folds case, `a` is taken
        // by `A`, and a rename onto it would replace that entry.
        let mut index = 0;
        let name = loop {
            let name = short_name(&taken, index);
            let on_disk = s.work().root.join(folder).join(&name);
            if std::fs::symlink_metadata(&on_disk).is_err() {
                break name;
            }
            taken.push(name);
            index += 1;
        };
        taken.push(name.clone());
        renames.push((child.rel.clone(), folder.join(&name)));
    }
    renames
}
