//! The bulk walk with a platform made of std's calls that gives fields for regular
//! files and links (a link's own, as Windows' listing does): it must print what the reference engine
//! prints, with and without `-L` and `-x`, and count what it listed and stat'ed.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::PathBuf;

use super::{list, BulkEntry, FolderListing, Platform};
use crate::walk::census::{Counters, CountsStats, ListingCall, StatCall};
use crate::walk::du::{self, Unit};
use crate::walk::stat::StatFields;
use crate::walk::{reference, FileKind, ListOptions, Listed, StatError};

/// std's calls; a folder is its path.
struct Portable;

impl Platform for Portable {
    type Folder = PathBuf;

    fn open(parent: Option<&PathBuf>, name: &OsStr, follow: bool) -> io::Result<PathBuf> {
        let path = parent.map_or_else(|| PathBuf::from(name), |p| p.join(name));
        let meta = if follow {
            fs::metadata(&path)?
        } else {
            fs::symlink_metadata(&path)?
        };
        if !meta.is_dir() {
            return Err(io::Error::from(io::ErrorKind::NotADirectory));
        }
        fs::read_dir(&path)?;
        Ok(path)
    }

    fn list(folder: &PathBuf, census: &Counters) -> FolderListing {
        let mut entries = Vec::new();
        let mut error = None;
        let reader = match fs::read_dir(folder) {
            Ok(reader) => reader,
            Err(err) => {
                return FolderListing {
                    entries,
                    error: Some(err),
                    call: ListingCall::ReadDir,
                }
            }
        };
        for item in reader {
            let dirent = match item {
                Ok(dirent) => dirent,
                Err(err) => {
                    error = Some(err);
                    break;
                }
            };
            let meta = fs::symlink_metadata(dirent.path());
            census.stat(StatCall::Fstatat);
            let fields = meta.ok().map(|m| StatFields::from_metadata(&m));
            let kind = fields.as_ref().map_or(FileKind::Unknown, |f| f.kind);
            entries.push(BulkEntry {
                name: dirent.file_name(),
                listed: Some(Listed { kind, ino: 0 }),
                fields: fields.filter(|f| matches!(f.kind, FileKind::File | FileKind::Symlink)),
            });
        }
        FolderListing {
            entries,
            error,
            call: ListingCall::ReadDir,
        }
    }

    fn stat(
        parent: Option<&PathBuf>,
        name: &OsStr,
        follow: bool,
        census: &Counters,
    ) -> Result<StatFields, StatError> {
        census.stat(StatCall::Fstatat);
        let path = parent.map_or_else(|| PathBuf::from(name), |p| p.join(name));
        reference::stat_path(&path, follow)
    }
}

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let at = |p: &str| dir.path().join(p);
    fs::create_dir_all(at("a/b/c")).unwrap();
    fs::write(at("a/f"), b"12345").unwrap();
    fs::write(at("a/b/c/g"), b"1").unwrap();
    fs::hard_link(at("a/f"), at("a/b/hard")).unwrap();
    std::os::unix::fs::symlink("a/b", at("to-b")).unwrap();
    std::os::unix::fs::symlink("missing", at("dangling")).unwrap();
    std::os::unix::fs::symlink("..", at("a/b/c/up")).unwrap();
    fs::create_dir(at("wide")).unwrap();
    for i in 0..(super::OPEN_AHEAD + 2) {
        fs::create_dir(at(&format!("wide/{i}"))).unwrap();
        fs::write(at(&format!("wide/{i}/x")), vec![0u8; i]).unwrap();
    }
    for i in 0..(super::CHUNKED_FOLDER + 10) {
        fs::write(at(&format!("wide/0/{i}")), b"").unwrap();
    }
    dir
}

#[test]
fn the_bulk_walk_prints_what_the_reference_prints() {
    let dir = tree();
    let operands = [OsString::from(dir.path()), dir.path().join("to-b").into()];
    for (follow, one_fs) in [(false, false), (true, false), (false, true), (true, true)] {
        let options = ListOptions {
            follow_symlinks: follow,
            one_file_system: one_fs,
        };
        let (bulk, _) = list::<Portable>(&operands, options);
        let oracle = reference::list(&operands, options);
        let (bulk, oracle) = (
            du::printed(&bulk, Unit::ApparentBytes, options),
            du::printed(&oracle, Unit::ApparentBytes, options),
        );
        let first_difference = (bulk.lines().zip(oracle.lines())).find(|(a, b)| a != b);
        assert!(
            bulk == oracle,
            "-L {follow}, -x {one_fs}: first difference {first_difference:?} (bulk, reference)"
        );
    }
}

#[test]
fn files_are_not_stat_again_and_every_folder_is_counted() {
    let dir = tree();
    let (_, census) = list::<Portable>(&[dir.path().into()], ListOptions::default());
    let folders = 4 + (super::OPEN_AHEAD + 2) as u64; // the root, a, a/b, a/b/c, wide/*
    assert_eq!(census.listed_by.read_dir, folders + 1, "{census:?}");
    let files = 3 + (super::OPEN_AHEAD + 2 + super::CHUNKED_FOLDER + 10) as u64;
    let links = 3;
    // One stat in the listing per entry, and one more for each entry that is not a
    // regular file or a link (and for the operand).
    let entries = census.listed();
    assert_eq!(
        census.fstatat,
        entries + (entries - files - links) + 1,
        "{census:?}"
    );
}
