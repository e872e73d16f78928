//! Where an array's chunks lie on the ground: the footprint polygons of the
//! FlatGeobuf form. An array is placed by its GeoZarr `spatial:transform`
//! (on the array or a group above it), else by ground control points
//! (`chunkref:gcps`, NITF corners that are no affine frame: a bilinear
//! surface through them, so each chunk's quadrilateral follows the corners),
//! else like the full-resolution array of the index that has GCPs, scaled to
//! its size (overview levels); else, when the chunks can be read, by
//! coordinate values: 1-D coordinate arrays of its y and x dimensions (a
//! chunk's footprint spans its cells), or the 2-D longitude / latitude arrays
//! its CF `coordinates` attribute names (swaths, curvilinear grids: the
//! bounding box of the chunk's pixels and their neighbours); else in pixel
//! coordinates (GDAL's default).

use serde_json::Value;

use crate::conventions::attributes::{gcps, GCPS_ATTRIBUTE};
use crate::index::zarr::ArrayMeta;
use crate::index::{split_key, Array, Index};

/// How an array's pixel (column, row) maps to coordinates.
#[derive(Debug, Clone)]
pub enum Placement {
    /// `[a, b, c, d, e, f]`: x = a col + b row + c, y = d col + e row + f.
    Affine([f64; 6]),
    /// x and y as `k0 + k1 u + k2 v + k3 u v` of the array's relative
    /// position (u = col / width, v = row / height).
    Bilinear([f64; 4], [f64; 4]),
    /// The coordinates of the pixel centres along x and along y.
    Axes(Vec<f64>, Vec<f64>),
    /// The x and y coordinates of every pixel (row-major).
    Swath(Vec<f64>, Vec<f64>),
}

/// Where an array's chunks lie: its placement, chunk shape (y, x) and size
/// (y, x).
#[derive(Debug, Clone)]
pub struct Geometry(Placement, [u64; 2], [u64; 2]);

impl Geometry {
    /// The footprint of chunk (`y`, `x`): its pixel rectangle, clipped to
    /// the array, through the placement (a closed ring).
    pub fn footprint(&self, y: u32, x: u32) -> [(f64, f64); 5] {
        let Geometry(ref placement, [ch, cw], [h, w]) = *self;
        let (y, x) = (u64::from(y), u64::from(x));
        let (r0, c0) = (y * ch, x * cw);
        let (r1, c1) = (((y + 1) * ch).min(h), ((x + 1) * cw).min(w));
        let rectangle = |(x0, y0): (f64, f64), (x1, y1): (f64, f64)| {
            [(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)]
        };
        match placement {
            Placement::Axes(xs, ys) => rectangle(
                (edge(xs, c0 as usize), edge(ys, r0 as usize)),
                (edge(xs, c1 as usize), edge(ys, r1 as usize)),
            ),
            Placement::Swath(xs, ys) => {
                // Neighbouring pixels too: the chunk's cells reach halfway.
                let rows = r0.saturating_sub(1) as usize..(r1 + 1).min(h) as usize;
                let cols = c0.saturating_sub(1) as usize..(c1 + 1).min(w) as usize;
                let (mut lo, mut hi) = ((f64::MAX, f64::MAX), (f64::MIN, f64::MIN));
                for r in rows {
                    for i in cols.clone().map(|c| r * w as usize + c) {
                        if xs[i].is_finite() && ys[i].is_finite() {
                            lo = (lo.0.min(xs[i]), lo.1.min(ys[i]));
                            hi = (hi.0.max(xs[i]), hi.1.max(ys[i]));
                        }
                    }
                }
                rectangle(lo, hi)
            }
            _ => {
                let at = |c: u64, r: u64| self.apply(c as f64, r as f64);
                [at(c0, r0), at(c1, r0), at(c1, r1), at(c0, r1), at(c0, r0)]
            }
        }
    }

    /// True when the placement came from coordinate values (not from the
    /// metadata alone).
    pub fn from_coordinates(&self) -> bool {
        matches!(self.0, Placement::Axes(..) | Placement::Swath(..))
    }

    fn apply(&self, col: f64, row: f64) -> (f64, f64) {
        match self.0 {
            Placement::Affine([a, b, c, d, e, f]) => (a * col + b * row + c, d * col + e * row + f),
            Placement::Bilinear(kx, ky) => {
                let [h, w] = self.2;
                let (u, v) = (col / w.max(1) as f64, row / h.max(1) as f64);
                let f = |k: [f64; 4]| k[0] + k[1] * u + k[2] * v + k[3] * u * v;
                (f(kx), f(ky))
            }
            Placement::Axes(..) | Placement::Swath(..) => (col, row),
        }
    }
}

/// The coordinate of the edge before cell `i` of centres `v` (`i` may be
/// `v.len()`: the far edge); edges lie halfway between centres.
fn edge(v: &[f64], i: usize) -> f64 {
    let n = v.len();
    match (i, n) {
        (_, 0) => i as f64,
        (_, 1) => v[0] + i as f64 - 0.5,
        (0, _) => v[0] - (v[1] - v[0]) / 2.0,
        (i, n) if i >= n => v[n - 1] + (v[n - 1] - v[n - 2]) / 2.0,
        (i, _) => (v[i - 1] + v[i]) / 2.0,
    }
}

/// The [`Geometry`] of every array of `index`; arrays placed by no
/// metadata are placed by `by_values` (the writer's reading of their
/// coordinate arrays' values: [`Placement::Axes`] or [`Placement::Swath`]),
/// else in pixel coordinates.
pub fn geometries(index: &Index, by_values: impl Fn(&Array) -> Option<Placement>) -> Vec<Geometry> {
    let by_gcps = index
        .arrays
        .iter()
        .find_map(|a| Some((gcp_surface(&a.meta)?, size(&a.meta.shape))));
    index
        .arrays
        .iter()
        .map(|a| {
            let m = &a.meta;
            let placement = affine(index, m)
                .or_else(|| gcp_surface(m))
                .or_else(|| by_gcps.clone().map(|(p, _)| p))
                .or_else(|| by_values(a))
                .unwrap_or(Placement::Affine([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]));
            Geometry(placement, size(&m.chunks), size(&m.shape))
        })
        .collect()
}

/// The EPSG code of the layer: the first array's `proj:code`, else that of
/// the GCPs, if any (0: unknown).
pub fn layer_epsg(index: &Index) -> i32 {
    let first = index.arrays.first().map(|a| &a.meta);
    let proj = first.and_then(|m| inherited(index, m, "proj:code"));
    let gcp_crs = index
        .arrays
        .iter()
        .find_map(|a| a.meta.attributes.get(GCPS_ATTRIBUTE)?.get("crs"));
    proj.or(gcp_crs)
        .and_then(Value::as_str)
        .and_then(|c| c.strip_prefix("EPSG:"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The last two extents of `v` as (y, x), 1 where missing.
fn size(v: &[u64]) -> [u64; 2] {
    match v.len() {
        0 => [1, 1],
        1 => [1, v[0]],
        n => [v[n - 2], v[n - 1]],
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

/// The array's `spatial:transform`, if any.
fn affine(index: &Index, meta: &ArrayMeta) -> Option<Placement> {
    let t: Vec<f64> = inherited(index, meta, "spatial:transform")?
        .as_array()?
        .iter()
        .map(Value::as_f64)
        .collect::<Option<_>>()?;
    Some(Placement::Affine(t.try_into().ok()?))
}

/// The bilinear surface through the array's ground control points (least
/// squares; an affine plane through 3), if it has at least 3.
fn gcp_surface(meta: &ArrayMeta) -> Option<Placement> {
    let (points, _) = gcps(&meta.attributes)?;
    let [h, w] = size(&meta.shape);
    let terms = if points.len() >= 4 { 4 } else { 3 };
    if points.len() < 3 {
        return None;
    }
    let basis = |p: &[f64; 5]| {
        let (u, v) = (p[0] / w.max(1) as f64, p[1] / h.max(1) as f64);
        [1.0, u, v, u * v]
    };
    let fit = |target: usize| -> Option<[f64; 4]> {
        // Normal equations of the first `terms` basis functions.
        let mut m = [[0.0f64; 5]; 4];
        for p in &points {
            let b = basis(p);
            for i in 0..terms {
                for j in 0..terms {
                    m[i][j] += b[i] * b[j];
                }
                m[i][4] += b[i] * p[target];
            }
        }
        let mut k = solve(&mut m, terms)?;
        k[terms..].iter_mut().for_each(|c| *c = 0.0);
        Some(k)
    };
    Some(Placement::Bilinear(fit(2)?, fit(3)?))
}

/// Solves the `n` x `n` system in `m` (augmented column 4) by Gaussian
/// elimination with partial pivoting; `None` when it is singular.
fn solve(m: &mut [[f64; 5]; 4], n: usize) -> Option<[f64; 4]> {
    for col in 0..n {
        let pivot = (col..n).max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))?;
        if m[pivot][col].abs() < 1e-12 {
            return None;
        }
        m.swap(col, pivot);
        for row in 0..n {
            if row != col {
                let f = m[row][col] / m[col][col];
                let pivot_row = m[col];
                for (x, p) in m[row].iter_mut().zip(pivot_row).skip(col) {
                    *x -= f * p;
                }
            }
        }
    }
    let mut out = [0.0; 4];
    for (i, o) in out.iter_mut().enumerate().take(n) {
        *o = m[i][4] / m[i][i];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(attrs: Value) -> ArrayMeta {
        let zarray = json!({"shape": [1, 80, 100], "chunks": [1, 40, 50], "dtype": "|u1",
            "fill_value": 0, "compressor": null, "filters": null, "order": "C", "zarr_format": 2});
        ArrayMeta::from_v2("0/data", &zarray, Some(&attrs)).unwrap()
    }

    #[test]
    fn gcp_corners_place_chunks_on_a_bilinear_surface() {
        let corners = [
            [0.0, 0.0, 10.0, 50.0],
            [100.0, 0.0, 11.0, 50.2],
            [100.0, 80.0, 11.1, 49.0],
            [0.0, 80.0, 9.9, 49.1],
        ];
        let m = meta(json!({GCPS_ATTRIBUTE: {"crs": "EPSG:4326", "points": corners}}));
        let g = Geometry(gcp_surface(&m).unwrap(), size(&m.chunks), size(&m.shape));
        for c in corners {
            let (x, y) = g.apply(c[0], c[1]);
            assert!(
                (x - c[2]).abs() < 1e-9 && (y - c[3]).abs() < 1e-9,
                "{c:?}: {x} {y}"
            );
        }
        // The bottom-right chunk ends at the bottom-right corner.
        let ring = g.footprint(1, 1);
        assert!((ring[2].0 - 11.1).abs() < 1e-9 && (ring[2].1 - 49.0).abs() < 1e-9);
        // Three points: an affine plane.
        let m = meta(json!({GCPS_ATTRIBUTE: {"crs": "EPSG:4326", "points": &corners[..3]}}));
        let Some(Placement::Bilinear(kx, _)) = gcp_surface(&m) else {
            panic!()
        };
        assert_eq!(kx[3], 0.0);
        assert!(gcp_surface(&meta(json!({}))).is_none());
    }
}
