//! An arm as it is run: the program and its leading arguments, where its program
//! file is found, its argument vector for a case (with `{tree}` filled in or the
//! tree appended), and the shell line that runs it again by hand.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::exec::{ArmEnvironment, ArmUser};
use crate::flagset::{fill_tree, FlagSet, FlagSetFile, TREE_PLACEHOLDER};
use crate::outcome::BuiltFrom;

/// One arm: the program and its leading arguments, split once, shell-word style.
#[derive(Debug, Clone)]
pub struct Arm {
    /// The program by its absolute path, then its leading arguments.
    pub command: Vec<String>,
    /// What the program sees as its name (`argv[0]`): by default its file name, as a
    /// user typing it would see it, so `old/du` and `new/du` print the same `du:`
    /// on every error line; a flag-set file's or the config's `argv0` sets it.
    pub argv0: String,
    /// The program is eqcheck itself (the default arms): when the arms run as
    /// another user, a copy that user can reach is run instead.
    pub is_eqcheck: bool,
    /// The binary the program is a copy of, when it is such a copy: the copy goes
    /// with the run, so a repro line makes its own.
    pub copied_from: Option<PathBuf>,
    /// The command the program runs under (an emulator, a translator), if any.
    pub runner: Option<Runner>,
    /// The source the program was built from, when eqcheck built it.
    pub built_from: Option<BuiltFrom>,
}

/// A command an arm's program runs under: `qemu-aarch64`, `arch -x86_64`, `wine`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runner {
    /// The runner's program by its absolute path, then its own arguments.
    pub command: Vec<String>,
    pub kind: RunnerKind,
}

/// What eqcheck knows of a runner, for passing the program its `argv[0]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunnerKind {
    /// qemu's user-mode emulators (`qemu-aarch64`, …): `-0 NAME` sets the `argv[0]`
    /// the emulated program sees.
    QemuUser,
    /// Any other: the program sees the path it was given as its `argv[0]`.
    Other,
}

impl Runner {
    /// A runner of this command (program already found).
    pub fn new(command: Vec<String>) -> Runner {
        let name = command.first().map(|p| file_name(p)).unwrap_or_default();
        let kind = match name.starts_with("qemu-") {
            true => RunnerKind::QemuUser,
            false => RunnerKind::Other,
        };
        Runner { command, kind }
    }
}

impl Arm {
    /// The name the started process sees as its own: the program's `argv[0]`, or,
    /// under a runner, the runner's file name (the runner passes the program its
    /// own).
    pub fn spawned_as(&self) -> String {
        match &self.runner {
            Some(runner) => file_name(&runner.command[0]),
            None => self.argv0.clone(),
        }
    }
}

/// A program's file name, the `argv[0]` it runs with unless told otherwise.
pub fn file_name(program: &str) -> String {
    Path::new(program)
        .file_name()
        .map_or_else(|| program.to_string(), |n| n.to_string_lossy().into_owned())
}

/// The file a program name runs: the path itself when it has a folder part, else
/// the first match on PATH.
pub fn locate_program(program: &str) -> Option<PathBuf> {
    let path = Path::new(program);
    if path.components().count() > 1 {
        return path.is_file().then(|| path.to_path_buf());
    }
    let search = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&search).find_map(|dir| {
        let candidate = dir.join(program);
        // As a shell's lookup does, a file on PATH that may not be run is passed by.
        if candidate.is_file() && is_executable(&candidate) {
            Some(candidate)
        } else {
            let exe = candidate.with_extension("exe");
            (cfg!(windows) && exe.is_file()).then_some(exe)
        }
    })
}

/// Whether the file's mode lets someone run it (Unix); elsewhere whether a file
/// may run is not in its mode.
#[cfg(unix)]
pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
pub fn is_executable(_path: &Path) -> bool {
    true
}

/// The interpreter a script's first line (`#!`) names, when it cannot be run:
/// the kernel's ENOENT for it would read as if the script itself were missing.
#[cfg(unix)]
pub fn missing_interpreter(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let file = std::fs::File::open(path).ok()?;
    let read = file.take(head.len() as u64).read(&mut head).ok()?;
    let line = head[..read].strip_prefix(b"#!")?;
    let line = line.split(|&b| b == b'\n').next()?;
    let interpreter = std::str::from_utf8(line).ok()?.split_whitespace().next()?;
    let usable = Path::new(interpreter).is_file() && is_executable(Path::new(interpreter));
    (interpreter.starts_with('/') && !usable).then(|| interpreter.to_string())
}

#[cfg(not(unix))]
pub fn missing_interpreter(_path: &Path) -> Option<String> {
    None
}

/// The arm's argv for a case: command, common args, the set, then the flag-set
/// file's operand words (the tree), unless the arm's own command places `{tree}`;
/// then a `{tree}` standing alone among the common args (where `find`'s sets put
/// it) is left out too, so the tree is not given twice.
/// `{tree}` is replaced wherever it stands; in a set (`-X {tree}/a`) it names a
/// path inside the tree and does not stand in for the operand.
pub fn argv(arm: &Arm, flag_sets: &FlagSetFile, set: &FlagSet, tree: &Path) -> Vec<OsString> {
    let placed_by_arm = arm.command.iter().any(|w| w.contains(TREE_PLACEHOLDER));
    let operand: &[String] = if placed_by_arm {
        &[]
    } else {
        &flag_sets.operand
    };
    let common = flag_sets
        .common
        .iter()
        .filter(|word| !(placed_by_arm && *word == TREE_PLACEHOLDER));
    let program = arm
        .command
        .iter()
        .chain(common)
        .chain(&set.args)
        .chain(operand)
        .map(|word| {
            if word.contains(TREE_PLACEHOLDER) {
                fill_tree(word, tree)
            } else {
                OsString::from(word)
            }
        });
    let Some(runner) = &arm.runner else {
        return program.collect();
    };
    // Under qemu the program still runs by its argv[0], as it does natively.
    let named: &[String] = match runner.kind {
        RunnerKind::QemuUser => &["-0".to_string(), arm.argv0.clone()],
        RunnerKind::Other => &[],
    };
    (runner.command.iter().chain(named))
        .map(OsString::from)
        .chain(program)
        .collect()
}

/// How a repro line gets back a tree the run built and removed: this eqcheck
/// builds it again into a fresh folder, whose path then stands in the arm's
/// arguments where the run's temp path stood.
#[derive(Debug, Clone)]
pub struct Rebuild {
    /// The eqcheck binary that ran, by absolute path.
    pub eqcheck: PathBuf,
    /// The tree as `eqcheck trees build` takes it: a built-in name or a spec path.
    pub source: String,
    /// Where the run built it.
    pub root: PathBuf,
    /// The file system of the image it was built on, if not the temp folder's.
    pub fs: Option<crate::fsimage::FileSystem>,
}

/// A shell command that runs the arm again by hand as eqcheck ran it: umask 022,
/// in a fresh empty HOME (given to the arm user) as working folder, only the pinned
/// environment, as the arm user, under the arm's `argv[0]`, stdin from the null
/// device. What the run made for itself is gone after it, so the command makes its
/// own first: the same tree again with `rebuild` (unless the run kept it), and its
/// own copy of a program the run ran as a copy (`copied_from`).
pub fn repro(
    arm: &Arm,
    argv: &[OsString],
    env: &ArmEnvironment,
    rebuild: Option<&Rebuild>,
) -> String {
    let argv0 = arm.spawned_as();
    // First, so a rebuilt tree's folders get the modes the run's had.
    let mut words = vec!["umask 022 &&".to_string()];
    // Paths of the run's that stand in the arm's arguments, and the shell variable
    // naming the command's own in their place.
    let mut stand_ins: Vec<(String, &str)> = Vec::new();
    if let Some(rebuild) = rebuild {
        let eqcheck = shell_words::quote(&rebuild.eqcheck.to_string_lossy()).into_owned();
        let source = shell_words::quote(&rebuild.source).into_owned();
        // mktemp makes a folder only its owner may enter; the arm user must too.
        words.push(match rebuild.fs {
            None => format!(
                "t=\"$(mktemp -d)\" && chmod 755 \"$t\" && t=\"$t/tree\" && {eqcheck} trees build {source} --into \"$t\" >/dev/null &&"
            ),
            // The image stays mounted: `trees unmount "$(dirname "$t")/../.."` takes it down.
            Some(fs) => format!(
                "t=\"$(mktemp -d)\" && chmod 755 \"$t\" && t=\"$({eqcheck} trees build {source} --fs {fs} --into \"$t/image\")\" &&"
            ),
        });
        stand_ins.push((rebuild.root.to_string_lossy().into_owned(), "t"));
    }
    // The program, not a runner before it, is what the run copied.
    let copy = arm.command.first().map(Path::new);
    if let (Some(original), Some(folder), Some(name)) = (
        arm.copied_from.as_deref(),
        copy.and_then(Path::parent),
        copy.and_then(Path::file_name),
    ) {
        words.push(format!(
            "e=\"$(mktemp -d)\" && chmod 755 \"$e\" && cp {} \"$e\"/{1} && chmod 755 \"$e\"/{1} &&",
            shell_words::quote(&original.to_string_lossy()),
            shell_words::quote(&name.to_string_lossy())
        ));
        stand_ins.push((folder.to_string_lossy().into_owned(), "e"));
    }
    words.push("h=\"$(mktemp -d)\" &&".to_string());
    if let ArmUser::Unprivileged { uid, gid, .. } = &env.user {
        words.push(format!("chown {uid}:{gid} \"$h\" &&"));
    }
    words.push("cd \"$h\" && env -i".to_string());
    let set = |name: &str| env.vars.iter().any(|(n, _)| n == name);
    for (name, value) in &env.vars {
        let pair = format!("{}={}", name.to_string_lossy(), value.to_string_lossy());
        words.push(shell_words::quote(&pair).into_owned());
    }
    if !set("HOME") {
        words.push("HOME=\"$h\"".to_string());
    }
    if !set("XDG_CONFIG_HOME") {
        words.push("XDG_CONFIG_HOME=\"$h/.config\"".to_string());
    }
    if let ArmUser::Unprivileged { uid, gid, .. } = &env.user {
        words.push(if cfg!(target_os = "linux") {
            format!("setpriv --reuid={uid} --regid={gid} --clear-groups --")
        } else {
            format!("sudo -u '#{uid}' -g '#{gid}' --")
        });
    }
    let mut command: Vec<String> = argv
        .iter()
        .map(|word| with_stand_ins(&word.to_string_lossy(), &stand_ins))
        .collect();
    // The program runs under the name the arm saw, where a shell would give it its
    // path. Perl's `exec {PROGRAM} NAME, ARGS` is `exec -a` that adds nothing to the
    // environment (bash exports SHLVL to what it runs), and every Unix has it.
    if cfg!(unix) && !command.is_empty() {
        words.push("perl -e 'exec {shift} @ARGV or die \"$!\\n\"'".to_string());
        command.insert(1, shell_words::quote(&argv0).into_owned());
    }
    words.push(command.join(" "));
    words.push("</dev/null".to_string());
    words.join(" ")
}

/// A word quoted for the shell, with each stand-in path in it made `"$VARIABLE"`.
fn with_stand_ins(word: &str, stand_ins: &[(String, &str)]) -> String {
    let found = stand_ins
        .iter()
        .find(|(path, _)| !path.is_empty() && word.contains(path.as_str()));
    match found {
        Some((path, variable)) => word
            .split(path.as_str())
            .map(|part| match part {
                "" => String::new(),
                part => with_stand_ins(part, stand_ins),
            })
            .collect::<Vec<_>>()
            .join(&format!("\"${variable}\"")),
        None => shell_words::quote(word).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(args: &[&str]) -> FlagSet {
        FlagSet {
            line: 1,
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn the_tree_is_appended_unless_the_arm_places_it() {
        let sets = crate::flagset::parse("x.sets", "common = -c\n[g]\n-s\n").unwrap();
        let arm = |words: &[&str]| Arm {
            command: words.iter().map(|s| s.to_string()).collect(),
            argv0: file_name(words[0]),
            is_eqcheck: false,
            copied_from: None,
            runner: None,
            built_from: None,
        };
        let tree = Path::new("/t/web");
        assert_eq!(
            argv(&arm(&["dust", "-P"]), &sets, &set(&["-s"]), tree),
            ["dust", "-P", "-c", "-s", "/t/web"]
        );
        assert_eq!(
            argv(&arm(&["dust"]), &sets, &set(&["-X", "{tree}/a"]), tree),
            ["dust", "-c", "-X", "/t/web/a", "/t/web"]
        );
        assert_eq!(
            argv(&arm(&["fd", ".", "{tree}"]), &sets, &set(&["-H"]), tree),
            ["fd", ".", "/t/web", "-c", "-H"]
        );
        let first =
            crate::flagset::parse("x.sets", "common = {tree}\noperand =\n[g]\n-s\n").unwrap();
        assert_eq!(
            argv(&arm(&["find"]), &first, &set(&["-s"]), tree),
            ["find", "/t/web", "-s"]
        );
        assert_eq!(
            argv(&arm(&["bfs", "{tree}"]), &first, &set(&["-s"]), tree),
            ["bfs", "/t/web", "-s"]
        );
        let placed = crate::flagset::parse("x.sets", "operand = --root={tree}\n[g]\n-s\n").unwrap();
        assert_eq!(
            argv(&arm(&["w"]), &placed, &set(&["-s"]), tree),
            ["w", "-s", "--root=/t/web"]
        );
        let under = |runner: &[&str]| Arm {
            argv0: "du".into(),
            runner: Some(Runner::new(runner.iter().map(|s| s.to_string()).collect())),
            ..arm(&["/b/du"])
        };
        assert_eq!(
            argv(
                &under(&["/usr/bin/qemu-aarch64"]),
                &sets,
                &set(&["-s"]),
                tree
            ),
            [
                "/usr/bin/qemu-aarch64",
                "-0",
                "du",
                "/b/du",
                "-c",
                "-s",
                "/t/web"
            ]
        );
        let wine = under(&["/usr/bin/wine"]);
        assert_eq!(
            argv(&wine, &sets, &set(&["-s"]), tree),
            ["/usr/bin/wine", "/b/du", "-c", "-s", "/t/web"]
        );
        assert_eq!(
            (wine.spawned_as(), under(&["/a/qemu-x86_64"]).spawned_as()),
            ("wine".into(), "qemu-x86_64".into())
        );
    }

    #[test]
    fn the_commands_own_folders_stand_in_every_word_that_named_the_runs() {
        let stand_ins = [("/tmp/eqc-1".to_string(), "t"), ("/s".to_string(), "e")];
        assert_eq!(with_stand_ins("/tmp/eqc-1", &stand_ins), "\"$t\"");
        assert_eq!(
            with_stand_ins("--root=/tmp/eqc-1/a b", &stand_ins),
            "'--root='\"$t\"'/a b'"
        );
        assert_eq!(
            with_stand_ins("/s/eqcheck=/tmp/eqc-1", &stand_ins),
            "\"$e\"'/eqcheck='\"$t\""
        );
        assert_eq!(with_stand_ins("a b", &stand_ins), "'a b'");
        assert_eq!(with_stand_ins("/tmp/eqc-1", &[]), "/tmp/eqc-1");
    }
}
