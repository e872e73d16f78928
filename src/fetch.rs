//! Fetching chunk bytes through `object_store` on one shared tokio runtime.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use bytes::{Bytes, BytesMut};
use object_store::local::LocalFileSystem;
use object_store::path::Path as StorePath;
use object_store::ObjectStore;

use crate::error::{Error, Result};
use crate::resolve::Location;

/// The process-wide runtime, built on first use (safe from any GDAL thread).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("chunkref-io")
            .enable_all()
            .build()
            .expect("cannot start the chunkref I/O runtime")
    })
}

fn local_store() -> &'static Arc<LocalFileSystem> {
    static STORE: OnceLock<Arc<LocalFileSystem>> = OnceLock::new();
    STORE.get_or_init(|| Arc::new(LocalFileSystem::new()))
}

/// Which bytes of an object to read.
#[derive(Debug, Clone, Copy)]
pub enum Want<'a> {
    /// The whole object.
    Whole,
    /// These `(offset, length)` ranges, concatenated in order.
    Ranges(&'a [(u64, u64)]),
}

/// Reads the wanted bytes of `loc`; a short read is an error naming the range.
pub async fn fetch(loc: &Location, want: Want<'_>) -> Result<Bytes> {
    let Location::Local(path) = loc;
    let url = path.display().to_string();
    let io = |range: String, reason: String| Error::Io {
        url: url.clone(),
        range,
        reason,
    };
    let store_path =
        StorePath::from_absolute_path(path).map_err(|e| io(String::new(), e.to_string()))?;
    let store = local_store();
    match want {
        Want::Whole => {
            let got = store
                .get(&store_path)
                .await
                .map_err(|e| io(String::new(), describe(e)))?;
            got.bytes()
                .await
                .map_err(|e| io(String::new(), describe(e)))
        }
        Want::Ranges(ranges) => {
            let mut wanted: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
            for &(o, l) in ranges {
                let end = o
                    .checked_add(l)
                    .ok_or_else(|| io(format!(" bytes {o}+{l}"), "range overflows".into()))?;
                wanted.push(o..end);
            }
            let parts = store
                .get_ranges(&store_path, &wanted)
                .await
                .map_err(|e| io(describe_ranges(ranges), describe(e)))?;
            let total: u64 = ranges.iter().map(|r| r.1).sum();
            let mut out = BytesMut::with_capacity(total as usize);
            for (part, &(o, l)) in parts.iter().zip(ranges) {
                if part.len() as u64 != l {
                    return Err(io(
                        format!(" bytes {o}..{}", o + l),
                        format!("short read: expected {l} bytes, got {}", part.len()),
                    ));
                }
                out.extend_from_slice(part);
            }
            Ok(out.freeze())
        }
    }
}

fn describe_ranges(ranges: &[(u64, u64)]) -> String {
    let shown: Vec<String> = ranges
        .iter()
        .take(4)
        .map(|(o, l)| format!("{o}..{}", o + l))
        .collect();
    let more = if ranges.len() > 4 { ", ..." } else { "" };
    format!(" bytes [{}{more}]", shown.join(", "))
}

fn describe(e: object_store::Error) -> String {
    match e {
        object_store::Error::NotFound { .. } => "file not found".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ranges_and_reports_short_reads() {
        let dir = std::env::temp_dir().join(format!("chunkref-fetch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f.bin");
        std::fs::write(&f, b"0123456789").unwrap();
        let loc = Location::Local(f.clone());
        let rt = runtime();
        let got = rt
            .block_on(fetch(&loc, Want::Ranges(&[(7, 2), (1, 3)])))
            .unwrap();
        assert_eq!(&got[..], b"78123");
        assert_eq!(
            &rt.block_on(fetch(&loc, Want::Whole)).unwrap()[..],
            b"0123456789"
        );
        let e = rt
            .block_on(fetch(&loc, Want::Ranges(&[(8, 5)])))
            .unwrap_err()
            .to_string();
        assert!(e.contains("f.bin") && e.contains("8"), "{e}");
        let missing = Location::Local(dir.join("nope.bin"));
        let e = rt
            .block_on(fetch(&missing, Want::Whole))
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope.bin") && e.contains("not found"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
