//! How an arm ran: its status (exited, killed, timed out, not started, stopped at
//! the output cap) as reports say it and as JSON carries it back to `merge`, and
//! the byte counts those words use.

use serde::{Deserialize, Serialize};

/// How one arm of one case ran.
#[derive(Debug, Serialize, Deserialize)]
pub struct ArmRun {
    pub argv: Vec<String>,
    /// The command to paste into a shell to run this arm again by hand.
    pub repro: String,
    /// How the first run ended (the one compared); with `--runs`, every run is in
    /// `durations_ms` and a run that ended otherwise makes the case an error or flaky.
    pub status: ArmStatus,
    /// The first run's wall time.
    pub duration_ms: f64,
    /// Every run's wall time, in run order.
    pub durations_ms: Vec<f64>,
    /// The most processes any of its runs left running when its own process
    /// ended: eqcheck ended them, so they could not go on writing into the tree
    /// or the next run's HOME. Counted on Linux and macOS through the keeper (on
    /// Linux without a control group, and on macOS, only those found first) and
    /// on Windows in the run's job.
    #[serde(default)]
    pub left_running: usize,
}

/// How an arm ended. Only `Exited` and `Signaled` runs are ever compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ArmStatus {
    Exited {
        code: i32,
    },
    Signaled {
        signal: i32,
    },
    TimedOut {
        #[serde(deserialize_with = "seconds")]
        after_secs: f64,
    },
    SpawnFailed {
        error: String,
    },
    /// Wrote more than `--max-output` to one stream, and was stopped there.
    OutputCapped {
        stream: Output,
        #[serde(deserialize_with = "whole_number")]
        cap_bytes: u64,
    },
}

/// One of an arm's two output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Output {
    Stdout,
    Stderr,
}

impl Output {
    pub fn name(self) -> &'static str {
        match self {
            Output::Stdout => "stdout",
            Output::Stderr => "stderr",
        }
    }
}

/// A byte count as a person reads it: `4 GiB`, `1 MiB`, `512 KiB` where it is a
/// whole number of them, else in bytes.
pub fn size_text(bytes: u64) -> String {
    let units = [
        (1u64 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ];
    match units
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes % unit == 0)
    {
        Some((unit, name)) => format!("{} {name}", bytes / unit),
        None => format!("{bytes} bytes"),
    }
}

/// A whole number inside a tagged enum, read back, as `seconds` reads a float.
fn whole_number<'de, D: serde::Deserializer<'de>>(from: D) -> Result<u64, D::Error> {
    let value = serde_json::Value::deserialize(from)?;
    value
        .as_u64()
        .ok_or_else(|| serde::de::Error::custom(format!("a whole number, not {value}")))
}

/// A float inside a tagged enum, read back. The enum's fields are buffered before
/// they are read, and with the JSON crate's exact numbers (`arbitrary_precision`)
/// a buffered number is no longer a float: read it as a JSON value first, which
/// knows the exact form.
fn seconds<'de, D: serde::Deserializer<'de>>(from: D) -> Result<f64, D::Error> {
    let value = serde_json::Value::deserialize(from)?;
    value
        .as_f64()
        .ok_or_else(|| serde::de::Error::custom(format!("seconds, not {value}")))
}

impl ArmStatus {
    pub fn completed(&self) -> bool {
        matches!(self, ArmStatus::Exited { .. } | ArmStatus::Signaled { .. })
    }

    /// Ended by SIGKILL (the OOM killer, a supervisor): its output was cut short
    /// wherever it happened to be, so it is not compared. Other signals (a crash)
    /// are the arm's own doing and are compared like exit codes.
    pub fn was_killed(&self) -> bool {
        matches!(self, ArmStatus::Signaled { signal: 9 })
    }

    /// Ran to an end of its own: exited, or died of a signal it brought on itself.
    /// Only such a run's output is whole, and only it is compared and timed.
    pub fn ran_to_its_end(&self) -> bool {
        self.completed() && !self.was_killed()
    }

    /// Exited 0: what a command that must not fail (a bench's baseline) owes.
    pub fn succeeded(&self) -> bool {
        matches!(self, ArmStatus::Exited { code: 0 })
    }

    pub fn describe(&self) -> String {
        match self {
            ArmStatus::Exited { code } => format!("exit {code}"),
            ArmStatus::Signaled { signal: 9 } => {
                "killed by signal 9 (SIGKILL); its output is cut short and is not compared".into()
            }
            ArmStatus::Signaled { signal } => format!("killed by signal {signal}"),
            ArmStatus::TimedOut { after_secs } => {
                format!("timed out after {after_secs}s; its process group was killed")
            }
            ArmStatus::SpawnFailed { error } => format!("could not start: {error}"),
            ArmStatus::OutputCapped { stream, cap_bytes } => format!(
                "{} passed the {} cap (--max-output); the arm was killed",
                stream.name(),
                size_text(*cap_bytes)
            ),
        }
    }
}
