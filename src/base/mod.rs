//! The ground floor: what every layer above uses and nothing here imports
//! from above.

pub mod buffers;
pub mod cf_time;
pub mod datetime;
pub mod dtype;
pub mod error;
pub mod gdal;
pub mod printf;
pub mod process;
pub mod warnings;
