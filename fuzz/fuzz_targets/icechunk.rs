//! cargo-fuzz target: `chunkref::fuzzing::icechunk`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chunkref::fuzzing::icechunk(data));
