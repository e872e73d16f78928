//! Image corner coordinates (ICORDS / IGEOLO, MIL-STD-2500C) as the
//! geotransform and CRS GDAL's NITF driver derives from them: the four
//! corners (first row first column, first row last column, last row last
//! column, last row first column) are pixel centres, fitted with GDAL's own
//! ground-control-point fit (an exact affine transform or nothing).
//!
//! ICORDS G (`ddmmssXdddmmssY`) and D (`±dd.ddd±ddd.ddd`) are WGS 84
//! degrees; N and S (`zzeeeeeennnnnnn`) are WGS 84 UTM eastings and
//! northings in the northern or southern hemisphere; U are MGRS references
//! (`zzBJKeeeeennnnn`, see [`super::mgrs`]) in WGS 84 UTM.

use serde_json::{json, Value};

use crate::tiff::geo::{Georef, Registration};

/// Where IGEOLO puts an image, as GDAL's NITF driver reads it.
#[derive(Debug)]
pub enum Placement {
    /// The corners form an affine frame: a geotransform and CRS.
    Frame(Georef),
    /// They do not: GDAL shows the four corners as ground control points.
    /// The value is the [`crate::georef::GCPS_ATTRIBUTE`] attribute.
    Gcps(Value),
}

/// Characters per corner in IGEOLO.
const CORNER_LEN: usize = 15;

/// The placement of an image of `rows` x `cols` pixels whose ICORDS is
/// `icords` and IGEOLO `igeolo`: None without ICORDS, an error saying why
/// GDAL's view cannot be written otherwise.
pub fn placement(
    icords: &str,
    igeolo: &str,
    rows: u64,
    cols: u64,
) -> Result<Option<Placement>, String> {
    let kind = match icords {
        "" => return Ok(None),
        "G" | "D" | "N" | "S" | "U" => icords,
        other => {
            return Err(format!(
                "ICORDS '{other}' is not read (G, D, N, S and U are)"
            ))
        }
    };
    let mut corners = Vec::with_capacity(4);
    let mut zones = Vec::with_capacity(4);
    for i in 0..4 {
        let text = igeolo
            .get(i * CORNER_LEN..(i + 1) * CORNER_LEN)
            .ok_or_else(|| format!("IGEOLO '{igeolo}' is shorter than four corners"))?;
        let bad = || {
            format!(
                "IGEOLO corner {} '{text}' is not an ICORDS {kind} corner",
                i + 1
            )
        };
        let (x, y) = match kind {
            "G" => {
                let lat = dms(&text[0..7], 2).ok_or_else(bad)?;
                let lon = dms(&text[7..15], 3).ok_or_else(bad)?;
                (lon, lat)
            }
            "D" => (
                number(&text[7..15]).ok_or_else(bad)?,
                number(&text[0..7]).ok_or_else(bad)?,
            ),
            "U" => {
                let utm = super::mgrs::to_utm(text).ok_or_else(bad)?;
                zones.push((utm.zone, utm.north));
                (utm.easting, utm.northing)
            }
            _ => {
                let zone = text[0..2].trim().parse::<u32>().map_err(|_| bad())?;
                zones.push((zone, kind == "N"));
                (
                    number(&text[2..8]).ok_or_else(bad)?,
                    number(&text[8..15]).ok_or_else(bad)?,
                )
            }
        };
        corners.push((x, y));
    }
    let crs = match kind {
        "G" | "D" => "EPSG:4326".to_string(),
        _ => {
            let (zone, north) = zones[0];
            if !(1..=60).contains(&zone) || zones.iter().any(|&z| z != zones[0]) {
                return Err(format!(
                    "IGEOLO UTM zones {zones:?} are not one zone of 1 to 60"
                ));
            }
            let base = if north { 32600 } else { 32700 };
            format!("EPSG:{}", base + zone)
        }
    };
    let (w, h) = (cols as f64, rows as f64);
    let pixels = [
        (0.5, 0.5),
        (w - 0.5, 0.5),
        (w - 0.5, h - 0.5),
        (0.5, h - 0.5),
    ];
    let points: Vec<_> = pixels.into_iter().zip(corners).collect();
    let Some(gt) = crate::gdal_geo::fit_geotransform(&points) else {
        let gcps: Vec<[f64; 4]> = points
            .iter()
            .map(|&((p, l), (x, y))| [p, l, x, y])
            .collect();
        return Ok(Some(Placement::Gcps(json!({"crs": crs, "points": gcps}))));
    };
    Ok(Some(Placement::Frame(Georef {
        transform: Some([gt[1], gt[2], gt[0], gt[4], gt[5], gt[3]]),
        crs_code: Some(crs),
        crs_wkt2: None,
        registration: Registration::Unstated,
    })))
}

/// Degrees of `d..dmmssH` with `deg` degree digits (H = N, S, E or W), as
/// GDAL adds them up.
fn dms(text: &str, deg: usize) -> Option<f64> {
    let hemisphere = text.chars().last()?;
    let field = |r: std::ops::Range<usize>| text.get(r).and_then(number);
    let value = field(0..deg)? + field(deg..deg + 2)? / 60.0 + field(deg + 2..deg + 4)? / 3600.0;
    match hemisphere.to_ascii_uppercase() {
        'N' | 'E' => Some(value),
        'S' | 'W' => Some(-value),
        _ => None,
    }
}

fn number(text: &str) -> Option<f64> {
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frame of a placement that must be one.
    fn georef(icords: &str, igeolo: &str, rows: u64, cols: u64) -> Result<Option<Georef>, String> {
        match placement(icords, igeolo, rows, cols)? {
            None => Ok(None),
            Some(Placement::Frame(g)) => Ok(Some(g)),
            Some(Placement::Gcps(v)) => Err(format!("GCPs {v}")),
        }
    }

    fn gt(g: &Georef) -> [f64; 6] {
        let t = g.transform.unwrap();
        [t[2], t[0], t[1], t[5], t[3], t[4]]
    }

    fn close(a: [f64; 6], b: [f64; 6]) -> bool {
        a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9)
    }

    #[test]
    fn geographic_corners() {
        // GDAL's IGEOLO for 301 x 203 pixels of 0.01 degrees at (10E, 46N).
        let g = georef(
            "G",
            "455942N0100018E455942N0130018E435830N0130018E435830N0100018E",
            203,
            301,
        )
        .unwrap()
        .unwrap();
        assert_eq!(g.crs_code.as_deref(), Some("EPSG:4326"));
        assert!(
            close(gt(&g), [10.0, 0.01, 0.0, 46.0, 0.0, -0.01]),
            "{:?}",
            gt(&g)
        );
        let d = georef(
            "D",
            "+45.995+010.005+45.995+013.005+43.975+013.005+43.975+010.005",
            203,
            301,
        )
        .unwrap()
        .unwrap();
        assert!(close(gt(&d), gt(&g)));
    }

    #[test]
    fn utm_corners() {
        let igeolo = "335000054999995335030054999995335030054997975335000054997975";
        let n = georef("N", igeolo, 203, 301).unwrap().unwrap();
        assert_eq!(n.crs_code.as_deref(), Some("EPSG:32633"));
        assert!(close(gt(&n), [500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0]));
        let s = georef("S", igeolo, 203, 301).unwrap().unwrap();
        assert_eq!(s.crs_code.as_deref(), Some("EPSG:32733"));
        // The same corners as MGRS references (33T WK).
        let mgrs = "33TWK000059999533TWK030059999533TWK030059797533TWK0000597975";
        let u = georef("U", mgrs, 203, 301).unwrap().unwrap();
        assert_eq!(u.crs_code.as_deref(), Some("EPSG:32633"));
        assert!(close(gt(&u), gt(&n)));
    }

    #[test]
    fn what_is_not_read_says_why() {
        assert_eq!(georef("", "", 10, 10), Ok(None));
        assert!(georef("C", &"3".repeat(60), 10, 10)
            .unwrap_err()
            .contains("'C'"));
        assert!(georef("U", &"3".repeat(60), 10, 10)
            .unwrap_err()
            .contains("not an ICORDS U"));
        assert!(georef("G", "455942N", 10, 10)
            .unwrap_err()
            .contains("shorter"));
        let not_affine = "+10.000+010.000+10.000+020.000+00.000+030.000+00.000+010.000";
        match placement("D", not_affine, 10, 10) {
            Ok(Some(Placement::Gcps(v))) => {
                assert_eq!(v["crs"], "EPSG:4326");
                assert_eq!(v["points"][2], serde_json::json!([9.5, 9.5, 30.0, 0.0]));
            }
            other => panic!("unexpected {other:?}"),
        }
        let bad_zone = "995000054999995335030054999995335030054997975335000054997975";
        assert!(georef("N", bad_zone, 10, 10).unwrap_err().contains("zones"));
    }
}
