//! `statx` refused, as by an old kernel (ENOSYS) or an old container seccomp
//! profile (EPERM): the fast engine must fall back to `fstatat` and print exactly
//! what the reference engine prints. The test double installs a real seccomp
//! filter that fails every `statx` and then becomes `eqcheck walk --engine fast
//! --census`, whose census line says how many `statx` calls were refused and how
//! many `fstatat` calls answered; a run without the filter shows the census is no
//! constant. (The engine makes the `statx` call itself, so the filter's errno,
//! ENOSYS or EPERM, reaches it as the filter gives it.)

use std::path::Path;

use crate::util::{all_pass, built_tree, eqcheck, report, Case, Cmd, Output, DOUBLE_PATH};
use crate::walk::{me, walk};

/// The flag sets run on each tree: links followed or not, sizes, entries and `-x`.
const SETS: &[&str] = &["", "-a", "-a -b", "-L -a", "--inodes -a", "-x -a"];

/// What `--census` printed: the last line of stderr, and the lines before it.
fn census_of(out: &Output) -> Result<(serde_json::Value, Vec<u8>), String> {
    let text = out.stderr.strip_suffix(b"\n").unwrap_or(&out.stderr);
    let (before, last) = match text.iter().rposition(|&b| b == b'\n') {
        Some(at) => (text[..=at].to_vec(), &text[at + 1..]),
        None => (Vec::new(), text),
    };
    let line: serde_json::Value = serde_json::from_slice(last)
        .map_err(|e| format!("the last stderr line is no census ({e})\n{out}"))?;
    let census = line["census"].clone();
    if !census.is_object() {
        return Err(format!("no census counted\n{out}"));
    }
    Ok((census, before))
}

fn count(census: &serde_json::Value, field: &str) -> u64 {
    census[field].as_u64().unwrap_or(0)
}

/// Entries a walk stats at least once: every entry below the tree, and the tree.
fn entries(tree: &Path) -> u64 {
    walkdir::WalkDir::new(tree).into_iter().count() as u64
}

/// `eqcheck walk --engine fast --census FLAGS TREE`, run by the double under a
/// filter that refuses `statx` with `errno`, or as it is.
fn fast_walk(tree: &Path, flags: &str, errno: Option<&str>) -> Cmd {
    let walk = ["walk", "--engine", "fast", "--census"];
    let words = walk.iter().copied().chain(flags.split_whitespace());
    let program = match errno {
        Some(errno) => Cmd::new(DOUBLE_PATH)
            .args(["no-statx", errno])
            .arg(eqcheck()),
        None => Cmd::new(eqcheck()),
    };
    program.args(words).arg(tree)
}

/// The fast walk under the filter (`errno`, or none) agrees with the reference:
/// the same stdout and exit code, the same stderr once the census line is taken
/// off; and the census says what the filter did.
fn case(tree: &Path, flags: &str, errno: Option<&str>) -> Result<(), String> {
    let reference = walk(&me(), "reference", flags, &[tree]).output();
    let fast = fast_walk(tree, flags, errno).output();
    let (census, stderr) = census_of(&fast)?;
    let mut what = Vec::new();
    if (reference.code, &reference.stdout) != (fast.code, &fast.stdout) {
        what.push("exit or stdout differ".to_string());
    }
    if reference.stderr != stderr {
        what.push("stderr differs".to_string());
    }
    let (refused, fstatat) = (count(&census, "statx_refused"), count(&census, "fstatat"));
    let needed = entries(tree);
    match errno {
        Some(_) if refused == 0 || fstatat < needed => what.push(format!(
            "census {census}: no statx refused, or fewer than {needed} fstatat calls"
        )),
        None if refused > 0 || count(&census, "statx") < needed => what.push(format!(
            "census {census} without the filter: statx refused, or fewer than {needed} calls"
        )),
        _ => {}
    }
    report(what, &reference, &fast)
}

#[test]
fn refused_statx_falls_back_to_fstatat_and_prints_what_the_reference_prints() {
    let mut cases: Vec<Case> = Vec::new();
    for name in ["basic", "edge"] {
        let tree = built_tree(name);
        for errno in [Some("ENOSYS"), Some("EPERM"), None] {
            for flags in SETS {
                let label = format!("{name} `{flags}` statx refused with {errno:?}");
                cases.push((label, case(tree.path(), flags, errno)));
            }
        }
    }
    all_pass(cases);
}
