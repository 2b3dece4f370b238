//! The simplifications after the entries are few: a folder that holds one entry
//! replaced by that entry, files cut to nothing and then to one block, xattrs
//! dropped, and long names made one letter. Each is a trial kept only when the difference holds;
//! cuts and renames go by delta debugging over the candidates, so a tree whose
//! every file may be cut takes one trial, not one per file.

use std::collections::{HashSet, VecDeque};
use std::ffi::OsString;
use std::path::PathBuf;

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
    loop {
        let Some((folder, child)) = next_single(s, &tried) else {
            return true;
        };
        tried.insert(folder.clone());
        let undo = match s.work.flatten(&folder, &child) {
            Ok(Some(undo)) => undo,
            Ok(None) | Err(_) => continue,
        };
        let what = format!("{} in the place of {}", child.display(), folder.display());
        let result = s.trial(Phase::Flatten, what);
        if s.settle(undo, result) == Tried::Stop {
            return false;
        }
    }
}

/// The first folder not tried yet that holds exactly one entry, with that entry.
fn next_single(s: &Shrinker, tried: &HashSet<PathBuf>) -> Option<(PathBuf, PathBuf)> {
    let all = s.work.all().ok()?;
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

/// Files longer than `len`, cut to it.
fn cut(s: &mut Shrinker, len: u64, phase: Phase) -> bool {
    let Ok(all) = s.work.all() else {
        return true;
    };
    let files: Vec<PathBuf> = (all.into_iter())
        .filter(|c| !c.is_dir)
        .map(|c| c.rel)
        .filter(|rel| s.work.cuttable(rel, len))
        .collect();
    let (_, stopped) = ddmin::minimize(files, &mut |chunk| {
        let undo = match s.work.cut(chunk, len) {
            Ok(undo) => undo,
            Err(_) => return Tried::Lost,
        };
        let what = format!("{} cut to {len} bytes", describe_chunk(chunk));
        let result = s.trial(phase, what);
        s.settle(undo, result)
    });
    !stopped
}

/// Entries with xattrs, without them.
#[cfg(unix)]
fn drop_xattrs(s: &mut Shrinker) -> bool {
    let Ok(all) = s.work.all() else {
        return true;
    };
    let marked: Vec<PathBuf> = (all.into_iter())
        .map(|c| c.rel)
        .filter(|rel| s.work.has_xattrs(rel))
        .collect();
    let (_, stopped) = ddmin::minimize(marked, &mut |chunk| {
        let undo = match s.work.drop_xattrs(chunk) {
            Ok(undo) => undo,
            Err(_) => return Tried::Lost,
        };
        let what = format!("{} without xattrs", describe_chunk(chunk));
        let result = s.trial(Phase::DropXattrs, what);
        s.settle(undo, result)
    });
    !stopped
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
        let Ok(children) = s.work.children(&folder) else {
            continue;
        };
        let long: Vec<Child> = (children.iter())
            .filter(|c| c.rel.file_name().is_some_and(|n| n.len() > 1))
            .cloned()
            .collect();
        let (_, stopped) = ddmin::minimize(long, &mut |chunk| rename_chunk(s, &folder, chunk));
        if stopped {
            return false;
        }
        let Ok(now) = s.work.children(&folder) else {
            continue;
        };
        folders.extend(now.into_iter().filter(|c| c.is_dir).map(|c| c.rel));
    }
    true
}

/// One trial with every entry of `chunk` given a one-letter name its folder
/// does not hold yet.
fn rename_chunk(s: &mut Shrinker, folder: &std::path::Path, chunk: &[Child]) -> Tried {
    let Ok(present) = s.work.children(folder) else {
        return Tried::Lost;
    };
    let mut taken: Vec<OsString> = (present.iter())
        .filter_map(|c| c.rel.file_name().map(|n| n.to_os_string()))
        .collect();
    let mut renames = Vec::new();
    for child in chunk {
        let name = short_name(&taken, 0);
        taken.push(name.clone());
        renames.push((child.rel.clone(), folder.join(&name)));
    }
    let undo = match s.work.rename(&renames) {
        Ok(undo) => undo,
        Err(_) => return Tried::Lost,
    };
    let rels: Vec<PathBuf> = chunk.iter().map(|c| c.rel.clone()).collect();
    let what = format!("{} renamed short", describe_chunk(&rels));
    let result = s.trial(Phase::ShortNames, what);
    s.settle(undo, result)
}
