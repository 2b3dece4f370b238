//! Flag-set files (`flagsets/*.sets`): a description, common arguments put before
//! every set, and named groups of sets, one set per line split shell-word style.
//! `(none)` is the empty set. Anything malformed is reported as `FILE:LINE: what`.
//!
//! ```text
//! # comment
//! description = eqcheck walk, reference engine against fast engine
//! common = --engine-independent-flag
//! [sizes]
//! (none)
//! -b -a
//! ```

use std::path::Path;

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
    pub description: String,
    pub common: Vec<String>,
    pub groups: Vec<Group>,
}

/// The flag-set files compiled into the binary, by name.
const BUILTIN: &[(&str, &str)] = &[("walk", include_str!("../flagsets/walk.sets"))];

/// A built-in flag-set file by name (`walk`).
pub fn builtin(name: &str) -> Option<FlagSetFile> {
    let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
    Some(parse(&format!("flagsets/{name}.sets"), text).expect("built-in flag sets parse"))
}

/// Reads and parses a flag-set file from disk.
pub fn load(path: &Path) -> Result<FlagSetFile, FlagSetError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| FlagSetError::Read {
        file: file.clone(),
        source,
    })?;
    parse(&file, &text)
}

/// Parses a flag-set file's text; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<FlagSetFile, FlagSetError> {
    let mut parsed = FlagSetFile {
        file: file.to_string(),
        description: String::new(),
        common: Vec::new(),
        groups: Vec::new(),
    };
    let mut last_line = 0;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        last_line = line;
        let syntax = |message: String| FlagSetError::Syntax {
            file: file.to_string(),
            line,
            message,
        };
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(header) = trimmed.strip_prefix('[') {
            let name = header
                .strip_suffix(']')
                .map(str::trim)
                .filter(|n| !n.is_empty() && !n.contains([',', ' ']))
                .ok_or_else(|| {
                    syntax(format!("bad group header `{trimmed}` (expected `[name]`)"))
                })?;
            if name == "all" {
                return Err(syntax("`all` is reserved: it selects every group".into()));
            }
            if let Some(empty) = parsed.groups.last().filter(|g| g.sets.is_empty()) {
                return Err(syntax(format!("group `{}` has no sets", empty.name)));
            }
            if parsed.groups.iter().any(|g| g.name == name) {
                return Err(syntax(format!("group `{name}` is defined twice")));
            }
            parsed.groups.push(Group {
                name: name.to_string(),
                sets: Vec::new(),
            });
            continue;
        }
        let Some(group) = parsed.groups.last_mut() else {
            let (key, value) = trimmed.split_once('=').ok_or_else(|| {
                syntax(format!(
                    "expected `key = value` or a `[group]` header, found `{trimmed}`"
                ))
            })?;
            let value = value.trim();
            match key.trim() {
                "description" => parsed.description = value.to_string(),
                "common" => {
                    parsed.common = shell_words::split(value)
                        .map_err(|e| syntax(format!("cannot split common args: {e}")))?
                }
                other => {
                    return Err(syntax(format!(
                        "unknown key `{other}` (description, common)"
                    )))
                }
            }
            continue;
        };
        let args = if trimmed == "(none)" {
            Vec::new()
        } else {
            shell_words::split(trimmed).map_err(|e| syntax(format!("cannot split set: {e}")))?
        };
        if let Some(twin) = group.sets.iter().find(|s| s.args == args) {
            return Err(syntax(format!(
                "set `{trimmed}` repeats line {}",
                twin.line
            )));
        }
        group.sets.push(FlagSet { line, args });
    }
    match parsed.groups.last() {
        None => Err(FlagSetError::Syntax {
            file: file.to_string(),
            line: last_line.max(1),
            message: "no `[group]` with sets".into(),
        }),
        Some(group) if group.sets.is_empty() => Err(FlagSetError::Syntax {
            file: file.to_string(),
            line: last_line,
            message: format!("group `{}` has no sets", group.name),
        }),
        Some(_) => Ok(parsed),
    }
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
mod tests {
    use super::*;

    fn error_of(text: &str) -> String {
        parse("x.sets", text).unwrap_err().to_string()
    }

    #[test]
    fn malformed_files_name_the_line() {
        assert_eq!(
            error_of("description = d\n-a\n"),
            "x.sets:2: expected `key = value` or a `[group]` header, found `-a`"
        );
        assert_eq!(
            error_of("[g]\n-a 'open\n"),
            "x.sets:2: cannot split set: missing closing quote"
        );
        assert_eq!(
            error_of("[g]\n-a\n[g]\n-b\n"),
            "x.sets:3: group `g` is defined twice"
        );
        assert_eq!(
            error_of("[g]\n-a\n-a\n"),
            "x.sets:3: set `-a` repeats line 2"
        );
        assert_eq!(
            error_of("[g]\n[h]\n-a\n"),
            "x.sets:2: group `g` has no sets"
        );
        assert_eq!(
            error_of("colour = red\n[g]\n-a\n"),
            "x.sets:1: unknown key `colour` (description, common)"
        );
        assert!(error_of("# nothing\n").contains("no `[group]`"));
    }

    #[test]
    fn groups_select_by_name() {
        let file = parse("x.sets", "common = -P\n[a]\n(none)\n-s\n[b]\n-d 1\n").unwrap();
        assert_eq!(file.common, ["-P"]);
        assert_eq!(file.select("all").unwrap().len(), 2);
        assert_eq!(file.select("b").unwrap()[0].sets[0].args, ["-d", "1"]);
        assert_eq!(file.select("a").unwrap()[0].sets[0].label(), "(none)");
        assert!(file
            .select("c")
            .unwrap_err()
            .to_string()
            .contains("groups: a, b"));
    }

    #[test]
    fn the_walk_sets_cover_every_flag() {
        let walk = builtin("walk").unwrap();
        let sets: Vec<&FlagSet> = walk.groups.iter().flat_map(|g| &g.sets).collect();
        assert!(sets.len() >= 20, "{} sets", sets.len());
        for flag in [
            "-a",
            "-b",
            "--apparent-size",
            "-s",
            "-d",
            "-L",
            "-x",
            "--inodes",
            "-c",
            "-0",
            "--json",
        ] {
            assert!(
                sets.iter().any(|s| s.args.iter().any(|a| a == flag)),
                "no set uses {flag}"
            );
        }
    }
}
