//! What a run costs in CPU: eqcheck's own (every thread of this process) against
//! the processes it started and waited for, read with `getrusage`. The kernel adds
//! a child's time (and that of the children it waited for) to its parent only when
//! the child is reaped, so the figure for the arms is complete once every arm has
//! been waited for. Unix only: Windows has no such figure for children without a
//! job object, and the report leaves the line out there.

use crate::outcome::CpuTime;

/// CPU seconds used so far.
#[derive(Debug, Clone, Copy)]
pub(super) struct Used {
    own: f64,
    children: f64,
}

/// CPU used so far by this process and by its reaped children, if known here.
#[cfg(unix)]
pub(super) fn used() -> Option<Used> {
    Some(Used {
        own: seconds(libc::RUSAGE_SELF)?,
        children: seconds(libc::RUSAGE_CHILDREN)?,
    })
}

#[cfg(not(unix))]
pub(super) fn used() -> Option<Used> {
    None
}

/// The run's figures: eqcheck's own CPU from its start, and its children's since
/// `start` (so programs built before the matrix, with `--ref-rev`, are not counted
/// as the arms').
pub(super) fn since(start: Option<Used>) -> Option<CpuTime> {
    let (start, end) = (start?, used()?);
    Some(CpuTime {
        harness_s: end.own,
        arms_s: (end.children - start.children).max(0.0),
    })
}

#[cfg(unix)]
fn seconds(who: libc::c_int) -> Option<f64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a valid, writable rusage; `who` is RUSAGE_SELF or
    // RUSAGE_CHILDREN, which getrusage accepts.
    let done = unsafe { libc::getrusage(who, usage.as_mut_ptr()) };
    if done != 0 {
        return None;
    }
    // SAFETY: getrusage succeeded, so it filled the struct (it was zeroed anyway).
    let usage = unsafe { usage.assume_init() };
    let time = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(time(usage.ru_utime) + time(usage.ru_stime))
}
