//! cargo-fuzz target: `chunkref::fuzzing::netcdf3`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chunkref::fuzzing::netcdf3(data));
