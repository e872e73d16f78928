//! Stores of the Zarr v3 draft (the layout GDAL 3.4 to 3.7 writes with
//! `FORMAT=ZARR_V3`, and zarr-python 2.x's experimental v3): a root
//! `zarr.json` whose `zarr_format` is the draft's URL, each array's
//! metadata in `meta/root/PATH.array.json`, each group's in
//! `meta/root/PATH.group.json`, and the chunks in `data/root/PATH/c0/1`
//! (`c0.1` with the `.` separator).
//!
//! The draft's array metadata says what Zarr v2's does (a NumPy type
//! string, one compressor, C or F order, a nullable fill value), so each
//! array is indexed as the Zarr v2 array it describes: a `.zarray`, its
//! attributes as `.zattrs`, and chunk keys `PATH/0/1` referencing the
//! draft's files where they are. Compressors the draft names by URL map to
//! numcodecs' `gzip`, `zlib`, `blosc`, `zstd` and `lz4` (GDAL's writer frames
//! each as numcodecs does); others are refused by name.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Map, Value};

use super::walk::{Root, StoreFile};
use super::{read_documents, Document};
use crate::base::error::{Error, Result};
use crate::index::join_key;

/// What the draft's root `zarr.json` holds in `zarr_format`.
const DRAFT_FORMAT: &str = "https://purl.org/zarr/spec/protocol/core/3.0";
/// The draft's codec URLs start with this, then `NAME/VERSION`.
const CODEC_URL: &str = "https://purl.org/zarr/spec/codec/";
/// Where the draft keeps metadata documents and chunks.
const META: &str = "meta/root";
const DATA: &str = "data/root/";

/// A draft store read as the Zarr v2 store it describes.
pub(super) struct Translated {
    /// `.zgroup`, `.zarray` and `.zattrs` documents by v2 key.
    pub(super) docs: BTreeMap<String, Document>,
    /// The chunk files, keyed by their v2 chunk key.
    pub(super) chunks: Vec<StoreFile>,
    /// The draft's own key of each chunk file, by v2 chunk key.
    pub(super) stored: HashMap<String, String>,
}

/// Whether the root `zarr.json` of `docs` is the draft's.
pub(super) fn is_draft(docs: &BTreeMap<String, Document>) -> bool {
    docs.get("zarr.json")
        .is_some_and(|d| d.json["zarr_format"].is_string())
}

/// Reads the draft store at `root` (whose other files are `files`) as the
/// Zarr v2 store it describes.
pub(super) fn translate(
    path: &str,
    docs: &BTreeMap<String, Document>,
    root: &Root,
    files: Vec<StoreFile>,
) -> Result<Translated> {
    let format = &docs["zarr.json"].json["zarr_format"];
    if format != DRAFT_FORMAT {
        return Err(Error::unsupported(format!(
            "{path}: zarr.json has zarr_format {format}: only Zarr v2, Zarr v3 and the v3 \
             draft ({DRAFT_FORMAT}) are indexed"
        )));
    }
    let (meta, data): (Vec<StoreFile>, Vec<StoreFile>) = files
        .into_iter()
        .partition(|f| f.key.starts_with(META) && f.key.ends_with(".json"));
    let mut out = BTreeMap::new();
    let mut arrays = Vec::new();
    for (key, doc) in read_documents(root, &meta)? {
        let Some((node, kind)) = node_of(&key) else {
            continue;
        };
        if kind == "group" {
            put(
                &mut out,
                join_key(&node, ".zgroup"),
                json!({"zarr_format": 2}),
            );
        } else {
            let separator = separator_of(&node, &doc.json)?;
            put(
                &mut out,
                join_key(&node, ".zarray"),
                v2_array(&node, &doc.json)?,
            );
            arrays.push((node.clone(), separator));
        }
        if let Some(attrs) = doc.json["attributes"].as_object().filter(|a| !a.is_empty()) {
            put(
                &mut out,
                join_key(&node, ".zattrs"),
                Value::Object(attrs.clone()),
            );
        }
    }
    let by_path: HashMap<&str, char> = arrays.iter().map(|(p, s)| (p.as_str(), *s)).collect();
    let mut chunks = Vec::new();
    let mut stored = HashMap::new();
    for file in data {
        if let Some(key) = chunk_key(&by_path, &file.key) {
            stored.insert(key.clone(), file.key);
            chunks.push(StoreFile {
                key,
                size: file.size,
            });
        }
    }
    Ok(Translated {
        docs: out,
        chunks,
        stored,
    })
}

/// The node path and kind (`array` or `group`) of a draft metadata key
/// (`meta/root.group.json` is the root group, `meta/root/a/b.array.json`
/// the array `a/b`).
fn node_of(key: &str) -> Option<(String, &'static str)> {
    let rest = key.strip_prefix(META)?;
    let below = rest.strip_prefix('/');
    let name = below.unwrap_or(rest);
    [("array", ".array.json"), ("group", ".group.json")]
        .into_iter()
        .find_map(|(kind, suffix)| {
            let node = name.strip_suffix(suffix)?;
            // `meta/root.array.json` is the root; `meta/root/x` names x.
            (below.is_some() != node.is_empty()).then(|| (node.to_string(), kind))
        })
}

/// Stores `doc` (as its JSON text) under `key`.
fn put(docs: &mut BTreeMap<String, Document>, key: String, doc: Value) {
    docs.insert(
        key,
        Document {
            text: doc.to_string(),
            json: doc,
        },
    );
}

/// The chunk key separator of a draft array.
fn separator_of(node: &str, doc: &Value) -> Result<char> {
    match doc["chunk_grid"]["separator"].as_str() {
        None | Some("/") => Ok('/'),
        Some(".") => Ok('.'),
        Some(other) => Err(invalid(node, format!("chunk_grid separator '{other}'"))),
    }
}

/// The v2 `.zarray` of a draft array document.
fn v2_array(node: &str, doc: &Value) -> Result<Value> {
    if doc["chunk_grid"]["type"] != "regular" {
        return Err(Error::unsupported(format!(
            "chunk grid {} of array '{node}' (only 'regular')",
            doc["chunk_grid"]["type"]
        )));
    }
    let dtype = doc["data_type"]
        .as_str()
        .ok_or_else(|| invalid(node, "no data_type string".into()))?;
    // A type without byte order (`u1`, `i1`, `bool`) is written `|u1`.
    let dtype = match dtype {
        "bool" => "|b1".to_string(),
        t if t.starts_with(['<', '>', '|']) => t.to_string(),
        t => format!("|{t}"),
    };
    let order = match doc["chunk_memory_layout"].as_str() {
        None | Some("C") => "C",
        Some("F") => "F",
        Some(other) => return Err(invalid(node, format!("chunk_memory_layout '{other}'"))),
    };
    let compressor = match &doc["compressor"] {
        Value::Null => Value::Null,
        c => v2_compressor(node, c)?,
    };
    let filters = match doc.get("filters") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::Array(f)) if f.is_empty() => Value::Null,
        Some(_) => {
            return Err(Error::unsupported(format!(
                "array '{node}': filters in a Zarr v3 draft store"
            )))
        }
    };
    Ok(json!({
        "zarr_format": 2,
        "shape": doc["shape"],
        "chunks": doc["chunk_grid"]["chunk_shape"],
        "dtype": dtype,
        "compressor": compressor,
        "fill_value": doc["fill_value"],
        "order": order,
        "filters": filters,
        "dimension_separator": separator_of(node, doc)?.to_string(),
    }))
}

/// The numcodecs compressor of a draft `compressor` (`{"codec": URL,
/// "configuration": {...}}`).
fn v2_compressor(node: &str, c: &Value) -> Result<Value> {
    let url = c["codec"].as_str().unwrap_or_default();
    let name = url
        .strip_prefix(CODEC_URL)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or(url);
    let mut config: Map<String, Value> =
        c["configuration"].as_object().cloned().unwrap_or_default();
    match name {
        "gzip" | "zlib" | "zstd" | "lz4" => {}
        "blosc" => {
            // numcodecs spells the shuffle as a number, as the draft does.
            config.entry("shuffle").or_insert(json!(1));
            config.entry("blocksize").or_insert(json!(0));
        }
        other => {
            return Err(Error::unsupported(format!(
                "array '{node}': compressor '{other}' ({url}) of a Zarr v3 draft store \
                 (gzip, zlib, blosc, zstd and lz4 are read)"
            )))
        }
    }
    config.insert("id".into(), json!(name));
    Ok(Value::Object(config))
}

/// The v2 chunk key of the draft chunk file `key` (`data/root/a/c0/1` of
/// array `a` is `a/0/1`), when it is one of an array in `arrays` (array
/// path -> separator).
fn chunk_key(arrays: &HashMap<&str, char>, key: &str) -> Option<String> {
    let rest = key.strip_prefix(DATA).or_else(|| {
        // The root array's chunks: `data/root/c0/1`.
        key.strip_prefix("data/root")
            .filter(|r| r.starts_with("/c"))
    })?;
    let rest = rest.strip_prefix('/').unwrap_or(rest);
    let dirs = rest
        .rmatch_indices('/')
        .map(|(i, _)| (&rest[..i], &rest[i + 1..]));
    dirs.chain(std::iter::once(("", rest)))
        .find_map(|(dir, name)| {
            let separator = arrays.get(dir)?;
            let indices = name.strip_prefix('c')?;
            let valid = indices
                .split(*separator)
                .all(|i| !i.is_empty() && i.bytes().all(|b| b.is_ascii_digit()));
            valid.then(|| join_key(dir, indices))
        })
}

fn invalid(node: &str, reason: String) -> Error {
    Error::InvalidMetadata {
        array: node.to_string(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_keys_name_their_nodes() {
        assert_eq!(
            node_of("meta/root.group.json"),
            Some((String::new(), "group"))
        );
        assert_eq!(
            node_of("meta/root.array.json"),
            Some((String::new(), "array"))
        );
        assert_eq!(
            node_of("meta/root/a/b.array.json"),
            Some(("a/b".into(), "array"))
        );
        assert_eq!(
            node_of("meta/root/g.group.json"),
            Some(("g".into(), "group"))
        );
        assert_eq!(node_of("meta/rootx.array.json"), None);
        assert_eq!(node_of("meta/root/x.json"), None);
    }

    #[test]
    fn chunk_files_become_v2_chunk_keys() {
        let arrays = HashMap::from([("a", '/'), ("g/b", '.'), ("", '/')]);
        let key = |k: &str| chunk_key(&arrays, k);
        assert_eq!(key("data/root/a/c0/1").as_deref(), Some("a/0/1"));
        assert_eq!(key("data/root/g/b/c2.3").as_deref(), Some("g/b/2.3"));
        assert_eq!(key("data/root/c4/5").as_deref(), Some("4/5"));
        assert_eq!(key("data/root/a/0/1"), None);
        assert_eq!(key("data/root/x/c0/1"), None);
        assert_eq!(key("meta/root/a.array.json"), None);
    }

    #[test]
    fn array_documents_become_zarray() {
        let doc = json!({"shape": [10, 20], "data_type": "<f4",
            "chunk_grid": {"type": "regular", "chunk_shape": [5, 5], "separator": "/"},
            "compressor": {"codec": "https://purl.org/zarr/spec/codec/blosc/1.0",
                           "configuration": {"cname": "lz4", "clevel": 5, "shuffle": 1}},
            "fill_value": null, "chunk_memory_layout": "F", "extensions": [],
            "attributes": {}});
        let v2 = v2_array("a", &doc).unwrap();
        assert_eq!(v2["dtype"], "<f4");
        assert_eq!(v2["chunks"], json!([5, 5]));
        assert_eq!(v2["order"], "F");
        assert_eq!(v2["compressor"]["id"], "blosc");
        assert_eq!(v2["compressor"]["cname"], "lz4");
        assert_eq!(v2["dimension_separator"], "/");
        let byte = json!({"shape": [4], "data_type": "u1",
            "chunk_grid": {"type": "regular", "chunk_shape": [4]}, "compressor": null,
            "fill_value": 0});
        assert_eq!(v2_array("b", &byte).unwrap()["dtype"], "|u1");
        let lzma = json!({"shape": [4], "data_type": "u1",
            "chunk_grid": {"type": "regular", "chunk_shape": [4]},
            "compressor": {"codec": "https://purl.org/zarr/spec/codec/lzma/1.0"}});
        let e = v2_array("c", &lzma).unwrap_err().to_string();
        assert!(e.contains("compressor 'lzma'"), "{e}");
    }
}
