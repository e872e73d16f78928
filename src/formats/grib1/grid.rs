//! Section 2, the grid definition (GDS): the grid's size, scanning mode,
//! placement and earth as degrib reads them (`ReadGrib1Sect2`), for the
//! grid types GDAL's GRIB driver georeferences: latitude/longitude (0),
//! Mercator (1), Lambert conformal (3), Gaussian latitude/longitude (4),
//! polar stereographic (5) and rotated latitude/longitude (10).

use super::product::Product;
use super::sections::ibm_float;
use super::{malformed, unsupported, Refusal};
use crate::base::gdal::crs_params::{Earth, GribProjection};
use crate::formats::grib2::sections::{be_signed, be_u64};
use crate::formats::grib_grid::{LatLon, Placement, Shape};

/// GRIB1's unit of angles: millidegrees.
const MILLI: f64 = 1e-3;
/// Resolution and component flags: the earth is oblate (IAU 1965).
const OBLATE: u8 = 0x40;
/// Polar stereographic projection centre flag: the south pole.
const SOUTH_POLE: u8 = 0x80;
/// A missing number of points along a parallel: a quasi-regular grid.
const MISSING_NI: u32 = 0xFFFF;
/// NCEP, whose spheres degrib takes for 6371.2 km.
const NCEP: u8 = 7;

/// A grid, as degrib reads its GDS.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Data representation type (GRIB1 table 6).
    pub grid_type: u8,
    /// Size and scanning mode.
    pub shape: Shape,
    /// Where the grid lies.
    pub placement: Placement,
    /// The figure of the earth.
    pub earth: Earth,
}

/// The names of GRIB1 table 6 grid types, for refusals.
fn type_name(grid_type: u8) -> &'static str {
    match grid_type {
        2 => "gnomonic",
        5 => "polar stereographic",
        6 => "UTM",
        7 => "simple polyconic",
        8 => "Albers equal-area",
        9 => "Miller cylindrical",
        13 => "oblique Lambert conformal",
        14 => "rotated Gaussian latitude/longitude",
        20 | 24 => "stretched latitude/longitude or Gaussian",
        30 | 34 => "stretched and rotated latitude/longitude or Gaussian",
        50 => "spherical harmonic coefficients",
        60 | 70 | 80 => "spherical harmonics",
        90 => "space view",
        _ => "unknown",
    }
}

impl Grid {
    /// Reads the GDS `gds` of a message whose PDS is `product` (the
    /// centre decides the radius of a spherical earth, as in degrib).
    pub fn parse(gds: &[u8], product: &Product) -> Result<Grid, Refusal> {
        let grid_type = gds[5];
        let need = match grid_type {
            0 | 4 | 5 => 32,
            1 | 3 | 10 => 42,
            other => {
                return unsupported(format!(
                    "GRIB1 grid type {other} ({}) is not supported (latitude/longitude 0, \
                     Mercator 1, Lambert 3, Gaussian 4, polar stereographic 5 and rotated \
                     latitude/longitude 10 are)",
                    type_name(other)
                ))
            }
        };
        if gds.len() < need {
            return malformed(format!(
                "the grid definition section of grid type {grid_type} holds {} bytes, not {need}",
                gds.len()
            ));
        }
        let u16_at = |at: usize| be_u64(&gds[at..at + 2]) as u32;
        let signed = |at: usize| be_signed(&gds[at..at + 3]) as f64;
        let angle = |at: usize| signed(at) * MILLI;
        let (ni, nj) = (u16_at(6), u16_at(8));
        if ni == MISSING_NI && matches!(grid_type, 0 | 4 | 10) {
            return unsupported(
                "quasi-regular (thinned or reduced) grids, whose rows hold different numbers of \
                 points, are not supported (GDAL's GRIB driver does not read them either)",
            );
        }
        if ni == 0 || nj == 0 {
            return malformed(format!("the grid has {ni} x {nj} points"));
        }
        let resolution = gds[16];
        let first = (angle(10), angle(13));
        let scan = gds[27];
        let latlon = |dj: f64| LatLon {
            first,
            last: (angle(17), angle(20)),
            di: f64::from(u16_at(23)) * MILLI,
            dj,
            regular: grid_type == 0,
        };
        let placement = match grid_type {
            0 | 10 => {
                let grid = latlon(f64::from(u16_at(25)) * MILLI);
                if grid_type == 0 {
                    Placement::LatLon(grid)
                } else {
                    rotated(gds, grid)?
                }
            }
            4 => match u16_at(25) {
                0 => {
                    return malformed(
                        "a Gaussian grid of 0 parallels between a pole and the equator",
                    )
                }
                n => Placement::LatLon(latlon(90.0 / f64::from(n))),
            },
            5 => Placement::Projected {
                // degrib gives a GRIB1 polar stereographic grid a true
                // scale latitude of 60 degrees (north, whatever the pole).
                projection: GribProjection::PolarStereographic {
                    lat_ts: 60.0,
                    lon_0: angle(17),
                },
                first,
                steps: (signed(20), signed(23)),
            },
            3 => Placement::Projected {
                projection: GribProjection::Lambert {
                    lat_1: angle(28),
                    lat_2: angle(31),
                    lat_0: angle(28),
                    lon_0: angle(17),
                },
                first,
                steps: (signed(20), signed(23)),
            },
            _ => Placement::Projected {
                projection: GribProjection::Mercator { lat_ts: angle(23) },
                first,
                steps: (signed(28), signed(31)),
            },
        };
        if grid_type == 5 && gds[26] & SOUTH_POLE != 0 {
            return unsupported(
                "south polar stereographic GRIB1 grids are not supported (GDAL 3.6's GRIB driver \
                 places them on a north polar projection)",
            );
        }
        Ok(Grid {
            grid_type,
            shape: Shape { ni, nj, scan },
            placement,
            earth: earth(resolution, product.centre),
        })
    }
}

/// A rotated grid's southern pole and angle (octets 33-42), refused when
/// absent (degrib then reads the grid unrotated).
fn rotated(gds: &[u8], grid: LatLon) -> Result<Placement, Refusal> {
    let marker = &gds[27..37];
    if marker.iter().all(|&b| b == 0) || marker.iter().all(|&b| b == 255) {
        return unsupported("a rotated latitude/longitude grid without its southern pole");
    }
    let angle = |at: usize| be_signed(&gds[at..at + 3]) as f64 * MILLI;
    let bits = u32::from_be_bytes([gds[38], gds[39], gds[40], gds[41]]);
    Ok(Placement::Rotated {
        grid: LatLon {
            regular: false,
            ..grid
        },
        south_pole: (angle(32), angle(35)),
        angle: ibm_float(bits),
    })
}

/// The earth degrib takes for GRIB1: a sphere of 6367.47 km (6371.2 km for
/// NCEP's messages), or the IAU 1965 spheroid when the resolution flags
/// say the earth is oblate.
fn earth(resolution: u8, centre: u8) -> Earth {
    if resolution & OBLATE != 0 {
        // degrib's axes in km, the flattening computed from them.
        let (major, minor) = (6378.160_f64, 6356.775_f64);
        return Earth::Ellipsoid {
            a: major * 1000.0,
            inv_f: major / (major - minor),
        };
    }
    let radius = if centre == NCEP { 6371.2 } else { 6367.47 };
    Earth::Ellipsoid {
        a: radius * 1000.0,
        inv_f: 0.0,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::formats::grib1::product::tests::pds;

    /// A 32-byte latitude/longitude GDS of `ni` x `nj` points, its first
    /// and last points (latitude, longitude) and increments in
    /// millidegrees, scanning mode `scan`.
    pub(crate) fn latlon_gds(
        (ni, nj): (u16, u16),
        corners: [(i32, i32); 2],
        steps: (u16, u16),
        scan: u8,
    ) -> Vec<u8> {
        let mut g = vec![0u8; 32];
        (g[2], g[4], g[16], g[27]) = (32, 255, 0x80, scan);
        for (at, v) in [(6, ni), (8, nj), (23, steps.0), (25, steps.1)] {
            g[at..at + 2].copy_from_slice(&v.to_be_bytes());
        }
        let [(la1, lo1), (la2, lo2)] = corners;
        for (at, v) in [(10, la1), (13, lo1), (17, la2), (20, lo2)] {
            let sign = if v < 0 { 0x80_0000 } else { 0 };
            g[at..at + 3].copy_from_slice(&(v.unsigned_abs() | sign).to_be_bytes()[1..]);
        }
        g
    }

    fn product() -> Product {
        Product::parse(&pds(167, 0, 0, 0, 0, 0x80)).unwrap()
    }

    #[test]
    fn reads_a_latlon_grid() {
        let gds = latlon_gds((3, 2), [(1000, 0), (0, 2000)], (1000, 1000), 0);
        let grid = Grid::parse(&gds, &product()).unwrap();
        assert_eq!(
            grid.shape,
            Shape {
                ni: 3,
                nj: 2,
                scan: 0
            }
        );
        assert_eq!(
            grid.earth,
            Earth::Ellipsoid {
                a: 6_367_470.0,
                inv_f: 0.0
            }
        );
        let Placement::LatLon(latlon) = grid.placement else {
            panic!("{:?}", grid.placement)
        };
        assert_eq!((latlon.first, latlon.last), ((1.0, 0.0), (0.0, 2.0)));
    }

    #[test]
    fn refuses_what_gdal_does_not_georeference() {
        let mut thinned = latlon_gds((0xFFFF, 2), [(0, 0), (0, 0)], (1, 1), 0);
        let e = Grid::parse(&thinned, &product()).unwrap_err();
        assert!(e.text().contains("quasi-regular"), "{e:?}");
        thinned[5] = 50;
        let e = Grid::parse(&thinned, &product()).unwrap_err();
        assert!(
            e.text().contains("grid type 50 (spherical harmonic"),
            "{e:?}"
        );
        let mut mercator = latlon_gds((3, 2), [(0, 0), (0, 0)], (1, 1), 0);
        mercator[5] = 1;
        assert!(matches!(
            Grid::parse(&mercator, &product()),
            Err(Refusal::Malformed(_))
        ));
    }
}
