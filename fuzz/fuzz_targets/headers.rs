//! cargo-fuzz target: `chunkref::fuzzing::headers`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chunkref::fuzzing::headers(data));
