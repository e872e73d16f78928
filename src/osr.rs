//! CRS questions the index builders ask GDAL's OSR (libgdal is linked
//! already): the axis order EPSG gives a CRS.

#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};

type OgrSrsH = *mut c_void;

extern "C" {
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
}
