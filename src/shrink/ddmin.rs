//! Delta debugging over a list: the fewest items that keep a difference, found by
//! trying to do without chunks of them, halves first. For one item that matters
//! among n it takes about 2·log2(n) tries, which is what keeps a shrink of an
//! 18,000-entry tree within a few hundred arm runs.

/// What trying to do without some items found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tried {
    /// The difference holds without them: they are gone for good.
    Kept,
    /// It does not: they are back.
    Lost,
    /// Stop now (out of runs, interrupted, or the difference stopped holding at
    /// all); what was removed so far stays removed.
    Stop,
}

/// Removes from `items` every chunk that `without` says can go, and returns what is
/// left, and whether `without` asked to stop. `without` is given the chunk to try
/// without; on `Kept` the chunk is dropped from the list. One chunk at a time: the
/// tests' reference for [`minimize_in_batches`].
#[cfg(test)]
pub fn minimize<T: Clone>(items: Vec<T>, without: &mut dyn FnMut(&[T]) -> Tried) -> (Vec<T>, bool) {
    minimize_in_batches(items, 1, &mut |chunks: &[&[T]]| vec![without(chunks[0])])
}

/// [`minimize`] trying up to `jobs` chunks at once: `without` is given the next
/// chunks in order and answers for each (fewer answers mean stop). The first kept
/// chunk, in order, goes, as it would have gone one chunk at a time; the answers
/// after it are not used, so the result is the same for any number of jobs.
pub fn minimize_in_batches<T: Clone>(
    mut items: Vec<T>,
    jobs: usize,
    without: &mut dyn FnMut(&[&[T]]) -> Vec<Tried>,
) -> (Vec<T>, bool) {
    // Everything at once first: the cheapest answer when none of it matters.
    if items.len() > 1 {
        match without(&[&items]).first() {
            Some(Tried::Kept) => return (Vec::new(), false),
            Some(Tried::Lost) => {}
            Some(Tried::Stop) | None => return (items, true),
        }
    }
    // Items already tried alone and needed: never tried alone again.
    let mut needed = vec![false; items.len()];
    let mut parts = 2usize;
    while !items.is_empty() {
        let chunk = items.len().div_ceil(parts);
        let bounds: Vec<(usize, usize)> = (0..items.len())
            .step_by(chunk)
            .map(|start| (start, (start + chunk).min(items.len())))
            .filter(|&(start, end)| !needed[start..end].iter().all(|&n| n))
            .collect();
        let mut dropped = false;
        for batch in bounds.chunks(jobs.max(1)) {
            let chunks: Vec<&[T]> = batch.iter().map(|&(s, e)| &items[s..e]).collect();
            let answers = without(&chunks);
            let mut kept = None;
            for (i, &(start, end)) in batch.iter().enumerate() {
                match answers.get(i) {
                    Some(Tried::Kept) => {
                        kept = Some((start, end));
                        break;
                    }
                    Some(Tried::Lost) => {
                        if end - start == 1 {
                            needed[start] = true;
                        }
                    }
                    Some(Tried::Stop) | None => return (items, true),
                }
            }
            if let Some((start, end)) = kept {
                items.drain(start..end);
                needed.drain(start..end);
                dropped = true;
                break;
            }
        }
        if dropped {
            parts = parts.saturating_sub(1).max(2);
        } else if parts >= items.len() {
            break;
        } else {
            parts = (parts * 2).min(items.len());
        }
    }
    (items, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Minimizes 0..n where `needed` must all stay, counting the tries.
    fn run(n: usize, needed: &[usize]) -> (Vec<usize>, usize) {
        let mut tries = 0;
        let mut current: Vec<usize> = (0..n).collect();
        let (left, stopped) = minimize(current.clone(), &mut |chunk: &[usize]| {
            tries += 1;
            if chunk.iter().any(|i| needed.contains(i)) {
                Tried::Lost
            } else {
                current.retain(|i| !chunk.contains(i));
                Tried::Kept
            }
        });
        assert!(!stopped);
        (left, tries)
    }

    #[test]
    fn one_needed_item_among_thousands_takes_logarithmic_tries() {
        for needed in [0, 1, 999, 1234, 1999] {
            let (left, tries) = run(2000, &[needed]);
            assert_eq!(left, [needed]);
            assert!(tries <= 2 * 11 + 2, "{tries} tries for item {needed}");
        }
    }

    #[test]
    fn several_needed_items_all_stay_and_nothing_else() {
        let (left, _) = run(300, &[3, 150, 299]);
        assert_eq!(left, [3, 150, 299]);
        let (left, tries) = run(50, &[]);
        assert!(left.is_empty());
        assert_eq!(tries, 1, "nothing needed: one try removes everything");
    }

    #[test]
    fn no_item_is_tried_alone_twice() {
        let cases = [
            (2, vec![0usize]),
            (8, vec![0, 1]),
            (8, vec![3, 4, 5]),
            (20, vec![7]),
        ];
        for (n, needed) in cases {
            let mut alone = Vec::new();
            minimize((0..n).collect::<Vec<usize>>(), &mut |chunk: &[usize]| {
                if chunk.len() == 1 {
                    assert!(!alone.contains(&chunk[0]), "{} tried alone twice", chunk[0]);
                    alone.push(chunk[0]);
                }
                match chunk.iter().any(|i| needed.contains(i)) {
                    true => Tried::Lost,
                    false => Tried::Kept,
                }
            });
        }
    }

    #[test]
    fn a_single_item_is_tried_alone() {
        assert_eq!(run(1, &[]).0, Vec::<usize>::new());
        assert_eq!(run(1, &[0]).0, [0]);
    }

    #[test]
    fn batches_remove_what_one_at_a_time_removes() {
        for needed in [vec![5usize], vec![0, 99], vec![10, 11, 12, 60]] {
            let serial = run(100, &needed).0;
            for jobs in [2, 3, 8] {
                let (left, stopped) = minimize_in_batches(
                    (0..100).collect::<Vec<usize>>(),
                    jobs,
                    &mut |chunks: &[&[usize]]| {
                        assert!(chunks.len() <= jobs);
                        (chunks.iter())
                            .map(|c| match c.iter().any(|i| needed.contains(i)) {
                                true => Tried::Lost,
                                false => Tried::Kept,
                            })
                            .collect()
                    },
                );
                assert!(!stopped);
                assert_eq!(left, serial, "{jobs} jobs, needed {needed:?}");
            }
        }
    }

    #[test]
    fn stopping_keeps_what_is_left() {
        let mut calls = 0;
        let (left, stopped) = minimize((0..10).collect::<Vec<_>>(), &mut |_| {
            calls += 1;
            if calls == 1 {
                Tried::Lost
            } else if calls == 2 {
                Tried::Kept
            } else {
                Tried::Stop
            }
        });
        assert!(stopped);
        assert_eq!(left, [5, 6, 7, 8, 9]);
    }
}
