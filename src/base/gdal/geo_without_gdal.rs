//! [`super::geo`] for a build without GDAL (no `gdal` feature): the affine
//! fit of control points is computed here as GDAL computes it; every other
//! function needs GDAL's OSR, so each says so in a warning (once per
//! process) and gives nothing; the index then carries no CRS where GDAL
//! would have made one.

use std::sync::Mutex;

use super::cpl::raise_warning;
use super::crs_params::{ControlPoint, Earth, GribProjection};

/// Warns, once per `what`, that `what` needs GDAL.
fn needs_gdal(what: &'static str) {
    static WARNED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut warned = WARNED.lock().unwrap_or_else(|p| p.into_inner());
    if !warned.contains(&what) {
        warned.push(what);
        raise_warning(&format!(
            "chunkref: {what} needs GDAL's OSR, and this chunkref was built without the \
             `gdal` feature: left out"
        ));
    }
}

/// Needs OSR: false (axes as written).
pub fn epsg_axes_swapped(_code: u32) -> bool {
    needs_gdal("the axis order of an EPSG CRS");
    false
}

/// The geotransform through `points`, fitted as GDAL fits ground control
/// points (`GDALGCPsToGeoTransform`, exact fit): two points give scales
/// alone; four corners of an upright rectangle (top-left, top-right,
/// bottom-right, bottom-left) give it directly; otherwise a least-squares
/// affine fit in coordinates normalised to 0..1, refused (None) when a
/// point lies more than a quarter pixel off it. The arithmetic is done in
/// GDAL's order, so the index holds the numbers a GDAL build writes.
pub fn fit_geotransform(points: &[ControlPoint]) -> Option<[f64; 6]> {
    let n = points.len();
    let pixel = |i: usize| points[i].0 .0;
    let line = |i: usize| points[i].0 .1;
    let gx = |i: usize| points[i].1 .0;
    let gy = |i: usize| points[i].1 .1;
    // An upright transform through point 0: the x scale from point 0 to
    // point `along`, the y scale from point `from` to point `down`.
    let upright = |along: usize, down: usize, from: usize| {
        let dx = (gx(along) - gx(0)) / (pixel(along) - pixel(0));
        let dy = (gy(down) - gy(from)) / (line(down) - line(from));
        Some([
            gx(0) - pixel(0) * dx,
            dx,
            0.0,
            gy(0) - line(0) * dy,
            0.0,
            dy,
        ])
    };
    if n < 2 {
        return None;
    }
    if n == 2 {
        if pixel(1) == pixel(0) || line(1) == line(0) {
            return None;
        }
        return upright(1, 1, 0);
    }
    let upright_corners = n == 4
        && line(0) == line(1)
        && line(2) == line(3)
        && pixel(0) == pixel(3)
        && pixel(1) == pixel(2)
        && line(0) != line(2)
        && pixel(0) != pixel(1)
        && gy(0) == gy(1)
        && gy(2) == gy(3)
        && gx(0) == gx(3)
        && gx(1) == gx(2)
        && gy(0) != gy(2)
        && gx(0) != gx(1);
    if upright_corners {
        return upright(1, 2, 1);
    }
    least_squares_fit(points)
}

/// The general case of [`fit_geotransform`].
fn least_squares_fit(points: &[ControlPoint]) -> Option<[f64; 6]> {
    let range = |values: &mut dyn Iterator<Item = f64>| {
        let first = values.next()?;
        Some(values.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v))))
    };
    let (p0, p1) = range(&mut points.iter().map(|p| p.0 .0))?;
    let (l0, l1) = range(&mut points.iter().map(|p| p.0 .1))?;
    let (x0, x1) = range(&mut points.iter().map(|p| p.1 .0))?;
    let (y0, y1) = range(&mut points.iter().map(|p| p.1 .1))?;
    const EPS: f64 = 1.0e-12;
    if [p1 - p0, l1 - l0, x1 - x0, y1 - y0]
        .iter()
        .any(|d| d.abs() < EPS)
    {
        return None; // degenerate along an axis
    }
    // Scale and shift both sides to 0..1 (upright transforms).
    let to_unit = |lo: f64, hi: f64, lo2: f64, hi2: f64| {
        [
            -lo / (hi - lo),
            1.0 / (hi - lo),
            0.0,
            -lo2 / (hi2 - lo2),
            0.0,
            1.0 / (hi2 - lo2),
        ]
    };
    let image_unit = to_unit(p0, p1, l0, l1);
    let ground_unit = to_unit(x0, x1, y0, y1);
    let (mut sx, mut sy, mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut su, mut sux, mut suy, mut sv, mut svx, mut svy) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for &((pixel, line), (gx, gy)) in points {
        let (x, y) = apply(&image_unit, pixel, line);
        let (u, v) = apply(&ground_unit, gx, gy);
        sx += x;
        sy += y;
        sxy += x * y;
        sxx += x * x;
        syy += y * y;
        su += u;
        sux += u * x;
        suy += u * y;
        sv += v;
        svx += v * x;
        svy += v * y;
    }
    let n = points.len() as f64;
    let divisor = n * (sxx * syy - sxy * sxy) + 2.0 * sx * sy * sxy - sy * sy * sxx - sx * sx * syy;
    if divisor == 0.0 {
        return None;
    }
    // Cramer's rule on the normal equations, for u and for v.
    let origin = |s: f64, s_x: f64, s_y: f64| {
        (s * (sxx * syy - sxy * sxy) + s_x * (sy * sxy - sx * syy) + s_y * (sx * sxy - sy * sxx))
            / divisor
    };
    let along_x = |s: f64, s_x: f64, s_y: f64| {
        (s * (sy * sxy - sx * syy) + s_x * (n * syy - sy * sy) + s_y * (sx * sy - sxy * n))
            / divisor
    };
    let along_y = |s: f64, s_x: f64, s_y: f64| {
        (s * (sx * sxy - sy * sxx) + s_x * (sx * sy - n * sxy) + s_y * (n * sxx - sx * sx))
            / divisor
    };
    let unit_fit = [
        origin(su, sux, suy),
        along_x(su, sux, suy),
        along_y(su, sux, suy),
        origin(sv, svx, svy),
        along_x(sv, svx, svy),
        along_y(sv, svx, svy),
    ];
    let ground_back = [
        -ground_unit[0] / ground_unit[1],
        1.0 / ground_unit[1],
        0.0,
        -ground_unit[3] / ground_unit[5],
        0.0,
        1.0 / ground_unit[5],
    ];
    let gt = compose(&compose(&image_unit, &unit_fit), &ground_back);
    // An exact fit only: every point within a quarter pixel.
    let pixel_size = 0.5 * (gt[1].abs() + gt[2].abs() + gt[4].abs() + gt[5].abs());
    if pixel_size == 0.0 {
        return None;
    }
    let tolerance = 0.25 * pixel_size;
    let fits = points.iter().all(|&((pixel, line), (x, y))| {
        let ex = (pixel * gt[1] + line * gt[2] + gt[0]) - x;
        let ey = (pixel * gt[4] + line * gt[5] + gt[3]) - y;
        ex.abs() <= tolerance && ey.abs() <= tolerance
    });
    fits.then_some(gt)
}

/// `gt` applied to (`x`, `y`).
fn apply(gt: &[f64; 6], x: f64, y: f64) -> (f64, f64) {
    (gt[0] + x * gt[1] + y * gt[2], gt[3] + x * gt[4] + y * gt[5])
}

/// `first`, then `second`, as one geotransform.
fn compose(first: &[f64; 6], second: &[f64; 6]) -> [f64; 6] {
    [
        second[1] * first[0] + second[2] * first[3] + second[0] * 1.0,
        second[1] * first[1] + second[2] * first[4],
        second[1] * first[2] + second[2] * first[5],
        second[4] * first[0] + second[5] * first[3] + second[3] * 1.0,
        second[4] * first[1] + second[5] * first[4],
        second[4] * first[2] + second[5] * first[5],
    ]
}

/// Needs OSR: none.
pub fn proj4_of_wkt(_wkt: &str) -> Option<String> {
    needs_gdal("the PROJ string of a WKT CRS");
    None
}

/// Needs OSR: none.
pub fn gml_crs_wkt2(_xml: &str) -> Option<String> {
    needs_gdal("the CRS of a GML definition");
    None
}

/// Needs OSR: none.
pub fn grib_crs(
    _projection: Option<GribProjection>,
    _earth: Earth,
    _lon: f64,
    _lat: f64,
) -> Option<(String, f64, f64)> {
    needs_gdal("the CRS of a GRIB2 grid");
    None
}

/// Needs OSR: none.
pub fn arc_polar_zone(_north: bool, _points: &[(f64, f64)]) -> Option<(String, Vec<(f64, f64)>)> {
    needs_gdal("the polar ARC zone CRS of a CADRG frame");
    None
}

/// Needs GDAL's GTiff driver: none.
pub fn geotiff_bytes_crs_wkt2(_bytes: &[u8]) -> Option<String> {
    needs_gdal("the CRS of GeoKeys that are not an EPSG code alone");
    None
}
