//! Chunk-reference tables (docs/reference-table.md): an index as rows of
//! integers (array, time, band group, y/x chunk, file, offset, length, part)
//! plus one JSON document with the store's Zarr metadata and the file table.
//!
//! This module is the part shared by every table form (Parquet, FlatGeobuf):
//! [`rows_of`] turns an [`Index`] into row batches and the document, and
//! [`TableReader`] turns row batches back into the same [`Index`], checking
//! every row.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Index, Store, Templates};
use crate::base::error::{Error, Result};
use crate::index::refs::{position, unravel, ChunkRef, FileTable, PageSource, Paged, RawRef, Refs};
use crate::index::zarr::ArrayMeta;

/// Key of the metadata document in a table file's key-value metadata.
pub const DOC_KEY: &str = "chunkref";
/// Schema version written in the document.
pub const VERSION: u64 = 1;
/// Rows per batch (one Parquet row group): small enough that a reader
/// decoding only the row groups a tile's statistics point at reads little.
pub const BATCH_ROWS: usize = 1 << 17;
/// A batch holding at least `1 / ARRAY_BREAK` of the batch size ends with
/// its array.
pub const ARRAY_BREAK: usize = 16;
/// Dimension name that marks an array's first axis as time.
pub const TIME_DIMENSION: &str = "time";
/// Column names, in table order.
pub const COLUMNS: [&str; 9] = [
    "array", "time", "band", "y_chunk", "x_chunk", "file", "offset", "length", "part",
];

/// The metadata document of a table.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableDoc {
    /// Schema version.
    pub chunkref_table: u64,
    /// Arrays the `array` column refers to.
    pub arrays: Vec<TableArray>,
    /// The file table the `file` column refers to.
    pub files: Vec<FileEntry>,
    /// Zarr metadata documents by store key.
    pub metadata: BTreeMap<String, Value>,
    /// Inline chunks by store key (`base64:` text).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inline: BTreeMap<String, String>,
    /// Kerchunk templates filled into the `{{name}}` placeholders of the
    /// file paths when the table is read (`TEMPLATE_<name>` overrides them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub templates: Templates,
}

/// One entry of [`TableDoc::arrays`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableArray {
    /// Path of the array in the store.
    pub path: String,
    /// True when the array's first axis is time (the `time` column).
    #[serde(default)]
    pub time_axis: bool,
    /// FlatGeobuf: `"coordinates"` when the chunk footprints were placed by
    /// the values of coordinate arrays (a reader cannot recompute them from
    /// the metadata, so it reads such a table whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprints: Option<String>,
}

/// [`TableArray::footprints`] of footprints placed by coordinate values.
pub const COORDINATE_FOOTPRINTS: &str = "coordinates";

/// One entry of [`TableDoc::files`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path or URL.
    pub path: String,
    /// Per-file attributes such as `datetime`.
    #[serde(flatten)]
    pub attributes: Map<String, Value>,
}

/// One row of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    /// `array` column.
    pub array: u16,
    /// `time`, `band`, `y_chunk`, `x_chunk` columns.
    pub chunk: [u32; 4],
    /// `file` column.
    pub file: u32,
    /// `offset` column.
    pub offset: u64,
    /// `length` column (`None` = whole file).
    pub length: Option<u64>,
    /// `part` column.
    pub part: u16,
}

/// A batch of rows, one vector per column.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rows {
    /// `array` column.
    pub array: Vec<u16>,
    /// `time` column.
    pub time: Vec<u32>,
    /// `band` column.
    pub band: Vec<u32>,
    /// `y_chunk` column.
    pub y: Vec<u32>,
    /// `x_chunk` column.
    pub x: Vec<u32>,
    /// `file` column.
    pub file: Vec<u32>,
    /// `offset` column.
    pub offset: Vec<u64>,
    /// `length` column (`None` = whole file).
    pub length: Vec<Option<u64>>,
    /// `part` column.
    pub part: Vec<u16>,
}

impl Rows {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.array.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.array.is_empty()
    }

    fn clear(&mut self) {
        *self = Rows::default();
    }

    /// The first `n` rows.
    pub fn head(&self, n: usize) -> Rows {
        Rows {
            array: self.array[..n].to_vec(),
            time: self.time[..n].to_vec(),
            band: self.band[..n].to_vec(),
            y: self.y[..n].to_vec(),
            x: self.x[..n].to_vec(),
            file: self.file[..n].to_vec(),
            offset: self.offset[..n].to_vec(),
            length: self.length[..n].to_vec(),
            part: self.part[..n].to_vec(),
        }
    }

    /// Appends one row.
    pub fn push(&mut self, row: Row) {
        let [t, b, y, x] = row.chunk;
        self.array.push(row.array);
        self.time.push(t);
        self.band.push(b);
        self.y.push(y);
        self.x.push(x);
        self.file.push(row.file);
        self.offset.push(row.offset);
        self.length.push(row.length);
        self.part.push(row.part);
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> Row {
        Row {
            array: self.array[i],
            chunk: [self.time[i], self.band[i], self.y[i], self.x[i]],
            file: self.file[i],
            offset: self.offset[i],
            length: self.length[i],
            part: self.part[i],
        }
    }

    /// Appends the rows of `other`.
    pub fn extend(&mut self, other: &Rows) {
        self.array.extend_from_slice(&other.array);
        self.time.extend_from_slice(&other.time);
        self.band.extend_from_slice(&other.band);
        self.y.extend_from_slice(&other.y);
        self.x.extend_from_slice(&other.x);
        self.file.extend_from_slice(&other.file);
        self.offset.extend_from_slice(&other.offset);
        self.length.extend_from_slice(&other.length);
        self.part.extend_from_slice(&other.part);
    }

    /// The rows in table order: by array, time, band, y, x, part.
    pub fn sorted(&self) -> Rows {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by_key(|&i| {
            (
                self.array[i],
                self.time[i],
                self.band[i],
                self.y[i],
                self.x[i],
                self.part[i],
            )
        });
        let pick = |i: usize| Rows {
            array: vec![self.array[i]],
            time: vec![self.time[i]],
            band: vec![self.band[i]],
            y: vec![self.y[i]],
            x: vec![self.x[i]],
            file: vec![self.file[i]],
            offset: vec![self.offset[i]],
            length: vec![self.length[i]],
            part: vec![self.part[i]],
        };
        let mut out = Rows::default();
        for i in order {
            out.extend(&pick(i));
        }
        out
    }
}

/// How a chunk's grid index maps onto the (time, band, y, x) columns.
#[derive(Debug, Clone)]
struct Split {
    /// Grid sizes along time, band group, y, x (1 where the axis is absent).
    sizes: [u64; 4],
}

impl Split {
    fn new(grid: &[u64], time_axis: bool) -> std::result::Result<Split, String> {
        let n = grid.len();
        if time_axis && n < 3 {
            return Err(format!(
                "a time axis needs at least 3 axes (time, y, x), the array has {n}"
            ));
        }
        let lead_start = usize::from(time_axis);
        let lead_end = n.saturating_sub(2).max(lead_start);
        let band: u64 = grid[lead_start..lead_end].iter().product();
        let sizes = [
            if time_axis { grid[0] } else { 1 },
            band,
            if n >= 2 { grid[n - 2] } else { 1 },
            if n >= 1 { grid[n - 1] } else { 1 },
        ];
        if sizes.iter().any(|&s| s > u64::from(u32::MAX)) {
            return Err(format!(
                "chunk grid {grid:?} is too large for 32-bit chunk columns"
            ));
        }
        Ok(Split { sizes })
    }

    /// (time, band, y, x) of a chunk rank.
    fn columns(&self, pos: u64) -> [u32; 4] {
        let c = unravel(pos, &self.sizes);
        [c[0] as u32, c[1] as u32, c[2] as u32, c[3] as u32]
    }

    /// The chunk rank of (time, band, y, x), `None` outside the grid.
    fn position(&self, cols: [u32; 4]) -> Option<u64> {
        position(&cols.map(u64::from), &self.sizes)
    }
}

/// True when the array's first axis is named time (and it has y and x).
pub(crate) fn has_time_axis(meta: &ArrayMeta) -> bool {
    meta.shape.len() >= 3
        && meta
            .dimension_names
            .as_ref()
            .and_then(|d| d.first())
            .is_some_and(|d| d == TIME_DIMENSION)
}

/// True when the array's first axis is time with one step per chunk.
pub fn is_time_stack(meta: &ArrayMeta) -> bool {
    meta.chunks.first() == Some(&1) && has_time_axis(meta)
}

/// `doc` as the JSON text stored in a table's key-value metadata (`source`
/// names the table in messages).
pub fn doc_text(source: &str, doc: &TableDoc) -> Result<String> {
    serde_json::to_string(doc).map_err(|e| Error::MalformedIndex {
        index: source.to_string(),
        reason: e.to_string(),
    })
}

/// The table of `index`: its document, and its rows handed to `sink` in
/// batches of at most `batch` rows (sorted by array, then chunk position).
pub fn rows_of(
    index: &Index,
    batch: usize,
    mut sink: impl FnMut(&Rows) -> Result<()>,
) -> Result<TableDoc> {
    let bad = |reason: String| Error::MalformedIndex {
        index: index.source.clone(),
        reason,
    };
    if index.arrays.len() > usize::from(u16::MAX) + 1 {
        return Err(bad(format!(
            "{} arrays; a table holds at most 65536",
            index.arrays.len()
        )));
    }
    let mut doc = TableDoc {
        chunkref_table: VERSION,
        arrays: Vec::new(),
        files: index
            .files
            .urls()
            .iter()
            .enumerate()
            .map(|(i, path)| FileEntry {
                path: path.clone(),
                attributes: index.file_attributes.get(i).cloned().unwrap_or_default(),
            })
            .collect(),
        metadata: index.metadata.clone(),
        inline: BTreeMap::new(),
        templates: index.templates.clone().unwrap_or_default(),
    };
    let mut rows = Rows::default();
    for (a, array) in index.arrays.iter().enumerate() {
        let meta = &array.meta;
        let time_axis = has_time_axis(meta);
        doc.arrays.push(TableArray {
            path: meta.path.clone(),
            time_axis,
            footprints: None,
        });
        let grid = meta.grid_shape();
        let split =
            Split::new(&grid, time_axis).map_err(|e| bad(format!("array '{}': {e}", meta.path)))?;
        for (pos, r) in array.refs.table()?.iter() {
            let chunk = split.columns(pos);
            let mut push = |file: u32, offset: u64, length: Option<u64>, part: u16| {
                rows.push(Row {
                    array: a as u16,
                    chunk,
                    file,
                    offset,
                    length,
                    part,
                })
            };
            match r {
                ChunkRef::Inline(bytes) => {
                    let key = chunk_key(meta, &unravel(pos, &grid));
                    let text = base64::engine::general_purpose::STANDARD.encode(bytes);
                    doc.inline.insert(key, format!("base64:{text}"));
                }
                ChunkRef::Whole { file } => push(file, 0, None, 0),
                ChunkRef::Range {
                    file,
                    offset,
                    length,
                } => push(file, offset, Some(length), 0),
                ChunkRef::Multi { file, ranges } => {
                    if ranges.len() > usize::from(u16::MAX) + 1 {
                        return Err(bad(format!(
                            "a chunk of '{}' has more than 65536 ranges",
                            meta.path
                        )));
                    }
                    for (part, &(o, l)) in ranges.iter().enumerate() {
                        push(file, o, Some(l), part as u16);
                    }
                }
            }
            if rows.len() >= batch {
                sink(&rows)?;
                rows.clear();
            }
        }
        // A large array ends its batch, so a row group's statistics bound
        // the chunks of one array (small arrays share groups).
        if rows.len() >= batch / ARRAY_BREAK {
            sink(&rows)?;
            rows.clear();
        }
    }
    if !rows.is_empty() {
        sink(&rows)?;
    }
    Ok(doc)
}

/// The store key of the chunk at grid index `idx` of `meta`.
pub fn chunk_key(meta: &ArrayMeta, idx: &[u64]) -> String {
    let suffix = meta.chunk_key(idx);
    if meta.path.is_empty() {
        suffix
    } else {
        format!("{}/{suffix}", meta.path)
    }
}

/// What every row of a table is checked against: its arrays and their
/// chunk grids, and the size of its file table.
#[derive(Debug)]
pub struct RowChecker {
    source: String,
    /// For each table array: (store array, its path, split).
    arrays: Vec<(usize, String, Split)>,
    files: usize,
    store_arrays: usize,
}

impl RowChecker {
    /// The table array of store array `a`, and how its positions split into
    /// columns; `None` when the table lists no such array.
    pub fn table_array(&self, a: usize) -> Option<(u16, [u64; 4])> {
        let t = self.arrays.iter().position(|(s, _, _)| *s == a)?;
        Some((t as u16, self.arrays[t].2.sizes))
    }

    /// Number of arrays in the store (table arrays are some of them).
    pub fn arrays(&self) -> usize {
        self.store_arrays
    }

    /// The columns (time, band, y, x) of chunk `pos` of table array `t`.
    pub fn columns(&self, t: u16, pos: u64) -> [u32; 4] {
        self.arrays[usize::from(t)].2.columns(pos)
    }
}

/// Turns rows into per-array references, row by row, checking each.
#[derive(Debug)]
pub struct RowSink {
    rows: Vec<Vec<(u64, RawRef)>>,
    /// Rows read so far (for messages).
    seen: u64,
    /// Table array, position and part of the last row.
    last: Option<(usize, u64, u16)>,
    /// True from a [`RowSink::skip`] to the next first part of a chunk:
    /// later parts of a chunk whose first part was skipped are dropped.
    resync: bool,
}

impl RowSink {
    /// An empty sink for the `arrays` store arrays whose first row is row
    /// number `first_row` of the table.
    pub fn new(arrays: usize, first_row: u64) -> RowSink {
        RowSink {
            rows: vec![Vec::new(); arrays],
            seen: first_row,
            last: None,
            resync: false,
        }
    }

    /// Passes over `n` rows left unread (for row numbers in messages).
    pub fn skip(&mut self, n: u64) {
        self.seen += n;
        self.resync = true;
    }

    /// Adds a batch of rows (batches in table order).
    pub fn push(&mut self, check: &RowChecker, batch: &Rows) -> Result<()> {
        for i in 0..batch.len() {
            self.resync &= batch.part[i] > 0;
            if !self.resync {
                self.push_row(check, batch, i)?;
            }
            self.seen += 1;
        }
        Ok(())
    }

    /// The references gathered, by store array.
    pub fn into_rows(self) -> Vec<Vec<(u64, RawRef)>> {
        self.rows
    }

    fn push_row(&mut self, check: &RowChecker, b: &Rows, i: usize) -> Result<()> {
        let row = self.seen;
        let bad = |reason: String| Error::MalformedIndex {
            index: check.source.clone(),
            reason: format!("row {row}: {reason}"),
        };
        let t = usize::from(b.array[i]);
        let (a, path, split) = check.arrays.get(t).ok_or_else(|| {
            bad(format!(
                "array {t} does not exist (the table lists {} arrays)",
                check.arrays.len()
            ))
        })?;
        let cols = [b.time[i], b.band[i], b.y[i], b.x[i]];
        let pos = split.position(cols).ok_or_else(|| {
            bad(format!(
                "chunk (time {}, band {}, y {}, x {}) is outside the chunk grid of '{path}' \
                 (time, band group, y, x sizes {:?})",
                cols[0], cols[1], cols[2], cols[3], split.sizes
            ))
        })?;
        let file = b.file[i];
        if file as usize >= check.files {
            return Err(bad(format!(
                "file {file} does not exist (the file table has {} entries)",
                check.files
            )));
        }
        let (offset, length, part) = (b.offset[i], b.length[i], b.part[i]);
        let list = &mut self.rows[*a];
        if part == 0 {
            list.push((
                pos,
                match length {
                    None if offset == 0 => RawRef::Whole(file),
                    None => {
                        return Err(bad("null length (whole file) with a non-zero offset".into()))
                    }
                    Some(l) => RawRef::Range(file, offset, l),
                },
            ));
        } else {
            let follows = self.last == Some((t, pos, part - 1));
            let Some(l) = length.filter(|_| follows) else {
                return Err(bad(format!(
                    "part {part} does not follow part {} of the same chunk, or has a null length",
                    part - 1
                )));
            };
            let prev = &mut list.last_mut().expect("part 0 was pushed").1;
            *prev = match std::mem::replace(prev, RawRef::Whole(0)) {
                RawRef::Range(f, o0, l0) if f == file => RawRef::Multi(f, vec![(o0, l0), (offset, l)]),
                RawRef::Multi(f, mut ranges) if f == file => {
                    ranges.push((offset, l));
                    RawRef::Multi(f, ranges)
                }
                _ => {
                    return Err(bad(format!(
                        "part {part} names another file than the chunk's first part, or follows a whole-file reference"
                    )))
                }
            };
        }
        self.last = Some((t, pos, part));
        Ok(())
    }
}

/// Builds an [`Index`] from a table's document and its row batches, or
/// (with [`TableReader::finish_paged`]) from its document alone, its rows
/// read on demand.
#[derive(Debug)]
pub struct TableReader {
    store: Store,
    files: FileTable,
    file_attributes: Vec<Map<String, Value>>,
    check: Arc<RowChecker>,
    sink: RowSink,
    coordinate_footprints: bool,
    templates: Templates,
}

impl TableReader {
    /// Starts reading a table of `source` whose metadata document is `doc`.
    pub fn new(source: &str, doc: &str) -> Result<TableReader> {
        let bad = |reason: String| Error::MalformedIndex {
            index: source.to_string(),
            reason,
        };
        let doc: TableDoc = serde_json::from_str(doc)
            .map_err(|e| bad(format!("the '{DOC_KEY}' metadata document: {e}")))?;
        if doc.chunkref_table != VERSION {
            return Err(Error::unsupported(format!(
                "reference table version {} in {source} (version {VERSION} is supported)",
                doc.chunkref_table
            )));
        }
        let store = Store::from_documents(doc.metadata.into_iter().collect::<HashMap<_, _>>())?;
        let mut arrays = Vec::with_capacity(doc.arrays.len());
        for t in &doc.arrays {
            let a = store
                .metas()
                .binary_search_by(|m| m.path.as_str().cmp(&t.path))
                .map_err(|_| {
                    bad(format!(
                        "array '{}' of the 'arrays' list has no .zarray or zarr.json in 'metadata'",
                        t.path
                    ))
                })?;
            let split = Split::new(&store.grids()[a], t.time_axis)
                .map_err(|e| bad(format!("array '{}': {e}", t.path)))?;
            arrays.push((a, t.path.clone(), split));
        }
        let coordinate_footprints = doc
            .arrays
            .iter()
            .any(|a| a.footprints.as_deref() == Some(COORDINATE_FOOTPRINTS));
        let mut files = FileTable::default();
        let mut file_attributes = Vec::with_capacity(doc.files.len());
        for f in doc.files {
            files.push(&f.path);
            file_attributes.push(f.attributes);
        }
        let mut sink = RowSink::new(store.metas().len(), 0);
        for (key, text) in doc.inline {
            let (a, pos) = store.locate(&key).ok_or_else(|| {
                bad(format!(
                    "inline chunk '{key}' matches no array's chunk grid"
                ))
            })?;
            let payload = text
                .strip_prefix("base64:")
                .ok_or_else(|| bad(format!("inline chunk '{key}' is not 'base64:' text")))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(payload)
                .map_err(|e| bad(format!("inline chunk '{key}': {e}")))?;
            sink.rows[a].push((pos, RawRef::Inline(Bytes::from(bytes))));
        }
        let check = Arc::new(RowChecker {
            source: source.to_string(),
            arrays,
            files: files.urls().len(),
            store_arrays: store.metas().len(),
        });
        Ok(TableReader {
            store,
            files,
            file_attributes,
            check,
            sink,
            coordinate_footprints,
            templates: doc.templates,
        })
    }

    /// True when some array's FlatGeobuf footprints were placed by
    /// coordinate values.
    pub fn coordinate_footprints(&self) -> bool {
        self.coordinate_footprints
    }

    /// The arrays of the store, by store array index.
    pub fn metas(&self) -> &[ArrayMeta] {
        self.store.metas()
    }

    /// The checks every row goes through (shared with on-demand readers).
    pub fn checker(&self) -> Arc<RowChecker> {
        Arc::clone(&self.check)
    }

    /// True when table array `t` exists and has a time axis.
    pub fn time_axis(&self, t: usize) -> bool {
        self.check
            .arrays
            .get(t)
            .is_some_and(|(a, _, _)| is_time_stack(&self.store.metas()[*a]))
    }

    /// Passes over `n` rows left unread (for row numbers in messages).
    pub fn skip(&mut self, n: u64) {
        self.sink.skip(n);
    }

    /// Adds a batch of rows (batches in table order).
    pub fn push(&mut self, batch: &Rows) -> Result<()> {
        self.sink.push(&self.check, batch)
    }

    /// The index.
    pub fn finish(self) -> Index {
        let rows = self.sink.into_rows();
        let mut index = self.store.into_index(&self.check.source, self.files, rows);
        index.file_attributes = self.file_attributes;
        index.templates = (!self.templates.is_empty()).then_some(self.templates);
        index
    }

    /// The index, its rows (inline chunks aside) read on demand from the
    /// pages `pages` makes for it.
    pub fn finish_paged(self, pages: impl FnOnce(&Index) -> Arc<dyn PageSource>) -> Index {
        let mut index = self.finish();
        let pages = pages(&index);
        for (a, array) in index.arrays.iter_mut().enumerate() {
            if let Refs::Loaded(inline) = std::mem::take(&mut array.refs) {
                array.refs = Refs::Paged(Paged::new(Arc::clone(&pages), a, inline));
            }
        }
        index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_arrays_end_their_batch() {
        let index = crate::builders::writers::parquet::tests::index();
        let mut batches = Vec::new();
        rows_of(&index, ARRAY_BREAK, |r| {
            batches.push(r.array.clone());
            Ok(())
        })
        .unwrap();
        assert_eq!(
            batches,
            [vec![0; 5], vec![1]],
            "array 0's 3 chunks (5 rows), then array 1"
        );
        let mut batches = 0;
        rows_of(&index, 1 << 20, |_| {
            batches += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(batches, 1, "small arrays share a batch");
    }

    #[test]
    fn splits_leading_axes_into_time_and_band_group() {
        let s = Split::new(&[5, 2, 3, 4, 6], true).unwrap();
        assert_eq!(s.sizes, [5, 6, 4, 6]);
        let pos = position(&[3, 1, 2, 1, 5], &[5, 2, 3, 4, 6]).unwrap();
        assert_eq!(s.columns(pos), [3, 5, 1, 5]);
        assert_eq!(s.position([3, 5, 1, 5]), Some(pos));
        assert_eq!(s.position([5, 0, 0, 0]), None);
        let flat = Split::new(&[7], false).unwrap();
        assert_eq!(flat.sizes, [1, 1, 1, 7]);
        assert!(Split::new(&[2, 3], true).is_err());
    }
}
