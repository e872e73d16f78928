//! Replays every input kept for the fuzz targets (`fuzz/corpus/<target>/`,
//! and crash inputs fixed since, `fuzz/regressions/<target>/`) through the
//! same entry points, on stable Rust: none may panic. See docs/reliability.md.

use std::path::Path;

#[test]
fn every_kept_fuzz_input_is_handled_without_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut replayed = 0;
    for (target, run) in chunkref::fuzzing::TARGETS {
        for kept in ["corpus", "regressions"] {
            let Ok(entries) = std::fs::read_dir(root.join(kept).join(target)) else {
                continue;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                // (A fuzzer running meanwhile may remove inputs it replaced.)
                let Ok(data) = std::fs::read(&path) else {
                    continue;
                };
                let outcome = std::panic::catch_unwind(|| run(&data));
                assert!(outcome.is_ok(), "{target}: {} panics", path.display());
                replayed += 1;
            }
        }
    }
    assert!(replayed > 0, "no fuzz inputs under {}", root.display());
}
