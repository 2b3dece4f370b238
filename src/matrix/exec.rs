//! Running one arm: no shell, stdin from the null device, a pinned environment,
//! stdout and stderr streamed to files, and a timeout after which the arm's whole
//! process group is killed and the run is marked timed out, never compared. The
//! run itself is started by the keeper (`keeper.rs`), which ends everything the
//! arm started before the run counts as over.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::keeper::{Launcher, Request};
use crate::outcome::ArmStatus;

/// `--max-output` when neither the command line nor eqcheck.toml says: 4 GiB per
/// stream, far past any walk's listing, and short of filling a CI machine's disk.
pub const DEFAULT_MAX_OUTPUT: u64 = 4 << 30;

/// Who the arms run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArmUser {
    /// Whoever runs eqcheck, when that is not root.
    Invoker { uid: u32 },
    /// Root, because `--as-root` said so: permission fixtures test nothing.
    Root,
    /// An unprivileged user, as eqcheck does by default when run as root, so that
    /// mode 000 and 444 folders deny the arms as they would deny a user.
    Unprivileged { uid: u32, gid: u32, name: String },
}

impl ArmUser {
    pub fn describe(&self) -> String {
        match self {
            ArmUser::Invoker { uid } => format!("uid {uid} (the invoking user)"),
            ArmUser::Root => "root (--as-root)".into(),
            ArmUser::Unprivileged { uid, gid, name } => format!("{name} (uid {uid}, gid {gid})"),
        }
    }

    /// Whether permission fixtures deny these arms anything.
    pub fn is_root(&self) -> bool {
        matches!(
            self,
            ArmUser::Root | ArmUser::Invoker { uid: 0 } | ArmUser::Unprivileged { uid: 0, .. }
        )
    }
}

/// The environment every arm runs in, who it runs as, and how long it may run.
#[derive(Debug, Clone)]
pub struct ArmEnvironment {
    /// The whole environment: nothing else is inherited.
    pub vars: Vec<(OsString, OsString)>,
    pub user: ArmUser,
    pub timeout: Duration,
    /// The most the arm may write to each of stdout and stderr, in bytes.
    pub max_output: u64,
}

impl ArmEnvironment {
    /// The pinned environment: `LC_ALL=C`, `TZ=UTC0`, `NO_COLOR=1`, `TERM=dumb`, no
    /// `COLUMNS`; only `PATH` (and on Windows the variables a process cannot start
    /// without) come from outside. `HOME` and `XDG_CONFIG_HOME` are set per arm.
    pub fn pinned(user: ArmUser, timeout: Duration) -> ArmEnvironment {
        let mut vars: Vec<(OsString, OsString)> = vec![
            ("LC_ALL".into(), "C".into()),
            ("TZ".into(), "UTC0".into()),
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
        ArmEnvironment {
            vars,
            user,
            timeout,
            max_output: DEFAULT_MAX_OUTPUT,
        }
    }
}

impl ArmEnvironment {
    /// Sets variables over the pinned ones (a flag-set file's or a config's
    /// overrides); a later value for a name wins.
    pub fn set<'a>(&mut self, overrides: impl IntoIterator<Item = &'a (String, String)>) {
        for (name, value) in overrides {
            self.vars.retain(|(n, _)| n != name.as_str());
            self.vars.push((name.into(), value.into()));
        }
    }

    /// The same environment with `HOME` and `XDG_CONFIG_HOME` in `home`, unless a
    /// flag-set file or config set them.
    pub(super) fn with_home(&self, home: &Path) -> ArmEnvironment {
        let mut vars = self.vars.clone();
        for (name, value) in [
            ("HOME", home.to_path_buf()),
            ("XDG_CONFIG_HOME", home.join(".config")),
        ] {
            if !self.vars.iter().any(|(n, _)| n == name) {
                vars.push((name.into(), value.into()));
            }
        }
        ArmEnvironment {
            vars,
            user: self.user.clone(),
            timeout: self.timeout,
            max_output: self.max_output,
        }
    }
}

/// The first folder on the way to `path` (or `path` itself, which must also be
/// readable when `read` is set) that the arm user may not pass, with its mode.
/// Permission bits only: an ACL or a capability may still open what this closes.
#[cfg(unix)]
pub fn blocked_for(path: &Path, user: &ArmUser, read: bool) -> Option<(PathBuf, u32)> {
    use std::os::unix::fs::MetadataExt;
    let ArmUser::Unprivileged { uid, gid, .. } = user else {
        return None;
    };
    let ancestors: Vec<&Path> = path.ancestors().collect();
    for (i, folder) in ancestors.iter().rev().enumerate() {
        let meta = std::fs::metadata(folder).ok()?;
        let mode = meta.mode();
        let bits = if meta.uid() == *uid {
            mode >> 6
        } else if meta.gid() == *gid {
            mode >> 3
        } else {
            mode
        } & 0o7;
        let last = i + 1 == ancestors.len();
        let needed = if last && read { 0o5 } else { 0o1 };
        if bits & needed != needed {
            return Some((folder.to_path_buf(), mode & 0o7777));
        }
    }
    None
}

#[cfg(not(unix))]
pub fn blocked_for(_path: &Path, _user: &ArmUser, _read: bool) -> Option<(PathBuf, u32)> {
    None
}

/// Gives a folder to the arm user, so the arm can write its dot-files there.
#[cfg(unix)]
pub fn give_to(path: &Path, user: &ArmUser) -> std::io::Result<()> {
    if let ArmUser::Unprivileged { uid, gid, .. } = user {
        use rustix::process::{Gid, Uid};
        let (uid, gid) = (Uid::from_raw(*uid), Gid::from_raw(*gid));
        rustix::fs::chown(path, Some(uid), Some(gid)).map_err(std::io::Error::from)?;
    }
    Ok(())
}

#[cfg(not(unix))]
pub fn give_to(_path: &Path, _user: &ArmUser) -> std::io::Result<()> {
    Ok(())
}

/// What an arm left behind.
#[derive(Debug)]
pub struct Captured {
    pub status: ArmStatus,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    pub duration: Duration,
    /// Processes it left running when it ended, since ended (0 where not counted).
    pub left_running: usize,
}

impl Captured {
    /// An arm that could not even be started, for the reason given.
    pub fn failed(error: String) -> Captured {
        Captured {
            status: ArmStatus::SpawnFailed { error },
            stdout: PathBuf::new(),
            stderr: PathBuf::new(),
            duration: Duration::ZERO,
            left_running: 0,
        }
    }
}

/// Runs `argv` with its output in `dir/NAME.out` and `dir/NAME.err`, starting in
/// an empty `HOME` at `dir/home` in which no run finds what another wrote (see
/// [`super::home`]). Every arm and run of a case gets the same path, so a program that
/// prints its HOME or working folder prints the same thing each time. The program's
/// path was made absolute beforehand.
pub fn run_arm(
    launcher: &Launcher,
    argv: &[OsString],
    argv0: &str,
    env: &ArmEnvironment,
    dir: &Path,
    name: &str,
) -> Captured {
    let stdout = dir.join(format!("{name}.out"));
    let stderr = dir.join(format!("{name}.err"));
    let (env, home) = match super::home::fresh_home(env, dir) {
        Ok(fresh) => fresh,
        Err(error) => return Captured::failed(error),
    };
    let request = request(argv, argv0, &env, home, &stdout, &stderr);
    let cost = launcher.run(&request, &env.user);
    Captured {
        status: cost.status,
        stdout,
        stderr,
        duration: cost.wall,
        left_running: cost.left_running.unwrap_or(0),
    }
}

/// The keeper's request for one run of an arm in `env` (whose HOME is `home`,
/// where it starts), its streams in `stdout` and `stderr`.
pub fn request(
    argv: &[OsString],
    argv0: &str,
    env: &ArmEnvironment,
    home: PathBuf,
    stdout: &Path,
    stderr: &Path,
) -> Request {
    Request {
        argv: argv.to_vec(),
        argv0: argv0.to_string(),
        env: env.vars.clone(),
        working_dir: home,
        stdout: stdout.to_path_buf(),
        stderr: stderr.to_path_buf(),
        user: match env.user {
            ArmUser::Unprivileged { uid, gid, .. } => Some((uid, gid)),
            _ => None,
        },
        timeout_ms: env.timeout.as_millis().min(u64::MAX as u128) as u64,
        max_output: Some(env.max_output),
    }
}

/// What every arm's process gets before it starts, whoever spawns it: the name it
/// sees as its own, a session and process group of its own (so all it starts can
/// be found and killed with it), and the arm user's identity.
pub fn prepare_arm_process(command: &mut std::process::Command, argv0: &str, user: &ArmUser) {
    named(command, argv0);
    own_session(command);
    run_as(command, user);
}

/// The hint for a program the arm user could not start.
pub fn spawn_hint(err: &std::io::Error, user: &ArmUser) -> String {
    match user {
        ArmUser::Unprivileged { name, .. }
            if err.kind() == std::io::ErrorKind::PermissionDenied =>
        {
            format!(
                " (arms run as {name}: make the program reachable by that user, or pass --as-root)"
            )
        }
        _ => String::new(),
    }
}

/// The program sees `argv0` as its name, not the path it was started by.
#[cfg(unix)]
fn named(command: &mut std::process::Command, argv0: &str) {
    use std::os::unix::process::CommandExt;
    command.arg0(argv0);
}

/// Windows passes a program its own command line, whose first word eqcheck does not
/// set: the program sees the path it was started by.
#[cfg(not(unix))]
fn named(_command: &mut std::process::Command, _argv0: &str) {}

/// The arm leads a new session, and so a new process group: its group is killed
/// with it, and on macOS, which has no subreaper, what it starts is found by its
/// session even after leaving the group. It also has no controlling terminal, so
/// a terminal's signals never reach it.
#[cfg(unix)]
fn own_session(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent's.
    unsafe {
        command.pre_exec(|| rustix::process::setsid().map(drop).map_err(Into::into));
    }
}

#[cfg(not(unix))]
fn own_session(_command: &mut std::process::Command) {}

/// Drops to the arm user; std also clears supplementary groups when root does this.
#[cfg(unix)]
fn run_as(command: &mut std::process::Command, user: &ArmUser) {
    use std::os::unix::process::CommandExt;
    if let ArmUser::Unprivileged { uid, gid, .. } = user {
        command.uid(*uid).gid(*gid);
    }
}

#[cfg(not(unix))]
fn run_as(_command: &mut std::process::Command, _user: &ArmUser) {}

#[cfg(unix)]
pub fn status_of(status: std::process::ExitStatus) -> ArmStatus {
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
pub fn status_of(status: std::process::ExitStatus) -> ArmStatus {
    ArmStatus::Exited {
        code: status.code().unwrap_or(-1),
    }
}
