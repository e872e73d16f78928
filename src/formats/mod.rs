//! The header knowledge of the source formats that both halves use: the
//! builders to index a file, the codecs to check and decode its chunks.

pub mod dted;
pub mod grib1;
pub mod grib2;
pub mod grib_grid;
pub mod j2k;
pub mod netcdf3;
pub mod nitf;
pub mod tiff;
