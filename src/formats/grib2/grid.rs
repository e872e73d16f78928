//! Section 3, the grid definition: the grid's size, the order its points
//! are stored in, and its georeferencing as GDAL's GRIB driver reports it
//! (latitude/longitude, rotated, Mercator, polar stereographic and Lambert
//! conformal grids).

use super::sections::{be_signed, be_u64, field, template};
use crate::base::gdal::crs_params::{Earth, GribProjection};
use crate::conventions::geozarr::Georef;
use crate::formats::grib_grid::{LatLon, Placement, Shape};

/// Grid templates whose size and scanning mode are read (3.0 lat/lon,
/// 3.1 rotated lat/lon, 3.10 Mercator, 3.20 polar stereographic, 3.30
/// Lambert conformal,
/// 3.40 regular Gaussian) with the offset of their scanning mode.
const SCAN_MODE_AT: &[(u16, usize)] = &[(0, 71), (1, 71), (10, 59), (20, 64), (30, 64), (40, 71)];

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

    /// The grid's size and scanning order.
    pub fn shape(&self) -> Shape {
        Shape {
            ni: self.ni,
            nj: self.nj,
            scan: self.scan,
        }
    }

    /// Number of grid points.
    pub fn points(&self) -> usize {
        self.shape().points()
    }

    /// Where the `k`-th stored point goes in the grid as GDAL shows it:
    /// row-major, the first row the north edge, columns west to east.
    pub fn north_up_index(&self, k: usize) -> usize {
        self.shape().north_up_index(k)
    }

    /// The georeferencing of the grid as GDAL's GRIB driver reports it:
    /// regular latitude/longitude (template 3.0), rotated latitude/longitude
    /// (3.1), Mercator (3.10), polar stereographic (3.20) and Lambert
    /// conformal (3.30) grids; others are refused.
    pub fn georeferencing(&self) -> Result<Georef, String> {
        let earth = self.earth()?;
        self.placement()?.georeferencing(&self.shape(), earth)
    }

    /// The stored column GDAL's GRIB driver serves first when it splits a
    /// global latitude/longitude grid (template 3.0) from 0 to 360 degrees
    /// at the antimeridian (see [`Placement::antimeridian_column`]).
    pub fn antimeridian_column(&self) -> Option<u64> {
        self.placement().ok()?.antimeridian_column(&self.shape())
    }

    /// Where the grid lies, from its template's numbers.
    fn placement(&self) -> Result<Placement, String> {
        match self.template {
            0 | 40 => Ok(Placement::LatLon(self.latlon()?)),
            1 => Ok(Placement::Rotated {
                grid: LatLon {
                    regular: false,
                    ..self.latlon()?
                },
                south_pole: (self.angle(72)?, self.angle(76)?),
                angle: f64::from(f32::from_bits(
                    be_u64(field(&self.definition, 3, 80 - 14, 4)?) as u32,
                )),
            }),
            10 | 20 | 30 => self.projected(),
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

    /// Templates 3.0, 3.1 and 3.40: first and last points, increments.
    fn latlon(&self) -> Result<LatLon, String> {
        if be_u64(field(&self.definition, 3, 38 - 14, 4)?) != 0 {
            return Err(
                "latitude/longitude grids with a basic angle other than micro-degrees are not supported".into(),
            );
        }
        // A Gaussian grid (3.40) gives N, its parallels between a pole and
        // the equator, where 3.0 gives Dj: GDAL spaces its rows 90/N
        // degrees apart (unless the first and last latitudes say otherwise,
        // the rule of 3.0), not at the Gaussian latitudes.
        let dj = match self.template {
            40 => 90.0 / self.step(67)?.max(1.0),
            _ => self.step(67)? * MICRO,
        };
        Ok(LatLon {
            first: (self.angle(46)?, self.angle(50)?),
            last: (self.angle(55)?, self.angle(59)?),
            di: self.step(63)? * MICRO,
            dj,
            regular: self.template == 0,
        })
    }

    /// Templates 3.10, 3.20, 3.30: GDAL's projection of the grid's
    /// parameters, the first point, steps in metres.
    fn projected(&self) -> Result<Placement, String> {
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
        Ok(Placement::Projected {
            projection,
            first: (la1, lo1),
            steps: (self.step(dx_at)? / 1000.0, self.step(dx_at + 4)? / 1000.0),
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
