//! cargo-fuzz target: `chunkref::fuzzing::index_builders`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chunkref::fuzzing::index_builders(data));
