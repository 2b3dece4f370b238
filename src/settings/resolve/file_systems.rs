//! `--fs` and `fs = [...]`: the file systems every tree named by spec is built
//! on, each word checked at the place it was written. A tree on an image becomes
//! a tree of its own, named `TREE@FS`, so case ids, shards and every report carry
//! the file system without knowing about it; on the temp folder's own file system
//! (`native`) a tree keeps its plain name, so the ids of runs without `--fs` stay
//! what they were.

use super::SettingsError;
use crate::fsimage::{self, FileSystem};
use crate::matrix::TreeSource;
use crate::settings::Given;

/// The file systems asked for, in the order given, `native` alone when none
/// was. Asking for an image where none can be made (not Linux, not root) is a
/// mistake at that word; so is naming a file system this machine lacks the
/// tools or driver for, except through `all`, which runs the others and warns.
pub(super) fn chosen(
    named: &[Given<String>],
    warnings: &mut Vec<String>,
) -> Result<Vec<FileSystem>, SettingsError> {
    let mut chosen = Vec::new();
    for given in named {
        let listed = fsimage::parse_list(&given.value).map_err(|m| SettingsError::at(given, m))?;
        for fs in listed {
            if chosen.contains(&fs) || !usable(fs, given, warnings)? {
                continue;
            }
            chosen.push(fs);
        }
    }
    if chosen.is_empty() {
        chosen.push(FileSystem::Native);
    }
    Ok(chosen)
}

/// Whether `fs` can be used; `Ok(false)` (and a warning) for one `all` brought in
/// that this machine cannot make.
fn usable(
    fs: FileSystem,
    given: &Given<String>,
    warnings: &mut Vec<String>,
) -> Result<bool, SettingsError> {
    if !fs.is_image() {
        return Ok(true);
    }
    if let Some(reason) = fsimage::images_refused() {
        return Err(SettingsError::at(given, format!("{fs}: {reason}")));
    }
    let Some(reason) = fsimage::unavailable(fs) else {
        return Ok(true);
    };
    let named_itself = given.value.split(',').any(|word| word.trim() == fs.name());
    if named_itself {
        return Err(SettingsError::at(given, format!("{fs}: {reason}")));
    }
    warnings.push(format!(
        "file system {fs} is unavailable here, left out of `all`: {reason}"
    ));
    Ok(false)
}

/// Every spec tree once per file system; a folder given by path once, read
/// where it is (with a warning when images were asked for).
pub(super) fn place(
    trees: Vec<TreeSource>,
    file_systems: &[FileSystem],
    warnings: &mut Vec<String>,
) -> Vec<TreeSource> {
    let images = file_systems.iter().any(|fs| fs.is_image());
    let mut placed = Vec::new();
    for tree in trees {
        let spec = match tree {
            TreeSource::Spec(spec) => spec,
            other => {
                if images {
                    warnings.push(format!(
                        "tree {} is a folder, read where it is on its own file system: --fs builds only trees named by spec",
                        other.name()
                    ));
                }
                placed.push(other);
                continue;
            }
        };
        for &fs in file_systems {
            placed.push(match fs {
                FileSystem::Native => TreeSource::Spec(spec.clone()),
                _ => TreeSource::Image {
                    name: format!("{}@{fs}", spec.name),
                    spec: spec.clone(),
                    fs,
                },
            });
        }
    }
    placed
}
