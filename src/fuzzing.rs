//! Entry points for fuzzing the parsers of untrusted bytes (`fuzz/`, run
//! with cargo-fuzz) and for replaying every input kept in `fuzz/corpus/` and
//! `fuzz/regressions/` on stable Rust (`tests/fuzz_regressions.rs`). Each
//! takes arbitrary bytes and must return (with any error), never panic,
//! hang or allocate without bound.

use std::sync::Arc;

use bytes::Bytes;

use crate::base::dtype::DataType;
use crate::codec::config::Config;
use crate::codec::registry;
use crate::codec::DecodeContext;
use crate::index::readers::icechunk::{self, Version};
use crate::index::{Index, LoadOptions};
use crate::io::index_file::InMemory;
use crate::io::source::Source;

/// A fuzz target: its name (its directory under `fuzz/corpus/`) and entry.
pub type Target = (&'static str, fn(&[u8]));

/// The targets.
pub const TARGETS: [Target; 9] = [
    ("kerchunk_json", kerchunk_json),
    ("index_file", index_file),
    ("icechunk", icechunk),
    ("paged_table", paged_table),
    ("tiff_header", tiff_header),
    ("headers", headers),
    ("netcdf3", netcdf3),
    ("codec", codec),
    ("index_builders", index_builders),
];

/// Lets panics that the driver contains (third-party decoders asserting on
/// malformed input, turned into errors by [`crate::base::error::contain_panics`])
/// pass without aborting: libFuzzer's harness installs a hook that aborts
/// on every panic, caught or not. A panic that escapes an entry point
/// still aborts the run (the harness checks for it).
fn allow_contained_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| drop(std::panic::take_hook()));
}

/// Most references a fuzzed `gen` entry may make: the limits themselves
/// are unit-tested; fuzzing explores what lies within them, each input
/// in milliseconds.
const FUZZ_MAX_GENERATED: u64 = 100_000;

/// How fuzzed indexes are loaded.
fn fuzz_options() -> LoadOptions {
    LoadOptions {
        max_generated: FUZZ_MAX_GENERATED,
        ..LoadOptions::default()
    }
}

/// A Kerchunk JSON index (any dialect the reader accepts).
pub fn kerchunk_json(data: &[u8]) {
    let _ = Index::read_kerchunk_json("fuzz.json", data, &fuzz_options());
}

/// An index file of any form, chosen by its first bytes as the driver
/// does: a Parquet reference table (`PAR1`), a FlatGeobuf one, else
/// Kerchunk JSON; every row read at open.
pub fn index_file(data: &[u8]) {
    allow_contained_panics();
    let file = Arc::new(InMemory::new("fuzz", Bytes::copy_from_slice(data)));
    let _ = Index::read("fuzz", file, &fuzz_options());
}

/// An Icechunk repository whose files are pieces of `data`: a repository
/// info file (spec 2; none when empty, so spec 1 `refs/` are read), the
/// snapshot and the manifest (every manifest the snapshot names), each
/// but the last after a 4-byte little-endian length.
pub fn icechunk(data: &[u8]) {
    /// What a spec 1 branch reference holds (icechunk's initial snapshot id).
    const V1_REF: &[u8] = br#"{"snapshot":"1CECHNKREP0F1RSTCMT0"}"#;
    allow_contained_panics();
    let mut rest = data;
    let mut piece = || {
        let len = rest
            .get(..4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
        let body = rest.get(4..).unwrap_or_default();
        let (head, tail) = body.split_at(len.min(body.len()));
        rest = tail;
        Bytes::copy_from_slice(head)
    };
    let (repo, snapshot) = (piece(), piece());
    let manifest = Bytes::copy_from_slice(rest);
    let open = |path: &str| -> crate::Result<Arc<dyn crate::io::index_file::IndexFile>> {
        let bytes = if path.ends_with("/repo") {
            repo.clone()
        } else if path.contains("/snapshots/") {
            snapshot.clone()
        } else if path.contains("/manifests/") {
            manifest.clone()
        } else {
            Bytes::from_static(V1_REF)
        };
        Ok(Arc::new(InMemory::new(path, bytes)))
    };
    let exists = |path: &str| !path.ends_with("/repo") || !repo.is_empty();
    let _ = icechunk::read("fuzz", "/fuzz", &Version::Main, &open, &exists);
}

/// A Parquet reference table read on demand, as a large one is: opened
/// from its footer, then the first chunks of every array looked up
/// (row-group statistics, page index, page-skipping decode, multi-range
/// continuations).
pub fn paged_table(data: &[u8]) {
    /// Chunks looked up per array.
    const LOOKUPS: u64 = 4096;
    allow_contained_panics();
    if !data.starts_with(crate::index::readers::parquet_read::MAGIC) {
        return;
    }
    let file = Arc::new(InMemory::new("fuzz.parquet", Bytes::copy_from_slice(data)));
    let how = LoadOptions {
        eager_rows: 0,
        ..fuzz_options()
    };
    let Ok(index) = Index::read("fuzz.parquet", file, &how) else {
        return;
    };
    for array in &index.arrays {
        let chunks = array
            .meta
            .grid_shape()
            .iter()
            .try_fold(1u64, |n, &c| n.checked_mul(c))
            .unwrap_or(u64::MAX);
        let positions: Vec<u64> = (0..chunks.min(LOOKUPS)).collect();
        let _ = array.refs.lookup(&positions);
    }
}

/// The headers other builders read, chosen by the first byte: NITF file
/// and image subheaders, a DTED header, a JPEG 2000 main header.
pub fn headers(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let source = Source::from_bytes("fuzz", rest.to_vec(), "fuzz");
    match pick % 3 {
        0 => {
            if let Ok((segments, v20)) = crate::formats::nitf::header::segments(&source) {
                for (n, seg) in segments.iter().enumerate().take(4) {
                    let _ = crate::formats::nitf::header::image(&source, seg, n, v20);
                }
            }
        }
        1 => {
            let _ = crate::formats::dted::read(&source);
        }
        _ => {
            let _ = crate::formats::j2k::codestream::MainHeader::parse(rest);
        }
    }
}

/// A NetCDF-3 file (classic, 64-bit offset, CDF-5) indexed as
/// `chunkref index` does: header, record layout, chunk references.
pub fn netcdf3(data: &[u8]) {
    let source = Source::from_bytes("fuzz.nc", data.to_vec(), "NetCDF-3 file");
    let _ = crate::builders::netcdf3::index_source(&source, "fuzz.nc");
}

/// The formats [`index_builders`] feeds, with the extension of the file
/// each is written to (the DTED reader also looks at the name).
const BUILT_FORMATS: [(crate::builders::builder::Format, &str); 5] = {
    use crate::builders::builder::Format;
    [
        (Format::Tiff, "tif"),
        (Format::Jpeg2000, "j2k"),
        (Format::Nitf, "ntf"),
        (Format::Dted, "dt1"),
        (Format::Grib, "grib"),
    ]
};

/// A whole file indexed as `chunkref index` indexes it, the format chosen
/// by the first byte: TIFF, JPEG 2000 (codestream or JP2), NITF, DTED,
/// GRIB (NetCDF-3 is [`netcdf3`]). Every count a header declares (tiles,
/// tile-parts, IFDs, strips, segments, messages) must be bounded before
/// anything is sized by it: the fuzz runs set libFuzzer's memory limit.
/// The builders read files by path, so the input is written to a file of
/// this process first.
pub fn index_builders(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let (format, extension) = BUILT_FORMATS[usize::from(pick) % BUILT_FORMATS.len()];
    let path = std::env::temp_dir().join(format!(
        "chunkref-fuzz-{}-{:?}.{extension}",
        std::process::id(),
        std::thread::current().id()
    ));
    if std::fs::write(&path, rest).is_err() {
        return;
    }
    let name = path.to_string_lossy().into_owned();
    let options = crate::builders::builder::Options::default();
    let _ = crate::builders::builder::build_as(format, &name, &name, options);
    let _ = std::fs::remove_file(&path);
}

/// A TIFF / BigTIFF header and IFD chain, read as the index builder does.
pub fn tiff_header(data: &[u8]) {
    let source = Source::from_bytes("fuzz.tif", data.to_vec(), "TIFF");
    let _ = crate::formats::tiff::ifd::read(&source);
}

/// A codec set-up for [`codec`]: name, configuration, data type, chunk shape.
type CodecCase = (&'static str, &'static str, &'static str, [u64; 3]);

/// The main header of a 16 x 16 one-component JPEG 2000 codestream
/// (`opj_compress -n 2`), for the `jpeg2000` case of [`CODECS`].
const J2K_MAIN_HEADER: &str = "/0//UQApAAAAAAAQAAAAEAAAAAAAAAAAAAAAEAAAABAAAAAAAAAAAAABBwEB/1IADAAAAAEAAQQEAAH/XAAHQEBISFD/ZAAlAAFDcmVhdGVkIGJ5IE9wZW5KUEVHIHZlcnNpb24gMi41LjA=";

/// Codec configurations decoded by [`codec`] (the `jpeg2000` one's
/// `main_header` is [`J2K_MAIN_HEADER`]).
const CODECS: [CodecCase; 28] = [
    ("zlib", "{}", "|u1", [1, 16, 16]),
    ("gzip", "{}", "|u1", [1, 16, 16]),
    ("zstd", "{}", "<u2", [1, 16, 16]),
    ("lz4", "{}", "|u1", [1, 16, 16]),
    ("blosc", "{}", "<u2", [1, 16, 16]),
    ("bz2", "{}", "|u1", [1, 16, 16]),
    ("lzma", "{}", "|u1", [1, 16, 16]),
    ("shuffle", r#"{"elementsize": 4}"#, "<f4", [1, 16, 16]),
    ("delta", r#"{"dtype": "<i2"}"#, "<i2", [1, 16, 16]),
    ("fletcher32", "{}", "|u1", [1, 16, 16]),
    (
        "tiff-tile",
        r#"{"compression": 5, "bits_per_sample": 8, "samples_per_pixel": 3, "photometric": 2,
            "planar_config": 1, "predictor": 2, "tile_width": 16, "tile_height": 16,
            "sample_format": 1}"#,
        "|u1",
        [3, 16, 16],
    ),
    (
        "tiff-tile",
        r#"{"compression": 8, "bits_per_sample": 32, "samples_per_pixel": 1, "photometric": 1,
            "planar_config": 1, "predictor": 3, "tile_width": 16, "tile_height": 16,
            "sample_format": 3}"#,
        "<f4",
        [1, 16, 16],
    ),
    (
        "tiff-tile",
        r#"{"compression": 7, "bits_per_sample": 8, "samples_per_pixel": 3, "photometric": 6,
            "planar_config": 1, "tile_width": 16, "tile_height": 16, "sample_format": 1}"#,
        "|u1",
        [3, 16, 16],
    ),
    ("jpeg2000", "", "|u1", [1, 16, 16]),
    (
        "nitf-jpeg",
        r#"{"num_bands": 1, "block_height": 16, "block_width": 16}"#,
        "|u1",
        [1, 16, 16],
    ),
    (
        "jbp-block",
        r#"{"num_bands": 3, "block_height": 16, "block_width": 16, "imode": "P"}"#,
        "|u1",
        [3, 16, 16],
    ),
    (
        "dted",
        r#"{"num_lat_points": 16, "num_lon_lines": 16, "record_size": 44}"#,
        "<i2",
        [1, 16, 16],
    ),
    (
        "imagecodecs_lzf",
        r#"{"header": false}"#,
        "<u2",
        [1, 16, 16],
    ),
    ("imagecodecs_lzf", "{}", "|u1", [1, 16, 16]),
    (
        "imagecodecs_bitshuffle",
        r#"{"itemsize": 2}"#,
        "<u2",
        [1, 16, 15],
    ),
    (
        "hdf5-bitshuffle",
        r#"{"elementsize": 4}"#,
        "<f4",
        [1, 16, 15],
    ),
    (
        "hdf5-bitshuffle",
        r#"{"elementsize": 2, "compression": "zstd"}"#,
        "<i2",
        [1, 16, 15],
    ),
    (
        "tiff-tile",
        r#"{"compression": 4, "bits_per_sample": 1, "samples_per_pixel": 1, "photometric": 0,
            "tile_width": 16, "tile_height": 16, "image_height": 40}"#,
        "|u1",
        [1, 16, 16],
    ),
    (
        "tiff-tile",
        r#"{"compression": 3, "t4_options": 5, "bits_per_sample": 1, "fill_order": 2,
            "tile_width": 16, "tile_height": 16}"#,
        "|u1",
        [1, 16, 16],
    ),
    (
        "nitf-bilevel",
        r#"{"block_width": 16, "block_height": 16, "coding": "2D"}"#,
        "|u1",
        [1, 16, 16],
    ),
    (
        "tiff-tile",
        r#"{"compression": 34676, "photometric": 32845, "samples_per_pixel": 3,
            "bits_per_sample": 16, "sample_format": 2, "tile_width": 16, "tile_height": 16,
            "image_height": 40}"#,
        "<i2",
        [3, 16, 16],
    ),
    (
        "tiff-tile",
        r#"{"compression": 34677, "photometric": 32845, "samples_per_pixel": 3,
            "bits_per_sample": 32, "sample_format": 3, "tile_width": 16, "tile_height": 16}"#,
        "<f4",
        [3, 16, 16],
    ),
    (
        "tiff-tile",
        r#"{"compression": 34676, "photometric": 32844, "bits_per_sample": 32,
            "sample_format": 3, "fill_order": 2, "tile_width": 16, "tile_height": 16}"#,
        ">f4",
        [1, 16, 16],
    ),
];

/// One chunk through a codec: the first byte picks the codec of
/// [`CODECS`], the rest is the encoded chunk.
pub fn codec(data: &[u8]) {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let (name, config, dtype, shape) = CODECS[usize::from(pick) % CODECS.len()];
    let j2k = format!(r#"{{"main_header": "{J2K_MAIN_HEADER}"}}"#);
    let config = if name == "jpeg2000" { &j2k } else { config };
    let (Ok(config), Ok(dtype)) = (
        serde_json::from_str::<Config>(config),
        DataType::from_v2(dtype),
    ) else {
        return;
    };
    let Ok(codec) = registry::build(name, &config) else {
        return;
    };
    let decoded_len = shape.iter().product::<u64>() as usize * dtype.size;
    let ctx = DecodeContext {
        chunk_shape: &shape,
        chunk_index: &[0, 0, 0],
        dtype,
        decoded_len,
        needed: decoded_len,
        first_needed: 0,
    };
    let _ = codec.decode(Bytes::copy_from_slice(input), &ctx);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_codec_case_builds() {
        for (name, config, _, _) in CODECS {
            let j2k = format!(r#"{{"main_header": "{J2K_MAIN_HEADER}"}}"#);
            let config = if name == "jpeg2000" { &j2k } else { config };
            let config: Config = serde_json::from_str(config).unwrap();
            assert!(registry::build(name, &config).is_ok(), "{name}");
        }
    }
}
