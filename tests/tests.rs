//! The integration tests, in one binary so the crate is linked once: `util` holds the
//! helpers that build fresh trees and run the built `eqcheck` binary (printing the
//! command, folder, exit code, stdout and stderr when a check fails), and each other
//! module tests one subcommand end to end.

mod arms;
mod bench;
mod big_outputs;
mod corners;
mod cpu;
mod escapes;
mod filesystems;
mod fixtures;
mod flagsets;
mod guard;
mod guide;
mod hardening;
mod hostile_input;
mod identity;
mod images;
mod output_cap;
mod probe;
mod project;
mod ref_rev;
mod reports;
mod rules;
mod run;
mod runners;
mod shards;
mod shrink;
mod shrink_limits;
mod temp_folder;
mod trust;
mod util;
mod verdicts;
mod walk;
mod workflow;
