//! Indexing DTED elevation cells (levels 0, 1, 2) into Kerchunk JSON chunk
//! indexes in the osml-imagery-io layout, with the `dted` codec.
//!
//! One cell is one chunk: the array `0/data` of shape [1, posts, lines]
//! (`<i2`, `fill_value` -32767, DTED's void) references the cell's data
//! records. Several cells of one level and latitude zone become ONE mosaic
//! array whose chunks are the cells placed by origin on a common grid, see
//! [`index_cells`].

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::base::error::{Error, Result};
use crate::builders::writers::built::Built;
use crate::builders::writers::built::Ref;
use crate::builders::writers::pyramid::{self, Pyramid};
use crate::conventions::geozarr::{Georef, Registration};
use crate::formats::dted::Header;
use crate::io::source::Source;

/// Codec URI of DTED cells, as osml-imagery-io names it.
pub const DTED_CODEC: &str = "https://awslabs.github.io/osml-imagery-io/codecs/dted";
/// DTED's void (no data) post value.
pub const VOID: i16 = -32767;

/// One DTED cell to index.
#[derive(Debug, Clone)]
pub struct Cell {
    /// The path it was read from, for messages.
    pub path: String,
    /// The URL its chunk references.
    pub url: String,
    /// Its headers.
    pub header: Header,
}

impl Cell {
    /// Reads the headers of the DTED file at `path`, referenced by `url`.
    pub fn read(path: &str, url: &str) -> Result<Cell> {
        let header = crate::formats::dted::read(&Source::open(path, "DTED")?)?;
        Ok(Cell {
            path: path.to_string(),
            url: url.to_string(),
            header,
        })
    }

    fn reference(&self, index: [u64; 3]) -> Ref {
        Ref::single(
            index,
            self.url.as_str(),
            self.header.data_offset,
            self.header.data_len(),
        )
    }
}

/// Builds the index of `cells`: one cell as itself, several as one seamless
/// mosaic. `checksum_warnings` writes the chunkref codec field
/// `"bad_checksum": "warning"`: a record with a bad checksum is then read
/// with a GDAL warning instead of failing (the peer does not know the field).
///
/// In a mosaic, neighbouring cells share their edge posts. Every cell keeps
/// its north row and west column (codec `trim_bottom` = `trim_right` = 1,
/// chunks of (posts - 1) x (lines - 1)), so on a shared edge the post of the
/// southern / eastern cell is the one read. The mosaic's own south row and
/// east column are the extra last chunk row / column: those chunks
/// reference the cells north / west of them and show the posts the trims
/// removed (codec field `trimmed_edge_chunks`). Cells absent from the grid
/// have no chunk key and read as void.
pub fn index_cells(cells: &[Cell], checksum_warnings: bool) -> Result<Value> {
    build_cells(cells, checksum_warnings).map(|b| b.to_kerchunk())
}

/// [`index_cells`] before it is written as Kerchunk JSON.
pub fn build_cells(cells: &[Cell], checksum_warnings: bool) -> Result<Built> {
    let first = cells.first().ok_or_else(|| Error::Usage {
        what: "no DTED cell to index".into(),
    })?;
    let h = &first.header;
    let (rows, cols) = (h.num_lat_points, h.num_lon_lines);
    let mut codec = json!({
        "id": DTED_CODEC,
        "num_lat_points": rows,
        "num_lon_lines": cols,
        "record_size": h.record_size(),
        "trim_top": 0, "trim_bottom": 0, "trim_left": 0, "trim_right": 0,
    });
    if checksum_warnings {
        codec["bad_checksum"] = json!("warning");
    }
    let mut refs = Vec::new();
    let (shape, chunks, geotransform) = if cells.len() == 1 {
        refs.push(first.reference([0, 0, 0]));
        ([1, rows, cols], [1, rows, cols], h.geotransform())
    } else {
        let grid = place(cells)?;
        let (ny, nx) = (grid.rows, grid.cols);
        for (&(iy, ix), cell) in &grid.cells {
            refs.push(cell.reference([0, iy, ix]));
            if iy + 1 == ny {
                refs.push(cell.reference([0, ny, ix]));
            }
            if ix + 1 == nx {
                refs.push(cell.reference([0, iy, nx]));
            }
            if iy + 1 == ny && ix + 1 == nx {
                refs.push(cell.reference([0, ny, nx]));
            }
        }
        codec["trim_bottom"] = json!(1);
        codec["trim_right"] = json!(1);
        codec["trimmed_edge_chunks"] = json!([ny, nx]);
        let shape = [1, ny * (rows - 1) + 1, nx * (cols - 1) + 1];
        (
            shape,
            [1, rows - 1, cols - 1],
            grid.north_west.geotransform(),
        )
    };
    let g = geotransform;
    let georef = Georef {
        transform: Some([g[1], g[2], g[0], g[4], g[5], g[3]]),
        crs_code: Some(format!("EPSG:{}", h.epsg)),
        crs_wkt2: None,
        registration: Registration::Unstated,
    };
    let geo_attrs = georef.attributes([shape[1], shape[2]], [1.0, 1.0]);
    let attrs = georef.root_attributes([shape[1], shape[2]]);
    let data = pyramid::Array {
        shape,
        chunks,
        dtype: "<i2".into(),
        codec,
        fill: json!(VOID),
        attrs: Map::new(),
        refs,
    };
    let source = match cells {
        [one] => json!(one.url),
        many => json!(many.iter().map(|c| c.url.as_str()).collect::<Vec<_>>()),
    };
    let pyramid = Pyramid {
        source,
        attrs,
        levels: vec![pyramid::Level {
            data,
            mask: None,
            attrs: geo_attrs,
        }],
    };
    Ok(pyramid.into_built())
}

/// Cells placed on the mosaic grid.
struct Grid<'a> {
    /// (row from the north, column from the west) -> cell.
    cells: BTreeMap<(u64, u64), &'a Cell>,
    rows: u64,
    cols: u64,
    /// Header of the (possibly absent) north-west cell: its origin places the grid.
    north_west: Header,
}

/// Checks that `cells` share level, zone and grid, and places them.
fn place(cells: &[Cell]) -> Result<Grid<'_>> {
    let first = &cells[0];
    let h = &first.header;
    let key = |h: &Header| {
        (
            h.lon_interval,
            h.lat_interval,
            h.num_lon_lines,
            h.num_lat_points,
            h.epsg,
        )
    };
    if let Some(other) = cells.iter().find(|c| key(&c.header) != key(h)) {
        return Err(Error::Usage {
            what: format!(
                "cannot mosaic DTED cells of different levels or latitude zones: {} is {} ({}), \
                 {} is {} ({}); index them separately",
                first.path,
                h.describe(),
                datum(h),
                other.path,
                other.header.describe(),
                datum(&other.header)
            ),
        });
    }
    let span_lon = (h.num_lon_lines - 1) as i64 * h.lon_interval as i64;
    let span_lat = (h.num_lat_points - 1) as i64 * h.lat_interval as i64;
    let west = cells.iter().map(|c| c.header.lon_origin).min().unwrap_or(0);
    let north = cells.iter().map(|c| c.header.lat_origin).max().unwrap_or(0);
    let mut placed: BTreeMap<(u64, u64), &Cell> = BTreeMap::new();
    for cell in cells {
        let (dx, dy) = (
            cell.header.lon_origin - west,
            north - cell.header.lat_origin,
        );
        if dx % span_lon != 0 || dy % span_lat != 0 {
            return Err(Error::Usage {
                what: format!(
                    "{}: origin {} is not on the grid of {} (cells of {}\" x {}\")",
                    cell.path,
                    origin(&cell.header),
                    first.path,
                    span_lat as f64 / 10.0,
                    span_lon as f64 / 10.0
                ),
            });
        }
        let at = ((dy / span_lat) as u64, (dx / span_lon) as u64);
        if let Some(twin) = placed.insert(at, cell) {
            return Err(Error::Usage {
                what: format!(
                    "{} and {} are both the cell at {}; give each cell once",
                    twin.path,
                    cell.path,
                    origin(&cell.header)
                ),
            });
        }
    }
    let rows = placed.keys().map(|k| k.0).max().unwrap_or(0) + 1;
    let cols = placed.keys().map(|k| k.1).max().unwrap_or(0) + 1;
    let north_west = Header {
        lon_origin: west,
        lat_origin: north,
        ..h.clone()
    };
    Ok(Grid {
        cells: placed,
        rows,
        cols,
        north_west,
    })
}

fn datum(h: &Header) -> String {
    format!("EPSG:{}", h.epsg)
}

/// The south-west origin in degrees, for messages.
fn origin(h: &Header) -> String {
    format!(
        "lon {} lat {}",
        h.lon_origin as f64 / 36000.0,
        h.lat_origin as f64 / 36000.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A level 0 cell (121 x 121 posts of 30") with south-west corner at
    /// (`lat`, `lon`) degrees.
    fn cell(name: &str, lat: i64, lon: i64) -> Cell {
        Cell {
            path: name.into(),
            url: format!("/d/{name}"),
            header: Header {
                lon_origin: lon * 36000,
                lat_origin: lat * 36000,
                lon_interval: 300,
                lat_interval: 300,
                num_lon_lines: 121,
                num_lat_points: 121,
                level: Some(0),
                epsg: 4326,
                data_offset: 3428,
            },
        }
    }

    fn doc(refs: &Value, key: &str) -> Value {
        serde_json::from_str(refs["refs"][key].as_str().unwrap()).unwrap()
    }

    #[test]
    fn one_cell_is_one_untrimmed_chunk() {
        let index = index_cells(&[cell("a.dt0", 45, 15)], false).unwrap();
        let zarray = doc(&index, "0/data/.zarray");
        assert_eq!(zarray["shape"], json!([1, 121, 121]));
        assert_eq!(zarray["chunks"], json!([1, 121, 121]));
        assert_eq!(zarray["fill_value"], json!(-32767));
        let codec = &zarray["filters"][0];
        assert_eq!(codec["record_size"], json!(254));
        assert_eq!(codec["trim_bottom"], json!(0));
        assert!(codec.get("trimmed_edge_chunks").is_none() && codec.get("bad_checksum").is_none());
        assert_eq!(
            index["refs"]["0/data/0.0.0"],
            json!(["/d/a.dt0", 3428, 121 * 254])
        );
        assert_eq!(doc(&index, ".zattrs")["proj:code"], json!("EPSG:4326"));
    }

    #[test]
    fn cells_are_placed_by_origin_with_edge_chunks() {
        // A 2 x 2 block less its north-east cell, listed in no particular order.
        let cells = [cell("sw", 45, 15), cell("nw", 46, 15), cell("se", 45, 16)];
        let index = index_cells(&cells, true).unwrap();
        let zarray = doc(&index, "0/data/.zarray");
        assert_eq!(zarray["shape"], json!([1, 241, 241]));
        assert_eq!(zarray["chunks"], json!([1, 120, 120]));
        let codec = &zarray["filters"][0];
        assert_eq!(codec["trimmed_edge_chunks"], json!([2, 2]));
        assert_eq!(
            (&codec["trim_bottom"], &codec["trim_right"]),
            (&json!(1), &json!(1))
        );
        assert_eq!(codec["bad_checksum"], json!("warning"));
        let url = |key: &str| {
            index["refs"]
                .get(key)
                .map(|r| r[0].as_str().unwrap().to_string())
        };
        let expect = [
            ("0.0.0", Some("nw")),
            ("0.0.1", None),
            ("0.0.2", None),
            ("0.1.0", Some("sw")),
            ("0.1.1", Some("se")),
            ("0.1.2", Some("se")),
            ("0.2.0", Some("sw")),
            ("0.2.1", Some("se")),
            ("0.2.2", Some("se")),
        ];
        for (key, want) in expect {
            assert_eq!(
                url(&format!("0/data/{key}")),
                want.map(|n| format!("/d/{n}")),
                "{key}"
            );
        }
        let t = doc(&index, ".zattrs")["spatial:transform"].clone();
        let px = 300.0 / 36000.0;
        assert_eq!(
            t,
            json!([
                px,
                0.0,
                15.0 - 0.5 * px,
                0.0,
                -px,
                46.0 - 0.5 * px + 121.0 * px
            ])
        );
    }

    #[test]
    fn mixed_off_grid_and_repeated_cells_are_refused() {
        let mut level1 = cell("b.dt1", 45, 16);
        level1.header.lat_interval = 30;
        let err = index_cells(&[cell("a.dt0", 45, 15), level1], false).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("different levels or latitude zones") && text.contains("b.dt1"),
            "{text}"
        );
        let mut zone2 = cell("c.dt0", 45, 16);
        zone2.header.lon_interval = 600;
        assert!(index_cells(&[cell("a.dt0", 45, 15), zone2], false).is_err());
        let mut off = cell("off", 45, 16);
        off.header.lon_origin += 150;
        let err = index_cells(&[cell("a.dt0", 45, 15), off], false).unwrap_err();
        assert!(err.to_string().contains("is not on the grid"), "{err}");
        let err = index_cells(&[cell("a", 45, 15), cell("b", 45, 15)], false).unwrap_err();
        assert!(err.to_string().contains("give each cell once"), "{err}");
    }
}
