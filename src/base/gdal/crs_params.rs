//! What the engine hands OSR to make a CRS or a transform of: a GRIB2
//! grid's figure of the earth and map projection, image corners for an
//! affine fit. Shared by [`super::geo`] and its twin without GDAL.

/// A ground control point: ((pixel, line), (x, y)).
pub type ControlPoint = ((f64, f64), (f64, f64));

/// The figure of the earth of a GRIB2 grid (code table 3.2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Earth {
    /// WGS 84.
    Wgs84,
    /// An ellipsoid of semi-major axis `a` metres and inverse flattening
    /// `inv_f` (0: a sphere).
    Ellipsoid {
        /// Semi-major axis in metres.
        a: f64,
        /// Inverse flattening, 0 for a sphere.
        inv_f: f64,
    },
}

/// The map projection of a GRIB2 grid, with the parameters GDAL's GRIB
/// driver gives OSR (degrees).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GribProjection {
    /// Mercator (template 3.10), true scale at `lat_ts`.
    Mercator {
        /// Latitude of true scale.
        lat_ts: f64,
    },
    /// Polar stereographic (template 3.20), true scale at `lat_ts`
    /// (whose sign is the pole's), `lon_0` straight down from the pole.
    PolarStereographic {
        /// Latitude of true scale.
        lat_ts: f64,
        /// Orientation meridian.
        lon_0: f64,
    },
    /// Lambert conformal (template 3.30).
    Lambert {
        /// First standard parallel.
        lat_1: f64,
        /// Second standard parallel.
        lat_2: f64,
        /// Latitude of origin.
        lat_0: f64,
        /// Central meridian.
        lon_0: f64,
    },
}
