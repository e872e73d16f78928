//! Writing an [`Index`] back as a Kerchunk JSON v1 document (what
//! `chunkref convert` writes for `.json`): the template table and the `gen`
//! entries the index kept, the store's metadata documents inline, then one
//! reference per chunk in the Kerchunk value forms (chunks a kept `gen`
//! entry generates are left to it).

use std::collections::HashSet;

use base64::Engine;
use serde_json::{json, Map, Value};

use crate::base::error::Result;
use crate::index::readers::gen;
use crate::index::refs::{unravel, ChunkRef};
use crate::index::table::chunk_key;
use crate::index::{vars_of, Index};

/// The Kerchunk JSON v1 document of `index` (URLs as the index holds them:
/// with their `{{name}}` placeholders when it kept its templates; per-file
/// attributes have no place in Kerchunk JSON and are dropped).
pub fn to_kerchunk(index: &Index) -> Result<Value> {
    let templates = index.templates.clone().unwrap_or_default();
    let mut generated = HashSet::new();
    let limit = gen::MAX_GENERATED;
    gen::expand(
        &index.source,
        &index.gen,
        &vars_of(&templates),
        true,
        limit,
        |g| {
            generated.insert(g.key);
        },
    )?;
    let mut refs = Map::new();
    for (key, doc) in &index.metadata {
        refs.insert(key.clone(), Value::String(doc.to_string()));
    }
    for array in &index.arrays {
        let grid = array.meta.grid_shape();
        for (pos, r) in array.refs.table()?.iter() {
            let key = chunk_key(&array.meta, &unravel(pos, &grid));
            if generated.contains(&key) {
                continue;
            }
            let url = |file: u32| index.files.url(file);
            let value = match r {
                ChunkRef::Inline(bytes) => Value::String(format!(
                    "base64:{}",
                    base64::engine::general_purpose::STANDARD.encode(bytes)
                )),
                ChunkRef::Whole { file } => json!([url(file)]),
                ChunkRef::Range {
                    file,
                    offset,
                    length,
                } => json!([url(file), offset, length]),
                ChunkRef::Multi { file, ranges } => json!([
                    url(file),
                    ranges.iter().map(|&(o, l)| [o, l]).collect::<Vec<_>>()
                ]),
            };
            refs.insert(key, value);
        }
    }
    let mut doc = json!({"version": 1});
    if !templates.is_empty() {
        doc["templates"] = json!(templates);
    }
    if !index.gen.is_empty() {
        doc["gen"] = Value::Array(index.gen.clone());
    }
    doc["refs"] = Value::Object(refs);
    Ok(doc)
}
