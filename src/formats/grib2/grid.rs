//! Section 3, the grid definition: the grid's size, the order its points
//! are stored in, and its georeferencing as GDAL's GRIB driver reports it
//! (latitude/longitude, rotated, Mercator, polar stereographic and Lambert
//! conformal grids).

use super::sections::{be_signed, be_u64, field, template};
use crate::base::gdal::crs_params::{Earth, GribProjection};
use crate::base::gdal::geo::grib_crs;
use crate::conventions::geozarr::{Georef, Registration};

/// Grid templates whose size and scanning mode are read (3.0 lat/lon,
/// 3.1 rotated lat/lon, 3.10 Mercator, 3.20 polar stereographic, 3.30
/// Lambert conformal,
/// 3.40 regular Gaussian) with the offset of their scanning mode.
const SCAN_MODE_AT: &[(u16, usize)] = &[(0, 71), (1, 71), (10, 59), (20, 64), (30, 64), (40, 71)];

/// Scanning mode flags (code table 3.4).
const MINUS_I: u8 = 0x80;
const PLUS_J: u8 = 0x40;
const J_CONSECUTIVE: u8 = 0x20;
const BOUSTROPHEDON: u8 = 0x10;

/// Micro-degrees, GRIB2's unit of angles (with the default basic angle).
const MICRO: f64 = 1e-6;

/// The grid of a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Grid definition template number.
    pub template: u16,
    /// Points along a parallel (columns).
    pub ni: u32,
    /// Points along a meridian (rows).
    pub nj: u32,
    /// Scanning mode flags (code table 3.4).
    pub scan: u8,
    /// The section's bytes from the shape of the earth on (for
    /// georeferencing and grouping: two messages share a grid when these
    /// are equal).
    definition: Vec<u8>,
}

impl Grid {
    /// Reads section 3.
    pub fn parse(s3: &[u8]) -> Result<Grid, String> {
        let number = template(s3, 3)?;
        let &(_, scan_at) = SCAN_MODE_AT
            .iter()
            .find(|(t, _)| *t == number)
            .ok_or_else(|| format!("grid definition template 3.{number} is not supported"))?;
        if s3[5] != 0 {
            return Err(format!(
                "grid definition source {} (only template-defined grids are read)",
                s3[5]
            ));
        }
        if s3[10] != 0 {
            return Err(
                "grids with a list of points per row (quasi-regular, reduced Gaussian) are not \
                 supported (GDAL's GRIB driver does not read them as they are either)"
                    .into(),
            );
        }
        let points = be_u64(field(s3, 3, 6, 4)?);
        let ni = be_u64(field(s3, 3, 30, 4)?) as u32;
        let nj = be_u64(field(s3, 3, 34, 4)?) as u32;
        let scan = field(s3, 3, scan_at, 1)?[0];
        if u64::from(ni) * u64::from(nj) != points || points == 0 {
            return Err(format!(
                "the grid of {ni} x {nj} points does not hold the {points} points section 3 declares"
            ));
        }
        Ok(Grid {
            template: number,
            ni,
            nj,
            scan,
            definition: s3[14..].to_vec(),
        })
    }

    /// Number of grid points.
    pub fn points(&self) -> usize {
        self.ni as usize * self.nj as usize
    }

    /// Where the `k`-th stored point goes in the grid as GDAL shows it:
    /// row-major, the first row the north edge, columns west to east.
    pub fn north_up_index(&self, k: usize) -> usize {
        let (ni, nj) = (self.ni as usize, self.nj as usize);
        let (mut i, mut j) = if self.scan & J_CONSECUTIVE == 0 {
            (k % ni, k / ni)
        } else {
            (k / nj, k % nj)
        };
        if self.scan & BOUSTROPHEDON != 0 {
            if self.scan & J_CONSECUTIVE == 0 && j % 2 == 1 {
                i = ni - 1 - i;
            } else if self.scan & J_CONSECUTIVE != 0 && i % 2 == 1 {
                j = nj - 1 - j;
            }
        }
        let col = if self.scan & MINUS_I == 0 {
            i
        } else {
            ni - 1 - i
        };
        let row = if self.scan & PLUS_J == 0 {
            j
        } else {
            nj - 1 - j
        };
        row * ni + col
    }

    /// The georeferencing of the grid as GDAL's GRIB driver reports it:
    /// regular latitude/longitude (template 3.0), rotated latitude/longitude
    /// (3.1), Mercator (3.10), polar stereographic (3.20) and Lambert
    /// conformal (3.30) grids; others are refused.
    pub fn georeferencing(&self) -> Result<Georef, String> {
        let earth = self.earth()?;
        match self.template {
            0 | 40 => self.latlon(earth),
            1 => self.rotated(earth),
            10 | 20 | 30 => self.projected(earth),
            other => Err(format!(
                "indexing grid definition template 3.{other} is not supported (3.0, 3.1, 3.10, 3.20 and 3.30 are)"
            )),
        }
    }

    /// An angle of the definition at section offset `at`, in degrees.
    fn angle(&self, at: usize) -> Result<f64, String> {
        Ok(be_signed(field(&self.definition, 3, at - 14, 4)?) as f64 * MICRO)
    }

    /// A length of the definition at section offset `at`, in millimetres
    /// (projected grids) or micro-degrees (latitude/longitude grids).
    fn step(&self, at: usize) -> Result<f64, String> {
        Ok(be_u64(field(&self.definition, 3, at - 14, 4)?) as f64)
    }

    /// Templates 3.0 and 3.40: the pixel size from the first and last points (as
    /// GDAL computes it, more precise than the rounded increments), the
    /// west edge moved by -360 degrees past 180 degrees east.
    fn latlon(&self, earth: Earth) -> Result<Georef, String> {
        if be_u64(field(&self.definition, 3, 38 - 14, 4)?) != 0 {
            return Err(
                "latitude/longitude grids with a basic angle other than micro-degrees are not supported".into(),
            );
        }
        let (la1, la2) = (self.angle(46)?, self.angle(55)?);
        // A Gaussian grid (3.40) gives N, its parallels between a pole and
        // the equator, where 3.0 gives Dj: GDAL spaces its rows 90/N
        // degrees apart (unless the first and last latitudes say otherwise,
        // the rule of 3.0), not at the Gaussian latitudes.
        let dj = match self.template {
            40 => 90.0 / self.step(67)?.max(1.0),
            _ => self.step(67)? * MICRO,
        };
        let (mut west, dx) = self.columns()?;
        let (north, south) = (la1.max(la2), la1.min(la2));
        let dy = extent_step(north - south, self.nj, dj);
        if west > 180.0 {
            west -= 360.0;
        }
        let (crs_code, crs_wkt2) = match earth {
            Earth::Wgs84 => (Some("EPSG:4326".to_string()), None),
            _ => {
                let (wkt, _, _) = grib_crs(None, earth, 0.0, 0.0)
                    .ok_or("OSR cannot make the grid's geographic CRS")?;
                (None, Some(wkt))
            }
        };
        Ok(Georef {
            transform: Some([dx, 0.0, west - dx / 2.0, 0.0, -dy, north + dy / 2.0]),
            crs_code,
            crs_wkt2,
            registration: Registration::Unstated,
        })
    }

    /// Template 3.0 (and 3.1): the west pixel centre of a row, 0 to 360
    /// degrees as the message states it, and the pixel width.
    fn columns(&self) -> Result<(f64, f64), String> {
        let (lo1, lo2) = (self.angle(50)?, self.angle(59)?);
        let di = self.step(63)? * MICRO;
        let (west, east) = if self.scan & MINUS_I == 0 {
            (lo1, lo2)
        } else {
            (lo2, lo1)
        };
        let span = if west > east {
            360.0 - (west - east)
        } else {
            east - west
        };
        Ok((west, extent_step(span, self.ni, di)))
    }

    /// The stored column GDAL's GRIB driver serves first when it splits a
    /// global latitude/longitude grid (template 3.0) from 0 to 360 degrees
    /// at the antimeridian (`GRIB_ADJUST_LONGITUDE_RANGE`, see
    /// [`grib_rule`]).
    pub fn antimeridian_column(&self) -> Option<u64> {
        if self.template != 0 {
            return None;
        }
        let (west, dx) = self.columns().ok()?;
        let east = west + f64::from(self.ni.saturating_sub(1)) * dx;
        match grib_rule(west, east, dx, u64::from(self.ni)) {
            GribLongitudes::Split(column) => Some(column),
            _ => None,
        }
    }

    /// Template 3.1: a latitude/longitude grid in rotated coordinates, on
    /// GDAL's CRS of a pole rotation (GRIB convention).
    fn rotated(&self, earth: Earth) -> Result<Georef, String> {
        let (pole_lat, pole_lon) = (self.angle(72)?, self.angle(76)?);
        let angle = f32::from_bits(be_u64(field(&self.definition, 3, 80 - 14, 4)?) as u32);
        let degree = "ANGLEUNIT[\"degree\",0.0174532925199433]";
        let datum = match earth {
            Earth::Wgs84 => {
                "DATUM[\"World Geodetic System 1984\",ELLIPSOID[\"WGS 84\",6378137,298.257223563]]"
                    .to_string()
            }
            Earth::Ellipsoid { a, inv_f } => {
                let name = if inv_f == 0.0 {
                    "Sphere"
                } else {
                    "Spheroid imported from GRIB file"
                };
                format!("DATUM[\"unnamed\",ELLIPSOID[\"{name}\",{a},{inv_f}]]")
            }
        };
        let name = "Coordinate System imported from GRIB file";
        let parameter = |what: &str, value: f64| {
            format!("PARAMETER[\"{what} (GRIB convention)\",{value},{degree}]")
        };
        let wkt = format!(
            "GEOGCRS[\"{name}\",BASEGEOGCRS[\"{name}\",{datum},PRIMEM[\"Greenwich\",0,{degree}]],\
             DERIVINGCONVERSION[\"Pole rotation (GRIB convention)\",METHOD[\"Pole rotation (GRIB convention)\"],{},{},{}],\
             CS[ellipsoidal,2],AXIS[\"latitude\",north,ORDER[1],{degree}],AXIS[\"longitude\",east,ORDER[2],{degree}]]",
            parameter("Latitude of the southern pole", pole_lat),
            parameter("Longitude of the southern pole", pole_lon),
            parameter("Axis rotation", f64::from(angle)),
        );
        Ok(Georef {
            crs_code: None,
            crs_wkt2: Some(wkt),
            ..self.latlon(Earth::Wgs84)?
        })
    }

    /// Templates 3.10, 3.20, 3.30: GDAL's projection of the grid's
    /// parameters, the first point projected on it, steps in metres.
    fn projected(&self, earth: Earth) -> Result<Georef, String> {
        let (la1, lo1, lad) = (self.angle(38)?, self.angle(42)?, self.angle(47)?);
        let projection = match self.template {
            10 => GribProjection::Mercator { lat_ts: lad },
            20 => GribProjection::PolarStereographic {
                lat_ts: lad,
                lon_0: self.angle(51)?,
            },
            _ => {
                let lov = self.angle(51)?;
                GribProjection::Lambert {
                    lat_1: self.angle(65)?,
                    lat_2: self.angle(69)?,
                    lat_0: lad,
                    lon_0: if lov > 180.0 { lov - 360.0 } else { lov },
                }
            }
        };
        let dx_at = if self.template == 10 { 64 } else { 55 };
        let (wkt, mut x, mut y) = grib_crs(Some(projection), earth, lo1, la1)
            .ok_or_else(|| format!("OSR cannot place the grid on {projection:?}"))?;
        let (dx, dy) = (self.step(dx_at)? / 1000.0, self.step(dx_at + 4)? / 1000.0);
        if self.scan & MINUS_I != 0 {
            x -= f64::from(self.ni - 1) * dx;
        }
        if self.scan & PLUS_J != 0 {
            y += f64::from(self.nj - 1) * dy;
        }
        Ok(Georef {
            transform: Some([dx, 0.0, x - dx / 2.0, 0.0, -dy, y + dy / 2.0]),
            crs_code: None,
            crs_wkt2: Some(wkt),
            registration: Registration::Unstated,
        })
    }

    /// The shape of the earth (code table 3.2).
    fn earth(&self) -> Result<Earth, String> {
        let d = &self.definition;
        let scaled = |at: usize| {
            let factor = d[at - 14];
            let value = be_u64(&d[at + 1 - 14..at + 5 - 14]) as f64;
            value / 10f64.powi(i32::from(factor))
        };
        let sphere = |a: f64| Ok(Earth::Ellipsoid { a, inv_f: 0.0 });
        let oblate = |a: f64, b: f64| {
            Ok(Earth::Ellipsoid {
                a,
                inv_f: a / (a - b),
            })
        };
        match d[0] {
            0 => sphere(6_367_470.0),
            1 => sphere(scaled(15)),
            2 => oblate(6_378_160.0, 6_356_775.0),
            3 => oblate(scaled(20) * 1000.0, scaled(25) * 1000.0),
            4 => Ok(Earth::Ellipsoid {
                a: 6_378_137.0,
                inv_f: 298.257_222_101,
            }),
            5 => Ok(Earth::Wgs84),
            6 => sphere(6_371_229.0),
            7 => oblate(scaled(20), scaled(25)),
            8 => sphere(6_371_200.0),
            other => Err(format!(
                "shape of the earth {other} (code table 3.2) is not supported"
            )),
        }
    }
}

/// The step between `n` points `span` apart, unless it strays more than
/// 0.002 from the declared `step` (GDAL's check).
fn extent_step(span: f64, n: u32, step: f64) -> f64 {
    let from_extent = span / f64::from(n.saturating_sub(1).max(1));
    if n <= 1 || from_extent < 0.0 || (from_extent - step).abs() > 0.002 {
        step
    } else {
        from_extent
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Section 3 of a template 3.0 grid of `ni` x `nj` points, first point
    /// (`la1`, `lo1`), last (`la2`, `lo2`), steps `d` (micro-degrees).
    pub(crate) fn latlon_section(
        ni: u32,
        nj: u32,
        first: (i32, u32),
        last: (i32, u32),
        d: (u32, u32),
        scan: u8,
    ) -> Vec<u8> {
        let signed = |v: i32| {
            let m = v.unsigned_abs();
            (if v < 0 { m | 0x8000_0000 } else { m }).to_be_bytes()
        };
        let mut s = vec![0u8; 72];
        s[..4].copy_from_slice(&72u32.to_be_bytes());
        s[4] = 3;
        s[6..10].copy_from_slice(&(ni * nj).to_be_bytes());
        s[14] = 5;
        s[30..34].copy_from_slice(&ni.to_be_bytes());
        s[34..38].copy_from_slice(&nj.to_be_bytes());
        s[46..50].copy_from_slice(&signed(first.0));
        s[50..54].copy_from_slice(&first.1.to_be_bytes());
        s[55..59].copy_from_slice(&signed(last.0));
        s[59..63].copy_from_slice(&last.1.to_be_bytes());
        s[63..67].copy_from_slice(&d.0.to_be_bytes());
        s[67..71].copy_from_slice(&d.1.to_be_bytes());
        s[71] = scan;
        s
    }

    #[test]
    fn every_scanning_mode_comes_out_north_up() {
        // A 3 x 2 grid whose north-up cells are numbered 0..6; each mode
        // stores them in its own order.
        let cases: [(u8, [usize; 6]); 6] = [
            (0x00, [0, 1, 2, 3, 4, 5]),
            (0x40, [3, 4, 5, 0, 1, 2]),
            (0x80, [2, 1, 0, 5, 4, 3]),
            (0x20, [0, 3, 1, 4, 2, 5]),
            (0x60, [3, 0, 4, 1, 5, 2]),
            (0x10, [0, 1, 2, 5, 4, 3]),
        ];
        for (scan, stored) in cases {
            let s3 = latlon_section(3, 2, (1, 0), (0, 2), (1, 1), scan);
            let grid = Grid::parse(&s3).unwrap();
            let placed: Vec<usize> = (0..6).map(|k| grid.north_up_index(k)).collect();
            assert_eq!(placed, stored, "scan mode {scan:#x}");
        }
    }

    #[test]
    #[cfg_attr(not(feature = "gdal"), ignore = "needs GDAL\'s OSR")]
    fn latlon_georeferencing_matches_gdal() {
        // GDAL writes a grid whose west edge is -10 as first longitude 350.25.
        let s3 = latlon_section(
            7,
            5,
            (59_000_000, 350_250_000),
            (60_000_000, 353_250_000),
            (500_000, 250_000),
            0x40,
        );
        let georef = Grid::parse(&s3).unwrap().georeferencing().unwrap();
        assert_eq!(
            georef.transform,
            Some([0.5, 0.0, -10.0, 0.0, -0.25, 60.125])
        );
        assert_eq!(georef.crs_code.as_deref(), Some("EPSG:4326"));
        let mut sphere = s3.clone();
        sphere[14] = 6;
        let georef = Grid::parse(&sphere).unwrap().georeferencing().unwrap();
        assert!(georef.crs_wkt2.unwrap().contains("6371229,0"));
    }

    #[test]
    fn rotated_grids_carry_the_pole() {
        let mut s3 = latlon_section(
            3,
            2,
            (1_000_000, 0),
            (0, 2_000_000),
            (1_000_000, 1_000_000),
            0,
        );
        s3[12..14].copy_from_slice(&1u16.to_be_bytes());
        s3.extend_from_slice(&(40_000_000u32 | 0x8000_0000).to_be_bytes());
        s3.extend_from_slice(&10_000_000u32.to_be_bytes());
        s3.extend_from_slice(&0f32.to_bits().to_be_bytes());
        let georef = Grid::parse(&s3).unwrap().georeferencing().unwrap();
        let wkt = georef.crs_wkt2.unwrap();
        assert!(
            wkt.contains("southern pole (GRIB convention)\",-40,"),
            "{wkt}"
        );
        assert_eq!(georef.transform, Some([1.0, 0.0, -0.5, 0.0, -1.0, 1.5]));
        // Without the pole, the section is too short for its template.
        assert!(Grid::parse(&s3[..76]).unwrap().georeferencing().is_err());
    }

    #[test]
    fn bad_grids_are_refused() {
        let mut s3 = latlon_section(3, 2, (0, 0), (0, 0), (1, 1), 0);
        s3[6..10].copy_from_slice(&7u32.to_be_bytes());
        assert!(Grid::parse(&s3).unwrap_err().contains("7 points"));
        s3[12..14].copy_from_slice(&90u16.to_be_bytes());
        assert!(Grid::parse(&s3).unwrap_err().contains("3.90"));
        assert!(Grid::parse(&s3[..20]).is_err());
    }
}

/// GDAL's `Lon360to180`.
fn lon_360_to_180(lon: f64) -> f64 {
    if lon == 180.0 {
        return lon;
    }
    (lon + 180.0) % 360.0 - 180.0
}

/// What GDAL 3.6's GRIB driver does to the longitudes of a latitude/longitude
/// grid (gribdataset.cpp, `SetGribMetaData`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GribLongitudes {
    /// Served as stored.
    Kept,
    /// The first pixel centre moves to this longitude (-360 degrees).
    Shifted(f64),
    /// A global grid split at the antimeridian: this stored column is
    /// served first, at -180 degrees.
    Split(u64),
}

/// GDAL's rule for a grid of `width` columns `dx` degrees apart, the first
/// and last pixel centres at `first` and `last` degrees east (as the
/// message states them, 0 to 360).
pub fn grib_rule(first: f64, last: f64, dx: f64, width: u64) -> GribLongitudes {
    if !(first + dx >= 180.0 || last - dx >= 180.0) {
        return GribLongitudes::Kept;
    }
    let extent = dx * width as f64;
    if extent > 360.0 {
        return GribLongitudes::Kept;
    }
    if (360.0 - extent).abs() < dx / 4.0 && first <= 180.0 {
        let column = ((180.0 - first) / dx).ceil();
        if column >= 0.0 && column < width as f64 {
            return GribLongitudes::Split(column as u64);
        }
        return GribLongitudes::Kept;
    }
    GribLongitudes::Shifted(lon_360_to_180(first))
}
