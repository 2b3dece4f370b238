//! Arm identity in the reports: which file each arm ran (size, sha256, the
//! architecture its header names, its `--version`), how it ran (native, or
//! translated under a runner), the machine, and each tree's file system.

use crate::run::{eqcheck_walk, run_pair};
use crate::util::{assert_exit, double, json_report};

#[test]
fn the_report_names_each_arms_build_and_how_it_ran() {
    let walk = eqcheck_walk("reference");
    let out = run_pair(
        &walk,
        &double("walk-alter-line 1000 --engine reference"),
        &["--sets", "depth", "--cand-runner", "env", "--json", "-"],
    );
    assert_exit(&out, 0);
    let report = json_report(&out);
    let reference = &report["reference"];
    let size = std::fs::metadata(env!("CARGO_BIN_EXE_eqcheck"))
        .unwrap()
        .len();
    assert_eq!(reference["size"], size, "{out}");
    assert_eq!(reference["architecture"], std::env::consts::ARCH, "{out}");
    let version = format!("eqcheck {}", env!("CARGO_PKG_VERSION"));
    assert_eq!(reference["version"], version.as_str(), "{out}");
    assert_eq!(
        (&reference["translated"], reference["execution"].as_str()),
        (&serde_json::Value::Bool(false), Some("native")),
        "{out}"
    );
    // The double prints no version; under a runner it ran translated.
    let candidate = &report["candidate"];
    assert!(candidate["version"].is_null(), "{out}");
    assert_eq!(candidate["translated"], true, "{out}");
    assert_eq!(candidate["execution"], "translated (under env)", "{out}");
    let host = &report["host"];
    assert_eq!(host["os"], std::env::consts::OS, "{out}");
    assert_eq!(host["architecture"], std::env::consts::ARCH, "{out}");
    if cfg!(target_os = "linux") {
        assert!(
            host["kernel"].as_str().unwrap().starts_with("Linux "),
            "{out}"
        );
        assert!(report["trees"][0]["file_system"].is_string(), "{out}");
    }
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains(&format!("version: {version}")), "{out}");
    assert!(text.contains("  ran: translated (under env)"), "{out}");
}

/// The `--version` probe runs in a folder of its own, not in eqcheck's: run from
/// inside the tree it compares, a program that writes to its working folder when
/// asked its version would write into the tree after the guard's last look.
#[cfg(unix)]
#[test]
fn the_version_probe_never_runs_in_the_tree_eqcheck_was_started_in() {
    let dir = crate::util::temp_dir();
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("a"), "a").unwrap();
    let script = dir.path().join("writes-on-version");
    let walker = format!("{} walk", crate::util::eqcheck().display());
    std::fs::write(
        &script,
        format!("#!/bin/sh\nif [ \"$1\" = --version ]; then : > ./made-by-version; echo spy 1; exit 0; fi\nexec {walker} \"$@\"\n"),
    )
    .unwrap();
    crate::util::set_mode(&script, 0o755);
    let out = crate::util::Cmd::new(crate::util::eqcheck())
        .args(["--ref", &walker, "--cand"])
        .arg(&script)
        .args(["--tree", ".", "--sets", "depth", "--json", "-"])
        .cwd(&tree)
        .output();
    crate::util::assert_exit(&out, 0);
    let report = crate::util::json_report(&out);
    assert_eq!(report["candidate"]["version"], "spy 1", "{out}");
    assert!(!tree.join("made-by-version").exists(), "{out}");
}
