//! The plan: which cases a run has (tree × flag set) and their stable ids, and
//! which of them one shard of a partitioned run takes.

use crate::flagset::{FlagSet, FlagSetFile};
use crate::outcome::Partition;

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

/// Each tree's cases in plan order, with the ids of the whole plan: the cases
/// `partition` selects (all, without one), counted over every tree's cases in
/// turn, so a shard's share does not depend on how the trees divide the plan.
pub fn shard(
    trees: &[&str],
    flag_sets: &FlagSetFile,
    groups: &[String],
    partition: Option<Partition>,
) -> (Vec<Vec<PlannedCase>>, Vec<String>) {
    let whole: Vec<Vec<PlannedCase>> = (trees.iter())
        .map(|tree| cases_for_tree(tree, flag_sets, groups))
        .collect();
    let ids = whole.iter().flatten().map(|case| case.id.clone()).collect();
    let mut place = 0;
    let selected = (whole.into_iter())
        .map(|cases| {
            cases
                .into_iter()
                .filter(|case| {
                    place += 1;
                    partition.is_none_or(|p| p.selects(place - 1, &case.id))
                })
                .collect()
        })
        .collect();
    (selected, ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::PartitionHow;

    fn sets(groups: usize, per_group: usize) -> FlagSetFile {
        let mut text = String::new();
        for g in 0..groups {
            text.push_str(&format!("[g{g}]\n"));
            for s in 0..per_group {
                text.push_str(&format!("--flag-{s}\n"));
            }
        }
        crate::flagset::parse("x.sets", &text).unwrap()
    }

    #[test]
    fn shards_are_disjoint_complete_and_the_same_every_time() {
        let flag_sets = sets(4, 7);
        let groups: Vec<String> = flag_sets.groups.iter().map(|g| g.name.clone()).collect();
        let trees = ["basic", "edge", "nm"];
        let (all, ids) = shard(&trees, &flag_sets, &groups, None);
        let whole: Vec<String> = all.iter().flatten().map(|c| c.id.clone()).collect();
        assert_eq!((whole.len(), &whole), (3 * 4 * 7, &ids));
        for how in [PartitionHow::Hash, PartitionHow::Count] {
            for count in 1..=9 {
                let mut seen: Vec<String> = Vec::new();
                for index in 1..=count {
                    let partition = Partition { how, index, count };
                    let (mine, plan) = shard(&trees, &flag_sets, &groups, Some(partition));
                    assert_eq!(plan, ids);
                    let again = shard(&trees, &flag_sets, &groups, Some(partition)).0;
                    let ids_of = |cases: &Vec<Vec<PlannedCase>>| -> Vec<String> {
                        cases.iter().flatten().map(|c| c.id.clone()).collect()
                    };
                    assert_eq!(ids_of(&mine), ids_of(&again), "{partition}");
                    if how == PartitionHow::Count {
                        let share = ids_of(&mine).len();
                        assert!(
                            share == whole.len() / count || share == whole.len().div_ceil(count)
                        );
                    }
                    seen.extend(ids_of(&mine));
                }
                let mut sorted = seen.clone();
                sorted.sort();
                sorted.dedup();
                assert_eq!(
                    sorted.len(),
                    seen.len(),
                    "{how:?} {count}: a case in two shards"
                );
                assert_eq!(
                    seen.len(),
                    whole.len(),
                    "{how:?} {count}: a case in no shard"
                );
            }
        }
    }

    #[test]
    fn a_case_hashes_to_the_same_shard_on_every_machine() {
        // Fixed values: the hash is SHA-256's, not the process's own hasher.
        let partition = |index| Partition {
            how: PartitionHow::Hash,
            index,
            count: 4,
        };
        let shard_of = |id: &str| (1..=4).find(|&i| partition(i).selects(0, id)).unwrap();
        assert_eq!(
            ["basic:depth:-d 0", "nm:all:-a", "edge:size:-b"].map(shard_of),
            [1, 2, 1]
        );
    }

    #[test]
    fn a_partition_is_read_only_when_it_makes_sense() {
        assert_eq!(
            Partition::parse("count:2/3"),
            Ok(Partition {
                how: PartitionHow::Count,
                index: 2,
                count: 3
            })
        );
        assert_eq!(
            Partition::parse("hash:1/1").unwrap().to_string(),
            "hash:1/1"
        );
        for bad in [
            "hash:0/3", "hash:4/3", "hash:1/0", "hash:1", "mod:1/2", "hash:a/2", "1/2", "",
        ] {
            assert!(Partition::parse(bad).is_err(), "{bad}");
        }
    }
}
