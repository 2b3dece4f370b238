//! The probe's looks at a tree, folder by folder. Probing an engine, its listing of
//! each folder and the oracle's (`read_dir`) are read in lock-step, and each entry
//! is stat'ed by the engine and then by the oracle (a full-path `lstat`), back to
//! back, a chunk of names at a time spread over the walk's pool, and counted in
//! the listing's order. Both listings of an unchanged folder come in the same
//! order, so only names one side gave ahead of the other wait for their match:
//! what is held is one folder's stragglers and the folders on the way down, never
//! the tree. Probing a lister, whose dump is held whole, the oracle's records are
//! handed over one at a time.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::path::Path;

use super::compare::Tally;
use super::outcome::Side;
use super::record::{self, Record};
use crate::walk::folder::{self, depth_first, on_pool_in_order, Folder, Named, CHUNK};
use crate::walk::{Counters, Engine, FileKind, Listed, StatError, StatFields};

/// Puts `engine`'s look at every entry beside the oracle's, counting both in
/// `tally` and the engine's calls in `census`; returns how many entries the oracle
/// found, the root included.
pub fn side_by_side(engine: Engine, root: &Path, tally: &mut Tally, census: &Counters) -> usize {
    let uncounted = Counters::default();
    let ours = folder::stat_root(engine, root, census);
    let theirs = folder::stat_root(Engine::Reference, root, &uncounted);
    tally.entry(
        &record::of_entry(".".into(), None, &ours),
        &record::of_entry(".".into(), None, &theirs),
    );
    let mut entries = 1;
    if !is_folder(&ours) && !is_folder(&theirs) {
        return entries;
    }
    let roots = (
        folder::open_root(engine, root),
        folder::open_root(Engine::Reference, root),
    );
    depth_first(roots, |(candidate, oracle), relative| {
        let mut pairs = Pairs {
            candidate: candidate.as_ref().ok(),
            oracle: oracle.as_ref().ok(),
            relative,
            tally: &mut *tally,
            census,
            uncounted: &uncounted,
            below: Vec::new(),
            entries: 0,
            ready: Vec::with_capacity(CHUNK),
        };
        pairs.lock_step();
        entries += pairs.entries;
        pairs.below
    });
    entries
}

/// The oracle's record of every entry, the root first; returns how many there were.
pub fn oracle(root: &Path, mut each: impl FnMut(Record)) -> usize {
    let uncounted = Counters::default();
    let stat = folder::stat_root(Engine::Reference, root, &uncounted);
    let descend = is_folder(&stat);
    each(record::of_entry(".".into(), None, &stat));
    let mut entries = 1;
    if !descend {
        return entries;
    }
    depth_first(
        folder::open_root(Engine::Reference, root),
        |oracle, relative| {
            let Ok(oracle) = oracle else {
                return Vec::new();
            };
            let mut below = Vec::new();
            for Named { name, listed, .. } in oracle.names(&uncounted).map_while(Result::ok) {
                let stat = oracle.stat(&name, &uncounted);
                if is_folder(&stat) {
                    below.push(name.clone());
                }
                each(record::of_entry(relative.join(&name), listed, &stat));
                entries += 1;
            }
            below
        },
    );
    entries
}

/// A name both sides listed: what each listing said of it, and the fields the
/// engine's listing gave.
struct Ready {
    name: OsString,
    ours: Option<Listed>,
    our_fields: Option<StatFields>,
    theirs: Option<Listed>,
}

/// One folder's two listings, paired by name.
struct Pairs<'a, 't> {
    candidate: Option<&'a Folder>,
    oracle: Option<&'a Folder>,
    relative: &'a Path,
    tally: &'a mut Tally<'t>,
    census: &'a Counters,
    uncounted: &'a Counters,
    /// The subfolders either side will enter.
    below: Vec<OsString>,
    /// Entries the oracle listed.
    entries: usize,
    /// Names both sides listed, not yet looked at.
    ready: Vec<Ready>,
}

impl Pairs<'_, '_> {
    /// Reads both listings a name at a time and compares the names both gave; a
    /// listing cut short by an error ends there, and what it did not give is
    /// missing on its side.
    fn lock_step(&mut self) {
        let ours = names(self.candidate, self.census).map_while(io::Result::ok);
        let theirs = names(self.oracle, self.uncounted).map_while(io::Result::ok);
        let (ours_only, theirs_only) = pair_up(
            ours.map(|n| (n.name, (n.listed, n.fields))),
            theirs.map(|n| (n.name, n.listed)),
            |name, (listed, fields), theirs| self.pair(name, listed, fields, theirs),
        );
        self.look_at_ready();
        for name in ours_only {
            self.alone(name, Side::Reference);
        }
        for name in theirs_only {
            self.alone(name, Side::Candidate);
        }
    }

    /// A name both sides listed; it is looked at with the next [`CHUNK`] of them.
    fn pair(
        &mut self,
        name: OsString,
        ours: Option<Listed>,
        our_fields: Option<StatFields>,
        theirs: Option<Listed>,
    ) {
        self.ready.push(Ready {
            name,
            ours,
            our_fields,
            theirs,
        });
        if self.ready.len() == CHUNK {
            self.look_at_ready();
        }
    }

    /// Each name ready is stat'ed by the engine and then by the oracle, the names
    /// spread over the walk's pool; the pairs are counted in the listing's order.
    fn look_at_ready(&mut self) {
        let ready = std::mem::take(&mut self.ready);
        let (candidate, oracle, relative) = (self.candidate, self.oracle, self.relative);
        let (census, uncounted) = (self.census, self.uncounted);
        let looked = on_pool_in_order(ready, |ready| {
            let Ready {
                name,
                ours,
                our_fields,
                theirs,
            } = ready;
            let path = relative.join(&name);
            // Fields the listing gave are the engine's look; it stats no further.
            let our_stat = match our_fields {
                Some(fields) => Ok(fields),
                None => stat(candidate, &name, census),
            };
            let their_stat = stat(oracle, &name, uncounted);
            let below = is_folder(&our_stat) || is_folder(&their_stat);
            (
                record::of_entry(path.clone(), ours, &our_stat),
                record::of_entry(path, theirs, &their_stat),
                below.then_some(name),
            )
        });
        for (ours, theirs, below) in looked {
            self.tally.entry(&ours, &theirs);
            self.entries += 1;
            self.below.extend(below);
        }
    }

    /// A name only one side listed, missing on `missing_from`. It is still stat'ed
    /// by the side that listed it, as its walk would, to enter it if a folder:
    /// everything below is missing on the other side too.
    fn alone(&mut self, name: OsString, missing_from: Side) {
        let stat = match missing_from {
            Side::Reference => stat(self.candidate, &name, self.census),
            Side::Candidate => {
                self.entries += 1;
                stat(self.oracle, &name, self.uncounted)
            }
        };
        self.tally.missing(&self.relative.join(&name), missing_from);
        if is_folder(&stat) {
            self.below.push(name);
        }
    }
}

/// Pairs two listings of one folder by name, reading both a name at a time: a
/// name that matches the other side's next, or one it gave earlier, is paired at
/// once, so only names one side gives ahead of the other wait. A name one side
/// gives more often than the other (a listing that repeats an entry) pairs as often
/// as both gave it; the extra copies are left over. Returns the names left over on
/// ours and on theirs.
fn pair_up<A, B>(
    mut ours: impl Iterator<Item = (OsString, A)>,
    mut theirs: impl Iterator<Item = (OsString, B)>,
    mut pair: impl FnMut(OsString, A, B),
) -> (Vec<OsString>, Vec<OsString>) {
    let mut ours_waiting: Waiting<A> = HashMap::new();
    let mut theirs_waiting: Waiting<B> = HashMap::new();
    loop {
        match (ours.next(), theirs.next()) {
            (None, None) => break,
            (Some((a, x)), Some((b, y))) if a == b => pair(a, x, y),
            (a, b) => {
                if let Some((name, x)) = a {
                    match take_one(&mut theirs_waiting, &name) {
                        Some(y) => pair(name, x, y),
                        None => ours_waiting.entry(name).or_default().push(x),
                    }
                }
                if let Some((name, y)) = b {
                    match take_one(&mut ours_waiting, &name) {
                        Some(x) => pair(name, x, y),
                        None => theirs_waiting.entry(name).or_default().push(y),
                    }
                }
            }
        }
    }
    (left_over(ours_waiting), left_over(theirs_waiting))
}

/// Names one side gave that wait for the other side's, each copy with what the
/// listing said of it.
type Waiting<T> = HashMap<OsString, Vec<T>>;

fn take_one<T>(waiting: &mut Waiting<T>, name: &OsString) -> Option<T> {
    let copies = waiting.get_mut(name)?;
    let first = copies.remove(0);
    if copies.is_empty() {
        waiting.remove(name);
    }
    Some(first)
}

fn left_over<T>(waiting: Waiting<T>) -> Vec<OsString> {
    (waiting.into_iter())
        .flat_map(|(name, copies)| std::iter::repeat_n(name, copies.len()))
        .collect()
}

fn names<'a>(
    folder: Option<&'a Folder>,
    census: &'a Counters,
) -> Box<dyn Iterator<Item = io::Result<Named>> + 'a> {
    match folder {
        Some(folder) => folder.names(census),
        None => Box::new(std::iter::empty()),
    }
}

fn stat(
    folder: Option<&Folder>,
    name: &OsString,
    census: &Counters,
) -> Result<StatFields, StatError> {
    let folder = folder.expect("only a side that listed a name stats it");
    folder.stat(name, census)
}

fn is_folder(stat: &Result<StatFields, StatError>) -> bool {
    stat.as_ref().is_ok_and(|s| s.kind == FileKind::Dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listings_in_any_order_pair_every_shared_name_once() {
        let mut rng = fastrand::Rng::with_seed(11);
        for round in 0..500 {
            let all: Vec<u32> = (0..rng.u32(0..40)).collect();
            // Most names once on each side, some missing on one, a few given twice
            // (a listing that repeats an entry).
            let side = |rng: &mut fastrand::Rng| -> Vec<u32> {
                let mut names = Vec::new();
                for &n in &all {
                    let copies = match rng.u8(0..20) {
                        0 | 1 => 0,
                        2 => 2,
                        _ => 1,
                    };
                    names.extend(std::iter::repeat_n(n, copies));
                }
                names
            };
            let mut ours = side(&mut rng);
            let mut theirs = side(&mut rng);
            // Mostly the same order, as two listings of one folder are; sometimes
            // shuffled, as when the folder changed between them.
            if rng.bool() {
                rng.shuffle(&mut ours);
            }
            if rng.u8(0..4) == 0 {
                rng.shuffle(&mut theirs);
            }
            let named = |side: &[u32], tag: u32| -> Vec<(OsString, u32)> {
                side.iter()
                    .map(|&n| (OsString::from(n.to_string()), n + tag))
                    .collect()
            };
            let mut paired = Vec::new();
            let (ours_only, theirs_only) = pair_up(
                named(&ours, 1000).into_iter(),
                named(&theirs, 2000).into_iter(),
                |name, a, b| paired.push((name, a, b)),
            );
            let number = |name: &OsString| name.to_str().unwrap().parse::<u32>().unwrap();
            let mut pairs: Vec<(u32, u32, u32)> =
                paired.iter().map(|(n, a, b)| (number(n), *a, *b)).collect();
            pairs.sort();
            let count = |side: &[u32], n: u32| side.iter().filter(|&&m| m == n).count();
            // A name pairs as many times as the side that gave it less often gave it.
            let both: Vec<(u32, u32, u32)> = (all.iter().copied())
                .flat_map(|n| {
                    std::iter::repeat_n(
                        (n, n + 1000, n + 2000),
                        count(&ours, n).min(count(&theirs, n)),
                    )
                })
                .collect();
            assert_eq!(pairs, both, "round {round}: {ours:?} / {theirs:?}");
            let sorted = |names: &[OsString]| -> Vec<u32> {
                let mut numbers: Vec<u32> = names.iter().map(number).collect();
                numbers.sort();
                numbers
            };
            let only = |a: &[u32], b: &[u32]| -> Vec<u32> {
                (all.iter().copied())
                    .flat_map(|n| std::iter::repeat_n(n, count(a, n).saturating_sub(count(b, n))))
                    .collect()
            };
            assert_eq!(sorted(&ours_only), only(&ours, &theirs), "round {round}");
            assert_eq!(sorted(&theirs_only), only(&theirs, &ours), "round {round}");
        }
    }
}
