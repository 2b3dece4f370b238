//! Linux: starting a run inside the keeper's control group from its first
//! instruction, with `clone3(CLONE_INTO_CGROUP)` (Linux 5.7). A process that moves
//! itself into a group between fork and exec, all std's `Command` allows, makes the
//! kernel wait a grace period of its cgroup locks first: milliseconds a run, in
//! which the run's core sits idle. A process cloned into the group moves nothing.
//!
//! std cannot clone so, so this is the keeper's own fork and exec, doing what
//! `Request::command` has std do, in std's order. The child of a multi-threaded
//! process may only make async-signal-safe calls until it execs: everything it
//! needs (paths, argv, environment, descriptors) is made before the clone, and the
//! identity changes are raw per-thread system calls, not the C library's, which
//! would wait on threads that exist only in the parent.

use std::collections::BTreeMap;
use std::ffi::{c_char, CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use super::{Request, Streams};

/// How the keeper starts runs: unset, cloned into the group where the kernel can
/// and forked where it cannot; `clone`, cloned or not started at all (so a test
/// knows it covered the clone); `fork`, std's fork and then a move into the
/// group, the way older kernels take, which tests use to cover it.
pub const SPAWN_VAR: &str = "EQCHECK_KEEPER_SPAWN";

/// The ways [`SPAWN_VAR`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spawn {
    CloneWhereSupported,
    CloneOnly,
    Fork,
}

impl Spawn {
    /// [`SPAWN_VAR`]'s answer.
    pub fn wanted() -> Spawn {
        match std::env::var_os(SPAWN_VAR) {
            None => Spawn::CloneWhereSupported,
            Some(value) => match value.to_str() {
                Some("") => Spawn::CloneWhereSupported,
                Some("clone") => Spawn::CloneOnly,
                Some("fork") => Spawn::Fork,
                // A misspelt request must not quietly test the default way.
                _ => panic!("{SPAWN_VAR} is clone or fork, not {value:?}"),
            },
        }
    }
}

/// `struct clone_args` as the kernel reads it (its second version, with `cgroup`);
/// the C library's headers do not have it everywhere.
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// What a clone into the group came to.
pub enum Cloned {
    Started(u32),
    /// The program did not start: the OS error, as std's spawn would give it.
    Failed(io::Error),
    /// This kernel, or a filter or an emulator in the way, cannot clone into a
    /// group: start runs the older way.
    Unsupported,
}

/// Starts the request's program in the group `group` (a descriptor of its folder),
/// with `streams` as its stdin, stdout and stderr.
pub fn start(request: &Request, streams: &Streams, group: BorrowedFd<'_>) -> Cloned {
    let mut prepared = match Prepared::of(request, streams) {
        Ok(prepared) => prepared,
        Err(err) => return Cloned::Failed(err),
    };
    let (report_read, report_write) = match error_pipe() {
        Ok(pipe) => pipe,
        Err(err) => return Cloned::Failed(err),
    };
    let mut args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: group.as_raw_fd() as u64,
        ..CloneArgs::default()
    };
    // SAFETY: without CLONE_VM this is fork: the child runs on its own copy of
    // this thread's stack and memory, and `child` execs or exits without returning.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &mut args as *mut CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if pid == 0 {
        // SAFETY: this is the child, single-threaded, before exec.
        unsafe { child(&mut prepared, report_write.as_raw_fd()) }
    }
    drop(report_write);
    if pid < 0 {
        let err = io::Error::last_os_error();
        return match err.raw_os_error() {
            // No clone3 (before 5.3, or a seccomp filter that hides it), no
            // CLONE_INTO_CGROUP (before 5.7), or the group refused from here.
            Some(libc::ENOSYS | libc::EINVAL | libc::E2BIG | libc::EPERM | libc::EACCES) => {
                Cloned::Unsupported
            }
            _ => Cloned::Failed(err),
        };
    }
    let pid = pid as u32;
    match read_report(&report_read) {
        None => Cloned::Started(pid),
        Some(errno) => {
            reap(pid);
            Cloned::Failed(io::Error::from_raw_os_error(errno))
        }
    }
}

/// A pipe whose write end closes at the child's exec: nothing read means the
/// program started; four bytes are the errno of the step that failed.
fn error_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: a valid pointer to two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn read_report(pipe: &OwnedFd) -> Option<i32> {
    let mut bytes = [0u8; 4];
    loop {
        // SAFETY: reads into a local buffer of the length given.
        let got = unsafe { libc::read(pipe.as_raw_fd(), bytes.as_mut_ptr().cast(), 4) };
        if got < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        // The child writes its four bytes at once, to a pipe: all or nothing.
        return (got == 4).then(|| i32::from_ne_bytes(bytes));
    }
}

/// Reaps a child that failed before its program started.
fn reap(pid: u32) {
    let mut status = 0;
    // SAFETY: a valid pointer to a local; the pid is this process's own child.
    while unsafe { libc::waitpid(pid as libc::pid_t, &mut status, 0) } < 0
        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
    {}
}

/// Everything the child needs, made before the clone, so it allocates nothing.
struct Prepared {
    /// The paths to try, in order, for a program named without a `/`: each
    /// folder of the run's own PATH, as `execvp` does.
    candidates: Vec<CString>,
    /// The owners of the pointers below.
    _argv: Vec<CString>,
    _env: Vec<CString>,
    argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
    /// `/bin/sh`, a candidate, the arguments: a file with no `#!` that the kernel
    /// will not run is a shell script to `execvp`. Slot 1 is set in the child.
    script_argv: Vec<*const c_char>,
    cwd: CString,
    stdio: [RawFd; 3],
    user: Option<(u32, u32)>,
    file_size: Option<libc::rlimit>,
    /// The signals to put back to their defaults (see `unix::ignored_signals`).
    ignored_signals: &'static [std::ffi::c_int],
}

const SHELL: &std::ffi::CStr = c"/bin/sh";

impl Prepared {
    fn of(request: &Request, streams: &Streams) -> io::Result<Prepared> {
        let Some((program, args)) = request.argv.split_first() else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "empty command"));
        };
        // std's environment is a sorted map: the same order, the same last word.
        let env: BTreeMap<&OsString, &OsString> = request.env.iter().map(|(k, v)| (k, v)).collect();
        let path = env.get(&OsString::from("PATH")).map(|p| p.as_os_str());
        let candidates = candidates(program, path)?;
        let mut owned_argv = vec![c_string(request.argv0.as_bytes())?];
        for arg in args {
            owned_argv.push(c_string(arg.as_bytes())?);
        }
        let mut owned_env = Vec::with_capacity(env.len());
        for (key, value) in env {
            let pair = [key.as_bytes(), b"=", value.as_bytes()].concat();
            owned_env.push(c_string(&pair)?);
        }
        let argv = null_ended(&owned_argv);
        let mut script_argv = vec![SHELL.as_ptr(), std::ptr::null()];
        script_argv.extend(null_ended(&owned_argv[1..]));
        Ok(Prepared {
            candidates,
            envp: null_ended(&owned_env),
            argv,
            script_argv,
            _argv: owned_argv,
            _env: owned_env,
            cwd: c_string(request.working_dir.as_os_str().as_bytes())?,
            stdio: [&streams.stdin, &streams.stdout, &streams.stderr].map(|f| f.as_raw_fd()),
            user: request.user,
            file_size: request.max_output.map(|cap| libc::rlimit {
                rlim_cur: cap.saturating_add(1) as libc::rlim_t,
                rlim_max: cap.saturating_add(1) as libc::rlim_t,
            }),
            ignored_signals: super::unix::ignored_signals(),
        })
    }
}

/// The paths `execvp` would try for `program` under the run's `PATH` (the C
/// library's default when it has none): only `program` when it names a path.
fn candidates(program: &OsStr, path: Option<&OsStr>) -> io::Result<Vec<CString>> {
    let name = program.as_bytes();
    if name.is_empty() {
        return Err(io::Error::from_raw_os_error(libc::ENOENT));
    }
    if name.contains(&b'/') {
        return Ok(vec![c_string(name)?]);
    }
    let path = path.map_or(&b"/bin:/usr/bin"[..], |p| p.as_bytes());
    path.split(|&b| b == b':')
        .map(|folder| match folder {
            // An empty entry is the working folder.
            b"" => c_string(name),
            _ => c_string(&[folder, b"/", name].concat()),
        })
        .collect()
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in provided data",
        )
    })
}

fn null_ended(strings: &[CString]) -> Vec<*const c_char> {
    let mut pointers: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr()).collect();
    pointers.push(std::ptr::null());
    pointers
}

/// The child: becomes the run, or reports why it could not and exits.
///
/// # Safety
/// Only in the child of the clone, before anything else runs in it.
unsafe fn child(prepared: &mut Prepared, report: RawFd) -> ! {
    let errno = become_run(prepared);
    let bytes = errno.to_ne_bytes();
    // SAFETY: write and _exit are async-signal-safe; the buffer is a local.
    unsafe {
        libc::write(report, bytes.as_ptr().cast(), bytes.len());
        libc::_exit(127)
    }
}

/// std's steps, in std's order: streams, user, working folder, signals, then
/// (the keeper's own) a session and the file size limit, then exec. Returns only
/// on failure, with the errno.
fn become_run(prepared: &mut Prepared) -> i32 {
    let errno = || {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    for (fd, target) in prepared.stdio.into_iter().zip(0..) {
        // SAFETY: async-signal-safe calls on descriptors this process holds.
        let done = unsafe {
            match fd == target {
                // dup2 onto itself keeps close-on-exec: clear it instead.
                true => libc::fcntl(fd, libc::F_SETFD, 0),
                false => libc::dup2(fd, target),
            }
        };
        if done < 0 {
            return errno();
        }
    }
    if let Some((uid, gid)) = prepared.user {
        if let Err(err) = drop_to(uid, gid) {
            return err;
        }
    }
    // SAFETY: async-signal-safe calls on prepared, NUL-ended strings and locals.
    unsafe {
        if libc::chdir(prepared.cwd.as_ptr()) < 0 {
            return errno();
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        if libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) != 0 {
            return errno();
        }
        // The keeper ignores SIGPIPE, and maybe more; the run must not.
        super::unix::default_signals(prepared.ignored_signals);
        if libc::setsid() < 0 {
            return errno();
        }
        if let Some(limit) = &prepared.file_size {
            if libc::setrlimit(libc::RLIMIT_FSIZE, limit) < 0 {
                return errno();
            }
        }
    }
    exec_first(prepared)
}

/// Supplementary groups dropped (where this process may: as root), then the
/// group, then the user, each for this thread alone, the only one there is.
fn drop_to(uid: u32, gid: u32) -> Result<(), i32> {
    use rustix::io::Errno;
    use rustix::process::{Gid, Uid};
    let errno = |err: Errno| err.raw_os_error();
    match rustix::thread::set_thread_groups(&[]) {
        Ok(()) | Err(Errno::PERM) => {}
        Err(err) => return Err(errno(err)),
    }
    rustix::thread::set_thread_gid(Gid::from_raw(gid)).map_err(errno)?;
    rustix::thread::set_thread_uid(Uid::from_raw(uid)).map_err(errno)
}

/// `execvp`'s search over the prepared candidates: a folder that does not hold
/// the program is passed over, one that refuses it is remembered, anything else
/// ends the search.
fn exec_first(prepared: &mut Prepared) -> i32 {
    let mut denied = false;
    let mut last = libc::ENOENT;
    for candidate in &prepared.candidates {
        // SAFETY: NUL-ended strings and NULL-ended arrays of them, all prepared.
        let errno = unsafe {
            libc::execve(
                candidate.as_ptr(),
                prepared.argv.as_ptr(),
                prepared.envp.as_ptr(),
            );
            let mut errno = io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            if errno == libc::ENOEXEC {
                prepared.script_argv[1] = candidate.as_ptr();
                let shell = prepared.script_argv.as_ptr();
                libc::execve(SHELL.as_ptr(), shell, prepared.envp.as_ptr());
                errno = io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO);
            }
            errno
        };
        match errno {
            libc::EACCES => denied = true,
            libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
            other => return other,
        }
        last = errno;
    }
    match denied {
        true => libc::EACCES,
        false => last,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(found: Vec<CString>) -> Vec<String> {
        found
            .into_iter()
            .map(|c| c.into_string().unwrap())
            .collect()
    }

    #[test]
    fn a_bare_name_is_looked_for_in_each_folder_of_the_runs_path() {
        let path = OsStr::new("/usr/local/bin::/bin");
        let found = candidates(OsStr::new("du"), Some(path)).unwrap();
        assert_eq!(strings(found), ["/usr/local/bin/du", "du", "/bin/du"]);
        let found = candidates(OsStr::new("du"), None).unwrap();
        assert_eq!(strings(found), ["/bin/du", "/usr/bin/du"]);
    }

    #[test]
    fn a_name_with_a_slash_is_a_path_and_no_name_is_not_found() {
        let found = candidates(OsStr::new("./walk"), Some(OsStr::new("/bin"))).unwrap();
        assert_eq!(strings(found), ["./walk"]);
        let err = candidates(OsStr::new(""), None).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    }
}
