//! numcodecs `lzma`: Python's `lzma` module formats.
//!
//! `format` 1 (`FORMAT_XZ`, the default), 2 (`FORMAT_ALONE`) and 0
//! (`FORMAT_AUTO`) are all read with liblzma's auto decoder, concatenated
//! streams included. `format` 3 (`FORMAT_RAW`) needs the `filters` chain
//! the data was written with; LZMA1, LZMA2 and delta filters are supported.

use std::ops::RangeInclusive;

use bytes::Bytes;
use liblzma::read::XzDecoder;
use liblzma::stream::{Filters, LzmaOptions, Stream, CONCATENATED};
use serde_json::Value;

use super::{Codec, DecodeContext};
use crate::base::error::{Error, Result};
use crate::codec::config::{config_uint, Config};
use crate::codec::stream::read_bounded;

/// Python's `lzma.FORMAT_AUTO`, `FORMAT_XZ`, `FORMAT_ALONE`, `FORMAT_RAW`.
const FORMAT_AUTO: u64 = 0;
const FORMAT_XZ: u64 = 1;
const FORMAT_ALONE: u64 = 2;
const FORMAT_RAW: u64 = 3;

/// Python's filter ids.
const FILTER_DELTA: u64 = 0x03;
const FILTER_LZMA2: u64 = 0x21;
const FILTER_LZMA1: u64 = 0x4000_0000_0000_0001;

/// Memory the auto decoder may reserve beyond the chunk: xz and .lzma
/// headers declare a dictionary that liblzma reserves up front (pages are
/// only committed as output is written); 80 MiB covers every preset, whose
/// largest dictionary is 64 MiB.
const MEMLIMIT_SLACK: u64 = 80 << 20;
/// Smallest dictionary liblzma uses.
const MIN_DICT_SIZE: u32 = 4096;

/// One filter of a raw chain, as far as decoding needs it. Dictionary sizes
/// and presets are not kept: see [`raw_decoder`].
#[derive(Debug, Clone, Copy)]
enum RawFilter {
    Lzma1 { lc: u32, lp: u32, pb: u32 },
    Lzma2,
    Delta { dist_minus_one: u8 },
}

/// Decodes xz / .lzma streams, or raw streams with a known filter chain.
#[derive(Debug)]
struct Lzma {
    /// The filter chain of `FORMAT_RAW`, `None` for container formats.
    raw: Option<Vec<RawFilter>>,
}

impl Codec for Lzma {
    fn name(&self) -> &str {
        "lzma"
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let stream = match &self.raw {
            Some(chain) => raw_decoder(chain, ctx.decoded_len),
            None => {
                let memlimit = u64::try_from(ctx.decoded_len).unwrap_or(u64::MAX);
                Stream::new_auto_decoder(memlimit.saturating_add(MEMLIMIT_SLACK), CONCATENATED)
            }
        };
        let stream = stream.map_err(|e| Error::decode(self.name(), e))?;
        read_bounded(self.name(), XzDecoder::new_stream(&input[..], stream), ctx)
    }
}

/// A raw decoder for `chain`. Its dictionary is the chunk size: a match
/// never reaches further back than the bytes decoded so far, so this always
/// suffices, whatever dictionary the encoder was configured with.
fn raw_decoder(chain: &[RawFilter], decoded_len: usize) -> Result<Stream, liblzma::stream::Error> {
    let dict_size = u32::try_from(decoded_len)
        .unwrap_or(u32::MAX)
        .max(MIN_DICT_SIZE);
    let mut filters = Filters::new();
    for filter in chain {
        let mut options = LzmaOptions::new();
        options.dict_size(dict_size);
        match *filter {
            RawFilter::Lzma1 { lc, lp, pb } => {
                options
                    .literal_context_bits(lc)
                    .literal_position_bits(lp)
                    .position_bits(pb);
                filters.lzma1(&options);
            }
            RawFilter::Lzma2 => {
                filters.lzma2(&options);
            }
            RawFilter::Delta { dist_minus_one } => {
                filters.delta_properties(&[dist_minus_one])?;
            }
        }
    }
    Stream::new_raw_decoder(&filters)
}

/// Reads an optional integer option of a filter, with a default and a range.
fn filter_option(
    spec: &Config,
    key: &str,
    default: u32,
    range: RangeInclusive<u32>,
) -> Result<u32> {
    let value = config_uint("lzma", spec, key)?.unwrap_or(u64::from(default));
    u32::try_from(value)
        .ok()
        .filter(|v| range.contains(v))
        .ok_or_else(|| {
            Error::codec_config(
                "lzma",
                format!("filter option '{key}' should be in {range:?}, found {value}"),
            )
        })
}

/// Parses one entry of the `filters` list (Python's filter specifiers).
fn parse_filter(spec: &Value) -> Result<RawFilter> {
    let spec = spec.as_object().ok_or_else(|| {
        Error::codec_config(
            "lzma",
            format!("a filter should be an object, found {spec}"),
        )
    })?;
    let id = config_uint("lzma", spec, "id")?
        .ok_or_else(|| Error::codec_config("lzma", "a filter has no 'id'"))?;
    match id {
        FILTER_LZMA1 => Ok(RawFilter::Lzma1 {
            lc: filter_option(spec, "lc", 3, 0..=4)?,
            lp: filter_option(spec, "lp", 0, 0..=4)?,
            pb: filter_option(spec, "pb", 2, 0..=4)?,
        }),
        FILTER_LZMA2 => Ok(RawFilter::Lzma2),
        FILTER_DELTA => {
            let dist = filter_option(spec, "dist", 1, 1..=256)?;
            let dist_minus_one = u8::try_from(dist - 1).map_err(|_| {
                Error::codec_config("lzma", format!("delta 'dist' {dist} is too large"))
            })?;
            Ok(RawFilter::Delta { dist_minus_one })
        }
        other => Err(Error::unsupported(format!(
            "lzma FORMAT_RAW filter id {other:#x} (only LZMA1, LZMA2 and delta are supported)"
        ))),
    }
}

/// Builds the `lzma` codec from `format` (default 1) and, for raw streams,
/// `filters`. `check` and `preset` only matter for encoding.
pub(crate) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let format = config_uint("lzma", config, "format")?.unwrap_or(FORMAT_XZ);
    let raw = match format {
        FORMAT_AUTO | FORMAT_XZ | FORMAT_ALONE => None,
        FORMAT_RAW => Some(parse_chain(config.get("filters"))?),
        other => {
            return Err(Error::codec_config(
                "lzma",
                format!("'format' should be 0 (auto), 1 (xz), 2 (alone) or 3 (raw), found {other}"),
            ))
        }
    };
    Ok(Box::new(Lzma { raw }))
}

/// Parses and checks the `filters` of a raw stream.
fn parse_chain(filters: Option<&Value>) -> Result<Vec<RawFilter>> {
    let specs = filters
        .and_then(Value::as_array)
        .filter(|specs| !specs.is_empty())
        .ok_or_else(|| {
            Error::codec_config("lzma", "format 3 (raw) needs a non-empty 'filters' list")
        })?;
    let chain = specs.iter().map(parse_filter).collect::<Result<Vec<_>>>()?;
    raw_decoder(&chain, 0)
        .map_err(|e| Error::codec_config("lzma", format!("invalid filter chain: {e}")))?;
    Ok(chain)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use crate::codec::testing::{assert_survives_mutations, decode_with, hex, sample};

    fn encode_xz(data: &[u8]) -> Vec<u8> {
        let mut encoder = liblzma::write::XzEncoder::new(Vec::new(), 6);
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn pattern() -> Vec<u8> {
        (0..64u8).map(|i| i % 16).collect()
    }

    #[test]
    fn round_trips_xz_streams() {
        let data = sample(50_000);
        let out = decode_with(
            "lzma",
            r#"{"format": 1, "check": -1, "preset": null}"#,
            &encode_xz(&data),
            50_000,
        );
        assert_eq!(&out.unwrap()[..], &data[..]);
        let two = [encode_xz(&data[..100]), encode_xz(&data[100..])].concat();
        assert_eq!(
            &decode_with("numcodecs.lzma", "{}", &two, 50_000).unwrap()[..],
            &data[..]
        );
    }

    #[test]
    fn decodes_numcodecs_container_formats() {
        // numcodecs.LZMA(preset=1).encode(bytes(range(16)) * 4)
        let xz = hex(
            "fd377a585a000004e6d6b4460200210110000000a8708e86e0003f00165d00000052500a84f99bb280
             21a969d627e10423dea90000000000491b61f0fef5e00000013240caa02abb1fb6f37d010000000004
             595a",
        );
        // numcodecs.LZMA(format=lzma.FORMAT_ALONE, preset=1).encode(...)
        let alone = hex(
            "5d00001000ffffffffffffffff00000052500a84f99bb28021a969d627e10423e80b13fffffb96c000",
        );
        assert_eq!(
            &decode_with("lzma", "{}", &xz, 64).unwrap()[..],
            &pattern()[..]
        );
        let out = decode_with("lzma", r#"{"format": 2}"#, &alone, 64).unwrap();
        assert_eq!(&out[..], &pattern()[..]);
        assert_eq!(
            &decode_with("lzma", r#"{"format": 0}"#, &alone, 64).unwrap()[..],
            &pattern()[..]
        );
    }

    #[test]
    fn decodes_numcodecs_raw_streams() {
        // numcodecs.LZMA(format=lzma.FORMAT_RAW, filters=...).encode(bytes(range(16)) * 4)
        let delta_lzma2 = r#"{"id": "lzma", "format": 3, "check": -1, "preset": null,
            "filters": [{"id": 3, "dist": 4}, {"id": 33, "preset": 1}]}"#;
        let golden = hex("e0003f00115d00000052500aa00a5450316b35129428000000");
        assert_eq!(
            &decode_with("lzma", delta_lzma2, &golden, 64).unwrap()[..],
            &pattern()[..]
        );
        let lzma1 = r#"{"format": 3, "filters":
            [{"id": 4611686018427387905, "preset": 1, "lc": 1, "lp": 1, "pb": 1}]}"#;
        let golden = hex("00000040512348f974fcbe26ecb530b203430380a8be57fffff3d28000");
        assert_eq!(
            &decode_with("lzma", lzma1, &golden, 64).unwrap()[..],
            &pattern()[..]
        );
    }

    #[test]
    fn rejects_bad_config() {
        for json in [
            r#"{"format": 4}"#,
            r#"{"format": 3}"#,
            r#"{"format": 3, "filters": []}"#,
            r#"{"format": 3, "filters": [5]}"#,
            r#"{"format": 3, "filters": [{"dist": 4}]}"#,
            r#"{"format": 3, "filters": [{"id": 3, "dist": 0}, {"id": 33}]}"#,
            r#"{"format": 3, "filters": [{"id": 4611686018427387905, "lc": 4, "lp": 4}]}"#,
            r#"{"format": 3, "filters": [{"id": 3}]}"#,
        ] {
            assert!(decode_with("lzma", json, &[0; 8], 8).is_err(), "{json}");
        }
        let bcj = r#"{"format": 3, "filters": [{"id": 4}, {"id": 33}]}"#;
        let err = decode_with("lzma", bcj, &[0; 8], 8).unwrap_err();
        assert!(err.to_string().contains("filter id 0x4"), "{err}");
    }

    #[test]
    fn rejects_hostile_input() {
        let data = sample(20_000);
        let encoded = encode_xz(&data);
        assert!(decode_with("lzma", "{}", &encoded[..encoded.len() - 1], 20_000).is_err());
        assert!(decode_with("lzma", "{}", &encoded[..encoded.len() / 2], 20_000).is_err());
        assert!(decode_with("lzma", "{}", b"\xfd7zXZ\x00 garbage", 20_000).is_err());
        assert!(decode_with("lzma", "{}", &encoded, 19_999).is_err());
        assert_survives_mutations("lzma", "{}", &encode_xz(&sample(2_000)), 2_000);
        let raw = r#"{"format": 3, "filters": [{"id": 33}]}"#;
        assert_survives_mutations(
            "lzma",
            raw,
            &hex("e0003f00115d00000052500aa00a5450316b35129428000000"),
            64,
        );
    }
}
