//! cargo-fuzz target: `chunkref::fuzzing::kerchunk_json`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| chunkref::fuzzing::kerchunk_json(data));
