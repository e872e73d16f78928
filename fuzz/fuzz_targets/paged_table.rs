//! cargo-fuzz target: `chunkref::fuzzing::paged_table`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chunkref::fuzzing::paged_table(data));
