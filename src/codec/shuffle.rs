//! numcodecs `shuffle`: byte shuffle of fixed-size elements.
//!
//! The encoded layout holds byte 0 of every element, then byte 1 of every
//! element, and so on. Like numcodecs, data whose length is not a multiple
//! of the element size is rejected, and an element size of 0 or 1 leaves the
//! bytes unchanged.

use bytes::Bytes;

use super::{Codec, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::error::{Error, Result};
use crate::codec::config::{config_uint, Config};

/// numcodecs' default element size.
const DEFAULT_ELEMENT_SIZE: u64 = 4;

/// Undoes a byte shuffle.
#[derive(Debug)]
struct Shuffle {
    element_size: usize,
}

impl Codec for Shuffle {
    fn name(&self) -> &str {
        "shuffle"
    }

    fn decode(&self, input: Bytes, _ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let size = self.element_size;
        if size <= 1 || input.is_empty() {
            return Ok(input);
        }
        if !input.len().is_multiple_of(size) {
            return Err(Error::decode(
                self.name(),
                format!(
                    "{} bytes is not a whole number of {size}-byte elements",
                    input.len()
                ),
            ));
        }
        let count = input.len() / size;
        let mut out = output_buffer(self.name(), input.len())?;
        out.resize(input.len(), 0);
        for (byte, plane) in input.chunks_exact(count).enumerate() {
            for (element, &value) in out.chunks_exact_mut(size).zip(plane) {
                element[byte] = value;
            }
        }
        Ok(Bytes::from(out))
    }
}

/// Builds the `shuffle` codec from its `elementsize` (default 4).
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let size = config_uint("shuffle", config, "elementsize")?.unwrap_or(DEFAULT_ELEMENT_SIZE);
    let element_size = usize::try_from(size)
        .map_err(|_| Error::codec_config("shuffle", format!("elementsize {size} is too large")))?;
    Ok(Box::new(Shuffle { element_size }))
}

#[cfg(test)]
mod tests {
    use crate::codec::testing::{assert_survives_mutations, decode_with, hex, sample};

    fn encode(data: &[u8], size: usize) -> Vec<u8> {
        let count = data.len() / size;
        (0..size)
            .flat_map(|byte| (0..count).map(move |element| data[element * size + byte]))
            .collect()
    }

    #[test]
    fn round_trips() {
        let data = sample(4 * 3 * 5);
        for size in [2, 3, 4, 5, 8] {
            let json = format!(r#"{{"elementsize": {size}}}"#);
            let data = &data[..data.len() / size * size];
            let out = decode_with("shuffle", &json, &encode(data, size), data.len()).unwrap();
            assert_eq!(&out[..], data, "element size {size}");
        }
        let out = decode_with("numcodecs.shuffle", "{}", &encode(&data, 4), data.len());
        assert_eq!(&out.unwrap()[..], &data[..], "default element size 4");
    }

    #[test]
    fn small_element_sizes_pass_through() {
        for json in [r#"{"elementsize": 1}"#, r#"{"elementsize": 0}"#] {
            assert_eq!(
                &decode_with("shuffle", json, b"abcde", 5).unwrap()[..],
                b"abcde"
            );
        }
    }

    #[test]
    fn decodes_numcodecs_output() {
        // numcodecs.Shuffle(elementsize=4)
        //     .encode((np.arange(6, dtype=">u4") * 0x01020304).astype(">u4"))
        let golden = hex(GOLDEN);
        let expected: Vec<u8> = (0..6u32)
            .flat_map(|i| (i * 0x0102_0304).to_be_bytes())
            .collect();
        let out = decode_with("shuffle", r#"{"elementsize": 4}"#, &golden, 24).unwrap();
        assert_eq!(&out[..], &expected[..]);
    }

    #[test]
    fn rejects_partial_elements_and_bad_config() {
        let err = decode_with("shuffle", r#"{"elementsize": 4}"#, b"abcdefg", 7).unwrap_err();
        assert!(
            err.to_string()
                .contains("7 bytes is not a whole number of 4-byte elements"),
            "{err}"
        );
        assert!(decode_with("shuffle", r#"{"elementsize": -2}"#, b"ab", 2).is_err());
        assert!(decode_with("shuffle", r#"{"elementsize": "4"}"#, b"ab", 2).is_err());
        assert_survives_mutations("shuffle", r#"{"elementsize": 3}"#, &sample(30), 30);
    }

    const GOLDEN: &str = "00010203040500020406080a000306090c0f0004080c1014";
}
