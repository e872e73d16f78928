//! Time stacks: the indexes of several files on one grid ([`Built`], as the
//! builders make them) made into one chunk-reference table whose arrays gain
//! a leading `time` axis (docs/reference-table.md, "Time stacks").
//!
//! Every array `(bands, y, x)` of the steps becomes `(T, bands, y, x)` with
//! chunks `(1, ...)`, `_ARRAY_DIMENSIONS` `["time", ...]` and the attribute
//! `chunkref:datetime` (one ISO 8601 text or null per step); chunk
//! `(b, y, x)` of step `t` becomes the row (time `t`, band `b`, y, x).
//!
//! The rows come out in table order without sorting the table: each step's
//! rows are made in table order on their own ([`Step::prepare`], on any
//! thread), steps are pushed in order, so the rows of the first array (the
//! full-resolution level, most of the table) go to the sink as each step
//! arrives, and only the rows of the other arrays (overviews, masks) wait
//! for the last step ([`Stacker::finish`]).

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Map, Value};

use crate::base::error::{Error, Result};
use crate::builders::writers::built::Built;
use crate::builders::writers::built::Ref;
use crate::conventions::attributes::BANDS_ATTRIBUTE;
use crate::conventions::attributes::COLOR_ATTRIBUTE;
use crate::conventions::attributes::DATETIME_ATTRIBUTE;
use crate::conventions::attributes::SOURCE_ATTRIBUTE;
use crate::index::table::{self, FileEntry, Row, Rows, TableArray, TableDoc, TableReader};
use crate::index::template::{self, TemplateValue, Vars};
use crate::index::{join_key, split_key, Index, Store};

/// One time step: the index of one file and its datetime, if known.
#[derive(Debug)]
pub struct Step {
    /// The file as the user named it (for messages).
    pub name: String,
    /// The file's index.
    pub built: Built,
    /// ISO 8601 datetime of the step.
    pub datetime: Option<String>,
}

/// A step made ready for the stack, apart from the other steps (so steps
/// can be prepared in parallel): its rows in table order, with time 0 and
/// file ids counted from 0 in the step's own file list.
#[derive(Debug)]
pub struct Prepared {
    name: String,
    metadata: BTreeMap<String, Value>,
    /// Path and chunk grid (bands, y, x) of each array, in table order.
    arrays: Vec<(String, [u64; 3])>,
    rows: Rows,
    /// The step's files (templates filled in), in file id order.
    files: Vec<String>,
    /// The root `source` attribute.
    source: Value,
    datetime: Option<String>,
}

impl Prepared {
    /// The step's chunk references.
    pub fn references(&self) -> usize {
        self.rows.part.iter().filter(|&&p| p == 0).count()
    }
}

impl Step {
    /// The step's rows and file list; `stack` names the stack in messages.
    pub fn prepare(self, stack: &str) -> Result<Prepared> {
        let bad = |reason: String| Error::MalformedIndex {
            index: stack.to_string(),
            reason,
        };
        let built = self.built;
        let arrays = arrays_of(&built).map_err(|e| bad(format!("{}: {e}", self.name)))?;
        let urls = urls_in_key_order(&built);
        let rows =
            step_rows(&built, &arrays, &urls).map_err(|e| bad(format!("{}: {e}", self.name)))?;
        let vars: Vars = built
            .templates
            .iter()
            .map(|(k, v)| (k.clone(), TemplateValue::Str(v.clone())))
            .collect();
        let files = urls
            .iter()
            .map(|u| match u.contains("{{") {
                true => template::render_url(u, &vars).map_err(bad),
                false => Ok(u.to_string()),
            })
            .collect::<Result<_>>()?;
        let root = built.metadata.get(".zattrs");
        let source = root
            .and_then(|r| r.get(SOURCE_ATTRIBUTE))
            .cloned()
            .unwrap_or(Value::Null);
        Ok(Prepared {
            name: self.name,
            metadata: built.metadata,
            arrays,
            rows,
            files,
            source,
            datetime: self.datetime,
        })
    }
}

/// The path and chunk grid (bands, y, x) of each array of `built`, in
/// table order (by path).
fn arrays_of(built: &Built) -> std::result::Result<Vec<(String, [u64; 3])>, String> {
    let store = Store::from_documents(built.metadata.clone().into_iter().collect())
        .map_err(|e| e.to_string())?;
    if store.metas().len() > usize::from(u16::MAX) + 1 {
        return Err(format!(
            "{} arrays; a table holds at most 65536",
            store.metas().len()
        ));
    }
    let fits = |g: &u64| *g <= u64::from(u32::MAX);
    store
        .metas()
        .iter()
        .zip(store.grids())
        .map(|(meta, grid)| match grid.as_slice() {
            &[b, y, x] if [b, y, x].iter().all(fits) => Ok((meta.path.clone(), [b, y, x])),
            _ => Err(format!(
                "array '{}' has chunk grid {grid:?}; a time stack needs (bands, y, x) grids \
                 of at most 2^32 chunks per axis",
                meta.path
            )),
        })
        .collect()
}

/// The rows of `built` (time 0, file ids positions in `urls`) in table
/// order: by array of `arrays`, chunk position, part.
fn step_rows(
    built: &Built,
    arrays: &[(String, [u64; 3])],
    urls: &[&str],
) -> std::result::Result<Rows, String> {
    let ids: HashMap<&str, u32> = urls
        .iter()
        .enumerate()
        .map(|(i, u)| (*u, i as u32))
        .collect();
    let id_of = |r: &Ref| match urls {
        [_] => 0,
        _ => ids[&*r.url],
    };
    let mut rows = Rows::default();
    for (a, (path, grid)) in arrays.iter().enumerate() {
        let Some(refs) = built.arrays.get(path) else {
            continue;
        };
        for r in in_grid_order(refs, *grid) {
            let [b, y, x] = r.index.map(|i| i as u32);
            let row = |offset, length, part| Row {
                array: a as u16,
                chunk: [0, b, y, x],
                file: id_of(r),
                offset,
                length: Some(length),
                part,
            };
            match r.merged() {
                Some((offset, length)) => rows.push(row(offset, length, 0)),
                None if r.ranges.len() > usize::from(u16::MAX) + 1 => {
                    return Err(format!("a chunk of '{path}' has more than 65536 ranges"))
                }
                None => {
                    for (part, &(offset, length)) in r.ranges.iter().enumerate() {
                        rows.push(row(offset, length, part as u16));
                    }
                }
            }
        }
    }
    Ok(rows)
}

/// The first step, which every later one must match.
#[derive(Debug)]
struct Reference {
    name: String,
    metadata: BTreeMap<String, Value>,
    /// Path and chunk grid (bands, y, x) of each array, in table order.
    arrays: Vec<(String, [u64; 3])>,
}

/// Stacks prepared steps given one by one into table rows handed to a sink
/// in batches of at least `batch` rows (a batch ends with a whole chunk).
pub struct Stacker<S: FnMut(&Rows) -> Result<()>> {
    source: String,
    batch: usize,
    sink: S,
    reference: Option<Reference>,
    /// The batch being filled.
    rows: Rows,
    /// Rows of the arrays after the first, kept until [`Stacker::finish`].
    later: Vec<Rows>,
    files: Vec<FileEntry>,
    sources: Vec<Value>,
    datetimes: Vec<Option<String>>,
}

impl<S: FnMut(&Rows) -> Result<()>> Stacker<S> {
    /// A stack named `source` (for messages) whose rows go to `sink`.
    pub fn new(source: &str, batch: usize, sink: S) -> Self {
        Stacker {
            source: source.to_string(),
            batch,
            sink,
            reference: None,
            rows: Rows::default(),
            later: Vec::new(),
            files: Vec::new(),
            sources: Vec::new(),
            datetimes: Vec::new(),
        }
    }

    fn bad(&self, reason: String) -> Error {
        Error::MalformedIndex {
            index: self.source.clone(),
            reason,
        }
    }

    /// The metadata document of `step` that differs from the first step's
    /// (`None` when `step` can join the stack, or is the first).
    pub fn off_grid(&self, step: &Prepared) -> Option<String> {
        differing(&self.reference.as_ref()?.metadata, &step.metadata)
    }

    /// Adds the next time step.
    pub fn push(&mut self, step: Prepared) -> Result<()> {
        let t = u32::try_from(self.datetimes.len())
            .map_err(|_| self.bad("more than 2^32 time steps".into()))?;
        let reference = self.reference.get_or_insert_with(|| Reference {
            name: step.name.clone(),
            metadata: step.metadata.clone(),
            arrays: step.arrays.clone(),
        });
        if let Some(key) = differing(&reference.metadata, &step.metadata) {
            let reason = format!(
                "{} is not on the grid of {}: metadata '{key}' differs (a time stack needs files \
                 with the same size, tiling, data type, compression and georeferencing)",
                step.name, reference.name
            );
            return Err(self.bad(reason));
        }
        let arrays = reference.arrays.len();
        self.later
            .resize_with(arrays.saturating_sub(1), Rows::default);
        let first_file = self.files.len() as u32;
        for path in step.files {
            let mut attributes = Map::new();
            if let Some(d) = &step.datetime {
                attributes.insert("datetime".into(), json!(d));
            }
            self.files.push(FileEntry { path, attributes });
        }
        // Rows are grouped by array: the first array's go to the batch
        // (flushed at whole chunks), the others' wait in `later`.
        let rows = &step.rows;
        let (mut at, n) = (0, rows.len());
        while at < n {
            let a = usize::from(rows.array[at]);
            let end = at
                + rows.array[at..]
                    .iter()
                    .take_while(|&&x| usize::from(x) == a)
                    .count();
            if a > 0 {
                append(&mut self.later[a - 1], rows, at..end, t, first_file);
                at = end;
                continue;
            }
            while at < end {
                let want = at + self.batch.saturating_sub(self.rows.len()).max(1);
                let mut cut = want.min(end);
                while cut < end && rows.part[cut] != 0 {
                    cut += 1;
                }
                append(&mut self.rows, rows, at..cut, t, first_file);
                at = cut;
                if self.rows.len() >= self.batch {
                    self.flush()?;
                }
            }
        }
        self.sources.push(step.source);
        self.datetimes.push(step.datetime);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if !self.rows.is_empty() {
            (self.sink)(&self.rows)?;
            self.rows = Rows::default();
        }
        Ok(())
    }

    /// Hands over the rows kept back and returns the table's document.
    pub fn finish(mut self) -> Result<TableDoc> {
        let Some(reference) = self.reference.take() else {
            return Err(self.bad("no time step to stack".into()));
        };
        // A large array ends its row group, so a group's statistics bound
        // the time steps of one array (small arrays share groups).
        for later in std::mem::take(&mut self.later) {
            if self.rows.len() >= self.batch / table::ARRAY_BREAK {
                self.flush()?;
            }
            for i in 0..later.len() {
                let row = later.row(i);
                if row.part == 0 && self.rows.len() >= self.batch {
                    self.flush()?;
                }
                self.rows.push(row);
            }
        }
        self.flush()?;
        let metadata = stacked_metadata(&self.source, &reference, &self.sources, &self.datetimes)?;
        let store = Store::from_documents(metadata.clone().into_iter().collect())?;
        Ok(TableDoc {
            chunkref_table: table::VERSION,
            arrays: store
                .metas()
                .iter()
                .map(|m| TableArray {
                    path: m.path.clone(),
                    time_axis: table::has_time_axis(m),
                    footprints: None,
                })
                .collect(),
            files: self.files,
            metadata,
            inline: BTreeMap::new(),
            templates: BTreeMap::new(),
        })
    }
}

/// Appends rows `range` of a prepared step to `to` as rows of step `t`, its
/// file ids counted from `first_file`.
fn append(to: &mut Rows, from: &Rows, range: std::ops::Range<usize>, t: u32, first_file: u32) {
    let r = range.clone();
    to.array.extend_from_slice(&from.array[r.clone()]);
    to.time.extend(std::iter::repeat_n(t, r.len()));
    to.band.extend_from_slice(&from.band[r.clone()]);
    to.y.extend_from_slice(&from.y[r.clone()]);
    to.x.extend_from_slice(&from.x[r.clone()]);
    to.file
        .extend(from.file[r.clone()].iter().map(|f| f + first_file));
    to.offset.extend_from_slice(&from.offset[r.clone()]);
    to.length.extend_from_slice(&from.length[r.clone()]);
    to.part.extend_from_slice(&from.part[range]);
}

/// The references inside `grid` by chunk position; of several for one
/// chunk the last (as in a Kerchunk JSON object).
fn in_grid_order(refs: &[Ref], grid: [u64; 3]) -> Vec<&Ref> {
    let inside = |r: &&Ref| r.index.iter().zip(grid).all(|(&i, g)| i < g);
    let mut order: Vec<&Ref> = refs.iter().filter(inside).collect();
    // Grid indices compare in row-major (chunk position) order.
    if !order.windows(2).all(|w| w[0].index < w[1].index) {
        order.sort_by_key(|r| r.index);
        // Of equal positions keep the last (the sort is stable).
        order.reverse();
        order.dedup_by_key(|r| r.index);
        order.reverse();
    }
    order
}

/// The distinct URLs of a step's references in the order a Kerchunk JSON
/// reader meets them (by store key), so that file ids are the ones the
/// step's Kerchunk JSON would give.
fn urls_in_key_order(built: &Built) -> Vec<&str> {
    let all = || built.arrays.values().flatten();
    let Some(first) = all().next() else {
        return Vec::new();
    };
    if all().all(|r| r.url == first.url) {
        return vec![&*first.url];
    }
    let mut first_key: HashMap<&str, String> = HashMap::new();
    for (path, refs) in &built.arrays {
        for r in refs {
            let [b, y, x] = r.index;
            let key = format!("{path}/{b}.{y}.{x}");
            let slot = first_key.entry(&*r.url).or_insert_with(|| key.clone());
            if key < *slot {
                *slot = key;
            }
        }
    }
    let mut urls: Vec<(String, &str)> = first_key.into_iter().map(|(u, k)| (k, u)).collect();
    urls.sort();
    urls.into_iter().map(|(_, u)| u).collect()
}

/// The first metadata document of `step` that differs from `reference`
/// (the root `source` attribute left out), or "the set of documents".
fn differing(
    reference: &BTreeMap<String, Value>,
    step: &BTreeMap<String, Value>,
) -> Option<String> {
    let without_source = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove(SOURCE_ATTRIBUTE);
        }
        v
    };
    for ((ka, va), (kb, vb)) in reference.iter().zip(step) {
        let same = ka == kb
            && if ka == ".zattrs" {
                without_source(va) == without_source(vb)
            } else {
                va == vb
            };
        if !same {
            return Some(ka.clone());
        }
    }
    (reference.len() != step.len()).then(|| "the set of documents".into())
}

/// The metadata documents of the stack: the reference step's, every array
/// given its time axis, the root `source` listing every step's source.
fn stacked_metadata(
    source: &str,
    reference: &Reference,
    sources: &[Value],
    datetimes: &[Option<String>],
) -> Result<BTreeMap<String, Value>> {
    let bad = |reason: String| Error::MalformedIndex {
        index: source.to_string(),
        reason,
    };
    let first = &reference.metadata;
    let times = datetimes.len();
    let datetimes: Vec<Value> = datetimes.iter().map(|d| json!(d)).collect();
    let mut docs = BTreeMap::new();
    for (key, doc) in first {
        let (dir, name) = split_key(key);
        let doc = match name {
            ".zarray" => {
                let mut d = doc.clone();
                prepend(&mut d, "shape", json!(times)).map_err(|e| bad(format!("{key}: {e}")))?;
                prepend(&mut d, "chunks", json!(1)).map_err(|e| bad(format!("{key}: {e}")))?;
                d
            }
            "zarr.json" if doc.get("node_type").and_then(Value::as_str) == Some("array") => {
                return Err(Error::unsupported(format!(
                    "time stacks of Zarr v3 arrays ('{key}' in {})",
                    reference.name
                )))
            }
            ".zattrs" if first.contains_key(&join_key(dir, ".zarray")) => {
                let mut d = doc.as_object().cloned().unwrap_or_default();
                let ndim = first
                    .get(&join_key(dir, ".zarray"))
                    .and_then(|z| z.get("shape"))
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                let mut dims = d
                    .get("_ARRAY_DIMENSIONS")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_else(|| (0..ndim).map(|i| json!(format!("dim_{i}"))).collect());
                dims.insert(0, json!(table::TIME_DIMENSION));
                d.insert("_ARRAY_DIMENSIONS".into(), Value::Array(dims));
                // Per-band lists cover every band of every step.
                for name in [COLOR_ATTRIBUTE, BANDS_ATTRIBUTE] {
                    if let Some(Value::Array(list)) = d.get_mut(name) {
                        *list = list
                            .iter()
                            .cycle()
                            .take(list.len() * times)
                            .cloned()
                            .collect();
                    }
                }
                d.insert(DATETIME_ATTRIBUTE.into(), Value::Array(datetimes.clone()));
                Value::Object(d)
            }
            ".zattrs" if key == ".zattrs" => {
                let mut d = doc.as_object().cloned().unwrap_or_default();
                d.insert(SOURCE_ATTRIBUTE.into(), Value::Array(sources.to_vec()));
                Value::Object(d)
            }
            _ => doc.clone(),
        };
        docs.insert(key.clone(), doc);
    }
    // Arrays without .zattrs still need the time dimension name.
    for (path, _) in &reference.arrays {
        docs.entry(join_key(path, ".zattrs")).or_insert_with(|| {
            let ndim = first
                .get(&join_key(path, ".zarray"))
                .and_then(|z| z.get("shape"))
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let mut dims = vec![json!(table::TIME_DIMENSION)];
            dims.extend((0..ndim).map(|i| json!(format!("dim_{i}"))));
            json!({"_ARRAY_DIMENSIONS": dims, DATETIME_ATTRIBUTE: datetimes.clone()})
        });
    }
    Ok(docs)
}

/// Puts `value` first in the list `doc[field]`.
fn prepend(doc: &mut Value, field: &str, value: Value) -> std::result::Result<(), String> {
    doc.get_mut(field)
        .and_then(Value::as_array_mut)
        .ok_or_else(|| format!("no '{field}' list"))?
        .insert(0, value);
    Ok(())
}

/// Stacks `steps` (in order) into one in-memory index named `source`
/// (for forms written from an [`Index`]: Kerchunk JSON, FlatGeobuf).
pub fn stack(source: &str, steps: impl IntoIterator<Item = Prepared>) -> Result<Index> {
    let mut rows = Rows::default();
    let mut stacker = Stacker::new(source, table::BATCH_ROWS, |batch: &Rows| {
        rows.extend(batch);
        Ok(())
    });
    for step in steps {
        stacker.push(step)?;
    }
    let doc = stacker.finish()?;
    index_of(source, &doc, &rows)
}

/// The index of a stack from its table: document and rows.
pub fn index_of(source: &str, doc: &TableDoc, rows: &Rows) -> Result<Index> {
    let mut reader = TableReader::new(source, &table::doc_text(source, doc)?)?;
    reader.push(rows)?;
    Ok(reader.finish())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::index::refs::ChunkRef;

    /// A one-array step (grid 1 x 2 x 2 of 2 x 3 chunks) whose two chunks
    /// are in `file`.
    pub(crate) fn step(file: &str, datetime: &str) -> Step {
        let zarray = json!({"shape": [1, 4, 6], "chunks": [1, 2, 3], "dtype": "|u1",
            "fill_value": 0, "compressor": null, "filters": null, "order": "C", "zarr_format": 2});
        let mut built = Built::default();
        for (key, doc) in [
            (".zgroup", json!({"zarr_format": 2})),
            (".zattrs", json!({"source": file})),
            ("a/.zarray", zarray),
            (
                "a/.zattrs",
                json!({"_ARRAY_DIMENSIONS": ["bands", "y", "x"]}),
            ),
        ] {
            built.metadata.insert(key.into(), doc);
        }
        let refs = vec![
            Ref::single([0, 0, 0], file, 0, 10),
            Ref::single([0, 1, 1], file, 10, 10),
        ];
        built.arrays.insert("a".into(), refs);
        Step {
            name: file.into(),
            built,
            datetime: Some(datetime.into()),
        }
    }

    /// A step with an array `b` besides `a`, whose references are out of
    /// order, repeated, multi-range, outside the grid and in two files.
    fn rich_step(t: usize) -> Step {
        let file = format!("/d/{t}.tif");
        let mut s = step(&file, "2021-01-01");
        let zarray = s.built.metadata["a/.zarray"].clone();
        s.built.metadata.insert("b/.zarray".into(), zarray);
        let other = format!("/d/{t}.side");
        let multi = Ref {
            index: [0, 0, 1],
            url: file.as_str().into(),
            ranges: vec![(50, 5), (40, 5), (45, 1)],
        };
        let refs = vec![
            Ref::single([0, 1, 0], other.as_str(), 7, 3),
            multi,
            Ref::single([0, 0, 0], file.as_str(), 1, 1),
            Ref::single([0, 0, 0], file.as_str(), 2, 2),
            Ref::single([0, 9, 0], file.as_str(), 3, 3),
        ];
        s.built.arrays.insert("b".into(), refs);
        s
    }

    #[test]
    fn rows_come_in_table_order_in_whole_chunk_batches() {
        let mut batches = Vec::new();
        let mut stacker = Stacker::new("s.parquet", 3, |rows: &Rows| {
            batches.push(rows.clone());
            Ok(())
        });
        for t in 0..3 {
            stacker
                .push(rich_step(t).prepare("s.parquet").unwrap())
                .unwrap();
        }
        let doc = stacker.finish().unwrap();
        for b in &batches[..batches.len() - 1] {
            assert!(b.len() >= 3 && b.part[0] == 0, "{b:?}");
        }
        let mut streamed = Rows::default();
        batches.iter().for_each(|b| streamed.extend(b));
        // The same rows as the in-memory index gives, which orders them by
        // chunk position.
        let steps = (0..3).map(|t| rich_step(t).prepare("s.parquet").unwrap());
        let index = stack("s.parquet", steps).unwrap();
        let mut sorted = Rows::default();
        table::rows_of(&index, usize::MAX, |r| {
            sorted.extend(r);
            Ok(())
        })
        .unwrap();
        assert_eq!(streamed, sorted);
        assert_eq!(streamed.len(), 3 * (2 + 3 + 1 + 1));
        let b = index.array("b").unwrap();
        assert_eq!(
            b.refs.table().unwrap().get(0),
            Some(ChunkRef::Range {
                file: 0,
                offset: 2,
                length: 2
            }),
            "the last of a repeated chunk"
        );
        // File ids follow the Kerchunk key order: `a/0.0.0` in .tif first.
        let paths: Vec<&str> = doc.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(&paths[..2], ["/d/0.tif", "/d/0.side"]);
        assert_eq!(doc.arrays.len(), 2);
        assert!(doc.arrays.iter().all(|a| a.time_axis));
        assert_eq!(doc.metadata["b/.zarray"]["shape"], json!([3, 1, 4, 6]));
    }

    #[test]
    fn refuses_steps_off_the_grid() {
        let mut other = step("/d/x.tif", "2021-01-01");
        other.built.metadata.get_mut("a/.zarray").unwrap()["shape"] = json!([1, 4, 7]);
        let steps = [step("/d/0.tif", "2021-01-01"), other].map(|s| s.prepare("s").unwrap());
        let e = stack("s", steps).unwrap_err().to_string();
        assert!(
            e.contains("/d/x.tif is not on the grid of /d/0.tif: metadata 'a/.zarray'"),
            "{e}"
        );
        let e = stack("s", Vec::new()).unwrap_err().to_string();
        assert!(e.contains("no time step"), "{e}");
    }

    #[test]
    fn templates_are_filled_in_the_file_table() {
        let mut s = step("{{base}}a.tif", "2021-01-01");
        s.built.templates.insert("base".into(), String::new());
        let index = stack("s", [s.prepare("s").unwrap()]).unwrap();
        assert_eq!(index.files.urls(), ["a.tif"]);
        assert_eq!(
            index.metadata[".zattrs"]["source"],
            json!(["{{base}}a.tif"])
        );
    }
}
