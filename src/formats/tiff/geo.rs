//! GeoTIFF georeferencing: the GeoKeys and model tags of an IFD read into a
//! [`Georef`] (written as GeoZarr `proj:` / `spatial:` attributes).

use crate::conventions::geozarr::{Georef, Registration};

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use super::geokeys_tiff::geokeys_tiff;
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

    /// [`Georef::from_ifd`] with the CRS GDAL's GTiff driver makes of the
    /// GeoKeys wherever it is not simply an EPSG code: keys that define a
    /// CRS without a code (a user-defined projection, a local CRS), and
    /// keys beside a code that refine it (ProjLinearUnits other than the
    /// code's unit, an ellipsoid or TOWGS84 of their own). `gdal_crs` is
    /// asked for the WKT2 of a TIFF holding only GeoKeys
    /// ([`crate::base::gdal::geo::geotiff_bytes_crs_wkt2`]); the code is
    /// kept when GDAL makes the same CRS of it alone. `name` names the file
    /// in the message printed when GDAL finds none.
    pub fn from_ifd_with(
        ifd: &Ifd,
        name: &str,
        gdal_crs: impl Fn(&[u8]) -> Option<String>,
    ) -> Georef {
        let mut georef = Georef::from_ifd(ifd);
        let ids = key_ids(ifd);
        let crs_of = |keep: &dyn Fn(u16) -> bool| {
            geokeys_tiff(ifd, keep).and_then(|bytes| crs_of_keys(bytes, &gdal_crs))
        };
        if georef.crs_code.is_some() {
            if ids.iter().all(|k| CODE_KEYS.contains(k)) || restates_wgs84_code(ifd) {
                return georef;
            }
            let all = crs_of(&|_| true);
            let code_alone = crs_of(&|k| CODE_KEYS.contains(&k));
            if let (Some(all), Some(code_alone)) = (all, code_alone) {
                if all != code_alone {
                    georef.crs_code = None;
                    georef.crs_wkt2 = Some(all);
                }
            }
        } else if ids.iter().any(|k| {
            matches!(
                *k,
                tags::GT_MODEL_TYPE | tags::PROJECTED_CS_TYPE | tags::GEOGRAPHIC_TYPE
            )
        }) {
            georef.crs_wkt2 = crs_of(&|_| true);
            if georef.crs_wkt2.is_none() {
                eprintln!(
                    "chunkref: {name}: the GeoKeys define a CRS without an EPSG code that GDAL \
                     cannot read either; the index carries no CRS"
                );
            }
        }
        georef
    }
}

/// The GeoKeys that name a CRS by EPSG code, with the model and raster
/// types: any other key may refine the code or define a CRS of its own.
const CODE_KEYS: [u16; 4] = [
    tags::GT_MODEL_TYPE,
    tags::GT_RASTER_TYPE,
    tags::GEOGRAPHIC_TYPE,
    tags::PROJECTED_CS_TYPE,
];

/// Most GeoKeys-only TIFFs whose CRS is remembered: the sources of a stack
/// or a mosaic mostly share their keys, and each answer costs a GDAL open.
const KNOWN_KEYS: usize = 256;

/// `gdal_crs` of the GeoKeys-only TIFF `bytes`, remembered for the
/// process.
fn crs_of_keys(bytes: Vec<u8>, gdal_crs: &impl Fn(&[u8]) -> Option<String>) -> Option<String> {
    static KNOWN: Mutex<Option<HashMap<Vec<u8>, Option<String>>>> = Mutex::new(None);
    let lock = || KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(known) = lock().get_or_insert_with(HashMap::new).get(&bytes) {
        return known.clone();
    }
    let crs = gdal_crs(&bytes);
    let mut known = lock();
    let known = known.get_or_insert_with(HashMap::new);
    if known.len() >= KNOWN_KEYS {
        known.clear();
    }
    known.insert(bytes, crs.clone());
    crs
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

/// The entries `[key id, tag location, count, value or index]` of the
/// GeoKeyDirectory.
fn key_entries(ifd: &Ifd) -> Vec<[u64; 4]> {
    let Some(dir) = ifd.ints(tags::GEO_KEY_DIRECTORY) else {
        return Vec::new();
    };
    dir.chunks_exact(4)
        .skip(1)
        .map(|e| [e[0], e[1], e[2], e[3]])
        .collect()
}

/// The id of every key in the GeoKeyDirectory.
fn key_ids(ifd: &Ifd) -> Vec<u16> {
    key_entries(ifd)
        .iter()
        .filter_map(|e| u16::try_from(e[0]).ok())
        .collect()
}

/// (key id, SHORT value) pairs of the GeoKeyDirectory.
fn geo_keys(ifd: &Ifd) -> Vec<(u16, u64)> {
    key_entries(ifd)
        .iter()
        .filter(|e| e[1] == 0)
        .map(|e| (e[0] as u16, e[3]))
        .collect()
}

/// True when the code is a WGS 84 one (EPSG:4326, a UTM zone on it,
/// Pseudo-Mercator) and every other GeoKey restates it as GDAL writes it:
/// citations, degrees, metres, the WGS 84 ellipsoid. Most GeoTIFFs carry
/// these keys; they are read without asking GDAL (and without loading it).
fn restates_wgs84_code(ifd: &Ifd) -> bool {
    let code = geo_keys(ifd)
        .into_iter()
        .find(|(k, _)| matches!(*k, tags::PROJECTED_CS_TYPE | tags::GEOGRAPHIC_TYPE))
        .map(|(_, v)| v);
    if !matches!(code, Some(4326 | 3857 | 32601..=32660 | 32701..=32760)) {
        return false;
    }
    let doubles = ifd.floats(tags::GEO_DOUBLE_PARAMS).unwrap_or_default();
    let double = |e: &[u64; 4]| {
        (e[1] == u64::from(tags::GEO_DOUBLE_PARAMS))
            .then(|| {
                usize::try_from(e[3])
                    .ok()
                    .and_then(|i| doubles.get(i).copied())
            })
            .flatten()
    };
    key_entries(ifd).iter().all(|e| match e[0] {
        k if CODE_KEYS.iter().any(|&c| u64::from(c) == k) => true,
        // GTCitation, GeogCitation, PCSCitation.
        1026 | 2049 | 3073 => true,
        // GeogAngularUnits degree, ProjLinearUnits metre.
        2054 => e[1] == 0 && e[3] == 9102,
        3076 => e[1] == 0 && e[3] == 9001,
        // GeogSemiMajorAxis, GeogInvFlattening of WGS 84.
        2057 => double(e) == Some(6_378_137.0),
        2059 => double(e) == Some(298.257_223_563),
        _ => false,
    })
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
        let wkt = Georef::from_ifd_with(&user, "x.tif", |_| Some("PROJCRS[...]".into()));
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

    #[test]
    fn gdal_is_asked_only_when_keys_may_refine_the_code() {
        use std::cell::Cell;
        let asked = Cell::new(0);
        // GDAL's answer: one CRS for a TIFF of the code alone, another
        // for one that holds more keys.
        let gdal = |bytes: &[u8]| {
            asked.set(asked.get() + 1);
            let plain = geokeys_tiff(
                &ifd(&[(tags::GT_MODEL_TYPE, 1), (tags::PROJECTED_CS_TYPE, 32633)]),
                |_| true,
            );
            Some(
                if plain.as_deref() == Some(bytes) {
                    "plain"
                } else {
                    "refined"
                }
                .to_string(),
            )
        };
        // Keys as GDAL writes them for a WGS 84 UTM zone: no question.
        let restated = ifd(&[
            (tags::GT_MODEL_TYPE, 1),
            (tags::PROJECTED_CS_TYPE, 32633),
            (2054, 9102),
            (3076, 9001),
        ]);
        let g = Georef::from_ifd_with(&restated, "x.tif", gdal);
        assert_eq!(
            (g.crs_code.as_deref(), asked.get()),
            (Some("EPSG:32633"), 0)
        );
        // Feet on a metre code: GDAL's CRS replaces the code.
        let feet = ifd(&[
            (tags::GT_MODEL_TYPE, 1),
            (tags::PROJECTED_CS_TYPE, 32633),
            (3076, 9002),
        ]);
        let g = Georef::from_ifd_with(&feet, "x.tif", gdal);
        assert_eq!(g.crs_code, None);
        assert_eq!(g.crs_wkt2.as_deref(), Some("refined"));
        assert_eq!(asked.get(), 2);
        // Asked again, the answers are remembered.
        Georef::from_ifd_with(&feet, "x.tif", gdal);
        assert_eq!(asked.get(), 2);
    }
}
