//! One timed run for `eqcheck bench`: the process is started, waited for and
//! accounted for as a whole tree, with as little of eqcheck's own work as possible
//! between the clock's two readings. On Unix the wall clock runs from just before
//! the spawn to `wait4`'s return, and `wait4`'s resource usage gives the CPU and
//! the peak resident set of the process and every descendant it waited for. On
//! Windows the process runs in a job object, whose accounting covers every
//! process the job held. A run that outlives its timeout has its whole process
//! group (its job) killed and is marked timed out. `measure` does the same in
//! this process, for the benchmarks' peer programs.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::matrix::exec::{self, ArmUser};
use crate::outcome::ArmStatus;

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
}

impl Cost {
    pub fn failed(error: String) -> Cost {
        Cost {
            status: ArmStatus::SpawnFailed { error },
            wall: Duration::ZERO,
            user: None,
            system: None,
            peak_bytes: None,
        }
    }
}

/// One run to start: what the arms' runs get in the matrix (pinned environment,
/// a working folder, the arm user, a process group of its own), with its streams
/// in files.
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
}

impl Request {
    /// The process, ready to start.
    pub fn command(&self) -> io::Result<Command> {
        let mut command = Command::new(&self.argv[0]);
        command
            .args(&self.argv[1..])
            .stdin(Stdio::null())
            .stdout(File::create(&self.stdout)?)
            .stderr(File::create(&self.stderr)?)
            .env_clear()
            .envs(self.env.iter().cloned())
            .current_dir(&self.working_dir);
        let user = match self.user {
            Some((uid, gid)) => ArmUser::Unprivileged {
                uid,
                gid,
                name: String::new(),
            },
            None => ArmUser::Root,
        };
        exec::prepare_arm_process(&mut command, &self.argv0, &user);
        Ok(command)
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

/// Starts the timed runs: through the spawner on Unix (see `spawner.rs` for why),
/// directly on Windows, where a job object's figures are the job's own.
pub struct Launcher {
    #[cfg(unix)]
    spawner: std::sync::Mutex<super::spawner::Client>,
}

impl Launcher {
    pub fn start() -> io::Result<Launcher> {
        Ok(Launcher {
            #[cfg(unix)]
            spawner: std::sync::Mutex::new(super::spawner::Client::start()?),
        })
    }

    /// Makes one run and says what it cost; `user` words the hint of a run that
    /// could not start.
    pub fn run(&self, request: &Request, user: &ArmUser) -> Cost {
        #[cfg(unix)]
        {
            let mut spawner = self.spawner.lock().unwrap_or_else(|p| p.into_inner());
            spawner.run(request, user)
        }
        #[cfg(windows)]
        {
            let command = match request.command() {
                Ok(command) => command,
                Err(err) => {
                    return Cost::failed(format!("cannot open the run's output files: {err}"))
                }
            };
            match measure(command, request.timeout()) {
                Ok(cost) => cost,
                Err(err) => {
                    let hint = exec::spawn_hint(&err, user);
                    Cost::failed(format!(
                        "{}: {err}{hint}",
                        request.argv[0].to_string_lossy()
                    ))
                }
            }
        }
    }
}

#[cfg(unix)]
pub use platform::wait;
#[cfg(windows)]
use platform::wait;

/// Starts `command` in this process and measures it to its end (or its timeout,
/// when its process group is killed): the benchmarks' peers run so, as does every
/// run on Windows. `Err` is a command that could not start.
pub fn measure(mut command: Command, timeout: Duration) -> io::Result<Cost> {
    let started = Instant::now();
    let child = command.spawn()?;
    Ok(wait(child, started, timeout))
}

#[cfg(unix)]
mod platform {
    use std::os::unix::process::ExitStatusExt;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use super::Cost;
    use crate::cleanup;
    use crate::outcome::ArmStatus;

    /// `wait4` on the child, with a watchdog thread that kills its process group
    /// when the timeout passes first.
    pub fn wait(child: std::process::Child, started: Instant, timeout: Duration) -> Cost {
        let pid = child.id();
        let (done, finished) = mpsc::channel::<()>();
        let watchdog = std::thread::spawn(move || match finished.recv_timeout(timeout) {
            Err(mpsc::RecvTimeoutError::Timeout) => {
                cleanup::kill_group(pid);
                true
            }
            _ => false,
        });
        let waited = wait4(pid);
        let wall = started.elapsed();
        let _ = done.send(());
        let timed_out = watchdog.join().unwrap_or(false);
        // Whatever the run left in its group would go on using the machine (and
        // the tree) during the next timed run.
        cleanup::kill_group(pid);
        // Reaped by wait4 above: the Child must not be waited for again.
        drop(child);
        let (raw_status, usage) = match waited {
            Ok(waited) => waited,
            Err(err) => return Cost::failed(format!("waiting for process {pid}: {err}")),
        };
        let status = match timed_out {
            true => ArmStatus::TimedOut {
                after_secs: timeout.as_secs_f64(),
            },
            false => crate::matrix::exec::status_of(std::process::ExitStatus::from_raw(raw_status)),
        };
        Cost {
            status,
            wall,
            user: Some(duration_of(usage.ru_utime)),
            system: Some(duration_of(usage.ru_stime)),
            peak_bytes: Some(peak_bytes(usage.ru_maxrss)),
        }
    }

    fn wait4(pid: u32) -> std::io::Result<(i32, libc::rusage)> {
        let mut status = 0;
        // SAFETY: rusage is plain old data, all zeroes is a valid value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        loop {
            // SAFETY: both pointers are to live locals of the right types; the pid
            // is our own unreaped child.
            let reaped = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
            if reaped >= 0 {
                return Ok((status, usage));
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(err);
            }
        }
    }

    fn duration_of(time: libc::timeval) -> Duration {
        Duration::from_secs(time.tv_sec.max(0) as u64)
            + Duration::from_micros(time.tv_usec.max(0) as u64)
    }

    /// `ru_maxrss` is in KiB on Linux and the BSDs, in bytes on macOS.
    fn peak_bytes(maxrss: libc::c_long) -> u64 {
        let maxrss = maxrss.max(0) as u64;
        match cfg!(target_os = "macos") {
            true => maxrss,
            false => maxrss * 1024,
        }
    }
}

#[cfg(windows)]
mod platform {
    use std::os::windows::io::AsRawHandle;
    use std::time::{Duration, Instant};

    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, WAIT_TIMEOUT};
    use windows_sys::Win32::System::JobObjects::{
        AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
        JobObjectExtendedLimitInformation, QueryInformationJobObject, TerminateJobObject,
        JOBOBJECTINFOCLASS, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
        JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    };
    use windows_sys::Win32::System::Threading::WaitForSingleObject;

    use super::Cost;
    use crate::outcome::ArmStatus;

    /// Closes the job when the run is over, which also ends what is left in it.
    struct Job(HANDLE);

    impl Drop for Job {
        fn drop(&mut self) {
            // SAFETY: the handle came from CreateJobObjectW and is closed once.
            unsafe {
                TerminateJobObject(self.0, 1);
                CloseHandle(self.0);
            }
        }
    }

    /// The child is put in a fresh job as soon as it exists (a process it starts
    /// in that instant escapes the accounting), waited for, and the job asked.
    pub fn wait(mut child: std::process::Child, started: Instant, timeout: Duration) -> Cost {
        // SAFETY: no name and no security attributes: a fresh anonymous job.
        let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        let job = (!handle.is_null()).then_some(Job(handle));
        let process = child.as_raw_handle() as HANDLE;
        if let Some(job) = &job {
            // SAFETY: both handles are live; a failure only loses the accounting.
            unsafe { AssignProcessToJobObject(job.0, process) };
        }
        let millis = timeout.as_millis().min(u32::MAX as u128 - 1) as u32;
        // SAFETY: the process handle is live while `child` is.
        let timed_out = unsafe { WaitForSingleObject(process, millis) } == WAIT_TIMEOUT;
        if timed_out {
            if let Some(job) = &job {
                // SAFETY: a live job handle.
                unsafe { TerminateJobObject(job.0, 1) };
            }
            let _ = child.kill();
        }
        let status = child.wait();
        let wall = started.elapsed();
        let status = match (timed_out, status) {
            (true, _) => ArmStatus::TimedOut {
                after_secs: timeout.as_secs_f64(),
            },
            (false, Ok(status)) => crate::matrix::exec::status_of(status),
            (false, Err(err)) => ArmStatus::SpawnFailed {
                error: format!("waiting for the process: {err}"),
            },
        };
        let (user, system, peak_bytes) = job.as_ref().map_or((None, None, None), accounting);
        Cost {
            status,
            wall,
            user,
            system,
            peak_bytes,
        }
    }

    /// The job's CPU times (100 ns units) and its largest process's peak commit.
    fn accounting(job: &Job) -> (Option<Duration>, Option<Duration>, Option<u64>) {
        let basic: Option<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION> =
            query(job, JobObjectBasicAccountingInformation);
        let extended: Option<JOBOBJECT_EXTENDED_LIMIT_INFORMATION> =
            query(job, JobObjectExtendedLimitInformation);
        // A job that counted no process, or no CPU at all (a Windows layer that
        // answers without accounting, as Wine does; or a run shorter than one tick
        // of the clock Windows charges CPU by), knows nothing: unknown, never 0.
        let basic = basic
            .filter(|b| b.TotalProcesses > 0 && (b.TotalUserTime > 0 || b.TotalKernelTime > 0));
        let ticks = |t: i64| Duration::from_nanos(t.max(0) as u64 * 100);
        let peak = extended.map(|e| e.PeakProcessMemoryUsed as u64);
        (
            basic.map(|b| ticks(b.TotalUserTime)),
            basic.map(|b| ticks(b.TotalKernelTime)),
            peak.filter(|&p| p > 0),
        )
    }

    /// One class of the job's information, where the system gives it.
    fn query<T: Copy>(job: &Job, class: JOBOBJECTINFOCLASS) -> Option<T> {
        // SAFETY: the classes asked for are plain data structures, for which all
        // zeroes is a valid value; the size passed is the structure's own.
        let mut info: T = unsafe { std::mem::zeroed() };
        let got = unsafe {
            QueryInformationJobObject(
                job.0,
                class,
                (&mut info as *mut T).cast(),
                std::mem::size_of::<T>() as u32,
                std::ptr::null_mut(),
            )
        };
        (got != 0).then_some(info)
    }
}
