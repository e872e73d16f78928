//! 1-D coordinate arrays (`x`/`y`, `X`/`Y` as GDAL's Zarr driver writes
//! them, `lon`/`lat`, ...) named after an array's last two dimensions,
//! turned into a geotransform when their values are regularly spaced, named
//! as geolocation arrays when they are not.

use crate::chunk::{read_chunk, Locations};
use crate::index::{Array, Index};
use crate::zarr::dtype::{ByteOrder, ScalarKind};

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
    let (x_path, xs) = coordinate(index, locations, array, &names[n - 1], w, warnings)?;
    match (regular(&xs), regular(&ys)) {
        (Some((x0, dx)), Some((y0, dy))) => Some(Grid::Regular(super::node_to_corner([
            x0, dx, 0.0, y0, 0.0, dy,
        ]))),
        _ if monotonic(&xs) && monotonic(&ys) => Some(Grid::Irregular([x_path, y_path])),
        _ => None,
    }
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
    let coord = super::parents(&array.meta.path).find_map(|g| {
        let path = if g.is_empty() {
            name.to_string()
        } else {
            format!("{g}/{name}")
        };
        index.array(&path)
    })?;
    let m = &coord.meta;
    if m.shape != [len] || !(2..=MAX_COORDINATES).contains(&len) {
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
    (values.len() as u64 == len).then(|| (m.path.clone(), values))
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
