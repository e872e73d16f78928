//! cargo-fuzz target: `chunkref::fuzzing::codec`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chunkref::fuzzing::codec(data));
