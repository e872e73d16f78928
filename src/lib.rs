//! chunkref: a GDAL raster driver for chunk indexes, and the engine behind
//! it.
//!
//! The modules are layers, each importing only those below it
//! (docs/architecture.md; `scripts/check-layers.py` holds them there):
//!
//! - [`base`]: element types, errors, buffers, warnings, numbers, times,
//!   per-process state, and what libgdal gives the engine (behind the `gdal`
//!   feature);
//! - [`conventions`]: what the indexes write down: `chunkref:*` attribute
//!   names, GeoZarr georeferencing, colour interpretation;
//! - [`io`]: settings, URL resolution, fetching ranges, sources and index
//!   files;
//! - [`formats`]: header knowledge of the source formats (TIFF, JPEG 2000,
//!   NITF, DTED, GRIB2, NetCDF-3) that both halves use;
//! - [`codec`]: one file per codec and the registry listing them;
//! - [`index`]: every index form read into one [`index::Index`];
//! - [`read`]: the read half: chunks, caches, windows, georeferencing, the
//!   raster view;
//! - [`builders`]: the build half (`chunkref index`): builders per format,
//!   writers, stacks, mosaics;
//! - the faces: [`driver`] (the GDAL driver's C ABI), [`fuzzing`] (the fuzz
//!   targets' entry points) and the `chunkref` command (`src/bin/`).

pub mod base;
pub mod builders;
pub mod codec;
pub mod conventions;
#[cfg(feature = "gdal")]
pub mod driver;
pub mod formats;
pub mod fuzzing;
pub mod index;
pub mod io;
pub mod read;

pub use base::error::{Error, Result};
