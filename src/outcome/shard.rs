//! A sharded run: which part of the matrix one CI job runs (`--partition HOW:M/N`),
//! and the whole plan it is part of, which `eqcheck merge` checks the shards cover.

use serde::{Deserialize, Serialize};

/// The part of the matrix one CI job runs, and the whole matrix it is part of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub partition: Partition,
    /// Every case id of the whole matrix, in plan order: what the shards of one run
    /// must cover together, each case once.
    pub plan: Vec<String>,
}

/// `--partition HOW:M/N`: the M-th of N shards of a matrix's cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    pub how: PartitionHow,
    /// M, from 1.
    pub index: usize,
    /// N.
    pub count: usize,
}

/// How cases are dealt to shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PartitionHow {
    /// By a hash of the case id: a case stays in its shard when others are added.
    Hash,
    /// In turn, by the case's place in the plan: shards as even as can be.
    Count,
}

impl Partition {
    /// Reads `hash:M/N` or `count:M/N`, with 1 <= M <= N.
    pub fn parse(text: &str) -> Result<Partition, String> {
        let expected = || {
            format!(
                "expected hash:M/N or count:M/N with 1 <= M <= N, such as hash:1/3, not `{text}`"
            )
        };
        let (how, shard) = text.split_once(':').ok_or_else(expected)?;
        let how = match how {
            "hash" => PartitionHow::Hash,
            "count" => PartitionHow::Count,
            _ => return Err(expected()),
        };
        let (index, count) = shard.split_once('/').ok_or_else(expected)?;
        let number = |n: &str| n.parse::<usize>().map_err(|_| expected());
        let (index, count) = (number(index)?, number(count)?);
        if index == 0 || index > count {
            return Err(expected());
        }
        Ok(Partition { how, index, count })
    }

    /// Whether this shard runs the case with this id at this place in the plan.
    pub fn selects(&self, place: usize, id: &str) -> bool {
        let bucket = match self.how {
            PartitionHow::Hash => stable_hash(id) % self.count as u64,
            PartitionHow::Count => (place % self.count) as u64,
        };
        bucket == (self.index - 1) as u64
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = match self.how {
            PartitionHow::Hash => "hash",
            PartitionHow::Count => "count",
        };
        write!(f, "{how}:{}/{}", self.index, self.count)
    }
}

/// A hash of a case id that is the same on every machine and in every version:
/// the first 8 bytes of its SHA-256.
fn stable_hash(id: &str) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}
