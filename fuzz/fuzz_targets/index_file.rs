//! cargo-fuzz target: `chunkref::fuzzing::index_file`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chunkref::fuzzing::index_file(data));
