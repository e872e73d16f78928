//! The read engine end to end on a local index, in either build: with the
//! `gdal` feature (the default) and without it (`cargo test
//! --no-default-features`), where no libgdal is in the process.

use std::path::PathBuf;

use chunkref::io::config::Settings;
use chunkref::read::raster::Dataset;
use chunkref::read::window::{Spacing, Window};

/// A directory of its own under the system's temporary one.
fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chunkref-engine-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A 4 x 6 array of bytes in 2 x 3 chunks, stored one after the other in
/// `chunks.bin`, and its Kerchunk JSON index; the pixel at (row, column) is
/// `10 * row + column`.
fn write_store(dir: &std::path::Path) -> PathBuf {
    let pixel = |r: u8, c: u8| 10 * r + c;
    let mut data = Vec::new();
    let mut refs = Vec::new();
    for (cy, cx) in [(0u8, 0u8), (0, 1), (1, 0), (1, 1)] {
        let offset = data.len();
        for r in 0..2 {
            for c in 0..3 {
                data.push(pixel(cy * 2 + r, cx * 3 + c));
            }
        }
        refs.push(format!(r#""data/{cy}.{cx}": ["chunks.bin", {offset}, 6]"#));
    }
    std::fs::write(dir.join("chunks.bin"), data).unwrap();
    let zarray = r#"{\"shape\": [4, 6], \"chunks\": [2, 3], \"dtype\": \"|u1\", \"fill_value\": 0, \"compressor\": null, \"filters\": null, \"order\": \"C\", \"zarr_format\": 2}"#;
    let index = format!(
        r#"{{"version": 1, "refs": {{".zgroup": "{{\"zarr_format\": 2}}", "data/.zarray": "{zarray}", {}}}}}"#,
        refs.join(", ")
    );
    let path = dir.join("index.json");
    std::fs::write(&path, index).unwrap();
    path
}

#[test]
fn a_local_index_reads_its_pixels() {
    let dir = scratch("local");
    let index = write_store(&dir);
    let settings = Settings::from_gdal().unwrap();
    let dataset = Dataset::open(index.to_str().unwrap(), &[], &settings).unwrap();
    let window = Window {
        x: 1,
        y: 1,
        width: 4,
        height: 3,
    };
    let mut out = vec![0u8; 12];
    dataset
        .read_window(0, window, &[0], &mut out, Spacing::packed(1, 4, 3))
        .unwrap();
    let expected: Vec<u8> = (1..4)
        .flat_map(|r| (1..5).map(move |c| 10 * r + c))
        .collect();
    assert_eq!(out, expected);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Without GDAL, an index in GDAL's own virtual file systems (not a
/// network one, which object_store reads) is refused with a message that
/// says why.
#[cfg(not(feature = "gdal"))]
#[test]
fn without_gdal_a_vsi_index_says_it_needs_gdal() {
    let settings = Settings::from_gdal().unwrap();
    for name in ["/vsimem/index.json", "/vsizip//data/a.zip/index.json"] {
        let err = Dataset::open(name, &[], &settings).unwrap_err().to_string();
        assert!(err.contains("`gdal` feature"), "{name}: {err}");
    }
}
