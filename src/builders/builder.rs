//! `chunkref index`: which index builder reads a source file, chosen by its
//! first bytes (or, failing that, its extension), or a Zarr store directory.

use std::io::Read;
use std::path::Path;

use crate::base::error::{Error, Result};
use crate::builders::writers::built::Built;
use crate::io::resolve::Location;
use crate::io::source::Source;

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
    /// NetCDF (NetCDF-3 classic, 64-bit offset and CDF-5; NetCDF4) and
    /// HDF5: one index per file, a Kerchunk document of its own (see
    /// [`netcdf_document`]).
    Hdf5,
    /// A Zarr v2 or v3 store directory, indexed into a Kerchunk document
    /// by [`crate::builders::zarr_store::index_store`] (not into a [`Built`]).
    ZarrStore,
    /// GRIB, editions 1 and 2.
    Grib,
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
        format: Format::Grib,
        name: "GRIB",
        magic: &[b"GRIB"],
        extensions: &["grib2", "grb2", "grib", "grb", "grib1", "grb1"],
    },
    Signature {
        format: Format::Hdf5,
        name: "NetCDF / HDF5",
        magic: &[HDF5_MAGIC, b"CDF\x01", b"CDF\x02", b"CDF\x05"],
        extensions: &["nc", "nc4", "h5", "hdf5", "he5"],
    },
];

/// The HDF5 superblock signature.
const HDF5_MAGIC: &[u8] = b"\x89HDF\r\n\x1a\n";

/// Where else an HDF5 superblock may start: after a user block of 512,
/// 1024 or 2048 bytes (larger user blocks are found by extension).
const HDF5_USER_BLOCKS: [usize; 3] = [512, 1024, 2048];

/// How many leading bytes [`detect`] reads.
const HEAD_BYTES: u64 = 2048 + 8;

/// The Kerchunk document of [`Format::Hdf5`] file `path` (a local path
/// or a URL), its chunks referenced by `url`: a NetCDF-3 file (by its
/// first bytes) through [`crate::builders::netcdf3::index_source`], any other
/// through libhdf5 ([`crate::builders::hdf5::index_source`]).
pub fn netcdf_document(path: &str, url: &str) -> Result<serde_json::Value> {
    // One source for both: a remote file's head is read once.
    let source = Source::open(path, "NetCDF file")?;
    if crate::builders::netcdf3::is_netcdf3(&source.read(0, source.len().min(4))?) {
        return crate::builders::netcdf3::index_source(&source, url);
    }
    crate::builders::hdf5::index_source(source, url)
}

/// Whether `head` (a file's first bytes) holds an HDF5 signature after a
/// user block.
fn hdf5_after_user_block(head: &[u8]) -> bool {
    HDF5_USER_BLOCKS.iter().any(|&at| {
        head.get(at..)
            .is_some_and(|rest| rest.starts_with(HDF5_MAGIC))
    })
}

/// Choices that change what a builder writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// DTED: read records with bad checksums with a warning instead of failing.
    pub dted_checksum_warnings: bool,
    /// GRIB: values and units as GDAL shows them by default, or as stored.
    pub grib_units: crate::formats::grib2::describe::Units,
}

/// The format of the file (or Zarr store directory) at `path` (a local
/// path or a URL), from its first bytes, else its extension. A remote file
/// with a known extension is taken at its word: its first bytes would cost
/// a request of their own; a remote name ending in `.zarr` is a Zarr store.
pub fn detect(path: &str) -> Result<Format> {
    if Path::new(path).is_dir() {
        return detect_dir(path);
    }
    if let Some(format) = remote_format_by_name(path) {
        return Ok(format);
    }
    let ext = extension(path);
    let by_extension = || {
        SIGNATURES
            .iter()
            .find(|s| s.extensions.contains(&ext.as_str()))
    };
    let head = match crate::io::source::locate(path)? {
        Location::Object(_) => {
            let source = Source::open(path, "file")?;
            source.read(0, source.len().min(HEAD_BYTES))?
        }
        Location::Local(_) => {
            let mut head = Vec::with_capacity(HEAD_BYTES as usize);
            std::fs::File::open(path)
                .and_then(|f| f.take(HEAD_BYTES).read_to_end(&mut head))
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
        .or_else(|| {
            hdf5_after_user_block(&head)
                .then(|| SIGNATURES.iter().find(|s| s.format == Format::Hdf5))
                .flatten()
        })
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

/// The format of the remote object `path` by its name alone (a known
/// extension, or `.zarr`): what [`detect`] says of it without a request.
/// `None` for local paths and other names.
pub fn remote_format_by_name(path: &str) -> Option<Format> {
    if !matches!(crate::io::source::locate(path), Ok(Location::Object(_))) {
        return None;
    }
    if path.trim_end_matches('/').ends_with(".zarr") {
        return Some(Format::ZarrStore);
    }
    let ext = extension(path);
    SIGNATURES
        .iter()
        .find(|s| s.extensions.contains(&ext.as_str()))
        .map(|s| s.format)
}

/// The extension of the last part of `path` (a path or URL), lower case.
fn extension(path: &str) -> String {
    Path::new(path.rsplit('/').next().unwrap_or(path))
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

/// [`Format::ZarrStore`] when directory `path` is a Zarr store.
fn detect_dir(path: &str) -> Result<Format> {
    if crate::builders::zarr_store::is_store(Path::new(path)) {
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
/// HDF5 files have N-dimensional arrays a [`Built`] cannot hold: they
/// are indexed by [`crate::builders::hdf5::index_source`] into a Kerchunk document,
/// and refused here.
pub fn build_as(format: Format, path: &str, url: &str, options: Options) -> Result<Built> {
    let built = match format {
        Format::Tiff => crate::builders::tiff::index_file(path, url),
        Format::Jpeg2000 => crate::builders::j2k::index_file(path, url),
        Format::Nitf => crate::builders::nitf::index_file(path, url),
        Format::Dted => crate::builders::dted::Cell::read(path, url).and_then(|cell| {
            crate::builders::dted::build_cells(&[cell], options.dted_checksum_warnings)
        }),
        Format::Grib => crate::builders::grib::index_file(path, url, options.grib_units),
        Format::ZarrStore => Err(Error::Usage {
            what: format!("{path} is a Zarr store: it is indexed by zarr_store::index_store"),
        }),
        Format::Hdf5 => Err(Error::unsupported(format!(
            "{path}: NetCDF / HDF5 files are indexed one per index (not stacked or \
             mosaicked with other sources)"
        ))),
    }?;
    check_readable(path, &built)?;
    Ok(built)
}

/// Refuses, at index time, an index whose arrays the driver would refuse to
/// open: every `.zarray` is parsed as the reader parses it, and a chunk too
/// large to decode (a JPEG 2000 tile of 10^6 x 10^6 pixels) is named.
fn check_readable(path: &str, built: &Built) -> Result<()> {
    for (key, doc) in &built.metadata {
        let Some(array) = key.strip_suffix(".zarray") else {
            continue;
        };
        let array = array.trim_end_matches('/');
        let attrs = built
            .metadata
            .get(format!("{array}/.zattrs").trim_start_matches('/'));
        crate::index::zarr::ArrayMeta::from_v2(array, doc, attrs).map_err(|e| match e {
            Error::Limits { what } => Error::unsupported(format!(
                "{path}: {what}: a chunk index reads each tile or block whole, and one this \
                 large cannot be decoded in memory"
            )),
            e => e,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn detect_bytes(name: &str, bytes: &[u8]) -> Result<Format> {
        let dir = std::env::temp_dir().join(format!("chunkref-detect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let found = detect(&path.to_string_lossy());
        std::fs::remove_file(&path).unwrap();
        // The folder goes once empty (tests run on several threads).
        let _ = std::fs::remove_dir(&dir);
        found
    }

    #[test]
    fn hdf5_is_found_by_signature_after_user_blocks_and_by_extension() {
        let mut file = HDF5_MAGIC.to_vec();
        file.resize(64, 0);
        assert_eq!(detect_bytes("a.bin", &file).unwrap(), Format::Hdf5);
        for user_block in HDF5_USER_BLOCKS {
            let mut file = vec![0u8; user_block];
            file.extend_from_slice(HDF5_MAGIC);
            assert_eq!(detect_bytes("b.bin", &file).unwrap(), Format::Hdf5);
        }
        let mut odd = vec![0u8; 700];
        odd.extend_from_slice(HDF5_MAGIC);
        assert!(detect_bytes("c.bin", &odd).is_err());
        assert_eq!(
            detect_bytes("d.nc", b"not a signature").unwrap(),
            Format::Hdf5
        );
        assert_eq!(detect_bytes("e.tif", b"II*\0").unwrap(), Format::Tiff);
        assert_eq!(detect_bytes("f.bin", b"CDF\x02").unwrap(), Format::Hdf5);
    }
}
