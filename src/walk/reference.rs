//! The reference engine: `std::fs::read_dir` plus a full-path `symlink_metadata` (or
//! `metadata` with `-L`) per entry, serial, in the order the OS lists. It is the
//! oracle the fast engine is held to, so it stays short enough to trust by reading.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::Path;

use super::stat::StatFields;
use super::{should_descend, Contents, Entry, Identity, ListOptions, StatError};

pub fn list(operands: &[OsString], options: ListOptions) -> Vec<Entry> {
    let mut listed_once = HashSet::new();
    operands
        .iter()
        .map(|operand| {
            let path = Path::new(operand);
            let stat = stat_path(path, options.follow_symlinks);
            let root_dev = stat.as_ref().ok().and_then(|s| s.dev).map(|d| d.value);
            let contents = match &stat {
                Ok(fields) => contents_of(path, fields, root_dev, options, &mut listed_once),
                Err(_) => Contents::None,
            };
            Entry {
                name: operand.clone(),
                stat,
                contents,
            }
        })
        .collect()
}

/// Stats one path, through a symlink when following.
pub(super) fn stat_path(path: &Path, follow: bool) -> Result<StatFields, StatError> {
    if !follow {
        return fs::symlink_metadata(path)
            .map(|m| StatFields::from_metadata(&m))
            .map_err(StatError::Io);
    }
    match fs::metadata(path) {
        Ok(meta) => Ok(StatFields::from_metadata(&meta)),
        Err(err) if err.kind() == io::ErrorKind::NotFound && is_symlink(path) => {
            Err(StatError::DanglingLink)
        }
        Err(err) => Err(StatError::Io(err)),
    }
}

fn is_symlink(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

fn contents_of(
    path: &Path,
    fields: &StatFields,
    root_dev: Option<u64>,
    options: ListOptions,
    listed_once: &mut HashSet<Identity>,
) -> Contents {
    if !should_descend(fields, root_dev, options) {
        return Contents::None;
    }
    if options.follow_symlinks {
        if let Some(id) = fields.identity() {
            if !listed_once.insert(id) {
                return Contents::Elsewhere;
            }
        }
    }
    let reader = match fs::read_dir(path) {
        Ok(reader) => reader,
        Err(err) => {
            return Contents::Listed {
                entries: Vec::new(),
                error: Some(err),
            }
        }
    };
    let mut entries = Vec::new();
    let mut error = None;
    for item in reader {
        let dirent = match item {
            Ok(dirent) => dirent,
            Err(err) => {
                error = Some(err);
                break;
            }
        };
        let child = dirent.path();
        let stat = stat_path(&child, options.follow_symlinks);
        let contents = match &stat {
            Ok(f) => contents_of(&child, f, root_dev, options, listed_once),
            Err(_) => Contents::None,
        };
        entries.push(Entry {
            name: dirent.file_name(),
            stat,
            contents,
        });
    }
    Contents::Listed { entries, error }
}
