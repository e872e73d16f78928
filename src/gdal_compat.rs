//! What differs between the GDAL versions chunkref builds against, on the
//! Rust side: read from the cfgs build.rs sets from the installed GDAL's
//! version (the shim's side is cpp_shim/gdal_compat.h, chosen from the same
//! headers). docs/gdal-versions.md lists the differences.

/// Whether bands of 1-byte signed integers are `GDT_Int8` bands (GDAL 3.7
/// and later). Older GDALs have no such type: such bands are Byte bands
/// marked `PIXELTYPE=SIGNEDBYTE` in `IMAGE_STRUCTURE`, as their own drivers
/// serve them.
pub const INT8_BANDS: bool = cfg!(gdal_int8);
