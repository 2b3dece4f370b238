//! `eqcheck walk` where walkers break: paths past PATH_MAX, trees deeper than a
//! default thread stack, a folder first met through a symlink under `-L` while the
//! fast engine lists it elsewhere, repeated flags, and du's own warnings. Each case
//! compares both engines with each other and with GNU du.
#![cfg(unix)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::util::{
    all_pass, identical, is_root, set_mode, skip_unless, temp_dir, Capability, Case, Cmd,
};
use crate::walk::{agrees_with_du, all_cases, du, me, unprivileged_arm, walk, ModeGuard};

/// A chain of `depth` folders named `name`, each with a file of `file_bytes` when
/// that is not 0, made relative to the previous folder (full paths past PATH_MAX
/// cannot be created).
fn chain(root: &Path, depth: usize, name: &str, file_bytes: usize) {
    // Only ever called in a process of its own: the working folder is global.
    fs::create_dir_all(root).unwrap();
    std::env::set_current_dir(root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    for _ in 0..depth {
        fs::create_dir(name).unwrap();
        if file_bytes > 0 {
            fs::write(Path::new(name).join("f"), vec![b'x'; file_bytes]).unwrap();
        }
        std::env::set_current_dir(name).unwrap();
    }
}

/// Removes a chain made by [`chain`] bottom-up with relative calls: std's
/// remove_dir_all holds a descriptor per level and gives up past the limit.
fn unchain(root: &Path, name: &str) {
    std::env::set_current_dir(root).unwrap();
    let mut depth = 0;
    while Path::new(name).is_dir() {
        std::env::set_current_dir(name).unwrap();
        depth += 1;
    }
    for _ in 0..depth {
        let _ = fs::remove_file("f");
        std::env::set_current_dir("..").unwrap();
        fs::remove_dir(name).unwrap();
    }
}

#[test]
fn paths_past_path_max_are_walked_by_both_engines_as_du_walks_them() {
    let dir = temp_dir();
    let root = dir.path().join("long");
    make_chain(&root, "60:100:5000");
    let longest = walkdir_depth_bytes(&root);
    assert!(
        longest > 4096,
        "the chain must pass PATH_MAX, reaches {longest}"
    );
    let mut cases = all_cases("-a | -s | -a -b", &[&root], &me());
    // GNU du's -L walk stats full paths and stops at PATH_MAX with "File name too
    // long"; there the engines are held to each other only.
    cases.extend(crate::walk::engine_cases("-L -a", &[&root], &me()));
    all_pass(cases);
}

/// Bytes in the longest path below `root`, counted without opening long paths.
fn walkdir_depth_bytes(root: &Path) -> usize {
    let mut count = 0;
    for entry in walkdir::WalkDir::new(root).into_iter().flatten() {
        count = count.max(root.as_os_str().len() + entry.depth() * 101);
    }
    count
}

/// Makes a chain (`DEPTH:NAME_LEN:FILE_BYTES`; a depth of 0 removes one) at `root`
/// in a child test process: that changes the working folder, which every test
/// thread shares.
fn make_chain(root: &Path, shape: &str) {
    let maker = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "corners::make_chain_for_another_test",
            "--nocapture",
            "--ignored",
        ])
        .env("EQCHECK_CHAIN_ROOT", root)
        .env("EQCHECK_CHAIN_SHAPE", shape)
        .output()
        .unwrap();
    assert!(
        maker.status.success(),
        "{}",
        String::from_utf8_lossy(&maker.stderr)
    );
}

#[test]
#[ignore = "a helper run by other tests in a process of its own"]
fn make_chain_for_another_test() {
    let root = PathBuf::from(std::env::var_os("EQCHECK_CHAIN_ROOT").expect("EQCHECK_CHAIN_ROOT"));
    let shape = std::env::var("EQCHECK_CHAIN_SHAPE").expect("EQCHECK_CHAIN_SHAPE");
    let numbers: Vec<usize> = shape
        .split(':')
        .map(|n| n.parse().expect("a number"))
        .collect();
    let &[depth, name_len, file_bytes] = numbers.as_slice() else {
        panic!("EQCHECK_CHAIN_SHAPE is DEPTH:NAME_LEN:FILE_BYTES or remove:NAME_LEN");
    };
    let name = "d".repeat(name_len);
    if depth == 0 {
        unchain(&root, &name);
    } else {
        chain(&root, depth, &name, file_bytes);
    }
}

#[test]
fn a_tree_deeper_than_a_thread_stack_is_walked() {
    // Comparing and dropping nested values recurses once per level here too. The
    // thread takes the test's name, which a skip says.
    let test = std::thread::current().name().map(String::from);
    std::thread::Builder::new()
        .name(test.expect("the harness names each test's thread"))
        .stack_size(1 << 29)
        .spawn(deeper_than_a_stack)
        .unwrap()
        .join()
        .unwrap();
}

fn deeper_than_a_stack() {
    if skip_unless(Capability::GnuDu) {
        return;
    }
    // The stack is what is under test, not the disk: on tmpfs, where there is
    // one, making 30,000 levels takes a second instead of tens.
    let dir = match Path::new("/dev/shm").is_dir() {
        true => tempfile::Builder::new()
            .prefix("eqc-")
            .tempdir_in("/dev/shm")
            .unwrap(),
        false => temp_dir(),
    };
    let root = dir.path().join("deep");
    make_chain(&root, "30000:1:0");
    // The reference is quadratic in depth below PATH_MAX; the fast engine is the
    // one that must not run out of stack, and du is the check.
    let arm = me();
    let gnu = du(&arm, "-s", &[&root]).output();
    let fast = walk(&arm, "fast", "-s", &[&root]).output();
    let agreed = agrees_with_du(&gnu, &fast, b'\n');
    make_chain(&root, "0:1:0");
    assert_eq!(fast.signal, None, "{fast}");
    agreed.unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn under_dereference_a_folder_met_first_through_a_link_reports_its_error_there() {
    // The fast engine may list the locked folder where it is shallow, while the
    // count meets it first through a deeper link: its error must follow it. The
    // OS's listing order decides which comes first, so several name pairs are
    // tried; each is compared with the reference and du.
    let dir = temp_dir();
    // Only as root do the arms run as another user, who must reach the tree.
    if is_root() && skip_unless(Capability::OthersCanReach(dir.path())) {
        return;
    }
    let root = dir.path().join("L");
    let mut guards = Vec::new();
    for (a, b) in [
        ("b", "h"),
        ("h", "b"),
        ("a", "z"),
        ("z", "a"),
        ("m", "n"),
        ("n", "m"),
    ] {
        let pair = root.join(format!("{a}{b}"));
        fs::create_dir_all(pair.join(a).join("deeper")).unwrap();
        fs::create_dir_all(pair.join(b)).unwrap();
        fs::write(pair.join(b).join("f"), b"data").unwrap();
        symlink(format!("../../{b}"), pair.join(a).join("deeper/link")).unwrap();
        set_mode(&pair.join(b), 0o000);
        guards.push(ModeGuard(pair.join(b)));
    }
    let arm = unprivileged_arm(dir.path());
    let cases: Vec<Case> = all_cases("-L | -L -a", &[&root], &arm);
    drop(guards);
    all_pass(cases);
}

#[test]
fn repeated_flags_take_the_last_as_du_does() {
    let dir = temp_dir();
    chain_shallow(dir.path());
    let table = "-a -a | -d 0 -d 2 | -s -s | -b -b -a";
    all_pass(all_cases(table, &[dir.path()], &me()));
}

fn chain_shallow(root: &Path) {
    fs::create_dir_all(root.join("a/b/c")).unwrap();
    fs::write(root.join("a/b/c/f"), b"12345").unwrap();
}

#[test]
fn du_warnings_and_refusals_are_matched() {
    if skip_unless(Capability::GnuDu) {
        return;
    }
    let dir = temp_dir();
    chain_shallow(dir.path());
    let arm = me();
    let mut cases: Vec<Case> = Vec::new();
    for flags in [
        "-s -d 0",
        "--inodes -b",
        "--inodes --apparent-size -a",
        "-s -a",
        "-s -d 1",
    ] {
        let gnu = du(&arm, flags, &[dir.path()]).output();
        let ours = walk(&arm, "fast", flags, &[dir.path()]).output();
        let ours_help =
            String::from_utf8_lossy(&ours.stderr).replace("eqcheck walk --help", "du --help");
        let ours = crate::util::Output {
            stderr: ours_help.into_bytes(),
            ..ours
        };
        cases.push((format!("du `{flags}`"), agrees_with_du(&gnu, &ours, b'\n')));
    }
    let empty = Path::new("");
    let gnu = du(&arm, "", &[empty, dir.path()]).output();
    let ours = walk(&arm, "reference", "", &[empty, dir.path()]).output();
    cases.push((
        "an empty operand".into(),
        agrees_with_du(&gnu, &ours, b'\n'),
    ));
    all_pass(cases);
}

/// A descriptor limit far below the depth of the chain the test below walks, with
/// room for the walk's bound on folders held open and what the harness passes down.
const FEW_DESCRIPTORS: &str = "--nofile=64:64";

/// The fast engine on a pool of one thread: no stat job is ever taken by another
/// worker, so every folder of a chain deeper than the bound on waiting folders is
/// finished where it was listed. Under a descriptor limit far below the depth, the
/// bound is what keeps the walk from running out of descriptors.
#[test]
fn a_chain_walked_by_one_thread_stays_within_a_small_descriptor_limit() {
    let dir = temp_dir();
    let root = dir.path().join("chain");
    make_chain(&root, "300:1:10");
    let reference = walk(&me(), "reference", "-a", &[&root]).output();
    let fast = Cmd::new("prlimit")
        .arg(FEW_DESCRIPTORS)
        .arg(crate::util::eqcheck())
        .args(["walk", "--engine", "fast", "-a"])
        .arg(&root)
        .env("RAYON_NUM_THREADS", "1")
        .output();
    identical(&reference, &fast, b'\n').unwrap_or_else(|e| panic!("{e}"));
    make_chain(&root, "0:1:0");
}

/// A folder whose listing takes several getdents64 batches but is small enough to
/// be pipelined, at the end of a run of folders with one subfolder each (as a
/// pipelined folder is): the subfolders named only in later batches are entered
/// after the stats come in, on a pool of one thread and on the default pool alike.
#[test]
fn subfolders_past_the_first_listing_batch_are_entered() {
    let dir = temp_dir();
    let top = dir.path().join("top");
    let root = top.join("one/two/batches");
    fs::create_dir_all(&root).unwrap();
    // 200-byte names: about 290 fit in the 64 KiB listing buffer.
    for i in 0..600 {
        fs::write(root.join(format!("{i:0>200}")), b"x").unwrap();
    }
    for i in 0..12 {
        let sub = root.join(format!("sub{i:0>197}"));
        fs::create_dir_all(sub.join("inner")).unwrap();
        fs::write(sub.join("inner").join("f"), vec![b'y'; 5000]).unwrap();
    }
    let reference = walk(&me(), "reference", "-a", &[&top]).output();
    assert_eq!(
        String::from_utf8_lossy(&reference.stdout)
            .matches("/inner/f\n")
            .count(),
        12,
        "{reference}"
    );
    for threads in ["1", "2"] {
        let fast = walk(&me(), "fast", "-a", &[&top])
            .env("RAYON_NUM_THREADS", threads)
            .output();
        identical(&reference, &fast, b'\n').unwrap_or_else(|e| panic!("{threads} thread(s): {e}"));
    }
}

/// The walk pool's threads start before anything is listed. When the system will
/// not start them (here: at most one process for the walker's user), `walk` says so
/// on stderr and exits 1, printing nothing.
#[test]
fn a_walk_whose_threads_cannot_start_says_so() {
    let dir = temp_dir();
    // Root is exempt from the process limit; the unprivileged arm is not.
    let arm = unprivileged_arm(dir.path());
    let out = Cmd::new("prlimit")
        .arg("--nproc=1:1")
        .arg(&arm.program)
        .args(["walk", "--engine", "fast"])
        .arg(dir.path())
        .user(arm.user)
        .output();
    assert_eq!(out.code, Some(1), "{out}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("eqcheck walk: cannot start the walk: "),
        "{out}"
    );
    assert!(out.stdout.is_empty(), "{out}");
}
