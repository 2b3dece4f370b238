//! Flag-set files (`flagsets/*.sets`), one per program: a description, common
//! arguments put before every set, where the tree goes, environment overrides,
//! named groups of sets (one set per line, split shell-word style; `(none)` is the
//! empty set) and the normalizer rules, each scoped to groups and a stream.
//! Anything malformed is reported as `FILE:LINE: what`.
//!
//! ```text
//! # comment
//! description = dust, as the bulk-listing PR ran it
//! common = -P -c -w 200
//! operand = {tree}
//! env.RUST_BACKTRACE = 0
//! argv0 = dust
//! shrink-common = no
//! [sizes]
//! (none)
//! -b -a
//! [rule permission-list]
//! kind = sort-items
//! stream = stderr
//! groups = all
//! pattern = ^Did not have permissions for directories: (?P<items>.+)$
//! separator = ", "
//! ```
//!
//! A value is taken as written, trimmed; one in double quotes is a JSON string, for
//! spaces at its ends or escapes.
//!
//! A `sort-items` or `mask` rule's `pattern` is matched against one line at a time,
//! without its `\n`: `^` and `$` are that line's start and end (see `normalize`).
//!
//! A comment is a line whose first non-blank character is `#`, and nothing else:
//! what looks like a comment after a header, a value or a set is refused rather
//! than read as part of it, and so is a header key after the first group or a rule
//! key outside a `[rule NAME]` section, which would otherwise become a set.

use std::path::Path;

use crate::normalize::Rule;

mod parse;

pub use parse::parse;

/// A parse or selection error, naming the file and line where there is one.
#[derive(Debug, thiserror::Error)]
pub enum FlagSetError {
    #[error("{file}:{line}: {message}")]
    Syntax {
        file: String,
        line: usize,
        message: String,
    },
    #[error("cannot read flag-set file {file}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: no group `{group}` (groups: {known})")]
    UnknownGroup {
        file: String,
        group: String,
        known: String,
    },
}

/// One set: the arguments a line gives, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagSet {
    pub line: usize,
    pub args: Vec<String>,
}

impl FlagSet {
    /// How the set is shown in reports: its words, or `(none)`.
    pub fn label(&self) -> String {
        if self.args.is_empty() {
            "(none)".into()
        } else {
            shell_words::join(&self.args)
        }
    }
}

/// A named group of sets.
#[derive(Debug, Clone)]
pub struct Group {
    pub name: String,
    pub sets: Vec<FlagSet>,
}

/// A whole flag-set file.
#[derive(Debug, Clone)]
pub struct FlagSetFile {
    /// How errors and reports name the file.
    pub file: String,
    /// The text it was parsed from, as read.
    pub text: String,
    pub description: String,
    pub common: Vec<String>,
    /// The words that put the tree on the command line, after the set; `{tree}`
    /// in a set (such as `-X {tree}/a`) is replaced but does not place the tree.
    pub operand: Vec<String>,
    /// Environment overrides for both arms, on top of the pinned environment.
    pub env: Vec<(String, String)>,
    /// The program name both arms run with (`argv[0]`), when the file sets one; else
    /// each arm runs with its program's file name.
    pub argv0: Option<String>,
    /// `eqcheck shrink` may drop words of `common` too (`shrink-common = yes`);
    /// by default they stay, as they often make the output comparable at all.
    pub shrink_common: bool,
    pub groups: Vec<Group>,
    /// Normalizer rules in file order, which is the order they apply in.
    pub rules: Vec<Rule>,
}

/// The placeholder for the tree's path, wherever an arm's command, a flag-set
/// file's `common` or `operand`, or a set names it; normalized output names the tree
/// root so too.
pub const TREE_PLACEHOLDER: &str = "{tree}";

/// `word` with the tree's path wherever `{tree}` stands in it, byte for byte (a
/// path need not be UTF-8).
pub fn fill_tree(word: &str, tree: &Path) -> std::ffi::OsString {
    let mut parts = word.split(TREE_PLACEHOLDER);
    let mut out = std::ffi::OsString::from(parts.next().unwrap_or_default());
    for part in parts {
        out.push(tree.as_os_str());
        out.push(part);
    }
    out
}

/// A command that runs on a tree (a lister, a baseline): `{tree}` filled in
/// wherever it stands, or the tree's path appended when it stands nowhere.
pub fn command_with_tree(command: &[String], tree: &Path) -> Vec<std::ffi::OsString> {
    let placed = command.iter().any(|w| w.contains(TREE_PLACEHOLDER));
    let mut argv: Vec<std::ffi::OsString> = command.iter().map(|w| fill_tree(w, tree)).collect();
    if !placed {
        argv.push(tree.as_os_str().to_os_string());
    }
    argv
}

/// What is wrong with a program name arms are to run with (`argv[0]`), if anything:
/// the one rule for a flag-set file's `argv0`, a config's and `--argv0`.
pub fn argv0_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("`argv0` names the program: it is empty")
    } else if name.contains('\0') {
        Some("`argv0` names the program: it holds a NUL")
    } else {
        None
    }
}

/// The flag-set files compiled into the binary, by name.
const BUILTIN: &[(&str, &str)] = &[
    ("walk", include_str!("../flagsets/walk.sets")),
    ("dust", include_str!("../flagsets/dust.sets")),
    ("du", include_str!("../flagsets/du.sets")),
    ("find", include_str!("../flagsets/find.sets")),
];

/// The names of the built-in flag-set files.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().map(|(name, _)| *name)
}

/// A built-in flag-set file by name (`walk`, `dust`, `du`, `find`).
pub fn builtin(name: &str) -> Option<FlagSetFile> {
    let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
    Some(parse(&format!("flagsets/{name}.sets"), text).expect("built-in flag sets parse"))
}

/// Reads and parses a flag-set file from disk.
pub fn load(path: &Path) -> Result<FlagSetFile, FlagSetError> {
    let file = path.display().to_string();
    let text = crate::userfile::read_to_string(path).map_err(|source| FlagSetError::Read {
        file: file.clone(),
        source,
    })?;
    parse(&file, &text)
}

impl FlagSetFile {
    /// The groups a selector names: `all`, or a comma list of group names.
    pub fn select(&self, selector: &str) -> Result<Vec<&Group>, FlagSetError> {
        if selector == "all" {
            return Ok(self.groups.iter().collect());
        }
        selector
            .split(',')
            .map(|name| {
                let name = name.trim();
                self.groups.iter().find(|g| g.name == name).ok_or_else(|| {
                    FlagSetError::UnknownGroup {
                        file: self.file.clone(),
                        group: name.to_string(),
                        known: self
                            .groups
                            .iter()
                            .map(|g| g.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    }
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod builtin_samples;
#[cfg(test)]
mod tests;
