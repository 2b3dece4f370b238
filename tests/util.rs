//! Helpers the whole integration suite shares: the path of the built binary, a
//! command runner that pins the environment and, when a check fails, prints the
//! command, folder, user, exit code, stdout and stderr (after ripgrep's
//! `tests/util.rs` and fd's `testenv`), fresh fixture trees (named specs, and in
//! `random_tree` a seeded tree with every awkward kind of entry), readers of the JSON
//! report, and in `skip` what a test needs of the machine, which it may not quietly
//! pass without.

// Some helpers serve only the tests that run on Linux (mounts, sorted output).
#![cfg_attr(not(target_os = "linux"), allow(dead_code, unused_imports))]

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

// It makes symlinks and hard links, as only Unix has them.
#[cfg(unix)]
mod random_tree;
mod skip;

#[cfg(unix)]
pub use random_tree::random_tree;
#[cfg(target_os = "linux")]
pub use skip::in_process_cgroups;
pub use skip::{skip_unless, Capability, Mount};

/// A run that has not ended by then is killed and fails its test. A safety net
/// against hangs (a walker looping on a symlink cycle), never a timing assertion.
const HANG_LIMIT: Duration = Duration::from_secs(120);

/// Variables that change what du or a walker prints; removed from every run.
const UNPINNED: &str =
    "BLOCK_SIZE BLOCKSIZE DU_BLOCK_SIZE POSIXLY_CORRECT QUOTING_STYLE TIME_STYLE LANG LANGUAGE";

/// The `eqcheck` binary cargo built for this test run.
pub fn eqcheck() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_eqcheck"))
}

/// A command to run: program, arguments (any bytes), folder, extra environment and,
/// on Unix, the user to run as. `LC_ALL=C` and `TZ=UTC0` are always set.
#[derive(Debug, Clone)]
pub struct Cmd {
    program: PathBuf,
    args: Vec<OsString>,
    cwd: PathBuf,
    env: Vec<(OsString, OsString)>,
    user: Option<(u32, u32)>,
}

impl Cmd {
    pub fn new(program: impl Into<PathBuf>) -> Cmd {
        Cmd {
            program: program.into(),
            args: Vec::new(),
            cwd: std::env::current_dir().expect("the test process has a folder"),
            env: Vec::new(),
            user: None,
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Cmd {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Cmd {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Cmd {
        self.cwd = dir.into();
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Cmd {
        self.env
            .push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// Runs as this user and group when given (Unix; only a root test process may).
    pub fn user(mut self, user: Option<(u32, u32)>) -> Cmd {
        self.user = user;
        self
    }

    /// The command line, shell-quoted so it can be pasted to reproduce.
    pub fn line(&self) -> String {
        let words = std::iter::once(self.program.as_os_str())
            .chain(self.args.iter().map(|a| a.as_os_str()));
        let quoted: Vec<String> = words
            .map(|w| shell_words::quote(&w.to_string_lossy()).into_owned())
            .collect();
        quoted.join(" ")
    }

    /// Runs to the end with stdin from the null device, capturing both streams.
    pub fn output(&self) -> Output {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for key in UNPINNED.split(' ') {
            command.env_remove(key);
        }
        command.env("LC_ALL", "C").env("TZ", "UTC0");
        for (key, value) in &self.env {
            command.env(key, value);
        }
        #[cfg(unix)]
        if let Some((uid, gid)) = self.user {
            use std::os::unix::process::CommandExt;
            command.uid(uid).gid(gid);
        }
        let line = self.line();
        let cwd = self.cwd.display();
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run `{line}` in {cwd}: {e}"));
        let stdout = drain(child.stdout.take().expect("stdout is piped"));
        let stderr = drain(child.stderr.take().expect("stderr is piped"));
        let deadline = Instant::now() + HANG_LIMIT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if Instant::now() < deadline => sleep(Duration::from_millis(2)),
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("`{line}` did not end within {HANG_LIMIT:?}: killed");
                }
                Err(e) => panic!("cannot wait for `{line}`: {e}"),
            }
        };
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        #[cfg(not(unix))]
        let signal = None;
        Output {
            command: line,
            cwd: self.cwd.clone(),
            user: self.user,
            code: status.code(),
            signal,
            stdout: stdout.join().expect("stdout reader"),
            stderr: stderr.join().expect("stderr reader"),
        }
    }
}

fn drain(mut stream: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes).expect("read output");
        bytes
    })
}

/// What a run did, with everything needed to reproduce it.
#[derive(Debug, Clone)]
pub struct Output {
    pub command: String,
    pub cwd: PathBuf,
    pub user: Option<(u32, u32)>,
    /// None when a signal ended the run.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// At most this many lines of each stream go into a failure message.
const SHOWN_LINES: usize = 200;

fn write_stream(f: &mut fmt::Formatter<'_>, name: &str, bytes: &[u8]) -> fmt::Result {
    let text = String::from_utf8_lossy(bytes);
    let lines: Vec<&str> = text.lines().collect();
    writeln!(f, "--- {name} ({} bytes) ---", bytes.len())?;
    for line in lines.iter().take(SHOWN_LINES) {
        writeln!(f, "{}", line.replace('\0', "\\0"))?;
    }
    if lines.len() > SHOWN_LINES {
        writeln!(f, "... {} more lines", lines.len() - SHOWN_LINES)?;
    }
    Ok(())
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "command: {}", self.command)?;
        writeln!(f, "cwd:     {}", self.cwd.display())?;
        if let Some((uid, gid)) = self.user {
            writeln!(f, "user:    {uid}:{gid}")?;
        }
        match (self.code, self.signal) {
            (Some(code), _) => writeln!(f, "exit:    {code}")?,
            (None, Some(signal)) => writeln!(f, "exit:    killed by signal {signal}")?,
            (None, None) => writeln!(f, "exit:    unknown")?,
        }
        write_stream(f, "stdout", &self.stdout)?;
        write_stream(f, "stderr", &self.stderr)
    }
}

/// Writes `text` to `name` in `dir` and gives the file's path, for arguments.
pub fn written(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write a file for the test");
    path.to_string_lossy().into_owned()
}

/// Runs the built binary with these arguments from the current folder.
pub fn run<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(args: I) -> Output {
    Cmd::new(eqcheck()).args(args).output()
}

/// The test double built beside eqcheck (tests/support/double.rs): a stand-in
/// walker that prints, sleeps, crashes or perturbs on request.
pub const DOUBLE_PATH: &str = env!("CARGO_BIN_EXE_eqcheck-double");

/// An arm's command line that runs the double with `request` (`print 'a\n'`,
/// `sleep 30`, ...), its path quoted as `--ref` and `--cand` split their words.
pub fn double(request: &str) -> String {
    format!("{} {request}", shell_words::quote(DOUBLE_PATH))
}

/// The JSON report a run wrote to stdout (with `--json -` the text report goes to
/// stderr); stdout that is anything else fails the test with the whole run.
pub fn json_report(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e})\n{out}"))
}

/// The report's cases, never none: a check that each case is identical or equal
/// would pass on no cases having checked nothing.
pub fn report_cases<'a>(report: &'a serde_json::Value, out: &Output) -> &'a [serde_json::Value] {
    let cases = report["cases"]
        .as_array()
        .unwrap_or_else(|| panic!("the report has no list of cases\n{out}"));
    assert!(
        !cases.is_empty(),
        "the report has no cases: a check of each case would check nothing\n{out}"
    );
    cases
}

/// Panics with the run's full context unless it exited with `code`.
pub fn assert_exit(out: &Output, code: i32) {
    if out.code != Some(code) {
        panic!("expected exit code {code}\n{out}");
    }
}

/// One named check of a table-driven test.
pub type Case = (String, Result<(), String>);

/// Output bytes as text for messages, NULs shown as `\0`.
pub fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace('\0', "\\0")
}

/// Where two outputs first differ, split into records ending with `end`.
pub fn first_difference(a: &[u8], b: &[u8], end: u8) -> String {
    let a: Vec<&[u8]> = a.split(|&x| x == end).collect();
    let b: Vec<&[u8]> = b.split(|&x| x == end).collect();
    let at = (0..).find(|&i| a.get(i) != b.get(i)).expect("differ");
    let show = |line: Option<&&[u8]>| line.map_or("<end>".to_string(), |l| lossy(l));
    let (x, y) = (show(a.get(at)), show(b.get(at)));
    format!("record {}: {x:?} vs {y:?}", at + 1)
}

/// Ok when nothing differs, else the differences followed by both runs in full.
pub fn report(what: Vec<String>, a: &Output, b: &Output) -> Result<(), String> {
    if what.is_empty() {
        return Ok(());
    }
    let what = what.join("; ");
    Err(format!("{what}\n=== first ===\n{a}=== second ===\n{b}"))
}

/// Ok when two runs agree byte for byte on stdout, stderr and exit; else says what
/// differs first, with both runs in full.
pub fn identical(a: &Output, b: &Output, end: u8) -> Result<(), String> {
    let mut what = Vec::new();
    if (a.code, a.signal) != (b.code, b.signal) {
        what.push(format!("exit {:?} vs {:?}", a.code, b.code));
    }
    if a.stdout != b.stdout {
        let at = first_difference(&a.stdout, &b.stdout, end);
        what.push(format!("stdout {at}"));
    }
    if a.stderr != b.stderr {
        let at = first_difference(&a.stderr, &b.stderr, b'\n');
        what.push(format!("stderr {at}"));
    }
    report(what, a, b)
}

/// Panics listing every failed case, so one run shows the whole picture; and on
/// no cases at all, a table that tested nothing.
pub fn all_pass(cases: Vec<Case>) {
    assert!(
        !cases.is_empty(),
        "no cases: a table of no cases tests nothing"
    );
    let total = cases.len();
    let failed: Vec<String> = cases
        .into_iter()
        .filter_map(|(name, result)| Some(format!("## case {name}: {}", result.err()?)))
        .collect();
    let count = failed.len();
    if count > 0 {
        panic!("{count} of {total} failed:\n\n{}", failed.join("\n"));
    }
}

/// A standard tree from `trees/`, built fresh; removed when dropped.
pub fn built_tree(name: &str) -> eqcheck::fixtures::BuiltTree {
    let spec = eqcheck::fixtures::spec_named(name).unwrap_or_else(|e| panic!("{e}"));
    eqcheck::fixtures::build_temp(&spec).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs a report's repro line in `sh`, as a user pasting it would, with `TMPDIR` a
/// folder of the test's own that goes with the run: the line makes its tree, its
/// program copy and the arm's HOME with `mktemp -d` and leaves them to be looked
/// at, which would leave them in /tmp after every test run.
pub fn run_repro(line: &str) -> Output {
    let scratch = temp_dir();
    Cmd::new("sh")
        .args(["-c", line])
        .env("TMPDIR", scratch.path())
        .output()
}

/// A fresh temp folder with mode 0755 (tempfile makes 0700), so that a walker run as
/// another user can enter it when every folder above it lets others through.
pub fn temp_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("eqc-")
        .tempdir()
        .expect("a temp folder");
    set_mode(dir.path(), 0o755);
    dir
}

#[cfg(unix)]
pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {mode:o} {}: {e}", path.display()));
}

#[cfg(not(unix))]
pub fn set_mode(_path: &Path, _mode: u32) {}

/// Whether a user other than the owner may search every folder down to `path` and
/// execute or enter `path` itself.
#[cfg(unix)]
pub fn reachable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(path) = path.canonicalize() else {
        return false;
    };
    path.ancestors()
        .all(|p| fs::metadata(p).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// Whether the test process runs as root (where mode 000 hides nothing).
#[cfg(unix)]
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// `--as-root` when the test process runs as root, else nothing: eqcheck refuses the
/// flag when it cannot honour it, and a test that only wants root's arms to read
/// everything gets that anyway when not root.
pub fn as_root() -> &'static [&'static str] {
    #[cfg(unix)]
    if is_root() {
        return &["--as-root"];
    }
    &[]
}

/// Splits output into records ending with `end` (newline, or NUL for `-0`) and sorts
/// them bytewise.
pub fn sorted_lines(bytes: &[u8], end: u8) -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == end).map(<[u8]>::to_vec).collect();
    if lines.last().is_some_and(Vec::is_empty) {
        lines.pop();
    }
    lines.sort();
    lines
}

/// Runs a command and returns the run with its stdout records sorted.
pub fn run_sorted(cmd: &Cmd, end: u8) -> (Output, Vec<Vec<u8>>) {
    let out = cmd.output();
    let lines = sorted_lines(&out.stdout, end);
    (out, lines)
}

#[test]
#[should_panic(expected = "no cases: a table of no cases tests nothing")]
fn all_pass_fails_on_no_cases() {
    all_pass(Vec::new());
}

#[test]
#[should_panic(expected = "the report has no cases")]
fn report_cases_fails_on_a_report_of_no_cases() {
    let out = Output {
        command: "a run that compared nothing".to_string(),
        cwd: PathBuf::new(),
        user: None,
        code: Some(0),
        signal: None,
        stdout: br#"{"schema_version": 2, "cases": []}"#.to_vec(),
        stderr: Vec::new(),
    };
    report_cases(&json_report(&out), &out);
}
