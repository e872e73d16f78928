//! The read half: what the driver runs. Chunks looked up, fetched and
//! decoded ([`chunk`]), cached and read ahead, pasted into windows and
//! blocks, georeferenced per level, mosaics, and the raster view
//! ([`raster`]).

pub mod assemble;
pub mod axes;
pub mod block_windows;
pub mod blocks;
pub mod chunk;
pub mod chunk_cache;
pub mod color_view;
pub mod cube;
pub mod georef;
pub mod hyperslab;
pub mod index_cache;
pub mod level;
pub mod location_info;
pub mod mosaic;
pub mod raster;
pub mod read_ahead;
pub mod sampled;
pub mod window;
