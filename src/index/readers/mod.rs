//! Index readers: an index document (Kerchunk JSON or Parquet, an Icechunk
//! repository, the Parquet form of a reference table) read by range into an
//! [`Index`](super::Index), and the time selection applied on open.
pub mod gen;
pub mod icechunk;
pub mod json_dialect;
pub mod kerchunk_json;
pub mod kerchunk_parquet;
pub mod parquet_read;
pub mod parquet_spans;
pub mod stack;
pub mod thrift_check;
