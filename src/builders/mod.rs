//! The build half: what `chunkref index` and `chunkref convert` run. One
//! builder per source format, the choice among them ([`builder`]), the
//! writers of every index form ([`writers`]), mosaics and progress.

pub mod builder;
pub mod collection;
pub mod dted;
pub mod grib;
mod grib1;
mod grib2;
mod grib_parts;
pub mod hdf5;
pub mod j2k;
pub mod mosaic;
pub mod netcdf3;
pub mod nitf;
pub mod stac;
pub mod tiff;
pub mod writers;
pub mod zarr_store;
