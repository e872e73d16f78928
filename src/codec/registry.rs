//! The codec registry: maps Zarr v2 codec ids and Zarr v3 codec names to
//! constructors.
//!
//! Every built-in codec is listed once, in one static table; other modules
//! (the format codecs of later stages) add entries at run time with
//! [`register`].
//! The module also holds the small helpers the codecs share: reading
//! configuration fields and draining a decompressing reader without letting
//! a hostile stream allocate more than the decoded chunk.

use std::cell::RefCell;
use std::io::Read;
use std::sync::{PoisonError, RwLock, RwLockReadGuard};

use bytes::Bytes;

use super::{
    bitshuffle, blosc, bz2, crc32c, delta, dted, fletcher32, gzip, imagecodecs, lz4, lzf, lzma,
    shuffle, zlib, zstd,
};
use super::{Codec, DecodeContext};
use crate::base::error::{Error, Result};

/// The configuration object of a codec (the v2 codec object or the v3
/// `configuration` member).
pub type Config = serde_json::Map<String, serde_json::Value>;

/// A codec constructor.
pub type BuildFn = fn(&Config) -> Result<Box<dyn Codec>>;

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
        names: super::grib2::NAMES,
        build: super::grib2::from_config,
    },
    Entry {
        names: super::grib2::KERCHUNK_NAMES,
        build: super::grib2::kerchunk_from_config,
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

/// Reads an optional non-negative integer field; `null` counts as absent.
pub(crate) fn config_uint(codec: &str, config: &Config, key: &str) -> Result<Option<u64>> {
    match config.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or_else(|| {
            Error::codec_config(
                codec,
                format!("'{key}' should be a non-negative integer, found {value}"),
            )
        }),
    }
}

/// Reads an optional string field; `null` counts as absent.
pub(crate) fn config_str<'a>(
    codec: &str,
    config: &'a Config,
    key: &str,
) -> Result<Option<&'a str>> {
    match config.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(value) => value.as_str().map(Some).ok_or_else(|| {
            Error::codec_config(codec, format!("'{key}' should be a string, found {value}"))
        }),
    }
}

thread_local! {
    /// This thread's spare decode buffers (see [`recycle`]).
    static SPARES: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Bytes of spare buffers [`recycle`] keeps per thread, at most.
const MAX_SPARE_BYTES: usize = 8 << 20;

/// Spare buffers [`recycle`] keeps per thread, at most (decoders that do
/// not take their output from [`output_buffer`] hand buffers back too).
const MAX_SPARES: usize = 4;

/// An empty buffer able to hold `len` bytes: one of this thread's spares
/// whose capacity is `len` to twice that, else a new one, an allocation
/// failure reported as [`Error::Limits`] instead of aborting.
pub(crate) fn output_buffer(codec: &str, len: usize) -> Result<Vec<u8>> {
    let mut buffer = spare_or_new(codec, len)?;
    buffer.clear();
    Ok(buffer)
}

/// A buffer of `len` bytes whose contents are unspecified (an earlier
/// chunk's bytes where a spare is reused, else zeros), for writers that
/// overwrite every byte they keep: no pass zeroing it first.
pub(crate) fn scratch_buffer(what: &str, len: usize) -> Result<Vec<u8>> {
    let mut buffer = spare_or_new(what, len)?;
    if buffer.len() >= len {
        buffer.truncate(len);
    } else {
        buffer.resize(len, 0);
    }
    Ok(buffer)
}

/// One of this thread's spares able to hold `len` bytes (see
/// [`output_buffer`]), its contents as they were, else an empty new one.
fn spare_or_new(what: &str, len: usize) -> Result<Vec<u8>> {
    let fits = |b: &Vec<u8>| (len..=len.saturating_mul(2)).contains(&b.capacity());
    let spare = SPARES.with_borrow_mut(|spares| {
        let i = spares.iter().position(fits)?;
        Some(spares.swap_remove(i))
    });
    if let Some(spare) = spare {
        return Ok(spare);
    }
    let mut buffer = Vec::new();
    buffer.try_reserve_exact(len).map_err(|_| Error::Limits {
        what: format!("{what}: cannot allocate {len} bytes"),
    })?;
    Ok(buffer)
}

/// Keeps `buffer`, a decode buffer no longer needed (a pixel-interleaved
/// tile once split into planes, a chunk once copied out), as one of this
/// thread's spares for the next [`output_buffer`], the oldest spares
/// dropped past [`MAX_SPARES`] or [`MAX_SPARE_BYTES`]: its pages stay mapped, where a large
/// buffer freed may go back to the system and cost a page fault per 4 KiB
/// when allocated again (a fifth of the time of a one-tile read).
pub(crate) fn recycle(buffer: Vec<u8>) {
    if buffer.capacity() == 0 || buffer.capacity() > MAX_SPARE_BYTES {
        return;
    }
    SPARES.with_borrow_mut(|spares| {
        let mut held: usize = spares.iter().map(Vec::capacity).sum();
        while (held + buffer.capacity() > MAX_SPARE_BYTES || spares.len() >= MAX_SPARES)
            && !spares.is_empty()
        {
            held -= spares.remove(0).capacity();
        }
        spares.push(buffer);
    });
}

/// [`recycle`]s the buffer of a decoded chunk no one else holds.
pub(crate) fn recycle_bytes(chunk: Bytes) {
    if let Ok(chunk) = chunk.try_into_mut() {
        recycle(Vec::from(chunk));
    }
}

/// Drains a decompressing reader into memory.
///
/// A stage may decode to fewer bytes than the chunk (a later filter such as
/// `delta` with a narrower `astype` widens them again) but never to more, so
/// the output is capped at `ctx.decoded_len`: a stream that goes on past that
/// is an error, and the only allocation is that of the capped buffer.
pub(crate) fn read_bounded(
    codec: &str,
    reader: impl Read,
    ctx: &DecodeContext<'_>,
) -> Result<Bytes> {
    let limit = ctx.decoded_len;
    let mut out = output_buffer(codec, limit.saturating_add(1))?;
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    reader.take(cap).read_to_end(&mut out).map_err(|e| {
        Error::decode(
            codec,
            format!("corrupt, truncated or unsupported stream: {e}"),
        )
    })?;
    if out.len() > limit {
        return Err(Error::decode(
            codec,
            format!("stream decodes to more than {limit} bytes, the size of the decoded chunk"),
        ));
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
pub(crate) mod tests {
    //! Registry tests, plus helpers the codec tests share.

    use super::*;
    use crate::base::dtype::DataType;

    /// A decode context for a chunk of `decoded_len` bytes of `u1`.
    pub(crate) fn ctx(decoded_len: usize) -> DecodeContext<'static> {
        DecodeContext {
            chunk_shape: &[],
            chunk_index: &[],
            dtype: DataType::from_v2("|u1").expect("u1 parses"),
            decoded_len,
            needed: decoded_len,
            first_needed: 0,
        }
    }

    /// Parses a JSON object literal into a [`Config`].
    pub(crate) fn config(json: &str) -> Config {
        serde_json::from_str(json).expect("test config is a JSON object")
    }

    /// Decodes hex text (whitespace ignored) into bytes.
    pub(crate) fn hex(text: &str) -> Vec<u8> {
        let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
        digits
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
            .collect()
    }

    /// Bytes that compress well but are not trivial.
    pub(crate) fn sample(len: usize) -> Vec<u8> {
        (0..len).map(|i| ((i * 7) % 251 / 3) as u8).collect()
    }

    /// Builds codec `name` with config `json`, decodes `input` for a chunk
    /// of `decoded_len` bytes.
    pub(crate) fn decode_with(
        name: &str,
        json: &str,
        input: &[u8],
        decoded_len: usize,
    ) -> Result<Bytes> {
        let codec = build(name, &config(json))?;
        codec.decode(Bytes::copy_from_slice(input), &ctx(decoded_len))
    }

    /// Decodes many corrupted variants of `valid` (flipped bytes, cut
    /// tails); any result is fine as long as nothing panics or crashes.
    pub(crate) fn assert_survives_mutations(
        name: &str,
        json: &str,
        valid: &[u8],
        decoded_len: usize,
    ) {
        let codec = build(name, &config(json)).unwrap();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % 1_000_003).unwrap()
        };
        for round in 0..300 {
            let mut bytes = valid.to_vec();
            for _ in 0..=(round % 4) {
                if !bytes.is_empty() {
                    let at = next() % bytes.len();
                    bytes[at] = u8::try_from(next() % 256).unwrap();
                }
            }
            if round % 3 == 0 {
                bytes.truncate(next() % (valid.len() + 1));
            }
            let _ = codec.decode(Bytes::from(bytes), &ctx(decoded_len));
        }
    }

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
                        .encode(vec![0u8; super::super::nitf_vq::CODEBOOK_LEN])
                ),
            ),
            ("grib", r#"{"var": "t2m", "dtype": "float32"}"#.to_string()),
            ("valid_range", r#"{"nodata": 0}"#.to_string()),
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
