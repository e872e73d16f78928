//! numcodecs `bz2`: one or more bzip2 streams.

use bytes::Bytes;
use bzip2::read::MultiBzDecoder;

use super::{Codec, DecodeContext};
use crate::base::error::Result;
use crate::codec::config::Config;
use crate::codec::stream::read_bounded;

/// Decodes concatenated bzip2 streams, like Python's `bz2.decompress`.
#[derive(Debug)]
struct Bz2;

impl Codec for Bz2 {
    fn name(&self) -> &str {
        "bz2"
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        read_bounded(self.name(), MultiBzDecoder::new(&input[..]), ctx)
    }
}

/// Builds the `bz2` codec (its configuration only holds the encoding level).
pub(super) fn from_config(_config: &Config) -> Result<Box<dyn Codec>> {
    Ok(Box::new(Bz2))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use crate::codec::testing::{assert_survives_mutations, decode_with, hex, sample};

    fn encode(data: &[u8]) -> Vec<u8> {
        let mut encoder = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(9));
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn round_trips() {
        let data = sample(10_000);
        let out = decode_with("numcodecs.bz2", r#"{"level": 9}"#, &encode(&data), 10_000);
        assert_eq!(&out.unwrap()[..], &data[..]);
    }

    #[test]
    fn decodes_numcodecs_output() {
        // numcodecs.BZ2(level=1).encode(bytes(range(16)) * 4)
        let golden = hex(
            "42 5a 68 31 31 41 59 26 53 59 10 19 4d 4b 00 00 01 c0 00 7f ff a0 00 31
             4c 00 13 40 aa 80 98 09 9d 22 48 99 42 a7 c5 8b 98 32 68 d9 c3 f3 a7 85
             dc 91 4e 14 24 04 06 53 52 c0",
        );
        let expected: Vec<u8> = (0..64u8).map(|i| i % 16).collect();
        assert_eq!(
            &decode_with("bz2", "{}", &golden, 64).unwrap()[..],
            &expected[..]
        );
    }

    #[test]
    fn rejects_hostile_input() {
        let encoded = encode(&sample(10_000));
        assert!(decode_with("bz2", "{}", &encoded[..encoded.len() - 1], 10_000).is_err());
        assert!(decode_with("bz2", "{}", b"BZh9 garbage garbage garbage", 10_000).is_err());
        assert!(decode_with("bz2", "{}", &encoded, 100).is_err());
        assert_survives_mutations("bz2", "{}", &encode(&sample(3_000)), 3_000);
    }
}
