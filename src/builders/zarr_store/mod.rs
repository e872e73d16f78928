//! `chunkref index STORE.zarr`: a Kerchunk JSON index of an existing Zarr
//! v2 or v3 store on local disk. Every metadata document is copied inline
//! (its text as it is), every chunk file becomes a reference
//! `[url, 0, length]`, and each inner chunk of a v3 shard a reference
//! `[shard url, offset, length]` read from the shard's index ([`shard`]),
//! the array's metadata rewritten to describe the inner chunks. Stores of
//! the Zarr v3 draft are indexed as the v2 stores they describe ([`draft`]).

mod draft;
mod shard;
mod walk;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use rayon::prelude::*;
use serde_json::{json, Map, Value};

use crate::base::error::{Error, Result};
use crate::index::zarr::chunk_key::ChunkKeyEncoding;
use crate::index::{join_key, split_key};
use shard::Sharding;
use walk::{Root, StoreFile, METADATA_NAMES};

/// The documents at the top of a directory that make it a Zarr store.
const STORE_MARKERS: [&str; 3] = [".zgroup", ".zarray", "zarr.json"];

/// The index of a store, with what was ignored while making it.
#[derive(Debug)]
pub struct StoreIndex {
    /// The Kerchunk JSON v1 document (`{"version": 1, "refs": {...}}`).
    pub doc: Value,
    /// Files that look like chunks but were left out, one line per array.
    pub warnings: Vec<String>,
}

/// True when `dir` is a directory with a Zarr metadata document at its top.
pub fn is_store(dir: &Path) -> bool {
    dir.is_dir() && STORE_MARKERS.iter().any(|m| dir.join(m).is_file())
}

/// Indexes the Zarr store at `path` (a local directory, or a URL such as
/// `s3://bucket/store.zarr`); its files are referenced as `url/KEY`.
pub fn index_store(path: &str, url: &str) -> Result<StoreIndex> {
    let root = &Root::of(path)?;
    let (meta_files, data_files): (Vec<StoreFile>, Vec<StoreFile>) = root
        .list()?
        .into_iter()
        .partition(|f| METADATA_NAMES.contains(&split_key(&f.key).1));
    let mut docs = read_documents(root, &meta_files)?;
    // A draft store's chunk files are referenced where they are, under the
    // chunk keys of the v2 arrays it is read as.
    let mut stored = HashMap::new();
    let data_files = if draft::is_draft(&docs) {
        let translated = draft::translate(path, &docs, root, data_files)?;
        (docs, stored) = (translated.docs, translated.stored);
        translated.chunks
    } else {
        refuse_other_formats(path, &docs)?;
        data_files
    };
    let arrays = arrays_of(&docs)?;
    let url = url.trim_end_matches('/');
    let mut refs = Map::new();
    let mut warnings = Vec::new();
    let placed = place_chunks(&arrays, data_files);
    for (array, chunks) in arrays.iter().zip(placed) {
        if !chunks.outside.is_empty() {
            warnings.push(outside_warning(array, &chunks.outside));
        }
        match &array.sharding {
            None => {
                for (file, _) in chunks.inside {
                    let at = format!("{url}/{}", stored.get(&file.key).unwrap_or(&file.key));
                    refs.insert(file.key, json!([at, 0, file.size]));
                }
            }
            Some(sharding) => index_shards(root, url, array, sharding, &chunks.inside, &mut refs)?,
        }
    }
    rewrite_sharded(&arrays, &mut docs);
    for (key, doc) in docs {
        refs.insert(key, Value::String(doc.text));
    }
    Ok(StoreIndex {
        doc: json!({"version": 1, "refs": refs}),
        warnings,
    })
}

/// A metadata document of the store.
struct Document {
    /// Its text as stored (copied into the index as it is).
    text: String,
    /// Its parsed JSON.
    json: Value,
}

/// Reads and parses the metadata documents `files` of the store at `root`,
/// keyed by store key.
fn read_documents(root: &Root, files: &[StoreFile]) -> Result<BTreeMap<String, Document>> {
    files
        .par_iter()
        .map(|f| {
            let bad = |reason: String| Error::MalformedSource {
                path: root.name_of(&f.key),
                reason,
            };
            let text = String::from_utf8(root.read(&f.key, 0, f.size)?)
                .map_err(|e| bad(format!("this metadata document is not UTF-8: {e}")))?;
            let json = serde_json::from_str(&text)
                .map_err(|e| bad(format!("this metadata document is not JSON: {e}")))?;
            Ok((f.key.clone(), Document { text, json }))
        })
        .collect()
}

/// Refuses a root `zarr.json` of a `zarr_format` other than 3 (the drafts,
/// whose format is a URL, are read by [`draft`]).
fn refuse_other_formats(path: &str, docs: &BTreeMap<String, Document>) -> Result<()> {
    match docs.get("zarr.json").map(|d| &d.json["zarr_format"]) {
        Some(format) if format != 3 => Err(Error::unsupported(format!(
            "{path}: zarr.json has zarr_format {format}: only Zarr v2, Zarr v3 and the v3 \
             draft are indexed"
        ))),
        _ => Ok(()),
    }
}

/// One array of the store, as far as listing its chunks needs.
#[derive(Debug)]
struct Array {
    /// Its path in the store (`""` for a root array).
    path: String,
    /// Its shape in elements.
    shape: Vec<u64>,
    /// Chunk files along each axis.
    grid: Vec<u64>,
    /// How its chunk keys are spelled.
    encoding: ChunkKeyEncoding,
    /// Its shards' layout when it is sharded.
    sharding: Option<Sharding>,
}

/// The arrays described by `docs` (`.zarray`, `zarr.json` of node type
/// `array`), in path order.
fn arrays_of(docs: &BTreeMap<String, Document>) -> Result<Vec<Array>> {
    let mut arrays = Vec::new();
    for (key, doc) in docs {
        let (dir, name) = split_key(key);
        let array = match name {
            ".zarray" => v2_array(dir, &doc.json)?,
            "zarr.json" if doc.json["node_type"] == "array" => v3_array(dir, &doc.json)?,
            _ => continue,
        };
        arrays.push(array);
    }
    arrays.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(arrays)
}

/// The array of a v2 `.zarray` document.
fn v2_array(path: &str, doc: &Value) -> Result<Array> {
    let bad = |reason: String| Error::InvalidMetadata {
        array: path.to_string(),
        reason,
    };
    let separator = match doc["dimension_separator"].as_str() {
        None | Some(".") => '.',
        Some("/") => '/',
        Some(other) => return Err(bad(format!("dimension_separator '{other}'"))),
    };
    let shape = crate::index::zarr::u64_list(doc.get("shape"), "shape").map_err(bad)?;
    let chunks = crate::index::zarr::u64_list(doc.get("chunks"), "chunks").map_err(bad)?;
    Array::new(path, shape, chunks, ChunkKeyEncoding::v2(separator), None)
}

/// The array of a v3 `zarr.json` document of node type `array`.
fn v3_array(path: &str, doc: &Value) -> Result<Array> {
    let bad = |reason: String| Error::InvalidMetadata {
        array: path.to_string(),
        reason,
    };
    let shape = crate::index::zarr::u64_list(doc.get("shape"), "shape").map_err(bad)?;
    if doc["chunk_grid"]["name"] != "regular" {
        return Err(Error::unsupported(format!(
            "chunk grid {} of array '{path}' (only 'regular')",
            doc["chunk_grid"]["name"]
        )));
    }
    let chunks = crate::index::zarr::u64_list(
        doc["chunk_grid"]
            .get("configuration")
            .and_then(|c| c.get("chunk_shape")),
        "chunk_grid.configuration.chunk_shape",
    )
    .map_err(bad)?;
    let encoding = ChunkKeyEncoding::from_v3(doc.get("chunk_key_encoding")).map_err(bad)?;
    let sharding = match sharding_config(path, doc)? {
        Some(config) => Some(Sharding::from_config(path, &chunks, config)?),
        None => None,
    };
    Array::new(path, shape, chunks, encoding, sharding)
}

/// The configuration of the array's `sharding_indexed` codec, when it has
/// one; refused unless it is the only codec (the shards are then plain
/// files of inner chunks and an index).
fn sharding_config<'a>(path: &str, doc: &'a Value) -> Result<Option<&'a Map<String, Value>>> {
    let codecs = doc["codecs"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let Some(sharding) = codecs.iter().find(|c| c["name"] == "sharding_indexed") else {
        return Ok(None);
    };
    if codecs.len() > 1 {
        return Err(Error::unsupported(format!(
            "array '{path}': the sharding_indexed codec with other codecs around it \
             (the inner chunks are then not byte ranges of the shard file)"
        )));
    }
    let config = sharding["configuration"].as_object();
    config.map(Some).ok_or_else(|| Error::InvalidMetadata {
        array: path.to_string(),
        reason: "sharding_indexed codec without a configuration".into(),
    })
}

impl Array {
    fn new(
        path: &str,
        shape: Vec<u64>,
        chunks: Vec<u64>,
        encoding: ChunkKeyEncoding,
        sharding: Option<Sharding>,
    ) -> Result<Array> {
        if shape.len() != chunks.len() || chunks.contains(&0) {
            return Err(Error::InvalidMetadata {
                array: path.to_string(),
                reason: format!("shape {shape:?} does not fit chunk shape {chunks:?}"),
            });
        }
        let grid = shape
            .iter()
            .zip(&chunks)
            .map(|(s, c)| s.div_ceil(*c))
            .collect();
        Ok(Array {
            path: path.to_string(),
            shape,
            grid,
            encoding,
            sharding,
        })
    }

    /// The grid index of chunk key suffix `rest`, `None` when it is not
    /// a chunk key of this array as zarr spells it (`01.2` is not `1.2`:
    /// zarr never reads it).
    fn parse(&self, rest: &str) -> Option<Vec<u64>> {
        let idx = self.encoding.parse(rest, self.grid.len())?;
        (self.encoding.format(&idx) == rest).then_some(idx)
    }

    /// True when grid index `idx` lies in the chunk grid.
    fn in_grid(&self, idx: &[u64]) -> bool {
        idx.iter().zip(&self.grid).all(|(i, n)| i < n)
    }
}

/// The chunk files of one array.
#[derive(Debug, Default)]
struct Placed {
    /// Chunk files in the grid, with their grid index.
    inside: Vec<(StoreFile, Vec<u64>)>,
    /// Keys of chunk files outside the grid.
    outside: Vec<String>,
}

/// Sorts `files` into the chunks of each of `arrays` (files that are no
/// chunk key of the array holding them are dropped).
fn place_chunks(arrays: &[Array], files: Vec<StoreFile>) -> Vec<Placed> {
    let by_path: HashMap<&str, usize> = arrays
        .iter()
        .enumerate()
        .map(|(i, a)| (a.path.as_str(), i))
        .collect();
    let mut placed: Vec<Placed> = arrays.iter().map(|_| Placed::default()).collect();
    for file in files {
        let Some((a, idx)) = owner(&by_path, arrays, &file.key) else {
            continue;
        };
        if arrays[a].in_grid(&idx) {
            placed[a].inside.push((file, idx));
        } else {
            placed[a].outside.push(file.key);
        }
    }
    for p in &mut placed {
        p.inside.sort_by(|a, b| a.0.key.cmp(&b.0.key));
        p.outside.sort();
    }
    placed
}

/// The array whose chunk `key` is and the chunk's grid index, trying the
/// deepest array directory first.
fn owner(by_path: &HashMap<&str, usize>, arrays: &[Array], key: &str) -> Option<(usize, Vec<u64>)> {
    let dirs = key
        .rmatch_indices('/')
        .map(|(i, _)| (&key[..i], &key[i + 1..]));
    dirs.chain(std::iter::once(("", key)))
        .find_map(|(dir, rest)| {
            let &a = by_path.get(dir)?;
            Some((a, arrays[a].parse(rest)?))
        })
}

/// The warning for the chunk files `outside` the grid of `array`.
fn outside_warning(array: &Array, outside: &[String]) -> String {
    format!(
        "array '{}': {} chunk file(s) outside its chunk grid {:?} ignored (first: {})",
        array.path,
        outside.len(),
        array.grid,
        outside[0]
    )
}

/// Adds to `refs` one reference per stored inner chunk of the `shards`
/// (files of the store at `root`, referenced under `url`) of `array`.
fn index_shards(
    root: &Root,
    url: &str,
    array: &Array,
    sharding: &Sharding,
    shards: &[(StoreFile, Vec<u64>)],
    refs: &mut Map<String, Value>,
) -> Result<()> {
    let indexes: Vec<_> = shards
        .par_iter()
        .map(|(file, _)| sharding.read_index(root, &file.key, file.size))
        .collect::<Result<_>>()?;
    let inner_grid: Vec<u64> = array
        .shape
        .iter()
        .zip(&sharding.inner_shape)
        .map(|(&n, &inner)| n.div_ceil(inner))
        .collect();
    for ((file, shard), chunks) in shards.iter().zip(indexes) {
        let at = format!("{url}/{}", file.key);
        for chunk in chunks {
            let idx = sharding.inner_index(shard, chunk.rank);
            if idx.iter().zip(&inner_grid).all(|(i, n)| i < n) {
                let key = join_key(&array.path, &array.encoding.format(&idx));
                refs.insert(key, json!([at, chunk.offset, chunk.nbytes]));
            }
        }
    }
    Ok(())
}

/// Rewrites the `zarr.json` of each sharded array in `docs` as a plain
/// array of the inner chunks, and drops the consolidated metadata of v3
/// groups (which would still describe the shards) when there is one.
fn rewrite_sharded(arrays: &[Array], docs: &mut BTreeMap<String, Document>) {
    let mut rewritten = false;
    for array in arrays {
        let Some(sharding) = &array.sharding else {
            continue;
        };
        if let Some(doc) = docs.get_mut(&join_key(&array.path, "zarr.json")) {
            doc.json["chunk_grid"]["configuration"]["chunk_shape"] = json!(sharding.inner_shape);
            doc.json["codecs"] = sharding.inner_codecs.clone();
            doc.text = doc.json.to_string();
            rewritten = true;
        }
    }
    if !rewritten {
        return;
    }
    for (key, doc) in docs.iter_mut() {
        let consolidated = split_key(key).1 == "zarr.json"
            && doc.json["node_type"] == "group"
            && doc.json.get("consolidated_metadata").is_some();
        if let (true, Some(obj)) = (consolidated, doc.json.as_object_mut()) {
            obj.remove("consolidated_metadata");
            doc.text = doc.json.to_string();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(path: &str, shape: &[u64], chunks: &[u64], encoding: ChunkKeyEncoding) -> Array {
        Array::new(path, shape.to_vec(), chunks.to_vec(), encoding, None).unwrap()
    }

    fn file(key: &str) -> StoreFile {
        StoreFile {
            key: key.into(),
            size: 1,
        }
    }

    #[test]
    fn places_chunk_files_by_each_arrays_key_grammar() {
        let arrays = [
            array("", &[10], &[5], ChunkKeyEncoding::v2('.')),
            array("a", &[4, 6], &[2, 3], ChunkKeyEncoding::v2('/')),
            array(
                "g/b",
                &[4, 6],
                &[2, 3],
                ChunkKeyEncoding::from_v3(None).unwrap(),
            ),
        ];
        let files = [
            "1",
            "7",
            "01",
            "a/01/1",
            "a/1/1",
            "a/1.1",
            "a/2/0",
            "g/b/c/1/0",
            "g/b/1/0",
            "g/x",
            "a/0",
        ];
        let placed = place_chunks(&arrays, files.into_iter().map(file).collect());
        let keys = |p: &Placed| {
            p.inside
                .iter()
                .map(|(f, _)| f.key.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(&placed[0]), ["1"]);
        assert_eq!(placed[0].outside, ["7"]);
        assert_eq!(keys(&placed[1]), ["a/1/1"]);
        assert_eq!(placed[1].outside, ["a/2/0"]);
        assert_eq!(keys(&placed[2]), ["g/b/c/1/0"]);
        assert_eq!(placed[2].inside[0].1, vec![1, 0]);
        assert!(outside_warning(&arrays[1], &placed[1].outside).contains("a/2/0"));
    }

    #[test]
    fn refuses_sharding_with_other_codecs() {
        let doc = json!({"zarr_format": 3, "node_type": "array", "shape": [4],
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
            "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2],
                "codecs": [{"name": "bytes"}]}}, {"name": "crc32c"}]});
        let e = v3_array("s", &doc).unwrap_err().to_string();
        assert!(e.contains("other codecs"), "{e}");
    }
}
