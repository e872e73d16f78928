//! GeoTIFF georeferencing: the GeoKeys and model tags of an IFD read into a
//! [`Georef`] (written as GeoZarr `proj:` / `spatial:` attributes).

use crate::conventions::geozarr::{Georef, Registration};

use super::ifd::Ifd;
use super::tags;

/// The GeoTIFF tags that place an image: ModelTransformation (16 values,
/// row by row), ModelPixelScale and ModelTiepoint.
#[derive(Debug, Clone, Copy, Default)]
pub struct GeoTags<'a> {
    /// ModelTransformationTag.
    pub transformation: Option<&'a [f64]>,
    /// ModelPixelScaleTag.
    pub pixel_scale: Option<&'a [f64]>,
    /// ModelTiepointTag (the first tie point is used).
    pub tiepoint: Option<&'a [f64]>,
}

impl Georef {
    /// Reads ModelPixelScale/ModelTiepoint or ModelTransformation and the GeoKeys.
    /// PixelIsPoint rasters are shifted by half a pixel, as GDAL reports them.
    pub fn from_ifd(ifd: &Ifd) -> Georef {
        let keys = geo_keys(ifd);
        let transformation = ifd.floats(tags::MODEL_TRANSFORMATION);
        let pixel_scale = ifd.floats(tags::MODEL_PIXEL_SCALE);
        let tiepoint = ifd.floats(tags::MODEL_TIEPOINT);
        let tags = GeoTags {
            transformation: transformation.as_deref(),
            pixel_scale: pixel_scale.as_deref(),
            tiepoint: tiepoint.as_deref(),
        };
        Georef::from_tags(&tags, |id| {
            keys.iter().find(|(k, _)| *k == id).map(|(_, v)| *v)
        })
    }

    /// The georeferencing GeoTIFF tags describe, wherever they were read
    /// (a TIFF directory, or attributes a TIFF reader recorded): the model
    /// transformation, else tie point and pixel scale; the GeoKey `key(id)`
    /// for the raster type and the CRS code. PixelIsPoint rasters are
    /// shifted by half a pixel, as GDAL reports them.
    pub fn from_tags(tags: &GeoTags<'_>, key: impl Fn(u16) -> Option<u64>) -> Georef {
        let mut transform = if let Some(m) = tags.transformation.filter(|m| m.len() >= 8) {
            Some([m[0], m[1], m[3], m[4], m[5], m[7]])
        } else {
            match (tags.pixel_scale, tags.tiepoint) {
                (Some(s), Some(t)) if s.len() >= 2 && t.len() >= 6 => Some([
                    s[0],
                    0.0,
                    t[3] - t[0] * s[0],
                    0.0,
                    -s[1],
                    t[4] + t[1] * s[1],
                ]),
                _ => None,
            }
        };
        let registration = match key(tags::GT_RASTER_TYPE) {
            Some(1) => Registration::Area,
            Some(2) => Registration::Point,
            _ => Registration::Unstated,
        };
        if registration == Registration::Point {
            if let Some(t) = transform.as_mut() {
                t[2] -= 0.5 * t[0] + 0.5 * t[1];
                t[5] -= 0.5 * t[3] + 0.5 * t[4];
            }
        }
        // The model type says which key names the CRS: a projected model
        // with a user-defined projection has no EPSG code even when its
        // geographic CRS has one.
        let crs_keys: &[u16] = match key(tags::GT_MODEL_TYPE) {
            Some(1) => &[tags::PROJECTED_CS_TYPE],
            Some(2) => &[tags::GEOGRAPHIC_TYPE],
            _ => &[tags::PROJECTED_CS_TYPE, tags::GEOGRAPHIC_TYPE],
        };
        let crs_code = crs_keys
            .iter()
            .filter_map(|&k| key(k))
            .find(|&c| c != 0 && c != 32767)
            .map(|c| format!("EPSG:{c}"));
        Georef {
            transform,
            crs_code,
            crs_wkt2: None,
            registration,
        }
    }

    /// [`Georef::from_ifd`] with, for GeoKeys that define a CRS without an
    /// EPSG code, the WKT2 GDAL's GTiff driver makes of them, asked of
    /// `gdal_crs` (e.g. [`crate::base::gdal::geo::geotiff_crs_wkt2`] of the file).
    /// `name` names the file in the message printed when GDAL finds none.
    pub fn from_ifd_with(
        ifd: &Ifd,
        name: &str,
        gdal_crs: impl FnOnce() -> Option<String>,
    ) -> Georef {
        let mut georef = Georef::from_ifd(ifd);
        if Georef::crs_not_written(ifd) {
            georef.crs_wkt2 = gdal_crs();
            if georef.crs_wkt2.is_none() {
                eprintln!(
                    "chunkref: {name}: the GeoKeys define a CRS without an EPSG code that GDAL \
                     cannot read either; the index carries no CRS"
                );
            }
        }
        georef
    }

    /// True when the GeoKeys declare a CRS (a model type, or a user-defined
    /// one) that is not an EPSG code.
    pub fn crs_not_written(ifd: &Ifd) -> bool {
        let keys = geo_keys(ifd);
        let declared = keys.iter().any(|(k, _)| {
            matches!(
                *k,
                tags::GT_MODEL_TYPE | tags::PROJECTED_CS_TYPE | tags::GEOGRAPHIC_TYPE
            )
        });
        declared && Georef::from_ifd(ifd).crs_code.is_none()
    }
}

/// The ground control points `[pixel, line, x, y, z]` of an image placed by
/// ModelTiepoint alone (`georef` has no transform: no ModelPixelScale, no
/// ModelTransformation), one per tie point, as GDAL's GTiff driver reads
/// them: PixelIsPoint shifts them by half a pixel. None when the image has
/// a transform or no tie point.
pub fn tie_point_gcps(ifd: &Ifd, georef: &Georef) -> Option<Vec<[f64; 5]>> {
    if georef.transform.is_some() {
        return None;
    }
    let shift = match georef.registration {
        Registration::Point => 0.5,
        _ => 0.0,
    };
    let points: Vec<[f64; 5]> = ifd
        .floats(tags::MODEL_TIEPOINT)?
        .chunks_exact(6)
        .map(|t| [t[0] + shift, t[1] + shift, t[3], t[4], t[5]])
        .collect();
    (!points.is_empty()).then_some(points)
}

/// (key id, SHORT value) pairs of the GeoKeyDirectory.
fn geo_keys(ifd: &Ifd) -> Vec<(u16, u64)> {
    let Some(dir) = ifd.ints(tags::GEO_KEY_DIRECTORY) else {
        return Vec::new();
    };
    dir.chunks_exact(4)
        .skip(1)
        .filter(|e| e[1] == 0)
        .map(|e| (e[0] as u16, e[3]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::tiff::ifd::Value as TagValue;

    /// An IFD with a tie point, a pixel scale and GeoKeys (id, value).
    fn ifd(keys: &[(u16, u16)]) -> Ifd {
        let mut dir: Vec<i128> = vec![1, 1, 0, keys.len() as i128];
        for &(k, v) in keys {
            dir.extend([i128::from(k), 0, 1, i128::from(v)]);
        }
        let mut ifd = Ifd::default();
        ifd.tags
            .insert(tags::GEO_KEY_DIRECTORY, TagValue::Ints(dir));
        ifd.tags.insert(
            tags::MODEL_TIEPOINT,
            TagValue::Floats(vec![0.0, 0.0, 0.0, 100.0, 200.0, 0.0]),
        );
        ifd.tags.insert(
            tags::MODEL_PIXEL_SCALE,
            TagValue::Floats(vec![2.0, 3.0, 0.0]),
        );
        ifd
    }

    #[test]
    fn the_model_type_names_the_crs_key() {
        let projected = ifd(&[(tags::GT_MODEL_TYPE, 1), (tags::PROJECTED_CS_TYPE, 32633)]);
        let g = Georef::from_ifd(&projected);
        assert_eq!(g.crs_code.as_deref(), Some("EPSG:32633"));
        assert_eq!(g.transform, Some([2.0, 0.0, 100.0, 0.0, -3.0, 200.0]));
        // A user-defined projection on an EPSG datum is not that datum's
        // geographic CRS.
        let user = ifd(&[
            (tags::GT_MODEL_TYPE, 1),
            (tags::PROJECTED_CS_TYPE, 32767),
            (tags::GEOGRAPHIC_TYPE, 4269),
        ]);
        assert_eq!(Georef::from_ifd(&user).crs_code, None);
        assert!(Georef::crs_not_written(&user));
        let wkt = Georef::from_ifd_with(&user, "x.tif", || Some("PROJCRS[...]".into()));
        assert_eq!(
            wkt.attributes([1, 1], [1.0, 1.0])["proj:wkt2"],
            "PROJCRS[...]"
        );
        let geographic = ifd(&[(tags::GT_MODEL_TYPE, 2), (tags::GEOGRAPHIC_TYPE, 4326)]);
        assert_eq!(
            Georef::from_ifd(&geographic).crs_code.as_deref(),
            Some("EPSG:4326")
        );
    }
}
