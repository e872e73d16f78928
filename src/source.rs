//! Source files read by byte ranges, for the index builders: a small head
//! block serves the usual layouts (headers first) without further reads.

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::error::{Error, Result};

/// Bytes read from the start of the file in one go.
const HEAD_BYTES: u64 = 64 * 1024;

/// A file read by byte ranges (or bytes already in memory, such as a file
/// embedded in another one).
pub struct Source {
    path: String,
    /// None for in-memory bytes, all held in `head`.
    file: Option<File>,
    len: u64,
    head: Vec<u8>,
    format: &'static str,
}

impl Source {
    /// Opens `path`, a file of `format` (named in errors), and reads its
    /// first bytes.
    pub fn open(path: &str, format: &'static str) -> Result<Source> {
        let io = |reason: String| Error::Io {
            url: path.to_string(),
            range: String::new(),
            reason,
        };
        let file = File::open(path).map_err(|e| io(e.to_string()))?;
        let len = file.metadata().map_err(|e| io(e.to_string()))?.len();
        let mut head = vec![0; HEAD_BYTES.min(len) as usize];
        file.read_exact_at(&mut head, 0)
            .map_err(|e| io(e.to_string()))?;
        Ok(Source {
            path: path.to_string(),
            file: Some(file),
            len,
            head,
            format,
        })
    }

    /// In-memory `bytes` named `name` in errors (e.g. "x.jp2: GeoJP2 box").
    pub fn from_bytes(name: &str, bytes: Vec<u8>, format: &'static str) -> Source {
        Source {
            path: name.to_string(),
            file: None,
            len: bytes.len() as u64,
            head: bytes,
            format,
        }
    }

    /// Reads `len` bytes at `offset`; ranges past the end of the file are errors.
    pub fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let end = offset
            .checked_add(len)
            .filter(|&e| e <= self.len)
            .ok_or_else(|| {
                self.malformed(format!(
                    "bytes {offset}..{} are past the end of the file ({} bytes)",
                    offset.saturating_add(len),
                    self.len
                ))
            })?;
        if end <= self.head.len() as u64 {
            return Ok(self.head[offset as usize..end as usize].to_vec());
        }
        let mut buf = vec![0; len as usize];
        // In-memory sources hold every byte in `head`: only files get here.
        let Some(file) = &self.file else {
            return Err(self.malformed(format!("bytes {offset}..{end} are not in memory")));
        };
        file.read_exact_at(&mut buf, offset)
            .map_err(|e| Error::Io {
                url: self.path.clone(),
                range: format!(" bytes {offset}..{end}"),
                reason: e.to_string(),
            })?;
        Ok(buf)
    }

    /// Path of the file.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Length of the file in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// An error saying the file is not a file of its format chunkref can index.
    pub fn malformed(&self, reason: impl std::fmt::Display) -> Error {
        Error::MalformedSource {
            path: self.path.clone(),
            reason: format!("not a readable {}: {reason}", self.format),
        }
    }
}
