//! [`super::geo`] for a build without GDAL (no `gdal` feature): each
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

/// Needs `GDALGCPsToGeoTransform`: none.
pub fn fit_geotransform(_points: &[ControlPoint]) -> Option<[f64; 6]> {
    needs_gdal("the affine fit of image corners");
    None
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
