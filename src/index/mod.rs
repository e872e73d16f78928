//! Chunk indexes: reading an index document into Zarr array metadata plus a
//! columnar [`ChunkTable`] per array.
//!
//! Each index format lives in its own module and produces the same
//! [`Index`]. [`readers`] turn index documents into an [`Index`] (Kerchunk
//! JSON and Parquet, Icechunk, the Parquet table); [`writers`] make and write
//! them (what `chunkref index`, `stack` and `convert` produce). The forms
//! both sides share stay here: the reference table ([`table`]), its
//! FlatGeobuf form ([`fgb`]), Kerchunk templates ([`template`]) and growing
//! collections ([`parts`]).

pub mod fgb;
pub mod footprint;
pub mod parts;
pub mod readers;
pub mod refs;
pub mod table;
pub mod template;
pub mod zarr;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::base::error::{Error, Result};
use crate::index::refs::{ChunkTable, FileTable, RawRef, Refs};
use crate::index::zarr::ArrayMeta;
use crate::io::index_file::{IndexFile, Opener};
use readers::stack::TimeOptions;
use template::{TemplateValue, Vars};

/// Store keys that hold metadata documents rather than chunks.
const METADATA_NAMES: [&str; 5] = [".zarray", ".zattrs", ".zgroup", ".zmetadata", "zarr.json"];

/// Largest index document read whole (Kerchunk JSON, `.zmetadata`).
pub const MAX_DOCUMENT_BYTES: u64 = 2 << 30;

/// How an index is opened.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Kerchunk template values replacing the index's own.
    pub overrides: Vec<(String, String)>,
    /// The time steps of a time stack to keep.
    pub time: TimeOptions,
    /// Tables with more rows than this keep them in the file and read the
    /// ones a chunk read needs (Parquet row groups, FlatGeobuf R-tree hits).
    pub eager_rows: u64,
    /// The version of an Icechunk repository to read.
    pub version: readers::icechunk::Version,
    /// Leaves `{{name}}` placeholders in the URLs and keeps the template
    /// table and `gen` entries in the [`Index`] (what `chunkref convert`
    /// writes back), instead of filling them in.
    pub keep_templates: bool,
    /// Most references one Kerchunk `gen` entry may generate (at most
    /// [`readers::gen::MAX_GENERATED`]).
    pub max_generated: u64,
}

impl Default for LoadOptions {
    fn default() -> LoadOptions {
        LoadOptions {
            overrides: Vec::new(),
            time: TimeOptions::default(),
            eager_rows: u64::MAX,
            version: readers::icechunk::Version::default(),
            keep_templates: false,
            max_generated: readers::gen::MAX_GENERATED,
        }
    }
}

impl LoadOptions {
    /// The index's own template table with the overrides applied.
    fn templates(&self, own: impl IntoIterator<Item = (String, String)>) -> Templates {
        let mut templates: Templates = own.into_iter().collect();
        templates.extend(self.overrides.iter().cloned());
        templates
    }

    /// Fills the templates of `index` (its own, overridden) into its URLs,
    /// or keeps them in the index with `keep_templates`.
    fn apply_templates(&self, mut index: Index) -> Result<Index> {
        let templates = self.templates(index.templates.take().unwrap_or_default());
        if self.keep_templates {
            index.templates = Some(templates);
        } else {
            render_templates(&index.source, &mut index.files, &vars_of(&templates))?;
        }
        Ok(index)
    }

    fn select_time(&self, index: Index) -> Result<Index> {
        if self.time.is_empty() {
            Ok(index)
        } else {
            readers::stack::select_time(index, &self.time)
        }
    }
}

/// One array: its metadata and where its chunks live.
#[derive(Debug)]
pub struct Array {
    /// Zarr metadata.
    pub meta: ArrayMeta,
    /// Chunk references, by row-major chunk position.
    pub refs: Refs,
}

/// An opened chunk index.
#[derive(Debug)]
pub struct Index {
    /// Where the index was read from (for messages and relative URLs).
    pub source: String,
    /// File URLs referenced by chunks, templates applied.
    pub files: FileTable,
    /// Per-file attributes (such as `datetime`) by file id; shorter than
    /// the file table when the index form has none.
    pub file_attributes: Vec<Map<String, Value>>,
    /// Arrays sorted by path.
    pub arrays: Vec<Array>,
    /// Every Zarr metadata document of the store, by key, parsed.
    pub metadata: BTreeMap<String, Value>,
    /// Group attributes by group path (`""` is the root).
    pub groups: BTreeMap<String, Map<String, Value>>,
    /// Kerchunk `templates` (name -> value) still to be filled into the
    /// `{{name}}` placeholders of `files`; `None` once they are filled in
    /// (see [`LoadOptions::keep_templates`]).
    pub templates: Option<Templates>,
    /// Kerchunk `gen` entries kept unexpanded beside their references
    /// (with [`LoadOptions::keep_templates`], for writing Kerchunk JSON).
    pub gen: Vec<Value>,
    /// Non-fatal problems found while reading (shown as GDAL warnings).
    pub warnings: Vec<String>,
    /// Arrays of the store that cannot be served, with the reason (left
    /// out of `arrays`; opening one by name fails with that reason).
    pub skipped: BTreeMap<String, String>,
}

impl Index {
    /// Reads a Kerchunk JSON index, templates filled in. `overrides`
    /// replace template values.
    pub fn from_kerchunk_json(
        source: &str,
        bytes: &[u8],
        overrides: &[(String, String)],
    ) -> Result<Index> {
        let how = LoadOptions {
            overrides: overrides.to_vec(),
            ..LoadOptions::default()
        };
        Index::read_kerchunk_json(source, bytes, &how)
    }

    /// Reads a Kerchunk JSON index as `how` says (template overrides,
    /// templates kept or filled in).
    pub(crate) fn read_kerchunk_json(
        source: &str,
        bytes: &[u8],
        how: &LoadOptions,
    ) -> Result<Index> {
        let mut doc = readers::kerchunk_json::parse(source, bytes)?;
        let own: Templates = doc.templates.drain(..).collect();
        let templates = how.templates(own.clone());
        let mut entries = std::mem::take(&mut doc.entries);
        let mut files = std::mem::take(&mut doc.files);
        readers::gen::expand(
            source,
            &doc.gen,
            &vars_of(&templates),
            how.keep_templates,
            how.max_generated,
            |g| {
                let file = files.intern(&g.url);
                let r = match g.range {
                    Some((o, l)) => RawRef::Range(file, o, l),
                    None => RawRef::Whole(file),
                };
                entries.push((Cow::Owned(g.key), r));
            },
        )?;
        let mut index = Index::build(source, files, entries)?;
        if how.keep_templates {
            index.gen = doc.gen;
        }
        index.templates = Some(own);
        how.apply_templates(index)
    }

    /// Reads the index `name` from `path`, opening files with `open`: a file
    /// in any form [`Index::read`] knows, or else an Icechunk repository
    /// ([`icechunk`]) or a Kerchunk Parquet directory (`path/.zmetadata`,
    /// `path/VAR/refs.K.parq`).
    pub fn load(name: &str, path: &str, how: &LoadOptions, open: &Opener<'_>) -> Result<Index> {
        let file = open(path).and_then(|f| f.read_at(0, 8).map(|head| (f, head)));
        let not_a_file = match file {
            Ok((file, head)) if !head.is_empty() => return Index::read(name, file, how),
            Ok((file, _)) => Error::MalformedIndex {
                index: file.name().to_string(),
                reason: "the file is empty".into(),
            },
            Err(e) => e,
        };
        let dir = path.trim_end_matches('/');
        if readers::icechunk::is_repository(dir, crate::io::vsi::vsi_exists) {
            let index = readers::icechunk::read(
                name,
                dir,
                &how.version,
                open,
                &crate::io::vsi::vsi_exists,
            )?;
            return how.select_time(index);
        }
        let read = |rel: &str| open(&format!("{dir}/{rel}"))?.read_all(MAX_DOCUMENT_BYTES);
        // A record file that is not there holds chunks never written (as
        // fsspec reads it); one that is there but unreadable is an error.
        let read_record = |rel: &str| match read(rel) {
            Ok(bytes) => Ok(Some(bytes.to_vec())),
            Err(_) if !crate::io::vsi::vsi_exists(&format!("{dir}/{rel}")) => Ok(None),
            Err(e) => Err(e),
        };
        if let Ok(list) = read(parts::PARTS_FILE) {
            let list = parts::PartsList::parse(&format!("{dir}/{}", parts::PARTS_FILE), &list)?;
            let files = list
                .parts
                .iter()
                .map(|part| open(&format!("{dir}/{part}")))
                .collect::<Result<Vec<_>>>()?;
            let index = readers::parquet_read::read_parts(name, files, &how.time, how.eager_rows)?;
            return how.select_time(how.apply_templates(index)?);
        }
        let Ok(zmetadata) = read(readers::kerchunk_parquet::ZMETADATA) else {
            return Err(not_a_file);
        };
        // Relative references are resolved from the directory holding the
        // store (the index's base), through the store's own name; a local
        // store reached through a symbolic link is named as its target.
        let real = std::fs::canonicalize(dir).ok();
        let store_dir = real
            .as_deref()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or_else(|| dir.rsplit('/').next().unwrap_or(dir));
        let index = readers::kerchunk_parquet::read(name, &zmetadata, store_dir, read_record)?;
        how.select_time(how.apply_templates(index)?)
    }

    /// Reads an index in any form chunkref knows, chosen by its first
    /// bytes: a chunk-reference table in Parquet (`PAR1`) or FlatGeobuf
    /// (`fgb`), else Kerchunk JSON. Tables of more than `how.eager_rows`
    /// rows keep their rows in the file, read when chunks are.
    pub fn read(source: &str, file: Arc<dyn IndexFile>, how: &LoadOptions) -> Result<Index> {
        let head = file.read_at(0, 8)?;
        let index = if head.starts_with(readers::parquet_read::MAGIC) {
            how.apply_templates(readers::parquet_read::read(
                source,
                file,
                &how.time,
                how.eager_rows,
            )?)?
        } else if head.starts_with(fgb::MAGIC) {
            how.apply_templates(fgb::read(source, file, how.eager_rows)?)?
        } else {
            let bytes = file.read_all(MAX_DOCUMENT_BYTES)?;
            Index::read_kerchunk_json(source, &bytes, how)?
        };
        how.select_time(index)
    }

    /// Groups references by array and builds the columnar tables.
    fn build(
        source: &str,
        files: FileTable,
        entries: Vec<(Cow<'_, str>, RawRef)>,
    ) -> Result<Index> {
        let is_metadata = |name: &str| METADATA_NAMES.contains(&name);
        let mut docs: HashMap<String, Value> = HashMap::new();
        for (key, r) in &entries {
            if !is_metadata(split_key(key).1) {
                continue;
            }
            let RawRef::Inline(bytes) = r else {
                return Err(Error::unsupported(format!(
                    "metadata key '{key}' in {source} refers to a file; metadata must be inline"
                )));
            };
            let v: Value = readers::json_dialect::parse(bytes, |b| serde_json::from_slice(b))
                .map_err(|e| Error::MalformedIndex {
                    index: source.to_string(),
                    reason: format!("metadata key '{key}' is not valid JSON: {e}"),
                })?;
            docs.insert(key.to_string(), v);
        }
        let store = Store::from_documents(docs)?;
        let mut rows = store.empty_rows();
        let (mut stray, mut first_stray) = (0, None);
        let mut last = None;
        for (key, r) in entries {
            let (dir, rest) = split_key(&key);
            if is_metadata(rest) {
                continue;
            }
            match store.locate_near(&key, dir, rest, &mut last) {
                Some((a, pos)) => rows[a].push((pos, r)),
                None if store.of_skipped_array(&key) => {}
                None => {
                    stray += 1;
                    first_stray.get_or_insert(key);
                }
            }
        }
        let mut index = store.into_index(source, files, rows);
        if let Some(first) = first_stray {
            index.warnings.push(format!(
                "{stray} reference(s) in {source} match no array's chunk grid and are ignored (first: '{first}')"
            ));
        }
        Ok(index)
    }

    /// The array at `path`, if any.
    pub fn array(&self, path: &str) -> Option<&Array> {
        self.arrays
            .binary_search_by(|a| a.meta.path.as_str().cmp(path))
            .ok()
            .map(|i| &self.arrays[i])
    }

    /// The URL of every file as it is read: kept templates filled in (a
    /// URL whose templates cannot be filled is an error).
    pub fn file_urls(&self) -> Vec<Result<String>> {
        let vars = self.templates.as_ref().map(vars_of);
        self.files
            .urls()
            .iter()
            .map(|u| match &vars {
                Some(vars) if u.contains("{{") => {
                    template::render_url(u, vars).map_err(|reason| Error::MalformedIndex {
                        index: self.source.clone(),
                        reason,
                    })
                }
                _ => Ok(u.clone()),
            })
            .collect()
    }

    /// Index of the array at `path` in [`Index::arrays`].
    pub fn array_index(&self, path: &str) -> Option<usize> {
        self.arrays
            .binary_search_by(|a| a.meta.path.as_str().cmp(path))
            .ok()
    }
}

/// A Kerchunk template table: name -> value.
pub type Templates = BTreeMap<String, String>;

/// Template variables of a template table.
pub(crate) fn vars_of(templates: &Templates) -> Vars {
    templates
        .iter()
        .map(|(k, v)| (k.clone(), TemplateValue::Str(v.clone())))
        .collect()
}

/// Fills `{{name}}` templates in every URL of `files` from `vars`.
fn render_templates(source: &str, files: &mut FileTable, vars: &Vars) -> Result<()> {
    let mut template_error = None;
    files.map_urls(|u| {
        if !u.contains("{{") {
            return u.to_string();
        }
        template::render_url(u, vars).unwrap_or_else(|e| {
            template_error.get_or_insert(e);
            u.to_string()
        })
    });
    match template_error {
        Some(reason) => Err(Error::MalformedIndex {
            index: source.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

/// The arrays and groups a set of Zarr metadata documents describes, before
/// their chunk references are known. Every index reader goes through it.
#[derive(Debug)]
pub(crate) struct Store {
    docs: BTreeMap<String, Value>,
    metas: Vec<ArrayMeta>,
    grids: Vec<Vec<u64>>,
    groups: BTreeMap<String, Map<String, Value>>,
    /// Arrays whose metadata the driver cannot serve, with the reason.
    skipped: BTreeMap<String, String>,
}

impl Store {
    /// Parses metadata documents (`.zgroup`, `.zattrs`, `.zarray`,
    /// `zarr.json`, a root `.zmetadata`) keyed by store key.
    pub(crate) fn from_documents(mut docs: HashMap<String, Value>) -> Result<Store> {
        expand_consolidated(&mut docs);
        let mut groups = BTreeMap::new();
        let mut metas = Vec::new();
        // An array the driver cannot serve (an unknown codec, a string or
        // compound type) is left out; the others stay usable.
        let mut failed: Vec<(String, Error)> = Vec::new();
        let mut keep = |dir: &str, meta: Result<ArrayMeta>| match meta {
            Ok(m) => metas.push(m),
            Err(e) => failed.push((dir.to_string(), e)),
        };
        for (key, doc) in &docs {
            let (dir, name) = split_key(key);
            match name {
                ".zarray" => {
                    let attrs = docs.get(&join_key(dir, ".zattrs"));
                    keep(dir, ArrayMeta::from_v2(dir, doc, attrs));
                }
                ".zgroup" => {
                    let attrs = docs
                        .get(&join_key(dir, ".zattrs"))
                        .and_then(Value::as_object);
                    groups.insert(dir.to_string(), attrs.cloned().unwrap_or_default());
                }
                "zarr.json" => match doc.get("node_type").and_then(Value::as_str) {
                    Some("array") => keep(dir, ArrayMeta::from_v3(dir, doc)),
                    Some("group") => {
                        let attrs = doc.get("attributes").and_then(Value::as_object);
                        groups.insert(dir.to_string(), attrs.cloned().unwrap_or_default());
                    }
                    other => {
                        return Err(Error::InvalidMetadata {
                            array: dir.to_string(),
                            reason: format!("zarr.json node_type {other:?}"),
                        })
                    }
                },
                _ => {}
            }
        }
        // A store none of whose arrays can be served fails as its first did.
        failed.sort_by(|a, b| a.0.cmp(&b.0));
        if metas.is_empty() && !failed.is_empty() {
            return Err(failed.swap_remove(0).1);
        }
        metas.sort_by(|a, b| a.path.cmp(&b.path));
        let grids = metas.iter().map(ArrayMeta::grid_shape).collect();
        Ok(Store {
            docs: docs.into_iter().collect(),
            metas,
            grids,
            groups,
            skipped: failed
                .into_iter()
                .map(|(path, e)| (path, e.to_string()))
                .collect(),
        })
    }

    /// True when `key` is a chunk key of an array left out (see
    /// [`Index::skipped`]): it is no stray reference.
    pub(crate) fn of_skipped_array(&self, key: &str) -> bool {
        self.skipped.keys().any(|path| {
            path.is_empty()
                || key
                    .strip_prefix(path.as_str())
                    .is_some_and(|k| k.starts_with('/'))
        })
    }

    /// The arrays, sorted by path.
    pub(crate) fn metas(&self) -> &[ArrayMeta] {
        &self.metas
    }

    /// The chunk grid shape of each array.
    pub(crate) fn grids(&self) -> &[Vec<u64>] {
        &self.grids
    }

    /// One empty row list per array.
    pub(crate) fn empty_rows(&self) -> Vec<Vec<(u64, RawRef)>> {
        self.metas.iter().map(|_| Vec::new()).collect()
    }

    /// The array a chunk key belongs to and the chunk's grid position,
    /// trying the longest array path first.
    pub(crate) fn locate(&self, key: &str) -> Option<(usize, u64)> {
        let candidates = key
            .rmatch_indices('/')
            .map(|(i, _)| (&key[..i], &key[i + 1..]));
        for (dir, rest) in candidates.chain(std::iter::once(("", key))) {
            let Ok(a) = self.metas.binary_search_by(|m| m.path.as_str().cmp(dir)) else {
                continue;
            };
            if let Some(pos) = self.metas[a].chunk_position(rest, &self.grids[a]) {
                return Some((a, pos));
            }
        }
        None
    }

    /// [`Store::locate`] of `key` (split by [`split_key`] into `dir` and
    /// `rest`), trying first the array `last` (where the previous key was
    /// found: an array's keys come in a run), and setting it to the array
    /// found.
    pub(crate) fn locate_near(
        &self,
        key: &str,
        dir: &str,
        rest: &str,
        last: &mut Option<usize>,
    ) -> Option<(usize, u64)> {
        // The longest candidate path is the key's directory: when it is
        // `last`'s path, `locate` would try that array first too.
        let found = last
            .filter(|&a| self.metas[a].path == dir)
            .and_then(|a| Some((a, self.metas[a].chunk_position(rest, &self.grids[a])?)))
            .or_else(|| self.locate(key));
        if let Some((a, _)) = found {
            *last = Some(a);
        }
        found
    }

    /// Whether the array at `path` is a text scalar (`|S` type, shape
    /// `[]`): a netCDF variable kept for its attributes (a grid mapping, as
    /// GDAL writes one), whose absence from the rasters needs no warning.
    fn is_text_scalar(&self, path: &str) -> bool {
        self.docs.get(&join_key(path, ".zarray")).is_some_and(|z| {
            z.get("dtype")
                .and_then(Value::as_str)
                .is_some_and(|d| d.starts_with("|S"))
                && z.get("shape")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty)
        })
    }

    /// The index with `rows[a]` as the references of array `a`.
    pub(crate) fn into_index(
        self,
        source: &str,
        files: FileTable,
        rows: Vec<Vec<(u64, RawRef)>>,
    ) -> Index {
        let warnings = self
            .skipped
            .iter()
            .filter(|(path, _)| !self.is_text_scalar(path))
            .map(|(path, reason)| format!("array '{path}' of {source} is left out: {reason}"))
            .collect();
        let arrays = self
            .metas
            .into_iter()
            .zip(rows)
            .map(|(meta, rows)| Array {
                meta,
                refs: Refs::Loaded(ChunkTable::from_rows(rows)),
            })
            .collect();
        Index {
            source: source.to_string(),
            files,
            file_attributes: Vec::new(),
            arrays,
            groups: self.groups,
            metadata: self.docs,
            templates: None,
            gen: Vec::new(),
            warnings,
            skipped: self.skipped,
        }
    }
}

/// Adds the documents of a root `.zmetadata` that are not present already.
fn expand_consolidated(docs: &mut HashMap<String, Value>) {
    let Some(Value::Object(meta)) = docs
        .get(".zmetadata")
        .and_then(|z| z.get("metadata"))
        .cloned()
    else {
        return;
    };
    for (k, v) in meta {
        docs.entry(k).or_insert(v);
    }
}

/// Splits `a/b/.zarray` into (`a/b`, `.zarray`); a root key has dir `""`.
pub(crate) fn split_key(key: &str) -> (&str, &str) {
    // A byte scan: keys are short, and every reference's key is split.
    match key.bytes().rposition(|b| b == b'/') {
        Some(i) => (&key[..i], &key[i + 1..]),
        None => ("", key),
    }
}

/// `dir/name`, or `name` at the root.
pub(crate) fn join_key(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::refs::ChunkRef;

    const ZARRAY: &str = r#"{\"shape\": [4, 6], \"chunks\": [2, 3], \"dtype\": \"<u2\", \"fill_value\": 0, \"compressor\": null, \"filters\": null, \"order\": \"C\", \"zarr_format\": 2}"#;

    #[test]
    fn builds_tables_with_templates_and_gen() {
        let doc = format!(
            r#"{{"version": 1, "templates": {{"base": "/data/"}},
              "gen": [{{"key": "a/1.{{{{i}}}}", "url": "{{{{base}}}}g.bin", "offset": "{{{{i * 10}}}}", "length": "10",
                       "dimensions": {{"i": {{"stop": 2}}}}}}],
              "refs": {{".zgroup": "{{\"zarr_format\": 2}}", "a/.zarray": "{ZARRAY}",
                       "a/0.0": ["{{{{base}}}}f.bin", 0, 12], "a/9.9": ["x", 0, 1]}}}}"#
        );
        let idx = Index::from_kerchunk_json("t.json", doc.as_bytes(), &[]).unwrap();
        let a = idx.array("a").unwrap();
        assert_eq!(a.refs.table().unwrap().len(), 3);
        let ChunkRef::Range {
            file,
            offset,
            length,
        } = a.refs.table().unwrap().get(0).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (idx.files.url(file), offset, length),
            ("/data/f.bin", 0, 12)
        );
        let ChunkRef::Range { file, offset, .. } = a.refs.table().unwrap().get(3).unwrap() else {
            panic!()
        };
        assert_eq!((idx.files.url(file), offset), ("/data/g.bin", 10));
        assert_eq!(idx.warnings.len(), 1, "a/9.9 is outside the grid");

        let over = [("base".to_string(), "/elsewhere/".to_string())];
        let idx = Index::from_kerchunk_json("t.json", doc.as_bytes(), &over).unwrap();
        assert!(idx.files.urls().iter().any(|u| u == "/elsewhere/f.bin"));
    }

    #[test]
    fn keeps_templates_and_gen_when_asked() {
        let doc = format!(
            r#"{{"version": 1, "templates": {{"base": "/data/"}},
              "gen": [{{"key": "a/1.{{{{i}}}}", "url": "{{{{base}}}}g.bin", "dimensions": {{"i": [0, 1]}}}}],
              "refs": {{"a/.zarray": "{ZARRAY}", "a/0.0": ["{{{{base}}}}f.bin", 0, 12]}}}}"#
        );
        let how = LoadOptions {
            keep_templates: true,
            ..LoadOptions::default()
        };
        let idx = Index::read_kerchunk_json("t.json", doc.as_bytes(), &how).unwrap();
        assert_eq!(idx.files.urls(), ["{{base}}f.bin", "{{base}}g.bin"]);
        let urls: Vec<_> = idx.file_urls().into_iter().map(|u| u.unwrap()).collect();
        assert_eq!(urls, ["/data/f.bin", "/data/g.bin"]);
        let written = crate::builders::writers::to_kerchunk::to_kerchunk(&idx).unwrap();
        assert_eq!(written["templates"], serde_json::json!({"base": "/data/"}));
        assert_eq!(written["gen"].as_array().unwrap().len(), 1);
        let refs = written["refs"].as_object().unwrap();
        assert!(
            refs.contains_key("a/0.0") && !refs.contains_key("a/1.0"),
            "{refs:?}"
        );
    }

    #[test]
    fn nested_and_root_arrays() {
        let doc = format!(
            r#"{{".zarray": "{ZARRAY}", "0.0": ["f"], "g/h/.zarray": "{ZARRAY}", "g/h/1.1": ["f"]}}"#
        );
        let idx = Index::from_kerchunk_json("t", doc.as_bytes(), &[]).unwrap();
        assert_eq!(idx.array("").unwrap().refs.table().unwrap().len(), 1);
        assert_eq!(idx.array("g/h").unwrap().refs.table().unwrap().len(), 1);
        assert!(idx.warnings.is_empty(), "{:?}", idx.warnings);
    }
}
