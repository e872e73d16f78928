//! RPF frames (CADRG, CIB; MIL-STD-2411) as GDAL's NITF driver reads them
//! (nitfimage.c: NITFLoadLocationTable, NITFReadRPFLocationTable and the
//! coverage section in NITFImageAccess; nitfdataset.cpp: CADRG polar
//! tiles).
//!
//! - The RPFIMG extension of the image subheader holds the location
//!   section: the absolute file offset of each RPF section. Where it lists
//!   the header component (the RPFHDR extension) at a place that does not
//!   hold one, the table is kept only when its coverage section agrees with
//!   IGEOLO (to 0.1 degree, for ICORDS G or D) and its compression lookup
//!   subsection is where it says; else it is ignored, VQ tables included.
//! - The coverage section's corner latitudes and longitudes (pixel edges)
//!   replace every other corners whenever ICORDS names a coordinate system.
//! - A CADRG frame (IID1) with geographic corners whose right ones lie west
//!   of its left ones crosses the antimeridian: its right longitudes gain
//!   360 degrees.
//! - A CADRG frame of ARC zone 9 or 18 (NITF 2.0 ITITLE, the frame's file
//!   name, ending in 9 or J) is placed in the zone's azimuthal equidistant
//!   CRS (on the sphere) when its corners make a rectangle there.

use super::header::Image;
use super::igeolo::{self, Corners, Placement};
use super::tre::Point;
use crate::base::error::Result;
use crate::conventions::geozarr::{Georef, Registration};
use crate::io::source::Source;

/// RPF location IDs (MIL-STD-2411 table III) of the sections read.
const HEADER_COMPONENT: u16 = 128;
const COVERAGE: u16 = 130;
pub(crate) const COMPRESSION_LOOKUP: u16 = 132;
pub(crate) const COLOR_GRAYSCALE: u16 = 134;
pub(crate) const COLORMAP: u16 = 135;
pub(crate) const MASK: u16 = 138;
pub(crate) const SPATIAL_DATA: u16 = 140;

/// Length of a location record.
const RECORD_LEN: u16 = 10;
/// Bytes GDAL reads where the RPFHDR extension should be (from its tag, 11
/// bytes before the listed offset) and at the compression lookup
/// subsection; a file too short for them fails the check.
const CHECK_READ: u64 = 1000;
/// Most a coverage corner may differ from IGEOLO's for a misplaced table to
/// be kept, in degrees.
const COVERAGE_TOLERANCE: f64 = 0.1;
/// Largest relative difference between the projected x (or y) of two
/// corners on one edge of a polar frame.
const RECTANGLE_TOLERANCE: f64 = 1e-6;

/// An RPF location table: (ID, file offset) pairs in their order.
pub(crate) type Locations = Vec<(u16, u64)>;

/// The location table of image `img` of `src`, as GDAL keeps it: empty
/// without an RPFIMG extension, when the table cannot be read, or when it
/// fails GDAL's check of a misplaced RPFHDR.
pub(crate) fn locations(src: &Source, img: &Image) -> Result<Locations> {
    let Some(table) = super::tre::find(&img.tres, b"RPFIMG").and_then(parse) else {
        return Ok(Vec::new());
    };
    let Some(header) = first(&table, HEADER_COMPONENT).filter(|&at| at > 11) else {
        return Ok(table);
    };
    let tag_at = header - 11;
    if src.len().saturating_sub(tag_at) < CHECK_READ {
        return Ok(Vec::new());
    }
    if src.read(tag_at, 6)?.eq_ignore_ascii_case(b"RPFHDR") || sections_agree(src, img, &table)? {
        return Ok(table);
    }
    eprintln!(
        "chunkref: {}: the RPF location table lists the RPFHDR extension at byte {header}, \
         where there is none, and its sections do not check out; it is ignored, as GDAL does",
        src.path()
    );
    Ok(Vec::new())
}

/// The location section at the start of RPFIMG data `tre`: a header (its
/// length, the table's offset from the section, the number of records,
/// their length), then 10-byte records of ID, length and file offset.
/// None when it lists nothing or a record lies past the extension.
fn parse(tre: &[u8]) -> Option<Locations> {
    let be16 = |at: usize| {
        tre.get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    let be32 = |at: usize| {
        tre.get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (table, count) = (be32(2)? as usize, be16(6)?);
    if count == 0 || be16(8)? != RECORD_LEN {
        return None;
    }
    (0..usize::from(count))
        .map(|i| {
            let at = table.checked_add(usize::from(RECORD_LEN) * i)?;
            Some((be16(at)?, u64::from(be32(at + 6)?)))
        })
        .collect()
}

/// The offset of the last location listed as `id` (where GDAL finds the
/// compression lookup tables), if any.
pub(crate) fn location(locs: &[(u16, u64)], id: u16) -> Option<u64> {
    locs.iter().rev().find(|(l, _)| *l == id).map(|&(_, at)| at)
}

/// The offset of the first location listed as `id`.
fn first(locs: &[(u16, u64)], id: u16) -> Option<u64> {
    locs.iter().find(|(l, _)| *l == id).map(|&(_, at)| at)
}

/// GDAL's check of a table whose RPFHDR is misplaced, in table order: a
/// coverage section (ICORDS G or D) must agree with IGEOLO and a
/// compression lookup subsection hold its tables; true when one of them
/// was checked and none failed.
fn sections_agree(src: &Source, img: &Image, table: &[(u16, u64)]) -> Result<bool> {
    let geographic = matches!(img.icords.as_str(), "G" | "D");
    let mut checked = false;
    for &(id, at) in table {
        let agrees = match id {
            COVERAGE if geographic => {
                let Some(coverage) = read_coverage(src, at)? else {
                    return Ok(false);
                };
                igeolo::geographic_igeolo(&img.icords, &img.igeolo).is_some_and(|igeolo| {
                    igeolo.iter().zip(coverage).all(|(a, b)| {
                        (a.0 - b.0).abs() < COVERAGE_TOLERANCE
                            && (a.1 - b.1).abs() < COVERAGE_TOLERANCE
                    })
                })
            }
            COMPRESSION_LOOKUP => {
                let at = location(table, COMPRESSION_LOOKUP).unwrap_or(0);
                at > 0
                    && src.len().saturating_sub(at) >= CHECK_READ
                    && super::rpf_vq::lookup_tables_at(src, at)?
            }
            _ => continue,
        };
        if !agrees {
            return Ok(false);
        }
        checked = true;
    }
    Ok(checked)
}

/// The corners of the coverage section at `at` in IGEOLO's order
/// ((longitude, latitude) of upper left, upper right, lower right, lower
/// left); None when the file ends before them.
fn read_coverage(src: &Source, at: u64) -> Result<Option<[Point; 4]>> {
    if src.len().saturating_sub(at) < 64 {
        return Ok(None);
    }
    let bytes = src.read(at, 64)?;
    let v: Vec<f64> = bytes
        .chunks_exact(8)
        .map(|b| f64::from_be_bytes(b.try_into().unwrap_or([0; 8])))
        .collect();
    // Stored as (latitude, longitude) of upper left, lower left, upper
    // right and lower right.
    Ok(Some([
        (v[1], v[0]),
        (v[5], v[4]),
        (v[7], v[6]),
        (v[3], v[2]),
    ]))
}

/// Where image `img` of `src` lies, with the RPF rules above applied to the
/// corners [`igeolo::corners`] gives (`locs`: its location table): None
/// without corners; an error saying why when IGEOLO cannot be read and
/// nothing replaces it, or the coverage section cannot be read.
pub(crate) fn placement(
    src: &Source,
    img: &Image,
    locs: &[(u16, u64)],
) -> std::result::Result<Option<Placement>, String> {
    let (rows, cols) = (img.rows, img.cols);
    let mut corners = igeolo::corners(&img.icords, &img.igeolo, &img.tres, rows, cols);
    // BLOCKA and GEOLOB stand for ICORDS G.
    let icords = match &corners {
        Ok(Some(c)) => c.icords,
        _ => img.icords.chars().next().unwrap_or(' '),
    };
    let coverage = match first(locs, COVERAGE) {
        Some(at) if icords != ' ' => Some(coverage_corners(src, at)?),
        _ => None,
    };
    if let Some(points) = coverage {
        let geographic = || Corners {
            points,
            crs: "EPSG:4326".into(),
            centres: false,
            icords,
        };
        corners = match corners {
            Ok(Some(c)) => Ok(Some(Corners {
                points: if c.icords == 'C' {
                    points.map(|(x, y)| (x, igeolo::geodetic(y)))
                } else {
                    points
                },
                centres: false,
                ..c
            })),
            // GDAL takes the coverage section whatever IGEOLO holds.
            Err(_) if matches!(icords, 'G' | 'D') => Ok(Some(geographic())),
            other => other,
        };
    }
    let Some(mut corners) = corners? else {
        return Ok(None);
    };
    if img.iid1.eq_ignore_ascii_case("CADRG") && matches!(corners.icords, 'G' | 'D') {
        across_antimeridian(&mut corners.points);
        if polar_zone(&img.ititle) {
            if let Some(frame) = polar_frame(&corners.points, rows, cols) {
                return Ok(Some(Placement::Frame(frame)));
            }
        }
    }
    Ok(igeolo::fit(&corners, rows, cols))
}

/// The corners of the coverage section at `at`, or why there are none:
/// the file ends before them, or one is not a finite number.
fn coverage_corners(src: &Source, at: u64) -> std::result::Result<[Point; 4], String> {
    let points = read_coverage(src, at)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("the RPF coverage section at byte {at} is past the end"))?;
    if points.iter().all(|p| p.0.is_finite() && p.1.is_finite()) {
        Ok(points)
    } else {
        Err(format!(
            "the RPF coverage section at byte {at} holds corners {points:?}"
        ))
    }
}

/// Moves the right corners of a north-up frame 360 degrees east when they
/// lie west of the left ones (a frame across the antimeridian).
fn across_antimeridian(points: &mut [Point; 4]) {
    let [ul, ur, lr, ll] = *points;
    if ul.0 > ur.0 && ll.0 > lr.0 && ul.1 > ll.1 && ur.1 > lr.1 {
        points[1].0 += 360.0;
        points[2].0 += 360.0;
    }
}

/// Whether an RPF frame file name (12 characters or more) ends in zone 9
/// or J (ARC zones 9 and 18, the polar ones).
fn polar_zone(name: &str) -> bool {
    name.len() >= 12 && (name.ends_with('9') || name.ends_with('J'))
}

/// The frame of `rows` x `cols` pixels whose corners `points` (degrees, at
/// pixel edges) make a rectangle in the polar ARC zone of their hemisphere
/// (the upper left corner's); None when they do not or OSR cannot project
/// them.
fn polar_frame(points: &[Point; 4], rows: u64, cols: u64) -> Option<Georef> {
    let north = points[0].1 > 0.0;
    let (wkt, xy) = crate::base::gdal::geo::arc_polar_zone(north, points)?;
    let [ul, ur, lr, ll] = [xy[0], xy[1], xy[2], xy[3]];
    let near = |a: f64, b: f64| (a - b).abs() < RECTANGLE_TOLERANCE * b.abs();
    if !(near(ul.0, ll.0) && near(ur.0, lr.0) && near(ul.1, ur.1) && near(ll.1, lr.1)) {
        return None;
    }
    let (w, h) = ((ur.0 - ul.0) / cols as f64, (ll.1 - ul.1) / rows as f64);
    Some(Georef {
        transform: Some([w, 0.0, ul.0, 0.0, h, ul.1]),
        crs_code: None,
        crs_wkt2: Some(wkt),
        registration: Registration::Unstated,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(records: &[(u16, u32)]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(14u16.to_be_bytes());
        out.extend(14u32.to_be_bytes());
        out.extend((records.len() as u16).to_be_bytes());
        out.extend(RECORD_LEN.to_be_bytes());
        out.extend(0u32.to_be_bytes());
        for &(id, at) in records {
            out.extend(id.to_be_bytes());
            out.extend(0u32.to_be_bytes());
            out.extend(at.to_be_bytes());
        }
        out
    }

    #[test]
    fn parses_location_sections() {
        let s = section(&[(COVERAGE, 1778), (COMPRESSION_LOOKUP, 5877), (COVERAGE, 9)]);
        let locs = parse(&s).unwrap();
        assert_eq!(first(&locs, COVERAGE), Some(1778));
        assert_eq!(location(&locs, COVERAGE), Some(9));
        assert_eq!(location(&locs, MASK), None);
        // Nothing listed, records of another length, a record cut short.
        assert!(parse(&section(&[])).is_none());
        let mut odd = s.clone();
        odd[9] = 12;
        assert!(parse(&odd).is_none());
        assert!(parse(&s[..s.len() - 1]).is_none());
        assert!(parse(&s[..5]).is_none());
    }

    #[test]
    fn antimeridian_and_polar_names() {
        // 0000M033.GN3's coverage corners.
        let mut p = [
            (174.375, 51.9),
            (-168.75, 51.9),
            (-168.75, 41.5),
            (174.375, 41.5),
        ];
        across_antimeridian(&mut p);
        assert_eq!(p[1].0, 191.25);
        assert_eq!(p[2].0, 191.25);
        // Already east of the left corners: unchanged.
        across_antimeridian(&mut p);
        assert_eq!(p[1].0, 191.25);
        assert!(polar_zone("00000023.GN9") && polar_zone("00000023.GNJ"));
        assert!(!polar_zone("0000M033.GN3") && !polar_zone("23.GN9"));
    }

    #[test]
    #[cfg_attr(not(feature = "gdal"), ignore = "needs GDAL\'s OSR")]
    fn polar_frames_must_be_rectangles() {
        // bug3337.ntf's corners: a square in ARC zone 9.
        let square = [
            (-71.56505117707799, 74.1886116991581),
            (-45.0, 82.92893218813452),
            (-18.434948822922017, 74.1886116991581),
            (-45.0, 68.78679656440357),
        ];
        let g = polar_frame(&square, 1536, 1536).unwrap();
        let t = g.transform.unwrap();
        assert!((t[2] + 1669792.3618991037).abs() < 1e-6, "{t:?}");
        assert!((t[0] - 724.736268185375).abs() < 1e-9, "{t:?}");
        assert!(g.crs_wkt2.unwrap().contains("ARC_System_Zone_09"));
        let skewed = [(-70.0, 75.0), (-45.0, 83.0), (-18.0, 74.0), (-45.0, 68.0)];
        assert!(polar_frame(&skewed, 1536, 1536).is_none());
    }
}
