//! 1-D coordinate arrays (`x`/`y`, `X`/`Y` as GDAL's Zarr driver writes
//! them, `lon`/`lat`, ...) named after an array's last two dimensions,
//! turned into a geotransform when their values are regularly spaced, named
//! as geolocation arrays when they are not; and 2-D longitude / latitude
//! arrays a CF `coordinates` attribute names (swaths, curvilinear grids),
//! which place chunk footprints.

use crate::base::dtype::{ByteOrder, ScalarKind};
use crate::index::{Array, Index};
use crate::read::chunk::{read_chunk, Locations};

/// Longest coordinate array read (elements).
pub const MAX_COORDINATES: u64 = 1 << 24;

/// Relative tolerance on the spacing of regular coordinates.
const SPACING_TOLERANCE: f64 = 1e-3;

/// What the coordinate arrays of an array's (y, x) dimensions say.
#[derive(Debug, Clone, PartialEq)]
pub enum Grid {
    /// Regularly spaced: the geotransform they imply.
    Regular([f64; 6]),
    /// Not regular: the paths of the `[x, y]` arrays (geolocation arrays).
    Irregular([String; 2]),
}

/// The grid the coordinate arrays of `array`'s (y, x) dimensions describe,
/// if both exist, are 1-D with the right length and increase or decrease
/// strictly.
pub fn grid(
    index: &Index,
    locations: &Locations,
    array: &Array,
    warnings: &mut Vec<String>,
) -> Option<Grid> {
    let names = array.meta.dimension_names.as_ref()?;
    let n = names.len();
    if n < 2 {
        return None;
    }
    let (h, w) = super::yx_size(array);
    let (y_path, ys) = coordinate(index, locations, array, &names[n - 2], h, warnings)?;
    let (x_path, mut xs) = coordinate(index, locations, array, &names[n - 1], w, warnings)?;
    if x_is_longitude(index, array) {
        unwrap_longitudes(&mut xs);
    }
    classify(xs, ys, [x_path, y_path]).map(|(grid, _)| grid)
}

/// Longitudes that wrap once inside the grid (180 .. 359, 0 .. 179: they
/// increase but for one decrease, and the first is east of the last) with
/// the values east of the last moved by -360 degrees, as GDAL's netCDF
/// driver moves them; the pixels stay in their stored order.
fn unwrap_longitudes(xs: &mut [f64]) {
    let (Some(&first), Some(&last)) = (xs.first(), xs.last()) else {
        return;
    };
    let decreases = xs.windows(2).filter(|p| p[1] < p[0]).count();
    if xs.len() > 2 && first > last && decreases == 1 {
        xs.iter_mut()
            .filter(|x| **x > last)
            .for_each(|x| *x -= 360.0);
    }
}

/// The coordinate values of `array`'s pixel centres along x and y, from
/// 1-D coordinate arrays named after its last two dimensions (as [`grid`]
/// finds them), when they are monotonic.
pub fn axes(index: &Index, locations: &Locations, array: &Array) -> Option<Axes> {
    let names = array.meta.dimension_names.as_ref()?;
    let n = names.len();
    if n < 2 {
        return None;
    }
    let (h, w) = super::yx_size(array);
    let quiet = &mut Vec::new();
    let (_, ys) = coordinate(index, locations, array, &names[n - 2], h, quiet)?;
    let (_, xs) = coordinate(index, locations, array, &names[n - 1], w, quiet)?;
    classify(xs, ys, [String::new(), String::new()]).map(|(_, values)| values)
}

/// Coordinate values along x and along y (or of every pixel).
pub type Axes = (Vec<f64>, Vec<f64>);

/// The grid monotonic axes describe, with the values.
fn classify(xs: Vec<f64>, ys: Vec<f64>, paths: [String; 2]) -> Option<(Grid, Axes)> {
    let grid = match (regular(&xs), regular(&ys)) {
        (Some((x0, dx)), Some((y0, dy))) => Some(Grid::Regular(super::node_to_corner([
            x0, dx, 0.0, y0, 0.0, dy,
        ]))),
        _ if monotonic(&xs) && monotonic(&ys) => Some(Grid::Irregular(paths)),
        _ => None,
    }?;
    Some((grid, (xs, ys)))
}

/// The longitudes and latitudes of `array`'s pixels (row-major, its last
/// two dimensions) from the 2-D arrays its CF `coordinates` attribute names
/// (told apart by `standard_name`, `units` or name), when both have the
/// array's (y, x) shape.
pub fn swath(index: &Index, locations: &Locations, array: &Array) -> Option<Axes> {
    let names = array.meta.attributes.get("coordinates")?.as_str()?;
    let (h, w) = super::yx_size(array);
    let found: Vec<&Array> = names
        .split_whitespace()
        .filter_map(|name| super::cf_variable(index, array, name))
        .filter(|c| c.meta.shape == [h, w] && h * w <= MAX_COORDINATES)
        .collect();
    let is = |c: &&Array, words: [&str; 3]| {
        let attr = |k: &str| {
            c.meta
                .attributes
                .get(k)
                .and_then(|v| v.as_str())
                .unwrap_or("")
        };
        let name = c
            .meta
            .path
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        attr("standard_name") == words[0] || attr("units") == words[1] || name.starts_with(words[2])
    };
    let lon = found
        .iter()
        .find(|c| is(c, ["longitude", "degrees_east", "lon"]))?;
    let lat = found
        .iter()
        .find(|c| is(c, ["latitude", "degrees_north", "lat"]))?;
    Some((
        values_2d(index, locations, lon)?,
        values_2d(index, locations, lat)?,
    ))
}

/// Every element of the 2-D array `coord`, row-major; `None` when a chunk
/// is missing or unreadable.
fn values_2d(index: &Index, locations: &Locations, coord: &Array) -> Option<Vec<f64>> {
    let m = &coord.meta;
    let (h, w) = (m.shape[0] as usize, m.shape[1] as usize);
    let (ch, cw) = (m.chunks[0] as usize, m.chunks[1] as usize);
    let grid = m.grid_shape();
    let mut out = vec![f64::NAN; h * w];
    for cy in 0..grid[0] {
        for cx in 0..grid[1] {
            let bytes = read_chunk(index, locations, coord, &[cy, cx]).ok()??;
            let chunk = to_f64(m.dtype.kind, m.dtype.size, m.dtype.order, &bytes)?;
            let (y0, x0) = (cy as usize * ch, cx as usize * cw);
            let [sy, sx] = [m.chunk_strides[0] as usize, m.chunk_strides[1] as usize];
            for r in 0..ch.min(h - y0) {
                for c in 0..cw.min(w - x0) {
                    out[(y0 + r) * w + x0 + c] = *chunk.get(r * sy + c * sx)?;
                }
            }
        }
    }
    Some(out)
}

/// The path and values of the coordinate array `name` (beside `array`,
/// else in a parent group) when it is 1-D with `len` elements.
fn coordinate(
    index: &Index,
    locations: &Locations,
    array: &Array,
    name: &str,
    len: u64,
    warnings: &mut Vec<String>,
) -> Option<(String, Vec<f64>)> {
    let coord = coordinate_array(index, array, name)?;
    if len < 2 {
        return None;
    }
    let mut values = values_1d(index, locations, coord, len, warnings)?;
    if let Some((scale, offset)) = packing(coord) {
        values.iter_mut().for_each(|v| *v = *v * scale + offset);
    }
    if let Some(metres) = geostationary_metres(index, array, coord) {
        values.iter_mut().for_each(|v| *v *= metres);
    }
    Some((coord.meta.path.clone(), values))
}

/// The `scale_factor` and `add_offset` of a packed coordinate array, when
/// it has both (GDAL's netCDF driver applies them only then).
fn packing(coord: &Array) -> Option<(f64, f64)> {
    let a = &coord.meta.attributes;
    Some((
        a.get("scale_factor")?.as_f64()?,
        a.get("add_offset")?.as_f64()?,
    ))
}

/// Metres per unit of the coordinate array `coord` of `array` when the
/// array's grid mapping is `geostationary` and the coordinates are
/// scanning angles (`units` `rad` or `radian`, `microradian`): the
/// satellite height (`perspective_point_height`), by which GDAL's netCDF
/// driver turns angles into the projection's metres (GOES-R x/y).
fn geostationary_metres(index: &Index, array: &Array, coord: &Array) -> Option<f64> {
    let gm = super::cf::grid_mapping(index, array)?;
    if gm.get("grid_mapping_name")?.as_str()? != "geostationary" {
        return None;
    }
    let height = gm.get("perspective_point_height")?.as_f64()?;
    let units = coord.meta.attributes.get("units")?.as_str()?;
    if units.eq_ignore_ascii_case("rad") || units.eq_ignore_ascii_case("radian") {
        Some(height)
    } else if units.eq_ignore_ascii_case("microradian") {
        Some(height * 1e-6)
    } else {
        None
    }
}

/// The 1-D coordinate array `name` of `array`'s dimension of `len`
/// elements (found in the array's group or a parent) and its values, if it
/// has one and it can be read: GDAL's netCDF driver shows them per band
/// (`NETCDF_DIM_<name>`, see [`super::dims`]).
pub fn dimension_coordinate<'a>(
    index: &'a Index,
    locations: &Locations,
    array: &Array,
    name: &str,
    len: u64,
) -> Option<(&'a Array, Vec<f64>)> {
    let coord = coordinate_array(index, array, name)?;
    let values = values_1d(index, locations, coord, len, &mut Vec::new())?;
    Some((coord, values))
}

/// Whether the coordinate array of `array`'s last (x) dimension holds
/// longitudes, as GDAL's netCDF driver tells them (`NCDFIsVarLongitude`):
/// `standard_name` `longitude`, east-degree `units`, or the name `lon` /
/// `longitude`.
pub fn x_is_longitude(index: &Index, array: &Array) -> bool {
    let Some(name) = array.meta.dimension_names.as_ref().and_then(|n| n.last()) else {
        return false;
    };
    let Some(coord) = coordinate_array(index, array, name) else {
        return false;
    };
    let attr = |k: &str| coord.meta.attributes.get(k).and_then(|v| v.as_str());
    const EAST: &[&str] = &[
        "degrees_east",
        "degree_east",
        "degree_E",
        "degrees_E",
        "degreeE",
        "degreesE",
    ];
    let lower = name.to_ascii_lowercase();
    attr("standard_name") == Some("longitude")
        || attr("units").is_some_and(|u| EAST.iter().any(|e| e.eq_ignore_ascii_case(u)))
        || lower == "lon"
        || lower == "longitude"
}

/// Whether the coordinate array of `array`'s y dimension is a CF
/// coordinate (it has `units`, `standard_name` or `axis`, or is named
/// `lat` / `latitude`, which GDAL's netCDF driver takes for latitudes),
/// not a bare index such as the dimension scales of plain HDF5 files,
/// which GDAL's HDF5 driver serves as stored.
pub fn y_is_cf_coordinate(index: &Index, array: &Array) -> bool {
    let names = array.meta.dimension_names.as_deref().unwrap_or_default();
    let Some(name) = names.len().checked_sub(2).map(|i| &names[i]) else {
        return false;
    };
    let lower = name.to_ascii_lowercase();
    coordinate_array(index, array, name).is_some_and(|c| {
        lower == "lat"
            || lower == "latitude"
            || ["units", "standard_name", "axis"]
                .iter()
                .any(|k| c.meta.attributes.contains_key(*k))
    })
}

/// The array named `name` in `array`'s group or the nearest parent holding one.
fn coordinate_array<'a>(index: &'a Index, array: &Array, name: &str) -> Option<&'a Array> {
    super::parents(&array.meta.path).find_map(|g| {
        let path = if g.is_empty() {
            name.to_string()
        } else {
            format!("{g}/{name}")
        };
        index.array(&path)
    })
}

/// Every element of the 1-D array `coord` of `len` elements, as f64; a
/// chunk that cannot be read is a warning and no values.
fn values_1d(
    index: &Index,
    locations: &Locations,
    coord: &Array,
    len: u64,
    warnings: &mut Vec<String>,
) -> Option<Vec<f64>> {
    let m = &coord.meta;
    if m.shape != [len] || !(1..=MAX_COORDINATES).contains(&len) {
        return None;
    }
    let mut values = Vec::with_capacity(len as usize);
    for c in 0..m.grid_shape()[0] {
        match read_chunk(index, locations, coord, &[c]) {
            Ok(Some(bytes)) => {
                values.extend(to_f64(m.dtype.kind, m.dtype.size, m.dtype.order, &bytes)?)
            }
            Ok(None) => return None, // unwritten coordinates carry no georeferencing
            Err(e) => {
                warnings.push(format!(
                    "coordinate array '{}' is not used for georeferencing: {e}",
                    m.path
                ));
                return None;
            }
        }
    }
    values.truncate(len as usize);
    (values.len() as u64 == len).then_some(values)
}

/// True when `v` strictly increases or strictly decreases.
fn monotonic(v: &[f64]) -> bool {
    v.windows(2).all(|p| p[0] < p[1]) || v.windows(2).all(|p| p[0] > p[1])
}

/// Decodes numeric elements to f64.
fn to_f64(kind: ScalarKind, size: usize, order: ByteOrder, bytes: &[u8]) -> Option<Vec<f64>> {
    let big = order == ByteOrder::Big;
    let conv = |c: &[u8]| -> Option<f64> {
        let mut b = [0u8; 8];
        b[..size].copy_from_slice(c);
        if big {
            b[..size].reverse();
        }
        let u = u64::from_le_bytes(b);
        Some(match (kind, size) {
            (ScalarKind::Float, 2) => f64::from(half::f16::from_bits(u as u16)),
            (ScalarKind::Float, 4) => f32::from_bits(u as u32) as f64,
            (ScalarKind::Float, 8) => f64::from_bits(u),
            (ScalarKind::UInt, _) => u as f64,
            (ScalarKind::Int, _) => {
                let shift = 64 - 8 * size as u32;
                ((u << shift) as i64 >> shift) as f64
            }
            _ => return None,
        })
    };
    bytes.chunks_exact(size).map(conv).collect()
}

/// (first value, step) of regularly spaced values.
fn regular(v: &[f64]) -> Option<(f64, f64)> {
    let n = v.len();
    let step = (v[n - 1] - v[0]) / (n - 1) as f64;
    if step == 0.0 || !step.is_finite() {
        return None;
    }
    v.iter()
        .enumerate()
        .all(|(i, &x)| (x - (v[0] + i as f64 * step)).abs() <= SPACING_TOLERANCE * step.abs())
        .then_some((v[0], step))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_and_irregular() {
        assert_eq!(regular(&[0.5, 1.5, 2.5]), Some((0.5, 1.0)));
        assert_eq!(regular(&[10.0, 8.0, 6.0]), Some((10.0, -2.0)));
        assert_eq!(regular(&[0.0, 1.0, 3.0]), None);
        assert_eq!(regular(&[1.0, 1.0]), None);
        assert!(monotonic(&[0.0, 1.0, 3.0]) && monotonic(&[3.0, 1.0, 0.0]));
        assert!(!monotonic(&[0.0, 2.0, 1.0]) && !monotonic(&[1.0, 1.0]));
    }

    #[test]
    fn longitudes_wrapping_once_move_west() {
        let mut xs = vec![180.5, 270.5, 359.5, 0.5, 90.5, 179.5];
        unwrap_longitudes(&mut xs);
        assert_eq!(xs, [-179.5, -89.5, -0.5, 0.5, 90.5, 179.5]);
        let mut decreasing = vec![30.0, 20.0, 10.0];
        unwrap_longitudes(&mut decreasing);
        assert_eq!(decreasing, [30.0, 20.0, 10.0]);
    }

    #[test]
    fn decodes_elements() {
        let be = [0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0];
        assert_eq!(
            to_f64(ScalarKind::Float, 4, ByteOrder::Big, &be),
            Some(vec![1.0, -2.0])
        );
        let le = (-3i16).to_le_bytes();
        assert_eq!(
            to_f64(ScalarKind::Int, 2, ByteOrder::Little, &le),
            Some(vec![-3.0])
        );
    }
}
