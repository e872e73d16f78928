//! chunkref: a GDAL raster driver for chunk indexes.
//!
//! The data flows through one module per stage:
//! [`index`] (read an index into [`refs`] tables and [`zarr`] metadata) ->
//! [`resolve`] (URL to location) -> [`fetch`] (bytes, configured by [`config`]) -> [`codec`] (decode) ->
//! [`assemble`] (into GDAL's block buffers). [`raster`] is the GDAL view
//! (levels, bands, subdatasets) and [`ffi`] the C ABI used by the C++ shim.

pub mod assemble;
pub mod axes;
pub mod block_windows;
pub mod blocks;
pub mod builder;
pub mod cf_time;
pub mod chunk;
pub mod chunk_cache;
pub mod codec;
pub mod config;
pub mod datetime;
pub mod dted;
pub mod dtype;
pub mod error;
pub mod fetch;
pub mod ffi;
pub mod fuzzing;
pub mod gdal;
pub mod gdal_compat;
pub mod gdal_geo;
pub mod georef;
pub mod grib2;
pub mod hdf5;
pub mod identify;
pub mod index;
pub mod index_cache;
pub mod j2k;
pub mod location_info;
pub mod mosaic;
pub mod netcdf3;
pub mod nitf;
pub mod printf;
pub mod process;
pub mod progress;
pub mod raster;
pub mod read_ahead;
pub mod refs;
pub mod resolve;
pub mod sampled;
pub mod sidecars;
pub mod source;
pub mod tiff;
pub mod warnings;
pub mod window;
pub mod zarr;
pub mod zarr_store;

pub use error::{Error, Result};
