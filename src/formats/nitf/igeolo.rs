//! Image corner coordinates as the geotransform and CRS GDAL's NITF driver
//! derives from them (nitfimage.c and nitfdataset.cpp). In GDAL's order of
//! precedence, later sources replacing earlier ones:
//!
//! 1. ICORDS / IGEOLO (MIL-STD-2500C): the four corners (first row first
//!    column, first row last column, last row last column, last row first
//!    column) of the pixel centres. ICORDS G (`ddmmssXdddmmssY`) and D
//!    (`±dd.ddd±ddd.ddd`) are WGS 84 degrees; C is written as G with
//!    geocentric latitudes, turned into geodetic ones; N and S
//!    (`zzeeeeeennnnnnn`) are WGS 84 UTM eastings and northings in the
//!    northern or southern hemisphere, the zone of the last corner; U are
//!    MGRS references (`zzBJKeeeeennnnn`, see [`super::mgrs`]) in WGS 84
//!    UTM. Corners written in a crossed order (the left edge crossing the
//!    right one) are put back by quadrant.
//! 2. BLOCKA, then GEOLOB (see [`super::tre`]): more precise WGS 84 corners,
//!    whatever ICORDS says (GEOLOB's are pixel edges).
//! 3. The coverage section of an RPF frame (see [`super::rpf`]).
//!
//! The corners are fitted with GDAL's own ground-control-point fit: an
//! exact affine transform, or else the four corners as GCPs.

use serde_json::{json, Value};

use super::tre::{self, Point};
use crate::conventions::geozarr::{Georef, Registration};

/// Where the corners put an image, as GDAL's NITF driver reads them.
#[derive(Debug)]
pub enum Placement {
    /// The corners form an affine frame: a geotransform and CRS.
    Frame(Georef),
    /// They do not: GDAL shows the four corners as ground control points.
    /// The value is the [`crate::conventions::attributes::GCPS_ATTRIBUTE`] attribute.
    Gcps(Value),
}

/// Characters per corner in IGEOLO.
const CORNER_LEN: usize = 15;
/// WGS 84 semi-major and semi-minor axes, as GDAL's NITF driver writes
/// them for ICORDS C.
const WGS84_AXES: (f64, f64) = (6378137.0, 6356752.3142);

/// Four image corners in IGEOLO's order and what they are.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Corners {
    /// (x, y) of the first row's first and last columns, then the last
    /// row's last and first columns.
    pub points: [Point; 4],
    /// Their CRS, as `EPSG:n`.
    pub crs: String,
    /// Pixel centres (else pixel edges).
    pub centres: bool,
    /// The ICORDS they stand for: IGEOLO's, or G for BLOCKA and GEOLOB
    /// (GDAL reads those as geographic corners).
    pub icords: char,
}

/// The corners of an image of `rows` x `cols` pixels whose ICORDS is
/// `icords`, IGEOLO `igeolo` and extensions `tres` (BLOCKA or GEOLOB in
/// place of IGEOLO): None without any, an error saying why IGEOLO cannot
/// be read when nothing replaces it.
pub(crate) fn corners(
    icords: &str,
    igeolo: &str,
    tres: &[u8],
    rows: u64,
    cols: u64,
) -> Result<Option<Corners>, String> {
    let wgs84 = |points, centres| Corners {
        points,
        crs: "EPSG:4326".into(),
        centres,
        icords: 'G',
    };
    let precise = tre::geolob_corners(tres, rows, cols)
        .map(|p| wgs84(p, false))
        .or_else(|| tre::blocka_corners(tres, rows).map(|p| wgs84(p, true)));
    match precise {
        Some(c) => Ok(Some(c)),
        None => igeolo_corners(icords, igeolo),
    }
}

/// The corners IGEOLO gives in degrees for ICORDS G or D, as GDAL holds
/// them before any extension replaces them; None for other ICORDS or when
/// IGEOLO cannot be read.
pub(crate) fn geographic_igeolo(icords: &str, igeolo: &str) -> Option<[Point; 4]> {
    if !matches!(icords, "G" | "D") {
        return None;
    }
    igeolo_corners(icords, igeolo)
        .ok()
        .flatten()
        .map(|c| c.points)
}

/// The geotransform through `corners`, or their GCPs (none when every
/// corner is at x = 0, as GDAL has it).
pub(crate) fn fit(corners: &Corners, rows: u64, cols: u64) -> Option<Placement> {
    let (w, h) = (cols as f64, rows as f64);
    let m = if corners.centres { 0.5 } else { 0.0 };
    let pixels = [(m, m), (w - m, m), (w - m, h - m), (m, h - m)];
    let points: Vec<_> = pixels.into_iter().zip(corners.points).collect();
    let crs = corners.crs.clone();
    let Some(gt) = crate::base::gdal::geo::fit_geotransform(&points) else {
        if corners.points.iter().all(|p| p.0 == 0.0) {
            return None;
        }
        let gcps: Vec<[f64; 4]> = points
            .iter()
            .map(|&((p, l), (x, y))| [p, l, x, y])
            .collect();
        return Some(Placement::Gcps(json!({"crs": crs, "points": gcps})));
    };
    Some(Placement::Frame(Georef {
        transform: Some([gt[1], gt[2], gt[0], gt[4], gt[5], gt[3]]),
        crs_code: Some(crs),
        crs_wkt2: None,
        registration: Registration::Unstated,
    }))
}

/// The corners IGEOLO gives for ICORDS `icords` (None without ICORDS),
/// put back in order when written crossed.
fn igeolo_corners(icords: &str, igeolo: &str) -> Result<Option<Corners>, String> {
    let kind = match icords {
        "" => return Ok(None),
        "G" | "C" | "D" | "N" | "S" | "U" => icords,
        other => {
            return Err(format!(
                "ICORDS '{other}' is not read (G, C, D, N, S and U are)"
            ))
        }
    };
    // Corners are fixed-width ASCII fields, sliced by byte below.
    if !igeolo.is_ascii() {
        return Err(format!(
            "IGEOLO '{igeolo}' holds characters other than ASCII"
        ));
    }
    let mut points = [(0.0, 0.0); 4];
    let mut zones = Vec::with_capacity(4);
    for (i, point) in points.iter_mut().enumerate() {
        let text = igeolo
            .get(i * CORNER_LEN..(i + 1) * CORNER_LEN)
            .ok_or_else(|| format!("IGEOLO '{igeolo}' is shorter than four corners"))?;
        let bad = || {
            format!(
                "IGEOLO corner {} '{text}' is not an ICORDS {kind} corner",
                i + 1
            )
        };
        *point = match kind {
            "G" | "C" => {
                let lat = dms(&text[0..7], 2).ok_or_else(bad)?;
                let lon = dms(&text[7..15], 3).ok_or_else(bad)?;
                (lon, if kind == "C" { geodetic(lat) } else { lat })
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
    }
    let crs = match kind {
        "G" | "C" | "D" => "EPSG:4326".to_string(),
        _ => {
            // GDAL keeps the zone of the last corner for N and S, and
            // wants one zone for U.
            let (zone, north) = zones[3];
            if !(1..=60).contains(&zone) || (kind == "U" && zones.iter().any(|&z| z != zones[0])) {
                return Err(format!(
                    "IGEOLO UTM zones {zones:?} are not one zone of 1 to 60"
                ));
            }
            let base = if north { 32600 } else { 32700 };
            format!("EPSG:{}", base + zone)
        }
    };
    Ok(Some(Corners {
        points: reoriented(points),
        crs,
        centres: true,
        icords: kind.chars().next().unwrap_or(' '),
    }))
}

/// The geodetic latitude of geocentric latitude `lat` on the WGS 84
/// ellipsoid, in degrees (in GDAL's order of operations, so the last bit
/// agrees).
pub(crate) fn geodetic(lat: f64) -> f64 {
    use std::f64::consts::PI;
    let (a, b) = WGS84_AXES;
    ((a * a) / (b * b) * (lat * PI / 180.0).tan()).atan() * 180.0 / PI
}

/// Corners whose left edge (first to fourth) crosses their right edge
/// (second to third) reassigned by quadrant around the centre of their
/// extent, as GDAL does for IGEOLO written in the wrong order; unchanged
/// when the edges do not cross or a quadrant stays empty.
fn reoriented(points: [Point; 4]) -> [Point; 4] {
    let [ul, ur, lr, ll] = points;
    if !segments_cross(ul, ll, ur, lr) {
        return points;
    }
    let fold = |f: fn(f64, f64) -> f64, get: fn(&Point) -> f64| {
        points.iter().map(get).reduce(f).unwrap_or(0.0)
    };
    let x_mid = (fold(f64::max, |p| p.0) + fold(f64::min, |p| p.0)) * 0.5;
    let y_mid = (fold(f64::max, |p| p.1) + fold(f64::min, |p| p.1)) * 0.5;
    let mut placed: [Option<Point>; 4] = [None; 4];
    for p in points {
        let slot = match (p.0 < x_mid, p.0 > x_mid, p.1 < y_mid, p.1 > y_mid) {
            (true, _, true, _) => 3,
            (_, true, true, _) => 2,
            (_, true, _, true) => 1,
            _ => 0,
        };
        placed[slot] = Some(p);
    }
    match placed {
        [Some(a), Some(b), Some(c), Some(d)] => [a, b, c, d],
        _ => points,
    }
}

/// Whether the lines through segments `a1`-`a2` and `b1`-`b2` meet at an x
/// within both segments' x ranges (GDAL's test, vertical lines taken as
/// slope 1e10).
fn segments_cross(a1: Point, a2: Point, b1: Point, b2: Point) -> bool {
    let line = |p: Point, q: Point| {
        if p.0 == q.0 {
            (1e10, 0.0)
        } else {
            let m = (q.1 - p.1) / (q.0 - p.0);
            (m, q.1 - m * q.0)
        }
    };
    let ((ma, ba), (mb, bb)) = (line(a1, a2), line(b1, b2));
    if ma == mb {
        return false;
    }
    let x = (bb - ba) / (ma - mb);
    let within = |p: Point, q: Point| (x >= p.0 && x <= q.0) || (x >= q.0 && x <= p.0);
    within(a1, a2) && within(b1, b2)
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

    /// The placement of an image whose ICORDS is `icords`, IGEOLO `igeolo`
    /// and extensions `tres`.
    fn placement(
        icords: &str,
        igeolo: &str,
        tres: &[u8],
        rows: u64,
        cols: u64,
    ) -> Result<Option<Placement>, String> {
        Ok(corners(icords, igeolo, tres, rows, cols)?.and_then(|c| fit(&c, rows, cols)))
    }

    /// The frame of a placement that must be one.
    fn georef(icords: &str, igeolo: &str, rows: u64, cols: u64) -> Result<Option<Georef>, String> {
        georef_with(icords, igeolo, b"", rows, cols)
    }

    /// The frame of a placement that must be one, with extensions `tres`.
    fn georef_with(
        icords: &str,
        igeolo: &str,
        tres: &[u8],
        rows: u64,
        cols: u64,
    ) -> Result<Option<Georef>, String> {
        match placement(icords, igeolo, tres, rows, cols)? {
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
    fn non_ascii_corners_are_an_error_not_a_panic() {
        // Found by the index_builders fuzz target: a replacement character
        // (3 bytes) inside a corner's fixed-width field.
        let igeolo = "49300\u{FFFD}N0sampl".to_string() + &"0".repeat(60);
        let e = igeolo_corners("G", &igeolo).unwrap_err();
        assert!(e.contains("ASCII"), "{e}");
    }

    #[test]
    #[cfg_attr(not(feature = "gdal"), ignore = "needs GDAL\'s OSR")]
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
    #[cfg_attr(not(feature = "gdal"), ignore = "needs GDAL\'s OSR")]
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
    #[cfg_attr(not(feature = "gdal"), ignore = "needs GDAL\'s OSR")]
    fn what_is_not_read_says_why() {
        assert_eq!(georef("", "", 10, 10), Ok(None));
        assert!(georef("X", &"3".repeat(60), 10, 10)
            .unwrap_err()
            .contains("'X'"));
        assert!(georef("U", &"3".repeat(60), 10, 10)
            .unwrap_err()
            .contains("not an ICORDS U"));
        assert!(georef("G", "455942N", 10, 10)
            .unwrap_err()
            .contains("shorter"));
        let not_affine = "+10.000+010.000+10.000+020.000+00.000+030.000+00.000+010.000";
        match placement("D", not_affine, b"", 10, 10) {
            Ok(Some(Placement::Gcps(v))) => {
                assert_eq!(v["crs"], "EPSG:4326");
                assert_eq!(v["points"][2], serde_json::json!([9.5, 9.5, 30.0, 0.0]));
            }
            other => panic!("unexpected {other:?}"),
        }
        // GDAL keeps the last corner's zone.
        let first_off = "995000054999995335030054999995335030054997975335000054997975";
        let n = georef("N", first_off, 203, 301).unwrap().unwrap();
        assert_eq!(n.crs_code.as_deref(), Some("EPSG:32633"));
        let bad_zone = "335000054999995335030054999995335030054997975995000054997975";
        assert!(georef("N", bad_zone, 10, 10).unwrap_err().contains("zones"));
    }

    #[test]
    #[cfg_attr(not(feature = "gdal"), ignore = "needs GDAL\'s OSR")]
    fn geocentric_latitudes_become_geodetic() {
        let g = georef(
            "C",
            "455942N0100018E455942N0130018E435830N0130018E435830N0100018E",
            203,
            301,
        )
        .unwrap()
        .unwrap();
        let top = 45.0 + 59.0 / 60.0 + 42.0 / 3600.0;
        // 45.995 degrees geocentric are about 46.187 geodetic.
        let t = gt(&g);
        assert!((t[3] + 0.5 * t[5] - geodetic(top)).abs() < 1e-9, "{t:?}");
        assert!((geodetic(top) - 46.1868).abs() < 1e-3, "{}", geodetic(top));
    }

    #[test]
    #[cfg_attr(not(feature = "gdal"), ignore = "needs GDAL\'s OSR")]
    fn crossed_corners_are_put_back() {
        // Last row's corners swapped: the left edge crosses the right one.
        let crossed = "+45.995+010.005+45.995+013.005+43.975+010.005+43.975+013.005";
        let g = georef("D", crossed, 203, 301).unwrap().unwrap();
        assert!(
            close(gt(&g), [10.0, 0.01, 0.0, 46.0, 0.0, -0.01]),
            "{:?}",
            gt(&g)
        );
        // Rotated a quarter turn (edges parallel): kept as written.
        let rotated = "+45.995+013.005+43.975+013.005+43.975+010.005+45.995+010.005";
        let r = georef("D", rotated, 203, 301).unwrap().unwrap();
        assert_eq!(gt(&r)[1], 0.0);
    }

    #[test]
    #[cfg_attr(not(feature = "gdal"), ignore = "needs GDAL\'s OSR")]
    fn extensions_replace_igeolo() {
        let igeolo = "+45.995+010.005+45.995+013.005+43.975+013.005+43.975+010.005";
        let blocka = format!(
            "BLOCKA00123010000000203{}+45.995000+013.005000+43.975000+013.005000\
             +43.975000+010.005000+45.995000+010.005000010.0",
            " ".repeat(22)
        );
        let geolob = "GEOLOB00048000036000000036000+011.0000000000+047.0000000000";
        // BLOCKA: WGS 84 whatever ICORDS says.
        let utm = "335000054999995335030054999995335030054997975335000054997975";
        let b = georef_with("N", utm, blocka.as_bytes(), 203, 301)
            .unwrap()
            .unwrap();
        assert_eq!(b.crs_code.as_deref(), Some("EPSG:4326"));
        assert!(
            close(gt(&b), [10.0, 0.01, 0.0, 46.0, 0.0, -0.01]),
            "{:?}",
            gt(&b)
        );
        // GEOLOB wins over BLOCKA, even without ICORDS; its corners are edges.
        let both = format!("{blocka}{geolob}");
        let g = georef_with("", "", both.as_bytes(), 203, 301)
            .unwrap()
            .unwrap();
        assert!(
            close(gt(&g), [11.0, 0.01, 0.0, 47.0, 0.0, -0.01]),
            "{:?}",
            gt(&g)
        );
        // An IGEOLO that cannot be read does not matter then.
        assert!(georef_with("D", "x", geolob.as_bytes(), 203, 301).is_ok());
        assert!(georef("D", igeolo, 203, 301).unwrap().is_some());
    }
}
