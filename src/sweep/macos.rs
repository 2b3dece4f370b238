//! macOS: no subreaper, so what is left of a run is found by its session and
//! group (a run leads a session of its own) and by parent chains that still lead
//! to the collector; processes are listed with `proc_listallpids` and read with
//! `proc_pidinfo(PROC_PIDTBSDINFO)`, sessions with `getsid`.

use super::Process;

/// Orphans go to launchd: no child left says nothing about the run's session.
pub(super) const ORPHANS_COME_HOME: bool = false;

pub(super) fn become_subreaper() {}

/// What is still in the run's session or group, or descends from the collector.
pub(super) fn left_of_run(leader: u32) -> Vec<u32> {
    super::doomed(&processes(), std::process::id(), &[leader])
}

/// Those of `pids` still running: what `left_of_run` finds is that already.
pub(super) fn running(pids: Vec<u32>) -> Vec<u32> {
    pids
}

/// Every process the system lists; one that ends while it is read is left out.
pub(super) fn processes() -> Vec<Process> {
    // Room for more than asked, as processes start between the two calls.
    // SAFETY: a null buffer of size 0 asks only for the count.
    let count = unsafe { libc::proc_listallpids(std::ptr::null_mut(), 0) };
    if count <= 0 {
        return Vec::new();
    }
    let mut pids = vec![0 as libc::pid_t; count as usize + 64];
    let bytes = (pids.len() * std::mem::size_of::<libc::pid_t>()) as libc::c_int;
    // SAFETY: the buffer holds `bytes` bytes of pid_t.
    let listed = unsafe { libc::proc_listallpids(pids.as_mut_ptr().cast(), bytes) };
    pids.truncate(listed.max(0) as usize);
    pids.into_iter()
        .filter(|&pid| pid > 0)
        .filter_map(info)
        .collect()
}

fn info(pid: libc::pid_t) -> Option<Process> {
    // SAFETY: proc_bsdinfo is plain data; all zeroes is a valid value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
    // SAFETY: the buffer is a live proc_bsdinfo of the size passed.
    let got = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            (&mut info as *mut libc::proc_bsdinfo).cast(),
            size,
        )
    };
    if got != size {
        return None;
    }
    // SAFETY: getsid only reads the process table.
    let session = unsafe { libc::getsid(pid) };
    Some(Process {
        pid: info.pbi_pid,
        parent: info.pbi_ppid,
        group: info.pbi_pgid,
        session: session.max(0) as u32,
        zombie: info.pbi_status == libc::SZOMB,
    })
}
