//! The FlatGeobuf form of a chunk-reference table (docs/reference-table.md):
//! one feature per row with the table's nine columns as properties (`length`
//! left out when null) and the chunk's footprint polygon, a packed R-tree,
//! and the metadata document in the header's `metadata`. OGR reads it as an
//! ordinary vector layer (`ogrinfo collection.fgb`).
//!
//! Footprints come from the GeoZarr `spatial:transform` of the array or of
//! its groups (pixel coordinates when there is none), the CRS from
//! `proj:code` `EPSG:n`.

use std::io::{BufReader, Read, Seek, Write};

use flatgeobuf::geozero::{ColumnValue, GeomProcessor, PropertyProcessor};
use flatgeobuf::{
    ColumnType, FallibleStreamingIterator, FeatureProperties, FgbCrs, FgbReader, FgbWriter,
    FgbWriterOptions, GeometryType, GeozeroGeometry,
};
use serde_json::Value;

use super::table::{self, Rows, TableReader, COLUMNS};
use super::{split_key, Index};
use crate::error::{Error, Result};
use crate::zarr::ArrayMeta;

/// First bytes of a FlatGeobuf file (magic and major version 3).
pub const MAGIC: &[u8] = b"fgb\x03";

/// Column types, in [`COLUMNS`] order.
const TYPES: [ColumnType; 9] = [
    ColumnType::UShort,
    ColumnType::UInt,
    ColumnType::UInt,
    ColumnType::UInt,
    ColumnType::UInt,
    ColumnType::UInt,
    ColumnType::Long,
    ColumnType::Long,
    ColumnType::UShort,
];

fn fgb_error(source: &str) -> impl Fn(flatgeobuf::Error) -> Error + '_ {
    move |e| Error::MalformedIndex {
        index: source.to_string(),
        reason: format!("FlatGeobuf: {e}"),
    }
}

/// A chunk's footprint: a closed ring of 5 points.
struct Footprint([(f64, f64); 5]);

impl GeozeroGeometry for Footprint {
    fn process_geom<P: GeomProcessor>(&self, p: &mut P) -> flatgeobuf::geozero::error::Result<()> {
        p.polygon_begin(true, 1, 0)?;
        p.linestring_begin(false, 5, 0)?;
        for (i, &(x, y)) in self.0.iter().enumerate() {
            p.xy(x, y, i)?;
        }
        p.linestring_end(false, 0)?;
        p.polygon_end(true, 0)
    }
}

/// How an array's pixel (column, row) maps to coordinates.
#[derive(Debug, Clone, Copy)]
struct Affine([f64; 6]);

impl Affine {
    fn apply(&self, col: f64, row: f64) -> (f64, f64) {
        let [a, b, c, d, e, f] = self.0;
        (a * col + b * row + c, d * col + e * row + f)
    }
}

/// The attribute `key` of an array or its nearest group that has it.
fn inherited<'a>(index: &'a Index, meta: &'a ArrayMeta, key: &str) -> Option<&'a Value> {
    if let Some(v) = meta.attributes.get(key) {
        return Some(v);
    }
    let mut dir = meta.path.as_str();
    loop {
        dir = split_key(dir).0;
        if let Some(v) = index.groups.get(dir).and_then(|g| g.get(key)) {
            return Some(v);
        }
        if dir.is_empty() {
            return None;
        }
    }
}

/// The array's `spatial:transform` (GDAL's default, pixel coordinates, when absent).
fn affine(index: &Index, meta: &ArrayMeta) -> Affine {
    let t: Option<Vec<f64>> = inherited(index, meta, "spatial:transform")
        .and_then(Value::as_array)
        .and_then(|l| l.iter().map(Value::as_f64).collect());
    match t.as_deref() {
        Some(&[a, b, c, d, e, f]) => Affine([a, b, c, d, e, f]),
        _ => Affine([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]),
    }
}

/// The EPSG code of the first array's `proj:code`, if any.
fn epsg(index: &Index) -> i32 {
    index
        .arrays
        .first()
        .and_then(|a| inherited(index, &a.meta, "proj:code"))
        .and_then(Value::as_str)
        .and_then(|c| c.strip_prefix("EPSG:"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Writes `index` as a FlatGeobuf reference table to `out`.
pub fn write(index: &Index, out: impl Write) -> Result<()> {
    let err = fgb_error(&index.source);
    // The document is complete only after the rows are listed (inline
    // chunks), and the header is written first: list rows, then features.
    let mut rows = Rows::default();
    let doc = table::rows_of(index, table::BATCH_ROWS, |batch| {
        rows.extend(batch);
        Ok(())
    })?;
    let text = table::doc_text(&index.source, &doc)?;
    let options = FgbWriterOptions {
        write_index: true,
        crs: FgbCrs {
            code: epsg(index),
            ..Default::default()
        },
        title: Some("chunk references"),
        metadata: Some(&text),
        ..Default::default()
    };
    let mut fgb =
        FgbWriter::create_with_options("chunks", GeometryType::Polygon, options).map_err(&err)?;
    for (name, kind) in COLUMNS.iter().zip(TYPES) {
        fgb.add_column(name, kind, |_, col| col.nullable = *name == "length");
    }
    // Per table array: its transform, chunk shape (y, x) and size (y, x).
    let geometry: Vec<(Affine, [u64; 2], [u64; 2])> = index
        .arrays
        .iter()
        .map(|a| {
            let m = &a.meta;
            let n = m.shape.len();
            let last2 = |v: &[u64]| match n {
                0 => [1, 1],
                1 => [1, v[0]],
                _ => [v[n - 2], v[n - 1]],
            };
            (affine(index, m), last2(&m.chunks), last2(&m.shape))
        })
        .collect();
    for i in 0..rows.len() {
        let (t, [ch, cw], [h, w]) = geometry[usize::from(rows.array[i])];
        let (y, x) = (u64::from(rows.y[i]), u64::from(rows.x[i]));
        let (r0, c0) = ((y * ch) as f64, (x * cw) as f64);
        let (r1, c1) = (((y + 1) * ch).min(h) as f64, ((x + 1) * cw).min(w) as f64);
        let ring = [
            t.apply(c0, r0),
            t.apply(c1, r0),
            t.apply(c1, r1),
            t.apply(c0, r1),
            t.apply(c0, r0),
        ];
        // Offsets and lengths are Long (Integer64 in OGR); none reaches 2^63.
        let signed = |v: u64| {
            i64::try_from(v).map_err(|_| Error::MalformedIndex {
                index: index.source.clone(),
                reason: format!("byte offset or length {v} is too large for FlatGeobuf"),
            })
        };
        let offset = signed(rows.offset[i])?;
        let length = rows.length[i].map(signed).transpose()?;
        fgb.add_feature_geom(Footprint(ring), |f| {
            let values = [
                ColumnValue::UShort(rows.array[i]),
                ColumnValue::UInt(rows.time[i]),
                ColumnValue::UInt(rows.band[i]),
                ColumnValue::UInt(rows.y[i]),
                ColumnValue::UInt(rows.x[i]),
                ColumnValue::UInt(rows.file[i]),
                ColumnValue::Long(offset),
            ];
            for (c, v) in values.iter().enumerate() {
                let _ = f.property(c, COLUMNS[c], v);
            }
            if let Some(l) = length {
                let _ = f.property(7, COLUMNS[7], &ColumnValue::Long(l));
            }
            let _ = f.property(8, COLUMNS[8], &ColumnValue::UShort(rows.part[i]));
        })
        .map_err(|e| Error::MalformedIndex {
            index: index.source.clone(),
            reason: format!("FlatGeobuf: {e}"),
        })?;
    }
    fgb.write(out).map_err(&err)
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

/// Reads a FlatGeobuf reference table; `source` names it in messages.
pub fn read(source: &str, reader: impl Read + Seek) -> Result<Index> {
    let err = fgb_error(source);
    let bad = |reason: String| Error::MalformedIndex {
        index: source.to_string(),
        reason,
    };
    let mut reader = BufReader::new(reader);
    let fgb = FgbReader::open(&mut reader).map_err(&err)?;
    let header = fgb.header();
    let doc = header.metadata().ok_or_else(|| {
        bad(
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
        return Err(bad(format!(
            "missing column '{missing}' (a reference table has columns {})",
            COLUMNS.join(", ")
        )));
    }
    let mut features = fgb.select_all().map_err(&err)?;
    let mut rows = Rows::default();
    let mut n = 0u64;
    while let Some(feature) = features.next().map_err(&err)? {
        let mut row = Row::default();
        feature
            .process_properties(&mut row)
            .map_err(|e| bad(format!("feature {n}: {e}")))?;
        if let Some(problem) = row.1 {
            return Err(bad(format!("feature {n}: {problem}")));
        }
        let value = |c: usize, max: u64| -> Result<u64> {
            match row.0[c] {
                Some(v) if v <= max => Ok(v),
                Some(v) => Err(bad(format!(
                    "feature {n}: column '{}' holds {v}, above its largest value {max}",
                    COLUMNS[c]
                ))),
                None => Err(bad(format!("feature {n}: column '{}' is null", COLUMNS[c]))),
            }
        };
        let (u16m, u32m) = (u64::from(u16::MAX), u64::from(u32::MAX));
        rows.array.push(value(0, u16m)? as u16);
        rows.time.push(value(1, u32m)? as u32);
        rows.band.push(value(2, u32m)? as u32);
        rows.y.push(value(3, u32m)? as u32);
        rows.x.push(value(4, u32m)? as u32);
        rows.file.push(value(5, u32m)? as u32);
        rows.offset.push(value(6, u64::MAX)?);
        rows.length.push(row.0[7]);
        rows.part.push(value(8, u16m)? as u16);
        n += 1;
    }
    // The R-tree orders features along a Hilbert curve: back to table order.
    table.push(&rows.sorted())?;
    Ok(table.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::to_kerchunk::to_kerchunk;

    #[test]
    fn every_reference_form_round_trips() {
        let original = crate::index::parquet::tests::index();
        let mut out = Vec::new();
        write(&original, &mut out).unwrap();
        assert!(out.starts_with(MAGIC));
        let back = read("t.fgb", std::io::Cursor::new(out)).unwrap();
        assert_eq!(to_kerchunk(&back), to_kerchunk(&original));
    }

    #[test]
    fn a_plain_flatgeobuf_file_is_refused_by_name() {
        let fgb = FgbWriter::create("x", GeometryType::Polygon).unwrap();
        let mut out = Vec::new();
        fgb.write(&mut out).unwrap();
        let e = read("x.fgb", std::io::Cursor::new(out))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.fgb") && e.contains("not a chunkref reference table"),
            "{e}"
        );
    }
}
