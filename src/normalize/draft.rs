//! A `[rule NAME]` section turned into a [`Rule`]: each key known and given once,
//! the keys each kind needs and the ones it refuses, and the checks that refuse a
//! pattern that would hide every difference. An error carries the line it is about
//! (the key's, or the section header's for a key that is missing).

use regex::bytes::Regex;

use super::{Rule, RuleKind, StreamScope, RULE_KEYS};

/// Placeholder a mask uses when the file names none.
const DEFAULT_PLACEHOLDER: &str = "<masked>";

/// Ordinary lines no mask may swallow whole: a mask that does would hide every
/// difference, so the flag-set file is refused. Each is one line, matched on its
/// own as a mask matches each line of a stream, so a pattern is refused exactly
/// when it would swallow such a line in real output.
pub(super) const ORDINARY_LINES: &[&str] = &[
    "4096\t{tree}/src/main.rs",
    "Did not have permissions for directories: {tree}/a",
    "0.5K ┌── b.txt│█  │  10%",
    "x",
];

/// A build error: the line it is about, and what is wrong.
type Refusal = (usize, String);

/// The keys of one `[rule NAME]` section, before they are checked.
#[derive(Debug, Default)]
pub struct RuleDraft {
    pub name: String,
    pub line: usize,
    /// `(key, value, line)` in file order.
    pub keys: Vec<(String, String, usize)>,
}

/// A section's keys once each is known to be a rule key given at most once.
struct Keys<'d> {
    /// `(key, value, line)`, the key one of [`RULE_KEYS`].
    given: Vec<(&'d str, &'d str, usize)>,
}

impl Keys<'_> {
    /// The key's value and line, when the section gives it.
    fn get(&self, key: &str) -> Option<(&str, usize)> {
        self.given
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, value, line)| (*value, *line))
    }

    /// Refuses the first of `keys` the section gives: a `kind` rule takes none.
    fn refuse(&self, kind: &str, keys: &[&str]) -> Result<(), Refusal> {
        match keys.iter().find_map(|key| Some((key, self.get(key)?.1))) {
            Some((key, line)) => Err((line, format!("a {kind} rule takes no `{key}`"))),
            None => Ok(()),
        }
    }
}

impl RuleDraft {
    /// Checks the section and builds the rule; an error names the offending line.
    pub fn build(&self) -> Result<Rule, Refusal> {
        let keys = self.keys()?;
        let (kind, kind_line) = keys.get("kind").ok_or_else(|| {
            self.at_header(format!(
                "rule `{}` has no `kind` (sort-lines, sort-items, mask, json)",
                self.name
            ))
        })?;
        let streams = self.streams(&keys)?;
        let groups = groups(&keys)?;
        let kind = match kind {
            "sort-lines" => {
                keys.refuse(
                    kind,
                    &["pattern", "separator", "placeholder", "sort-arrays"],
                )?;
                RuleKind::SortLines
            }
            "sort-items" => self.sort_items(&keys)?,
            "mask" => self.mask(&keys)?,
            "json" => json(&keys)?,
            other => {
                return Err((
                    kind_line,
                    format!("kind `{other}`: expected sort-lines, sort-items, mask or json"),
                ))
            }
        };
        Ok(Rule {
            name: self.name.clone(),
            line: self.line,
            kind,
            streams,
            groups,
        })
    }

    /// The section's keys, refusing one that is unknown or given twice.
    fn keys(&self) -> Result<Keys<'_>, Refusal> {
        let mut keys = Keys { given: Vec::new() };
        for (key, value, line) in &self.keys {
            let Some(known) = RULE_KEYS.iter().find(|k| **k == key.as_str()) else {
                return Err((
                    *line,
                    format!("unknown rule key `{key}` ({})", RULE_KEYS.join(", ")),
                ));
            };
            if keys.get(known).is_some() {
                return Err((
                    *line,
                    format!("`{key}` is given twice in rule `{}`", self.name),
                ));
            }
            keys.given.push((*known, value, *line));
        }
        Ok(keys)
    }

    fn at_header(&self, message: String) -> Refusal {
        (self.line, message)
    }

    fn streams(&self, keys: &Keys) -> Result<StreamScope, Refusal> {
        match keys.get("stream") {
            None => Err(self.at_header(format!(
                "rule `{}` has no `stream` (stdout, stderr, both)",
                self.name
            ))),
            Some(("stdout", _)) => Ok(StreamScope::Stdout),
            Some(("stderr", _)) => Ok(StreamScope::Stderr),
            Some(("both", _)) => Ok(StreamScope::Both),
            Some((other, line)) => Err((
                line,
                format!("stream `{other}`: expected stdout, stderr or both"),
            )),
        }
    }

    /// The `pattern` a `kind` rule needs, refused when it matches the empty text.
    fn pattern(&self, keys: &Keys, kind: &str) -> Result<(Regex, usize), Refusal> {
        let (text, line) = keys
            .get("pattern")
            .ok_or_else(|| self.at_header(format!("a {kind} rule needs a `pattern`")))?;
        let regex = Regex::new(text).map_err(|e| (line, format!("bad pattern: {e}")))?;
        if regex.is_match(b"") {
            return Err((
                line,
                format!("pattern `{text}` matches the empty text, so it would fire everywhere"),
            ));
        }
        Ok((regex, line))
    }

    fn sort_items(&self, keys: &Keys) -> Result<RuleKind, Refusal> {
        let (pattern, pattern_line) = self.pattern(keys, "sort-items")?;
        if !pattern.capture_names().any(|n| n == Some("items")) {
            return Err((
                pattern_line,
                "a sort-items pattern needs a named capture `(?P<items>…)`".into(),
            ));
        }
        let (separator, separator_line) = keys
            .get("separator")
            .ok_or_else(|| self.at_header("a sort-items rule needs a `separator`".into()))?;
        if separator.is_empty() {
            return Err((separator_line, "the separator is empty".into()));
        }
        keys.refuse("sort-items", &["placeholder", "sort-arrays"])?;
        Ok(RuleKind::SortItems {
            pattern,
            separator: separator.as_bytes().to_vec(),
        })
    }

    fn mask(&self, keys: &Keys) -> Result<RuleKind, Refusal> {
        let (pattern, pattern_line) = self.pattern(keys, "mask")?;
        if let Some(line) = ORDINARY_LINES.iter().find(|l| swallows(&pattern, l)) {
            return Err((
                pattern_line,
                format!(
                    "mask `{}` swallows the whole line `{line}`: it would hide every difference",
                    pattern.as_str()
                ),
            ));
        }
        keys.refuse("mask", &["separator", "sort-arrays"])?;
        let placeholder = keys.get("placeholder").map_or(DEFAULT_PLACEHOLDER, |p| p.0);
        Ok(RuleKind::Mask {
            pattern,
            placeholder: placeholder.as_bytes().to_vec(),
        })
    }
}

/// Whether the pattern's first match on `line` is all of it.
fn swallows(pattern: &Regex, line: &str) -> bool {
    pattern
        .find(line.as_bytes())
        .is_some_and(|m| m.len() == line.len())
}

/// The groups a rule is scoped to; `None` (every group) when the key is missing
/// or says `all`.
fn groups(keys: &Keys) -> Result<Option<Vec<String>>, Refusal> {
    let Some((value, line)) = keys.get("groups") else {
        return Ok(None);
    };
    if value.trim() == "all" {
        return Ok(None);
    }
    let names: Vec<String> = value
        .split(',')
        .map(|g| g.trim().to_string())
        .filter(|g| !g.is_empty())
        .collect();
    if names.is_empty() {
        return Err((line, "`groups` names no group".into()));
    }
    Ok(Some(names))
}

fn json(keys: &Keys) -> Result<RuleKind, Refusal> {
    keys.refuse("json", &["pattern", "separator", "placeholder"])?;
    let Some((value, line)) = keys.get("sort-arrays") else {
        return Ok(RuleKind::Json {
            sort_arrays: Vec::new(),
        });
    };
    let pointers: Vec<String> = value.split(',').map(|p| p.trim().to_string()).collect();
    if let Some(bad) = pointers
        .iter()
        .find(|p| !(p.is_empty() || p.starts_with('/')))
    {
        return Err((
            line,
            format!("`{bad}` is not a JSON pointer (it starts with `/`; the root is empty)"),
        ));
    }
    Ok(RuleKind::Json {
        sort_arrays: pointers,
    })
}
