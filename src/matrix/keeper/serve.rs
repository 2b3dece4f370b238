//! The keeper process: reads one request per line on stdin, starts the run, says
//! its pid at once (so eqcheck can kill its group on an interrupt), waits for it,
//! ends everything the run left, and only then says what it cost, as JSON lines
//! on stdout. Its stdin closing (eqcheck ended, however) kills the run going, if
//! any, and ends the keeper.

use std::io::{self, BufRead, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

#[cfg(target_os = "linux")]
use super::clone;
use super::{unix, Cap, Cost, Request, Streams, CAP_POLL};
use crate::outcome::ArmStatus;

/// The first argument that makes eqcheck's binary a keeper; not a subcommand
/// anyone types.
pub const KEEPER_ARGUMENT: &str = "__eqcheck-keeper";

/// What the keeper says about a run.
#[derive(Debug, Serialize, Deserialize)]
pub(super) enum Reply {
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
pub(super) struct Measured {
    status: ArmStatus,
    wall_ns: u64,
    user_ns: Option<u64>,
    system_ns: Option<u64>,
    peak_bytes: Option<u64>,
    left_running: Option<usize>,
}

/// What the keeper's one thread of work waits for.
enum Event {
    Request(String),
    /// stdin closed: eqcheck is gone or done.
    Closed,
    /// The run's first process was reaped, with its status, resource use and
    /// the wall time to then; boxed, as a `rusage` is several times a request's
    /// size on some targets.
    Reaped(Box<io::Result<(i32, libc::rusage)>>, Duration),
}

/// Serves requests until stdin closes; the keeper's whole life.
pub fn serve() -> u8 {
    let collector = crate::sweep::become_keeper();
    let (events, received) = mpsc::channel();
    let reader = events.clone();
    std::thread::spawn(move || {
        for line in io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if reader.send(Event::Request(line)).is_err() {
                return;
            }
        }
        let _ = reader.send(Event::Closed);
    });
    let mut out = io::stdout().lock();
    let mut keeper = Keeper {
        reaper: start_reaper(events),
        received,
        closed: false,
        collector,
        #[cfg(target_os = "linux")]
        spawn: clone::Spawn::wanted(),
    };
    while let Ok(Event::Request(line)) = keeper.received.recv() {
        let reply = match serde_json::from_str::<Request>(&line) {
            Ok(request) => keeper.run(&request, &mut out),
            Err(err) => Reply::NotStarted {
                errno: None,
                error: format!("the keeper got a request it cannot read: {err}"),
            },
        };
        if send(&mut out, &reply).is_err() || keeper.closed {
            break;
        }
    }
    0
}

/// The keeper's one reaper: waits for each run's first process it is handed,
/// and says when it ended. One thread for the keeper's life, not one a run: a
/// thread made while the run's program starts takes its core for about a tenth
/// of a millisecond, often the very core the program was about to start on,
/// and that time was inside the run's timed span.
fn start_reaper(events: Sender<Event>) -> Sender<(u32, Instant)> {
    let (reaper, runs) = mpsc::channel::<(u32, Instant)>();
    std::thread::spawn(move || {
        for (pid, started) in runs {
            let reaped = unix::wait4(pid);
            let wall = started.elapsed();
            if events.send(Event::Reaped(Box::new(reaped), wall)).is_err() {
                return;
            }
        }
    });
    reaper
}

fn send(out: &mut impl Write, reply: &Reply) -> io::Result<()> {
    serde_json::to_writer(&mut *out, reply)?;
    out.write_all(b"\n")?;
    out.flush()
}

struct Keeper {
    /// Hands each run's pid and start to the reaper.
    reaper: Sender<(u32, Instant)>,
    received: Receiver<Event>,
    /// stdin closed during a run.
    closed: bool,
    collector: crate::sweep::Collector,
    /// How runs start: cloned into the control group, until the kernel says it
    /// cannot, or forked when asked.
    #[cfg(target_os = "linux")]
    spawn: clone::Spawn,
}

impl Keeper {
    /// Starts one run, says its pid, waits for it, ends what it left, and says
    /// what it cost.
    fn run(&mut self, request: &Request, out: &mut impl Write) -> Reply {
        let streams = match request.open_streams() {
            Ok(streams) => streams,
            Err(err) => return not_started(&err, "cannot open the run's output files"),
        };
        let (pid, started) = match self.start(request, streams) {
            Ok(started) => started,
            Err(reply) => return reply,
        };
        // The reaper ends only when the events' receiver, this keeper's, is gone.
        (self.reaper.send((pid, started))).expect("the reaper outlives the keeper's loop");
        let _ = send(out, &Reply::Started { pid });
        let (reaped, wall, timed_out) = self.wait(pid, started, request);
        // Whatever the run left (in its group, or escaped from it) would go on
        // using the machine, and the tree, and the HOME of the runs after it.
        let left = self.collector.end_run(pid);
        let cost = match reaped {
            Ok((raw_status, usage)) => Cost {
                left_running: Some(left),
                ..unix::cost_of(raw_status, &usage, wall, timed_out)
            },
            Err(err) => Cost::failed(format!("waiting for process {pid}: {err}")),
        };
        Reply::Done(Measured::from(cost))
    }

    /// Starts the run in the runs' control group, and says its pid and when it
    /// started: cloned straight into the group where the kernel can, else forked
    /// by std and moved in before its program starts.
    fn start(&mut self, request: &Request, streams: Streams) -> Result<(u32, Instant), Reply> {
        #[cfg(target_os = "linux")]
        if let Some(cloned) = self.clone_into_group(request, &streams) {
            return cloned;
        }
        let mut command = request
            .command_with(streams)
            .map_err(|err| not_started(&err, &request.program()))?;
        self.collector.prepare(&mut command);
        unix::start_with_default_signals(&mut command);
        let started = Instant::now();
        // The Child is dropped at once: it holds no pipes, and wait4 reaps it.
        let child = command
            .spawn()
            .map_err(|err| not_started(&err, &request.program()))?;
        self.collector.started(child.id());
        Ok((child.id(), started))
    }

    /// The run cloned into the group, or none when it is to be forked: asked
    /// to, no group to clone into, or a kernel that cannot.
    #[cfg(target_os = "linux")]
    fn clone_into_group(
        &mut self,
        request: &Request,
        streams: &Streams,
    ) -> Option<Result<(u32, Instant), Reply>> {
        let not_cloned = |why: &str| {
            let err = io::Error::new(io::ErrorKind::Unsupported, why.to_string());
            Some(Err(not_started(
                &err,
                &format!("{}=clone", clone::SPAWN_VAR),
            )))
        };
        if self.spawn == clone::Spawn::Fork {
            return None;
        }
        let Some(group) = self.collector.group() else {
            return match self.spawn {
                clone::Spawn::CloneOnly => not_cloned("no control group to clone the run into"),
                _ => None,
            };
        };
        let started = Instant::now();
        match clone::start(request, streams, group) {
            clone::Cloned::Started(pid) => Some(Ok((pid, started))),
            clone::Cloned::Failed(err) => Some(Err(not_started(&err, &request.program()))),
            clone::Cloned::Unsupported if self.spawn == clone::Spawn::CloneOnly => {
                not_cloned("this kernel cannot clone a process into a control group")
            }
            // Asked once: the answer holds for the keeper's life.
            clone::Cloned::Unsupported => {
                self.spawn = clone::Spawn::Fork;
                None
            }
        }
    }

    /// Waits for the run's first process to be reaped, killing its group when the
    /// timeout passes (then the timeout is returned), when stdin closes, or when an
    /// output file passes the cap: the file size limit stops only the process that
    /// wrote past it, and the rest of the run is killed with it.
    fn wait(&mut self, pid: u32, started: Instant, request: &Request) -> Waited {
        // A timeout too far off to be an instant is no timeout.
        let mut deadline = started.checked_add(request.timeout());
        let mut cap = Cap::of(request);
        let mut timed_out = None;
        loop {
            let poll = cap.as_ref().map(|_| CAP_POLL);
            let wait = deadline.map(|at| at.saturating_duration_since(Instant::now()));
            let event = match wait.into_iter().chain(poll).min() {
                Some(slice) => self.received.recv_timeout(slice),
                None => (self.received.recv()).map_err(|_| RecvTimeoutError::Disconnected),
            };
            match event {
                Ok(Event::Reaped(reaped, wall)) => return (*reaped, wall, timed_out),
                Ok(Event::Request(_)) => {}
                // Only a reaper that died could leave nothing to send: the run
                // would never be said reaped.
                Err(RecvTimeoutError::Disconnected) => {
                    self.closed = true;
                    crate::cleanup::kill_group(pid);
                    let lost = io::Error::other("the keeper's reaper thread ended");
                    return (Err(lost), started.elapsed(), timed_out);
                }
                Ok(Event::Closed) => {
                    self.closed = true;
                    crate::cleanup::kill_group(pid);
                    deadline = None;
                }
                Err(RecvTimeoutError::Timeout)
                    if deadline.is_some_and(|at| Instant::now() >= at) =>
                {
                    timed_out = Some(request.timeout());
                    crate::cleanup::kill_group(pid);
                    deadline = None;
                }
                Err(RecvTimeoutError::Timeout) => {
                    if cap.as_ref().is_some_and(Cap::passed) {
                        crate::cleanup::kill_group(pid);
                        cap = None;
                    }
                }
            }
        }
    }
}

/// The run's status, resource use and wall time from `wait4`, and its timeout
/// when that passed.
type Waited = (io::Result<(i32, libc::rusage)>, Duration, Option<Duration>);

fn not_started(err: &io::Error, what: &str) -> Reply {
    Reply::NotStarted {
        errno: err.raw_os_error(),
        error: format!("{what}: {err}"),
    }
}

impl From<Cost> for Measured {
    fn from(cost: Cost) -> Measured {
        let nanos = |d: Duration| d.as_nanos().min(u64::MAX as u128) as u64;
        Measured {
            status: cost.status,
            wall_ns: nanos(cost.wall),
            user_ns: cost.user.map(nanos),
            system_ns: cost.system.map(nanos),
            peak_bytes: cost.peak_bytes,
            left_running: cost.left_running,
        }
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
            left_running: measured.left_running,
        }
    }
}
