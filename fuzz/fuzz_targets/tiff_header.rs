//! cargo-fuzz target: `chunkref::fuzzing::tiff_header`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chunkref::fuzzing::tiff_header(data));
