//! The codec registry: maps Zarr v2 codec ids and Zarr v3 codec names to
//! constructors.
//!
//! Every built-in codec is listed once, in one static table; other modules
//! (the format codecs of later stages) add entries at run time with
//! [`register`]. It only lists them: the helpers the codecs share sit
//! beside it ([`super::config`], [`super::stream`]), so no codec imports
//! the registry.

use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use super::Codec;
use super::{
    bitshuffle, blosc, bz2, crc32c, delta, dted, fletcher32, gzip, imagecodecs, lz4, lzf, lzma,
    shuffle, szip, zlib, zstd,
};
use crate::base::error::{Error, Result};
use crate::codec::config::{BuildFn, Config};

/// One registry entry: every name a codec answers to, canonical name first.
struct Entry {
    names: &'static [&'static str],
    build: BuildFn,
}

/// Every built-in codec, in one place.
static BUILTINS: &[Entry] = &[
    Entry {
        names: bitshuffle::NAMES,
        build: bitshuffle::from_config,
    },
    Entry {
        names: &["blosc", "numcodecs.blosc"],
        build: blosc::from_config,
    },
    Entry {
        names: &["bz2", "numcodecs.bz2"],
        build: bz2::from_config,
    },
    Entry {
        names: &["crc32c", "numcodecs.crc32c"],
        build: crc32c::from_config,
    },
    Entry {
        names: &["delta", "numcodecs.delta"],
        build: delta::from_config,
    },
    Entry {
        names: &["fletcher32", "numcodecs.fletcher32"],
        build: fletcher32::from_config,
    },
    Entry {
        names: dted::NAMES,
        build: dted::from_config,
    },
    Entry {
        names: super::grib::NAMES,
        build: super::grib::from_config,
    },
    Entry {
        names: super::grib::GRIB1_NAMES,
        build: super::grib::grib1_from_config,
    },
    Entry {
        names: super::grib::KERCHUNK_NAMES,
        build: super::grib::kerchunk_from_config,
    },
    Entry {
        names: bitshuffle::H5_NAMES,
        build: bitshuffle::h5_from_config,
    },
    Entry {
        names: &["gzip", "numcodecs.gzip"],
        build: gzip::from_config,
    },
    Entry {
        names: szip::NAMES,
        build: szip::from_config,
    },
    Entry {
        names: imagecodecs::DELTA_NAMES,
        build: imagecodecs::delta_from_config,
    },
    Entry {
        names: imagecodecs::FLOATPRED_NAMES,
        build: imagecodecs::floatpred_from_config,
    },
    Entry {
        names: imagecodecs::LZW_NAMES,
        build: imagecodecs::lzw_from_config,
    },
    Entry {
        names: &["lz4", "numcodecs.lz4"],
        build: lz4::from_config,
    },
    Entry {
        names: lz4::HDF5_NAMES,
        build: lz4::hdf5_from_config,
    },
    Entry {
        names: super::jbp_block::NAMES,
        build: super::jbp_block::from_config,
    },
    Entry {
        names: super::jpeg2000::NAMES,
        build: super::jpeg2000::from_config,
    },
    Entry {
        names: lzf::NAMES,
        build: lzf::from_config,
    },
    Entry {
        names: &["lzma", "numcodecs.lzma"],
        build: lzma::from_config,
    },
    Entry {
        names: super::nitf_bilevel::NAMES,
        build: super::nitf_bilevel::from_config,
    },
    Entry {
        names: super::nitf_jpeg::NAMES,
        build: super::nitf_jpeg::from_config,
    },
    Entry {
        names: super::nitf_vq::NAMES,
        build: super::nitf_vq::from_config,
    },
    Entry {
        names: &["shuffle", "numcodecs.shuffle"],
        build: shuffle::from_config,
    },
    Entry {
        names: super::tiff_tile::NAMES,
        build: super::tiff_tile::from_config,
    },
    Entry {
        names: super::valid_range::NAMES,
        build: super::valid_range::from_config,
    },
    Entry {
        names: &["zlib", "numcodecs.zlib"],
        build: zlib::from_config,
    },
    Entry {
        names: &["zstd", "numcodecs.zstd"],
        build: zstd::from_config,
    },
];

/// Codecs registered at run time by other modules.
static EXTRAS: RwLock<Vec<Entry>> = RwLock::new(Vec::new());

/// Builds the codec answering to `name` (a v2 id or a v3 name) from its
/// configuration.
///
/// Built-in codecs take precedence over registered ones, and earlier
/// registrations over later ones.
pub fn build(name: &str, config: &Config) -> Result<Box<dyn Codec>> {
    match lookup(name) {
        Some(build) => build(config),
        None => Err(Error::UnknownCodec {
            name: name.to_string(),
            known: known_names().join(", "),
        }),
    }
}

/// Every name the registry answers to: built-ins first, then registered
/// codecs, each in listing order.
pub fn known_names() -> Vec<&'static str> {
    let extras = extras();
    let entries = BUILTINS.iter().chain(extras.iter());
    entries
        .flat_map(|entry| entry.names.iter().copied())
        .collect()
}

/// The constructor of the first entry answering to `name`. The lock is
/// released before the constructor runs, so constructors may register.
fn lookup(name: &str) -> Option<BuildFn> {
    let extras = extras();
    let mut entries = BUILTINS.iter().chain(extras.iter());
    entries
        .find(|entry| entry.names.contains(&name))
        .map(|entry| entry.build)
}

/// Adds a codec answering to `names` (canonical name first). A name already
/// known keeps its earlier meaning.
pub fn register(names: &'static [&'static str], build: BuildFn) {
    let mut extras = EXTRAS.write().unwrap_or_else(PoisonError::into_inner);
    extras.push(Entry { names, build });
}

/// Read access to the registered extras; a poisoned lock still holds a valid
/// list (entries are pushed whole), so poisoning is ignored.
fn extras() -> RwLockReadGuard<'static, Vec<Entry>> {
    EXTRAS.read().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::codec::config::{config_str, config_uint};
    use crate::codec::stream::read_bounded;
    use crate::codec::testing::{config, ctx, decode_with, sample};
    use crate::codec::DecodeContext;

    #[test]
    fn every_alias_builds_a_codec_with_its_canonical_name() {
        use base64::Engine;
        let j2k = crate::formats::j2k::codestream::tests::header(8, 8, 8, 1, 0, &[]);
        let j2k = base64::engine::general_purpose::STANDARD.encode(j2k);
        let configs = [
            ("delta", r#"{"dtype": "<i4"}"#.to_string()),
            ("shuffle", r#"{"elementsize": 2}"#.to_string()),
            (
                super::super::jpeg2000::URI,
                format!(r#"{{"main_header": "{j2k}"}}"#),
            ),
            (
                super::super::jbp_block::URI,
                r#"{"num_bands": 1, "block_height": 8, "block_width": 8}"#.to_string(),
            ),
            (
                super::super::nitf_jpeg::URI,
                r#"{"num_bands": 1, "block_height": 8, "block_width": 8}"#.to_string(),
            ),
            (
                super::super::nitf_bilevel::NAME,
                r#"{"block_width": 8, "block_height": 8, "coding": "1D"}"#.to_string(),
            ),
            (
                super::super::nitf_vq::NAME,
                format!(
                    r#"{{"codebook": "{}"}}"#,
                    base64::engine::general_purpose::STANDARD
                        .encode(vec![0u8; crate::formats::nitf::rpf_vq::CODEBOOK_LEN])
                ),
            ),
            ("grib", r#"{"var": "t2m", "dtype": "float32"}"#.to_string()),
            ("valid_range", r#"{"nodata": 0}"#.to_string()),
            (
                "hdf5-szip",
                r#"{"options_mask": 141, "pixels_per_block": 8, "bits_per_pixel": 16, "pixels_per_scanline": 64}"#
                    .to_string(),
            ),
        ];
        for entry in BUILTINS {
            let json = configs
                .iter()
                .find(|(name, _)| *name == entry.names[0])
                .map_or("{}", |(_, json)| json.as_str());
            for name in entry.names {
                let codec = build(name, &config(json)).unwrap();
                assert_eq!(codec.name(), entry.names[0]);
            }
        }
    }

    #[test]
    fn unknown_codec_lists_known_names() {
        let err = build("snappy-ish", &Config::new()).unwrap_err();
        match err {
            Error::UnknownCodec { name, known } => {
                assert_eq!(name, "snappy-ish");
                assert!(known.contains("blosc, numcodecs.blosc, bz2"), "{known}");
                assert!(known.contains("zstd"), "{known}");
            }
            other => panic!("unexpected error {other}"),
        }
    }

    #[derive(Debug)]
    struct Reverse;

    impl Codec for Reverse {
        fn name(&self) -> &str {
            "test.reverse"
        }
        fn decode(&self, input: Bytes, _ctx: &DecodeContext<'_>) -> Result<Bytes> {
            Ok(input.iter().rev().copied().collect::<Vec<u8>>().into())
        }
    }

    fn build_reverse(_config: &Config) -> Result<Box<dyn Codec>> {
        Ok(Box::new(Reverse))
    }

    fn build_failing(_config: &Config) -> Result<Box<dyn Codec>> {
        Err(Error::unsupported("never built"))
    }

    #[test]
    fn registered_codecs_are_found_and_listed() {
        register(&["test.reverse", "test.rev"], build_reverse);
        // A built-in name cannot be taken over.
        register(&["zlib"], build_failing);
        assert!(known_names().contains(&"test.rev"));
        let out = decode_with("test.rev", "{}", b"abc", 3).unwrap();
        assert_eq!(&out[..], b"cba");
        assert_eq!(build("zlib", &Config::new()).unwrap().name(), "zlib");
    }

    #[test]
    fn bad_config_fields_are_reported() {
        let cfg = config(r#"{"n": -1, "s": 5, "z": null}"#);
        assert!(matches!(
            config_uint("x", &cfg, "n"),
            Err(Error::CodecConfig { .. })
        ));
        assert!(matches!(
            config_str("x", &cfg, "s"),
            Err(Error::CodecConfig { .. })
        ));
        assert_eq!(config_uint("x", &cfg, "z").unwrap(), None);
        assert_eq!(config_str("x", &cfg, "missing").unwrap(), None);
    }

    #[test]
    fn bounded_reader_stops_at_the_chunk_size() {
        let data = sample(100);
        assert_eq!(
            &read_bounded("t", &data[..], &ctx(100)).unwrap()[..],
            &data[..]
        );
        assert_eq!(read_bounded("t", &data[..], &ctx(200)).unwrap().len(), 100);
        let err = read_bounded("t", &data[..], &ctx(99)).unwrap_err();
        assert!(err.to_string().contains("more than 99 bytes"), "{err}");
        // An endless stream is cut off, not read to exhaustion.
        assert!(read_bounded("t", std::io::repeat(1), &ctx(1000)).is_err());
    }
}
