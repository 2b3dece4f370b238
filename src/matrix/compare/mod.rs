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
//! Memory stays bounded: outputs are files; a stream larger than
//! [`NORMALIZE_CAP`] is compared by hash, and when it differs, line by line as
//! it streams from disk (or as a multiset of lines, spilled to disk, when its only
//! rule sorts lines); normalized texts larger than [`DIFF_CAP`] are compared line
//! by line too. Either way every differing line is counted and the first hunks
//! shown. Each limit that is hit is noted in the case.

mod files;
mod hunk;
mod hunks;
mod lines;
mod multiset;
mod ordered;
mod root;
mod show;
mod streams;
mod trust;

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::exec::Captured;
use crate::normalize::{Rule, TREE_ROOT_RULE};
use crate::outcome::{
    ArmStatus, Fired, FlakyArm, Stream, StreamResult, StreamVerdict, Variant, Verdict,
};
pub use files::{digest_file, same_contents};
use files::{line_multiset, load, Loaded};
use hunks::{in_order, Sides};
use lines::Text;
use root::count;
pub use root::rewrite_root;
pub use show::{first_difference, first_difference_of_files, printable, unified_diff};

/// Largest stream (per arm) that is loaded, normalized and diffed in memory. A
/// canonical JSON document takes several times its size while it is rebuilt, and
/// cases run in parallel: 4 MiB keeps a case well under 100 MB.
pub const NORMALIZE_CAP: u64 = 4 << 20;

/// Largest normalized text handed to the full line diff; beyond it, lines are
/// compared as they stream, counted, and the first hunks shown.
pub const DIFF_CAP: usize = 2 << 20;

/// Variants of a flaky arm shown with a diff from the first; the rest are listed.
const VARIANT_DIFFS: usize = 5;

/// The two sides of a flaky arm's variant diff.
const VARIANTS: Sides<'static> = Sides {
    old: "variant 1",
    new: "this variant",
    old_said: "variant 1",
    new_said: "this variant",
};

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
    /// The first stream whose rules the trust check caught hiding a difference.
    hiding: Option<trust::Hidden>,
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
        hiding: None,
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
                if !run.status.ran_to_its_end() {
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
            if !variants.is_empty() {
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
        match self.hiding.take() {
            Some(hidden) => Ok((
                Verdict::Error {
                    reason: hidden.reason,
                },
                streams,
            )),
            None => Ok((verdict, streams)),
        }
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

    /// The distinct outputs among one arm's runs, each with the runs that gave it;
    /// none when the runs all agree (or there is only one), so the arm is flaky
    /// exactly when there are some.
    fn variants(&mut self, runs: &[Captured]) -> io::Result<Vec<Variant>> {
        if runs.len() < 2 {
            return Ok(Vec::new());
        }
        let mut seen: Vec<RunDigest> = Vec::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut representative: Vec<usize> = Vec::new();
        for (i, run) in runs.iter().enumerate() {
            // Only digests are kept: a hundred runs that all differ must not hold a
            // hundred texts. The diffs below load their two variants again.
            let output = self.run_output(run)?.digest;
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
                    let (sum, ends) = line_multiset(path)?;
                    hasher.update(b"lines");
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
            digest: RunDigest {
                digest: hasher.finalize().into(),
                over_cap_with_rules,
            },
            stdout,
            stderr,
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
                (Some(a), Some(b)) => self.diff(stream, a, b, VARIANTS)?.0,
                _ if same_contents(path_a, path_b)? => continue,
                _ => in_order(Text::File(path_a), Text::File(path_b), VARIANTS)?.diff,
            };
            text.push_str(&format!("{}:\n{part}", stream.name()));
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
}

struct Normalized {
    text: Vec<u8>,
    fired: Vec<(String, usize)>,
}

/// What one run gave: its normalized texts, where small enough to load, for a
/// variant's diff, and its digest.
struct RunOutput {
    digest: RunDigest,
    stdout: Option<Vec<u8>>,
    stderr: Option<Vec<u8>>,
}

/// What flakiness compares of one run, and all that is kept of every run.
struct RunDigest {
    digest: [u8; 32],
    /// A stream was too large to normalize though rules apply to it, so its
    /// digest is of the raw bytes.
    over_cap_with_rules: bool,
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
        lines: None,
    }
}

#[cfg(test)]
mod tests;
