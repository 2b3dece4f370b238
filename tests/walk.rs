//! `eqcheck walk` end to end: the fast engine prints the same bytes as the reference
//! engine on the basic tree and on seeded random trees, both agree with GNU du
//! (after sorting lines) wherever du is installed, output comes post-order with
//! children sorted by name bytes, and unreadable folders and symlink loops are
//! handled as du handles them (mount points are `hardening::mounts`'s). The
//! comparison helpers are themselves shown to fail on planted differences.
#![cfg(unix)]

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};

use crate::util::{
    all_pass, assert_exit, built_tree, eqcheck, identical, is_root, lossy, random_tree,
    reachable_by_others, report, run, set_mode, skip_unless, sorted_lines, temp_dir, Capability,
    Case, Cmd, Output,
};

/// Every walk flag alone and the combinations where flags interact, `|`-separated
/// (the first set is no flags at all).
const FLAG_SETS: &str = "
    | -a | -b | --apparent-size | -s | -d 0 | -d 1 | -d 2 | -L | -x | --inodes | -c | -0
    | -a -b -d 1 | -L -x | --inodes -s | -a -L | -a --inodes | -L --inodes | -c -s
    | -b -c -a | --apparent-size -a -d 1 | --json | -a --json | -L -a -b";

/// The sets run on every random tree; `-a` in most, so every entry is printed.
const RANDOM_FLAG_SETS: &str = "-a | -a -b | -L -a | --inodes -a | -L --inodes -a
    | -a --apparent-size -c | -x -a -0 | -d 1 -b";

/// Sets for several operands at once, where du counts each folder once overall.
const OPERAND_FLAG_SETS: &str = " | -a | -a -b | -L -a | --inodes -a | -c -a | -s";

/// Even seeds make a folder of more than 1024 entries; seeds 1 and 4 a self-loop.
const SEEDS: &[u64] = &[1, 2, 3, 4, 5, 6];

/// The user an unprivileged arm runs as when the tests run as root.
const NOBODY: (u32, u32) = (65534, 65534);

fn sets(table: &str) -> impl Iterator<Item = &str> {
    table.split('|').map(str::trim)
}

fn words(flags: &str) -> Vec<&str> {
    flags.split_whitespace().collect()
}

/// What ends an output record: NUL with `-0`, else newline.
fn end_of(flags: &str) -> u8 {
    if words(flags).contains(&"-0") {
        0
    } else {
        b'\n'
    }
}

/// Which binary the walk arms run, and as which user (None: as the test process).
pub(crate) struct Arm {
    pub(crate) program: PathBuf,
    pub(crate) user: Option<(u32, u32)>,
}

pub(crate) fn me() -> Arm {
    Arm {
        program: eqcheck(),
        user: None,
    }
}

pub(crate) fn walk(arm: &Arm, engine: &str, flags: &str, operands: &[&Path]) -> Cmd {
    let cmd = Cmd::new(&arm.program).user(arm.user);
    cmd.args(["walk", "--engine", engine])
        .args(words(flags))
        .args(operands)
}

pub(crate) fn du(arm: &Arm, flags: &str, operands: &[&Path]) -> Cmd {
    let cmd = Cmd::new("du").user(arm.user).env("LC_ALL", "C");
    cmd.args(words(flags)).args(operands)
}

/// Records only in `a` and only in `b`, at most ten of each.
fn one_sided(a: &[Vec<u8>], b: &[Vec<u8>]) -> String {
    let only = |x: &[Vec<u8>], y: &[Vec<u8>]| -> Vec<String> {
        let missing = x.iter().filter(|l| !y.contains(l));
        missing.take(10).map(|l| lossy(l)).collect()
    };
    format!("only in du {:?}, only in walk {:?}", only(a, b), only(b, a))
}

/// du's stderr as `eqcheck walk` words it: each leading `du:` becomes `eqcheck walk:`.
fn as_walk_stderr(stderr: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in stderr.split_inclusive(|&b| b == b'\n') {
        match line.strip_prefix(b"du:") {
            Some(rest) => out.extend_from_slice(&[b"eqcheck walk:", rest].concat()),
            None => out.extend_from_slice(line),
        }
    }
    out
}

/// Ok when a walk run agrees with a du run: exit codes equal, stdout records equal
/// after sorting, stderr lines equal after renaming du's prefix and sorting.
pub(crate) fn agrees_with_du(du: &Output, walk: &Output, end: u8) -> Result<(), String> {
    let mut what = Vec::new();
    if (du.code, du.signal) != (walk.code, walk.signal) {
        what.push(format!("exit {:?} vs {:?}", du.code, walk.code));
    }
    let d = sorted_lines(&du.stdout, end);
    let w = sorted_lines(&walk.stdout, end);
    if d != w {
        what.push(format!("sorted stdout: {}", one_sided(&d, &w)));
    }
    let d = sorted_lines(&as_walk_stderr(&du.stderr), b'\n');
    let w = sorted_lines(&walk.stderr, b'\n');
    if d != w {
        what.push(format!("sorted stderr: {}", one_sided(&d, &w)));
    }
    report(what, du, walk)
}

/// A walk that printed nothing or failed to parse its flags would make an equality
/// check vacuous; a real walk exits 0 or 1 and prints something.
fn walked(out: &Output) -> Result<(), String> {
    if matches!(out.code, Some(0 | 1)) && !out.stdout.is_empty() {
        return Ok(());
    }
    Err(format!("not a walk: bad exit or empty stdout\n{out}"))
}

/// Each set of `table` over `operands`: the fast engine prints the reference's bytes.
pub(crate) fn engine_cases(table: &str, operands: &[&Path], arm: &Arm) -> Vec<Case> {
    let case = |flags: &str| {
        let reference = walk(arm, "reference", flags, operands).output();
        let fast = walk(arm, "fast", flags, operands).output();
        walked(&reference).and_then(|()| identical(&reference, &fast, end_of(flags)))
    };
    let name = |flags: &str| format!("engines `{flags}` {operands:?}");
    sets(table).map(|f| (name(f), case(f))).collect()
}

/// Each set of `table` du shares (all but `--json`): each engine agrees with GNU du.
fn du_cases(table: &str, operands: &[&Path], arm: &Arm) -> Vec<Case> {
    let case = |flags: &str| {
        let gnu = du(arm, flags, operands).output();
        ["reference", "fast"].iter().try_for_each(|engine| {
            let out = walk(arm, engine, flags, operands).output();
            walked(&out).and_then(|()| agrees_with_du(&gnu, &out, end_of(flags)))
        })
    };
    let name = |flags: &str| format!("du `{flags}` {operands:?}");
    let shared = sets(table).filter(|f| !f.contains("--json"));
    shared.map(|f| (name(f), case(f))).collect()
}

/// Engine cases, then du cases; without GNU du only the engine cases, and the skip
/// of the rest is said (or, where everything is required, fails the test).
pub(crate) fn all_cases(table: &str, operands: &[&Path], arm: &Arm) -> Vec<Case> {
    let mut cases = engine_cases(table, operands, arm);
    if !skip_unless(Capability::GnuDu) {
        cases.extend(du_cases(table, operands, arm));
    }
    cases
}

#[test]
fn fast_equals_reference_on_the_basic_tree() {
    let tree = built_tree("basic");
    all_pass(engine_cases(FLAG_SETS, &[tree.path()], &me()));
}

#[test]
fn fast_equals_reference_on_random_trees() {
    let mut cases = Vec::new();
    for &seed in SEEDS {
        let tree = random_tree(seed);
        cases.extend(engine_cases(RANDOM_FLAG_SETS, &[tree.path()], &me()));
    }
    all_pass(cases);
}

#[test]
fn both_engines_agree_with_du_on_the_basic_tree() {
    if skip_unless(Capability::GnuDu) {
        return;
    }
    let tree = built_tree("basic");
    all_pass(du_cases(FLAG_SETS, &[tree.path()], &me()));
}

#[test]
fn both_engines_agree_with_du_on_random_trees() {
    if skip_unless(Capability::GnuDu) {
        return;
    }
    let mut cases = Vec::new();
    for &seed in SEEDS {
        let tree = random_tree(seed);
        cases.extend(du_cases(RANDOM_FLAG_SETS, &[tree.path()], &me()));
    }
    all_pass(cases);
}

/// du counts a folder once across operands, and a hard-linked file operand once.
#[test]
fn several_operands_agree_with_du_and_each_other() {
    let (basic, random) = (built_tree("basic"), random_tree(2));
    let mut cases = Vec::new();
    for tree in [basic.path(), random.path()] {
        let sub = first_subfolder(tree);
        let mut lists = vec![[tree, sub.as_path()], [&sub, tree], [tree, tree]];
        let linked = tree.join("data/shared.dat");
        if linked.exists() {
            lists.push([linked.as_path(), tree]);
        }
        for operands in lists {
            cases.extend(all_cases(OPERAND_FLAG_SETS, &operands, &me()));
        }
    }
    all_pass(cases);
}

fn first_subfolder(tree: &Path) -> PathBuf {
    let entries = walkdir::WalkDir::new(tree).min_depth(1).max_depth(1);
    let mut entries = entries
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.expect("entry"));
    let first = entries.find(|e| e.file_type().is_dir());
    first.expect("the tree has a subfolder").into_path()
}

/// The path column of each output line: sizes vary between file systems, names not.
fn path_column(out: &Output) -> Vec<String> {
    let text = lossy(&out.stdout);
    let path = |l: &str| l.split_once('\t').map_or(l, |(_, p)| p).to_string();
    text.lines().map(path).collect()
}

/// Post-order, siblings by name bytes: `.h` < `B` < `a` < `a b` < `b`, and `e` < `é`.
/// By whole path, `r/a b` would come before `r/a/e`; by name, `a`'s subtree comes
/// first. Files are made in another order than they are printed.
const ORDER: &[(u64, &str)] = &[
    (1, "r/.h"),
    (1, "r/B/a"),
    (1, "r/B/z"),
    (3, "r/B"),
    (1, "r/a/e"),
    (1, "r/a/é"),
    (3, "r/a"),
    (1, "r/a b"),
    (1, "r/b"),
    (10, "r"),
];

/// `eqcheck walk` answers its command line as du does: a usage error exits 1, with
/// the usage on stderr and nothing on stdout; help exits 0. eqcheck's own usage
/// errors keep their exit code, 2.
#[test]
fn walk_usage_errors_exit_as_du_does() {
    let bogus = run(["walk", "--bogus"]);
    assert_exit(&bogus, 1);
    assert!(bogus.stdout.is_empty(), "{bogus}");
    assert!(
        lossy(&bogus.stderr).contains("Usage: eqcheck walk"),
        "{bogus}"
    );
    let help = run(["walk", "--help"]);
    assert_exit(&help, 0);
    assert!(lossy(&help.stdout).contains("--engine"), "{help}");
    assert_exit(&run(["--bogus"]), 2);
}

#[test]
fn output_is_post_order_with_children_sorted_by_name_bytes() {
    let dir = temp_dir();
    for folder in ["r/B", "r/a"] {
        fs::create_dir_all(dir.path().join(folder)).expect("mkdir");
    }
    for file in ["r/b", "r/a b", "r/a/é", "r/a/e", "r/B/z", "r/B/a", "r/.h"] {
        fs::write(dir.path().join(file), b"x").expect("write");
    }
    let counted: String = ORDER.iter().map(|(n, p)| format!("{n}\t{p}\n")).collect();
    let paths: Vec<&str> = ORDER.iter().map(|(_, p)| *p).collect();
    for engine in ["reference", "fast"] {
        let walk_r = |flags| walk(&me(), engine, flags, &[Path::new("r")]).cwd(dir.path());
        let out = walk_r("-a --inodes").output();
        assert_exit(&out, 0);
        assert_eq!(lossy(&out.stdout), counted, "\n{out}");
        let out = walk_r("-a").output();
        assert_exit(&out, 0);
        assert_eq!(path_column(&out), paths, "\n{out}");
    }
}

/// Gives a folder mode 0755 again on drop, so the temp tree can be removed even
/// when a check panics.
pub(crate) struct ModeGuard(pub(crate) PathBuf);

impl Drop for ModeGuard {
    fn drop(&mut self) {
        set_mode(&self.0, 0o755);
    }
}

/// Runs as nobody when root (mode 000 stops only an unprivileged reader), with a
/// copy of the binary when the build folder is out of nobody's reach.
pub(crate) fn unprivileged_arm(dir: &Path) -> Arm {
    if !is_root() {
        return me();
    }
    let mut program = eqcheck();
    if !reachable_by_others(&program) {
        program = dir.join("eqcheck");
        fs::copy(eqcheck(), &program).expect("copy the binary");
        set_mode(&program, 0o755);
    }
    Arm {
        program,
        user: Some(NOBODY),
    }
}

#[test]
fn an_unreadable_folder_is_reported_and_the_rest_still_printed() {
    let dir = temp_dir();
    if skip_unless(Capability::OthersCanReach(dir.path())) {
        return;
    }
    let root = dir.path().join("r");
    for rel in ["", "locked", "open"] {
        fs::create_dir(root.join(rel)).expect("mkdir");
        set_mode(&root.join(rel), 0o755);
    }
    for rel in ["a", "locked/inner", "open/f"] {
        fs::write(root.join(rel), [7u8; 5000]).expect("write");
        set_mode(&root.join(rel), 0o644);
    }
    let arm = unprivileged_arm(dir.path());
    let locked = root.join("locked");
    set_mode(&locked, 0o000);
    let _restore = ModeGuard(locked.clone());
    let locked_out = Capability::ModeZeroStops {
        folder: &locked,
        user: arm.user,
    };
    if skip_unless(locked_out) {
        return;
    }
    let shown = locked.display();
    let expected = format!("eqcheck walk: cannot read directory '{shown}': Permission denied\n");
    let base = root.display();
    let mut printed: Vec<String> = ["", "/a", "/locked", "/open", "/open/f"]
        .map(|rel| format!("{base}{rel}"))
        .into();
    printed.sort();
    for engine in ["reference", "fast"] {
        let out = walk(&arm, engine, "-a", &[&root]).cwd(dir.path()).output();
        assert_exit(&out, 1);
        assert_eq!(lossy(&out.stderr), expected, "\n{out}");
        let mut column = path_column(&out);
        column.sort();
        assert_eq!(column, printed, "all but the locked folder's file\n{out}");
    }
    let table = " | -a | -L -a | -a -b | --inodes -a | -c -a -L";
    all_pass(all_cases(table, &[&root], &arm));
}

#[test]
fn symlink_loops_end_with_dereference_and_match_du() {
    let dir = temp_dir();
    let root = dir.path().join("r");
    fs::create_dir_all(root.join("sub/deeper")).expect("mkdir");
    fs::write(root.join("f"), [1u8; 3000]).expect("write");
    fs::write(root.join("sub/g"), [2u8; 9000]).expect("write");
    symlink("a", root.join("a")).expect("a -> a");
    symlink("..", root.join("sub/up")).expect("up -> ..");
    symlink("../..", root.join("sub/deeper/top")).expect("top -> ../..");
    let table = "-L | -L -a | -L -a -b | -L --inodes -a | -L -c -a | -a";
    all_pass(all_cases(table, &[&root], &me()));
}

/// Every entry below `root` with its size (0 for folders) and link count, sorted.
fn listing(root: &Path) -> Vec<(PathBuf, u64, u64)> {
    let entry = |e: walkdir::DirEntry| {
        let m = e.path().symlink_metadata().expect("lstat");
        let size = if m.is_dir() { 0 } else { m.len() };
        let rel = e.path().strip_prefix(root).expect("inside the tree");
        (rel.to_path_buf(), size, m.nlink())
    };
    let walked = walkdir::WalkDir::new(root).into_iter();
    let mut all: Vec<_> = walked.map(|e| entry(e.expect("an entry"))).collect();
    all.sort();
    all
}

#[test]
fn random_trees_are_deterministic_and_have_what_they_promise() {
    let (a, b) = (random_tree(2), random_tree(2));
    let listed = listing(a.path());
    assert!(listed == listing(b.path()), "seed 2 built two trees");
    let other = listing(random_tree(3).path());
    assert!(listed != other, "seed 3 built seed 2's tree");
    assert!(fs::read_dir(a.path().join("wide")).expect("wide").count() > 1024);
    assert!(listed.iter().any(|e| e.2 == 3), "no file with three names");
    assert!(listed.iter().any(|e| e.0.ends_with("up")), "no up -> ..");
    for size in [0, 1, 4095, 4096, 4097] {
        assert!(listed.iter().any(|e| e.1 == size), "no {size}-byte file");
    }
}

/// Each comparison above must be able to fail: planted differences are caught, and
/// what the du comparison may ignore (line order, the program prefix) is ignored.
#[test]
fn the_comparisons_catch_planted_differences() {
    let tree = built_tree("basic");
    let args = ["walk", "--engine", "reference", "-a"].map(OsStr::new);
    let out = run(args.iter().copied().chain([tree.path().as_os_str()]));
    assert_exit(&out, 0);
    let fails = |result: Result<(), String>, why: &str| assert!(result.is_err(), "{why} passed");
    let with = |stdout: &[u8], stderr: &[u8], code: i32| Output {
        stdout: stdout.to_vec(),
        stderr: stderr.to_vec(),
        code: Some(code),
        ..out.clone()
    };
    let lines: Vec<&[u8]> = out.stdout.split_inclusive(|&b| b == b'\n').collect();
    let dropped = [&lines[..3], &lines[4..]].concat().concat();
    let reversed: Vec<u8> = lines.iter().rev().copied().collect::<Vec<_>>().concat();
    let bumped = lossy(&out.stdout).replacen("4\t", "8\t", 1).into_bytes();
    let nul = lossy(&out.stdout).replace('\n', "\0").into_bytes();
    assert!(identical(&out, &out, b'\n').is_ok() && walked(&out).is_ok());
    let not_identical = [
        (with(&dropped, b"", 0), "a dropped line"),
        (with(&reversed, b"", 0), "a reordering"),
        (with(&out.stdout, b"", 1), "an exit code"),
        (with(&out.stdout, b"x\n", 0), "stderr"),
    ];
    for (wrong, why) in &not_identical {
        fails(identical(&out, wrong, b'\n'), why);
    }
    fails(walked(&with(b"", b"", 0)), "an empty stdout");
    fails(walked(&with(&out.stdout, b"", 2)), "a usage error");
    let du_err = b"du: cannot read directory 'r/x': Permission denied\n";
    let walk_err = b"eqcheck walk: cannot read directory 'r/x': Permission denied\n";
    let du = with(&out.stdout, du_err, 1);
    let reordered = agrees_with_du(&du, &with(&reversed, walk_err, 1), b'\n');
    assert!(reordered.is_ok(), "{}", reordered.unwrap_err());
    let not_agreeing = [
        (with(&dropped, walk_err, 1), "a dropped line"),
        (with(&bumped, walk_err, 1), "a changed size"),
        (with(&out.stdout, du_err, 1), "du's prefix"),
        (with(&out.stdout, b"", 1), "a missing error"),
        (with(&out.stdout, walk_err, 0), "an exit code"),
    ];
    for (wrong, why) in &not_agreeing {
        fails(agrees_with_du(&du, wrong, b'\n'), why);
    }
    let as_lines = agrees_with_du(&with(&nul, b"", 0), &with(&out.stdout, b"", 0), 0);
    fails(as_lines, "-0 records read as lines");
}
