//! The temp folder the arms' programs are copied into, when the arms run as
//! another user: one that cannot hold the copy, or cannot run it, is named before
//! any case, with TMPDIR as the way out.
#![cfg(target_os = "linux")]

use std::path::Path;

use crate::util::{assert_exit, eqcheck, skip_unless, temp_dir, Capability, Cmd};

/// The check reads statvfs's noexec flag, which macOS's lacks.
#[test]
fn a_noexec_temp_folder_is_named_before_any_case_with_tmpdir_as_the_way_out() {
    if skip_unless(Capability::Root) || skip_unless(Capability::MountTmpfs) {
        return;
    }
    let dir = temp_dir();
    let _noexec = crate::util::Mount::noexec_tmpfs(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    let (out, said) = default_arms_in_temp(dir.path());
    let mount = format!("mounted noexec at {}", dir.path().display());
    assert!(said.contains(&mount), "{out}");
    assert!(said.contains("set TMPDIR"), "{out}");
    assert!(
        !said.contains("make the program reachable"),
        "the wrong advice\n{out}"
    );
}

/// A run of the default arms with `temp` as TMPDIR, which must fail as a harness
/// failure (exit 3) before any case: the default arms are eqcheck itself, copied
/// into the temp folder for the unprivileged arm user. The run and its stderr.
fn default_arms_in_temp(temp: &Path) -> (crate::util::Output, String) {
    let out = Cmd::new(eqcheck())
        .args(["--tree", "basic", "--sets", "depth"])
        .env("TMPDIR", temp)
        .output();
    assert_exit(&out, 3);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, said)
}

/// A temp folder too small for the copy of the program made for the arm user is
/// named, with the copy's path, the program's size and the room there was.
#[test]
fn a_temp_folder_too_small_for_the_arms_program_says_how_small() {
    if skip_unless(Capability::Root) || skip_unless(Capability::MountTmpfs) {
        return;
    }
    let dir = temp_dir();
    let _small = crate::util::Mount::tmpfs(dir.path()).unwrap_or_else(|e| panic!("{e}"));
    // eqcheck itself is larger than the 8 MiB folder.
    let (out, said) = default_arms_in_temp(dir.path());
    let copying = format!(
        "copying {} to {}",
        eqcheck().display(),
        dir.path().display()
    );
    assert!(said.contains(&copying), "{out}");
    assert!(
        said.contains(" free there; set TMPDIR to a roomier folder)"),
        "{out}"
    );
}
