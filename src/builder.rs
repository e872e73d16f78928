//! `chunkref index`: which index builder reads a source file, chosen by its
//! first bytes.

use std::io::Read;

use serde_json::Value;

use crate::error::{Error, Result};

/// An index builder: source path and the URL its chunks are referenced by.
type BuildFn = fn(&str, &str) -> Result<Value>;

/// Whether the first bytes of a file are those of a format.
type SniffFn = fn(&[u8]) -> bool;

/// Builders and the signatures of the files they read.
const BUILDERS: &[(&str, SniffFn, BuildFn)] = &[
    ("TIFF", is_tiff, crate::tiff::index_file),
    ("JPEG 2000", is_jpeg2000, crate::j2k::index_file),
    ("NITF", is_nitf, crate::nitf::index_file),
];

fn is_nitf(head: &[u8]) -> bool {
    head.starts_with(b"NITF") || head.starts_with(b"NSIF")
}

fn is_tiff(head: &[u8]) -> bool {
    head.starts_with(b"II") || head.starts_with(b"MM")
}

fn is_jpeg2000(head: &[u8]) -> bool {
    head.starts_with(&[0xFF, 0x4F, 0xFF, 0x51]) || head.starts_with(&[0, 0, 0, 12, b'j', b'P'])
}

/// Builds the Kerchunk JSON index of the file at `path`, whose chunks are
/// referenced by `url`.
pub fn index_file(path: &str, url: &str) -> Result<Value> {
    let mut head = Vec::with_capacity(16);
    std::fs::File::open(path)
        .and_then(|f| f.take(16).read_to_end(&mut head))
        .map_err(|e| Error::Io {
            url: path.to_string(),
            range: String::new(),
            reason: e.to_string(),
        })?;
    let (_, _, build) = BUILDERS
        .iter()
        .find(|(_, matches, _)| matches(&head))
        .ok_or_else(|| Error::MalformedSource {
            path: path.to_string(),
            reason: format!(
                "not a format chunkref can index (known: {})",
                BUILDERS.iter().map(|b| b.0).collect::<Vec<_>>().join(", ")
            ),
        })?;
    build(path, url)
}
