//! GRIB2: message sections, grid definitions, product templates, GDAL's
//! parameter tables and band descriptions.

pub mod describe;
pub mod grid;
pub mod naming;
pub mod probability;
pub mod product;
pub mod sections;
pub mod tables;
pub mod units;
