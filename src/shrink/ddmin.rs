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
/// without; on `Kept` the chunk is dropped from the list.
pub fn minimize<T: Clone>(
    mut items: Vec<T>,
    without: &mut dyn FnMut(&[T]) -> Tried,
) -> (Vec<T>, bool) {
    // Everything at once first: the cheapest answer when none of it matters.
    if items.len() > 1 {
        match without(&items) {
            Tried::Kept => return (Vec::new(), false),
            Tried::Stop => return (items, true),
            Tried::Lost => {}
        }
    }
    // Items already tried alone and needed: never tried alone again.
    let mut needed = vec![false; items.len()];
    let mut parts = 2usize;
    while !items.is_empty() {
        let chunk = items.len().div_ceil(parts);
        let mut dropped = false;
        let mut start = 0;
        while start < items.len() {
            let end = (start + chunk).min(items.len());
            if needed[start..end].iter().all(|&n| n) {
                start = end;
                continue;
            }
            match without(&items[start..end]) {
                Tried::Kept => {
                    items.drain(start..end);
                    needed.drain(start..end);
                    dropped = true;
                    break;
                }
                Tried::Stop => return (items, true),
                Tried::Lost if end - start == 1 => {
                    needed[start] = true;
                    start = end;
                }
                Tried::Lost => start = end,
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
