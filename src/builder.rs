//! `chunkref index`: which index builder reads a source file, chosen by its
//! first bytes (or, failing that, its extension), or a Zarr store directory.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};
use crate::index::built::Built;

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
    /// A Zarr v2 or v3 store directory, indexed into a Kerchunk document
    /// by [`crate::zarr_store::index_store`] (not into a [`Built`]).
    ZarrStore,
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
];

/// Choices that change what a builder writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// DTED: read records with bad checksums with a warning instead of failing.
    pub dted_checksum_warnings: bool,
}

/// The format of the file (or Zarr store directory) at `path`.
pub fn detect(path: &str) -> Result<Format> {
    if Path::new(path).is_dir() {
        return detect_dir(path);
    }
    let mut head = Vec::with_capacity(16);
    std::fs::File::open(path)
        .and_then(|f| f.take(16).read_to_end(&mut head))
        .map_err(|e| Error::Io {
            url: path.to_string(),
            range: String::new(),
            reason: e.to_string(),
        })?;
    let ext = Path::new(path)
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    SIGNATURES
        .iter()
        .find(|s| s.magic.iter().any(|m| head.starts_with(m)))
        .or_else(|| {
            SIGNATURES
                .iter()
                .find(|s| s.extensions.contains(&ext.as_str()))
        })
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

/// [`Format::ZarrStore`] when directory `path` is a Zarr store.
fn detect_dir(path: &str) -> Result<Format> {
    if crate::zarr_store::is_store(Path::new(path)) {
        return Ok(Format::ZarrStore);
    }
    Err(Error::MalformedSource {
        path: path.to_string(),
        reason: "a directory but not a Zarr store (no .zgroup, .zarray or zarr.json at its \
                 top); chunkref indexes files and Zarr store directories"
            .into(),
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
        Format::ZarrStore => Err(Error::Usage {
            what: format!("{path} is a Zarr store: it is indexed by zarr_store::index_store"),
        }),
    }
}
