//! TIFF / BigTIFF: the IFD chain read by range, tag numbers, GeoTIFF
//! georeferencing and GDAL's metadata tag.

pub mod gdal_metadata;
pub mod geo;
pub mod geokeys_tiff;
pub mod ifd;
pub mod rpc;
pub mod tags;
