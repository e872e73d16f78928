//! Growing collections: a time stack stored as a directory of Parquet
//! parts (docs/reference-table.md, "Growing collections").
//!
//! `coll.parquet/` holds `part-00000.parquet`, `part-00001.parquet`, ...
//! and `_chunkref_parts.json`, which lists them in order. Every part is a
//! chunk-reference table of its own rows (steps and files numbered in the
//! whole collection); its footer document describes the collection as it
//! was when the part was written, so the last part's document, a superset
//! of the others', describes the whole collection. Appending a day writes
//! one part and rewrites the short list: time proportional to the new
//! files, not to the table. pyarrow, DuckDB and polars read the parts as
//! one dataset (`coll.parquet/*.parquet`).
//!
//! This module holds what reading needs, the list and the names of parts;
//! appending to a collection and joining shards are the build side's
//! (`crate::builders::collection`).

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};

/// The file listing the parts of a collection directory.
pub const PARTS_FILE: &str = "_chunkref_parts.json";

/// Most parts a collection may list.
const MAX_PARTS: usize = 1 << 20;

/// The contents of [`PARTS_FILE`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartsList {
    /// Format version, 1.
    pub chunkref_parts: u32,
    /// File names of the parts (in the directory), oldest first.
    pub parts: Vec<String>,
}

impl PartsList {
    /// Parses and checks a parts list read from `source`: names are plain
    /// `.parquet` file names inside the directory.
    pub fn parse(source: &str, bytes: &[u8]) -> Result<PartsList> {
        let bad = |reason: String| Error::MalformedIndex {
            index: source.to_string(),
            reason,
        };
        let list: PartsList = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
        if list.chunkref_parts != 1 {
            return Err(bad(format!("unknown version {}", list.chunkref_parts)));
        }
        if list.parts.is_empty() || list.parts.len() > MAX_PARTS {
            return Err(bad(format!(
                "{} parts (1 to {MAX_PARTS})",
                list.parts.len()
            )));
        }
        if let Some(name) = list
            .parts
            .iter()
            .find(|n| n.contains(['/', '\\']) || n.starts_with('.') || !n.ends_with(".parquet"))
        {
            return Err(bad(format!(
                "part '{name}' is not a .parquet file name in the directory"
            )));
        }
        Ok(list)
    }

    /// The name of the next part.
    pub fn next_name(&self) -> String {
        part_name(self.parts.len())
    }
}

/// The file name of part `n`.
pub fn part_name(n: usize) -> String {
    format!("part-{n:05}.parquet")
}

/// The file name of shard `index` of `count` (`--shard I/N`).
pub fn shard_name(index: usize, count: usize) -> String {
    format!("shard-{index:05}-of-{count:05}.parquet")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_lists_hold_plain_part_names() {
        let ok = br#"{"chunkref_parts": 1, "parts": ["part-00000.parquet"]}"#;
        let list = PartsList::parse("c", ok).unwrap();
        assert_eq!(list.next_name(), "part-00001.parquet");
        for bad in [
            r#"{"chunkref_parts": 1, "parts": ["../x.parquet"]}"#,
            r#"{"chunkref_parts": 1, "parts": []}"#,
            r#"{"chunkref_parts": 2, "parts": ["a.parquet"]}"#,
            r#"{"chunkref_parts": 1, "parts": ["a.json"]}"#,
        ] {
            assert!(PartsList::parse("c", bad.as_bytes()).is_err(), "{bad}");
        }
    }
}
