//! The FlatGeobuf form of a chunk-reference table (docs/reference-table.md):
//! one feature per row with the table's nine columns as properties (`length`
//! left out when null) and the chunk's footprint polygon, a packed R-tree,
//! and the metadata document in the header's `metadata`. OGR reads it as an
//! ordinary vector layer (`ogrinfo collection.fgb`).
//!
//! Footprints come from the GeoZarr `spatial:transform` of the array or of
//! its groups (pixel coordinates when there is none), the CRS from
//! `proj:code` `EPSG:n`.

use std::collections::HashSet;
use std::io::{Seek, SeekFrom};
use std::sync::Arc;

use bytes::Bytes;
use flatgeobuf::geozero::{ColumnValue, PropertyProcessor};
use flatgeobuf::packed_r_tree::PackedRTree;
use flatgeobuf::{FallibleStreamingIterator, FeatureIter, FeatureProperties, FgbReader, Seekable};

use super::table::{RowChecker, RowSink, Rows, TableReader, COLUMNS};
use super::Index;
use crate::base::error::{contain_panics, Error, Result};
use crate::index::footprint::{geometries, Geometry};
use crate::index::refs::{ChunkTable, PageSource, RawRef};
use crate::io::index_file::{Cursor, IndexFile};

/// First bytes of a FlatGeobuf file (magic and major version 3).
pub const MAGIC: &[u8] = b"fgb\x03";

pub(crate) fn fgb_error(source: &str) -> impl Fn(flatgeobuf::Error) -> Error + '_ {
    move |e| malformed(source, format!("FlatGeobuf: {e}"))
}

/// One feature's values by column ([`COLUMNS`] order), `None` when absent.
#[derive(Default)]
struct Row([Option<u64>; 9], Option<String>);

impl PropertyProcessor for Row {
    fn property(
        &mut self,
        _idx: usize,
        name: &str,
        value: &ColumnValue,
    ) -> flatgeobuf::geozero::error::Result<bool> {
        let Some(c) = COLUMNS.iter().position(|n| *n == name) else {
            return Ok(false);
        };
        let v = match *value {
            ColumnValue::UByte(v) => Some(u64::from(v)),
            ColumnValue::UShort(v) => Some(u64::from(v)),
            ColumnValue::UInt(v) => Some(u64::from(v)),
            ColumnValue::ULong(v) => Some(v),
            ColumnValue::Byte(v) => u64::try_from(v).ok(),
            ColumnValue::Short(v) => u64::try_from(v).ok(),
            ColumnValue::Int(v) => u64::try_from(v).ok(),
            ColumnValue::Long(v) => u64::try_from(v).ok(),
            _ => None,
        };
        match v {
            Some(v) => self.0[c] = Some(v),
            None => {
                self.1.get_or_insert_with(|| {
                    format!("column '{name}' holds {value:?}, expected an unsigned integer")
                });
            }
        }
        Ok(false)
    }
}

/// Reads a FlatGeobuf reference table from `file`; `source` names it in
/// messages. A table of more than `eager_rows` features is read on demand:
/// a chunk lookup asks the R-tree for the features over the chunks'
/// footprints, reading only the index pages and features it needs.
pub fn read(source: &str, file: Arc<dyn IndexFile>, eager_rows: u64) -> Result<Index> {
    contain_panics(source, "the FlatGeobuf table", || {
        read_table(source, file, eager_rows)
    })
}

/// [`read`], panics of the FlatGeobuf crate not contained.
fn read_table(source: &str, file: Arc<dyn IndexFile>, eager_rows: u64) -> Result<Index> {
    let err = fgb_error(source);
    let fgb = FgbReader::open(Cursor::new(Arc::clone(&file), READ_AHEAD)).map_err(&err)?;
    let header = fgb.header();
    let doc = header.metadata().ok_or_else(|| {
        malformed(
            source,
            "no metadata document in the FlatGeobuf header: not a chunkref reference table \
             (docs/reference-table.md)"
                .into(),
        )
    })?;
    let mut table = TableReader::new(source, doc)?;
    let names: Vec<String> = header
        .columns()
        .map(|cs| cs.iter().map(|c| c.name().to_string()).collect())
        .unwrap_or_default();
    if let Some(missing) = COLUMNS.iter().find(|c| !names.iter().any(|n| n == *c)) {
        return Err(malformed(
            source,
            format!(
                "missing column '{missing}' (a reference table has columns {})",
                COLUMNS.join(", ")
            ),
        ));
    }
    let layout = Layout::of(
        source,
        file.as_ref(),
        header.features_count(),
        header.index_node_size(),
    )?;
    // Footprints placed by coordinate values cannot be recomputed here to
    // query the R-tree: such a table is read whole. The crate searches the
    // R-tree with its default node size: other trees are read whole too.
    let paged = header.features_count() > eager_rows
        && header.index_node_size() == PackedRTree::DEFAULT_NODE_SIZE
        && !table.coordinate_footprints();
    if paged {
        let check = table.checker();
        return Ok(table.finish_paged(|index| {
            Arc::new(Pages {
                source: source.to_string(),
                file,
                layout,
                check,
                geometry: geometries(index, |_| None),
            })
        }));
    }
    layout.check_all(source, file.as_ref())?;
    let rows = collect(source, fgb.select_all().map_err(&err)?, |_| true)?;
    // The R-tree orders features along a Hilbert curve: back to table order.
    table.push(&rows.sorted())?;
    Ok(table.finish())
}

/// Bytes read ahead by the cursor the FlatGeobuf reader reads through.
const READ_AHEAD: usize = 64 << 10;

/// Where a FlatGeobuf file's R-tree and features lie, from its header,
/// checked against the file's size: the crate trusts the header's counts
/// and each feature's length prefix, and allocates what they say before it
/// reads (a 4-byte length of 4 GB from a 13 KB file), so the lengths it will
/// read are checked first ([`Layout::check_all`], [`Layout::check_at`]).
#[derive(Debug, Clone, Copy)]
struct Layout {
    /// Byte offset of the R-tree.
    index: u64,
    /// Byte offset of the first feature.
    features: u64,
    /// Features the header announces (0: unknown, up to the end).
    count: u64,
}

impl Layout {
    fn of(source: &str, file: &dyn IndexFile, count: u64, node_size: u16) -> Result<Layout> {
        let size = file.size();
        let prefix = file.read_at(8, 4)?;
        let header =
            u64::from(u32::from_le_bytes(prefix[..].try_into().map_err(|_| {
                malformed(source, "the file ends in its header".into())
            })?));
        if node_size == 1 {
            return Err(malformed(
                source,
                "R-tree node size 1 (at least 2 is needed)".into(),
            ));
        }
        // Every feature takes at least its 4-byte length and 40 bytes of tree.
        if count > size / 4 {
            return Err(malformed(
                source,
                format!(
                    "the header announces {count} features, more than a {size}-byte file holds"
                ),
            ));
        }
        let tree = if node_size > 0 && count > 0 {
            PackedRTree::index_size(count as usize, node_size) as u64
        } else {
            0
        };
        let index = 12 + header;
        let features = index
            .checked_add(tree)
            .filter(|&f| f <= size)
            .ok_or_else(|| {
                malformed(
                    source,
                    format!(
                        "the header ({header} bytes) and R-tree ({tree} bytes) of {count} features \
                         run past the end of the {size}-byte file"
                    ),
                )
            })?;
        Ok(Layout {
            index,
            features,
            count,
        })
    }

    /// Walks the length prefixes of every feature.
    fn check_all(&self, source: &str, file: &dyn IndexFile) -> Result<()> {
        /// Bytes read at a time while walking.
        const WALK: usize = 1 << 20;
        let size = file.size();
        let (mut window, mut window_start) = (Bytes::new(), 0u64);
        let (mut pos, mut n) = (self.features, 0u64);
        while if self.count > 0 {
            n < self.count
        } else {
            pos < size
        } {
            let buffered = pos
                .checked_sub(window_start)
                .is_some_and(|at| at + 4 <= window.len() as u64);
            if !buffered {
                window = file.read_at(pos, WALK)?;
                window_start = pos;
            }
            let at = (pos - window_start) as usize;
            let len = window
                .get(at..at + 4)
                .map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])));
            pos = check_length(source, size, n, pos, len)?;
            n += 1;
        }
        Ok(())
    }

    /// Checks the length prefix of the feature `offset` bytes into the
    /// feature section (an R-tree hit).
    fn check_at(&self, source: &str, file: &dyn IndexFile, n: usize, offset: usize) -> Result<()> {
        let pos = self.features.saturating_add(offset as u64);
        let prefix = file.read_at(pos, 4)?;
        let len = prefix
            .get(..4)
            .map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])));
        check_length(source, file.size(), n as u64, pos, len).map(drop)
    }
}

/// The end of feature `n` at byte `pos` of a `size`-byte file whose length
/// prefix reads `len` (`None`: the file ends first), or the error naming it.
fn check_length(source: &str, size: u64, n: u64, pos: u64, len: Option<u64>) -> Result<u64> {
    let left = size.saturating_sub(pos).saturating_sub(4);
    match len {
        None => Err(malformed(
            source,
            format!("feature {n} at byte {pos}: the file ends before its length"),
        )),
        Some(len) if len > left => Err(malformed(
            source,
            format!("feature {n} at byte {pos} claims {len} bytes; {left} are left in the file"),
        )),
        Some(len) => Ok(pos + 4 + len),
    }
}

/// The rows of the features of `features` that `keep` accepts.
fn collect(
    source: &str,
    mut features: FeatureIter<Cursor, Seekable>,
    mut keep: impl FnMut(&[u64; 5]) -> bool,
) -> Result<Rows> {
    let err = fgb_error(source);
    let mut rows = Rows::default();
    let mut n = 0u64;
    while let Some(feature) = features.next().map_err(&err)? {
        let mut row = Row::default();
        feature
            .process_properties(&mut row)
            .map_err(|e| malformed(source, format!("feature {n}: {e}")))?;
        if let Some(problem) = row.1 {
            return Err(malformed(source, format!("feature {n}: {problem}")));
        }
        let k = n;
        n += 1;
        let value = |c: usize, max: u64| -> Result<u64> {
            match row.0[c] {
                Some(v) if v <= max => Ok(v),
                Some(v) => Err(malformed(
                    source,
                    format!(
                        "feature {k}: column '{}' holds {v}, above its largest value {max}",
                        COLUMNS[c]
                    ),
                )),
                None => Err(malformed(
                    source,
                    format!("feature {k}: column '{}' is null", COLUMNS[c]),
                )),
            }
        };
        let (u16m, u32m) = (u64::from(u16::MAX), u64::from(u32::MAX));
        let key = [
            value(0, u16m)?,
            value(1, u32m)?,
            value(2, u32m)?,
            value(3, u32m)?,
            value(4, u32m)?,
        ];
        if !keep(&key) {
            continue;
        }
        rows.array.push(key[0] as u16);
        rows.time.push(key[1] as u32);
        rows.band.push(key[2] as u32);
        rows.y.push(key[3] as u32);
        rows.x.push(key[4] as u32);
        rows.file.push(value(5, u32m)? as u32);
        rows.offset.push(value(6, u64::MAX)?);
        rows.length.push(row.0[7]);
        rows.part.push(value(8, u16m)? as u16);
    }
    Ok(rows)
}

/// A FlatGeobuf table read on demand through its R-tree.
#[derive(Debug)]
struct Pages {
    source: String,
    file: Arc<dyn IndexFile>,
    layout: Layout,
    check: Arc<RowChecker>,
    /// By store array.
    geometry: Vec<Geometry>,
}

impl PageSource for Pages {
    fn lookup(&self, array: usize, positions: &[u64]) -> Result<Vec<Option<RawRef>>> {
        contain_panics(&self.source, "the FlatGeobuf R-tree or features", || {
            self.find(array, positions)
        })
    }
}

impl Pages {
    /// [`PageSource::lookup`], panics of the FlatGeobuf crate not contained.
    fn find(&self, array: usize, positions: &[u64]) -> Result<Vec<Option<RawRef>>> {
        let Some((t, _)) = self.check.table_array(array) else {
            return Ok(vec![None; positions.len()]);
        };
        let mut wanted = HashSet::new();
        let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
        for &p in positions {
            let c = self.check.columns(t, p);
            wanted.insert([
                u64::from(t),
                c[0].into(),
                c[1].into(),
                c[2].into(),
                c[3].into(),
            ]);
            for (x, y) in self.geometry[array].footprint(c[2], c[3]) {
                (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
            }
        }
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let err = fgb_error(&self.source);
        // The features the crate will read: their lengths checked first.
        let mut tree = Cursor::new(Arc::clone(&self.file), READ_AHEAD);
        tree.seek(SeekFrom::Start(self.layout.index))
            .map_err(|e| malformed(&self.source, format!("FlatGeobuf: {e}")))?;
        let hits = PackedRTree::stream_search(
            &mut tree,
            self.layout.count as usize,
            PackedRTree::DEFAULT_NODE_SIZE,
            x0,
            y0,
            x1,
            y1,
        )
        .map_err(&err)?;
        for hit in &hits {
            self.layout
                .check_at(&self.source, self.file.as_ref(), hit.index, hit.offset)?;
        }
        let fgb = FgbReader::open(Cursor::new(Arc::clone(&self.file), READ_AHEAD)).map_err(&err)?;
        let features = fgb.select_bbox(x0, y0, x1, y1).map_err(&err)?;
        let rows = collect(&self.source, features, |key| wanted.contains(key))?;
        let mut sink = RowSink::new(self.check.arrays(), 0);
        sink.push(&self.check, &rows.sorted())?;
        let found = sink.into_rows().swap_remove(array);
        Ok(ChunkTable::from_rows(found).lookup(positions))
    }
}

fn malformed(source: &str, reason: String) -> Error {
    Error::MalformedIndex {
        index: source.to_string(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::writers::fgb::write;
    use crate::builders::writers::to_kerchunk::to_kerchunk;
    use crate::io::index_file::InMemory;
    use flatgeobuf::{FgbWriter, GeometryType};

    #[test]
    fn every_reference_form_round_trips() {
        let original = crate::builders::writers::parquet::tests::index();
        let mut out = Vec::new();
        write(&original, None, &mut out).unwrap();
        assert!(out.starts_with(MAGIC));
        let back = open("t.fgb", out.clone(), u64::MAX).unwrap();
        assert_eq!(to_kerchunk(&back).unwrap(), to_kerchunk(&original).unwrap());
        // On demand: the R-tree finds the same references.
        let paged = open("t.fgb", out, 0).unwrap();
        for (a, b) in original.arrays.iter().zip(&paged.arrays) {
            let all: Vec<u64> = (0..a.meta.grid_shape().iter().product()).collect();
            assert_eq!(a.refs.lookup(&all).unwrap(), b.refs.lookup(&all).unwrap());
            assert!(b.refs.table().is_err());
            let some = [all[all.len() - 1], all[3], all[0]];
            assert_eq!(a.refs.lookup(&some).unwrap(), b.refs.lookup(&some).unwrap());
        }
    }

    fn open(name: &str, bytes: Vec<u8>, eager_rows: u64) -> Result<Index> {
        read(name, Arc::new(InMemory::new(name, bytes)), eager_rows)
    }

    /// The table of `index()` as FlatGeobuf, and where its first feature's
    /// length prefix lies.
    fn table() -> (Vec<u8>, usize) {
        let mut out = Vec::new();
        write(
            &crate::builders::writers::parquet::tests::index(),
            None,
            &mut out,
        )
        .unwrap();
        let file = InMemory::new("t.fgb", out.clone());
        let fgb = FgbReader::open(Cursor::new(Arc::new(file.clone()), READ_AHEAD)).unwrap();
        let h = fgb.header();
        let layout = Layout::of("t.fgb", &file, h.features_count(), h.index_node_size()).unwrap();
        (out, layout.features as usize)
    }

    #[test]
    fn feature_lengths_past_the_end_are_refused_before_any_allocation() {
        let (good, first) = table();
        let left = good.len() - first - 4;
        for (len, eager_rows) in [
            (0xFFFF_FFF0u32, u64::MAX),
            (left as u32 + 1, u64::MAX),
            (0xFFFF_FFF0, 0),
        ] {
            let mut bad = good.clone();
            bad[first..first + 4].copy_from_slice(&len.to_le_bytes());
            let got = open("t.fgb", bad, eager_rows).and_then(|index| {
                let all: Vec<u64> = (0..16).collect();
                index.arrays[0].refs.lookup(&all).map(drop)
            });
            let e = got.unwrap_err().to_string();
            assert!(
                e.contains("t.fgb")
                    && e.contains(&format!("feature 0 at byte {first} claims {len} bytes")),
                "{e}"
            );
        }
    }

    #[test]
    fn impossible_feature_counts_and_node_sizes_are_refused() {
        let file = InMemory::new("t.fgb", table().0);
        let e = Layout::of("t.fgb", &file, 1 << 40, 16)
            .unwrap_err()
            .to_string();
        assert!(e.contains("announces 1099511627776 features"), "{e}");
        let e = Layout::of("t.fgb", &file, 3, 1).unwrap_err().to_string();
        assert!(e.contains("node size 1"), "{e}");
    }

    #[test]
    fn a_plain_flatgeobuf_file_is_refused_by_name() {
        let fgb = FgbWriter::create("x", GeometryType::Polygon).unwrap();
        let mut out = Vec::new();
        fgb.write(&mut out).unwrap();
        let e = open("x.fgb", out, u64::MAX).unwrap_err().to_string();
        assert!(
            e.contains("x.fgb") && e.contains("not a chunkref reference table"),
            "{e}"
        );
    }
}
