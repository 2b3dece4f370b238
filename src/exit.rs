//! The exit codes of `eqcheck run`, named once so the runner, the reports and the
//! README say the same thing.

/// Every case identical (or equal in a way the flag set allows).
pub const ALL_EQUAL: u8 = 0;
/// At least one case differs.
pub const DIFFERENCES: u8 = 1;
/// The command line, a flag-set file or a tree spec is wrong.
pub const USAGE: u8 = 2;
/// The harness could not do its job: an arm failed to spawn, timed out or was killed.
pub const HARNESS_FAILURE: u8 = 3;
