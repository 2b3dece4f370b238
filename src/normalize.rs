//! Normalizers: the rules a flag-set file declares to relax a comparison. Each rule
//! is scoped to groups of sets and to one stream (or both), never global, and
//! counts how often it changed something, so a report can say which rules a
//! verdict leaned on and which never fired at all.
//!
//! Kinds:
//! - `sort-lines`: the stream's lines, sorted by bytes.
//! - `sort-items` (line by line): on each line the regex matches, the text of its
//!   `items` capture is split at `separator`, sorted and joined again (a list printed
//!   from a hash set); it fires once per list whose order changed.
//! - `mask` (line by line): on each line, every match of the regex becomes
//!   `placeholder` (thread ids, timings); it fires once per match replaced.
//! - `json`: the document in canonical form (keys sorted, pretty-printed), with the
//!   arrays at the given JSON pointers sorted too (`*` stands for any key or index).
//!   Every number keeps its exact text and an object that names a key twice leaves
//!   the text as it is, so two different documents never come out as one.
//!
//! A line-by-line rule's regex sees one line at a time: the bytes between two `\n`s,
//! never the `\n` itself. So `^` and `$` (like `\A` and `\z`) match at the ends of
//! each line, a pattern anchored with `^` fires on every line it fits and not only
//! on the stream's first, and no match can swallow a line break or join two lines.
//! A `\r` before a `\n` is part of its line.
//!
//! The tree-root rewrite to `{tree}` is not a rule here: it is always on, and it
//! runs before the rules.

use std::fmt;

use regex::bytes::Regex;

use crate::outcome::Stream;

mod draft;

pub use draft::RuleDraft;

/// A rule as a flag-set file declares it.
#[derive(Debug, Clone)]
pub struct Rule {
    pub name: String,
    /// The line of its `[rule NAME]` header.
    pub line: usize,
    pub kind: RuleKind,
    pub streams: StreamScope,
    /// `None`: every group.
    pub groups: Option<Vec<String>>,
}

#[derive(Debug, Clone)]
pub enum RuleKind {
    SortLines,
    SortItems {
        pattern: Regex,
        separator: Vec<u8>,
    },
    Mask {
        pattern: Regex,
        placeholder: Vec<u8>,
    },
    Json {
        sort_arrays: Vec<String>,
    },
}

/// Which captured streams a rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamScope {
    Stdout,
    Stderr,
    Both,
}

/// The name of the always-on rewrite in counts of rules that fired.
pub const TREE_ROOT_RULE: &str = "tree-root";

/// The keys a `[rule NAME]` section takes; a flag-set file refuses them elsewhere.
pub const RULE_KEYS: &[&str] = &[
    "kind",
    "stream",
    "groups",
    "pattern",
    "separator",
    "placeholder",
    "sort-arrays",
];

impl RuleKind {
    /// Whether the rule only reorders (an order-only verdict may rest on it).
    pub fn only_reorders(&self) -> bool {
        matches!(self, RuleKind::SortLines | RuleKind::SortItems { .. })
    }

    pub fn name(&self) -> &'static str {
        match self {
            RuleKind::SortLines => "sort-lines",
            RuleKind::SortItems { .. } => "sort-items",
            RuleKind::Mask { .. } => "mask",
            RuleKind::Json { .. } => "json",
        }
    }
}

impl fmt::Display for StreamScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StreamScope::Stdout => "stdout",
            StreamScope::Stderr => "stderr",
            StreamScope::Both => "stdout and stderr",
        })
    }
}

impl Rule {
    /// Whether the rule is in force for this group's sets on this stream.
    pub fn applies(&self, group: &str, stream: Stream) -> bool {
        let on_stream = matches!(
            (self.streams, stream),
            (StreamScope::Both, Stream::Stdout | Stream::Stderr)
                | (StreamScope::Stdout, Stream::Stdout)
                | (StreamScope::Stderr, Stream::Stderr)
        );
        on_stream
            && self
                .groups
                .as_ref()
                .is_none_or(|groups| groups.iter().any(|g| g == group))
    }

    /// The text with this rule applied, and how many times it changed something
    /// (0 when the text comes back as it went in).
    pub fn apply(&self, text: &[u8]) -> (Vec<u8>, usize) {
        match &self.kind {
            RuleKind::SortLines => sort_lines(text),
            RuleKind::SortItems { pattern, separator } => {
                each_line(text, |line, out| sort_items(line, pattern, separator, out))
            }
            RuleKind::Mask {
                pattern,
                placeholder,
            } => each_line(text, |line, out| mask(line, pattern, placeholder, out)),
            RuleKind::Json { sort_arrays } => canonical_json(text, sort_arrays),
        }
    }
}

/// Lines as slices without their terminators, and whether the text ended with one.
fn lines_of(text: &[u8]) -> (Vec<&[u8]>, bool) {
    if text.is_empty() {
        return (Vec::new(), false);
    }
    let ends_with_newline = text.ends_with(b"\n");
    let body = if ends_with_newline {
        &text[..text.len() - 1]
    } else {
        text
    };
    (body.split(|&b| b == b'\n').collect(), ends_with_newline)
}

fn join_lines(lines: &[&[u8]], ends_with_newline: bool, capacity: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(capacity);
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(line);
    }
    if ends_with_newline {
        out.push(b'\n');
    }
    out
}

/// Sorted lines; the count is the number of lines that moved.
fn sort_lines(text: &[u8]) -> (Vec<u8>, usize) {
    let (lines, ends_with_newline) = lines_of(text);
    let mut sorted = lines.clone();
    sorted.sort_unstable();
    let moved = lines.iter().zip(&sorted).filter(|(a, b)| a != b).count();
    if moved == 0 {
        return (text.to_vec(), 0);
    }
    (join_lines(&sorted, ends_with_newline, text.len()), moved)
}

/// Runs a line-by-line rule on each line on its own: the bytes between two `\n`s,
/// without them. `rule` writes the line's new text to `out` and says how many times
/// it fired there; a line it did not fire on keeps its own text. The count is the
/// sum over the lines.
fn each_line(text: &[u8], mut rule: impl FnMut(&[u8], &mut Vec<u8>) -> usize) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut rewritten = Vec::new();
    let mut fired = 0;
    // `text[..copied]` is in `out` already; lines that did not fire are copied in
    // one piece when the next one that did comes, so an unchanged text is not
    // built a second time.
    let mut copied = 0;
    let mut start = 0;
    for line in text.split(|&b| b == b'\n') {
        rewritten.clear();
        let times = rule(line, &mut rewritten);
        if times > 0 {
            out.extend_from_slice(&text[copied..start]);
            out.extend_from_slice(&rewritten);
            copied = start + line.len();
            fired += times;
        }
        start += line.len() + 1;
    }
    if fired == 0 {
        return (text.to_vec(), 0);
    }
    out.extend_from_slice(&text[copied..]);
    (out, fired)
}

/// Every match on the line replaced; fires once per match.
fn mask(line: &[u8], pattern: &Regex, placeholder: &[u8], out: &mut Vec<u8>) -> usize {
    let mut times = 0;
    let mut kept = 0;
    for found in pattern.find_iter(line) {
        out.extend_from_slice(&line[kept..found.start()]);
        out.extend_from_slice(placeholder);
        kept = found.end();
        times += 1;
    }
    out.extend_from_slice(&line[kept..]);
    times
}

/// The line's `items` list sorted; fires when that changed its order.
fn sort_items(line: &[u8], pattern: &Regex, separator: &[u8], out: &mut Vec<u8>) -> usize {
    let Some(items) = pattern.captures(line).and_then(|c| c.name("items")) else {
        return 0;
    };
    let mut parts: Vec<&[u8]> = split_on(items.as_bytes(), separator);
    if parts.is_sorted() {
        return 0;
    }
    parts.sort_unstable();
    out.extend_from_slice(&line[..items.start()]);
    out.extend_from_slice(&parts.join(separator));
    out.extend_from_slice(&line[items.end()..]);
    1
}

fn split_on<'t>(text: &'t [u8], separator: &[u8]) -> Vec<&'t [u8]> {
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.windows(separator.len()).position(|w| w == separator) {
        parts.push(&rest[..at]);
        rest = &rest[at + separator.len()..];
    }
    parts.push(rest);
    parts
}

/// The document in canonical form; text that is not one JSON document is left as
/// it is (the comparison then sees it raw).
///
/// Numbers print with the text they were read with (serde_json's
/// `arbitrary_precision`), so digits past u64 or f64 precision still compare.
/// An object that names a key twice also leaves the text as it is: a map keeps
/// only one of the entries, so `{"a":1,"a":2}` and `{"a":7,"a":2}` would print
/// alike, and keeping both in order would make the key order, which this rule
/// exists to ignore, decide between them.
fn canonical_json(text: &[u8], sort_arrays: &[String]) -> (Vec<u8>, usize) {
    if serde_json::from_slice::<DistinctKeys>(text).is_err() {
        return (text.to_vec(), 0);
    }
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(text) else {
        return (text.to_vec(), 0);
    };
    // Deeper arrays first: an outer array is sorted by its items' text, which must
    // already be in canonical order inside, or two equal documents could sort apart.
    let mut pointers: Vec<Vec<&str>> = sort_arrays
        .iter()
        .map(|pointer| pointer.split('/').skip(1).collect())
        .collect();
    pointers.sort_by_key(|segments| std::cmp::Reverse(segments.len()));
    for segments in &pointers {
        sort_arrays_at(&mut value, segments);
    }
    // serde_json keeps object keys in a sorted map, so printing sorts them.
    let mut out = serde_json::to_vec_pretty(&value).expect("a JSON value prints");
    out.push(b'\n');
    let changed = usize::from(out != text);
    (out, changed)
}

/// A JSON document read only to learn that no object in it names a key twice
/// (after unescaping: `"a"` and `"\u0061"` are one key).
struct DistinctKeys;

impl<'de> serde::Deserialize<'de> for DistinctKeys {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DistinctKeysVisitor)
    }
}

struct DistinctKeysVisitor;

impl<'de> serde::de::Visitor<'de> for DistinctKeysVisitor {
    type Value = DistinctKeys;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<DistinctKeys, E> {
        Ok(DistinctKeys)
    }

    fn visit_i64<E>(self, _: i64) -> Result<DistinctKeys, E> {
        Ok(DistinctKeys)
    }

    fn visit_u64<E>(self, _: u64) -> Result<DistinctKeys, E> {
        Ok(DistinctKeys)
    }

    fn visit_f64<E>(self, _: f64) -> Result<DistinctKeys, E> {
        Ok(DistinctKeys)
    }

    fn visit_str<E>(self, _: &str) -> Result<DistinctKeys, E> {
        Ok(DistinctKeys)
    }

    fn visit_unit<E>(self) -> Result<DistinctKeys, E> {
        Ok(DistinctKeys)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut items: A,
    ) -> Result<DistinctKeys, A::Error> {
        while items.next_element::<DistinctKeys>()?.is_some() {}
        Ok(DistinctKeys)
    }

    // With `arbitrary_precision` a number arrives here too, as a one-entry map
    // holding its text, which has no key to repeat.
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut entries: A,
    ) -> Result<DistinctKeys, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = entries.next_key::<String>()? {
            entries.next_value::<DistinctKeys>()?;
            if !seen.insert(key) {
                return Err(serde::de::Error::custom("an object names a key twice"));
            }
        }
        Ok(DistinctKeys)
    }
}

fn sort_arrays_at(value: &mut serde_json::Value, segments: &[&str]) {
    let Some((first, rest)) = segments.split_first() else {
        if let serde_json::Value::Array(items) = value {
            items.sort_by_cached_key(|item| item.to_string());
        }
        return;
    };
    let key = first.replace("~1", "/").replace("~0", "~");
    match value {
        serde_json::Value::Object(map) if key == "*" => {
            map.values_mut().for_each(|v| sort_arrays_at(v, rest))
        }
        serde_json::Value::Object(map) => {
            if let Some(v) = map.get_mut(&key) {
                sort_arrays_at(v, rest)
            }
        }
        serde_json::Value::Array(items) if key == "*" => {
            items.iter_mut().for_each(|v| sort_arrays_at(v, rest))
        }
        serde_json::Value::Array(items) => {
            if let Some(v) = key.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                sort_arrays_at(v, rest)
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
