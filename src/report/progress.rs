//! The progress bar on stderr while the matrix runs: cases done out of the cases
//! known so far (each tree adds its cases as it starts), the tree being run, and
//! how many cases were not identical. It draws only when stderr is a terminal, so
//! logs and pipes never see it, and it is cleared before any report is written.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::outcome::{CaseOutcome, Progress, VerdictKind};

/// How often the elapsed time is redrawn while no case finishes (a slow arm, or a
/// tree being built).
const TICK: Duration = Duration::from_millis(200);

/// The bar, or nothing at all when stderr is not a terminal.
pub struct Bar {
    bar: Option<ProgressBar>,
    seen: Mutex<Seen>,
}

/// What the bar's message says: the current tree and the count of each verdict.
#[derive(Default)]
struct Seen {
    tree: String,
    counts: [usize; VerdictKind::ALL.len()],
}

impl Bar {
    /// A bar on stderr when stderr is a terminal, else one that prints nothing.
    pub fn on_stderr() -> Bar {
        if !std::io::stderr().is_terminal() {
            return Bar::hidden();
        }
        let style = ProgressStyle::with_template(
            "{spinner} {elapsed_precise} [{bar:30}] {pos}/{len} cases  {msg}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        let bar =
            ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr()).with_style(style);
        bar.enable_steady_tick(TICK);
        Bar {
            bar: Some(bar),
            seen: Mutex::new(Seen::default()),
        }
    }

    /// A bar that prints nothing.
    pub fn hidden() -> Bar {
        Bar {
            bar: None,
            seen: Mutex::new(Seen::default()),
        }
    }

    /// Removes the bar from the terminal; it draws nothing after this.
    pub fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    fn redraw(&self, seen: &Seen) {
        if let Some(bar) = &self.bar {
            bar.set_message(message(seen));
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.clear();
    }
}

impl Progress for Bar {
    fn tree_started(&self, tree: &str, cases: usize) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.tree = tree.to_string();
        if let Some(bar) = &self.bar {
            bar.inc_length(cases as u64);
        }
        self.redraw(&seen);
    }

    fn case_done(&self, case: &CaseOutcome) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.counts[case.verdict.kind().index()] += 1;
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
        self.redraw(&seen);
    }
}

/// A bench counts rounds of the tree being timed, not cases.
impl crate::outcome::bench::BenchProgress for Bar {
    fn round(&self, tree: &str, round: usize, rounds: usize, warmup: bool) {
        let Some(bar) = &self.bar else {
            return;
        };
        if round == 1 {
            let style = ProgressStyle::with_template(
                "{spinner} {elapsed_precise} [{bar:30}] round {pos}/{len}  {msg}",
            )
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
        }
        bar.set_length(rounds as u64);
        bar.set_position(round as u64);
        let warm = if warmup { " (warm-up)" } else { "" };
        bar.set_message(format!("{tree}{warm}"));
    }
}

/// `edge · 2 order-only, 1 differs`: the tree and every non-identical count so far.
fn message(seen: &Seen) -> String {
    let counts: Vec<String> = VerdictKind::ALL
        .iter()
        .zip(seen.counts)
        .filter(|(kind, n)| **kind != VerdictKind::Identical && *n > 0)
        .map(|(kind, n)| format!("{n} {}", kind.label()))
        .collect();
    if counts.is_empty() {
        seen.tree.clone()
    } else {
        format!("{} · {}", seen.tree, counts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_tree_and_only_the_cases_that_are_not_identical() {
        let mut seen = Seen {
            tree: "edge".into(),
            ..Seen::default()
        };
        assert_eq!(message(&seen), "edge");
        seen.counts = [5, 2, 0, 1, 0, 0];
        assert_eq!(message(&seen), "edge · 2 order-only, 1 differs");
    }
}
