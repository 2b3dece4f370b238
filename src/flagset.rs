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

use crate::normalize::{Rule, RuleDraft, RULE_KEYS};

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
    /// The words that put the tree on the command line, after the set; `{tree}`
    /// in a set (such as `-X {tree}/a`) is replaced but does not place the tree.
    pub operand: Vec<String>,
    /// Environment overrides for both arms, on top of the pinned environment.
    pub env: Vec<(String, String)>,
    pub groups: Vec<Group>,
    /// Normalizer rules in file order, which is the order they apply in.
    pub rules: Vec<Rule>,
}

/// The keys of the file's header, besides `env.NAME`.
const HEADER_KEYS: &[&str] = &["description", "common", "operand"];

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
        operand: vec![crate::matrix::plan::TREE_PLACEHOLDER.to_string()],
        env: Vec::new(),
        groups: Vec::new(),
        rules: Vec::new(),
    };
    let syntax_at = |line: usize, message: String| FlagSetError::Syntax {
        file: file.to_string(),
        line,
        message,
    };
    // The section the next lines belong to.
    enum Section {
        Header,
        Group,
        Rule(RuleDraft),
    }
    let mut section = Section::Header;
    let mut last_line = 0;
    let mut header_lines: Vec<(String, usize)> = Vec::new();
    let finish_rule = |draft: RuleDraft, parsed: &mut FlagSetFile| {
        if parsed.rules.iter().any(|r| r.name == draft.name) {
            return Err(syntax_at(
                draft.line,
                format!("rule `{}` is defined twice", draft.name),
            ));
        }
        let rule = draft
            .build()
            .map_err(|(line, message)| syntax_at(line, message))?;
        parsed.rules.push(rule);
        Ok(())
    };
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        last_line = line;
        let syntax = |message: String| syntax_at(line, message);
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if let Some(header) = trimmed.strip_prefix('[') {
            let name = header
                .strip_suffix(']')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| {
                    if hash_after_blank(trimmed) {
                        syntax(format!("a comment after `{trimmed}`: {COMMENTS_ALONE}"))
                    } else {
                        syntax(format!(
                            "bad header `{trimmed}` (expected `[group]` or `[rule NAME]`)"
                        ))
                    }
                })?;
            if let Some(empty) = parsed.groups.last().filter(|g| g.sets.is_empty()) {
                return Err(syntax(format!("group `{}` has no sets", empty.name)));
            }
            if let Section::Rule(draft) = std::mem::replace(&mut section, Section::Header) {
                finish_rule(draft, &mut parsed)?;
            }
            if let Some(rule) = name.strip_prefix("rule ") {
                let rule = rule.trim();
                if rule.is_empty() || rule.contains([',', ' ']) {
                    return Err(syntax(format!("bad rule name `{rule}`")));
                }
                section = Section::Rule(RuleDraft {
                    name: rule.to_string(),
                    line,
                    keys: Vec::new(),
                });
                continue;
            }
            if name.contains([',', ' ']) {
                return Err(syntax(format!(
                    "bad header `{trimmed}` (expected `[group]` or `[rule NAME]`)"
                )));
            }
            if name == "all" {
                return Err(syntax("`all` is reserved: it selects every group".into()));
            }
            if parsed.groups.iter().any(|g| g.name == name) {
                return Err(syntax(format!("group `{name}` is defined twice")));
            }
            parsed.groups.push(Group {
                name: name.to_string(),
                sets: Vec::new(),
            });
            section = Section::Group;
            continue;
        }
        match &mut section {
            Section::Header => {
                let (key, value) = key_value(trimmed).map_err(&syntax)?;
                if RULE_KEYS.contains(&key.as_str()) {
                    return Err(syntax(misplaced_key(&key)));
                }
                // A key given twice would silently lose its first value.
                if let Some((_, first)) = header_lines.iter().find(|(k, _)| *k == key) {
                    return Err(syntax(format!(
                        "`{key}` is given twice (first on line {first})"
                    )));
                }
                header_lines.push((key.clone(), line));
                header_key(&mut parsed, &key, value).map_err(&syntax)?;
            }
            Section::Rule(draft) => {
                let (key, value) = key_value(trimmed).map_err(&syntax)?;
                if is_header_key(&key) {
                    return Err(syntax(misplaced_key(&key)));
                }
                draft.keys.push((key, value, line));
            }
            Section::Group => {
                if trimmed.starts_with("(none)") && trimmed != "(none)" {
                    return Err(syntax(format!(
                        "`(none)` stands alone on its line, found `{trimmed}`: {COMMENTS_ALONE}"
                    )));
                }
                // `common = -x` here reads as a set of three words: refuse it. A
                // set that means such words quotes the first one (`'common' = -x`).
                if let Some((key, _)) = trimmed.split_once('=') {
                    let key = key.trim();
                    if is_header_key(key) || RULE_KEYS.contains(&key) {
                        return Err(syntax(misplaced_key(key)));
                    }
                }
                if starts_shell_comment(trimmed) {
                    return Err(syntax(SHELL_COMMENT.into()));
                }
                let group = parsed
                    .groups
                    .last_mut()
                    .expect("a group section has a group");
                let args = if trimmed == "(none)" {
                    Vec::new()
                } else {
                    shell_words::split(trimmed)
                        .map_err(|e| syntax(format!("cannot split set: {e}")))?
                };
                if let Some(twin) = group.sets.iter().find(|s| s.args == args) {
                    return Err(syntax(format!(
                        "set `{trimmed}` repeats line {}",
                        twin.line
                    )));
                }
                group.sets.push(FlagSet { line, args });
            }
        }
    }
    if let Section::Rule(draft) = section {
        finish_rule(draft, &mut parsed)?;
    }
    match parsed.groups.last() {
        None => return Err(syntax_at(last_line.max(1), "no `[group]` with sets".into())),
        Some(group) if group.sets.is_empty() => {
            return Err(syntax_at(
                last_line,
                format!("group `{}` has no sets", group.name),
            ))
        }
        Some(_) => {}
    }
    for rule in &parsed.rules {
        for group in rule.groups.iter().flatten() {
            if !parsed.groups.iter().any(|g| &g.name == group) {
                return Err(syntax_at(
                    rule.line,
                    format!("rule `{}` names no such group `{group}`", rule.name),
                ));
            }
        }
    }
    Ok(parsed)
}

/// How errors tell where a comment may go.
const COMMENTS_ALONE: &str = "comments go on their own line";

/// The error for a `#` that shell-word splitting would read as a comment.
const SHELL_COMMENT: &str = "a `#` at the start of a word would begin a comment: comments go on their own line (quote the word, as in '#x', if the `#` is meant)";

/// `key = value`, with a double-quoted value read as a JSON string.
///
/// An unquoted value with `#` after a space or tab is refused: it is most likely
/// a comment written after the value, which would otherwise become part of it. A
/// `#` inside a word (`C#`, a pattern's `[#]`) is taken as written.
fn key_value(line: &str) -> Result<(String, String), String> {
    let (key, value) = line
        .split_once('=')
        .ok_or_else(|| format!("expected `key = value` or a `[group]` header, found `{line}`"))?;
    let value = value.trim();
    let value = if value.len() >= 2 && value.starts_with('"') && value.ends_with('"') {
        serde_json::from_str::<String>(value)
            .map_err(|e| format!("bad quoted value {value}: {e}"))?
    } else if hash_after_blank(value) {
        return Err(format!(
            "a comment after the value `{value}`: {COMMENTS_ALONE} (quote the value as a JSON string if the `#` is meant)"
        ));
    } else {
        value.to_string()
    };
    Ok((key.trim().to_string(), value))
}

/// Whether a `#` comes right after a space or tab somewhere in `text`.
fn hash_after_blank(text: &str) -> bool {
    let mut after_blank = false;
    for c in text.chars() {
        if after_blank && c == '#' {
            return true;
        }
        after_blank = c == ' ' || c == '\t';
    }
    false
}

/// Whether shell-word splitting would drop the rest of `words` as a comment: an
/// unquoted `#` at the start of a word.
fn starts_shell_comment(words: &str) -> bool {
    let mut chars = words.chars();
    let mut at_word_start = true;
    while let Some(c) = chars.next() {
        match c {
            '#' if at_word_start => return true,
            ' ' | '\t' => {
                at_word_start = true;
                continue;
            }
            '\\' => {
                chars.next();
            }
            '\'' => {
                chars.by_ref().find(|&c| c == '\'');
            }
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        at_word_start = false;
    }
    false
}

/// Whether `key` is a header key, so a line `key = ...` belongs in the header.
fn is_header_key(key: &str) -> bool {
    HEADER_KEYS.contains(&key)
        || key
            .strip_prefix("env.")
            .is_some_and(|name| !name.is_empty() && !name.contains(char::is_whitespace))
}

/// The error for a header key after the first group or a rule key outside a rule.
fn misplaced_key(key: &str) -> String {
    if is_header_key(key) {
        format!("`{key}` is a header key: header keys go before the first group")
    } else {
        format!("`{key}` is a rule key: rule keys go in a [rule NAME] section")
    }
}

fn header_key(parsed: &mut FlagSetFile, key: &str, value: String) -> Result<(), String> {
    match key {
        "description" => parsed.description = value,
        "common" | "operand" if starts_shell_comment(&value) => return Err(SHELL_COMMENT.into()),
        "common" => {
            parsed.common =
                shell_words::split(&value).map_err(|e| format!("cannot split common args: {e}"))?
        }
        "operand" => {
            parsed.operand =
                shell_words::split(&value).map_err(|e| format!("cannot split the operand: {e}"))?
        }
        other => match other.strip_prefix("env.") {
            Some(name) if is_env_name(name) => {
                parsed.env.retain(|(n, _)| n != name);
                parsed.env.push((name.to_string(), value));
            }
            Some(name) => return Err(format!("`{name}` is not an environment variable name")),
            None => {
                return Err(format!(
                    "unknown key `{other}` ({}, env.NAME)",
                    HEADER_KEYS.join(", ")
                ))
            }
        },
    }
    Ok(())
}

fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
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
