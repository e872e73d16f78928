//! What the engine asks of libgdal outside the driver: configuration
//! options, data files, warnings and the block cache size ([`cpl`]),
//! geodesy through OSR ([`geo`]), and what differs between the GDAL
//! versions it builds against ([`compat`]).
//!
//! Built without the `gdal` feature, [`cpl`] and [`geo`] are twins of the
//! same interface that need no libgdal (`cpl_without_gdal.rs`,
//! `geo_without_gdal.rs`): options come from the environment, data files
//! from `GDAL_DATA`, warnings go to standard error, and what truly needs
//! GDAL (OSR) warns that it does and gives nothing.

pub mod compat;
#[cfg_attr(not(feature = "gdal"), path = "cpl_without_gdal.rs")]
pub mod cpl;
pub mod crs_params;
#[cfg_attr(not(feature = "gdal"), path = "geo_without_gdal.rs")]
pub mod geo;

/// GDAL's network file systems (prefixes also match `_streaming` variants).
pub const NETWORK_VSI: [&str; 9] = [
    "/vsicurl",
    "/vsis3",
    "/vsigs",
    "/vsiaz",
    "/vsiadls",
    "/vsioss",
    "/vsiswift",
    "/vsiwebhdfs",
    "/vsihdfs",
];
