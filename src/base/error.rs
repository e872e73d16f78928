//! The one public error type of chunkref.
//!
//! Every variant maps onto a GDAL `CPLErrorNum` (see [`Error::cpl_code`]), so
//! the C++ shim can raise a `CPLError` with a message a user can act on.

use std::fmt;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong between opening an index and filling a buffer.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The index document itself is malformed (bad JSON, wrong shapes, bad values).
    #[error("malformed chunk index {index}: {reason}")]
    MalformedIndex {
        /// Where the index came from.
        index: String,
        /// What is wrong, naming the key or field.
        reason: String,
    },
    /// A source file being indexed (e.g. a TIFF) is malformed or truncated.
    #[error("cannot index {path}: {reason}")]
    MalformedSource {
        /// The source file.
        path: String,
        /// What is wrong, naming the structure (IFD, tag).
        reason: String,
    },
    /// Zarr metadata (`.zarray`, `zarr.json`) is invalid or inconsistent.
    #[error("invalid Zarr metadata for array '{array}': {reason}")]
    InvalidMetadata {
        /// Path of the array inside the store.
        array: String,
        /// What is wrong.
        reason: String,
    },
    /// Valid input that chunkref does not implement (yet).
    #[error("not supported: {what}")]
    Unsupported {
        /// What is not supported, and where it was found.
        what: String,
    },
    /// A codec name or id that no registered codec answers to.
    #[error("unknown codec '{name}' (known: {known})")]
    UnknownCodec {
        /// The name or id found in the metadata.
        name: String,
        /// The names the registry knows, comma separated.
        known: String,
    },
    /// A codec's configuration is invalid.
    #[error("codec '{codec}': bad configuration: {reason}")]
    CodecConfig {
        /// The codec name.
        codec: String,
        /// What is wrong with the configuration.
        reason: String,
    },
    /// Decoding bytes failed (corrupt stream, wrong size, ...).
    #[error("codec '{codec}' failed to decode: {reason}")]
    Decode {
        /// The codec name.
        codec: String,
        /// What went wrong.
        reason: String,
    },
    /// Reading bytes from a file or object store failed.
    #[error("cannot read {url}{range}: {reason}")]
    Io {
        /// The URL or path read.
        url: String,
        /// A description of the byte range (may be empty for whole objects).
        range: String,
        /// Why it failed.
        reason: String,
    },
    /// A read the security rules forbid (an index from a remote location
    /// referring to local files, a path escaping its template base).
    #[error("refused: {what}")]
    Refused {
        /// What was refused, and how to allow it if it can be.
        what: String,
    },
    /// A size computed from input exceeds what chunkref is willing to allocate.
    #[error("size limit exceeded: {what}")]
    Limits {
        /// What was too large.
        what: String,
    },
    /// A caller used the API wrongly (bad band, block out of range, small buffer).
    #[error("invalid request: {what}")]
    Usage {
        /// What was wrong with the request.
        what: String,
    },
    /// An error while handling one chunk, with the chunk's key and URL for
    /// context (the URL left out when the error itself starts by naming it).
    #[error("chunk '{key}'{}: {source}", url_unless_named(.url, .source))]
    Chunk {
        /// The chunk key, e.g. `0/data/0.1.2`.
        key: String,
        /// The URL the chunk refers to (or `inline`).
        url: String,
        /// The underlying error.
        #[source]
        source: Box<Error>,
    },
}

/// ` (url)`, unless `source` is a read of `url` (which names it already).
fn url_unless_named(url: &str, source: &Error) -> String {
    match source {
        Error::Io { url: read, .. } if read == url => String::new(),
        _ => format!(" ({url})"),
    }
}

/// GDAL's `CPLErrorNum` values used by chunkref (from `cpl_error.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum CplCode {
    /// CPLE_AppDefined
    AppDefined = 1,
    /// CPLE_OutOfMemory
    OutOfMemory = 2,
    /// CPLE_FileIO
    FileIo = 3,
    /// CPLE_OpenFailed
    OpenFailed = 4,
    /// CPLE_IllegalArg
    IllegalArg = 5,
    /// CPLE_NotSupported
    NotSupported = 6,
}

impl Error {
    /// The `CPLErrorNum` this error is raised with.
    pub fn cpl_code(&self) -> CplCode {
        match self {
            Error::MalformedIndex { .. }
            | Error::MalformedSource { .. }
            | Error::InvalidMetadata { .. } => CplCode::OpenFailed,
            Error::Unsupported { .. } | Error::UnknownCodec { .. } | Error::Refused { .. } => {
                CplCode::NotSupported
            }
            Error::CodecConfig { .. } | Error::Decode { .. } => CplCode::AppDefined,
            Error::Io { .. } => CplCode::FileIo,
            Error::Limits { .. } => CplCode::OutOfMemory,
            Error::Usage { .. } => CplCode::IllegalArg,
            Error::Chunk { source, .. } => source.cpl_code(),
        }
    }

    /// Wraps this error with the chunk key and URL it happened on.
    pub fn in_chunk(self, key: impl fmt::Display, url: impl fmt::Display) -> Error {
        Error::Chunk {
            key: key.to_string(),
            url: url.to_string(),
            source: Box::new(self),
        }
    }

    /// Shorthand for [`Error::Decode`].
    pub fn decode(codec: impl Into<String>, reason: impl fmt::Display) -> Error {
        Error::Decode {
            codec: codec.into(),
            reason: reason.to_string(),
        }
    }

    /// Shorthand for [`Error::CodecConfig`].
    pub fn codec_config(codec: impl Into<String>, reason: impl fmt::Display) -> Error {
        Error::CodecConfig {
            codec: codec.into(),
            reason: reason.to_string(),
        }
    }

    /// Shorthand for [`Error::Unsupported`].
    pub fn unsupported(what: impl fmt::Display) -> Error {
        Error::Unsupported {
            what: what.to_string(),
        }
    }
}

/// The message a caught panic carried (`panic!` with a literal or with
/// arguments), if it carried one.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> Option<String> {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
}

/// Runs `f`, a call into a third-party decoder over untrusted bytes, and
/// turns a panic in it (some crates assert on malformed input instead of
/// returning an error) into [`Error::MalformedIndex`] for `index`, naming
/// `what` was being read.
pub fn contain_panics<T>(index: &str, what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let why = panic_message(&*panic).unwrap_or_else(|| "no message".into());
        Err(Error::MalformedIndex {
            index: index.to_string(),
            reason: format!("{what}: the decoder gave up on malformed data ({why})"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decoder_panic_becomes_an_error_naming_the_index() {
        let e = contain_panics("t.parquet", "row group 3", || -> Result<()> {
            panic!("bad varint")
        })
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("t.parquet") && e.contains("row group 3") && e.contains("bad varint"),
            "{e}"
        );
        assert_eq!(contain_panics("t", "x", || Ok(7)).unwrap(), 7);
    }
}
