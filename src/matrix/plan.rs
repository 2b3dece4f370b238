//! The plan: which cases a run has (tree × flag set), their stable ids, and each arm's
//! argument vector for a case, with `{tree}` filled in or the tree appended.

use std::ffi::OsString;
use std::path::Path;

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

/// The arm's argv for a case: command, common args, the set, with `{tree}` replaced
/// wherever it stands, or the tree appended when it stands nowhere.
pub fn argv(arm: &Arm, common: &[String], set: &FlagSet, tree: &Path) -> Vec<OsString> {
    let words = arm.command.iter().chain(common).chain(&set.args);
    let mut placed = false;
    let mut argv: Vec<OsString> = words
        .map(|word| {
            if word.contains(TREE_PLACEHOLDER) {
                placed = true;
                replace_placeholder(word, tree)
            } else {
                OsString::from(word)
            }
        })
        .collect();
    if !placed {
        argv.push(tree.as_os_str().to_os_string());
    }
    argv
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

/// A shell command that runs the argv again by hand.
pub fn repro(argv: &[OsString]) -> String {
    shell_words::join(argv.iter().map(|a| a.to_string_lossy()))
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
    fn the_tree_is_appended_unless_placed() {
        let arm = Arm {
            command: vec!["dust".into(), "-P".into()],
            is_eqcheck: false,
        };
        let tree = Path::new("/t/web");
        assert_eq!(
            argv(&arm, &[], &set(&["-s"]), tree),
            ["dust", "-P", "-s", "/t/web"]
        );
        assert_eq!(
            argv(&arm, &[], &set(&["-X", "{tree}/a"]), tree),
            ["dust", "-P", "-X", "/t/web/a"]
        );
    }
}
