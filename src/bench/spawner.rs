//! The bench's spawner (Unix): a small process of its own that starts every timed
//! run and measures it. On Linux a program's peak resident set (`ru_maxrss`)
//! starts at the size of the process it was forked from, because `execve` keeps
//! the old address space's high-water mark: an arm forked from eqcheck, which
//! holds a tree's fingerprint, would report eqcheck's tens of MiB as its own. The
//! spawner is eqcheck's binary started afresh, before the bench holds anything,
//! so what a run inherits is the spawner's own small private memory (`du -s`
//! reads the same peak here as under `/usr/bin/time`). It reads one request per
//! line on stdin and answers on stdout with
//! JSON lines: the run's process id as soon as it exists (so eqcheck can kill its
//! group on an interrupt), then what the run cost.

use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::timed::{Cost, Request};
use crate::cleanup;
use crate::matrix::exec::{self, ArmUser};
use crate::outcome::ArmStatus;

/// The first argument that makes eqcheck's binary a spawner; not a subcommand
/// anyone types.
pub const SPAWNER_ARGUMENT: &str = "__eqcheck-bench-spawner";

/// What the spawner says about a run.
#[derive(Debug, Serialize, Deserialize)]
enum Reply {
    Started {
        pid: u32,
    },
    /// It could not start: the OS error number, when there is one, and the text.
    NotStarted {
        errno: Option<i32>,
        error: String,
    },
    Done(Measured),
}

/// A run's cost as it crosses the pipe.
#[derive(Debug, Serialize, Deserialize)]
struct Measured {
    status: ArmStatus,
    wall_ns: u64,
    user_ns: Option<u64>,
    system_ns: Option<u64>,
    peak_bytes: Option<u64>,
}

/// Serves requests until stdin closes; the spawner's whole life.
pub fn serve() -> u8 {
    let stdin = io::stdin();
    let mut out = io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let reply = match serde_json::from_str::<Request>(&line) {
            Ok(request) => run(&request, &mut out),
            Err(err) => Reply::NotStarted {
                errno: None,
                error: format!("the bench's spawner got a request it cannot read: {err}"),
            },
        };
        if send(&mut out, &reply).is_err() {
            break;
        }
    }
    0
}

fn send(out: &mut impl Write, reply: &Reply) -> io::Result<()> {
    serde_json::to_writer(&mut *out, reply)?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Starts one run, says its pid, waits for it and says what it cost.
fn run(request: &Request, out: &mut impl Write) -> Reply {
    let mut command = match request.command() {
        Ok(command) => command,
        Err(err) => return not_started(&err, "cannot open the run's output files"),
    };
    let started = Instant::now();
    let child = match command.spawn() {
        Ok(child) => child,
        Err(err) => return not_started(&err, &request.argv[0].to_string_lossy()),
    };
    let _ = send(out, &Reply::Started { pid: child.id() });
    let timeout = Duration::from_millis(request.timeout_ms);
    let cost = super::timed::wait(child, started, timeout);
    let nanos = |d: Duration| d.as_nanos().min(u64::MAX as u128) as u64;
    Reply::Done(Measured {
        status: cost.status,
        wall_ns: nanos(cost.wall),
        user_ns: cost.user.map(nanos),
        system_ns: cost.system.map(nanos),
        peak_bytes: cost.peak_bytes,
    })
}

fn not_started(err: &io::Error, what: &str) -> Reply {
    Reply::NotStarted {
        errno: err.raw_os_error(),
        error: format!("{what}: {err}"),
    }
}

/// eqcheck's end of the spawner: the process and its two pipes.
pub struct Client {
    child: Child,
    /// Taken when the client is dropped: closing it ends the spawner.
    requests: Option<ChildStdin>,
    replies: BufReader<ChildStdout>,
}

impl Client {
    /// Starts the spawner from eqcheck's own binary.
    pub fn start() -> io::Result<Client> {
        let exe = std::env::current_exe()?;
        let mut child = Command::new(exe)
            .arg(SPAWNER_ARGUMENT)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let (Some(requests), Some(replies)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other("the spawner's pipes were not made"));
        };
        Ok(Client {
            child,
            requests: Some(requests),
            replies: BufReader::new(replies),
        })
    }

    /// Has the spawner make one run; `user` words the hint of a run that could
    /// not start.
    pub fn run(&mut self, request: &Request, user: &ArmUser) -> Cost {
        match self.exchange(request, user) {
            Ok(cost) => cost,
            Err(err) => Cost::failed(format!("the bench's spawner failed: {err}")),
        }
    }

    fn exchange(&mut self, request: &Request, user: &ArmUser) -> io::Result<Cost> {
        let Some(requests) = self.requests.as_mut() else {
            return Err(io::Error::other("it was closed"));
        };
        serde_json::to_writer(&mut *requests, request)?;
        requests.write_all(b"\n")?;
        requests.flush()?;
        let mut started = None;
        loop {
            let reply = self.reply()?;
            match reply {
                Reply::Started { pid } => {
                    cleanup::register_group(pid);
                    started = Some(pid);
                }
                Reply::NotStarted { errno, error } => {
                    let hint = errno.map_or(String::new(), |errno| {
                        exec::spawn_hint(&io::Error::from_raw_os_error(errno), user)
                    });
                    return Ok(Cost::failed(format!("{error}{hint}")));
                }
                Reply::Done(measured) => {
                    if let Some(pid) = started {
                        cleanup::forget_group(pid);
                    }
                    return Ok(measured.into());
                }
            }
        }
    }

    fn reply(&mut self) -> io::Result<Reply> {
        let mut line = String::new();
        if self.replies.read_line(&mut line)? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "it ended"));
        }
        serde_json::from_str(&line).map_err(io::Error::other)
    }
}

impl Drop for Client {
    /// Closing its stdin ends the spawner once its run (if any) is over.
    fn drop(&mut self) {
        drop(self.requests.take());
        let _ = self.child.wait();
    }
}

impl From<Measured> for Cost {
    fn from(measured: Measured) -> Cost {
        Cost {
            status: measured.status,
            wall: Duration::from_nanos(measured.wall_ns),
            user: measured.user_ns.map(Duration::from_nanos),
            system: measured.system_ns.map(Duration::from_nanos),
            peak_bytes: measured.peak_bytes,
        }
    }
}
