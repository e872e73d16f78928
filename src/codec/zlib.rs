//! numcodecs `zlib`: a zlib (RFC 1950) stream.

use bytes::Bytes;
use libdeflater::{DecompressionError, Decompressor};

use super::{Codec, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::error::{Error, Result};
use crate::codec::config::Config;

/// Decodes a zlib stream; the configured `level` only matters for encoding.
#[derive(Debug)]
struct Zlib;

impl Codec for Zlib {
    fn name(&self) -> &str {
        "zlib"
    }

    /// Inflates the whole stream in one call (libdeflate), straight into a
    /// buffer of the decoded chunk's size: a stream that goes on past the
    /// chunk is an error.
    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let mut out = output_buffer(self.name(), ctx.decoded_len)?;
        out.resize(ctx.decoded_len, 0);
        let n = Decompressor::new()
            .zlib_decompress(&input, &mut out)
            .map_err(|e| {
                let reason = match e {
                    DecompressionError::InsufficientSpace => format!(
                        "stream decodes to more than {} bytes, the size of the decoded chunk",
                        ctx.decoded_len
                    ),
                    DecompressionError::BadData => "corrupt or truncated stream".to_string(),
                };
                Error::decode(self.name(), reason)
            })?;
        out.truncate(n);
        Ok(Bytes::from(out))
    }
}

/// Builds the `zlib` codec (its configuration only holds the encoding level).
pub(crate) fn from_config(_config: &Config) -> Result<Box<dyn Codec>> {
    Ok(Box::new(Zlib))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use crate::codec::testing::{assert_survives_mutations, decode_with, hex, sample};

    fn encode(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(5));
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn round_trips() {
        let data = sample(10_000);
        let out = decode_with("numcodecs.zlib", r#"{"level": 5}"#, &encode(&data), 10_000);
        assert_eq!(&out.unwrap()[..], &data[..]);
    }

    #[test]
    fn decodes_numcodecs_output() {
        // numcodecs.Zlib(level=1).encode(bytes(range(16)) * 4)
        let golden =
            hex("78 01 63 60 64 62 66 61 65 63 e7 e0 e4 e2 e6 e1 e5 e3 67 20 91 0f 00 37 e0 01 e1");
        let expected: Vec<u8> = (0..64u8).map(|i| i % 16).collect();
        assert_eq!(
            &decode_with("zlib", "{}", &golden, 64).unwrap()[..],
            &expected[..]
        );
    }

    #[test]
    fn rejects_hostile_input() {
        let encoded = encode(&sample(10_000));
        let truncated = &encoded[..encoded.len() / 2];
        assert!(decode_with("zlib", "{}", truncated, 10_000).is_err());
        assert!(decode_with("zlib", "{}", b"not a zlib stream", 10_000).is_err());
        assert!(decode_with("zlib", "{}", &[], 10_000).is_err());
        let err = decode_with("zlib", "{}", &encoded, 9_999).unwrap_err();
        assert!(err.to_string().contains("more than 9999 bytes"), "{err}");
        assert_survives_mutations("zlib", "{}", &encode(&sample(3_000)), 3_000);
    }
}
