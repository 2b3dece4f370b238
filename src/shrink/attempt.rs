//! Trials, one or several at once. Each of `-j` jobs has a replica of the tree of
//! its own; a batch makes each try's change on its own replica, runs the tries at
//! once, keeps the first one in order whose difference held (as one job at a time
//! would have), undoes the rest, and makes the kept change on every other replica
//! too, so the replicas stay the same tree.

use std::path::PathBuf;

use super::ddmin::Tried;
use super::same_way::Judged;
use super::tree::{Undo, WorkTree};
use super::{count_runs, planned, Phase, Shrinker, StepRecord};
use crate::cleanup;
use crate::flagset::FlagSetFile;
use crate::matrix::TrialAt;
use crate::outcome::CaseOutcome;

/// A change a trial makes to the tree, made alike on every replica.
#[derive(Debug, Clone)]
pub(super) enum Change {
    Without(Vec<PathBuf>),
    Cut(Vec<PathBuf>, u64),
    #[cfg_attr(not(unix), allow(dead_code))]
    DropXattrs(Vec<PathBuf>),
    Rename(Vec<(PathBuf, PathBuf)>),
    /// The folder, and the one entry it holds.
    Flatten(PathBuf, PathBuf),
}

/// One trial to run: the change it makes (none when only the words change), the
/// words it runs with, and how the steps name it.
pub(super) struct Try {
    pub what: String,
    pub change: Option<Change>,
    pub words: Vec<String>,
    /// The flag-set file's `common` words it runs with.
    pub common: Vec<String>,
}

impl WorkTree {
    /// Makes `change`; `None` when it does not apply here (a flattening whose
    /// landing name is taken).
    pub(super) fn apply(&mut self, change: &Change) -> std::io::Result<Option<Undo>> {
        match change {
            Change::Without(rels) => self.hold(rels).map(Some),
            Change::Cut(rels, len) => self.cut(rels, *len).map(Some),
            #[cfg(unix)]
            Change::DropXattrs(rels) => self.drop_xattrs(rels).map(Some),
            #[cfg(not(unix))]
            Change::DropXattrs(_) => Ok(None),
            Change::Rename(pairs) => self.rename(pairs).map(Some),
            Change::Flatten(folder, child) => self.flatten(folder, child),
        }
    }
}

impl Shrinker<'_> {
    /// Runs up to one try per replica at once (fewer when the run budget is
    /// short) and answers for each, in order; an empty answer means stop. The
    /// first kept try's change stays, on every replica.
    pub(super) fn attempt(&mut self, phase: Phase, mut tries: Vec<Try>) -> Vec<Tried> {
        if self.must_stop() {
            return Vec::new();
        }
        let room = (self.options.max_runs - self.arm_runs) / 2;
        tries.truncate(room.min(self.replicas.len()));
        let undos: Vec<Result<Undo, String>> = (tries.iter().enumerate())
            .map(|(i, t)| match &t.change {
                None => Ok(Undo::default()),
                Some(change) => match self.replicas[i].apply(change) {
                    Ok(Some(undo)) => Ok(undo),
                    Ok(None) => Err("it does not apply here".into()),
                    Err(err) => Err(err.to_string()),
                },
            })
            .collect();
        let outcomes = self.run_all(&tries, &undos);
        let mut answers = self.judge_all(phase, &tries, &undos, outcomes);
        let kept = answers.iter().position(|a| *a == Tried::Kept);
        if answers.contains(&Tried::Stop) {
            // An arm changed a copy: no change of this batch is kept, and the
            // reduction ends with the best result written before it.
            let _ = self.settle_all(&tries, undos, None);
            return Vec::new();
        }
        if let Some(k) = kept {
            // The caller's list drops the first kept chunk it is told of: it is
            // told of this one only, so the two cannot disagree.
            answers.truncate(k + 1);
        }
        if !self.settle_all(&tries, undos, kept) {
            return Vec::new();
        }
        if cleanup::interrupted() {
            self.stopped.get_or_insert_with(|| "interrupted".into());
            return Vec::new();
        }
        answers
    }

    /// One try alone.
    pub(super) fn attempt_one(&mut self, phase: Phase, one: Try) -> Tried {
        self.attempt(phase, vec![one])
            .first()
            .copied()
            .unwrap_or(Tried::Stop)
    }

    /// Whether to stop before another trial: interrupted, or no room for one.
    fn must_stop(&mut self) -> bool {
        if cleanup::interrupted() {
            self.stopped.get_or_insert_with(|| "interrupted".into());
            return true;
        }
        if self.arm_runs + 2 > self.options.max_runs {
            let why = format!(
                "the run budget ({} arm runs) is spent",
                self.options.max_runs
            );
            self.stopped.get_or_insert(why);
            return true;
        }
        false
    }

    /// Runs each try whose change was made, on its replica, all at once.
    fn run_all(&self, tries: &[Try], undos: &[Result<Undo, String>]) -> Vec<Option<CaseOutcome>> {
        let first = self.steps.len() + 1;
        std::thread::scope(|scope| {
            let running: Vec<_> = (tries.iter().enumerate())
                .map(|(i, t)| {
                    undos[i].as_ref().ok()?;
                    let case = planned(&self.tree, self.options, &t.words);
                    let dir = self.trials.scratch().join(format!("trial-{}", first + i));
                    let root = &self.replicas[i].root;
                    let flag_sets = self.flag_sets_with(&t.common);
                    let (trials, matrix, tree) = (self.trials, self.matrix, &self.tree);
                    Some(scope.spawn(move || {
                        let at = TrialAt {
                            tree,
                            root,
                            dir: &dir,
                        };
                        trials.run(matrix, &flag_sets, &at, &case, 1)
                    }))
                })
                .collect();
            (running.into_iter())
                .map(|run| run.and_then(|r| r.join().ok()))
                .collect()
        })
    }

    /// The run's flag-set file with `common` as its common words.
    pub(super) fn flag_sets_with(&self, common: &[String]) -> FlagSetFile {
        FlagSetFile {
            common: common.to_vec(),
            ..self.matrix.flag_sets.clone()
        }
    }

    /// Each try's answer, and a step for each: what it saw, or why its change
    /// could not be made. Only the first try whose difference held is kept; one
    /// in which an arm changed the tree stops the reduction.
    fn judge_all(
        &mut self,
        phase: Phase,
        tries: &[Try],
        undos: &[Result<Undo, String>],
        outcomes: Vec<Option<CaseOutcome>>,
    ) -> Vec<Tried> {
        let mut answers = Vec::new();
        for ((one, undo), outcome) in tries.iter().zip(undos).zip(outcomes) {
            let (answer, seen) = match (undo, outcome) {
                (Err(why), _) => (
                    Tried::Lost,
                    Some(format!("the change could not be made: {why}")),
                ),
                (Ok(_), None) => (Tried::Lost, Some("the trial did not finish".into())),
                (Ok(_), Some(outcome)) => self.judge_one(&outcome, &answers),
            };
            self.steps.push(StepRecord {
                trial: self.steps.len() + 1,
                phase,
                tried: one.what.clone(),
                kept: answer == Tried::Kept,
                seen,
            });
            answers.push(answer);
        }
        answers
    }

    /// One trial's answer, given the answers of the tries before it in its batch.
    fn judge_one(&mut self, outcome: &CaseOutcome, before: &[Tried]) -> (Tried, Option<String>) {
        self.arm_runs += count_runs(outcome);
        if let crate::outcome::Verdict::TreeChanged { changes, .. } = &outcome.verdict {
            let what = changes.first().cloned().unwrap_or_default();
            self.dirty = true;
            self.stopped.get_or_insert_with(|| format!("an arm changed the tree during a trial ({what}): the copy is no longer the tree the trials were judged on, so the reduction stops with the best result so far"));
            return (Tried::Stop, Some("an arm changed the tree".into()));
        }
        match (self.signature).judge(outcome, self.options.any_difference, &self.masker) {
            Judged::Same if before.contains(&Tried::Kept) => {
                let why = "it held, but an earlier try of the same batch was kept";
                (Tried::Lost, Some(why.into()))
            }
            Judged::Same => (Tried::Kept, None),
            Judged::Other(seen) => (Tried::Lost, Some(seen)),
        }
    }

    /// Undoes every try but the kept one, whose change every other replica then
    /// makes too; false (and stopped, saying why) when a replica cannot follow.
    fn settle_all(
        &mut self,
        tries: &[Try],
        undos: Vec<Result<Undo, String>>,
        kept: Option<usize>,
    ) -> bool {
        for (i, undo) in undos.into_iter().enumerate() {
            let Ok(undo) = undo else { continue };
            if Some(i) == kept {
                self.replicas[i].forget(undo);
            } else if let Err(err) = undo.apply() {
                self.stopped = Some(format!("cannot undo a trial's change: {err}"));
                return false;
            }
        }
        let Some(k) = kept else { return true };
        if let Some(change) = &tries[k].change {
            for j in (0..self.replicas.len()).filter(|&j| j != k) {
                match self.replicas[j].apply(change) {
                    Ok(Some(undo)) => self.replicas[j].forget(undo),
                    Ok(None) | Err(_) => {
                        self.stopped = Some(format!(
                            "a replica of the tree could not make the kept change ({})",
                            tries[k].what
                        ));
                        return false;
                    }
                }
            }
        }
        self.words = tries[k].words.clone();
        self.common = tries[k].common.clone();
        // A failure is said on stderr; the final write decides the result.
        if (self.best)
            .write(
                &self.replicas[0],
                &self.words,
                &self.common,
                &self.signature,
            )
            .is_ok()
        {
            self.progress();
        }
        true
    }
}
