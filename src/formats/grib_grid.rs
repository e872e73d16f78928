//! GRIB grids as degrib (the library of GDAL's GRIB driver) describes
//! them for both editions: a grid's size and scanning order ([`Shape`]),
//! where it lies ([`Placement`], in degrees and metres whatever units the
//! edition stores), and the georeferencing GDAL 3.6's GRIB driver reports
//! for it. `formats::grib1` and `formats::grib2` read their grid sections
//! into these.

use crate::base::gdal::crs_params::{Earth, GribProjection};
use crate::base::gdal::geo::grib_crs;
use crate::conventions::geozarr::{Georef, Registration};

/// Scanning mode flags (GRIB1 table 8, GRIB2 code table 3.4).
const MINUS_I: u8 = 0x80;
const PLUS_J: u8 = 0x40;
const J_CONSECUTIVE: u8 = 0x20;
const BOUSTROPHEDON: u8 = 0x10;

/// A grid's size and the order its points are stored in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Points along a parallel (columns).
    pub ni: u32,
    /// Points along a meridian (rows).
    pub nj: u32,
    /// Scanning mode flags.
    pub scan: u8,
}

impl Shape {
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
}

/// A latitude/longitude grid: its first and last points and increments,
/// in degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatLon {
    /// Latitude and longitude of the first point.
    pub first: (f64, f64),
    /// Latitude and longitude of the last point.
    pub last: (f64, f64),
    /// Increment along a parallel.
    pub di: f64,
    /// Increment along a meridian (a Gaussian grid: 90 / N, as GDAL has it).
    pub dj: f64,
    /// A regular grid (not Gaussian, not rotated): GDAL may split it at
    /// the antimeridian ([`grib_rule`]).
    pub regular: bool,
}

/// Where a grid lies, as GDAL's GRIB driver places it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Placement {
    /// Latitude/longitude (regular or Gaussian).
    LatLon(LatLon),
    /// Latitude/longitude in coordinates rotated so that the south pole
    /// is at `south_pole` (latitude, longitude), turned by `angle` degrees.
    Rotated {
        /// The grid in rotated coordinates.
        grid: LatLon,
        /// Latitude and longitude of the southern pole of the rotation.
        south_pole: (f64, f64),
        /// Angle of rotation.
        angle: f64,
    },
    /// A projected grid: its first point (latitude, longitude) and steps
    /// in metres.
    Projected {
        /// GDAL's projection of the grid.
        projection: GribProjection,
        /// Latitude and longitude of the first point.
        first: (f64, f64),
        /// Steps along x and y, in metres.
        steps: (f64, f64),
    },
}

impl Placement {
    /// The georeferencing GDAL's GRIB driver reports for a grid of
    /// `shape` placed so on `earth`.
    pub fn georeferencing(&self, shape: &Shape, earth: Earth) -> Result<Georef, String> {
        match *self {
            Placement::LatLon(grid) => latlon(&grid, shape, earth),
            Placement::Rotated {
                grid,
                south_pole,
                angle,
            } => Ok(Georef {
                crs_code: None,
                crs_wkt2: Some(rotated_wkt(earth, south_pole, angle)),
                ..latlon(&grid, shape, Earth::Wgs84)?
            }),
            Placement::Projected {
                projection,
                first,
                steps,
            } => projected(projection, first, steps, shape, earth),
        }
    }

    /// The stored column GDAL's GRIB driver serves first when it splits a
    /// global regular latitude/longitude grid from 0 to 360 degrees at the
    /// antimeridian (`GRIB_ADJUST_LONGITUDE_RANGE`, see [`grib_rule`]).
    pub fn antimeridian_column(&self, shape: &Shape) -> Option<u64> {
        let Placement::LatLon(grid) = self else {
            return None;
        };
        if !grid.regular {
            return None;
        }
        let (west, dx) = columns(grid, shape);
        let east = west + f64::from(shape.ni.saturating_sub(1)) * dx;
        match grib_rule(west, east, dx, u64::from(shape.ni)) {
            GribLongitudes::Split(column) => Some(column),
            _ => None,
        }
    }
}

/// A latitude/longitude grid: the pixel size from the first and last
/// points (as GDAL computes it, more precise than the rounded
/// increments), the west edge moved by -360 degrees past 180 degrees east.
fn latlon(grid: &LatLon, shape: &Shape, earth: Earth) -> Result<Georef, String> {
    let (la1, la2) = (grid.first.0, grid.last.0);
    let (mut west, dx) = columns(grid, shape);
    let (north, south) = (la1.max(la2), la1.min(la2));
    let dy = extent_step(north - south, shape.nj, grid.dj);
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

/// The west pixel centre of a row, 0 to 360 degrees as the message states
/// it, and the pixel width.
fn columns(grid: &LatLon, shape: &Shape) -> (f64, f64) {
    let (lo1, lo2) = (grid.first.1, grid.last.1);
    let (west, east) = if shape.scan & MINUS_I == 0 {
        (lo1, lo2)
    } else {
        (lo2, lo1)
    };
    let span = if west > east {
        360.0 - (west - east)
    } else {
        east - west
    };
    (west, extent_step(span, shape.ni, grid.di))
}

/// GDAL's CRS of a pole rotation (GRIB convention) on `earth`.
fn rotated_wkt(earth: Earth, (pole_lat, pole_lon): (f64, f64), angle: f64) -> String {
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
    format!(
        "GEOGCRS[\"{name}\",BASEGEOGCRS[\"{name}\",{datum},PRIMEM[\"Greenwich\",0,{degree}]],\
         DERIVINGCONVERSION[\"Pole rotation (GRIB convention)\",METHOD[\"Pole rotation (GRIB convention)\"],{},{},{}],\
         CS[ellipsoidal,2],AXIS[\"latitude\",north,ORDER[1],{degree}],AXIS[\"longitude\",east,ORDER[2],{degree}]]",
        parameter("Latitude of the southern pole", pole_lat),
        parameter("Longitude of the southern pole", pole_lon),
        parameter("Axis rotation", angle),
    )
}

/// A projected grid: GDAL's projection, the first point projected on it,
/// the origin moved to the north-west corner as the scanning mode says.
fn projected(
    projection: GribProjection,
    (la1, lo1): (f64, f64),
    (dx, dy): (f64, f64),
    shape: &Shape,
    earth: Earth,
) -> Result<Georef, String> {
    let (wkt, mut x, mut y) = grib_crs(Some(projection), earth, lo1, la1)
        .ok_or_else(|| format!("OSR cannot place the grid on {projection:?}"))?;
    if shape.scan & MINUS_I != 0 {
        x -= f64::from(shape.ni.saturating_sub(1)) * dx;
    }
    if shape.scan & PLUS_J != 0 {
        y += f64::from(shape.nj.saturating_sub(1)) * dy;
    }
    Ok(Georef {
        transform: Some([dx, 0.0, x - dx / 2.0, 0.0, -dy, y + dy / 2.0]),
        crs_code: None,
        crs_wkt2: Some(wkt),
        registration: Registration::Unstated,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

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
            let shape = Shape { ni: 3, nj: 2, scan };
            let placed: Vec<usize> = (0..6).map(|k| shape.north_up_index(k)).collect();
            assert_eq!(placed, stored, "scan mode {scan:#x}");
        }
    }
}
