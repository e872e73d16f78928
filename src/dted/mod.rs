//! Indexing DTED elevation cells (levels 0, 1, 2) into Kerchunk JSON chunk
//! indexes in the osml-imagery-io layout, with the `dted` codec.
//!
//! One cell is one chunk: the array `0/data` of shape [1, posts, lines]
//! (`<i2`, `fill_value` -32767, DTED's void) references the cell's data
//! records. Several cells of one level and latitude zone become ONE mosaic
//! array whose chunks are the cells placed by origin on a common grid, see
//! [`index_cells`].

pub mod header;

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::layout::{self, Refs};
use crate::source::Source;
use crate::tiff::geo::Georef;
pub use header::Header;

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
        let header = header::read(&Source::open(path, "DTED")?)?;
        Ok(Cell {
            path: path.to_string(),
            url: url.to_string(),
            header,
        })
    }

    fn reference(&self) -> Value {
        json!([self.url, self.header.data_offset, self.header.data_len()])
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
    let mut refs = Refs::new();
    let (shape, chunks, geotransform) = if cells.len() == 1 {
        refs.insert("0/data/0.0.0".into(), first.reference());
        ([1, rows, cols], [1, rows, cols], h.geotransform())
    } else {
        let grid = place(cells)?;
        let (ny, nx) = (grid.rows, grid.cols);
        for (&(iy, ix), cell) in &grid.cells {
            let r = cell.reference();
            refs.insert(format!("0/data/0.{iy}.{ix}"), r.clone());
            if iy + 1 == ny {
                refs.insert(format!("0/data/0.{ny}.{ix}"), r.clone());
            }
            if ix + 1 == nx {
                refs.insert(format!("0/data/0.{iy}.{nx}"), r.clone());
            }
            if iy + 1 == ny && ix + 1 == nx {
                refs.insert(format!("0/data/0.{ny}.{nx}"), r);
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
    };
    let geo_attrs = georef.attributes([shape[1], shape[2]], [1.0, 1.0]);
    let entry = layout::put_level(&mut refs, 0, [1.0, 1.0], geo_attrs.clone());
    let doc = layout::ArrayDoc {
        shape,
        chunks,
        dtype: "<i2",
        fill: &json!(VOID),
        codec: &codec,
    };
    layout::put_array(&mut refs, "0/data", &doc);
    let source = match cells {
        [one] => json!(one.url),
        many => json!(many.iter().map(|c| c.url.as_str()).collect::<Vec<_>>()),
    };
    layout::put_root(&mut refs, geo_attrs, source, vec![entry]);
    Ok(json!({"version": 1, "refs": refs}))
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
