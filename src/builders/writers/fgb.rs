//! Writes the FlatGeobuf form of a chunk-reference table
//! (docs/reference-table.md): one feature per row with the table's columns
//! as properties and the chunk's footprint polygon, a packed R-tree, and the
//! metadata document in the header (`crate::index::fgb` reads it).

use std::io::Write;

use flatgeobuf::geozero::{ColumnValue, GeomProcessor, PropertyProcessor};
use flatgeobuf::{ColumnType, FgbCrs, FgbWriter, FgbWriterOptions, GeometryType, GeozeroGeometry};

use crate::base::error::{Error, Result};
use crate::index::fgb::fgb_error;
use crate::index::footprint::{geometries, layer_epsg, Placement};
use crate::index::table::{self, Rows, COLUMNS};
use crate::index::Index;
use crate::read::chunk::Locations;
use crate::read::georef::coords;

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

/// Writes `index` as a FlatGeobuf reference table to `out`. With
/// `locations`, arrays placed by no metadata get footprints from their
/// coordinate arrays' values (docs/reference-table.md).
pub fn write(index: &Index, locations: Option<&Locations>, out: impl Write) -> Result<()> {
    let err = fgb_error(&index.source);
    // The document is complete only after the rows are listed (inline
    // chunks), and the header is written first: list rows, then features.
    let mut rows = Rows::default();
    let mut doc = table::rows_of(index, table::BATCH_ROWS, |batch| {
        rows.extend(batch);
        Ok(())
    })?;
    let geometry = geometries(index, |a| {
        let l = locations?;
        coords::swath(index, l, a)
            .map(|(x, y)| Placement::Swath(x, y))
            .or_else(|| coords::axes(index, l, a).map(|(x, y)| Placement::Axes(x, y)))
    });
    for (entry, g) in doc.arrays.iter_mut().zip(&geometry) {
        if g.from_coordinates() {
            entry.footprints = Some(table::COORDINATE_FOOTPRINTS.into());
        }
    }
    let text = table::doc_text(&index.source, &doc)?;
    let options = FgbWriterOptions {
        write_index: true,
        crs: FgbCrs {
            code: layer_epsg(index),
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
    for i in 0..rows.len() {
        let ring = geometry[usize::from(rows.array[i])].footprint(rows.y[i], rows.x[i]);
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
