//! numcodecs `lz4`: a 4-byte little-endian decoded size, then one LZ4 block.

use bytes::Bytes;

use super::registry::{output_buffer, Config};
use super::{Codec, DecodeContext};
use crate::error::{Error, Result};

/// Size of the numcodecs header holding the decoded size.
const HEADER_LEN: usize = 4;

/// Decodes the numcodecs LZ4 framing (not the LZ4 frame format).
#[derive(Debug)]
struct Lz4;

impl Codec for Lz4 {
    fn name(&self) -> &str {
        "lz4"
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let (header, block) = input.split_first_chunk::<HEADER_LEN>().ok_or_else(|| {
            Error::decode(
                self.name(),
                format!(
                    "needs a {HEADER_LEN}-byte size header, chunk has {} bytes",
                    input.len()
                ),
            )
        })?;
        let size = usize::try_from(u32::from_le_bytes(*header)).unwrap_or(usize::MAX);
        if size > ctx.decoded_len {
            return Err(Error::decode(
                self.name(),
                format!(
                    "header says {size} bytes, chunk should be at most {}",
                    ctx.decoded_len
                ),
            ));
        }
        let mut out = output_buffer(self.name(), size)?;
        out.resize(size, 0);
        let written = lz4_flex::block::decompress_into(block, &mut out)
            .map_err(|e| Error::decode(self.name(), format!("corrupt LZ4 block: {e}")))?;
        if written != size {
            return Err(Error::decode(
                self.name(),
                format!("header says {size} bytes, block decodes to {written}"),
            ));
        }
        Ok(Bytes::from(out))
    }
}

/// Builds the `lz4` codec (`acceleration` only matters for encoding).
pub(super) fn from_config(_config: &Config) -> Result<Box<dyn Codec>> {
    Ok(Box::new(Lz4))
}

#[cfg(test)]
mod tests {
    use super::super::registry::tests::{assert_survives_mutations, decode_with, hex, sample};

    fn encode(data: &[u8]) -> Vec<u8> {
        let size = u32::try_from(data.len()).unwrap().to_le_bytes();
        [&size[..], &lz4_flex::block::compress(data)].concat()
    }

    #[test]
    fn round_trips() {
        let data = sample(70_000);
        let out = decode_with("lz4", r#"{"acceleration": 1}"#, &encode(&data), 70_000);
        assert_eq!(&out.unwrap()[..], &data[..]);
        assert!(decode_with("numcodecs.lz4", "{}", &encode(&[]), 0)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn decodes_numcodecs_output() {
        // numcodecs.LZ4().encode(bytes(range(16)) * 4)
        let golden = hex(
            "40 00 00 00 ff 01 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 00
             18 50 0b 0c 0d 0e 0f",
        );
        let expected: Vec<u8> = (0..64u8).map(|i| i % 16).collect();
        assert_eq!(
            &decode_with("lz4", "{}", &golden, 64).unwrap()[..],
            &expected[..]
        );
    }

    #[test]
    fn rejects_lying_size_headers() {
        let mut encoded = encode(&sample(65_536));
        encoded[..4].copy_from_slice(&1_000_000u32.to_le_bytes());
        let err = decode_with("lz4", "{}", &encoded, 65_536).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("header says 1000000 bytes, chunk should be at most 65536"),
            "{text}"
        );
        encoded[..4].copy_from_slice(&65_000u32.to_le_bytes());
        assert!(decode_with("lz4", "{}", &encoded, 65_536).is_err());
    }

    #[test]
    fn rejects_hostile_input() {
        let encoded = encode(&sample(10_000));
        assert!(decode_with("lz4", "{}", &encoded[..encoded.len() / 2], 10_000).is_err());
        assert!(decode_with("lz4", "{}", &encoded[..3], 10_000).is_err());
        assert_survives_mutations("lz4", "{}", &encode(&sample(3_000)), 3_000);
        assert!(decode_with("lz4", "{}", b"\x10\x00\x00\x00\xff\xff\xff\xff", 10_000).is_err());
    }
}
