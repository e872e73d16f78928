//! The GDAL driver's face: the C ABI the C++ shim calls ([`ffi`]), Identify
//! ([`identify`]) and the sidecar files GDAL probes for ([`sidecars`]).

pub mod ffi;
pub mod identify;
pub mod multidim;
pub mod sidecars;
