//! Starting the arms' runs, for the matrix and the bench alike, so that every
//! process a run starts ends with it and what it cost is measured for its whole
//! process tree.
//!
//! On Unix every run is started by a keeper: eqcheck's own binary started afresh
//! (`KEEPER_ARGUMENT`), which starts one run at a time, waits for it with `wait4`
//! (wall, CPU and peak resident set of the run and every descendant it waited
//! for), kills its group at the timeout, and, once the run's first process is
//! reaped, ends everything the run left (see `crate::sweep`: on Linux the keeper
//! is a child subreaper, so orphans in other sessions come back to it) before it
//! says the run is done. The next run starts only then. Why a process of its own:
//! on Linux a program's peak resident set (`ru_maxrss`) starts at the size of the
//! process it was forked from, because `execve` keeps the old address space's
//! high-water mark: an arm forked from eqcheck, which holds a tree's fingerprint,
//! would report eqcheck's tens of MiB as its own. The keeper is small (a fresh
//! `execve`, so it holds none of eqcheck's memory, whenever it is started), and
//! what a run inherits is its small private memory (`du -s` reads the same peak
//! here as under `/usr/bin/time`). The matrix keeps one keeper per run going at
//! once (`-j`), made on demand and reused; the bench uses one. On Linux, where the
//! keeper has a control group for its runs, it clones each run straight into it
//! (`clone`), since std's fork and a move before exec waits a grace period a run.
//!
//! On Windows each run is started in this process inside a job object that kills
//! every process it holds when the run ends (or eqcheck does: the job is closed
//! with the process); the job's accounting covers every process it held.
//! `measure` starts and measures a command in this process, for the benchmarks'
//! peer programs.

#[cfg(unix)]
mod client;
#[cfg(target_os = "linux")]
mod clone;
#[cfg(unix)]
mod serve;
#[cfg(unix)]
mod unix;
#[cfg(windows)]
mod windows;

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::exec::{self, ArmUser};
use crate::outcome::{ArmStatus, Output};

#[cfg(unix)]
pub use serve::{serve, KEEPER_ARGUMENT};
#[cfg(unix)]
use unix as platform;
#[cfg(windows)]
use windows as platform;

#[cfg(unix)]
const NULL_DEVICE: &str = "/dev/null";
#[cfg(windows)]
const NULL_DEVICE: &str = "NUL";

/// What one run cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    pub status: ArmStatus,
    pub wall: Duration,
    pub user: Option<Duration>,
    pub system: Option<Duration>,
    /// Peak resident set (Unix) or peak committed memory (Windows) of the largest
    /// process, in bytes.
    pub peak_bytes: Option<u64>,
    /// Processes the run left running when its first one ended, which were then
    /// ended; none where that is not counted (a run measured in this process).
    pub left_running: Option<usize>,
}

impl Cost {
    pub fn failed(error: String) -> Cost {
        Cost {
            status: ArmStatus::SpawnFailed { error },
            wall: Duration::ZERO,
            user: None,
            system: None,
            peak_bytes: None,
            left_running: None,
        }
    }
}

/// One run to start: what every arm's run gets (pinned environment, a working
/// folder, the arm user, a session and process group of its own), with its
/// streams in files.
#[derive(Debug, Serialize, Deserialize)]
pub struct Request {
    pub argv: Vec<OsString>,
    pub argv0: String,
    /// The whole environment.
    pub env: Vec<(OsString, OsString)>,
    pub working_dir: PathBuf,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    /// Who the run is, when not eqcheck's own user: uid and gid.
    pub user: Option<(u32, u32)>,
    pub timeout_ms: u64,
    /// The most the run may write to each of its streams, in bytes; none: no cap.
    pub max_output: Option<u64>,
}

/// A run's three streams, opened: nothing to read, and its two output files.
pub struct Streams {
    pub stdin: File,
    pub stdout: File,
    pub stderr: File,
}

/// A run's output file, empty: made where missing, and a file an earlier run left
/// emptied only when it holds anything. Not `File::create` on every run: ext4
/// (`auto_da_alloc`) takes a file truncated to nothing and written again for one
/// being replaced, and writes its new data to disk at the writer's close. Over
/// the 59 dust sets on an npm tree that was 138 MiB written per run, where outputs
/// emptied before they are opened again, like outputs removed, never reach the
/// disk. The matrix empties its files once it has judged them (`case::emptied`).
fn empty_output(path: &Path) -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    if file.metadata()?.len() > 0 {
        file.set_len(0)?;
    }
    Ok(file)
}

impl Request {
    /// Opens the run's streams: a failure here is eqcheck's, not the program's.
    pub fn open_streams(&self) -> io::Result<Streams> {
        Ok(Streams {
            stdin: File::open(NULL_DEVICE)?,
            stdout: empty_output(&self.stdout)?,
            stderr: empty_output(&self.stderr)?,
        })
    }

    /// The process, ready to start.
    pub fn command(&self) -> io::Result<Command> {
        self.command_with(self.open_streams()?)
    }

    /// The process with streams already opened, ready to start.
    pub fn command_with(&self, streams: Streams) -> io::Result<Command> {
        let Some((program, args)) = self.argv.split_first() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty command"));
        };
        let mut command = Command::new(program);
        command
            .args(args)
            .stdin(Stdio::from(streams.stdin))
            .stdout(Stdio::from(streams.stdout))
            .stderr(Stdio::from(streams.stderr))
            .env_clear()
            .envs(self.env.iter().cloned())
            // The arm starts in its own HOME: a folder it may enter whoever it
            // runs as, which eqcheck's own working folder may not be.
            .current_dir(&self.working_dir);
        exec::prepare_arm_process(&mut command, &self.argv0, &self.arm_user());
        #[cfg(unix)]
        if let Some(cap) = self.max_output {
            unix::limit_file_size(&mut command, cap);
        }
        Ok(command)
    }

    fn arm_user(&self) -> ArmUser {
        match self.user {
            Some((uid, gid)) => ArmUser::Unprivileged {
                uid,
                gid,
                name: String::new(),
            },
            None => ArmUser::Root,
        }
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// What the run's program is called in a message.
    fn program(&self) -> String {
        self.argv
            .first()
            .map_or_else(String::new, |p| p.to_string_lossy().into_owned())
    }
}

/// How often a capped run's output files are looked at while it runs: on Windows,
/// which has no file size limit per process, to stop the run at all; on Unix, where
/// the limit stops only the process that wrote past it, to kill the rest.
const CAP_POLL: Duration = Duration::from_millis(50);

/// The most a run may write to each of its two output files.
#[derive(Debug)]
pub struct Cap {
    pub bytes: u64,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

impl Cap {
    pub(super) fn of(request: &Request) -> Option<Cap> {
        Some(Cap {
            bytes: request.max_output?,
            stdout: request.stdout.clone(),
            stderr: request.stderr.clone(),
        })
    }

    /// The first stream whose file is past the cap.
    fn passed_by(&self) -> Option<Output> {
        let size = |path: &PathBuf| std::fs::metadata(path).map_or(0, |m| m.len());
        [
            (Output::Stdout, &self.stdout),
            (Output::Stderr, &self.stderr),
        ]
        .into_iter()
        .find(|(_, path)| size(path) > self.bytes)
        .map(|(stream, _)| stream)
    }

    pub(super) fn passed(&self) -> bool {
        self.passed_by().is_some()
    }

    /// The one decision on a finished run's output size: a stream past the cap
    /// makes the run an error that says so, whatever else it did (the cap stopped
    /// it, with SIGXFSZ or a failed write, or Windows ended its job), and the file
    /// is cut back to the cap, so nothing larger stays on disk.
    fn judge(&self, status: ArmStatus) -> ArmStatus {
        let Some(stream) = self.passed_by() else {
            return status;
        };
        let path = match stream {
            Output::Stdout => &self.stdout,
            Output::Stderr => &self.stderr,
        };
        if let Ok(file) = std::fs::OpenOptions::new().write(true).open(path) {
            let _ = file.set_len(self.bytes);
        }
        ArmStatus::OutputCapped {
            stream,
            cap_bytes: self.bytes,
        }
    }
}

/// Starts the arms' runs: through keepers on Unix (one per run going at once,
/// reused), in this process inside a job object on Windows.
pub struct Launcher {
    /// Keepers with no run going.
    #[cfg(unix)]
    idle: std::sync::Mutex<Vec<client::Client>>,
}

impl Launcher {
    /// A launcher with its first keeper started, so a keeper that cannot start
    /// stops the run before its first case.
    pub fn start() -> io::Result<Launcher> {
        Ok(Launcher {
            #[cfg(unix)]
            idle: std::sync::Mutex::new(vec![client::Client::start()?]),
        })
    }

    /// Makes one run and says what it cost; `user` words the hint of a run that
    /// could not start.
    pub fn run(&self, request: &Request, user: &ArmUser) -> Cost {
        let mut cost = self.launch(request, user);
        if let Some(cap) = Cap::of(request) {
            cost.status = cap.judge(cost.status);
        }
        cost
    }

    fn launch(&self, request: &Request, user: &ArmUser) -> Cost {
        #[cfg(unix)]
        {
            let idle = || self.idle.lock().unwrap_or_else(|p| p.into_inner());
            let taken = idle().pop();
            let mut keeper = match taken.map_or_else(client::Client::start, Ok) {
                Ok(keeper) => keeper,
                Err(err) => return Cost::failed(format!("cannot start a keeper process: {err}")),
            };
            match keeper.run(request, user) {
                Ok(cost) => {
                    idle().push(keeper);
                    cost
                }
                // Not reused: it is gone, or out of step with its requests.
                Err(err) => Cost::failed(format!("the keeper process failed: {err}")),
            }
        }
        #[cfg(windows)]
        {
            let mut command = match request.command() {
                Ok(command) => command,
                Err(err) => {
                    return Cost::failed(format!("cannot open the run's output files: {err}"))
                }
            };
            windows::start_suspended(&mut command);
            let started = Instant::now();
            match command.spawn() {
                Ok(child) => {
                    windows::wait(child, started, request.timeout(), Cap::of(request).as_ref())
                }
                Err(err) => {
                    let hint = exec::spawn_hint(&err, user);
                    Cost::failed(format!("{}: {err}{hint}", request.program()))
                }
            }
        }
    }
}

impl Launcher {
    /// Ends every keeper and reaps it (a keeper's runs count among eqcheck's
    /// children's CPU only then); a later run starts a new one.
    pub fn close(&self) {
        #[cfg(unix)]
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

/// Starts `command` in this process and measures it to its end (or its timeout,
/// when its process group is killed): the benchmarks' peers run so, as does every
/// run on Windows. `Err` is a command that could not start.
pub fn measure(mut command: Command, timeout: Duration) -> io::Result<Cost> {
    #[cfg(windows)]
    platform::start_suspended(&mut command);
    let started = Instant::now();
    let child = command.spawn()?;
    #[cfg(unix)]
    return Ok(platform::wait(child, started, timeout));
    #[cfg(windows)]
    return Ok(platform::wait(child, started, timeout, None));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_past_the_cap_errs_the_run_and_is_cut_back_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let cap = Cap {
            bytes: 10,
            stdout: dir.path().join("out"),
            stderr: dir.path().join("err"),
        };
        let exited = ArmStatus::Exited { code: 0 };
        std::fs::write(&cap.stdout, [b'y'; 10]).unwrap();
        std::fs::write(&cap.stderr, b"").unwrap();
        assert_eq!(cap.judge(exited.clone()), exited, "exactly the cap is fine");
        std::fs::write(&cap.stderr, [b'y'; 11]).unwrap();
        let signaled = ArmStatus::Signaled { signal: 25 };
        assert_eq!(
            cap.judge(signaled),
            ArmStatus::OutputCapped {
                stream: Output::Stderr,
                cap_bytes: 10
            }
        );
        assert_eq!(std::fs::metadata(&cap.stderr).unwrap().len(), 10);
    }
}
