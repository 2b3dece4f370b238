//! What a test needs of the machine it runs on (root, GNU du, a folder other users
//! can reach, ...), and the one way a test may stop early without it: a missing
//! need is never a quiet pass. `skip_unless` writes `SKIPPED <test>: needs ...` to
//! stderr past the harness's capture, and with `EQCHECK_REQUIRE_ALL=1` (as CI runs
//! the suite) it fails the test instead, naming what is missing. The mounts a test
//! makes are here too: mounting a tmpfs is how that need is probed. The needs of the
//! file-system tests (a private mount namespace, a loop device, a kernel that knows
//! the file system) are each probed by trying the smallest real use.

use std::cell::RefCell;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[cfg(unix)]
use super::{is_root, reachable_by_others};
use super::{lossy, temp_dir, Cmd};

/// Set to 1, a test whose needs are missing fails instead of skipping.
const REQUIRE_ALL: &str = "EQCHECK_REQUIRE_ALL";

/// Something a test needs of the machine it runs on.
#[derive(Debug, Clone, Copy)]
pub enum Capability<'a> {
    /// The test process runs as root: only root can run arms as another user.
    Root,
    /// `du` on PATH is GNU du, the walk tests' third, independent arm.
    GnuDu,
    /// `find` on PATH is GNU find: the built-in find sets use `-printf` and `-xtype`.
    GnuFind,
    /// Linux, for what only its kernel refuses or allows.
    Linux,
    /// A user other than the owner may pass through every folder down to the path.
    OthersCanReach(&'a Path),
    /// The folder, already mode 000, cannot be listed by the user (None: by the
    /// test process); a process that may read anything sees no permission error.
    ModeZeroStops {
        folder: &'a Path,
        user: Option<(u32, u32)>,
    },
    /// This process may mount a tmpfs (tried on a scratch folder).
    MountTmpfs,
    /// A cgroup v2 hierarchy in which this process may make a group (tried).
    ControlGroups,
    /// A program on PATH: a shell a completion script is checked with, groff.
    Program(&'a str),
    /// `unshare --mount --propagation private` runs: mounts made inside it never
    /// reach the host's mount table.
    PrivateMounts,
    /// A loop device can be attached to a file (tried on a scratch file, detached
    /// at once): what mounting a file-system image needs.
    LoopDevice,
    /// The running kernel knows this file system (`/proc/filesystems` lists it).
    KernelFileSystem(&'a str),
    /// inotify's queue holds fewer events than this (`max_queued_events`), so a
    /// flood of changes overflows it.
    InotifyQueueBelow(u64),
    /// `eqcheck` finds the tools and the driver it needs for `--fs NAME`.
    FileSystemImage(&'a str),
}

/// Held while this test process makes its own control groups: they are named by
/// its pid, so two tests (or a test and the probe above) making one at once would
/// find the name taken.
#[cfg(target_os = "linux")]
pub fn in_process_cgroups() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

impl Capability<'_> {
    fn is_present(&self) -> bool {
        match *self {
            Capability::GnuDu => says_gnu("du"),
            Capability::GnuFind => says_gnu("find"),
            Capability::Linux => cfg!(target_os = "linux"),
            #[cfg(unix)]
            Capability::Root => is_root(),
            #[cfg(unix)]
            Capability::OthersCanReach(path) => reachable_by_others(path),
            Capability::ModeZeroStops { folder, user } => {
                Cmd::new("ls").arg(folder).user(user).output().code != Some(0)
            }
            Capability::MountTmpfs => {
                let scratch = temp_dir();
                // Bound here, the mount is undone before its folder is removed; as
                // the block's value it would outlive `scratch` and leave the folder.
                let mounted = Mount::tmpfs(scratch.path()).is_ok();
                mounted
            }
            Capability::Program(name) => on_path(name),
            #[cfg(target_os = "linux")]
            Capability::ControlGroups => {
                let _one_at_a_time = in_process_cgroups();
                eqcheck::sweep::Container::make().is_some()
            }
            #[cfg(not(target_os = "linux"))]
            Capability::ControlGroups => false,
            Capability::PrivateMounts => {
                let unshare = ["--mount", "--propagation", "private", "true"];
                succeeds(Command::new("unshare").args(unshare)).is_some()
            }
            Capability::LoopDevice => loop_device_attaches(),
            Capability::KernelFileSystem(name) => std::fs::read_to_string("/proc/filesystems")
                .is_ok_and(|known| known.lines().any(|l| l.split('\t').nth(1) == Some(name))),
            Capability::InotifyQueueBelow(events) => {
                std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
                    .ok()
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .is_some_and(|n| n < events)
            }
            Capability::FileSystemImage(name) => image_refused(name).is_none(),
            // Users other than root and the owner are Unix ideas.
            #[cfg(not(unix))]
            Capability::Root | Capability::OthersCanReach(_) => false,
        }
    }
}

/// Words that follow `SKIPPED <test>: `, naming what is missing.
impl fmt::Display for Capability<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capability::Root => write!(f, "needs root"),
            Capability::GnuDu => write!(f, "needs GNU du on PATH"),
            Capability::GnuFind => write!(f, "needs GNU find on PATH"),
            Capability::Linux => write!(f, "needs Linux"),
            Capability::OthersCanReach(path) => write!(
                f,
                "needs other users to reach {} (every folder above it open to them)",
                path.display()
            ),
            Capability::ModeZeroStops { folder, user } => {
                let who = user.map_or("this user".to_string(), |(uid, _)| format!("uid {uid}"));
                write!(
                    f,
                    "needs mode 000 on {} to stop {who} listing it",
                    folder.display()
                )
            }
            Capability::MountTmpfs => write!(f, "needs to mount a tmpfs (root, CAP_SYS_ADMIN)"),
            Capability::Program(name) => write!(f, "needs {name} on PATH"),
            Capability::ControlGroups => write!(
                f,
                "needs to make a cgroup v2 group (Linux, root or a delegated subtree)"
            ),
            Capability::PrivateMounts => write!(
                f,
                "needs a private mount namespace (unshare --mount, root or CAP_SYS_ADMIN)"
            ),
            Capability::LoopDevice => write!(
                f,
                "needs to attach a loop device (root, /dev/loop-control, losetup on PATH)"
            ),
            Capability::KernelFileSystem(name) => write!(
                f,
                "needs a kernel that knows {name} (listed in /proc/filesystems)"
            ),
            Capability::InotifyQueueBelow(events) => write!(
                f,
                "needs an inotify queue shorter than {events} events (fs.inotify.max_queued_events)"
            ),
            Capability::FileSystemImage(name) => write!(
                f,
                "needs what --fs {name} takes: {}",
                image_refused(name).unwrap_or_default()
            ),
        }
    }
}

/// Why eqcheck could not make a `name` image here, as it would say.
fn image_refused(name: &str) -> Option<String> {
    let Some(fs) = eqcheck::fsimage::FileSystem::named(name) else {
        return Some(format!("eqcheck knows no file system {name}"));
    };
    eqcheck::fsimage::images_refused().or_else(|| eqcheck::fsimage::unavailable(fs))
}

fn on_path(name: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(name).is_file())
}

/// Whether a loop device attaches to a scratch file; it is detached at once, so the
/// probe leaves nothing behind on the host.
fn loop_device_attaches() -> bool {
    let scratch = temp_dir();
    let image = scratch.path().join("image");
    let made = std::fs::File::create(&image).and_then(|f| f.set_len(1 << 20));
    if made.is_err() {
        return false;
    }
    let mut attach = Command::new("losetup");
    attach.args(["--find", "--show"]).arg(&image);
    let Some(device) = succeeds(&mut attach) else {
        return false;
    };
    let device = String::from_utf8_lossy(&device).trim().to_string();
    !device.is_empty() && succeeds(Command::new("losetup").args(["--detach", &device])).is_some()
}

/// A probe's stdout when it ran and exited 0; a program that is missing is no
/// failure of the test, only a need it lacks.
fn succeeds(command: &mut Command) -> Option<Vec<u8>> {
    let out = command
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// Whether `program --version` on PATH says GNU.
fn says_gnu(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("GNU"))
}

thread_local! {
    /// The SKIPPED lines this test's thread has written: a helper that skips part
    /// of each of its calls says so once per test.
    static SAID: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// True when the calling test must skip what follows (all of it, or the part that
/// needs this) because `needs` is missing, which it then says on stderr as
/// `SKIPPED <test>: needs ...`; with `EQCHECK_REQUIRE_ALL=1` it panics instead, so a
/// run that must test everything cannot pass by skipping.
pub fn skip_unless(needs: Capability<'_>) -> bool {
    if needs.is_present() {
        return false;
    }
    // The harness runs each test on a thread named after it.
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("<a test on an unnamed thread>");
    if require_all() {
        panic!("{test}: {needs}, and {REQUIRE_ALL}=1 forbids skipping");
    }
    let line = format!("SKIPPED {test}: {needs}");
    let first_time = SAID.with_borrow_mut(|said| {
        if said.contains(&line) {
            return false;
        }
        said.push(line.clone());
        true
    });
    if first_time {
        // Past the harness's capture, which would hide the line of a passing test.
        writeln!(std::io::stderr().lock(), "{line}").expect("stderr takes the SKIPPED line");
    }
    true
}

/// Whether `EQCHECK_REQUIRE_ALL` is 1. Unset, empty and 0 allow skips; any other
/// value is refused, so a misspelt request to test everything cannot turn into
/// permission to skip.
fn require_all() -> bool {
    match std::env::var_os(REQUIRE_ALL) {
        None => false,
        Some(value) if value.is_empty() || value == "0" => false,
        Some(value) if value == "1" => true,
        Some(value) => panic!("{REQUIRE_ALL} is 1 (fail what would skip) or 0, not {value:?}"),
    }
}

/// A mount made for one test (a tmpfs, or a folder bound elsewhere), unmounted on
/// drop even when the test fails.
pub struct Mount(PathBuf);

impl Mount {
    /// Mounts a small tmpfs at `at`; the error is what `mount` said.
    pub fn tmpfs(at: &Path) -> Result<Mount, String> {
        Mount::run(["-t", "tmpfs", "-o", "size=8m,mode=0755", "none"], at)
    }

    /// A tmpfs at `at` that holds at most `inodes` inodes (its root included).
    pub fn tmpfs_inodes(at: &Path, inodes: u32) -> Result<Mount, String> {
        let options = format!("size=8m,mode=0755,nr_inodes={inodes}");
        Mount::run(["-t", "tmpfs", "-o", &options, "none"], at)
    }

    /// The same, mounted `noexec`: no program on it may run.
    pub fn noexec_tmpfs(at: &Path) -> Result<Mount, String> {
        Mount::run(
            ["-t", "tmpfs", "-o", "size=64m,mode=1777,noexec", "none"],
            at,
        )
    }

    /// Binds the folder `from` at `at`: the same file system, and at `at` the
    /// inode of `from`.
    pub fn bind(from: &Path, at: &Path) -> Result<Mount, String> {
        Mount::run(["--bind".as_ref(), from.as_os_str()], at)
    }

    fn run<I: IntoIterator<Item = S>, S: AsRef<std::ffi::OsStr>>(
        args: I,
        at: &Path,
    ) -> Result<Mount, String> {
        let mut mount = Command::new("mount");
        mount.args(args).arg(at).stdin(Stdio::null());
        match mount.output() {
            Ok(out) if out.status.success() => Ok(Mount(at.to_path_buf())),
            Ok(out) => Err(format!(
                "mount at {}: {}",
                at.display(),
                String::from_utf8_lossy(&out.stderr).trim_end()
            )),
            Err(e) => Err(format!("cannot run mount: {e}")),
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let umount = Command::new("umount").arg(&self.0).status();
        if !umount.is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// What the test below says when its need is missing.
const MISSING: &str = "util::skip::a_test_whose_need_is_missing: needs other users to reach ";

#[test]
fn a_missing_need_skips_aloud_or_fails_under_require_all() {
    let dir = temp_dir();
    let private = dir.path().join("private");
    std::fs::create_dir(&private).expect("make a folder");
    super::set_mode(&private, 0o700);
    let shown = private.display();
    let refused = "EQCHECK_REQUIRE_ALL is 1 (fail what would skip) or 0, not \"yes\"";
    for (value, code, said) in [
        (None, 0, format!("SKIPPED {MISSING}{shown} (")),
        (Some("0"), 0, format!("SKIPPED {MISSING}{shown} (")),
        (Some("1"), 101, format!("{MISSING}{shown} (")),
        (
            Some("1"),
            101,
            format!("them), and {REQUIRE_ALL}=1 forbids skipping"),
        ),
        (Some("yes"), 101, refused.to_string()),
    ] {
        let out = run_the_test_whose_need_is_missing(&private, value);
        let (stdout, stderr) = (lossy(&out.stdout), lossy(&out.stderr));
        let context = format!(
            "{REQUIRE_ALL}={value:?}: {:?}\n{stdout}{stderr}",
            out.status
        );
        assert!(stdout.contains("running 1 test"), "{context}");
        assert_eq!(out.status.code(), Some(code), "{context}");
        assert!(
            format!("{stdout}{stderr}").contains(&said),
            "no {said:?}\n{context}"
        );
        // A skip is said on stderr, where the harness cannot hide it; a failure is
        // never called a skip.
        assert_eq!(stderr.contains("SKIPPED "), code == 0, "{context}");
    }
}

/// Runs the test below alone, in a process of its own, with `EQCHECK_REQUIRE_ALL`
/// set to `value` or not set at all.
fn run_the_test_whose_need_is_missing(private: &Path, value: Option<&str>) -> Output {
    let mut test = Command::new(std::env::current_exe().expect("the test binary"));
    test.args(["--exact", "util::skip::a_test_whose_need_is_missing"])
        .args(["--ignored", "--test-threads", "1"])
        .env("EQCHECK_PRIVATE_FOLDER", private)
        .env_remove(REQUIRE_ALL);
    if let Some(value) = value {
        test.env(REQUIRE_ALL, value);
    }
    test.output().expect("the test binary runs")
}

#[test]
#[ignore = "run by the test above in a process of its own"]
fn a_test_whose_need_is_missing() {
    let private = std::env::var_os("EQCHECK_PRIVATE_FOLDER").expect("EQCHECK_PRIVATE_FOLDER");
    if skip_unless(Capability::OthersCanReach(Path::new(&private))) {
        return;
    }
    panic!("other users reach {private:?}, a 0700 folder");
}
