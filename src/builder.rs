//! `chunkref index`: which index builder reads a source file, chosen by its
//! first bytes (or, failing that, its extension).

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};
use crate::index::built::Built;
use crate::resolve::Location;
use crate::source::Source;

/// A format `chunkref index` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// TIFF, BigTIFF, COG.
    Tiff,
    /// JPEG 2000 codestream or JP2 file.
    Jpeg2000,
    /// NITF 2.0 / 2.1, NSIF 1.0.
    Nitf,
    /// DTED levels 0, 1, 2.
    Dted,
    /// GRIB2 (one field per message).
    Grib2,
}

/// How a format is recognised.
struct Signature {
    format: Format,
    name: &'static str,
    magic: &'static [&'static [u8]],
    extensions: &'static [&'static str],
}

const SIGNATURES: &[Signature] = &[
    Signature {
        format: Format::Tiff,
        name: "TIFF",
        magic: &[b"II*\0", b"MM\0*", b"II+\0", b"MM\0+"],
        extensions: &["tif", "tiff"],
    },
    Signature {
        format: Format::Jpeg2000,
        name: "JPEG 2000",
        magic: &[b"\xFF\x4F\xFF\x51", b"\0\0\0\x0CjP  "],
        extensions: &["j2k", "j2c", "jp2"],
    },
    Signature {
        format: Format::Nitf,
        name: "NITF",
        magic: &[b"NITF", b"NSIF"],
        extensions: &["ntf", "nitf", "nsf"],
    },
    Signature {
        format: Format::Dted,
        name: "DTED",
        magic: &[b"UHL1", b"VOL", b"HDR"],
        extensions: &["dt0", "dt1", "dt2"],
    },
    Signature {
        format: Format::Grib2,
        name: "GRIB2",
        magic: &[b"GRIB"],
        extensions: &["grib2", "grb2", "grib", "grb"],
    },
];

/// Choices that change what a builder writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// DTED: read records with bad checksums with a warning instead of failing.
    pub dted_checksum_warnings: bool,
}

/// The format of the file at `path` (a local path or a URL), from its
/// first bytes, else its extension. A remote file with a known extension
/// is taken at its word: its first bytes would cost a request of their own.
pub fn detect(path: &str) -> Result<Format> {
    let ext = Path::new(path.rsplit('/').next().unwrap_or(path))
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let by_extension = || {
        SIGNATURES
            .iter()
            .find(|s| s.extensions.contains(&ext.as_str()))
    };
    let remote = matches!(crate::source::locate(path)?, Location::Object(_));
    let head = match (remote, by_extension()) {
        (true, Some(s)) => return Ok(s.format),
        (true, None) => {
            let source = Source::open(path, "file")?;
            source.read(0, source.len().min(16))?
        }
        (false, _) => {
            let mut head = Vec::with_capacity(16);
            std::fs::File::open(path)
                .and_then(|f| f.take(16).read_to_end(&mut head))
                .map_err(|e| Error::Io {
                    url: path.to_string(),
                    range: String::new(),
                    reason: e.to_string(),
                })?;
            head
        }
    };
    SIGNATURES
        .iter()
        .find(|s| s.magic.iter().any(|m| head.starts_with(m)))
        .or_else(by_extension)
        .map(|s| s.format)
        .ok_or_else(|| Error::MalformedSource {
            path: path.to_string(),
            reason: format!(
                "not a format chunkref can index (known: {})",
                SIGNATURES
                    .iter()
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
}

/// The index of the file at `path` (known to be of `format`, see
/// [`detect`]) before it is written in any form
/// ([`Built::to_kerchunk`], or stacked); its chunks are referenced by `url`.
pub fn build_as(format: Format, path: &str, url: &str, options: Options) -> Result<Built> {
    match format {
        Format::Tiff => crate::tiff::index_file(path, url),
        Format::Jpeg2000 => crate::j2k::index_file(path, url),
        Format::Nitf => crate::nitf::index_file(path, url),
        Format::Dted => crate::dted::Cell::read(path, url)
            .and_then(|cell| crate::dted::build_cells(&[cell], options.dted_checksum_warnings)),
        Format::Grib2 => crate::grib2::index_file(path, url),
    }
}
