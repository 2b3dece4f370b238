//! How eqcheck ends: the exit codes, named once so the runner, the reports and the
//! README say the same thing, and the one error type the binary turns into one.

/// Every case identical (or equal in a way the flag set allows).
pub const ALL_EQUAL: u8 = 0;
/// At least one case differs.
pub const DIFFERENCES: u8 = 1;
/// The command line, a config, a flag-set file or a tree spec is wrong: nothing ran.
pub const USAGE: u8 = 2;
/// The harness could not do its job: an arm failed to spawn, timed out or was
/// killed, a `--ref-rev` build failed, or a tree, a scratch folder or a report
/// could not be made or written.
pub const HARNESS_FAILURE: u8 = 3;

/// Why eqcheck stopped short of a verdict. Which of the two it is decides the exit
/// code, and is settled where the error is met, not guessed from its type later.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// What the user asked for is wrong; it is found before any arm runs.
    #[error(transparent)]
    Usage(anyhow::Error),
    /// The harness failed while doing what it was asked, such as writing a report
    /// after the matrix ran.
    #[error(transparent)]
    Harness(anyhow::Error),
}

impl Failure {
    pub fn usage(err: impl Into<anyhow::Error>) -> Failure {
        Failure::Usage(err.into())
    }

    pub fn harness(err: impl Into<anyhow::Error>) -> Failure {
        Failure::Harness(err.into())
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Usage(_) => USAGE,
            Failure::Harness(_) => HARNESS_FAILURE,
        }
    }
}

/// An error and its causes on one line, `error: cause: cause`, as the binary prints
/// a chain: for messages that carry an error into another.
pub fn with_causes(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut cause = err.source();
    while let Some(inner) = cause {
        message = format!("{message}: {inner}");
        cause = inner.source();
    }
    message
}
