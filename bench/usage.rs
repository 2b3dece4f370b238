//! Running one program to the end and taking what it cost, measured as
//! `eqcheck bench` measures its runs (`eqcheck::matrix::keeper`): its wall time,
//! spawn included, and the user and system CPU charged to it and to the
//! descendants it waited for (`wait4` on Unix, a job object on Windows), so no
//! other process's CPU is counted.

use std::io;
use std::process::Command;
use std::time::Duration;

use eqcheck::outcome::ArmStatus;

/// Long enough for any program the benchmarks time; a hung one still ends.
const TIMEOUT: Duration = Duration::from_secs(600);

/// One run of a program.
pub struct Usage {
    /// Whether it exited with status 0.
    pub success: bool,
    pub wall: Duration,
    /// User plus system CPU; `None` where the platform does not say.
    pub cpu: Option<Duration>,
}

/// Runs `command` to the end and takes its wall time and CPU.
pub fn run(command: Command) -> io::Result<Usage> {
    let cost = eqcheck::matrix::keeper::measure(command, TIMEOUT)?;
    Ok(Usage {
        success: cost.status == ArmStatus::Exited { code: 0 },
        wall: cost.wall,
        cpu: cost
            .user
            .zip(cost.system)
            .map(|(user, system)| user + system),
    })
}
