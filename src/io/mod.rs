//! Bytes in: settings, URL resolution, range fetches from local files and
//! object storage, builders' sources, and index files read by range.

pub mod config;
pub mod documents;
pub mod fetch;
pub mod index_file;
pub mod resolve;
pub mod source;
#[cfg_attr(not(feature = "gdal"), path = "vsi_without_gdal.rs")]
pub mod vsi;
