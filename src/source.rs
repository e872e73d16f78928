//! Source files read by byte ranges, shared by the index builders
//! ([`crate::tiff`], [`crate::dted`]): a small head block read once serves
//! header parsing, anything else is one positioned read.

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::error::{Error, Result};

/// Bytes read from the start of the file in one go; headers inside are free.
const HEAD_BYTES: u64 = 64 * 1024;

/// A file read by byte ranges.
pub struct Source {
    path: String,
    /// The format the builder expects, for messages ("TIFF", "DTED").
    kind: &'static str,
    file: File,
    len: u64,
    head: Vec<u8>,
}

impl Source {
    /// Opens `path`, expected to hold a `kind` file, and reads its first bytes.
    pub fn open(path: &str, kind: &'static str) -> Result<Source> {
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
            kind,
            file,
            len,
            head,
        })
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
        self.file
            .read_exact_at(&mut buf, offset)
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

    /// The prefix [`Source::malformed`] puts before every reason.
    pub fn malformed_prefix(&self) -> String {
        format!("not a readable {}: ", self.kind)
    }

    /// An error saying the file is not a file of its kind chunkref can index.
    pub fn malformed(&self, reason: impl std::fmt::Display) -> Error {
        Error::MalformedSource {
            path: self.path.clone(),
            reason: format!("{}{reason}", self.malformed_prefix()),
        }
    }
}
