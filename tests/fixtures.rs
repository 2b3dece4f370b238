//! Fixture trees end to end: a spec builds the same entries and contents every
//! time, locked folders go away with their tree (also when built unprivileged),
//! malformed specs and failed builds name file and line, and what a platform cannot
//! hold is skipped and said. `kinds` checks every entry kind and attribute with
//! lstat; the helpers here are shared with it. `into` checks the folder `trees
//! build --into` makes, `room` the room check.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use eqcheck::fixtures::{build_temp, spec_named, BuiltTree};

use crate::util::{
    all_pass, assert_exit, double, run, skip_unless, temp_dir, Capability, Case, Cmd,
};

mod into;
mod kinds;
mod room;

/// Builds a spec given as text, written to `NAME.tree` in a fresh folder.
fn build_text(name: &str, text: &str) -> BuiltTree {
    let dir = temp_dir();
    let file = dir.path().join(format!("{name}.tree"));
    fs::write(&file, text).unwrap();
    let spec = spec_named(file.to_str().unwrap()).unwrap_or_else(|e| panic!("{e}"));
    build_temp(&spec).unwrap_or_else(|e| panic!("{e}"))
}

/// A path under `root` from bytes, which may not be UTF-8.
fn at(root: &Path, path: &[u8]) -> PathBuf {
    root.join(OsStr::from_bytes(path))
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

const DAY: i64 = 86_400;

/// What lstat says of an entry, or why it cannot be had.
fn lstat(root: &Path, path: &str) -> Result<fs::Metadata, String> {
    fs::symlink_metadata(root.join(path)).map_err(|e| format!("lstat {path}: {e}"))
}

fn expect<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}

/// Opens a folder path one name at a time with openat, as a walker must past
/// PATH_MAX, and returns the size of file `f` at the bottom and the path length.
fn walk_chain(root: &Path, first: &str, name: &[u8], depth: usize) -> Result<(u64, usize), String> {
    use rustix::fs::{openat, statat, AtFlags, Mode, OFlags, CWD};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW;
    let mut dir = openat(CWD, root, flags, Mode::empty()).map_err(|e| e.to_string())?;
    let mut length = root.as_os_str().len();
    dir = openat(&dir, first, flags, Mode::empty()).map_err(|e| format!("{first}: {e}"))?;
    length += 1 + first.len();
    for level in 1..depth {
        dir =
            openat(&dir, name, flags, Mode::empty()).map_err(|e| format!("level {level}: {e}"))?;
        length += 1 + name.len();
    }
    let stat = statat(&dir, "f", AtFlags::SYMLINK_NOFOLLOW).map_err(|e| format!("f: {e}"))?;
    Ok((stat.st_size as u64, length + 2))
}

/// Path, kind, size, mode, link count, symlink target, content hash, the set of
/// names sharing an inode, and mtimes set by the spec (absolute ones, before 2000).
fn snapshot(root: &Path) -> BTreeMap<Vec<u8>, String> {
    let mut entries = BTreeMap::new();
    let mut inodes: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry.unwrap();
        let path = entry
            .path()
            .strip_prefix(root)
            .unwrap()
            .as_os_str()
            .as_bytes()
            .to_vec();
        let meta = entry.path().symlink_metadata().unwrap();
        let first = inodes
            .entry(meta.ino())
            .or_insert_with(|| path.clone())
            .clone();
        let content = if meta.is_file() {
            let bytes = fs::read(entry.path()).unwrap();
            format!(
                "{:x}",
                bytes
                    .iter()
                    .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b))
                        .wrapping_mul(0x100_0000_01b3))
            )
        } else {
            String::new()
        };
        let link = fs::read_link(entry.path())
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        let time = if meta.mtime() < 946_684_800 {
            meta.mtime()
        } else {
            0
        };
        let line = format!(
            "{:?} {} {:o} {} {link} {content} {} {time}",
            meta.file_type(),
            meta.len(),
            meta.mode(),
            meta.nlink(),
            String::from_utf8_lossy(&first)
        );
        entries.insert(path, line);
    }
    entries
}

#[test]
fn two_builds_of_one_spec_hold_the_same_entries_and_contents() {
    let text = "file a/random size=70K content=random\nfile a/other size=3K content=random\n\
        sparse s size=10M data=1M:5K\nhardlink b/link -> a/random\nsymlink c -> a/other\n\
        file old mtime=1961-02-03T04:05:06Z\ngenerate node-modules nm entries=3000\n\
        generate files w count=500 size=0..3K\ngenerate chain d depth=30\n";
    let (one, two) = (build_text("same", text), build_text("same", text));
    let (a, b) = (snapshot(one.path()), snapshot(two.path()));
    assert!(a.len() > 3500, "only {} entries", a.len());
    let differing: Vec<String> = a
        .iter()
        .filter(|(path, line)| b.get(*path) != Some(line))
        .take(5)
        .map(|(path, line)| {
            format!(
                "{}: {line} vs {:?}",
                String::from_utf8_lossy(path),
                b.get(path)
            )
        })
        .collect();
    assert!(
        differing.is_empty() && a.len() == b.len(),
        "builds differ:\n{}",
        differing.join("\n")
    );
    // Another name is another seed: another tree.
    let three = build_text("other", text);
    assert_ne!(a, snapshot(three.path()), "the spec's name seeds the build");
}

/// Locked folders holding entries that have attributes of their own, which must be
/// set before their folder locks.
const LOCKED: &str = "file p/none/x size=10 mode=600\ndir p/none/inner mtime=@0\n\
    dir p/none mode=000\nfile p/read/y size=10 mode=400\ndir p/read mode=444\n\
    file p/search/z mtime=-1d\ndir p/search mode=555\n";

#[test]
fn locked_folders_are_removed_when_the_tree_drops() {
    let tree = build_text("locked", LOCKED);
    let path = tree.path().to_path_buf();
    assert_eq!(
        fs::symlink_metadata(path.join("p/none")).unwrap().mode() & 0o777,
        0
    );
    drop(tree);
    assert!(
        fs::symlink_metadata(&path).is_err(),
        "{} is still there",
        path.display()
    );
}

/// The run's temp folder is empty again once the run is over.
fn assert_nothing_left(temp: &Path, out: &crate::util::Output) {
    let left: Vec<PathBuf> = fs::read_dir(temp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}\n{out}");
}

/// As root, mode 000 hides nothing from this process, so an unprivileged eqcheck
/// builds the tree (modes are set last, or its entries could not go in) and removes
/// it after the run.
#[test]
fn an_unprivileged_run_builds_and_removes_locked_folders() {
    // Not root, the test above already ran unprivileged; this one is for root.
    if skip_unless(Capability::Root) {
        return;
    }
    let dir = temp_dir();
    let (spec, temp) = (dir.path().join("locked.tree"), dir.path().join("temp"));
    fs::write(&spec, LOCKED).unwrap();
    fs::create_dir(&temp).unwrap();
    crate::util::set_mode(&temp, 0o777);
    let out = Cmd::new(crate::util::eqcheck())
        .args([
            OsStr::new("--tree"),
            spec.as_os_str(),
            OsStr::new("--sets"),
            OsStr::new("depth"),
        ])
        .env("TMPDIR", &temp)
        .env("HOME", &temp)
        .cwd(dir.path())
        .user(Some((65534, 65534)))
        .output();
    assert_exit(&out, 0);
    assert_nothing_left(&temp, &out);
}

/// A chain deeper than the descriptor limit: removing the built tree must not hold
/// a descriptor per level, or the run ends with the tree still on disk.
#[test]
fn a_tree_deeper_than_the_descriptor_limit_is_removed_after_the_run() {
    let dir = temp_dir();
    let (spec, sets, temp) = (
        dir.path().join("chain.tree"),
        dir.path().join("one.sets"),
        dir.path().join("temp"),
    );
    fs::write(&spec, "generate chain d depth=600\n").unwrap();
    fs::write(&sets, "[only]\n-s\n").unwrap();
    fs::create_dir(&temp).unwrap();
    crate::util::set_mode(&temp, 0o777);
    // Arms that do not walk: the tree is built, fingerprinted and removed all the
    // same, and only the removal is under test.
    let printer = double("print x");
    let out = Cmd::new("prlimit")
        .arg("--nofile=256:256")
        .arg(crate::util::eqcheck())
        .args([OsStr::new("--tree"), spec.as_os_str()])
        .args([OsStr::new("--sets"), sets.as_os_str()])
        .args(["--ref", &printer, "--cand", &printer])
        .env("TMPDIR", &temp)
        .cwd(dir.path())
        .output();
    assert_exit(&out, 0);
    assert_nothing_left(&temp, &out);
}

#[test]
fn malformed_specs_give_file_and_line_and_exit_2() {
    let dir = temp_dir();
    let cases = [
        ("dir a\nfile a/b mode=888\n", ":2: bad mode `888`"),
        (
            "\n\nfile t mtime=1969-13-01T00:00:00Z\n",
            ":3: bad time `mtime=1969-13-01T00:00:00Z`",
        ),
        ("file a colour=red\n", ":1: unknown key `colour`"),
        ("file a\nfile b atime=soon\n", ":2: bad time `atime=soon`"),
        (
            "sparse s size=1M data=1M:4K\n",
            ":1: data region `1M:4K` is empty or ends past",
        ),
        ("file a\nfile a/b\n", ":2: `a` is a file (line 1)"),
        ("file bad\\xff\n", ":1: a `\\x` escape outside quotes"),
    ];
    let mut results: Vec<Case> = Vec::new();
    for (i, (text, want)) in cases.iter().enumerate() {
        let spec = dir.path().join(format!("bad{i}.tree"));
        fs::write(&spec, text).unwrap();
        for verb in ["show", "build"] {
            let mut args = vec![OsStr::new("trees"), OsStr::new(verb), spec.as_os_str()];
            let into = dir.path().join(format!("into{i}"));
            if verb == "build" {
                args.extend([OsStr::new("--into"), into.as_os_str()]);
            }
            let out = run(args);
            let wanted = format!("{}{want}", spec.display());
            let ok = out.code == Some(2) && String::from_utf8_lossy(&out.stderr).contains(&wanted);
            results.push((
                format!("{verb} {text:?}"),
                ok.then_some(())
                    .ok_or(format!("want exit 2 and `{wanted}`\n{out}")),
            ));
        }
    }
    all_pass(results);
}

#[test]
fn a_failed_build_names_the_spec_line_and_path() {
    let dir = temp_dir();
    let spec = dir.path().join("big.tree");
    fs::write(&spec, "dir d\nfile d/a size=10 content=random seed=1\n").unwrap();
    let into = dir.path().join("out");
    // A file-size limit of 0 (SIGXFSZ ignored, so a write fails with EFBIG): the
    // file's first bytes cannot be written, which no file system is to blame for.
    let script = r#"ulimit -f 0 && trap '' XFSZ && exec "$0" trees build "$1" --into "$2""#;
    let out = Cmd::new("sh")
        .arg("-c")
        .arg(script)
        .arg(crate::util::eqcheck())
        .arg(&spec)
        .arg(&into)
        .output();
    assert_exit(&out, 3);
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(
        error.contains("big.tree:2: cannot create ") && error.contains("d/a: File too large"),
        "{out}"
    );
    assert!(!into.exists(), "the half-built tree is removed\n{out}");
}

#[test]
fn entries_the_platform_cannot_hold_are_skipped_and_said() {
    // What the platform refuses here is what Linux refuses.
    if skip_unless(Capability::Linux) {
        return;
    }
    let dir = temp_dir();
    let spec = dir.path().join("skips.tree");
    let long = "s".repeat(100);
    // Linux refuses user.* xattrs on symlinks, and no socket address holds a path
    // of more than 108 bytes.
    fs::write(
        &spec,
        format!("file a\nsymlink l -> a xattr.user.c=1\nsocket \"d/{long}\"\nfile d/after\n"),
    )
    .unwrap();
    let into = dir.path().join("built");
    let out = run([
        OsStr::new("trees"),
        "build".as_ref(),
        spec.as_os_str(),
        "--into".as_ref(),
        into.as_os_str(),
    ]);
    assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let file = spec.display();
    for want in [
        format!("{file}:2: skipped `l`: xattr user.c: "),
        format!("{file}:3: skipped `d/{long}`: its path is"),
    ] {
        assert!(stderr.contains(&want), "no `{want}`\n{out}");
    }
    assert!(
        into.join("l").symlink_metadata().is_ok() && into.join("d/after").exists(),
        "{out}"
    );
    assert!(
        into.join(format!("d/{long}")).symlink_metadata().is_err(),
        "{out}"
    );
    let tree = build_temp(&spec_named(spec.to_str().unwrap()).unwrap()).unwrap();
    let lines: Vec<usize> = tree.skipped().iter().map(|s| s.line).collect();
    assert_eq!(lines, [3, 2], "{:?}", tree.skipped());
}

#[test]
fn a_tree_spec_that_is_not_a_regular_file_is_refused_not_read_forever() {
    let dir = temp_dir();
    let fifo = dir.path().join("pipe.tree");
    let made = Cmd::new("mkfifo").arg(&fifo).output();
    assert_exit(&made, 0);
    let fifo = fifo.to_string_lossy().into_owned();
    for args in [vec!["--tree", &fifo], vec!["trees", "show", &fifo]] {
        // A read of the FIFO waits for a writer that never comes: give up and fail
        // after ten seconds rather than hang the suite.
        let mut child = std::process::Command::new(crate::util::eqcheck())
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > std::time::Duration::from_secs(10) {
                let _ = child.kill();
                panic!("{args:?} blocked reading the FIFO");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains("not a regular file"), "{args:?}: {said}");
    }
}

#[test]
fn xattrs_the_file_system_refuses_are_skipped_and_named() {
    let dir = temp_dir();
    let big = format!(
        "file big xattr.user.big={}\nfile kept\n",
        "a".repeat(70_000)
    );
    let cases = [
        (
            "big.tree",
            big.as_str(),
            "xattr user.big: the file system refused it",
        ),
        (
            "cap.tree",
            "file cap xattr.security.capability=nonsense\nfile kept\n",
            "xattr security.capability: the file system refused it",
        ),
    ];
    for (name, text, reason) in cases {
        let spec = dir.path().join(name);
        fs::write(&spec, text).unwrap();
        let into = dir.path().join(format!("{name}.built"));
        let out = run([
            "trees".as_ref(),
            "build".as_ref(),
            spec.as_os_str(),
            "--into".as_ref(),
            into.as_os_str(),
        ]);
        assert_exit(&out, 0);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains(&format!("{name}:1: skipped")), "{out}");
        assert!(said.contains(reason), "{out}");
        assert!(into.join("kept").is_file(), "{out}");
    }
}

/// `trees build` of a spec of `text`, into `DIR/built`: the run (which must
/// succeed) and the built tree's folder.
fn built_spec(dir: &Path, text: &str) -> (crate::util::Output, PathBuf) {
    let spec = dir.join("spec.tree");
    fs::write(&spec, text).unwrap();
    let into = dir.join("built");
    let out = Cmd::new(crate::util::eqcheck())
        .args([OsStr::new("trees"), OsStr::new("build"), spec.as_os_str()])
        .args([OsStr::new("--into"), into.as_os_str()])
        .output();
    assert_exit(&out, 0);
    (out, into)
}

/// A time the file system cannot hold is never clamped silently: the built
/// entry has the spec's time, or the build names the entry, the time asked and
/// the time kept (ext4 keeps 1901-12-13 to 2446-05-10; tmpfs and xfs with bigtime
/// keep these times as they are).
#[test]
fn a_time_the_file_system_cannot_hold_is_kept_exactly_or_said() {
    let dir = temp_dir();
    let text = "file far mtime=@20000000000\nfile before mtime=@-20000000000\n";
    let (out, into) = built_spec(dir.path(), text);
    let said = crate::util::lossy(&out.stderr);
    for (name, wanted) in [("far", 20_000_000_000_i64), ("before", -20_000_000_000)] {
        let kept = fs::symlink_metadata(into.join(name)).unwrap().mtime();
        if kept != wanted {
            assert!(
                said.contains(&format!("skipped `{name}`: times: mtime "))
                    && said.contains("is out of the file system's range; it holds "),
                "{name}: mtime {wanted} kept as {kept} without a word\n{out}"
            );
        }
    }
}

/// Linux answers an xattr namespace it does not have as it answers a file system
/// without xattrs; the skip names the namespace, not the file system.
#[cfg(target_os = "linux")]
#[test]
fn an_unknown_xattr_namespace_is_named_as_such() {
    let dir = temp_dir();
    let (out, _) = built_spec(dir.path(), "file a xattr.bogusns.x=1\n");
    assert!(
        crate::util::lossy(&out.stderr).contains(
            "xattr bogusns.x: Linux has no xattr namespace `bogusns` (it has user, trusted, security, system)"
        ),
        "{out}"
    );
}

/// A name longer than the file system takes is a skip that says so, as any other
/// entry the file system cannot hold, not the end of the build.
#[test]
fn a_name_too_long_for_the_file_system_is_skipped_and_said() {
    let dir = temp_dir();
    let long = "a".repeat(300);
    let (out, into) = built_spec(dir.path(), &format!("dir {long}\nfile {long}/x\nfile ok\n"));
    assert!(
        crate::util::lossy(&out.stderr)
            .contains("a name of 300 bytes is too long for the file system"),
        "{out}"
    );
    assert!(into.join("ok").is_file(), "{out}");
}
