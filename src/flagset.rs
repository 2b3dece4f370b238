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
            "x.sets:1: unknown key `colour` (description, common, operand, env.NAME)"
        );
        assert!(error_of("# nothing\n").contains("no `[group]`"));
    }

    #[test]
    fn comments_after_something_are_refused() {
        let alone = "comments go on their own line";
        for (text, line) in [
            ("[g]   # sets\n-a\n", 1),
            (
                "[g]\n-a\n[rule r]\t# a rule\nkind = sort-lines\nstream = stdout\n",
                3,
            ),
            ("env.FOO = 0   # note\n[g]\n-a\n", 1),
            ("description = d # what\n[g]\n-a\n", 1),
            ("common = -x # before every set\n[g]\n-a\n", 1),
            ("common = \"-x #\"\n[g]\n-a\n", 1),
            ("[g]\n(none)   # the empty set\n", 2),
            ("[g]\n(none) -a\n", 2),
            ("[g]\n-a -b   # one set\n", 2),
            (
                "[g]\n-a\n[rule r]\nkind = mask\nstream = stdout\npattern = x # y\n",
                6,
            ),
        ] {
            let error = error_of(text);
            assert!(
                error.starts_with(&format!("x.sets:{line}: ")) && error.contains(alone),
                "{text:?}: {error}"
            );
        }
    }

    #[test]
    fn a_header_key_given_twice_is_refused() {
        assert_eq!(
            error_of("common = -a\ncommon = -b\n[g]\n-s\n"),
            "x.sets:2: `common` is given twice (first on line 1)"
        );
        assert!(error_of("env.X = 1\nenv.X = 2\n[g]\n-s\n").contains("`env.X` is given twice"));
        assert!(parse("x.sets", "env.X = 1\nenv.Y = 2\n[g]\n-s\n").is_ok());
    }

    #[test]
    fn keys_out_of_their_place_are_refused() {
        let header = "header keys go before the first group";
        let rule = "rule keys go in a [rule NAME] section";
        for (text, line, rule_of_place) in [
            ("[g]\n-a\ncommon = -x\n", 3, header),
            ("[g]\n-a\ndescription=d\n", 3, header),
            ("[g]\n-a\nenv.FOO = 1\n", 3, header),
            ("[g]\n-a\nkind = mask\n", 3, rule),
            ("stream = stdout\n[g]\n-a\n", 1, rule),
            (
                "[g]\n-a\n[rule r]\nkind = sort-lines\noperand = x\n",
                5,
                header,
            ),
        ] {
            let error = error_of(text);
            assert!(
                error.starts_with(&format!("x.sets:{line}: ")) && error.contains(rule_of_place),
                "{text:?}: {error}"
            );
        }
    }

    #[test]
    fn a_hash_inside_a_word_or_quotes_is_kept() {
        let file = parse(
            "x.sets",
            "description = C# walkers\nenv.FOO = \"0 # kept\"\ncommon = -x '#'\n\
             [g]\n-name 'a #b' -a#b\n\"#x\"\n'common' = -x\n--time=ctime\n\
             [rule r]\nkind = mask\nstream = stdout\npattern = \"x #y\"\nplaceholder = [#]\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.description, "C# walkers");
        assert_eq!(file.env, [("FOO".to_string(), "0 # kept".to_string())]);
        assert_eq!(file.common, ["-x", "#"]);
        let sets: Vec<&[String]> = file.groups[0].sets.iter().map(|s| &s.args[..]).collect();
        assert_eq!(
            sets,
            [
                &["-name", "a #b", "-a#b"][..],
                &["#x"],
                &["common", "=", "-x"],
                &["--time=ctime"]
            ]
        );
        let (masked, _) = file.rules[0].apply(b"x #y");
        assert_eq!(masked, b"[#]");
    }

    #[test]
    fn the_readme_example_parses() {
        let readme = include_str!("../README.md");
        let (_, section) = readme
            .split_once("### Flag-set files")
            .expect("README.md has a flag-set section");
        let (_, block) = section
            .split_once("```text\n")
            .expect("the section has a text block");
        let (example, _) = block.split_once("\n```").expect("the block is closed");
        let file = parse("README.md", example).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.description, "what these sets exercise");
        assert_eq!(file.common, ["-P", "-c", "-w", "200"]);
        assert_eq!(file.operand, ["{tree}"]);
        assert_eq!(file.env, [("RUST_BACKTRACE".to_string(), "0".to_string())]);
        let sets: Vec<&[String]> = file.groups[0].sets.iter().map(|s| &s.args[..]).collect();
        assert_eq!(
            sets,
            [&[][..], &["-a", "-b", "-d", "1"], &["-X", "{tree}/a"]]
        );
        let rule = rule_named(&file, "permission-list");
        assert!(matches!(
            rule.kind,
            crate::normalize::RuleKind::SortItems { .. }
        ));
        assert!(rule.applies("group-name", crate::outcome::Stream::Stderr));
        assert!(!rule.applies("group-name", crate::outcome::Stream::Stdout));
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

    /// Every set of a built-in file, in file order.
    fn all_sets(file: &FlagSetFile) -> Vec<&FlagSet> {
        file.groups.iter().flat_map(|g| &g.sets).collect()
    }

    fn rule_named<'f>(file: &'f FlagSetFile, name: &str) -> &'f Rule {
        file.rules
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("{}: no rule `{name}`", file.file))
    }

    fn normalized(rule: &Rule, text: &str) -> (String, usize) {
        let (out, count) = rule.apply(text.as_bytes());
        (String::from_utf8(out).unwrap(), count)
    }

    #[test]
    fn every_builtin_parses() {
        for name in builtin_names() {
            let file = builtin(name).unwrap();
            assert!(!file.description.is_empty(), "{name} has no description");
            assert!(!all_sets(&file).is_empty(), "{name} has no sets");
        }
        assert_eq!(
            builtin_names().collect::<Vec<_>>(),
            ["walk", "dust", "du", "find"]
        );
    }

    #[test]
    fn dust_has_the_59_sets_with_their_exact_words() {
        let dust = builtin("dust").unwrap();
        assert_eq!(dust.common, ["-P", "-c", "-w", "200"]);
        assert_eq!(dust.operand, ["{tree}"]);
        let sets = all_sets(&dust);
        assert_eq!(sets.len(), 59);
        let args: Vec<&[String]> = sets.iter().map(|s| s.args.as_slice()).collect();
        let has = |words: &[&str]| args.iter().any(|a| *a == words);
        // The pattern reaches dust as backslash, dot: not `.rs$`, not `\\.rs$`.
        for words in [
            &["-e", r"\.rs$"][..],
            &["-v", r"\.txt$"],
            &["-e", r"\.json$", "-v", "test"],
            &["-f", "-e", r"\.rs$"],
            &["-X", "{tree}/a"],
            &["-X", "{tree}/node_modules"],
            &["-T", "1", "--print-errors"],
            &["-o", "b", "-n", "100000", "-m", "m", "-p"],
            &[],
        ] {
            assert!(has(words), "no set {words:?}");
        }
        assert_eq!(
            args.iter()
                .filter(|a| a.first().is_some_and(|w| w == "-e"))
                .count(),
            2
        );
        // Each `-o b -n 100000` set is that prefix and one of nine endings.
        let full: Vec<Vec<&str>> = args
            .iter()
            .filter(|a| a.starts_with(&["-o".into(), "b".into(), "-n".into(), "100000".into()]))
            .map(|a| a[4..].iter().map(String::as_str).collect())
            .collect();
        assert_eq!(
            full,
            [
                &["-s"][..],
                &["-f"],
                &["-L"],
                &["-x"],
                &["-i", "-p"],
                &["-F", "-p"],
                &["-D", "-p"],
                &["-m", "m", "-p"],
                &["-T", "1", "--print-errors"],
            ]
        );
    }

    #[test]
    fn the_dust_json_group_holds_every_json_set() {
        let dust = builtin("dust").unwrap();
        let json = &dust.select("json").unwrap()[0].sets;
        let with_j = all_sets(&dust)
            .into_iter()
            .filter(|s| s.args.iter().any(|a| a == "-j"))
            .count();
        assert_eq!(json.len(), 6);
        assert_eq!(json.len(), with_j, "a -j set outside the json group");
        assert!(json.iter().all(|s| s.args.iter().any(|a| a == "-j")));
        let groups: Vec<&str> = dust.groups.iter().map(|g| g.name.as_str()).collect();
        for name in [
            "basic", "depth", "links", "filters", "time", "output", "errors",
        ] {
            assert!(groups.contains(&name), "no group {name}: {groups:?}");
        }
    }

    #[test]
    fn dust_error_lists_in_any_order_normalize_to_one_text() {
        let dust = builtin("dust").unwrap();
        for (rule, prefix) in [
            (
                "permission-list",
                "Did not have permissions for directories: ",
            ),
            ("missing-list", "No such file or directory: "),
            ("unknown-error-list", "Unknown Error: "),
        ] {
            let rule = rule_named(&dust, rule);
            assert!(rule.kind.only_reorders(), "{}", rule.name);
            assert!(rule.applies("errors", crate::outcome::Stream::Stderr));
            assert!(!rule.applies("errors", crate::outcome::Stream::Stdout));
            let one = format!("{prefix}{{tree}}/b, {{tree}}/a, {{tree}}/c d\n");
            let other = format!("{prefix}{{tree}}/c d, {{tree}}/a, {{tree}}/b\n");
            let (first, moved) = normalized(rule, &one);
            assert_eq!(moved, 1, "{}", rule.name);
            assert_eq!(first, normalized(rule, &other).0, "{}", rule.name);
            assert_eq!(
                first,
                format!("{prefix}{{tree}}/a, {{tree}}/b, {{tree}}/c d\n")
            );
            // A different list still differs, and other lines are left alone.
            assert_ne!(
                first,
                normalized(rule, &format!("{prefix}{{tree}}/a, {{tree}}/b\n")).0
            );
            let other_line = "Other: b, a\n";
            assert_eq!(normalized(rule, other_line), (other_line.into(), 0));
        }
        // The permission list is only printed with --print-errors.
        let permissions = rule_named(&dust, "permission-list");
        assert!(permissions.applies("every-line", crate::outcome::Stream::Stderr));
        assert!(!permissions.applies("basic", crate::outcome::Stream::Stderr));
    }

    #[test]
    fn dust_panic_thread_ids_are_masked_and_nothing_else() {
        let dust = builtin("dust").unwrap();
        let mask = rule_named(&dust, "panic-thread-id");
        let text = "thread 'main' (12345) panicked at src/main.rs:10:5:\nboom (7)\n";
        let (out, count) = normalized(mask, text);
        assert_eq!(count, 1);
        assert_eq!(
            out,
            "thread 'main' (<id>) panicked at src/main.rs:10:5:\nboom (7)\n"
        );
        assert_eq!(
            out,
            normalized(
                mask,
                "thread 'main' (999) panicked at src/main.rs:10:5:\nboom (7)\n"
            )
            .0
        );
        let old = "thread 'main' panicked at src/main.rs:10:5:\n";
        assert_eq!(normalized(mask, old), (old.into(), 0));
        assert_ne!(
            out,
            normalized(
                mask,
                "thread '<unnamed>' (12345) panicked at src/main.rs:10:5:\nboom (7)\n"
            )
            .0,
            "the thread name still compares"
        );
    }

    #[test]
    fn dust_json_is_compared_raw() {
        // dust prints children sorted by size and name, so JSON needs no rule.
        let dust = builtin("dust").unwrap();
        assert!(!dust
            .rules
            .iter()
            .any(|r| matches!(r.kind, crate::normalize::RuleKind::Json { .. })));
        assert_eq!(dust.rules.len(), 4);
    }

    #[test]
    fn du_covers_its_flags_with_no_rules() {
        let du = builtin("du").unwrap();
        let sets = all_sets(&du);
        assert!(sets.len() >= 25, "{} sets", sets.len());
        assert!(du.rules.is_empty());
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
            "-k",
            "-m",
            "-h",
            "--si",
            "-B",
            "-l",
            "-S",
            "-t",
            "--exclude",
            "--time",
        ] {
            assert!(
                sets.iter().any(|s| s.args.iter().any(|a| a == flag)),
                "no set uses {flag}"
            );
        }
    }

    #[test]
    fn find_puts_the_tree_first_and_sorts_its_lines() {
        let find = builtin("find").unwrap();
        assert_eq!(find.common, ["{tree}"]);
        assert!(find.operand.is_empty());
        let sets = all_sets(&find);
        assert!(sets.len() >= 20, "{} sets", sets.len());
        assert!(sets.iter().all(|s| !s.args.iter().any(|a| a == "-print0")));
        let printf = sets
            .iter()
            .find(|s| s.args.first().is_some_and(|a| a == "-printf"))
            .unwrap();
        assert_eq!(printf.args[1], r"%s %b %i %n %y %p\n");
        let order = rule_named(&find, "line-order");
        assert!(matches!(order.kind, crate::normalize::RuleKind::SortLines));
        assert!(order.groups.is_none(), "every group");
        assert!(order.applies("printf", crate::outcome::Stream::Stdout));
        assert!(!order.applies("printf", crate::outcome::Stream::Stderr));
        assert_eq!(
            normalized(order, "{tree}/b\n{tree}\n{tree}/a\n").0,
            "{tree}\n{tree}/a\n{tree}/b\n"
        );
    }
}
