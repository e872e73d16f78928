//! The names of the attributes chunkref writes into indexes (`chunkref:*`
//! and the few plain ones) and reads back: builders write them, the read
//! side follows them. docs/driver.md says what each holds.

use serde_json::{Map, Value};

/// Attribute `chunkref index` writes on a level array: one GDAL colour
/// interpretation name per band (`Red`, `Green`, `Blue`, `Alpha`, `Gray`,
/// `Palette`, `Undefined`).
pub const COLOR_ATTRIBUTE: &str = "chunkref:color_interpretation";

/// Attribute `chunkref index` writes on palette arrays: the colour table as
/// `[[r, g, b, a], ...]` (0-255), for every band.
pub const COLOR_TABLE_ATTRIBUTE: &str = "chunkref:color_table";

/// Attribute `chunkref index` writes when bands differ in CF band
/// attributes (`scale_factor`, `add_offset`, `units`, `long_name`): one
/// object per band whose entries override the array's for that band.
pub const BANDS_ATTRIBUTE: &str = "chunkref:bands";

/// Attribute (in an entry of [`BANDS_ATTRIBUTE`]) `chunkref index` writes
/// for items a source format's GDAL driver shows as band metadata (GRIB's
/// `GRIB_REF_TIME`, ...): an object of item names and text values, shown
/// as they are.
pub const METADATA_ITEMS_ATTRIBUTE: &str = "chunkref:metadata";

/// Array attribute `chunkref index` writes on a netCDF variable without
/// `_FillValue`: the fill value netCDF reports for it (its type's default,
/// `NC_FILL_*`, or a user-defined HDF5 fill value; for netCDF-4 variables
/// also the Zarr fill value, what unwritten chunks hold), which GDAL's
/// netCDF driver reports as nodata (not for 1-byte types); `null` when
/// netCDF reports none (a dataset without a user-defined HDF5 fill value,
/// or written without fill): then the Zarr fill value is no nodata.
pub const NETCDF_DEFAULT_FILL_ATTRIBUTE: &str = "chunkref:netcdf_default_fill";

/// Array attribute `chunkref index` writes on the rasters of a NetCDF4 /
/// HDF5 file: the GDAL driver that opens the source file by its name
/// ([`SourceDriver`]), whose rules of nodata and georeferencing the
/// driver then follows.
pub const GDAL_DRIVER_ATTRIBUTE: &str = "chunkref:gdal_driver";

/// The GDAL driver that opens a NetCDF4 / HDF5 source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceDriver {
    /// `netCDF` (a `.nc`, `.nc4`, `.cdf`, ... name): rows bottom-up unless
    /// coordinates place them, the netCDF default fill as nodata.
    NetCdf,
    /// `HDF5` (any other name): nodata only from `_FillValue`, no
    /// georeferencing from dimension scales.
    Hdf5,
}

impl SourceDriver {
    /// The attribute value naming the driver.
    pub fn name(self) -> &'static str {
        match self {
            SourceDriver::NetCdf => "netCDF",
            SourceDriver::Hdf5 => "HDF5",
        }
    }

    /// The driver [`GDAL_DRIVER_ATTRIBUTE`] names among `attributes` (an
    /// array's, or the root group's), if any.
    pub fn in_attributes(attributes: &Map<String, Value>) -> Option<SourceDriver> {
        match attributes.get(GDAL_DRIVER_ATTRIBUTE)?.as_str()? {
            "netCDF" => Some(SourceDriver::NetCdf),
            "HDF5" => Some(SourceDriver::Hdf5),
            _ => None,
        }
    }
}

/// Array attribute holding the items of GDAL's `RPC` metadata domain (an
/// object of strings, e.g. `"LINE_OFF": "100"`).
pub const RPC_ATTRIBUTE: &str = "chunkref:rpc";

/// Array attribute holding ground control points, for images GDAL places
/// by GCPs (NITF corners that are no affine frame, GeoTIFF tie points
/// without a pixel scale): `{"crs": "EPSG:4326", "points": [[pixel, line,
/// x, y], ...]}`, each point optionally with a fifth value, its z; `crs`
/// may be absent.
pub const GCPS_ATTRIBUTE: &str = "chunkref:gcps";

/// Array attribute `chunkref index` writes on GRIB2 grids GDAL's GRIB
/// driver splits at the antimeridian: the stored column served first.
pub const ANTIMERIDIAN_COLUMN_ATTRIBUTE: &str = "chunkref:antimeridian_column";

/// Root group attribute naming the raster a store opens as when it holds
/// several (its subdatasets are still listed), as GDAL opens the first image
/// of a NITF file with several image segments.
pub const DEFAULT_RASTER: &str = "chunkref:default_raster";

/// Attribute of a multiscale group listed as a subdataset: the description
/// the source's GDAL driver gives it (`Page 2 (40P x 30L x 1B)` for a TIFF
/// page); without it the listing says `multiscale group <path>`.
pub const SUBDATASET_DESCRIPTION: &str = "chunkref:subdataset_description";

/// Root group attribute `chunkref index` writes on NetCDF and HDF5 files:
/// the paths of the arrays of 2 or more dimensions in the order the GDAL
/// driver of the source file (the root's `chunkref:gdal_driver`) lists
/// them as subdatasets; the listing follows it, and that driver's
/// descriptions.
pub const VARIABLE_ORDER_ATTRIBUTE: &str = "chunkref:variable_order";

/// Root group attribute holding the [`Description`] of a mosaic.
pub const MOSAIC_ATTRIBUTE: &str = "chunkref:mosaic";

/// Array attribute listing each time step's datetime (text or null).
pub const DATETIME_ATTRIBUTE: &str = "chunkref:datetime";

/// Root attribute naming the indexed source(s), which differs between steps.
pub(crate) const SOURCE_ATTRIBUTE: &str = "source";

/// Ground control points `[pixel, line, x, y, z]` and their CRS definition,
/// from the [`GCPS_ATTRIBUTE`] among the attributes of a full-resolution
/// array.
pub fn gcps(attributes: &Map<String, Value>) -> Option<(Vec<[f64; 5]>, Option<String>)> {
    let value = attributes.get(GCPS_ATTRIBUTE)?;
    let crs = match value.get("crs") {
        None | Some(Value::Null) => None,
        Some(c) => Some(c.as_str()?.to_string()),
    };
    let points = value
        .get("points")?
        .as_array()?
        .iter()
        .map(|p| {
            let p = p.as_array()?;
            let mut out = [0.0; 5];
            for (o, v) in out.iter_mut().zip(p) {
                *o = v.as_f64()?;
            }
            matches!(p.len(), 4 | 5).then_some(out)
        })
        .collect::<Option<Vec<_>>>()?;
    Some((points, crs))
}
