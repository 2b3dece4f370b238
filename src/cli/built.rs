//! Between resolving a `--ref-rev` run and running it: the revision found in git
//! (a mistake there is the user's, exit 2, before anything is made), then the
//! programs built or taken from the cache (a failure there is the harness's,
//! exit 3) and the arms pointed at them.

use std::path::Path;

use crate::build::{self, BuildError, CandidateBuild, Located};
use crate::exit::Failure;
use crate::matrix::arm::Arm;
use crate::matrix::Matrix;

/// The revision to build, found, and where in it the program will be.
pub(super) struct ToBuild {
    located: Located,
    program: String,
}

/// Finds what `--ref-rev` names, when the run builds anything.
pub(super) fn locate(matrix: &Matrix) -> Result<Option<ToBuild>, Failure> {
    let Some(plan) = &matrix.build else {
        return Ok(None);
    };
    let located = build::locate(&plan.rev).map_err(failure)?;
    let candidate = Path::new(&matrix.candidate.command[0]);
    let program = build::program_path(plan, &located, candidate).map_err(failure)?;
    Ok(Some(ToBuild { located, program }))
}

/// Builds the reference from the revision (or takes it from the cache) and, when
/// the candidate was not given, the working tree's; the arms then run the built
/// files. One line on stderr says what is being built, since a build can take
/// minutes; the build's own output is kept unless it fails.
pub(super) fn build_arms(matrix: &mut Matrix, to_build: &ToBuild) -> Result<(), Failure> {
    let Some(plan) = matrix.build.clone() else {
        return Ok(());
    };
    // Ctrl-C during a build kills it and removes the temporary worktree.
    crate::cleanup::on_interrupt_clean_up();
    let (located, program, command) = (&to_build.located, &to_build.program, &plan.command);
    let joined = shell_words::join(command);
    if !build::is_cached(located, command, program) {
        eprintln!(
            "eqcheck: building {} (commit {}) with `{joined}` in a temporary worktree",
            located.rev, located.commit
        );
    }
    let reference = build::from_revision(located, command, program).map_err(failure)?;
    point_at(&mut matrix.reference, reference);
    match plan.candidate {
        CandidateBuild::Given => {}
        CandidateBuild::TheReference => matrix.candidate = matrix.reference.clone(),
        CandidateBuild::WorkingTree => {
            eprintln!(
                "eqcheck: building the working tree with `{joined}` in {}",
                located.top.display()
            );
            let candidate = build::from_working_tree(located, command, program).map_err(failure)?;
            point_at(&mut matrix.candidate, candidate);
        }
    }
    Ok(())
}

/// The arm now runs the built program, and says where it came from.
fn point_at(arm: &mut Arm, built: build::Built) {
    arm.command[0] = built.program.to_string_lossy().into_owned();
    arm.built_from = Some(built.from);
}

/// A build error as the run ends with it: after an interrupt, the interrupt's
/// exit; else a usage error when it was found before building, named after the
/// flag that asked for it.
fn failure(err: BuildError) -> Failure {
    crate::cleanup::exit_if_interrupted();
    let usage = err.is_usage();
    let err = anyhow::Error::new(err).context("--ref-rev");
    match usage {
        true => Failure::usage(err),
        false => Failure::harness(err),
    }
}
