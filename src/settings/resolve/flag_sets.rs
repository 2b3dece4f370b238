//! Which flag-set file a run uses and which of its groups: the one named, the one
//! `--sets` names, or the built-in one named after the reference program, else
//! `walk`; each mistake reported where the file or the groups were given.

use std::path::Path;

use super::{SettingsError, DEFAULT_SETS};
use crate::flagset::{self, FlagSetFile};
use crate::matrix::arm::Arm;
use crate::settings::{Given, Layer, Origin};

/// The built-in flag sets a program's file name points to: the one built-in name
/// among the parts of the name between `-`, `_` and `.` (`dust-old`, `du_9.4`,
/// `new.dust`); `bfs` takes `find`'s. A name with two (`du-dust`) points nowhere.
pub(super) fn named_after(stem: &str) -> Option<&'static str> {
    let mut found: Vec<&'static str> = stem
        .split(['-', '_', '.'])
        .filter_map(|part| {
            let part = if part == "bfs" { "find" } else { part };
            flagset::builtin_names().find(|name| *name == part)
        })
        .collect();
    found.dedup();
    match found[..] {
        [one] => Some(one),
        _ => None,
    }
}

/// The flag-set file and the groups the run selects from it. The file is
/// `flagsets` (a path or a built-in name; the file's `sets` naming a file is read
/// as it), or a file `--sets` names, or the built-in file named after the reference
/// program (`dust`, `du`, `find`; `bfs` takes `find`'s), or `walk`.
pub(super) fn chosen(
    options: &Layer,
    reference: &Arm,
    warnings: &mut Vec<String>,
) -> Result<(FlagSetFile, Vec<String>), SettingsError> {
    let sets_file = (options.sets.as_ref()).filter(|sets| sets.names_a_flag_set_file());
    let file = match (&options.flagsets, sets_file) {
        (Some(named), Some(sets)) => {
            let message = format!(
                "names a flag-set file, and so does {}: keep one (the sets may then name groups of it)",
                flag_or_key(&named.origin)
            );
            return Err(SettingsError::at(sets, message));
        }
        (Some(named), None) => named_flag_sets(named)?,
        (None, Some(sets)) => load(sets, &sets.origin.path(&sets.value))?,
        (None, None) if reference.is_eqcheck => builtin("walk"),
        (None, None) => after_the_reference(reference, warnings),
    };
    let groups = match options.sets.as_ref().filter(|_| sets_file.is_none()) {
        Some(selector) => file
            .select(&selector.value)
            .map_err(|err| SettingsError::at(selector, groups_error(selector, err)))?,
        None => file
            .select(DEFAULT_SETS)
            .expect("`all` selects every group"),
    };
    let groups = groups.iter().map(|g| g.name.clone()).collect();
    Ok((file, groups))
}

/// Why the sets name no groups, and, when a file of that name is there, how to
/// name it as the flag-set file instead.
fn groups_error(selector: &Given<String>, err: impl std::fmt::Display) -> String {
    let written = selector.origin.path(&selector.value);
    match Path::new(&written).is_file() {
        true => format!(
            "{err}; to read the file `{}` as the flag-set file, write it with its folder: ./{}",
            selector.value, selector.value
        ),
        false => err.to_string(),
    }
}

fn builtin(name: &str) -> FlagSetFile {
    flagset::builtin(name).expect("a built-in name")
}

fn after_the_reference(reference: &Arm, warnings: &mut Vec<String>) -> FlagSetFile {
    let stem = (reference.command.first().map(Path::new))
        .and_then(Path::file_stem)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    if let Some(name) = named_after(&stem) {
        return builtin(name);
    }
    warnings.push(format!(
        "no one built-in flag-set file is named after the reference program `{stem}`, so the walk sets are used; name the right ones with --flagsets (built in: {})",
        flagset::builtin_names().collect::<Vec<_>>().join(", ")
    ));
    builtin("walk")
}

/// `flagsets`: a file when the value has a folder part or ends in `.sets`, else a
/// built-in name when it is one (whatever lies in the working folder, as in a
/// config: `./du` names a file called `du`), else whatever is at that path.
fn named_flag_sets(named: &Given<String>) -> Result<FlagSetFile, SettingsError> {
    let written = named.origin.path(&named.value);
    let value = named.value.as_str();
    if crate::settings::names_a_file(value) {
        return load(named, &written);
    }
    if let Some(file) = flagset::builtin(value) {
        return Ok(file);
    }
    // A folder or a FIFO there is named as what it is, not as missing.
    if Path::new(&written).symlink_metadata().is_ok() {
        return load(named, &written);
    }
    flagset::builtin(value).ok_or_else(|| {
        let known = flagset::builtin_names().collect::<Vec<_>>().join(", ");
        let message =
            format!("`{value}`: no such file, and no built-in flag sets of that name ({known})");
        SettingsError::at(named, message)
    })
}

/// How a message names where a value was given: `--flagsets`, or the key of a
/// config file at its line.
fn flag_or_key(origin: &Origin) -> String {
    match origin {
        Origin::Flag(flag) => flag.to_string(),
        Origin::File(place) => {
            format!("`{}` at {}:{}", place.key, place.file.display(), place.line)
        }
    }
}

fn load(given: &Given<String>, path: &str) -> Result<FlagSetFile, SettingsError> {
    flagset::load(Path::new(path))
        .map_err(|err| SettingsError::at(given, crate::exit::with_causes(&err)))
}
