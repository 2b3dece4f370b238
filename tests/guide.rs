//! What a newcomer meets besides the matrix itself: the examples at the end of
//! `eqcheck --help` (printed, and the quick ones run as printed), `eqcheck
//! completions SHELL` for each shell (checked by the shell itself where it is
//! installed), `eqcheck man` (rendered by groff where it is installed) and the
//! README's flag-set example (loaded and run).

use std::io::Write;
use std::process::{Command, Stdio};

use crate::util::{all_pass, assert_exit, lossy, run, skip_unless, Capability, Case};

/// The shells `eqcheck completions` takes, as the user types them.
const SHELLS: &[&str] = &["bash", "zsh", "fish", "powershell"];

/// How each shell's script spells the `--ref` flag (fish names long flags `-l ref`).
const REF_FLAG: &[(&str, &str)] = &[
    ("bash", "--ref"),
    ("zsh", "--ref"),
    ("fish", "-l ref "),
    ("powershell", "'--ref'"),
];

#[test]
fn completions_for_every_shell_name_the_subcommands_and_flags() {
    let cases = REF_FLAG
        .iter()
        .map(|&(shell, flag)| {
            let out = run(["completions", shell]);
            let script = lossy(&out.stdout);
            let result = if out.code != Some(0) {
                Err(format!("expected exit 0\n{out}"))
            } else if !script.contains("walk") || !script.contains(flag) {
                Err(format!("the script names no `walk` or no `{flag}`\n{out}"))
            } else if !out.stderr.is_empty() {
                Err(format!("stderr is not empty\n{out}"))
            } else {
                Ok(())
            };
            (shell.to_string(), result)
        })
        .collect();
    all_pass(cases);
}

/// Runs `program args` with `script` on stdin: its exit code and what it printed.
/// The caller has asked for the program with `skip_unless`.
fn feed(program: &str, args: &[&str], script: &[u8]) -> (Option<i32>, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let writer = {
        let script = script.to_vec();
        std::thread::spawn(move || stdin.write_all(&script))
    };
    let out = child.wait_with_output().expect("the shell ends");
    // A shell that stops reading early closes the pipe; its exit code says why.
    let _ = writer.join();
    let text = format!("{}{}", lossy(&out.stdout), lossy(&out.stderr));
    (out.status.code(), text)
}

/// Each installed shell parses its script without running it.
#[test]
fn installed_shells_accept_their_completion_scripts() {
    let checks: &[(&str, &str, &[&str])] = &[
        ("bash", "bash", &["-n"]),
        ("zsh", "zsh", &["-n"]),
        ("fish", "fish", &["--no-execute"]),
    ];
    let mut cases = Vec::new();
    for &(shell, program, args) in checks {
        let out = run(["completions", shell]);
        assert_exit(&out, 0);
        if skip_unless(Capability::Program(program)) {
            continue;
        }
        let (code, text) = feed(program, args, &out.stdout);
        let result = match code {
            Some(0) => Ok(()),
            _ => Err(format!(
                "`{program} {}` refused the script: {text}",
                args.join(" ")
            )),
        };
        cases.push((shell.to_string(), result));
    }
    // Every shell missing was said aloud above (or failed the test).
    if !cases.is_empty() {
        all_pass(cases);
    }
}

/// Bash, when installed, completes with the script: subcommands, flags and the shells
/// of `completions` itself.
#[test]
fn bash_completes_subcommands_flags_and_shells() {
    if skip_unless(Capability::Program("bash")) {
        return;
    }
    let out = run(["completions", "bash"]);
    assert_exit(&out, 0);
    // (words typed, the word being completed, what must be offered)
    let wanted: &[(&str, &str, &[&str])] = &[
        ("eqcheck wa", "wa", &["walk"]),
        ("eqcheck --re", "--re", &["--ref"]),
        ("eqcheck completions ''", "", SHELLS),
    ];
    let mut cases: Vec<Case> = Vec::new();
    for &(typed, word, offered) in wanted {
        let previous = typed.split(' ').rev().nth(1).expect("two words at least");
        let mut script = out.stdout.clone();
        script.extend(
            format!(
                "\nCOMP_WORDS=({typed}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))\n\
                 _eqcheck eqcheck '{word}' {previous}\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
            )
            .bytes(),
        );
        let (code, text) = feed("bash", &[], &script);
        let got: Vec<&str> = text.lines().collect();
        let missing: Vec<&&str> = offered.iter().filter(|o| !got.contains(o)).collect();
        let result = if code != Some(0) || !missing.is_empty() {
            // A broken script fills the output with errors; the first few say why.
            let shown = &got[..got.len().min(8)];
            Err(format!(
                "`{typed}<TAB>` offered {shown:?}…, missing {missing:?}"
            ))
        } else {
            Ok(())
        };
        cases.push((typed.to_string(), result));
    }
    all_pass(cases);
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    // (arguments, what stderr must say)
    let wrong: &[(&[&str], &str)] = &[
        (
            &["completions", "elvish"],
            "[possible values: bash, zsh, fish, powershell]",
        ),
        (&["completions"], "<SHELL>"),
    ];
    let cases = wrong
        .iter()
        .map(|&(args, says)| {
            let out = run(args);
            let result = if out.code != Some(2) {
                Err(format!("expected exit 2\n{out}"))
            } else if !out.stdout.is_empty() {
                Err(format!("a script on stdout despite the error\n{out}"))
            } else if !lossy(&out.stderr).contains(says) {
                Err(format!("stderr does not say `{says}`\n{out}"))
            } else {
                Ok(())
            };
            (args.join(" "), result)
        })
        .collect();
    all_pass(cases);
}

#[test]
fn man_prints_a_roff_page_groff_renders() {
    let out = run(["man"]);
    assert_exit(&out, 0);
    let page = lossy(&out.stdout);
    assert!(
        page.starts_with(".ie") || page.starts_with(".TH"),
        "not a roff page\n{out}"
    );
    for wanted in [
        ".TH eqcheck 1",
        ".SH OPTIONS",
        r"\-\-ref",
        "walk",
        "completions",
    ] {
        assert!(page.contains(wanted), "the page lacks `{wanted}`\n{out}");
    }
    // -k: preconv, for the page's UTF-8; -ww: every warning, which must be none.
    if skip_unless(Capability::Program("groff")) {
        return;
    }
    let (code, text) = feed("groff", &["-k", "-man", "-Tutf8", "-ww", "-z"], &out.stdout);
    assert!(
        code == Some(0) && text.is_empty(),
        "groff rendered the page with complaints: {text}\n{out}"
    );
}

/// The commands `eqcheck --help` ends with, exactly as printed.
const EXAMPLES: &[&str] = &[
    "eqcheck",
    "eqcheck --ref 'eqcheck walk --engine reference' --cand 'eqcheck walk' --tree basic --flagsets walk",
    "eqcheck --ref du --self-check --tree basic --json report.json",
];

/// The commands of the help's "Examples:" section: its lines that are not comments.
fn examples_in(help: &str) -> Vec<String> {
    let Some((_, section)) = help.split_once("\nExamples:\n") else {
        return Vec::new();
    };
    section
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[test]
fn help_ends_with_three_examples() {
    let cases = ["--help", "-h"]
        .iter()
        .map(|flag| {
            let out = run([flag]);
            assert_exit(&out, 0);
            let help = lossy(&out.stdout);
            let result = match help.rfind("\nOptions:\n") {
                None => Err(format!("no Options: section\n{out}")),
                Some(options) if !help[options..].contains("\nExamples:\n") => {
                    Err(format!("no Examples: section after the options\n{out}"))
                }
                Some(_) if examples_in(&help) != EXAMPLES => Err(format!(
                    "examples {:?}, expected {EXAMPLES:?}\n{out}",
                    examples_in(&help)
                )),
                Some(_) => Ok(()),
            };
            (flag.to_string(), result)
        })
        .collect();
    all_pass(cases);
}

/// The examples that finish in seconds run as `--help` prints them, from a fresh
/// folder, with the built eqcheck first on PATH (the arms call it by name). The
/// first, the full self-demo, takes minutes in a debug build and is left out.
#[cfg(unix)]
#[test]
fn help_examples_run_as_printed() {
    let out = run(["--help"]);
    assert_exit(&out, 0);
    let binary = crate::util::eqcheck();
    // As root the arms run as uid 65534: a build folder it cannot reach is fine,
    // since eqcheck then runs a copy of the program.
    let bin_dir = binary.parent().expect("the binary has a folder");
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH joins");
    let examples = examples_in(&lossy(&out.stdout));
    assert_eq!(
        examples.len(),
        EXAMPLES.len(),
        "the examples in --help\n{out}"
    );
    let mut cases = Vec::new();
    for example in examples.iter().skip(1) {
        if example.contains("--ref du") && crate::util::skip_unless(crate::util::Capability::GnuDu)
        {
            continue;
        }
        let words = shell_words::split(example).expect("an example splits shell-word style");
        let dir = crate::util::temp_dir();
        let ran = crate::util::Cmd::new(&binary)
            .args(&words[1..])
            .cwd(dir.path())
            .env("PATH", &path)
            .output();
        let mut result = match ran.code {
            Some(0) => Ok(()),
            _ => Err(format!("expected exit 0\n{ran}")),
        };
        if example.contains("--json report.json") && result.is_ok() {
            let report = std::fs::read(dir.path().join("report.json")).unwrap_or_default();
            let json: serde_json::Value = serde_json::from_slice(&report).unwrap_or_default();
            if json["schema_version"].as_u64().is_none() {
                result = Err(format!("no JSON report in report.json\n{ran}"));
            }
        }
        cases.push((example.clone(), result));
    }
    all_pass(cases);
}

/// The README's short flag-set file loads and runs, here with eqcheck's own walker
/// in both arms.
#[cfg(unix)]
#[test]
fn the_readme_flag_set_example_runs() {
    let readme = include_str!("../README.md");
    let (_, section) = readme
        .split_once("## Flag-set files")
        .expect("README.md has a flag-set section");
    let (_, block) = section.split_once("```text\n").expect("a text block");
    let (example, _) = block.split_once("\n```").expect("the block is closed");
    let binary = crate::util::eqcheck();
    let dir = crate::util::temp_dir();
    let sets = crate::util::written(dir.path(), "mine.sets", &format!("{example}\n"));
    let walker = format!("{} walk", shell_words::quote(&binary.to_string_lossy()));
    let out = run([
        "--ref",
        &walker,
        "--cand",
        &walker,
        "--flagsets",
        &sets,
        "--tree",
        "basic",
    ]);
    assert_exit(&out, 0);
    assert!(lossy(&out.stdout).contains("3 cases: 3 identical"), "{out}");
}
