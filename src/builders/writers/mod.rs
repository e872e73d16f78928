//! Index writers: the index a builder makes ([`built`]), written as Kerchunk
//! JSON ([`pyramid`], [`to_kerchunk`]), concatenated stores ([`concat`]),
//! time stacks ([`stacker`]), and the Parquet and footprint parts of the
//! reference-table forms ([`parquet`], [`footprint`]).

pub mod built;
pub mod concat;
pub mod fgb;
pub mod nest;
pub mod parquet;
pub mod pyramid;
pub mod stacker;
pub mod to_kerchunk;
