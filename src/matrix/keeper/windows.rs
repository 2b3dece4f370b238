//! Waiting for a run on Windows: the process runs in a job object of its own,
//! which kills every process it holds when the run ends, when its timeout passes,
//! or when eqcheck ends (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`: the job's last
//! handle closes with eqcheck), and whose accounting covers every process it held.
//! A run starts suspended and is let go only once it is in its job, so nothing it
//! starts can run outside the job.

use std::os::windows::io::AsRawHandle;
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, WAIT_TIMEOUT};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Thread32First, Thread32Next, TH32CS_SNAPTHREAD, THREADENTRY32,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectBasicAccountingInformation,
    JobObjectExtendedLimitInformation, QueryInformationJobObject, SetInformationJobObject,
    TerminateJobObject, JOBOBJECTINFOCLASS, JOBOBJECT_BASIC_ACCOUNTING_INFORMATION,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};
use windows_sys::Win32::System::Threading::{
    OpenThread, ResumeThread, WaitForSingleObject, CREATE_SUSPENDED, THREAD_SUSPEND_RESUME,
};

use super::{Cap, Cost, CAP_POLL};
use crate::outcome::ArmStatus;

/// Closes the job when the run is over, which also ends what is left in it.
struct Job(HANDLE);

impl Drop for Job {
    fn drop(&mut self) {
        crate::cleanup::forget_job(self.0 as usize);
        // SAFETY: the handle came from CreateJobObjectW and is closed once.
        unsafe {
            TerminateJobObject(self.0, 1);
            CloseHandle(self.0);
        }
    }
}

/// The command's process starts suspended: `wait` lets it run once it is in its
/// job.
pub fn start_suspended(command: &mut std::process::Command) {
    use std::os::windows::process::CommandExt;
    command.creation_flags(CREATE_SUSPENDED);
}

/// The child (started with [`start_suspended`]) is put in a fresh job, let run,
/// waited for, and the job asked; with `cap`, the job is ended as soon as either
/// output file is past it.
pub fn wait(
    mut child: std::process::Child,
    started: Instant,
    timeout: Duration,
    cap: Option<&Cap>,
) -> Cost {
    // SAFETY: no name and no security attributes: a fresh anonymous job.
    let handle = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    let job = (!handle.is_null()).then_some(Job(handle));
    if let Some(job) = &job {
        kill_on_close(job);
    }
    let process = child.as_raw_handle() as HANDLE;
    if let Some(job) = &job {
        // SAFETY: both handles are live; a failure only loses the accounting.
        unsafe { AssignProcessToJobObject(job.0, process) };
        // Past an interrupt, this ends the job (the child with it) at once.
        crate::cleanup::register_job(job.0 as usize);
    }
    if !resume(child.id()) {
        let _ = child.kill();
        let _ = child.wait();
        return Cost::failed("the run was started suspended and could not be let run".into());
    }
    let ended = wait_or_stop(process, started, timeout, cap);
    let timed_out = ended == Ended::TimedOut;
    // What is still in the job once its first process is gone is what the run
    // left; closing the job ends it.
    let left_running = (ended == Ended::Exited)
        .then(|| job.as_ref().map(still_in))
        .flatten();
    if ended != Ended::Exited {
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
        left_running,
    }
}

/// The processes still alive in the job: past the run's own, what it left.
fn still_in(job: &Job) -> usize {
    let basic: Option<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION> =
        query(job, JobObjectBasicAccountingInformation);
    basic.map_or(0, |b| b.ActiveProcesses as usize)
}

/// Lets every thread of process `pid` run (a process started suspended has one);
/// false when none could be found. A thread that was not suspended is left as is.
fn resume(pid: u32) -> bool {
    // SAFETY: a snapshot of every thread of the system; closed below.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snapshot.is_null() || snapshot == windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE {
        return false;
    }
    // SAFETY: plain data, for which all zeroes is a valid value; dwSize is set as
    // the calls require.
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
    let mut resumed = false;
    // SAFETY: a live snapshot and an entry of the size it says.
    let mut more = unsafe { Thread32First(snapshot, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: the thread id comes from the snapshot; the handle is
            // closed at once.
            unsafe {
                let thread = OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID);
                if !thread.is_null() {
                    resumed |= ResumeThread(thread) != u32::MAX;
                    CloseHandle(thread);
                }
            }
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot, &mut entry) } != 0;
    }
    // SAFETY: the snapshot handle, closed once.
    unsafe { CloseHandle(snapshot) };
    resumed
}

/// How the wait for a run ended.
#[derive(PartialEq, Eq)]
enum Ended {
    Exited,
    TimedOut,
    /// An output file passed the cap: the decision is made from the files.
    PastCap,
}

fn wait_or_stop(process: HANDLE, started: Instant, timeout: Duration, cap: Option<&Cap>) -> Ended {
    loop {
        let left = timeout.saturating_sub(started.elapsed());
        let slice = match cap {
            Some(_) => left.min(CAP_POLL),
            None => left,
        };
        let millis = slice.as_millis().min(u32::MAX as u128 - 1) as u32;
        // SAFETY: the process handle is live while the caller's child is.
        if unsafe { WaitForSingleObject(process, millis) } != WAIT_TIMEOUT {
            return Ended::Exited;
        }
        if cap.is_some_and(Cap::passed) {
            return Ended::PastCap;
        }
        if started.elapsed() >= timeout {
            return Ended::TimedOut;
        }
    }
}

/// Every process in the job dies when its last handle closes: eqcheck holds the
/// only one, so a run cannot outlive eqcheck, however eqcheck ends.
fn kill_on_close(job: &Job) {
    // SAFETY: plain data, for which all zeroes is a valid value.
    let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    // SAFETY: a live job handle; the size passed is the structure's own. A
    // failure leaves the job killed at the run's end only.
    unsafe {
        SetInformationJobObject(
            job.0,
            JobObjectExtendedLimitInformation,
            (&limits as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
            std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    };
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
    let basic =
        basic.filter(|b| b.TotalProcesses > 0 && (b.TotalUserTime > 0 || b.TotalKernelTime > 0));
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
