//! Reading a flag-set file's text line by line into a [`FlagSetFile`]: the header
//! keys, the `[group]` sections of sets, and the `[rule NAME]` sections handed to
//! `normalize` to check, each kind of line read by a method of its own. Every
//! error names the file and the line it is about.

use super::{FlagSet, FlagSetError, FlagSetFile, Group};
use crate::normalize::{RuleDraft, RULE_KEYS};

/// The keys of the file's header, besides `env.NAME`.
const HEADER_KEYS: &[&str] = &["description", "common", "operand", "argv0", "shrink-common"];

/// Parses a flag-set file's text; `file` names it in errors.
pub fn parse(file: &str, text: &str) -> Result<FlagSetFile, FlagSetError> {
    let mut parser = Parser::new(file);
    for (index, raw) in text.lines().enumerate() {
        parser.line(index + 1, raw.trim())?;
    }
    let mut parsed = parser.finish()?;
    parsed.text = text.to_string();
    Ok(parsed)
}

/// The section the next lines belong to.
enum Section {
    Header,
    Group,
    Rule(RuleDraft),
}

/// A file read up to some line: what it holds so far, and the section it is in.
struct Parser {
    parsed: FlagSetFile,
    section: Section,
    /// Each header key given so far, with its line.
    header_lines: Vec<(String, usize)>,
    /// The last line read, blank or not: where a file that ends too soon ends.
    last_line: usize,
}

impl Parser {
    fn new(file: &str) -> Parser {
        Parser {
            parsed: FlagSetFile {
                file: file.to_string(),
                text: String::new(),
                description: String::new(),
                common: Vec::new(),
                operand: vec![super::TREE_PLACEHOLDER.to_string()],
                env: Vec::new(),
                argv0: None,
                shrink_common: false,
                groups: Vec::new(),
                rules: Vec::new(),
            },
            section: Section::Header,
            header_lines: Vec::new(),
            last_line: 0,
        }
    }

    fn syntax(&self, line: usize, message: String) -> FlagSetError {
        FlagSetError::Syntax {
            file: self.parsed.file.clone(),
            line,
            message,
        }
    }

    /// Reads one line, trimmed, into the section it belongs to.
    fn line(&mut self, line: usize, trimmed: &str) -> Result<(), FlagSetError> {
        self.last_line = line;
        if trimmed.is_empty() || trimmed.starts_with('#') {
            return Ok(());
        }
        if trimmed.starts_with('[') {
            return self.section_header(line, trimmed);
        }
        let read = match &mut self.section {
            Section::Header => self.header_line(line, trimmed),
            Section::Group => self.set_line(line, trimmed),
            Section::Rule(draft) => rule_line(draft, line, trimmed),
        };
        read.map_err(|message| self.syntax(line, message))
    }

    /// A `[group]` or `[rule NAME]` header: ends the section before it and opens
    /// its own.
    fn section_header(&mut self, line: usize, trimmed: &str) -> Result<(), FlagSetError> {
        let name = trimmed
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                if hash_after_blank(trimmed) {
                    format!("a comment after `{trimmed}`: {COMMENTS_ALONE}")
                } else {
                    bad_header(trimmed)
                }
            })
            .map_err(|message| self.syntax(line, message))?;
        if let Some(empty) = self.parsed.groups.last().filter(|g| g.sets.is_empty()) {
            return Err(self.syntax(line, format!("group `{}` has no sets", empty.name)));
        }
        if let Section::Rule(draft) = std::mem::replace(&mut self.section, Section::Header) {
            self.finish_rule(draft)?;
        }
        let opened = match name.strip_prefix("rule ") {
            Some(rule) => self.open_rule(line, rule.trim()),
            // `[rule]` would open a group called rule, and the rule's keys below it
            // would be blamed instead.
            None if name == "rule" => Err("a rule needs a name: `[rule NAME]`".into()),
            None => self.open_group(trimmed, name),
        };
        opened.map_err(|message| self.syntax(line, message))
    }

    fn open_rule(&mut self, line: usize, name: &str) -> Result<(), String> {
        // Never empty: the header was trimmed, so something follows `rule `.
        if name.contains([',', ' ']) {
            return Err(format!("bad rule name `{name}`"));
        }
        self.section = Section::Rule(RuleDraft {
            name: name.to_string(),
            line,
            keys: Vec::new(),
        });
        Ok(())
    }

    fn open_group(&mut self, trimmed: &str, name: &str) -> Result<(), String> {
        if name.contains([',', ' ']) {
            return Err(bad_header(trimmed));
        }
        if name == "all" {
            return Err("`all` is reserved: it selects every group".into());
        }
        if self.parsed.groups.iter().any(|g| g.name == name) {
            return Err(format!("group `{name}` is defined twice"));
        }
        self.parsed.groups.push(Group {
            name: name.to_string(),
            sets: Vec::new(),
        });
        self.section = Section::Group;
        Ok(())
    }

    /// A rule section has ended: its rule is built and kept.
    fn finish_rule(&mut self, draft: RuleDraft) -> Result<(), FlagSetError> {
        if self.parsed.rules.iter().any(|r| r.name == draft.name) {
            return Err(self.syntax(
                draft.line,
                format!("rule `{}` is defined twice", draft.name),
            ));
        }
        let rule = draft
            .build()
            .map_err(|(line, message)| self.syntax(line, message))?;
        self.parsed.rules.push(rule);
        Ok(())
    }

    fn header_line(&mut self, line: usize, trimmed: &str) -> Result<(), String> {
        let (key, value) = key_value(trimmed)?;
        if RULE_KEYS.contains(&key.as_str()) {
            return Err(misplaced_key(&key));
        }
        // A key given twice would silently lose its first value.
        if let Some((_, first)) = self.header_lines.iter().find(|(k, _)| *k == key) {
            return Err(format!("`{key}` is given twice (first on line {first})"));
        }
        self.header_lines.push((key.clone(), line));
        header_key(&mut self.parsed, &key, value)
    }

    /// One set of the current group.
    fn set_line(&mut self, line: usize, trimmed: &str) -> Result<(), String> {
        if trimmed.starts_with("(none)") && trimmed != "(none)" {
            return Err(format!(
                "`(none)` stands alone on its line, found `{trimmed}`: {COMMENTS_ALONE}"
            ));
        }
        // `common = -x` here reads as a set of three words: refuse it. A set that
        // means such words quotes the first one (`'common' = -x`).
        if let Some((key, _)) = trimmed.split_once('=') {
            let key = key.trim();
            if is_header_key(key) || RULE_KEYS.contains(&key) {
                return Err(misplaced_key(key));
            }
        }
        if starts_shell_comment(trimmed) {
            return Err(SHELL_COMMENT.into());
        }
        let group = self
            .parsed
            .groups
            .last_mut()
            .expect("a group section has a group");
        let args = if trimmed == "(none)" {
            Vec::new()
        } else {
            shell_words::split(trimmed).map_err(|e| format!("cannot split set: {e}"))?
        };
        if let Some(twin) = group.sets.iter().find(|s| s.args == args) {
            return Err(format!("set `{trimmed}` repeats line {}", twin.line));
        }
        group.sets.push(FlagSet { line, args });
        Ok(())
    }

    /// The end of the text: the last rule is built, and the file checked whole.
    fn finish(mut self) -> Result<FlagSetFile, FlagSetError> {
        if let Section::Rule(draft) = std::mem::replace(&mut self.section, Section::Header) {
            self.finish_rule(draft)?;
        }
        match self.parsed.groups.last() {
            None => {
                let line = self.last_line.max(1);
                return Err(self.syntax(line, "no `[group]` with sets".into()));
            }
            Some(group) if group.sets.is_empty() => {
                let message = format!("group `{}` has no sets", group.name);
                return Err(self.syntax(self.last_line, message));
            }
            Some(_) => {}
        }
        for rule in &self.parsed.rules {
            for group in rule.groups.iter().flatten() {
                if !self.parsed.groups.iter().any(|g| &g.name == group) {
                    return Err(self.syntax(
                        rule.line,
                        format!("rule `{}` names no such group `{group}`", rule.name),
                    ));
                }
            }
        }
        Ok(self.parsed)
    }
}

/// A `key = value` line of a rule section, kept for the rule to check.
fn rule_line(draft: &mut RuleDraft, line: usize, trimmed: &str) -> Result<(), String> {
    let (key, value) = key_value(trimmed)?;
    if is_header_key(&key) {
        return Err(misplaced_key(&key));
    }
    draft.keys.push((key, value, line));
    Ok(())
}

fn bad_header(trimmed: &str) -> String {
    format!("bad header `{trimmed}` (expected `[group]` or `[rule NAME]`)")
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
        "argv0" => match super::argv0_problem(&value) {
            Some(problem) => return Err(problem.into()),
            None => parsed.argv0 = Some(value),
        },
        "shrink-common" => {
            parsed.shrink_common = match value.as_str() {
                "yes" => true,
                "no" => false,
                other => return Err(format!("`shrink-common` is yes or no, not `{other}`")),
            }
        }
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
            // Given once: a key given twice was refused as it was read.
            Some(name) if is_env_name(name) => parsed.env.push((name.to_string(), value)),
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
