//! What differs between the GDAL versions chunkref builds against, on the
//! Rust side: read from the cfgs build.rs sets from the installed GDAL's
//! version (the shim's side is cpp_shim/gdal_compat.h, chosen from the same
//! headers). docs/gdal-versions.md lists the differences.

/// Whether bands of 1-byte signed integers are `GDT_Int8` bands (GDAL 3.7
/// and later). Older GDALs have no such type: such bands are Byte bands
/// marked `PIXELTYPE=SIGNEDBYTE` in `IMAGE_STRUCTURE`, as their own drivers
/// serve them.
pub const INT8_BANDS: bool = cfg!(gdal_int8);

/// How many `LAT_SCALE`s / `LONG_SCALE`s either side of `LAT_OFF` /
/// `LONG_OFF` the NITF driver puts `MIN/MAX_LAT/LONG` of the RPC metadata
/// it reads from RPC00B: one from GDAL 3.7.2 (OSGeo/gdal#8166: the RPC
/// normalisation maps OFF +/- SCALE to +/-1), a half before.
pub const RPC_EXTENT_SCALES: f64 = if cfg!(gdal_rpc_full_scale) { 1.0 } else { 0.5 };

/// Whether GDAL has a 16-bit float band type (`GDT_Float16`, from 3.11):
/// its Zarr, HDF5 and GTiff drivers then serve float16 arrays as Float16;
/// before, as Float32.
pub const FLOAT16_BANDS: bool = cfg!(gdal_float16);

/// Whether the GRIB driver labels a derived ensemble forecast at a point
/// in time (template 4.2; code table 4.7: spread, standard deviations,
/// ...) with its parameter's unit (`[C]`, `[K]`) rather than `[spread]`,
/// `[stddev]`, ...: GDAL 3.13.3 does, 3.10.3 does not (3.11 and 3.12 are
/// not checked); over a time interval (4.12) 3.13.3 keeps the derived
/// unit. Neither converts its values.
pub const GRIB_DERIVED_PARAMETER_UNITS: bool = cfg!(gdal_grib_derived_parameter_units);
