//! `--ref-rev REV` end to end, in a scratch git repository of two commits whose
//! second changes what the walker prints: the old revision is built in a
//! temporary worktree and compared with the working tree's build (the change is
//! found); a second run takes the old build from the cache and builds it again
//! only for another `[build]`; a failing build exits 3 with its last lines; a
//! revision that names no commit, a folder outside any repository and a `[build]`
//! mistake are usage errors at their place; the temporary worktree is gone after
//! every run. One test builds a tiny Rust crate with the default `cargo build
//! --release`; the others build with a shell script, which logs each build to a
//! file outside the repository so that a build from the cache can be told apart.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{as_root, assert_exit, json_report, temp_dir, Cmd, Output};

/// A scratch repository, a cache folder and a build log of its own.
struct Scratch {
    /// Holds the repository, the cache and the log; removed when dropped.
    _dir: tempfile::TempDir,
    repo: PathBuf,
    cache: PathBuf,
    log: PathBuf,
}

/// Runs git in `folder` and gives its stdout; fails the test when git fails.
fn git(folder: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=eqcheck",
            "-c",
            "user.email=eqcheck@localhost",
        ])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(folder)
        .output()
        .unwrap_or_else(|e| panic!("cannot run git: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "git {args:?} in {}: {err}",
        folder.display()
    );
    text
}

fn write(folder: &Path, name: &str, text: &str) {
    let path = folder.join(name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// The walker script each commit holds: it prints a word and how many arguments
/// it was given, so every set's case compares something the arms were given.
fn walker(word: &str) -> String {
    format!("#!/bin/sh\necho \"{word} $#\"\n")
}

/// A repository whose `build.sh` copies `walker.sh` to `out/walker` and logs the
/// commit it built (the worktree's HEAD) to the log; the first commit's walker
/// prints `walked`, the second's `went through`.
fn scratch() -> Scratch {
    let dir = temp_dir();
    let repo = dir.path().join("proj");
    fs::create_dir(&repo).unwrap();
    let log = dir.path().join("builds.log");
    git(&repo, &["init", "-q"]);
    write(&repo, "walker.sh", &walker("walked"));
    write(
        &repo,
        "build.sh",
        "mkdir -p out && cp walker.sh out/walker && chmod 755 out/walker && \
         git rev-parse HEAD >> \"$EQC_TEST_BUILD_LOG\" && echo built\n",
    );
    write(&repo, ".gitignore", "out/\n");
    write(
        &repo,
        "eqcheck.toml",
        "sets = \"depth\"\ntrees = [\"basic\"]\n[build]\ncommand = \"sh build.sh\"\nprogram = \"out/walker\"\n",
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    write(&repo, "walker.sh", &walker("went through"));
    git(&repo, &["commit", "-q", "-a", "-m", "second"]);
    Scratch {
        cache: dir.path().join("cache"),
        repo,
        log,
        _dir: dir,
    }
}

impl Scratch {
    /// eqcheck in the repository with the scratch cache and log.
    fn eqcheck(&self, args: &[&str]) -> Output {
        Cmd::new(crate::util::eqcheck())
            .cwd(&self.repo)
            .env("XDG_CACHE_HOME", &self.cache)
            .env("EQC_TEST_BUILD_LOG", &self.log)
            .args(args)
            .args(as_root())
            .output()
    }

    /// How many builds of `commit` the log holds.
    fn builds_of(&self, commit: &str) -> usize {
        let log = fs::read_to_string(&self.log).unwrap_or_default();
        log.lines().filter(|line| *line == commit).count()
    }

    /// The repository's worktrees, as git lists them: the repository alone when
    /// every temporary one was removed.
    fn worktrees(&self) -> Vec<String> {
        let listed = git(&self.repo, &["worktree", "list", "--porcelain"]);
        (listed.lines())
            .filter_map(|line| line.strip_prefix("worktree "))
            .map(str::to_string)
            .collect()
    }

    fn assert_no_worktree_left(&self, out: &Output) {
        let worktrees = self.worktrees();
        assert_eq!(worktrees.len(), 1, "{worktrees:?}\n{out}");
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Where the report says an arm was built from.
fn built_from<'a>(report: &'a Value, arm: &str) -> &'a Value {
    &report[arm]["built_from"]
}

#[test]
fn the_old_revision_is_built_compared_and_then_taken_from_the_cache() {
    let s = scratch();
    let old = git(&s.repo, &["rev-parse", "HEAD~1"]);
    let new = git(&s.repo, &["rev-parse", "HEAD"]);
    let first = s.eqcheck(&["--ref-rev", "HEAD~1", "--json", "-"]);
    // The old walker says `walked`, the working tree's `went through`.
    assert_exit(&first, 1);
    let report = json_report(&first);
    let reference = built_from(&report, "reference");
    assert_eq!(reference["rev"], "HEAD~1", "{first}");
    assert_eq!(reference["commit"], old.as_str(), "{first}");
    assert_eq!(reference["cached"], false, "{first}");
    let candidate = built_from(&report, "candidate");
    assert_eq!(candidate["rev"], Value::Null, "{first}");
    assert_eq!(candidate["commit"], new.as_str(), "{first}");
    let worktree = reference["folder"].as_str().expect("a folder");
    assert!(!Path::new(worktree).exists(), "{worktree} is left\n{first}");
    s.assert_no_worktree_left(&first);
    assert_eq!((s.builds_of(&old), s.builds_of(&new)), (1, 1), "{first}");
    assert!(
        stderr(&first).contains("  built from HEAD~1, commit "),
        "{first}"
    );

    let markdown = s.log.with_file_name("report.md");
    let junit = s.log.with_file_name("report.xml");
    let second = s.eqcheck(&[
        "--ref-rev",
        "HEAD~1",
        "--json",
        "-",
        "--markdown",
        markdown.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_exit(&second, 1);
    let report = json_report(&second);
    assert_eq!(built_from(&report, "reference")["cached"], true, "{second}");
    // Every report names the revision and the commit of each built arm.
    let markdown = fs::read_to_string(&markdown).unwrap();
    let said = format!("The reference arm was built from HEAD\\~1, commit {old}: ");
    assert!(markdown.contains(&said), "{markdown}");
    let said = format!("The candidate arm was built from the working tree at HEAD {new}: ");
    assert!(markdown.contains(&said), "{markdown}");
    let junit = fs::read_to_string(&junit).unwrap();
    let said = format!("name=\"reference.built-from\" value=\"HEAD~1, commit {old}: ");
    assert!(junit.contains(&said), "{junit}");
    // The working tree is built every time; the revision only once.
    assert_eq!((s.builds_of(&old), s.builds_of(&new)), (1, 2), "{second}");

    // The revision that is the working tree's commit builds the same walker.
    let same = s.eqcheck(&["--ref-rev", "HEAD"]);
    assert_exit(&same, 0);

    // Another build command is another build, never the cached one.
    write(
        &s.repo,
        "other.toml",
        "sets = \"depth\"\ntrees = [\"basic\"]\n[build]\ncommand = \"sh ./build.sh\"\nprogram = \"out/walker\"\n",
    );
    let other = s.eqcheck(&["--config", "other.toml", "--ref-rev", "HEAD~1"]);
    assert_exit(&other, 1);
    assert_eq!(s.builds_of(&old), 2, "{other}");
    s.assert_no_worktree_left(&other);
}

#[test]
fn a_failing_build_exits_3_with_its_last_lines_and_leaves_no_worktree() {
    let s = scratch();
    write(
        &s.repo,
        "fail.sh",
        "i=1; while [ $i -le 30 ]; do echo \"build line $i\"; i=$((i+1)); done; exit 7\n",
    );
    write(
        &s.repo,
        "failing.toml",
        "[build]\ncommand = \"sh fail.sh\"\nprogram = \"out/walker\"\n",
    );
    git(&s.repo, &["add", "fail.sh"]);
    git(&s.repo, &["commit", "-q", "-m", "a build that fails"]);
    let out = s.eqcheck(&[
        "--config",
        "failing.toml",
        "--ref-rev",
        "HEAD",
        "--tree",
        "basic",
    ]);
    assert_exit(&out, 3);
    let err = stderr(&out);
    assert!(err.contains("the build `sh fail.sh` failed in "), "{out}");
    assert!(err.contains("eqc-build-"), "the folder is named\n{out}");
    assert!(err.contains("\n  build line 11\n"), "{out}");
    assert!(err.contains("\n  build line 30\n"), "{out}");
    assert!(
        !err.contains("build line 10\n"),
        "only the last 20 lines\n{out}"
    );
    s.assert_no_worktree_left(&out);
}

#[test]
fn what_cannot_be_built_is_a_usage_error_at_its_place() {
    let s = scratch();
    let out = s.eqcheck(&["--ref-rev", "no-such-rev"]);
    assert_exit(&out, 2);
    let expected = "eqcheck: --ref-rev: `no-such-rev` names no commit in the repository at ";
    assert!(stderr(&out).contains(expected), "{out}");

    let outside = temp_dir();
    let out = Cmd::new(crate::util::eqcheck())
        .cwd(outside.path())
        .env("GIT_CEILING_DIRECTORIES", outside.path().parent().unwrap())
        .args(["--ref-rev", "HEAD", "--cand", "true", "--no-config"])
        .output();
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("--ref-rev: the working folder is not in a git repository"),
        "{out}"
    );

    // Nothing says which file the build makes.
    let out = s.eqcheck(&["--no-config", "--ref-rev", "HEAD"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("eqcheck: --ref-rev: needs `program` in the `[build]` table"),
        "{out}"
    );

    write(&s.repo, "bad.toml", "[build]\nprogram = \"../walker\"\n");
    let out = s.eqcheck(&["--config", "bad.toml", "--ref-rev", "HEAD"]);
    assert_exit(&out, 2);
    let expected = "eqcheck: bad.toml:2:11: build.program: `../walker`: give the built file's path from the repository's top";
    assert!(stderr(&out).starts_with(expected), "{out}");
    assert_eq!(
        s.builds_of(&git(&s.repo, &["rev-parse", "HEAD"])),
        0,
        "{out}"
    );
    s.assert_no_worktree_left(&out);
}

#[test]
fn a_rust_crate_is_built_with_cargo_from_a_revision() {
    let s = scratch();
    let crate_dir = s.repo.join("walker");
    fs::create_dir(&crate_dir).unwrap();
    write(
        &crate_dir,
        "Cargo.toml",
        "[package]\nname = \"walker\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[workspace]\n",
    );
    let main = |word: &str| {
        format!("fn main() {{ println!(\"{word} {{}}\", std::env::args().count() - 1); }}\n")
    };
    write(&crate_dir, "src/main.rs", &main("walked"));
    write(&crate_dir, ".gitignore", "target/\n");
    // The default command, `cargo build --release`, run at the repository's top:
    // the crate is the top of a repository of its own.
    git(&crate_dir, &["init", "-q"]);
    git(&crate_dir, &["add", "-A"]);
    git(&crate_dir, &["commit", "-q", "-m", "first"]);
    write(&crate_dir, "src/main.rs", &main("went through"));
    git(&crate_dir, &["commit", "-q", "-a", "-m", "second"]);
    write(
        &crate_dir,
        "eqcheck.toml",
        "sets = \"depth\"\ntrees = [\"basic\"]\n[build]\nprogram = \"target/release/walker\"\n",
    );
    let run = |args: &[&str]| {
        Cmd::new(crate::util::eqcheck())
            .cwd(&crate_dir)
            .env("XDG_CACHE_HOME", &s.cache)
            // A target folder set for the whole machine would take the build away.
            .env("CARGO_TARGET_DIR", "target")
            .args(args)
            .args(as_root())
            .output()
    };
    let first = run(&["--ref-rev", "HEAD~1", "--json", "-"]);
    assert_exit(&first, 1);
    assert_eq!(
        built_from(&json_report(&first), "reference")["cached"],
        false,
        "{first}"
    );
    // The program is taken from --cand, and so is the same cached build.
    let second = run(&[
        "--no-config",
        "--ref-rev",
        "HEAD~1",
        "--cand",
        "target/release/walker",
        "--tree",
        "basic",
        "--sets",
        "depth",
        "--json",
        "-",
    ]);
    assert_exit(&second, 1);
    let report = json_report(&second);
    let reference = built_from(&report, "reference");
    assert_eq!(reference["cached"], true, "{second}");
    assert_eq!(
        reference["command"],
        serde_json::json!(["cargo", "build", "--release"]),
        "{second}"
    );
    let worktrees = git(&crate_dir, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count(),
        1,
        "{worktrees}"
    );
}

#[cfg(unix)]
#[test]
fn an_interrupted_build_is_killed_and_its_worktree_removed() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let s = scratch();
    // The build says where it runs, then waits to be interrupted.
    let witness = s.log.with_file_name("building-in");
    let build = format!("pwd > '{}'; exec sleep 60", witness.display());
    let config = format!(
        "[build]\ncommand = {:?}\nprogram = \"out/walker\"\n",
        format!("sh -c {}", shell_words::quote(&build))
    );
    write(&s.repo, "slow.toml", &config);
    let mut child = Command::new(crate::util::eqcheck())
        .current_dir(&s.repo)
        .env("XDG_CACHE_HOME", &s.cache)
        .args([
            "--config",
            "slow.toml",
            "--ref-rev",
            "HEAD",
            "--tree",
            "basic",
        ])
        .args(as_root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("eqcheck starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while fs::read_to_string(&witness).map_or(true, |w| !w.ends_with('\n')) {
        if let Some(status) = child.try_wait().expect("eqcheck is waited for") {
            panic!("eqcheck ended before the build started: {status:?}");
        }
        assert!(Instant::now() < deadline, "no build started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT is sent");
    let out = child.wait_with_output().expect("eqcheck ends");
    let context = format!("{:?}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(130), "{context}");
    // The worktree and the temporary folder that held it.
    let folder = fs::read_to_string(&witness).unwrap();
    let temp = Path::new(folder.trim())
        .parent()
        .expect("a temporary folder");
    assert!(!temp.exists(), "{} is left\n{context}", temp.display());
    let worktrees = s.worktrees();
    assert_eq!(worktrees.len(), 1, "{worktrees:?}\n{context}");
}
