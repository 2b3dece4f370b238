//! The bench's arithmetic: medians and ranges over the runs that count, B/A ratios
//! round by round, and when a ratio ranged too widely to be trusted. Pure
//! functions of the recorded runs, so they are tested without timing anything.

use crate::outcome::bench::{BenchTree, Figures, RatioFigures, Side, Spread, TimedRun};

/// A ratio whose range over the rounds is wider than this share of its median is
/// flagged: noise that size hides a change of the same size.
pub const TRUSTED_RANGE: f64 = 0.25;

/// The median, least and greatest of `values`; the median of an even count is the
/// mean of the two middle values. `None` for no values.
pub fn spread(values: &[f64]) -> Option<Spread> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    let median = match sorted.len() % 2 {
        1 => sorted[middle],
        _ => (sorted[middle - 1] + sorted[middle]) / 2.0,
    };
    Some(Spread {
        median,
        min: sorted[0],
        max: sorted[sorted.len() - 1],
    })
}

/// One side's figures over its timed runs (warm-up runs never count).
pub fn figures(runs: &[TimedRun], side: Side) -> Figures {
    let timed: Vec<&TimedRun> = (runs.iter())
        .filter(|r| r.side == side && !r.warmup)
        .collect();
    let counted: Vec<&TimedRun> = timed.iter().copied().filter(|r| r.counted).collect();
    let of = |figure: &dyn Fn(&TimedRun) -> Option<f64>| {
        let values: Option<Vec<f64>> = counted.iter().map(|r| figure(r)).collect();
        values.and_then(|v| spread(&v))
    };
    Figures {
        counted: counted.len(),
        left_out: timed.len() - counted.len(),
        wall_ms: of(&|r| Some(r.wall_ms)),
        cpu_ms: of(&|r| Some(r.user_ms? + r.system_ms?)),
        user_ms: of(&|r| r.user_ms),
        system_ms: of(&|r| r.system_ms),
        peak_bytes: of(&|r| r.peak_bytes.map(|b| b as f64)),
    }
}

/// B's wall time (and CPU) over A's, in each timed round where both counted.
pub fn ratio(runs: &[TimedRun]) -> Option<RatioFigures> {
    let last_round = runs.iter().map(|r| r.round).max()?;
    let counted = |round: usize, side: Side| {
        (runs.iter()).find(|r| r.round == round && r.side == side && r.counted && !r.warmup)
    };
    let mut wall_by_round = Vec::new();
    let mut cpu = Vec::new();
    for round in 1..=last_round {
        if runs.iter().any(|r| r.round == round && r.warmup) {
            continue;
        }
        let pair = counted(round, Side::A).zip(counted(round, Side::B));
        wall_by_round.push(pair.map(|(a, b)| b.wall_ms / a.wall_ms));
        if let Some((a, b)) = pair {
            let cpu_of = |r: &TimedRun| Some(r.user_ms? + r.system_ms?);
            if let (Some(a), Some(b)) = (cpu_of(a), cpu_of(b)) {
                cpu.push(b / a);
            }
        }
    }
    let walls: Vec<f64> = wall_by_round.iter().flatten().copied().collect();
    Some(RatioFigures {
        wall: spread(&walls)?,
        cpu: spread(&cpu),
        wall_by_round,
    })
}

/// Whether a ratio ranged too widely over its rounds to be trusted.
pub fn too_wide(ratio: &Spread) -> bool {
    ratio.median > 0.0 && (ratio.max - ratio.min) / ratio.median > TRUSTED_RANGE
}

/// Fewer timed runs than this on a side make its median little more than a sample.
const FEWEST_TRUSTED: usize = 3;

/// What makes a tree's figures less trustworthy, row by row.
pub fn warnings(tree: &BenchTree) -> Vec<String> {
    let mut said = Vec::new();
    for row in &tree.rows {
        let name = row.named(&tree.name);
        match &row.ratio {
            Some(ratio) if too_wide(&ratio.wall) => said.push(format!(
                "{name}: B/A ranged from {:.3} to {:.3} around {:.3}, wider than {}% of it: too wide to trust; run more --rounds, on a quieter machine",
                ratio.wall.min,
                ratio.wall.max,
                ratio.wall.median,
                TRUSTED_RANGE * 100.0
            )),
            Some(_) => {}
            None => said.push(format!("{name}: no round where both A and B counted: no ratio")),
        }
        said.extend(left_running(row, &name));
        let fewest = row.a.counted.min(row.b.counted);
        if fewest < FEWEST_TRUSTED && row.ratio.is_some() {
            said.push(format!(
                "{name}: only {fewest} timed run(s) counted on a side: the medians are little more than samples"
            ));
        }
    }
    said
}

/// A side whose runs left processes behind: they were killed, so its times do
/// not include what they would have gone on to do.
fn left_running(row: &crate::outcome::bench::BenchRow, name: &str) -> Vec<String> {
    [Side::A, Side::B]
        .into_iter()
        .filter_map(|side| {
            let runs = row.runs.iter().filter(|r| r.side == side);
            let (all, left) = runs.fold((0, 0), |(all, left), r| {
                (all + 1, left + usize::from(r.left_running > 0))
            });
            (left > 0).then(|| format!(
                "{name}: {} left processes running past its end in {left} of {all} runs; they were killed, so its times leave out what they went on to do",
                side.name()
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::bench::Correctness;
    use crate::outcome::ArmStatus;

    fn run(round: usize, warmup: bool, side: Side, wall_ms: f64, counted: bool) -> TimedRun {
        TimedRun {
            round,
            warmup,
            place: 1,
            side,
            status: ArmStatus::Exited { code: 0 },
            wall_ms,
            user_ms: Some(wall_ms / 2.0),
            system_ms: Some(wall_ms / 4.0),
            peak_bytes: Some(1000),
            left_running: 0,
            stdout_sha256: None,
            stderr_sha256: None,
            correctness: Correctness::Same,
            counted,
        }
    }

    #[test]
    fn medians_of_odd_and_even_counts_and_no_values() {
        let odd = spread(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!((odd.median, odd.min, odd.max), (3.0, 1.0, 5.0));
        let even = spread(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((even.median, even.min, even.max), (2.5, 1.0, 4.0));
        assert_eq!(spread(&[]), None);
        assert_eq!(spread(&[f64::NAN]), None);
    }

    #[test]
    fn warm_up_and_uncounted_runs_stay_out_of_the_figures() {
        let runs = vec![
            run(1, true, Side::A, 1000.0, true),
            run(2, false, Side::A, 10.0, true),
            run(3, false, Side::A, 30.0, true),
            run(4, false, Side::A, 900.0, false),
            run(5, false, Side::A, 20.0, true),
        ];
        let figures = figures(&runs, Side::A);
        assert_eq!((figures.counted, figures.left_out), (3, 1));
        let wall = figures.wall_ms.unwrap();
        assert_eq!((wall.median, wall.min, wall.max), (20.0, 10.0, 30.0));
        assert_eq!(figures.cpu_ms.unwrap().median, 15.0);
        assert_eq!(figures.peak_bytes.unwrap().max, 1000.0);
    }

    #[test]
    fn ratios_pair_each_round_and_skip_rounds_missing_a_side() {
        let runs = vec![
            run(1, true, Side::A, 50.0, true),
            run(1, true, Side::B, 500.0, true),
            run(2, false, Side::A, 10.0, true),
            run(2, false, Side::B, 20.0, true),
            run(3, false, Side::B, 30.0, true),
            run(3, false, Side::A, 10.0, true),
            run(4, false, Side::A, 10.0, true),
            run(4, false, Side::B, 99.0, false),
            run(5, false, Side::B, 25.0, true),
            run(5, false, Side::A, 10.0, true),
        ];
        let ratio = ratio(&runs).unwrap();
        assert_eq!(
            ratio.wall_by_round,
            vec![Some(2.0), Some(3.0), None, Some(2.5)]
        );
        assert_eq!(
            (ratio.wall.median, ratio.wall.min, ratio.wall.max),
            (2.5, 2.0, 3.0)
        );
        assert_eq!(ratio.cpu.unwrap().median, 2.5);
    }

    #[test]
    fn a_range_wider_than_a_quarter_of_the_median_is_flagged() {
        let narrow = Spread {
            median: 1.0,
            min: 0.9,
            max: 1.1,
        };
        let wide = Spread {
            median: 1.0,
            min: 0.8,
            max: 1.1,
        };
        assert!(!too_wide(&narrow));
        assert!(too_wide(&wide));
    }
}
