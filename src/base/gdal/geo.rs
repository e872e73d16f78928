//! Geodesy the index builders ask of libgdal (linked already), so that
//! indexes say what GDAL's own drivers say: the axis order EPSG gives a CRS
//! (OSR), the affine fit of image corners (`GDALGCPsToGeoTransform`), the
//! CRS GDAL's GTiff driver makes of GeoKeys that name no EPSG code, the
//! CRS OSR reads from a GML definition, and the polar ARC zone CRS (and
//! corners projected into it) GDAL's NITF driver gives CADRG polar frames.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::atomic::{AtomicU64, Ordering};

use super::crs_params::{ControlPoint, Earth, GribProjection};

// GDAL's C API as `gdal-sys` generates it from the headers (bindgen).
use gdal_sys::{
    CPLPopErrorHandler, CPLPushErrorHandler, CPLQuietErrorHandler, GDALClose,
    GDALGCPsToGeoTransform, GDALGetSpatialRef, GDALOpenEx, OCTDestroyCoordinateTransformation,
    OCTNewCoordinateTransformation, OCTTransform, OGRSpatialReferenceH as OgrSrsH,
    OSRAxisMappingStrategy, OSRCloneGeogCS, OSRDestroySpatialReference, OSREPSGTreatsAsLatLong,
    OSREPSGTreatsAsNorthingEasting, OSRExportToProj4, OSRExportToWktEx, OSRImportFromEPSG,
    OSRImportFromWkt, OSRImportFromXML, OSRNewSpatialReference, OSRSetAxisMappingStrategy,
    OSRSetGeogCS, OSRSetLCC, OSRSetMercator2SP, OSRSetPS, OSRSetWellKnownGeogCS, VSIFCloseL,
    VSIFileFromMemBuffer, VSIFree, VSIUnlink, GDAL_GCP,
};

/// `GDAL_OF_RASTER` (a macro of gdal.h, not in the generated bindings).
const GDAL_OF_RASTER: u32 = 0x02;

extern "C" {
    /// In gdal_frmts.h, which `gdal-sys` does not bind.
    fn GDALRegister_GTiff();
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
        // SAFETY: a handle from OSRNewSpatialReference or OSRCloneGeogCS,
        // freed once.
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

/// The GDAL geotransform through `points` as
/// GDAL fits it to ground control points (`GDALGCPsToGeoTransform`, exact
/// fit: None when no affine transform passes within a quarter pixel).
pub fn fit_geotransform(points: &[ControlPoint]) -> Option<[f64; 6]> {
    let gcps: Vec<GDAL_GCP> = points
        .iter()
        .map(|&((pixel, line), (x, y))| GDAL_GCP {
            pszId: std::ptr::null_mut(),
            pszInfo: std::ptr::null_mut(),
            dfGCPPixel: pixel,
            dfGCPLine: line,
            dfGCPX: x,
            dfGCPY: y,
            dfGCPZ: 0.0,
        })
        .collect();
    let mut gt = [0.0; 6];
    let count = c_int::try_from(gcps.len()).ok()?;
    // SAFETY: `count` GCPs (GDAL only reads their numbers) and room for six
    // doubles.
    let ok = unsafe { GDALGCPsToGeoTransform(count, gcps.as_ptr(), gt.as_mut_ptr(), 0) };
    (ok != 0).then_some(gt)
}

/// WKT2 (2019) of an OSR handle, None when OSR cannot write it.
///
/// # Safety
/// `srs` is NULL or a live OSR handle.
unsafe fn wkt2(srs: OgrSrsH) -> Option<String> {
    if srs.is_null() {
        return None;
    }
    let format = c"FORMAT=WKT2_2019";
    let options = [format.as_ptr(), std::ptr::null()];
    let mut text: *mut c_char = std::ptr::null_mut();
    // SAFETY: a live handle, a NULL-terminated option list; the text is
    // copied, then freed once.
    unsafe {
        let ok = OSRExportToWktEx(srs, &mut text, options.as_ptr()) == 0;
        let wkt =
            (ok && !text.is_null()).then(|| CStr::from_ptr(text).to_string_lossy().into_owned());
        if !text.is_null() {
            VSIFree(text.cast());
        }
        wkt.filter(|w| !w.is_empty())
    }
}

/// The PROJ string OSR writes of a WKT CRS (`OSRExportToProj4`), as
/// GDAL's drivers make it.
pub fn proj4_of_wkt(wkt: &str) -> Option<String> {
    let wkt = CString::new(wkt).ok()?;
    let srs = Srs::new()?;
    let mut cursor = wkt.as_ptr() as *mut c_char;
    let mut text: *mut c_char = std::ptr::null_mut();
    // SAFETY: a live handle; OSR reads the C string through the cursor
    // (advancing it, not writing); the text it returns is copied, then
    // freed once. Errors are kept quiet and the handler popped.
    unsafe {
        CPLPushErrorHandler(Some(CPLQuietErrorHandler));
        let ok =
            OSRImportFromWkt(srs.0, &mut cursor) == 0 && OSRExportToProj4(srs.0, &mut text) == 0;
        CPLPopErrorHandler();
        let proj =
            (ok && !text.is_null()).then(|| CStr::from_ptr(text).to_string_lossy().into_owned());
        if !text.is_null() {
            VSIFree(text.cast());
        }
        proj.filter(|p| !p.is_empty())
    }
}

/// The CRS OSR reads from a GML CRS definition (a GMLJP2 dictionary
/// entry), as WKT2 (2019).
pub fn gml_crs_wkt2(xml: &str) -> Option<String> {
    let xml = CString::new(xml).ok()?;
    let srs = Srs::new()?;
    // SAFETY: a live handle and a valid C string; errors are kept quiet and
    // the handler popped on this thread.
    unsafe {
        CPLPushErrorHandler(Some(CPLQuietErrorHandler));
        let ok = OSRImportFromXML(srs.0, xml.as_ptr()) == 0;
        CPLPopErrorHandler();
        if ok {
            wkt2(srs.0)
        } else {
            None
        }
    }
}

/// The CRS GDAL's GRIB driver makes of a grid (`projection` on `earth`,
/// geographic when `None`), as WKT2 (2019), and the point (`lon`, `lat`)
/// in its coordinates (where GDAL places the first grid point); None when
/// OSR cannot make the CRS or transform the point.
pub fn grib_crs(
    projection: Option<GribProjection>,
    earth: Earth,
    lon: f64,
    lat: f64,
) -> Option<(String, f64, f64)> {
    let srs = Srs::new()?;
    // SAFETY: live handles (the geographic one destroyed by its guard, the
    // transformation once, after use), valid C strings, one point; errors
    // are kept quiet and the handler popped on this thread.
    unsafe {
        CPLPushErrorHandler(Some(CPLQuietErrorHandler));
        let set = match projection {
            None => 0,
            Some(GribProjection::Mercator { lat_ts }) => {
                OSRSetMercator2SP(srs.0, lat_ts, 0.0, 0.0, 0.0, 0.0)
            }
            Some(GribProjection::PolarStereographic { lat_ts, lon_0 }) => {
                OSRSetPS(srs.0, lat_ts, lon_0, 1.0, 0.0, 0.0)
            }
            Some(GribProjection::Lambert {
                lat_1,
                lat_2,
                lat_0,
                lon_0,
            }) => OSRSetLCC(srs.0, lat_1, lat_2, lat_0, lon_0, 0.0, 0.0),
        };
        let name = c"Coordinate System imported from GRIB file";
        let figure = match earth {
            Earth::Wgs84 => OSRSetWellKnownGeogCS(srs.0, c"WGS84".as_ptr()),
            Earth::Ellipsoid { a, inv_f } => {
                let ellipsoid = if inv_f == 0.0 {
                    c"Sphere"
                } else {
                    c"Spheroid imported from GRIB file"
                };
                let none = std::ptr::null();
                OSRSetGeogCS(
                    srs.0,
                    name.as_ptr(),
                    none,
                    ellipsoid.as_ptr(),
                    a,
                    inv_f,
                    none,
                    0.0,
                    none,
                    0.0,
                )
            }
        };
        let mut result = None;
        if set == 0 && figure == 0 {
            result = if projection.is_none() {
                wkt2(srs.0).map(|wkt| (wkt, lon, lat))
            } else {
                projected_point(srs.0, lon, lat)
            };
        }
        CPLPopErrorHandler();
        result
    }
}

/// The WKT2 of the projected CRS `srs` and the point (`lon`, `lat`) of its
/// geographic CRS in its coordinates.
///
/// # Safety
/// `srs` is a live OSR handle.
unsafe fn projected_point(srs: OgrSrsH, lon: f64, lat: f64) -> Option<(String, f64, f64)> {
    // SAFETY: see the caller; the clone and the transformation are freed once.
    unsafe {
        let geographic = OSRCloneGeogCS(srs);
        if geographic.is_null() {
            return None;
        }
        let geographic = Srs(geographic);
        let order = OSRAxisMappingStrategy::OAMS_TRADITIONAL_GIS_ORDER;
        OSRSetAxisMappingStrategy(srs, order);
        OSRSetAxisMappingStrategy(geographic.0, order);
        let ct = OCTNewCoordinateTransformation(geographic.0, srs);
        if ct.is_null() {
            return None;
        }
        let (mut x, mut y, mut z) = (lon, lat, 0.0);
        let ok = OCTTransform(ct, 1, &mut x, &mut y, &mut z) != 0;
        OCTDestroyCoordinateTransformation(ct);
        if ok {
            wkt2(srs).map(|wkt| (wkt, x, y))
        } else {
            None
        }
    }
}

/// The polar ARC zone (9 north, 18 south) GDAL's NITF driver places CADRG
/// polar frames in: azimuthal equidistant on the sphere of radius 6378137
/// m, centred on the pole (written as ESRI WKT, which OSR names as GDAL
/// shows it), as WKT2 (2019), and `points` (WGS 84 longitude, latitude) in
/// it; None when OSR cannot make the CRS or transform a point.
pub fn arc_polar_zone(north: bool, points: &[(f64, f64)]) -> Option<(String, Vec<(f64, f64)>)> {
    let (zone, pole) = if north { (9, 90) } else { (18, -90) };
    let esri = format!(
        "PROJCS[\"ARC_System_Zone_{zone:02}\",GEOGCS[\"GCS_Sphere\",DATUM[\"D_Sphere\",\
         SPHEROID[\"Sphere\",6378137.0,0.0]],PRIMEM[\"Greenwich\",0],\
         UNIT[\"degree\",0.0174532925199433]],PROJECTION[\"Azimuthal_Equidistant\"],\
         PARAMETER[\"latitude_of_center\",{pole}],PARAMETER[\"longitude_of_center\",0],\
         PARAMETER[\"false_easting\",0],PARAMETER[\"false_northing\",0],UNIT[\"metre\",1]]"
    );
    let esri = CString::new(esri).ok()?;
    let (target, source) = (Srs::new()?, Srs::new()?);
    // SAFETY: live handles (destroyed by their guards, the transformation
    // once, after use), a valid C string OSR only reads through the pointer
    // it advances, points transformed in place; errors are kept quiet and
    // the handler popped on this thread.
    unsafe {
        CPLPushErrorHandler(Some(CPLQuietErrorHandler));
        let mut text = esri.as_ptr().cast_mut();
        let order = OSRAxisMappingStrategy::OAMS_TRADITIONAL_GIS_ORDER;
        let mut result = None;
        if OSRImportFromWkt(target.0, &mut text) == 0
            && OSRSetWellKnownGeogCS(source.0, c"WGS84".as_ptr()) == 0
        {
            OSRSetAxisMappingStrategy(target.0, order);
            OSRSetAxisMappingStrategy(source.0, order);
            let ct = OCTNewCoordinateTransformation(source.0, target.0);
            if !ct.is_null() {
                let projected: Option<Vec<(f64, f64)>> = points
                    .iter()
                    .map(|&(lon, lat)| {
                        let (mut x, mut y, mut z) = (lon, lat, 0.0);
                        (OCTTransform(ct, 1, &mut x, &mut y, &mut z) != 0).then_some((x, y))
                    })
                    .collect();
                OCTDestroyCoordinateTransformation(ct);
                result = projected.and_then(|xy| wkt2(target.0).map(|wkt| (wkt, xy)));
            }
        }
        CPLPopErrorHandler();
        result
    }
}

/// The CRS GDAL's GTiff driver reads from the GeoTIFF `name` (a path GDAL
/// opens: a file, or `/vsimem/`), as WKT2 (2019); None when it has none.
fn geotiff_crs_wkt2(name: &str) -> Option<String> {
    let name = CString::new(name).ok()?;
    let gtiff = c"GTiff";
    let drivers = [gtiff.as_ptr(), std::ptr::null()];
    // SAFETY: valid C strings and NULL-terminated lists; the quiet handler
    // is popped on this thread; the dataset is closed once, after its CRS
    // is copied.
    unsafe {
        GDALRegister_GTiff();
        CPLPushErrorHandler(Some(CPLQuietErrorHandler));
        let ds = GDALOpenEx(
            name.as_ptr(),
            GDAL_OF_RASTER,
            drivers.as_ptr(),
            std::ptr::null(),
            std::ptr::null(),
        );
        let mut wkt = None;
        if !ds.is_null() {
            wkt = wkt2(GDALGetSpatialRef(ds));
            GDALClose(ds);
        }
        CPLPopErrorHandler();
        wkt
    }
}

/// [`geotiff_crs_wkt2`] of a GeoTIFF held in memory (the GeoKeys of an
/// image written as a one-pixel TIFF).
pub fn geotiff_bytes_crs_wkt2(bytes: &[u8]) -> Option<String> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = format!("/vsimem/chunkref_geotiff_{}_{n}.tif", std::process::id());
    let c_name = CString::new(name.clone()).ok()?;
    let mut copy = bytes.to_vec();
    // SAFETY: GDAL reads `copy` (not owned, kept alive until the file is
    // unlinked below) under a name unique to this call.
    unsafe {
        let fp = VSIFileFromMemBuffer(c_name.as_ptr(), copy.as_mut_ptr(), copy.len() as u64, 0);
        if fp.is_null() {
            return None;
        }
        VSIFCloseL(fp);
    }
    let wkt = geotiff_crs_wkt2(&name);
    // SAFETY: the name made above; GDAL no longer holds the file open.
    unsafe { VSIUnlink(c_name.as_ptr()) };
    drop(copy);
    wkt
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
    fn no_crs_from_what_gdal_cannot_open() {
        assert!(geotiff_crs_wkt2("/nonexistent/x.tif").is_none());
        assert!(geotiff_bytes_crs_wkt2(b"II*\0garbage").is_none());
        assert!(gml_crs_wkt2("<gml:ProjectedCRS>nothing</gml:ProjectedCRS>").is_none());
    }
}
