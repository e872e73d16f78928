//! The open option serving converted colour components as stored: 8-bit
//! CMYK and CIELab TIFF images are indexed as the RGBA GDAL's GTiff driver
//! shows by default; [`RAW_COLOR_OPTION`]`=YES` shows their stored
//! components instead, as GDAL's `GTIFF_RAW:` prefix does.

use crate::base::error::{Error, Result};
use crate::index::Index;

/// The open option asking for stored colour components.
pub const RAW_COLOR_OPTION: &str = "RAW_COLOR";

/// Whether open options ask for stored colour components (a GDAL boolean:
/// `YES`/`NO`, `TRUE`/`FALSE`, `ON`/`OFF`, `1`/`0`; default no).
pub fn raw_color(options: &[(String, String)]) -> Result<bool> {
    let Some((_, value)) = options
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(RAW_COLOR_OPTION))
    else {
        return Ok(false);
    };
    match value.to_ascii_uppercase().as_str() {
        "YES" | "TRUE" | "ON" | "1" => Ok(true),
        "NO" | "FALSE" | "OFF" | "0" => Ok(false),
        _ => Err(Error::Usage {
            what: format!("{RAW_COLOR_OPTION}={value}: expected YES or NO"),
        }),
    }
}

/// Serves the colour components of every array of `index` as stored.
pub fn serve_stored(index: &mut Index) {
    for array in index.arrays.iter_mut() {
        array.meta.serve_stored_color();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_is_a_gdal_boolean() {
        let opt = |v: &str| vec![("raw_color".to_string(), v.to_string())];
        assert!(!raw_color(&[]).unwrap());
        assert!(raw_color(&opt("yes")).unwrap());
        assert!(raw_color(&opt("1")).unwrap());
        assert!(!raw_color(&opt("OFF")).unwrap());
        assert!(raw_color(&opt("maybe")).is_err());
    }
}
