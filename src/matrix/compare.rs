//! Judging a case. Runs that did not complete are never compared. With `--runs`,
//! each arm's runs are first compared with each other (after normalization), and
//! an arm that disagrees with itself makes the case flaky. Then, per stream: raw
//! bytes (equal: identical); the tree root rewritten to `{tree}` and the rules in
//! force for the set's group and that stream (equal: order-only when sorting was
//! all it took, else equal-after-normalization); otherwise differs, with a unified
//! diff of the normalized text. Last comes the trust check: a copy of the
//! candidate's output with one byte changed, and one with a line dropped, must
//! still be judged different, or the normalizers hide differences and the case is
//! an error.
//!
//! Memory stays bounded: outputs are files, a stream larger than
//! [`NORMALIZE_CAP`] is compared by hash and its first difference found by
//! streaming, and diffs of more than [`DIFF_CAP`] show the first difference only.
//! Each limit that is hit is noted in the case.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use super::exec::Captured;
use super::plan::TREE_PLACEHOLDER;
use crate::normalize::{Rule, TREE_ROOT_RULE};
use crate::outcome::{
    ArmStatus, Fired, FlakyArm, Stream, StreamResult, StreamVerdict, Variant, Verdict,
};

/// Largest stream (per arm) that is loaded, normalized and diffed in memory. A
/// canonical JSON document takes several times its size while it is rebuilt, and
/// cases run in parallel: 4 MiB keeps a case well under 100 MB.
pub const NORMALIZE_CAP: u64 = 4 << 20;

/// Largest normalized text handed to the line diff; beyond it, the first
/// difference is shown with context.
pub const DIFF_CAP: usize = 2 << 20;

/// Lines of diff kept per stream; the rest is counted, not shown.
const DIFF_LINES_SHOWN: usize = 400;

/// Variants of a flaky arm shown with a diff from the first; the rest are listed.
const VARIANT_DIFFS: usize = 5;

/// Displaced lines shown for an order-only stream.
const DISPLACED_SHOWN: usize = 3;

/// Places in the text, and lines, where the trust check changes one byte.
const MUTATION_POINTS: usize = 16;

/// Above this size the trust check changes the whole text at fewer places, each
/// of which normalizes the whole text again.
const MUTATION_FULL_TEXT: usize = 1 << 20;

/// Words per sampled line whose first and last bytes the trust check changes.
const WORDS_PER_LINE: usize = 32;

/// A line longer than this is not shown whole: diffs show the text around its
/// first difference instead.
const LONG_LINE: usize = 4096;

/// Characters shown of a line around its first difference.
const SHOWN_AROUND: usize = 200;

/// The rules in force for one case (its group), by stream.
pub struct CaseRules<'a> {
    pub group: &'a str,
    pub rules: &'a [Rule],
}

impl CaseRules<'_> {
    fn for_stream(&self, stream: Stream) -> Vec<&Rule> {
        self.rules
            .iter()
            .filter(|r| r.applies(self.group, stream))
            .collect()
    }
}

/// What judging a case found.
pub struct Judged {
    pub verdict: Verdict,
    pub streams: Vec<StreamResult>,
    pub fired: Vec<Fired>,
    pub notes: Vec<String>,
}

/// Tallies of rules that changed something.
#[derive(Default)]
struct Tally(BTreeMap<String, usize>);

impl Tally {
    fn add(&mut self, fired: &[(String, usize)]) {
        for (rule, times) in fired {
            *self.0.entry(rule.clone()).or_default() += times;
        }
    }

    fn into_fired(self) -> Vec<Fired> {
        self.0
            .into_iter()
            .map(|(rule, times)| Fired { rule, times })
            .collect()
    }
}

/// A case's judge: the tree root, the rules, and what it has tallied so far.
struct Judge<'a> {
    root: &'a [u8],
    rules: &'a CaseRules<'a>,
    tally: Tally,
    notes: Vec<String>,
    /// Why the case cannot be judged, once something says so.
    unjudgeable: Option<String>,
}

/// Compares every run two arms made of one case; `reference[0]` and
/// `candidate[0]` are the runs compared with each other.
pub fn judge(
    reference: &[Captured],
    candidate: &[Captured],
    tree_root: &Path,
    rules: &CaseRules,
) -> Judged {
    let mut judge = Judge {
        root: tree_root.as_os_str().as_encoded_bytes(),
        rules,
        tally: Tally::default(),
        notes: Vec::new(),
        unjudgeable: None,
    };
    let verdict = judge.verdict(reference, candidate);
    let (verdict, streams) = match verdict {
        Ok(found) => found,
        Err(err) => (
            Verdict::Error {
                reason: format!("cannot read the captured output: {err}"),
            },
            Vec::new(),
        ),
    };
    Judged {
        verdict,
        streams,
        fired: judge.tally.into_fired(),
        notes: judge.notes,
    }
}

impl Judge<'_> {
    fn verdict(
        &mut self,
        reference: &[Captured],
        candidate: &[Captured],
    ) -> io::Result<(Verdict, Vec<StreamResult>)> {
        for (arm, runs) in [("reference", reference), ("candidate", candidate)] {
            for (i, run) in runs.iter().enumerate() {
                if !run.status.completed() || run.status.was_killed() {
                    let which = if runs.len() > 1 {
                        format!("{arm} arm (run {})", i + 1)
                    } else {
                        format!("{arm} arm")
                    };
                    let reason = format!("{which} {}", run.status.describe());
                    return Ok((Verdict::Error { reason }, Vec::new()));
                }
            }
        }
        let mut flaky = Vec::new();
        for (arm, runs) in [("reference", reference), ("candidate", candidate)] {
            let variants = self.variants(runs)?;
            if variants.len() > 1 {
                flaky.push(FlakyArm {
                    arm: arm.to_string(),
                    variants,
                });
            }
        }
        if let Some(reason) = self.unjudgeable.take() {
            return Ok((Verdict::Error { reason }, Vec::new()));
        }
        if !flaky.is_empty() {
            return Ok((Verdict::Flaky { arms: flaky }, Vec::new()));
        }
        let (ours, theirs) = (&reference[0], &candidate[0]);
        let mut streams = Vec::new();
        for (stream, a, b) in [
            (Stream::Stdout, &ours.stdout, &theirs.stdout),
            (Stream::Stderr, &ours.stderr, &theirs.stderr),
        ] {
            streams.push(self.stream(stream, a, b)?);
        }
        streams.push(compare_status(&ours.status, &theirs.status));
        if let Some(reason) = self.unjudgeable.take() {
            return Ok((Verdict::Error { reason }, streams));
        }
        let verdict = if streams.iter().any(|s| s.verdict == StreamVerdict::Differs) {
            Verdict::Differs
        } else if streams
            .iter()
            .any(|s| s.verdict == StreamVerdict::EqualAfterNormalization)
        {
            Verdict::EqualAfterNormalization
        } else if streams
            .iter()
            .any(|s| s.verdict == StreamVerdict::OrderOnly)
        {
            Verdict::OrderOnly
        } else {
            Verdict::Identical
        };
        for (stream, a, b) in [
            (Stream::Stdout, &ours.stdout, &theirs.stdout),
            (Stream::Stderr, &ours.stderr, &theirs.stderr),
        ] {
            if let Some(hidden) = self.hides_differences(stream, a, b)? {
                return Ok((Verdict::Error { reason: hidden }, streams));
            }
        }
        Ok((verdict, streams))
    }

    /// Whether the stream has rules and all of them only sort its lines.
    fn only_sorts_lines(&self, stream: Stream) -> bool {
        let rules = self.rules.for_stream(stream);
        !rules.is_empty()
            && rules
                .iter()
                .all(|r| matches!(r.kind, crate::normalize::RuleKind::SortLines))
    }

    /// The first sorting rule in force on the stream, for the tally.
    fn sort_rule_name(&self, stream: Stream) -> String {
        self.rules
            .for_stream(stream)
            .first()
            .map_or_else(String::new, |r| r.name.clone())
    }

    /// Normalizes with every rule for the stream, or only with the sorting rules.
    fn normalize(&self, raw: &[u8], stream: Stream, only_reorders: bool) -> Normalized {
        let mut fired = Vec::new();
        let rooted = rewrite_root(raw, self.root);
        if rooted.as_slice() != raw {
            let times = count(raw, self.root);
            fired.push((TREE_ROOT_RULE.to_string(), times));
        }
        let mut text = rooted;
        for rule in self.rules.for_stream(stream) {
            if only_reorders && !rule.kind.only_reorders() {
                continue;
            }
            let (out, times) = rule.apply(&text);
            if times > 0 {
                fired.push((rule.name.clone(), times));
                text = out;
            }
        }
        Normalized { text, fired }
    }

    fn stream(&mut self, stream: Stream, ours: &Path, theirs: &Path) -> io::Result<StreamResult> {
        let result = |verdict, displaced, diff| StreamResult {
            stream,
            verdict,
            displaced,
            diff,
        };
        let (a, b) = (load(ours)?, load(theirs)?);
        let (a, b) = match (a, b) {
            (Loaded::Text(a), Loaded::Text(b)) => (a, b),
            _ => {
                // Too large to normalize: compare by hash, show the first difference.
                if same_contents(ours, theirs)? {
                    return Ok(result(StreamVerdict::Identical, Vec::new(), None));
                }
                let diff = first_difference_of_files(ours, theirs)?;
                if self.only_sorts_lines(stream) {
                    // Sorting lines is all the rules do: the same lines in any order
                    // are equal, which a digest of the set of lines tells without
                    // sorting anything in memory.
                    if line_multiset(ours)? == line_multiset(theirs)? {
                        self.tally.add(&[(self.sort_rule_name(stream), 1)]);
                        self.notes.push(format!(
                            "{}: larger than {} MiB, so its lines were compared as a set (with counts) instead of sorted",
                            stream.name(),
                            NORMALIZE_CAP >> 20
                        ));
                        return Ok(result(
                            StreamVerdict::OrderOnly,
                            vec![format!("(the first difference, before sorting)\n{diff}")],
                            None,
                        ));
                    }
                    self.notes.push(format!(
                        "{}: larger than {} MiB; its lines differ as a set, not only in order; the first raw difference is shown",
                        stream.name(),
                        NORMALIZE_CAP >> 20
                    ));
                } else if !self.rules.for_stream(stream).is_empty() {
                    // The rules might have made them equal: never call that a difference.
                    self.unjudgeable.get_or_insert(format!(
                        "{} is larger than {} MiB, too large to normalize in memory, and rules apply to it; raw, it differs:\n{diff}",
                        stream.name(),
                        NORMALIZE_CAP >> 20
                    ));
                } else {
                    self.notes.push(format!(
                        "{}: larger than {} MiB, so compared by hash and only its first difference shown",
                        stream.name(),
                        NORMALIZE_CAP >> 20
                    ));
                }
                return Ok(result(StreamVerdict::Differs, Vec::new(), Some(diff)));
            }
        };
        if a == b {
            return Ok(result(StreamVerdict::Identical, Vec::new(), None));
        }
        let (na, nb) = (
            self.normalize(&a, stream, false),
            self.normalize(&b, stream, false),
        );
        self.tally.add(&na.fired);
        self.tally.add(&nb.fired);
        if na.text != nb.text {
            let diff = self.diff(stream, &na.text, &nb.text)?;
            return Ok(result(StreamVerdict::Differs, Vec::new(), Some(diff)));
        }
        let (ra, rb) = (rewrite_root(&a, self.root), rewrite_root(&b, self.root));
        if ra != rb
            && self.normalize(&a, stream, true).text == self.normalize(&b, stream, true).text
        {
            return Ok(result(StreamVerdict::OrderOnly, displaced(&ra, &rb), None));
        }
        Ok(result(
            StreamVerdict::EqualAfterNormalization,
            Vec::new(),
            None,
        ))
    }

    fn diff(&mut self, stream: Stream, ours: &[u8], theirs: &[u8]) -> io::Result<String> {
        if ours.len().max(theirs.len()) > DIFF_CAP {
            self.notes.push(format!(
                "{}: normalized text larger than {} MiB, so only its first difference is shown",
                stream.name(),
                DIFF_CAP >> 20
            ));
            return Ok(first_difference(ours, theirs));
        }
        if has_long_line(ours) || has_long_line(theirs) {
            self.notes.push(format!(
                "{}: a line longer than {LONG_LINE} bytes, so only the first difference is shown, around where it is",
                stream.name()
            ));
            return Ok(first_difference(ours, theirs));
        }
        Ok(unified_diff(ours, theirs))
    }

    /// The distinct outputs among one arm's runs, each with the runs that gave it.
    fn variants(&mut self, runs: &[Captured]) -> io::Result<Vec<Variant>> {
        if runs.len() < 2 {
            return Ok(Vec::new());
        }
        let mut seen: Vec<RunOutput> = Vec::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut representative: Vec<usize> = Vec::new();
        for (i, run) in runs.iter().enumerate() {
            // Only digests are kept: a hundred runs that all differ must not hold a
            // hundred texts. The diffs below load their two variants again.
            let output = RunOutput {
                stdout: None,
                stderr: None,
                ..self.run_output(run)?
            };
            match seen.iter().position(|s| s.digest == output.digest) {
                Some(v) => members[v].push(i + 1),
                None => {
                    seen.push(output);
                    members.push(vec![i + 1]);
                    representative.push(i);
                }
            }
        }
        if seen.len() == 1 {
            self.tally_run_to_run(runs)?;
            return Ok(Vec::new());
        }
        if seen.iter().any(|s| s.over_cap_with_rules) {
            self.unjudgeable.get_or_insert(format!(
                "runs of one arm differ raw in a stream larger than {} MiB, too large to normalize in memory, though rules apply to it: whether the arm is flaky cannot be told",
                NORMALIZE_CAP >> 20
            ));
            return Ok(Vec::new());
        }
        let first = self.run_output(&runs[representative[0]])?;
        let mut variants = Vec::new();
        for v in 0..seen.len() {
            let diff = if v == 0 {
                None
            } else if v > VARIANT_DIFFS {
                Some(format!(
                    "(diffs are shown for the first {VARIANT_DIFFS} variants only)\n"
                ))
            } else {
                let other = self.run_output(&runs[representative[v]])?;
                Some(self.variant_diff(
                    (&runs[representative[0]], &first),
                    (&runs[representative[v]], &other),
                )?)
            };
            variants.push(Variant {
                runs: members[v].clone(),
                status: runs[representative[v]].status.describe(),
                diff,
            });
        }
        Ok(variants)
    }

    /// One run's normalized streams (when small enough) and a digest of them and
    /// its exit status.
    fn run_output(&self, run: &Captured) -> io::Result<RunOutput> {
        let mut hasher = Sha256::new();
        let mut over_cap_with_rules = false;
        let mut texts = [None, None];
        for (slot, (stream, path)) in [(Stream::Stdout, &run.stdout), (Stream::Stderr, &run.stderr)]
            .into_iter()
            .enumerate()
        {
            match load(path)? {
                Loaded::Text(raw) => {
                    let normalized = self.normalize(&raw, stream, false).text;
                    hasher.update(b"text");
                    hasher.update(Sha256::digest(&normalized));
                    texts[slot] = Some(normalized);
                }
                Loaded::TooLarge if self.only_sorts_lines(stream) => {
                    let (count, sum, ends) = line_multiset(path)?;
                    hasher.update(b"lines");
                    hasher.update(count.to_le_bytes());
                    hasher.update(sum.to_le_bytes());
                    hasher.update([u8::from(ends)]);
                }
                Loaded::TooLarge => {
                    hasher.update(b"file");
                    hasher.update(digest_file(path)?);
                    over_cap_with_rules |= !self.rules.for_stream(stream).is_empty();
                }
            }
        }
        hasher.update(run.status.describe().as_bytes());
        let [stdout, stderr] = texts;
        Ok(RunOutput {
            digest: hasher.finalize().into(),
            stdout,
            stderr,
            over_cap_with_rules,
        })
    }

    /// How one variant of a flaky arm differs from its first variant.
    fn variant_diff(
        &mut self,
        (first_run, first): (&Captured, &RunOutput),
        (other_run, other): (&Captured, &RunOutput),
    ) -> io::Result<String> {
        let mut text = String::new();
        for (stream, a, b, path_a, path_b) in [
            (
                Stream::Stdout,
                &first.stdout,
                &other.stdout,
                &first_run.stdout,
                &other_run.stdout,
            ),
            (
                Stream::Stderr,
                &first.stderr,
                &other.stderr,
                &first_run.stderr,
                &other_run.stderr,
            ),
        ] {
            let part = match (a, b) {
                (Some(a), Some(b)) if a == b => continue,
                (Some(a), Some(b)) => self.diff(stream, a, b)?,
                _ if same_contents(path_a, path_b)? => continue,
                _ => first_difference_of_files(path_a, path_b)?,
            };
            let part = part
                .strip_prefix("--- reference\n+++ candidate\n")
                .unwrap_or(&part);
            text.push_str(&format!(
                "{}:\n--- variant 1\n+++ this variant\n{part}",
                stream.name()
            ));
        }
        if first_run.status != other_run.status {
            text.push_str(&format!(
                "exit status:\n-{}\n+{}\n",
                first_run.status.describe(),
                other_run.status.describe()
            ));
        }
        Ok(text)
    }

    /// Runs that agree only after normalization still count the rules they needed.
    fn tally_run_to_run(&mut self, runs: &[Captured]) -> io::Result<()> {
        for (stream, path_of) in [
            (
                Stream::Stdout,
                (|c: &Captured| &c.stdout) as fn(&Captured) -> &std::path::PathBuf,
            ),
            (Stream::Stderr, |c: &Captured| &c.stderr),
        ] {
            let Loaded::Text(first) = load(path_of(&runs[0]))? else {
                continue;
            };
            for run in &runs[1..] {
                if let Loaded::Text(other) = load(path_of(run))? {
                    if other != first {
                        let fired = self.normalize(&other, stream, false).fired;
                        self.tally.add(&fired);
                    }
                }
            }
        }
        Ok(())
    }

    /// The trust check for one stream: `Some(reason)` when the rules in force judge
    /// a mutated candidate output equal to the reference.
    fn hides_differences(
        &mut self,
        stream: Stream,
        ours: &Path,
        theirs: &Path,
    ) -> io::Result<Option<String>> {
        let rules = self.rules.for_stream(stream);
        // The tree-root rewrite alone cannot hide a change: it maps one whole path
        // to one placeholder and leaves every other byte as it was.
        if rules.is_empty() {
            return Ok(None);
        }
        let (Loaded::Text(a), Loaded::Text(b)) = (load(ours)?, load(theirs)?) else {
            return Ok(None);
        };
        let expected = self.normalize(&a, stream, false).text;
        let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
        let hidden = |what: String| {
            Some(format!(
                "normalizers hide differences: on {}, {what} was still judged equal to the reference after rules {}",
                stream.name(),
                names.join(", ")
            ))
        };
        // One-byte changes in two samples. Over the whole text, at letters and
        // digits spread across it: the rules may not hide all of them (a rule that
        // hides nearly everything). Line by line, at the first and last byte of every
        // word of lines spread across the text: the rules may not hide a change in
        // more than half of those lines (a rule that hides a column, such as every
        // size). A few hidden places are allowed: a thread id, a timing.
        // A text that is all tree path has no place outside it to change, and a
        // change inside it always shows.
        let points = spread_points(&b, &root_spans(&b, self.root));
        let hidden_everywhere = !points.is_empty()
            && points
                .iter()
                .all(|&at| self.normalize(&mutated(&b, at), stream, false).text == expected);
        if hidden_everywhere {
            return Ok(hidden(format!(
                "the candidate's output with one byte changed (tried at {} places spread over it)",
                points.len()
            )));
        }
        let lines = sampled_lines(&b);
        if !lines.is_empty() {
            let hiding: Vec<usize> = lines
                .iter()
                .filter(|(_, line)| self.hides_in_line(stream, line))
                .map(|(number, _)| *number)
                .collect();
            if hiding.len() * 2 > lines.len() {
                let shown: Vec<String> = hiding.iter().take(5).map(usize::to_string).collect();
                return Ok(hidden(format!(
                    "the candidate's output with one byte changed in a word of a line (hidden in {} of {} lines sampled: lines {}…)",
                    hiding.len(),
                    lines.len(),
                    shown.join(", ")
                )));
            }
        }
        if let Some((line, dropped)) = line_drop(&b) {
            if self.normalize(&dropped, stream, false).text == expected {
                return Ok(hidden(format!(
                    "the candidate's output with line {line} dropped"
                )));
            }
        }
        Ok(None)
    }

    /// Whether the rules hide a one-byte change at the first or last byte of any
    /// word of one line, normalized on its own.
    fn hides_in_line(&self, stream: Stream, line: &[u8]) -> bool {
        let expected = self.normalize(line, stream, false).text;
        word_edges(line)
            .into_iter()
            .any(|at| self.normalize(&mutated(line, at), stream, false).text == expected)
    }
}

struct Normalized {
    text: Vec<u8>,
    fired: Vec<(String, usize)>,
}

/// What one run gave, as flakiness compares it.
struct RunOutput {
    digest: [u8; 32],
    stdout: Option<Vec<u8>>,
    stderr: Option<Vec<u8>>,
    /// A stream was too large to normalize though rules apply to it, so its
    /// digest is of the raw bytes.
    over_cap_with_rules: bool,
}

/// A captured stream, in memory when it is small enough.
enum Loaded {
    Text(Vec<u8>),
    TooLarge,
}

fn load(path: &Path) -> io::Result<Loaded> {
    let file = File::open(path)?;
    if file.metadata()?.len() > NORMALIZE_CAP {
        return Ok(Loaded::TooLarge);
    }
    let mut text = Vec::new();
    file.take(NORMALIZE_CAP + 1).read_to_end(&mut text)?;
    Ok(Loaded::Text(text))
}

/// A file's lines as a multiset, read in blocks: how many, the wrapping sum of a
/// 128-bit digest of each, and whether the last one ends with a newline (which
/// sorting keeps). Two files with the same lines in any order give the same value.
fn line_multiset(path: &Path) -> io::Result<(u64, u128, bool)> {
    let mut file = File::open(path)?;
    let mut buffer = vec![0u8; 1 << 16];
    let (mut count, mut sum) = (0u64, 0u128);
    let mut line = Sha256::new();
    let mut open_line = false;
    let mut add = |line: Sha256| {
        let digest = line.finalize();
        let mut low = [0u8; 16];
        low.copy_from_slice(&digest[..16]);
        count += 1;
        sum = sum.wrapping_add(u128::from_le_bytes(low));
    };
    let mut last = None;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        last = Some(buffer[n - 1]);
        for piece in buffer[..n].split_inclusive(|&b| b == b'\n') {
            if let Some(body) = piece.strip_suffix(b"\n") {
                line.update(body);
                add(std::mem::take(&mut line));
                open_line = false;
            } else {
                line.update(piece);
                open_line = true;
            }
        }
    }
    if open_line {
        add(line);
    }
    Ok((count, sum, last == Some(b'\n')))
}

/// Whether two files hold the same bytes, read side by side in blocks.
pub fn same_contents(a: &Path, b: &Path) -> io::Result<bool> {
    let (mut a, mut b) = (File::open(a)?, File::open(b)?);
    if a.metadata()?.len() != b.metadata()?.len() {
        return Ok(false);
    }
    let (mut x, mut y) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    loop {
        let n = read_full(&mut a, &mut x)?;
        let m = read_full(&mut b, &mut y)?;
        if n != m || x[..n] != y[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

/// Reads until the buffer is full or the file ends; the count read.
fn read_full(file: &mut File, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read(&mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// The sha256 of a file, read in blocks.
pub fn digest_file(path: &Path) -> io::Result<[u8; 32]> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hasher.finalize().into())
}

/// Where the tree's path stands in `text`, as `start..end` byte ranges.
fn root_spans(text: &[u8], root: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut spans = Vec::new();
    if root.is_empty() {
        return spans;
    }
    let mut at = 0;
    while let Some(found) = find(&text[at..], root) {
        let (start, end) = (at + found, at + found + root.len());
        if stands_alone(text, start, end, root) {
            spans.push(start..end);
        }
        at = end;
    }
    spans
}

/// Offsets of letters or digits spread evenly over `text` ([`MUTATION_POINTS`] of
/// them, or 4 in a text over [`MUTATION_FULL_TEXT`], since each normalizes the whole
/// text again), outside the tree's path (`skip`): a change there undoes the root
/// rewrite and so always shows, which says nothing about the rules. Letters and
/// digits, so that no rule may fairly call the change insignificant, as it may
/// whitespace in JSON. An empty text has offset 0, where the change adds a byte.
fn spread_points(text: &[u8], skip: &[std::ops::Range<usize>]) -> Vec<usize> {
    if text.is_empty() {
        return vec![0];
    }
    let wanted = if text.len() > MUTATION_FULL_TEXT {
        4
    } else {
        MUTATION_POINTS
    };
    let mut points: Vec<usize> = Vec::new();
    for k in 0..wanted {
        let from = text.len() * k / wanted;
        let outside = |p: &usize| !skip.iter().any(|span| span.contains(p));
        let found = (from..text.len())
            .filter(outside)
            .find(|&p| text[p].is_ascii_alphanumeric())
            .or_else(|| {
                (from..text.len())
                    .filter(outside)
                    .find(|&p| text[p] != b'\n')
            });
        if let Some(at) = found.filter(|at| !points.contains(at)) {
            points.push(at);
        }
    }
    points
}

/// Up to [`MUTATION_POINTS`] lines spread evenly over `text` that hold a letter or
/// digit, each with its number (from 1) and its newline.
fn sampled_lines(text: &[u8]) -> Vec<(usize, &[u8])> {
    let lines: Vec<(usize, &[u8])> = text
        .split_inclusive(|&b| b == b'\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line))
        .filter(|(_, line)| line.iter().any(u8::is_ascii_alphanumeric))
        .collect();
    let step = lines.len().div_ceil(MUTATION_POINTS).max(1);
    lines.into_iter().step_by(step).collect()
}

/// The first and last byte of each word (a run of letters and digits) of a line;
/// of a line with more than [`WORDS_PER_LINE`] words, of that many spread evenly
/// over it, the last word included.
fn word_edges(line: &[u8]) -> Vec<usize> {
    let mut words = Vec::new();
    let mut at = 0;
    while at < line.len() {
        if !line[at].is_ascii_alphanumeric() {
            at += 1;
            continue;
        }
        let start = at;
        while at < line.len() && line[at].is_ascii_alphanumeric() {
            at += 1;
        }
        words.push((start, at - 1));
    }
    let picked: Vec<(usize, usize)> = if words.len() <= WORDS_PER_LINE {
        words
    } else {
        (0..WORDS_PER_LINE)
            .map(|k| words[k * (words.len() - 1) / (WORDS_PER_LINE - 1)])
            .collect()
    };
    let mut edges = Vec::new();
    for (first, last) in picked {
        edges.push(first);
        if last != first {
            edges.push(last);
        }
    }
    edges
}

/// `text` with the byte at `at` changed to another letter or digit (or, past the
/// end, with a byte added).
fn mutated(text: &[u8], at: usize) -> Vec<u8> {
    let mut copy = text.to_vec();
    match copy.get_mut(at) {
        None => copy.push(b'x'),
        Some(byte) => {
            *byte = match *byte {
                b'9' => b'0',
                b'z' => b'a',
                b'Z' => b'A',
                b if b.is_ascii_alphanumeric() => b + 1,
                b'x' => b'y',
                _ => b'x',
            }
        }
    }
    copy
}

/// A copy of `text` without its middle line, with that line's number.
fn line_drop(text: &[u8]) -> Option<(usize, Vec<u8>)> {
    let lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
    if lines.is_empty() {
        return None;
    }
    let middle = lines.len() / 2;
    let kept: Vec<u8> = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != middle)
        .flat_map(|(_, l)| l.iter().copied())
        .collect();
    Some((middle + 1, kept))
}

/// The first lines that stand in different places in two texts holding the same
/// lines.
fn displaced(ours: &[u8], theirs: &[u8]) -> Vec<String> {
    let a: Vec<&[u8]> = ours.split(|&b| b == b'\n').collect();
    let b: Vec<&[u8]> = theirs.split(|&b| b == b'\n').collect();
    a.iter()
        .zip(&b)
        .enumerate()
        .filter(|(_, (x, y))| x != y)
        .take(DISPLACED_SHOWN)
        .map(|(i, (x, y))| {
            format!(
                "line {}: reference `{}`, candidate `{}`",
                i + 1,
                clipped(x),
                clipped(y)
            )
        })
        .collect()
}

/// Characters of a displaced line shown; a list of deep paths can run to pages.
const DISPLACED_CHARS: usize = 160;

/// A line as the report shows it: escaped, and cut with a count when long.
fn clipped(line: &[u8]) -> String {
    let shown = printable(line);
    match shown.char_indices().nth(DISPLACED_CHARS) {
        Some((cut, _)) => format!("{}… ({} bytes in all)", &shown[..cut], line.len()),
        None => shown,
    }
}

fn compare_status(reference: &ArmStatus, candidate: &ArmStatus) -> StreamResult {
    let identical = reference == candidate;
    StreamResult {
        stream: Stream::Status,
        verdict: if identical {
            StreamVerdict::Identical
        } else {
            StreamVerdict::Differs
        },
        displaced: Vec::new(),
        diff: (!identical)
            .then(|| format!("-{}\n+{}\n", reference.describe(), candidate.describe())),
    }
}

/// Replaces the tree's path with `{tree}` wherever it stands as a whole path
/// prefix: not inside a longer name (`/t/web2` is not `/t/web`), and not as part of
/// another path (`/x/t/web`).
pub fn rewrite_root(bytes: &[u8], root: &[u8]) -> Vec<u8> {
    if root.is_empty() {
        return bytes.to_vec();
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while let Some(found) = find(&bytes[at..], root) {
        let start = at + found;
        let end = start + root.len();
        out.extend_from_slice(&bytes[at..start]);
        if stands_alone(bytes, start, end, root) {
            out.extend_from_slice(TREE_PLACEHOLDER.as_bytes());
        } else {
            out.extend_from_slice(root);
        }
        at = end;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// How many times the root stands as a whole path in `bytes`.
fn count(bytes: &[u8], root: &[u8]) -> usize {
    let mut times = 0;
    let mut at = 0;
    while let Some(found) = find(&bytes[at..], root) {
        let start = at + found;
        let end = start + root.len();
        times += usize::from(stands_alone(bytes, start, end, root));
        at = end;
    }
    times
}

fn stands_alone(bytes: &[u8], start: usize, end: usize, root: &[u8]) -> bool {
    let before_ok = start == 0 || !continues_path(bytes[start - 1]);
    let after_ok = end == bytes.len() || !continues_name(bytes[end]) || root.ends_with(b"/");
    before_ok && after_ok
}

/// Bytes that would make a path before the root part of a longer path.
fn continues_path(b: u8) -> bool {
    b == b'/' || continues_name(b)
}

/// Bytes that would make the root's last name part of a longer name.
fn continues_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'~' | b'+') || b >= 0x80
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Longest a diff may take to compute before similar settles for a coarser one.
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// A unified diff with three lines of context, reference as `-`, candidate as `+`.
/// Bytes that are not UTF-8 are shown as `\xNN`, so a difference in them stays
/// visible; a long diff is cut with a count, and a large one is computed against
/// a deadline rather than in time that grows with the square of its size.
pub fn unified_diff(reference: &[u8], candidate: &[u8]) -> String {
    let ours = printable(reference);
    let theirs = printable(candidate);
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(DIFF_DEADLINE)
        .diff_lines(ours.as_str(), theirs.as_str());
    let mut text = String::from("--- reference\n+++ candidate\n");
    let mut shown = 0;
    let mut left_out = 0;
    for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
        let body = hunk.to_string();
        let lines = body.lines().count();
        if shown + lines > DIFF_LINES_SHOWN {
            // A first hunk too long to show whole is shown in part, so a long
            // diff never comes out as a count alone.
            if shown == 0 {
                for line in body.lines().take(DIFF_LINES_SHOWN) {
                    text.push_str(line);
                    text.push('\n');
                }
                shown = DIFF_LINES_SHOWN;
                left_out += lines - DIFF_LINES_SHOWN;
            } else {
                left_out += lines;
            }
            continue;
        }
        shown += lines;
        text.push_str(&body);
    }
    if left_out > 0 {
        text.push_str(&format!("… {left_out} more diff lines not shown\n"));
    }
    text
}

/// Lines of context kept before the first difference, and lines shown after it.
const WINDOW_BEFORE: usize = 3;
const WINDOW_AFTER: usize = 5;

/// Bytes read on each side of the first difference to show it; lines reaching
/// past that are shown cut.
const WINDOW_BYTES: usize = 8192;

/// The first difference between two texts in memory, shown as
/// [`render_first_difference`] does.
pub fn first_difference(ours: &[u8], theirs: &[u8]) -> String {
    let at = ours
        .iter()
        .zip(theirs)
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(theirs.len()));
    let line = 1 + ours[..at].iter().filter(|&&b| b == b'\n').count();
    let from = at.saturating_sub(WINDOW_BYTES);
    let window = |text: &[u8]| Window {
        bytes: text[from..(at + WINDOW_BYTES).min(text.len())].to_vec(),
        from,
        to_end: at + WINDOW_BYTES >= text.len(),
    };
    render_first_difference(&window(ours), &window(theirs), line, at)
}

/// The first difference between two files of any size, found by reading both side
/// by side in blocks; only a window around it is ever held in memory.
pub fn first_difference_of_files(ours: &Path, theirs: &Path) -> io::Result<String> {
    let (mut a, mut b) = (File::open(ours)?, File::open(theirs)?);
    let (mut x, mut y) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    let (mut offset, mut newlines) = (0usize, 0usize);
    let at = loop {
        let n = read_full(&mut a, &mut x)?;
        let m = read_full(&mut b, &mut y)?;
        let common = n.min(m);
        if let Some(p) = x[..common]
            .iter()
            .zip(&y[..common])
            .position(|(p, q)| p != q)
        {
            newlines += x[..p].iter().filter(|&&c| c == b'\n').count();
            break offset + p;
        }
        newlines += x[..common].iter().filter(|&&c| c == b'\n').count();
        offset += common;
        if n != m || n == 0 {
            break offset;
        }
    };
    let from = at.saturating_sub(WINDOW_BYTES);
    let window = |path: &Path| -> io::Result<Window> {
        use std::io::{Seek, SeekFrom};
        let mut file = File::open(path)?;
        let len = file.metadata()?.len() as usize;
        file.seek(SeekFrom::Start(from as u64))?;
        let mut bytes = Vec::new();
        file.take((at - from + WINDOW_BYTES) as u64)
            .read_to_end(&mut bytes)?;
        Ok(Window {
            bytes,
            from,
            to_end: at + WINDOW_BYTES >= len,
        })
    };
    Ok(render_first_difference(
        &window(ours)?,
        &window(theirs)?,
        newlines + 1,
        at,
    ))
}

/// The bytes of a text around its first difference: from offset `from`, and
/// whether they reach the text's end.
struct Window {
    bytes: Vec<u8>,
    from: usize,
    to_end: bool,
}

/// Shows a first difference: up to [`WINDOW_BEFORE`] lines of context, then up to
/// [`WINDOW_AFTER`] lines of each side from the line where they part, each long
/// line cut around where the difference is. The windows agree up to `offset`, the
/// difference, which is on line `line` of the whole texts.
fn render_first_difference(ours: &Window, theirs: &Window, line: usize, offset: usize) -> String {
    let at = offset - ours.from;
    let line_start = ours.bytes[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let column = at - line_start;
    let mut text = format!(
        "--- reference\n+++ candidate\n@@ first difference at line {line}, byte {offset}; the texts are not compared past it @@\n"
    );
    let before: Vec<&[u8]> = ours.bytes[..line_start]
        .split_inclusive(|&b| b == b'\n')
        .collect();
    // The window's first line may begin before the window: leave it out.
    let skip_partial = usize::from(ours.from > 0);
    for context in before
        .iter()
        .skip(skip_partial)
        .rev()
        .take(WINDOW_BEFORE)
        .rev()
    {
        text.push(' ');
        text.push_str(&cut_around(context, 0, true));
        text.push('\n');
    }
    let starts_whole = line_start > 0 || ours.from == 0;
    for (prefix, side) in [('-', ours), ('+', theirs)] {
        let lines: Vec<&[u8]> = side.bytes[line_start..]
            .split_inclusive(|&b| b == b'\n')
            .collect();
        for (i, part) in lines.iter().take(WINDOW_AFTER).enumerate() {
            let whole = (i > 0 || starts_whole) && (part.ends_with(b"\n") || side.to_end);
            text.push(prefix);
            text.push_str(&cut_around(part, if i == 0 { column } else { 0 }, whole));
            text.push('\n');
        }
        if lines.is_empty() {
            text.push_str(&format!("{prefix}(end of text)\n"));
        } else if lines.len() > WINDOW_AFTER {
            text.push_str(&format!("{prefix}…\n"));
        }
    }
    text
}

/// A line (without its newline) as a report shows it: printable, and cut to about
/// [`SHOWN_AROUND`] characters around `column` when it is long. `whole` says
/// whether `line` is all of the line, or only the part in view.
fn cut_around(line: &[u8], column: usize, whole: bool) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    if line.len() <= SHOWN_AROUND && whole {
        return printable(line);
    }
    let from = column.saturating_sub(SHOWN_AROUND / 4).min(line.len());
    let to = (from + SHOWN_AROUND).min(line.len());
    let length = if whole {
        format!("{} bytes in all", line.len())
    } else {
        format!("a line longer than the {} bytes in view", line.len())
    };
    format!(
        "{}{}{} ({length})",
        if from > 0 { "…" } else { "" },
        printable(&line[from..to]),
        if to < line.len() { "…" } else { "" },
    )
}

/// Whether a text has a line too long to show whole.
fn has_long_line(text: &[u8]) -> bool {
    text.split(|&b| b == b'\n')
        .any(|line| line.len() > LONG_LINE)
}

/// Bytes as a report shows them: text that is not UTF-8 and control characters
/// (but tabs and newlines) as `\xNN`, so an arm's output can neither hide a
/// difference in them nor steer the reader's terminal.
pub fn printable(bytes: &[u8]) -> String {
    let escaped = crate::fixtures::names::escaped(bytes);
    if !escaped
        .chars()
        .any(|c| c.is_control() && c != '\t' && c != '\n')
    {
        return escaped;
    }
    let mut out = String::with_capacity(escaped.len());
    for c in escaped.chars() {
        if c.is_control() && c != '\t' && c != '\n' {
            match u8::try_from(u32::from(c)) {
                Ok(byte) => out.push_str(&format!("\\x{byte:02x}")),
                Err(_) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_becomes_a_placeholder_everywhere() {
        assert_eq!(
            rewrite_root(b"4\t/t/r/a\n8\t/t/r\n", b"/t/r"),
            b"4\t{tree}/a\n8\t{tree}\n"
        );
        assert_eq!(count(b"4\t/t/r/a\n8\t/t/r2\n", b"/t/r"), 1);
    }

    #[test]
    fn only_whole_paths_are_rewritten() {
        assert_eq!(
            rewrite_root(b"t/a t2/b xt/c t\n", b"t"),
            b"{tree}/a t2/b xt/c {tree}\n"
        );
        assert_eq!(
            rewrite_root(b"/x/t/web /t/web/a /t/web2", b"/t/web"),
            b"/x/t/web {tree}/a /t/web2"
        );
    }

    #[test]
    fn bytes_that_are_not_utf8_stay_distinct() {
        let diff = unified_diff(b"a\xffb\n", b"a\xfeb\n");
        assert!(
            diff.contains("-a\\xffb") && diff.contains("+a\\xfeb"),
            "{diff}"
        );
    }

    #[test]
    fn a_large_diff_is_cut_and_counted() {
        let ours: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let theirs: String = (0..5000).map(|i| format!("line {}\n", i * 7)).collect();
        let diff = unified_diff(ours.as_bytes(), theirs.as_bytes());
        assert!(
            diff.lines().count() <= DIFF_LINES_SHOWN + 3,
            "{}",
            diff.lines().count()
        );
        assert!(diff.contains("more diff lines not shown"), "{diff}");
        assert!(
            diff.lines().nth(2).is_some_and(|l| l.starts_with("@@")),
            "{diff}"
        );
    }

    #[test]
    fn a_dropped_line_shows_in_the_diff() {
        let diff = unified_diff(b"1\ta\n2\tb\n3\tc\n", b"1\ta\n3\tc\n");
        assert!(diff.contains("-2\tb"), "{diff}");
        assert!(diff.starts_with("--- reference\n+++ candidate\n"), "{diff}");
    }

    #[test]
    fn the_first_difference_comes_with_context() {
        let ours: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let theirs = ours.replace("line 50\n", "line fifty\n");
        let shown = first_difference(ours.as_bytes(), theirs.as_bytes());
        assert!(shown.contains("first difference at line 51"), "{shown}");
        assert!(shown.contains(" line 49\n-line 50\n"), "{shown}");
        assert!(shown.contains("+line fifty\n+line 51\n"), "{shown}");
        assert!(
            shown.contains(" line 47\n") && !shown.contains("line 46"),
            "{shown}"
        );
    }

    #[test]
    fn mutations_change_letters_and_digits() {
        let text = b"12\t{tree}/a\n7\t{tree}\n";
        for at in spread_points(text, &[]) {
            let copy = mutated(text, at);
            assert_ne!(copy[at], text[at]);
            assert!(copy[at].is_ascii_alphanumeric());
            assert_eq!(copy.len(), text.len());
        }
        assert_eq!(word_edges(b"12\t{tree}/a\n"), vec![0, 1, 4, 7, 10]);
        assert_eq!(line_drop(b"a\nb\nc\n").unwrap(), (2, b"a\nc\n".to_vec()));
        assert_eq!(mutated(b"", spread_points(b"", &[])[0]), b"x");
        let rooted = b"4\t/t/web/a\n";
        let spans = root_spans(rooted, b"/t/web");
        assert_eq!(spans, vec![2..8]);
        assert!(spread_points(rooted, &spans)
            .iter()
            .all(|p| !(2..8).contains(p)));
        let many: String = (0..100).map(|i| format!("w{i} ")).collect();
        let edges = word_edges(many.as_bytes());
        assert_eq!(edges.len(), 2 * WORDS_PER_LINE);
        assert_eq!(
            *edges.last().unwrap(),
            many.len() - 2,
            "the last word is changed too"
        );
    }

    #[test]
    fn lines_are_sampled_over_long_texts() {
        let text: String = (0..1000).map(|i| format!("{i}\tpath\n")).collect();
        let lines = sampled_lines(text.as_bytes());
        assert!(
            (MUTATION_POINTS - 1..=MUTATION_POINTS).contains(&lines.len()),
            "{lines:?}"
        );
        assert_eq!(lines[0], (1, &b"0\tpath\n"[..]));
        assert!(sampled_lines(b"--\n\n").is_empty());
    }

    #[test]
    fn a_difference_in_one_huge_line_is_shown_cut_around_it() {
        let dir = tempfile::tempdir().unwrap();
        let ours = "a".repeat(3_000_000) + "X" + &"b".repeat(3_000_000);
        let theirs = "a".repeat(3_000_000) + "Y" + &"b".repeat(3_000_000);
        std::fs::write(dir.path().join("a"), &ours).unwrap();
        std::fs::write(dir.path().join("b"), &theirs).unwrap();
        let from_files =
            first_difference_of_files(&dir.path().join("a"), &dir.path().join("b")).unwrap();
        let in_memory = first_difference(ours.as_bytes(), theirs.as_bytes());
        assert_eq!(from_files, in_memory);
        assert!(from_files.len() < 1000, "{from_files}");
        assert!(from_files.contains("line 1, byte 3000000"), "{from_files}");
        assert!(
            from_files.contains("aX") && from_files.contains("aY"),
            "{from_files}"
        );
        assert!(
            from_files.contains("(a line longer than the"),
            "{from_files}"
        );
        let short = first_difference(b"x\nsame\nab\n", b"x\nsame\nac\n");
        assert!(short.ends_with(" x\n same\n-ab\n+ac\n"), "{short}");
    }

    #[test]
    fn control_characters_are_shown_escaped() {
        assert_eq!(printable(b"a\x1b[2J\tb\n\x00"), "a\\x1b[2J\tb\n\\x00");
        let diff = unified_diff(b"a\x1b\n", b"a\x07\n");
        assert!(
            diff.contains("-a\\x1b") && diff.contains("+a\\x07"),
            "{diff}"
        );
    }

    #[test]
    fn files_compare_by_contents_across_block_edges() {
        let dir = tempfile::tempdir().unwrap();
        let path = |n: &str| dir.path().join(n);
        let big: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let mut other = big.clone();
        *other.last_mut().unwrap() ^= 1;
        std::fs::write(path("a"), &big).unwrap();
        std::fs::write(path("b"), &big).unwrap();
        std::fs::write(path("c"), &other).unwrap();
        std::fs::write(path("d"), &big[1..]).unwrap();
        assert!(same_contents(&path("a"), &path("b")).unwrap());
        assert!(!same_contents(&path("a"), &path("c")).unwrap());
        assert!(!same_contents(&path("a"), &path("d")).unwrap());
    }

    #[test]
    fn lines_compare_as_a_multiset() {
        let dir = tempfile::tempdir().unwrap();
        let set = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            line_multiset(&path).unwrap()
        };
        assert_eq!(set("a", "x\ny\ny\n"), set("b", "y\nx\ny\n"));
        assert_ne!(set("c", "x\ny\n"), set("d", "x\ny\ny\n"));
        assert_ne!(set("e", "x\ny\n"), set("f", "x\ny"));
        assert_ne!(set("g", "xy\n"), set("h", "x\ny\n"));
        let long = "z".repeat(200_000);
        assert_eq!(
            set("i", &format!("{long}\na\n")),
            set("j", &format!("a\n{long}\n"))
        );
    }

    #[test]
    fn displaced_lines_are_clipped() {
        let long = "d/".repeat(500);
        let shown = displaced(
            format!("{long}\nb\n").as_bytes(),
            format!("b\n{long}\n").as_bytes(),
        );
        assert_eq!(shown.len(), 2);
        assert!(shown[0].len() < 400, "{}", shown[0]);
        assert!(shown[0].contains("… (1000 bytes in all)"), "{}", shown[0]);
        assert!(
            shown[1].starts_with("line 2: reference `b`"),
            "{}",
            shown[1]
        );
    }
}
