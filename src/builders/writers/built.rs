//! An index as a builder (`chunkref index`) makes it, before it is written
//! in any form: the Zarr metadata documents and, per array, the chunk
//! references with their grid indices. Kerchunk JSON is made from it by
//! [`Built::to_kerchunk`]; time stacks take their rows from it directly
//! ([`crate::builders::writers::stacker`]), without a JSON document in between.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use std::sync::Arc;

/// One chunk reference.
#[derive(Debug, Clone)]
pub struct Ref {
    /// Chunk grid index (band group, row, column): key suffix `0.1.2`.
    pub index: [u64; 3],
    /// URL of the file holding the chunk (shared by the references of a
    /// file: one allocation per file, not per chunk).
    pub url: Arc<str>,
    /// Byte ranges `(offset, length)`; several are concatenated in order (a
    /// multi-range reference) unless they are back to back.
    pub ranges: Vec<(u64, u64)>,
}

/// The index of one source (or one DTED mosaic) as a builder makes it.
#[derive(Debug, Default, Clone)]
pub struct Built {
    /// Zarr metadata documents (`.zgroup`, `.zattrs`, `.zarray`) by store key.
    pub metadata: BTreeMap<String, Value>,
    /// Chunk references by array path, in the order the builder made them.
    pub arrays: BTreeMap<String, Vec<Ref>>,
    /// Kerchunk `templates` filled into the reference URLs (`--template-base`
    /// sets `base` to `""`).
    pub templates: BTreeMap<String, String>,
    /// The source's own acquisition datetime (ISO 8601) from its metadata,
    /// when it records one.
    pub datetime: Option<String>,
}

impl Built {
    /// The Kerchunk JSON v1 document: metadata documents inline, one
    /// reference per chunk, `templates` when there are any.
    pub fn to_kerchunk(&self) -> Value {
        let mut refs = Map::new();
        for (key, doc) in &self.metadata {
            refs.insert(key.clone(), Value::String(doc.to_string()));
        }
        for (path, list) in &self.arrays {
            for r in list {
                let [b, y, x] = r.index;
                refs.insert(format!("{path}/{b}.{y}.{x}"), r.to_json());
            }
        }
        let mut doc = json!({"version": 1, "refs": refs});
        if !self.templates.is_empty() {
            doc["templates"] = json!(self.templates);
        }
        doc
    }
}
