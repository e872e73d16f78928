//! imagecodecs `imagecodecs_lzf`: one liblzf stream, as h5py's LZF HDF5
//! filter (32000) writes it, optionally after a 4-byte little-endian
//! decoded size (imagecodecs' `header=True`).
//!
//! h5py's filter compresses into a buffer as long as the chunk; when the
//! stream would not fit, the filter reports failure and, the filter being
//! optional, HDF5 stores the chunk as it was (and sets the filter's bit in
//! the chunk's filter mask). So without a header, an input exactly as long
//! as the decoded chunk is taken as stored uncompressed; the HDF5 indexer
//! checks every chunk's filter mask against that rule
//! (`crate::builders::hdf5::filters`).
//!
//! The stream is a sequence of runs: a control byte below 32 is followed by
//! that many plus one literal bytes; otherwise its top 3 bits are a length
//! (7 means "plus the next byte") and, with the next byte, its low 5 bits
//! give how far back the match starts (length plus 2 bytes copied, which
//! may overlap the bytes being written).

use bytes::Bytes;

use super::{Codec, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::error::{Error, Result};
use crate::codec::config::Config;

/// The codec's id (imagecodecs' numcodecs name).
pub(super) const NAMES: &[&str] = &["imagecodecs_lzf", "imagecodecs.lzf"];

/// Size of imagecodecs' optional decoded-size header.
const HEADER_LEN: usize = 4;

/// Decodes liblzf streams.
#[derive(Debug)]
struct Lzf {
    /// Whether a 4-byte little-endian decoded size comes first.
    header: bool,
}

impl Codec for Lzf {
    fn name(&self) -> &str {
        NAMES[0]
    }

    fn compression(&self) -> String {
        "LZF".into()
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let fail = |reason: String| Error::decode(self.name(), reason);
        let (size, stream) = if self.header {
            let (header, stream) = input.split_first_chunk::<HEADER_LEN>().ok_or_else(|| {
                fail(format!(
                    "needs a {HEADER_LEN}-byte size header, chunk has {} bytes",
                    input.len()
                ))
            })?;
            let size = usize::try_from(u32::from_le_bytes(*header)).unwrap_or(usize::MAX);
            if size > ctx.decoded_len {
                return Err(fail(format!(
                    "header says {size} bytes, chunk should be at most {}",
                    ctx.decoded_len
                )));
            }
            (Some(size), stream)
        } else if input.len() == ctx.decoded_len {
            // Stored uncompressed (see the module docs).
            return Ok(input);
        } else {
            (None, &input[..])
        };
        let mut out = output_buffer(self.name(), size.unwrap_or(ctx.decoded_len))?;
        decompress(stream, &mut out, size.unwrap_or(ctx.decoded_len)).map_err(fail)?;
        if let Some(size) = size.filter(|&s| s != out.len()) {
            return Err(fail(format!(
                "header says {size} bytes, stream decodes to {}",
                out.len()
            )));
        }
        Ok(Bytes::from(out))
    }
}

/// Appends the decoded `stream` to `out` (empty), never past `limit`
/// bytes; the reason when the stream is corrupt, truncated or longer.
fn decompress(stream: &[u8], out: &mut Vec<u8>, limit: usize) -> std::result::Result<(), String> {
    let mut at = 0;
    let too_long = || format!("stream decodes to more than {limit} bytes, the size of the chunk");
    while at < stream.len() {
        let control = usize::from(next(stream, &mut at, "a run")?);
        if control < 32 {
            let len = control + 1;
            let literal = stream
                .get(at..at + len)
                .ok_or_else(|| format!("stream ends inside a literal run at byte {at}"))?;
            if out.len() + len > limit {
                return Err(too_long());
            }
            out.extend_from_slice(literal);
            at += len;
            continue;
        }
        let mut len = control >> 5;
        if len == 7 {
            len += usize::from(next(stream, &mut at, "a match")?);
        }
        let len = len + 2;
        let back = ((control & 0x1f) << 8) + usize::from(next(stream, &mut at, "a match")?) + 1;
        let start = out.len().checked_sub(back).ok_or_else(|| {
            format!(
                "a match at byte {at} refers {back} bytes back, before the start of the output \
                 ({} bytes)",
                out.len()
            )
        })?;
        if out.len() + len > limit {
            return Err(too_long());
        }
        // Byte by byte: the match may overlap what it writes.
        for i in start..start + len {
            out.push(out[i]);
        }
    }
    Ok(())
}

/// The byte at `*at` of `stream` (then `*at` moves past it); the reason
/// when the stream ends inside `what`.
fn next(stream: &[u8], at: &mut usize, what: &str) -> std::result::Result<u8, String> {
    let byte = stream
        .get(*at)
        .copied()
        .ok_or_else(|| format!("stream ends inside {what} at byte {at}"))?;
    *at += 1;
    Ok(byte)
}

/// Builds the codec from its `header` flag (imagecodecs' default: true).
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let header = match config.get("header") {
        None | Some(serde_json::Value::Null) => true,
        Some(serde_json::Value::Bool(header)) => *header,
        Some(other) => {
            return Err(Error::codec_config(
                NAMES[0],
                format!("'header' should be true or false, found {other}"),
            ))
        }
    };
    Ok(Box::new(Lzf { header }))
}

#[cfg(test)]
mod tests {
    use crate::codec::testing::{assert_survives_mutations, decode_with, hex, sample};

    const RAW: &str = r#"{"header": false}"#;

    /// A valid (if poor) liblzf stream: literal runs of up to 32 bytes, and
    /// a match for each run that repeats the previous run.
    fn encode(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut previous: Option<&[u8]> = None;
        for run in data.chunks(32) {
            match previous {
                Some(p) if p == run && run.len() >= 3 => {
                    let len = run.len() - 2;
                    let back = run.len() - 1;
                    if len < 7 {
                        out.push(((len << 5) | (back >> 8)) as u8);
                    } else {
                        out.push(((7 << 5) | (back >> 8)) as u8);
                        out.push((len - 7) as u8);
                    }
                    out.push((back & 0xff) as u8);
                }
                _ => {
                    out.push((run.len() - 1) as u8);
                    out.extend_from_slice(run);
                }
            }
            previous = Some(run);
        }
        out
    }

    #[test]
    fn decodes_liblzf_output() {
        // imagecodecs.lzf_encode(bytes(range(16)) * 4, header=False), the
        // liblzf h5py's filter links: one literal run, one long overlapping
        // match, a short literal tail.
        let golden = hex("10 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 00 e0 24 0f 01 0e 0f");
        let expected: Vec<u8> = (0..64u8).map(|i| i % 16).collect();
        assert_eq!(
            &decode_with("imagecodecs_lzf", RAW, &golden, 64).unwrap()[..],
            &expected[..]
        );
        // With imagecodecs' header (a little-endian size).
        let with_header = [&64u32.to_le_bytes()[..], &golden].concat();
        let out = decode_with("imagecodecs.lzf", "{}", &with_header, 64).unwrap();
        assert_eq!(&out[..], &expected[..]);
    }

    #[test]
    fn round_trips_and_passes_stored_chunks() {
        let data = [sample(32).repeat(6), sample(50)].concat();
        let encoded = encode(&data);
        assert!(encoded.len() < data.len());
        let out = decode_with("imagecodecs_lzf", RAW, &encoded, data.len()).unwrap();
        assert_eq!(&out[..], &data[..]);
        // A chunk as long as the decoded chunk was stored uncompressed.
        let out = decode_with("imagecodecs_lzf", RAW, &data, data.len()).unwrap();
        assert_eq!(&out[..], &data[..]);
        assert!(decode_with("imagecodecs_lzf", RAW, &[], 0)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn rejects_hostile_input() {
        let data = sample(3_000);
        let encoded = encode(&[&data[..], &data[..]].concat());
        // Truncated inside a literal run, and inside a match.
        let err = decode_with("imagecodecs.lzf", RAW, &encoded[..40], 6_000).unwrap_err();
        assert!(
            err.to_string().contains("ends inside a literal run"),
            "{err}"
        );
        let err = decode_with("imagecodecs.lzf", RAW, &[0xe0], 100).unwrap_err();
        assert!(err.to_string().contains("ends inside a match"), "{err}");
        // A match before the start of the output.
        let err = decode_with("imagecodecs.lzf", RAW, &[0x00, 0x41, 0x20, 0x05], 100).unwrap_err();
        assert!(err.to_string().contains("before the start"), "{err}");
        // More than the chunk, by literals and by a match.
        let err = decode_with("imagecodecs.lzf", RAW, &encoded, 5_999).unwrap_err();
        assert!(err.to_string().contains("more than 5999 bytes"), "{err}");
        let err =
            decode_with("imagecodecs.lzf", RAW, &[0x00, 0x41, 0xe0, 0xff, 0x00], 200).unwrap_err();
        assert!(err.to_string().contains("more than 200 bytes"), "{err}");
        // Headers that lie.
        let err = decode_with(
            "imagecodecs.lzf",
            "{}",
            &[0xff, 0xff, 0xff, 0x7f, 0x00, 0x41],
            10,
        )
        .unwrap_err();
        assert!(err.to_string().contains("header says"), "{err}");
        let err = decode_with("imagecodecs.lzf", "{}", &[5, 0, 0, 0, 0x00, 0x41], 10).unwrap_err();
        assert!(err.to_string().contains("decodes to 1"), "{err}");
        assert!(decode_with("imagecodecs.lzf", "{}", &[5, 0], 10).is_err());
        assert!(decode_with("imagecodecs.lzf", r#"{"header": 1}"#, &[], 0).is_err());
        assert_survives_mutations("imagecodecs_lzf", RAW, &encoded, 6_000);
        assert_survives_mutations(
            "imagecodecs_lzf",
            "{}",
            &[&6_000u32.to_le_bytes()[..], &encoded].concat(),
            6_000,
        );
    }
}
