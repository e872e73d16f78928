//! What chunkref writes into indexes and reads back: the names of its
//! `chunkref:*` attributes, GeoZarr georeferencing, colour interpretation.
