//! What chunkref writes into indexes and reads back: the names of its
//! attributes ([`attributes`]), GeoZarr georeferencing ([`geozarr`]) and
//! colour interpretation ([`colour`]). Builders write them and the read
//! side follows them, so both import them from here and neither from the
//! other.

pub mod attributes;
pub mod colour;
pub mod geozarr;
