//! Running one arm: no shell, stdin from the null device, a pinned environment,
//! stdout and stderr streamed to files, and a timeout after which the arm's whole
//! process group is killed and the run is marked timed out, never compared.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::fixtures::cleanup;
use crate::outcome::ArmStatus;

/// The environment every arm runs in, and how long it may run.
#[derive(Debug, Clone)]
pub struct ArmEnvironment {
    /// The whole environment: nothing else is inherited.
    pub vars: Vec<(OsString, OsString)>,
    pub timeout: Duration,
}

impl ArmEnvironment {
    /// The pinned environment: `LC_ALL=C`, `TZ=UTC0`, an empty `HOME` and
    /// `XDG_CONFIG_HOME`, `NO_COLOR=1`, `TERM=dumb`, no `COLUMNS`; only `PATH` (and
    /// on Windows the variables a process cannot start without) come from outside.
    pub fn pinned(home: &Path, timeout: Duration) -> ArmEnvironment {
        let mut vars: Vec<(OsString, OsString)> = vec![
            ("LC_ALL".into(), "C".into()),
            ("TZ".into(), "UTC0".into()),
            ("HOME".into(), home.into()),
            ("XDG_CONFIG_HOME".into(), home.join(".config").into()),
            ("NO_COLOR".into(), "1".into()),
            ("TERM".into(), "dumb".into()),
        ];
        let inherited: &[&str] = if cfg!(windows) {
            &["PATH", "SYSTEMROOT", "WINDIR", "TEMP", "TMP"]
        } else {
            &["PATH"]
        };
        for name in inherited {
            if let Some(value) = std::env::var_os(name) {
                vars.push((name.into(), value));
            }
        }
        ArmEnvironment { vars, timeout }
    }
}

/// What an arm left behind.
#[derive(Debug)]
pub struct Captured {
    pub status: ArmStatus,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    pub duration: Duration,
}

impl Captured {
    /// An arm that could not even be started, for the reason given.
    pub fn failed(error: String) -> Captured {
        Captured {
            status: ArmStatus::SpawnFailed { error },
            stdout: PathBuf::new(),
            stderr: PathBuf::new(),
            duration: Duration::ZERO,
        }
    }
}

/// Runs `argv` with its output in `dir/NAME.out` and `dir/NAME.err`.
pub fn run_arm(argv: &[OsString], env: &ArmEnvironment, dir: &Path, name: &str) -> Captured {
    let stdout = dir.join(format!("{name}.out"));
    let stderr = dir.join(format!("{name}.err"));
    let started = Instant::now();
    let status = spawn_and_wait(argv, env, &stdout, &stderr);
    Captured {
        status,
        stdout,
        stderr,
        duration: started.elapsed(),
    }
}

fn spawn_and_wait(
    argv: &[OsString],
    env: &ArmEnvironment,
    stdout: &Path,
    stderr: &Path,
) -> ArmStatus {
    let Some((program, args)) = argv.split_first() else {
        return ArmStatus::SpawnFailed {
            error: "empty command".into(),
        };
    };
    let expression = duct::cmd(program, args)
        .stdin_null()
        .stdout_path(stdout)
        .stderr_path(stderr)
        .full_env(env.vars.iter().cloned())
        .unchecked()
        .before_spawn(|command| {
            own_process_group(command);
            Ok(())
        });
    let handle = match expression.start() {
        Ok(handle) => handle,
        Err(err) => {
            return ArmStatus::SpawnFailed {
                error: format!("{}: {err}", program.to_string_lossy()),
            }
        }
    };
    let pids = handle.pids();
    for &pid in &pids {
        cleanup::register_group(pid);
    }
    let status = wait_or_kill(&handle, &pids, program, env.timeout);
    for &pid in &pids {
        cleanup::forget_group(pid);
    }
    status
}

fn wait_or_kill(
    handle: &duct::Handle,
    pids: &[u32],
    program: &OsString,
    timeout: Duration,
) -> ArmStatus {
    match handle.wait_timeout(timeout) {
        Ok(Some(output)) => status_of(output.status),
        Ok(None) => {
            // The arm leads its own process group: kill everything it started.
            for &pid in pids {
                cleanup::kill_group(pid);
            }
            let _ = handle.kill();
            let _ = handle.wait();
            ArmStatus::TimedOut {
                after_secs: timeout.as_secs_f64(),
            }
        }
        Err(err) => ArmStatus::SpawnFailed {
            error: format!("waiting for {}: {err}", program.to_string_lossy()),
        },
    }
}

#[cfg(unix)]
fn own_process_group(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
}

#[cfg(not(unix))]
fn own_process_group(_command: &mut std::process::Command) {}

#[cfg(unix)]
fn status_of(status: std::process::ExitStatus) -> ArmStatus {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => ArmStatus::Exited { code },
        (None, Some(signal)) => ArmStatus::Signaled { signal },
        (None, None) => ArmStatus::SpawnFailed {
            error: "ended with neither an exit code nor a signal".into(),
        },
    }
}

#[cfg(not(unix))]
fn status_of(status: std::process::ExitStatus) -> ArmStatus {
    ArmStatus::Exited {
        code: status.code().unwrap_or(-1),
    }
}
