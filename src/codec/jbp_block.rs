//! `https://awslabs.github.io/osml-imagery-io/codecs/jbp-block` (alias
//! `jbp-block`): one uncompressed NITF image block, as osml-imagery-io 0.2.x
//! indexes describe it.
//!
//! Configuration: `num_bands`, `block_height`, `block_width`, `nbpp` (8,
//! 16, 32, 64), `imode` (B band-interleaved by block, P by pixel, R by row,
//! S band-sequential) and `pvtype` (INT, SI, R, C). The block holds
//! `num_bands * block_height * block_width` big-endian samples; decoding
//! gives `[num_bands, block_height, block_width]` in the chunk's byte order.

use bytes::Bytes;

use super::registry::{config_str, config_uint, Config};
use super::{Codec, DecodeContext};
use crate::error::{Error, Result};
use crate::zarr::dtype::ByteOrder;

/// The canonical name of the codec, as osml-imagery-io writes it.
pub(super) const URI: &str = "https://awslabs.github.io/osml-imagery-io/codecs/jbp-block";

/// Every name the codec answers to, canonical first.
pub(super) const NAMES: &[&str] = &[URI, "jbp-block"];

/// How the samples of a block are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interleave {
    /// Band planes one after the other (IMODE B and S).
    Band,
    /// All bands of a pixel together (IMODE P).
    Pixel,
    /// All bands of a row together (IMODE R).
    Row,
}

#[derive(Debug)]
struct JbpBlock {
    bands: usize,
    height: usize,
    width: usize,
    size: usize,
    interleave: Interleave,
}

impl Codec for JbpBlock {
    fn name(&self) -> &str {
        URI
    }

    fn compression(&self) -> String {
        "NONE".into()
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let (bands, h, w, size) = (self.bands, self.height, self.width, self.size);
        let expected = bands * h * w * size;
        if input.len() != expected {
            return Err(Error::decode(
                URI,
                format!(
                    "a block of {bands} band(s) of {w} x {h} samples of {size} byte(s) holds \
                     {expected} bytes, got {}",
                    input.len()
                ),
            ));
        }
        if ctx.decoded_len != expected || ctx.dtype.size != size {
            return Err(Error::decode(
                URI,
                format!(
                    "the block ({expected} bytes of {size}-byte samples) does not match the \
                     chunk ({} bytes of {}-byte samples)",
                    ctx.decoded_len, ctx.dtype.size
                ),
            ));
        }
        let swap = size > 1 && ctx.dtype.order == ByteOrder::Little;
        if self.interleave == Interleave::Band && !swap {
            return Ok(input);
        }
        let mut out = vec![0u8; expected];
        for (i, sample) in input.chunks_exact(size).enumerate() {
            let (band, row, col) = match self.interleave {
                Interleave::Band => (i / (h * w), i / w % h, i % w),
                Interleave::Pixel => (i % bands, i / bands / w, i / bands % w),
                Interleave::Row => (i / w % bands, i / (w * bands), i % w),
            };
            let at = ((band * h + row) * w + col) * size;
            let dst = &mut out[at..at + size];
            dst.copy_from_slice(sample);
            if swap {
                dst.reverse();
            }
        }
        Ok(Bytes::from(out))
    }
}

/// Builds the codec from its osml-imagery-io configuration.
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let dim = |key: &str| -> Result<usize> {
        config_uint(URI, config, key)?
            .filter(|v| (1..=1 << 20).contains(v))
            .map(|v| v as usize)
            .ok_or_else(|| Error::codec_config(URI, format!("'{key}' should be in 1..=1048576")))
    };
    let nbpp = config_uint(URI, config, "nbpp")?.unwrap_or(8);
    if ![8, 16, 32, 64].contains(&nbpp) {
        return Err(Error::unsupported(format!(
            "NITF blocks of {nbpp} bits per pixel (supported: 8, 16, 32, 64)"
        )));
    }
    let interleave = match config_str(URI, config, "imode")?.unwrap_or("B") {
        "B" | "S" => Interleave::Band,
        "P" => Interleave::Pixel,
        "R" => Interleave::Row,
        other => {
            return Err(Error::codec_config(
                URI,
                format!("'imode' should be B, P, R or S, found '{other}'"),
            ))
        }
    };
    Ok(Box::new(JbpBlock {
        bands: dim("num_bands")?,
        height: dim("block_height")?,
        width: dim("block_width")?,
        size: nbpp as usize / 8,
        interleave,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::registry;
    use crate::zarr::dtype::DataType;

    fn decode(imode: &str, dtype: &str, input: &[u8]) -> Result<Bytes> {
        let dtype = DataType::from_v2(dtype).unwrap();
        let nbpp = dtype.size * 8;
        let json = format!(
            r#"{{"num_bands": 2, "block_height": 2, "block_width": 3, "nbpp": {nbpp},
                "imode": "{imode}", "pvtype": "INT"}}"#
        );
        let codec = registry::build("jbp-block", &registry::tests::config(&json))?;
        let ctx = DecodeContext {
            chunk_shape: &[2, 2, 3],
            dtype,
            decoded_len: 12 * dtype.size,
            chunk_index: &[],
        };
        codec.decode(Bytes::copy_from_slice(input), &ctx)
    }

    #[test]
    fn every_imode_gives_band_planes() {
        // Sample value = band * 10 + row * 3 + col.
        let planes: Vec<u8> = (0..2)
            .flat_map(|b| (0..6).map(move |p| b * 10 + p))
            .collect();
        let pixel: Vec<u8> = (0..6).flat_map(|p| [p, 10 + p]).collect();
        let row: Vec<u8> = (0..2)
            .flat_map(|r| (0..2).flat_map(move |b| (0..3).map(move |c| b * 10 + r * 3 + c)))
            .collect();
        for (imode, input) in [("B", &planes), ("S", &planes), ("P", &pixel), ("R", &row)] {
            assert_eq!(
                &decode(imode, "|u1", input).unwrap()[..],
                &planes[..],
                "{imode}"
            );
        }
    }

    #[test]
    fn big_endian_samples_follow_the_chunk_order() {
        let input: Vec<u8> = (0..12u16).flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(&decode("B", ">u2", &input).unwrap()[..], &input[..]);
        let little: Vec<u8> = (0..12u16).flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(&decode("B", "<u2", &input).unwrap()[..], &little[..]);
    }

    #[test]
    fn wrong_lengths_and_configurations_are_errors() {
        let err = decode("B", "|u1", &[0; 11]).unwrap_err();
        assert!(err.to_string().contains("holds 12 bytes, got 11"), "{err}");
        let build = |json: &str| registry::build(URI, &registry::tests::config(json));
        assert!(
            build(r#"{"num_bands": 1, "block_height": 1, "block_width": 1, "nbpp": 12}"#)
                .unwrap_err()
                .to_string()
                .contains("12 bits")
        );
        assert!(
            build(r#"{"num_bands": 1, "block_height": 1, "block_width": 1, "imode": "X"}"#)
                .is_err()
        );
        assert!(build(r#"{"num_bands": 0, "block_height": 1, "block_width": 1}"#).is_err());
    }
}
