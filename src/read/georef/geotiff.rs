//! Georeferencing from GeoTIFF tags recorded as attributes, as kerchunk's
//! `tiff_to_zarr` writes them: tifffile's `geotiff_metadata`, with the tags
//! `ModelPixelScale`, `ModelTiepoint`, `ModelTransformation` (a 4 x 4
//! list) and the GeoKeys by name (`GTModelTypeGeoKey`,
//! `GTRasterTypeGeoKey`, `GeographicTypeGeoKey`, `ProjectedCSTypeGeoKey`).
//!
//! The tags are read as GDAL's GTiff driver reads them from the file (the
//! same code as the TIFF builder, [`crate::formats::tiff::geo`]): PixelIsPoint moves
//! the origin by half a pixel unless `GTIFF_POINT_GEO_IGNORE` is set, and
//! the model type names the GeoKey holding the EPSG code.

use serde_json::Value;

use crate::conventions::geozarr::{Georef, Registration};
use crate::formats::tiff::geo::GeoTags;
use crate::formats::tiff::tags;

/// The attribute holding each GeoKey the georeferencing needs.
const KEYS: &[(u16, &str)] = &[
    (tags::GT_MODEL_TYPE, "GTModelTypeGeoKey"),
    (tags::GT_RASTER_TYPE, "GTRasterTypeGeoKey"),
    (tags::GEOGRAPHIC_TYPE, "GeographicTypeGeoKey"),
    (tags::PROJECTED_CS_TYPE, "ProjectedCSTypeGeoKey"),
];

/// Enumeration names tifffile may record instead of a GeoKey's number.
const KEY_NAMES: &[(&str, u64)] = &[
    ("ModelTypeProjected", 1),
    ("ModelTypeGeographic", 2),
    ("ModelTypeGeocentric", 3),
    ("RasterPixelIsArea", 1),
    ("RasterPixelIsPoint", 2),
];

/// GDAL's GTiff configuration option that keeps PixelIsPoint coordinates
/// unshifted.
const POINT_GEO_IGNORE: &str = "GTIFF_POINT_GEO_IGNORE";

/// What GeoTIFF tags recorded as attributes give a level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TagGeoref {
    /// GDAL geotransform of pixel corners.
    pub transform: Option<[f64; 6]>,
    /// `EPSG:n`.
    pub crs: Option<String>,
    /// GDAL's `AREA_OR_POINT`, from `GTRasterTypeGeoKey`.
    pub area_or_point: Option<&'static str>,
}

/// The georeferencing of the GeoTIFF tags `get` finds (attribute name ->
/// value, most specific scope first), `None` without tags or GeoKeys.
/// `point_geo_ignore` is GDAL's `GTIFF_POINT_GEO_IGNORE`.
pub fn from_attributes<'a>(
    get: impl Fn(&str) -> Option<&'a Value>,
    point_geo_ignore: bool,
) -> Option<TagGeoref> {
    let floats = |name: &str| -> Option<Vec<f64>> {
        let mut out = Vec::new();
        flatten(get(name)?, &mut out)?;
        Some(out)
    };
    let transformation = floats("ModelTransformation");
    let pixel_scale = floats("ModelPixelScale");
    let tiepoint = floats("ModelTiepoint");
    let key = |id: u16| -> Option<u64> {
        let (_, name) = KEYS.iter().find(|(k, _)| *k == id)?;
        match get(name)? {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => KEY_NAMES.iter().find(|(n, _)| n == s).map(|(_, v)| *v),
            _ => None,
        }
    };
    let has_keys = KEYS.iter().any(|&(id, _)| key(id).is_some());
    if transformation.is_none() && tiepoint.is_none() && !has_keys {
        return None;
    }
    let tags = GeoTags {
        transformation: transformation.as_deref(),
        pixel_scale: pixel_scale.as_deref(),
        tiepoint: tiepoint.as_deref(),
    };
    let geo = Georef::from_tags(&tags, key);
    let transform = geo.transform.map(|t| {
        let gt = super::affine_to_gdal(t);
        if geo.registration == Registration::Point && point_geo_ignore {
            // Back to the tie point's coordinates, as GDAL leaves them.
            [
                gt[0] + 0.5 * gt[1] + 0.5 * gt[2],
                gt[1],
                gt[2],
                gt[3] + 0.5 * gt[4] + 0.5 * gt[5],
                gt[4],
                gt[5],
            ]
        } else {
            gt
        }
    });
    let area_or_point = match geo.registration {
        Registration::Area => Some("Area"),
        Registration::Point => Some("Point"),
        Registration::Unstated => None,
    };
    Some(TagGeoref {
        transform,
        crs: geo.crs_code,
        area_or_point,
    })
}

/// GDAL's `GTIFF_POINT_GEO_IGNORE` (default false), read when a dataset is
/// georeferenced, as GDAL's GTiff driver reads it.
pub fn point_geo_ignore() -> bool {
    crate::base::gdal::cpl::config_option(POINT_GEO_IGNORE)
        .is_some_and(|v| crate::io::config::test_bool(&v))
}

/// Appends the numbers of `v` (a number or nested lists of numbers) to `out`.
fn flatten(v: &Value, out: &mut Vec<f64>) -> Option<()> {
    match v {
        Value::Number(n) => out.push(n.as_f64()?),
        Value::Array(items) => {
            for item in items {
                flatten(item, out)?;
            }
        }
        _ => return None,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    fn georef(attrs: &Value, ignore: bool) -> Option<TagGeoref> {
        let attrs: &Map<String, Value> = attrs.as_object().unwrap();
        from_attributes(|k| attrs.get(k), ignore)
    }

    #[test]
    fn tiepoint_and_scale_with_an_epsg_code() {
        let attrs = json!({"GTModelTypeGeoKey": 1, "GTRasterTypeGeoKey": 1,
            "ProjectedCSTypeGeoKey": 32633, "GeographicTypeGeoKey": 4326,
            "ModelPixelScale": [30.0, 30.0, 0.0],
            "ModelTiepoint": [0.0, 0.0, 0.0, 500000.0, 4000000.0, 0.0]});
        let g = georef(&attrs, false).unwrap();
        assert_eq!(
            g.transform,
            Some([500000.0, 30.0, 0.0, 4000000.0, 0.0, -30.0])
        );
        assert_eq!(g.crs.as_deref(), Some("EPSG:32633"));
        assert_eq!(g.area_or_point, Some("Area"));
    }

    #[test]
    fn pixel_is_point_moves_half_a_pixel_unless_ignored() {
        let attrs = json!({"GTModelTypeGeoKey": "ModelTypeGeographic",
            "GTRasterTypeGeoKey": "RasterPixelIsPoint", "GeographicTypeGeoKey": 4326,
            "ModelPixelScale": [0.5, 0.25, 0.0],
            "ModelTiepoint": [0.0, 0.0, 0.0, 10.0, 50.0, 0.0]});
        let g = georef(&attrs, false).unwrap();
        assert_eq!(g.transform, Some([9.75, 0.5, 0.0, 50.125, 0.0, -0.25]));
        assert_eq!(g.area_or_point, Some("Point"));
        assert_eq!(g.crs.as_deref(), Some("EPSG:4326"));
        let g = georef(&attrs, true).unwrap();
        assert_eq!(g.transform, Some([10.0, 0.5, 0.0, 50.0, 0.0, -0.25]));
    }

    #[test]
    fn a_transformation_matrix_wins() {
        let attrs = json!({"GTRasterTypeGeoKey": 1,
            "ModelTransformation": [[0.01, 0.001, 0.0, 10.0], [0.001, -0.01, 0.0, 50.0],
                                    [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]],
            "ModelPixelScale": [1.0, 1.0, 0.0],
            "ModelTiepoint": [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]});
        let g = georef(&attrs, false).unwrap();
        assert_eq!(g.transform, Some([10.0, 0.01, 0.001, 50.0, 0.001, -0.01]));
        assert_eq!(g.crs, None);
    }

    #[test]
    fn no_tags_no_georeferencing() {
        assert_eq!(
            georef(&json!({"_ARRAY_DIMENSIONS": ["Y", "X"]}), false),
            None
        );
        assert_eq!(georef(&json!({"ModelTiepoint": "bad"}), false), None);
    }
}
