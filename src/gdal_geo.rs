//! Geodesy the index builders ask of libgdal (linked already), so that
//! indexes say what GDAL's own drivers say: the axis order EPSG gives a CRS
//! (OSR) and the affine fit of image corners (`GDALGCPsToGeoTransform`).

#![allow(unsafe_code)]

use std::ffi::{c_char, c_double, c_int, c_void};

type OgrSrsH = *mut c_void;

/// GDAL's `GDAL_GCP`.
#[repr(C)]
struct Gcp {
    id: *mut c_char,
    info: *mut c_char,
    pixel: c_double,
    line: c_double,
    x: c_double,
    y: c_double,
    z: c_double,
}

extern "C" {
    fn GDALGCPsToGeoTransform(
        count: c_int,
        gcps: *const Gcp,
        transform: *mut c_double,
        approx_ok: c_int,
    ) -> c_int;
    fn OSRNewSpatialReference(wkt: *const std::ffi::c_char) -> OgrSrsH;
    fn OSRDestroySpatialReference(srs: OgrSrsH);
    fn OSRImportFromEPSG(srs: OgrSrsH, code: c_int) -> c_int;
    fn OSREPSGTreatsAsLatLong(srs: OgrSrsH) -> c_int;
    fn OSREPSGTreatsAsNorthingEasting(srs: OgrSrsH) -> c_int;
}

/// An OSR handle destroyed on drop.
struct Srs(OgrSrsH);

impl Srs {
    fn new() -> Option<Srs> {
        // SAFETY: a NULL definition makes an empty spatial reference.
        let h = unsafe { OSRNewSpatialReference(std::ptr::null()) };
        (!h.is_null()).then_some(Srs(h))
    }
}

impl Drop for Srs {
    fn drop(&mut self) {
        // SAFETY: the handle came from OSRNewSpatialReference, freed once.
        unsafe { OSRDestroySpatialReference(self.0) };
    }
}

/// True when EPSG orders the axes of CRS `code` latitude/northing first
/// (EPSG:4326, some national grids): GML coordinates of such a CRS come in
/// that order. False for unknown codes.
pub fn epsg_axes_swapped(code: u32) -> bool {
    let Ok(code) = c_int::try_from(code) else {
        return false;
    };
    let Some(srs) = Srs::new() else {
        return false;
    };
    // SAFETY: a live handle; OSR only reads the code.
    unsafe {
        OSRImportFromEPSG(srs.0, code) == 0
            && (OSREPSGTreatsAsLatLong(srs.0) != 0 || OSREPSGTreatsAsNorthingEasting(srs.0) != 0)
    }
}

/// A ground control point: ((pixel, line), (x, y)).
pub type ControlPoint = ((f64, f64), (f64, f64));

/// The GDAL geotransform through `points` as
/// GDAL fits it to ground control points (`GDALGCPsToGeoTransform`, exact
/// fit: None when no affine transform passes within a quarter pixel).
pub fn fit_geotransform(points: &[ControlPoint]) -> Option<[f64; 6]> {
    let gcps: Vec<Gcp> = points
        .iter()
        .map(|&((pixel, line), (x, y))| Gcp {
            id: std::ptr::null_mut(),
            info: std::ptr::null_mut(),
            pixel,
            line,
            x,
            y,
            z: 0.0,
        })
        .collect();
    let mut gt = [0.0; 6];
    let count = c_int::try_from(gcps.len()).ok()?;
    // SAFETY: `count` GCPs (GDAL only reads their numbers) and room for six
    // doubles.
    let ok = unsafe { GDALGCPsToGeoTransform(count, gcps.as_ptr(), gt.as_mut_ptr(), 0) };
    (ok != 0).then_some(gt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_epsg_axis_order() {
        assert!(epsg_axes_swapped(4326));
        assert!(!epsg_axes_swapped(32633));
        assert!(!epsg_axes_swapped(3857));
        assert!(!epsg_axes_swapped(999_999_999));
    }

    #[test]
    fn fits_corners() {
        let gt = fit_geotransform(&[
            ((0.5, 0.5), (10.5, 19.5)),
            ((9.5, 0.5), (19.5, 19.5)),
            ((9.5, 4.5), (19.5, 15.5)),
            ((0.5, 4.5), (10.5, 15.5)),
        ])
        .unwrap();
        let want = [10.0, 1.0, 0.0, 20.0, 0.0, -1.0];
        assert!(
            gt.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-9),
            "{gt:?}"
        );
        // A quadrilateral no affine transform fits.
        assert!(fit_geotransform(&[
            ((0.5, 0.5), (0.0, 10.0)),
            ((9.5, 0.5), (10.0, 10.0)),
            ((9.5, 4.5), (30.0, 0.0)),
            ((0.5, 4.5), (0.0, 0.0)),
        ])
        .is_none());
    }
}
