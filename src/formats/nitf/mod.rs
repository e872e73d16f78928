//! NITF / NSIF: file and image subheaders, TREs, corner coordinates
//! (IGEOLO, MGRS), RPC00B, colours and look-up tables, C3 JPEG streams and
//! RPF frames.

pub mod colour;
pub mod header;
pub mod igeolo;
pub mod jpeg;
pub mod lut;
pub mod mgrs;
pub mod rpc;
pub mod rpf;
pub mod rpf_vq;
pub mod tre;
