//! Measures opening a Kerchunk JSON index of many chunks.
//!
//! `cargo run --release --example open_large_index -- [CHUNKS]` writes an
//! index of CHUNKS single-range references (default 1,000,000) in memory,
//! parses it, and prints the document size, the time and the table's memory.

use std::time::Instant;

use chunkref::index::Index;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let side = (n as f64).sqrt().ceil() as u64;
    let doc = synthetic_index(side, n);
    let start = Instant::now();
    let index = Index::from_kerchunk_json("synthetic.json", doc.as_bytes(), &[]).expect("parse");
    let elapsed = start.elapsed();
    let table = index
        .array("0/data")
        .expect("array")
        .refs
        .table()
        .expect("loaded");
    println!(
        "{} chunks, {:.1} MB of JSON: opened in {:.3} s ({:.3} s per million), table {:.1} MB ({:.1} bytes/chunk)",
        table.len(),
        doc.len() as f64 / 1e6,
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / table.len() as f64,
        table.heap_bytes() as f64 / 1e6,
        table.heap_bytes() as f64 / table.len() as f64
    );
}

/// A v1 index with one (side*256)^2 array and `n` range references.
fn synthetic_index(side: u64, n: u64) -> String {
    let mut s = String::with_capacity(n as usize * 60);
    s.push_str(r#"{"version": 1, "refs": {"0/data/.zarray": "{\"shape\": ["#);
    s.push_str(&format!(
        r#"{}, {}], \"chunks\": [256, 256], \"dtype\": \"|u1\", \"fill_value\": 0, \"compressor\": null, \"filters\": null}}""#,
        side * 256,
        side * 256
    ));
    for i in 0..n {
        s.push_str(&format!(
            r#", "0/data/{}.{}": ["/data/archive/image_{:03}.tif", {}, {}]"#,
            i / side,
            i % side,
            i % 7,
            i * 65536,
            60000 + i % 5000
        ));
    }
    s.push_str("}}");
    s
}
