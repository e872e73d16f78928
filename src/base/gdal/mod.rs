//! What the engine asks of libgdal outside the driver: configuration
//! options and the block cache size ([`options`]), geodesy through OSR
//! ([`geo`]), and what differs between the GDAL versions it builds against
//! ([`compat`]).
//!
//! Built without the `gdal` feature, [`options`] and [`geo`] are twins of
//! the same interface that need no libgdal (`options_without_gdal.rs`,
//! `geo_without_gdal.rs`): options come from the environment, and what
//! truly needs GDAL (OSR) warns that it does and gives nothing.

pub mod compat;
#[cfg_attr(not(feature = "gdal"), path = "geo_without_gdal.rs")]
pub mod geo;
#[cfg_attr(not(feature = "gdal"), path = "options_without_gdal.rs")]
pub mod options;
