//! JPEG 2000: codestream main and tile-part headers, JP2 boxes, GeoJP2 and
//! GMLJP2 georeferencing.

pub mod codestream;
pub mod geo;
pub mod jp2;
