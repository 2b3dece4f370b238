//! The plan: which cases a run has (tree × flag set), their stable ids, and each arm's
//! argument vector for a case, with `{tree}` filled in or the tree appended.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::exec::{ArmEnvironment, ArmUser};
use crate::flagset::{FlagSet, FlagSetFile};

/// The placeholder replaced by the tree's path in arm commands and sets.
pub const TREE_PLACEHOLDER: &str = "{tree}";

/// One arm: the program and its leading arguments, split once, shell-word style.
#[derive(Debug, Clone)]
pub struct Arm {
    pub command: Vec<String>,
    /// The program is eqcheck itself (the default arms): when the arms run as
    /// another user, a copy that user can reach is run instead.
    pub is_eqcheck: bool,
}

/// One case of a tree: a group's set.
#[derive(Debug, Clone)]
pub struct PlannedCase {
    pub id: String,
    pub group: String,
    pub set: FlagSet,
}

/// Every selected set of every selected group, in file order.
pub fn cases_for_tree(tree: &str, flag_sets: &FlagSetFile, groups: &[String]) -> Vec<PlannedCase> {
    flag_sets
        .groups
        .iter()
        .filter(|g| groups.contains(&g.name))
        .flat_map(|group| {
            group.sets.iter().map(move |set| PlannedCase {
                id: format!("{tree}:{}:{}", group.name, set.label()),
                group: group.name.clone(),
                set: set.clone(),
            })
        })
        .collect()
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
    arm.command
        .iter()
        .chain(common)
        .chain(&set.args)
        .chain(operand)
        .map(|word| {
            if word.contains(TREE_PLACEHOLDER) {
                replace_placeholder(word, tree)
            } else {
                OsString::from(word)
            }
        })
        .collect()
}

fn replace_placeholder(word: &str, tree: &Path) -> OsString {
    let mut out = OsString::new();
    let mut parts = word.split(TREE_PLACEHOLDER);
    if let Some(first) = parts.next() {
        out.push(first);
    }
    for part in parts {
        out.push(tree.as_os_str());
        out.push(part);
    }
    out
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
}

/// A shell command that runs the arm again by hand as eqcheck ran it: in a fresh
/// empty HOME (given to the arm user) as working folder, umask 022, only the
/// pinned environment, as the arm user, stdin from the null device. A tree built
/// for the run is gone after it (unless `--keep`), so with `rebuild` the command
/// first builds the same tree again and runs the arm on that.
pub fn repro(argv: &[OsString], env: &ArmEnvironment, rebuild: Option<&Rebuild>) -> String {
    let mut words = Vec::new();
    if let Some(rebuild) = rebuild {
        // mktemp makes a folder only its owner may enter; the arm user must too.
        words.push(format!(
            "t=\"$(mktemp -d)\" && chmod 755 \"$t\" && t=\"$t/tree\" && {} trees build {} --into \"$t\" >/dev/null &&",
            shell_words::quote(&rebuild.eqcheck.to_string_lossy()),
            shell_words::quote(&rebuild.source)
        ));
    }
    words.push("h=\"$(mktemp -d)\" &&".to_string());
    if let ArmUser::Unprivileged { uid, gid, .. } = &env.user {
        words.push(format!("chown {uid}:{gid} \"$h\" &&"));
    }
    words.push("cd \"$h\" && umask 022 && env -i".to_string());
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
    let root = rebuild.map(|r| r.root.to_string_lossy());
    let command: Vec<String> = argv
        .iter()
        .map(|word| with_tree_variable(&word.to_string_lossy(), root.as_deref()))
        .collect();
    words.push(command.join(" "));
    words.push("</dev/null".to_string());
    words.join(" ")
}

/// A word quoted for the shell, with each occurrence of the rebuilt tree's old path
/// made `"$t"`.
fn with_tree_variable(word: &str, root: Option<&str>) -> String {
    match root {
        Some(root) if !root.is_empty() && word.contains(root) => word
            .split(root)
            .map(|part| match part {
                "" => String::new(),
                part => shell_words::quote(part).into_owned(),
            })
            .collect::<Vec<_>>()
            .join("\"$t\""),
        _ => shell_words::quote(word).into_owned(),
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
            is_eqcheck: false,
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
    }

    #[test]
    fn a_rebuilt_tree_stands_in_every_word_that_named_the_old_one() {
        let old = Some("/tmp/eqc-1");
        assert_eq!(with_tree_variable("/tmp/eqc-1", old), "\"$t\"");
        assert_eq!(
            with_tree_variable("--root=/tmp/eqc-1/a b", old),
            "'--root='\"$t\"'/a b'"
        );
        assert_eq!(with_tree_variable("a b", old), "'a b'");
        assert_eq!(with_tree_variable("/tmp/eqc-1", None), "/tmp/eqc-1");
    }
}
