//! The plan: which cases a run has (tree × flag set) and their stable ids.

use crate::flagset::{FlagSet, FlagSetFile};

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
