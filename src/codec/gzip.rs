//! numcodecs `gzip` (Zarr v3 `gzip`): one or more gzip (RFC 1952) members.

use bytes::Bytes;
use flate2::read::MultiGzDecoder;

use super::{Codec, DecodeContext};
use crate::base::error::Result;
use crate::codec::config::Config;
use crate::codec::stream::read_bounded;

/// Decodes concatenated gzip members, like Python's `gzip` module.
#[derive(Debug)]
struct Gzip;

impl Codec for Gzip {
    fn name(&self) -> &str {
        "gzip"
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        read_bounded(self.name(), MultiGzDecoder::new(&input[..]), ctx)
    }
}

/// Builds the `gzip` codec (its configuration only holds the encoding level).
pub(super) fn from_config(_config: &Config) -> Result<Box<dyn Codec>> {
    Ok(Box::new(Gzip))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use crate::codec::testing::{assert_survives_mutations, decode_with, hex, sample};

    fn encode(data: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(5));
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn round_trips_single_and_multiple_members() {
        let data = sample(10_000);
        let out = decode_with("gzip", r#"{"level": 5}"#, &encode(&data), 10_000).unwrap();
        assert_eq!(&out[..], &data[..]);
        let two = [encode(&data[..4000]), encode(&data[4000..])].concat();
        let out = decode_with("numcodecs.gzip", "{}", &two, 10_000).unwrap();
        assert_eq!(&out[..], &data[..]);
    }

    #[test]
    fn decodes_numcodecs_output() {
        // numcodecs.GZip(level=1).encode(bytes(range(16)) * 4)
        let golden = hex(
            "1f 8b 08 00 f6 b0 02 6b 04 ff 63 60 64 62 66 61 65 63 e7 e0 e4 e2 e6 e1
             e5 e3 67 20 91 0f 00 ba 5a 78 c7 40 00 00 00",
        );
        let expected: Vec<u8> = (0..64u8).map(|i| i % 16).collect();
        assert_eq!(
            &decode_with("gzip", "{}", &golden, 64).unwrap()[..],
            &expected[..]
        );
    }

    #[test]
    fn rejects_hostile_input() {
        let encoded = encode(&sample(10_000));
        assert!(decode_with("gzip", "{}", &encoded[..encoded.len() - 3], 10_000).is_err());
        assert!(decode_with("gzip", "{}", &encoded[..encoded.len() / 2], 10_000).is_err());
        assert!(decode_with("gzip", "{}", b"\x1f\x8b garbage garbage", 10_000).is_err());
        assert!(decode_with("gzip", "{}", &encoded, 5_000).is_err());
        assert_survives_mutations("gzip", "{}", &encode(&sample(3_000)), 3_000);
    }
}
