//! `https://awslabs.github.io/osml-imagery-io/codecs/jbp-block` (alias
//! `jbp-block`): one uncompressed NITF image block, as osml-imagery-io 0.2.x
//! indexes describe it.
//!
//! Configuration: `num_bands`, `block_height`, `block_width`, `nbpp` (1,
//! 8, 12, 16, 32, 64), `imode` (B band-interleaved by block, P by pixel, R
//! by row, S band-sequential) and `pvtype` (INT, SI, R, C, B). The block
//! holds `num_bands * block_height * block_width` big-endian samples;
//! decoding gives `[num_bands, block_height, block_width]` in the chunk's
//! byte order.
//!
//! NBPP 1 and 12 are bit-packed: each band's plane is a bit stream padded
//! to a whole byte (as osml-imagery-io sizes it), so only IMODE B and S (or
//! a single band) are accepted, as GDAL's NITF driver accepts them. They
//! decode the way GDAL 3.6's NITF driver reads them: 1-bit samples most
//! significant bit first into bytes of 0 or 1; each pair of 12-bit samples
//! in three bytes `b0 b1 b2` as `b0 | (b1 >> 4) << 8` and
//! `(b1 & 15) << 4 | b2 >> 4 | (b2 & 15) << 8` into 16-bit samples (the
//! nibbles of a plain big-endian bit stream, rotated by four bits).

use bytes::Bytes;

use super::{Codec, DecodeContext};
use crate::base::dtype::ByteOrder;
use crate::base::error::{Error, Result};
use crate::codec::config::{config_str, config_uint, Config};

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

/// Bit-packed samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Packed {
    /// One bit each, decoded to bytes of 0 or 1.
    Bit,
    /// Twelve bits each, decoded to 16-bit samples.
    Twelve,
}

/// How wide the stored samples are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Samples {
    /// Whole big-endian samples of this many bytes.
    Bytes(usize),
    /// Samples packed into a bit stream per band plane.
    Packed(Packed),
}

impl Samples {
    /// Bits of one stored sample.
    fn bits(self) -> usize {
        match self {
            Samples::Bytes(size) => size * 8,
            Samples::Packed(Packed::Bit) => 1,
            Samples::Packed(Packed::Twelve) => 12,
        }
    }

    /// Bytes of one decoded sample.
    fn size(self) -> usize {
        self.bits().div_ceil(8)
    }

    /// Stored bytes of one band plane of `pixels` samples.
    fn plane_len(self, pixels: usize) -> usize {
        (pixels * self.bits()).div_ceil(8)
    }
}

#[derive(Debug)]
struct JbpBlock {
    bands: usize,
    height: usize,
    width: usize,
    samples: Samples,
    interleave: Interleave,
}

impl JbpBlock {
    /// Unpacks the `packed` band planes of `input` into `out` (samples in
    /// the chunk's byte order: `little` for 16-bit samples).
    fn unpack(&self, packed: Packed, input: &[u8], out: &mut [u8], little: bool) {
        let pixels = self.height * self.width;
        let plane_len = self.samples.plane_len(pixels);
        for (plane, src) in input.chunks_exact(plane_len).enumerate() {
            let dst = &mut out[plane * pixels * self.samples.size()..];
            match packed {
                Packed::Bit => {
                    for (i, v) in dst[..pixels].iter_mut().enumerate() {
                        *v = (src[i / 8] >> (7 - i % 8)) & 1;
                    }
                }
                Packed::Twelve => {
                    for i in 0..pixels {
                        let (b0, b1) = (u16::from(src[i * 3 / 2]), u16::from(src[i * 3 / 2 + 1]));
                        let v = if i % 2 == 0 {
                            b0 | (b1 >> 4) << 8
                        } else {
                            (b0 & 15) << 4 | b1 >> 4 | (b1 & 15) << 8
                        };
                        let bytes = if little {
                            v.to_le_bytes()
                        } else {
                            v.to_be_bytes()
                        };
                        dst[2 * i..2 * i + 2].copy_from_slice(&bytes);
                    }
                }
            }
        }
    }
}

impl Codec for JbpBlock {
    fn name(&self) -> &str {
        URI
    }

    fn compression(&self) -> String {
        "NONE".into()
    }

    fn stored_bits(&self) -> Option<u32> {
        match self.samples {
            Samples::Bytes(_) => None,
            Samples::Packed(_) => Some(self.samples.bits() as u32),
        }
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let (bands, h, w) = (self.bands, self.height, self.width);
        let size = self.samples.size();
        let stored = bands * self.samples.plane_len(h * w);
        if input.len() != stored {
            return Err(Error::decode(
                URI,
                format!(
                    "a block of {bands} band(s) of {w} x {h} samples of {} bit(s) holds \
                     {stored} bytes, got {}",
                    self.samples.bits(),
                    input.len()
                ),
            ));
        }
        let expected = bands * h * w * size;
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
        let mut out = vec![0u8; expected];
        if let Samples::Packed(packed) = self.samples {
            self.unpack(packed, &input, &mut out, swap);
            return Ok(Bytes::from(out));
        }
        if self.interleave == Interleave::Band && !swap {
            return Ok(input);
        }
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
    let samples = match nbpp {
        1 => Samples::Packed(Packed::Bit),
        12 => Samples::Packed(Packed::Twelve),
        8 | 16 | 32 | 64 => Samples::Bytes(nbpp as usize / 8),
        _ => {
            return Err(Error::unsupported(format!(
                "NITF blocks of {nbpp} bits per pixel (supported: 1, 8, 12, 16, 32, 64)"
            )))
        }
    };
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
    let bands = dim("num_bands")?;
    if bands > 1 && interleave != Interleave::Band && matches!(samples, Samples::Packed(_)) {
        return Err(Error::unsupported(format!(
            "NITF blocks of {nbpp}-bit samples in IMODE P or R with {bands} bands \
             (supported: IMODE B or S, as GDAL's NITF driver)"
        )));
    }
    Ok(Box::new(JbpBlock {
        bands,
        height: dim("block_height")?,
        width: dim("block_width")?,
        samples,
        interleave,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::dtype::DataType;
    use crate::codec::registry;

    fn decode(imode: &str, dtype: &str, input: &[u8]) -> Result<Bytes> {
        let dtype = DataType::from_v2(dtype).unwrap();
        let nbpp = dtype.size * 8;
        let json = format!(
            r#"{{"num_bands": 2, "block_height": 2, "block_width": 3, "nbpp": {nbpp},
                "imode": "{imode}", "pvtype": "INT"}}"#
        );
        let codec = registry::build("jbp-block", &crate::codec::testing::config(&json))?;
        let ctx = DecodeContext {
            chunk_shape: &[2, 2, 3],
            dtype,
            decoded_len: 12 * dtype.size,
            needed: 12 * dtype.size,
            first_needed: 0,
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

    /// Decodes a packed block of `bands` x 2 x 3 samples of `nbpp` bits.
    fn decode_packed(
        nbpp: u64,
        imode: &str,
        bands: usize,
        dtype: &str,
        input: &[u8],
    ) -> Result<Bytes> {
        let dtype = DataType::from_v2(dtype).unwrap();
        let json = format!(
            r#"{{"num_bands": {bands}, "block_height": 2, "block_width": 3, "nbpp": {nbpp},
                "imode": "{imode}", "pvtype": "INT"}}"#
        );
        let codec = registry::build(URI, &crate::codec::testing::config(&json))?;
        assert_eq!(codec.stored_bits(), Some(nbpp as u32));
        let ctx = DecodeContext {
            chunk_shape: &[bands as u64, 2, 3],
            dtype,
            decoded_len: bands * 6 * dtype.size,
            needed: bands * 6 * dtype.size,
            first_needed: 0,
            chunk_index: &[],
        };
        codec.decode(Bytes::copy_from_slice(input), &ctx)
    }

    #[test]
    fn one_bit_planes_unpack_msb_first_each_padded_to_a_byte() {
        // Two planes of six samples, each in one byte (two bits of padding).
        let out = decode_packed(1, "B", 2, "|u1", &[0b1011_0100, 0b0100_1100]).unwrap();
        assert_eq!(&out[..], &[1, 0, 1, 1, 0, 1, 0, 1, 0, 0, 1, 1]);
        // A single band reads the same whatever the IMODE.
        let out = decode_packed(1, "P", 1, "|u1", &[0b1011_0100]).unwrap();
        assert_eq!(&out[..], &[1, 0, 1, 1, 0, 1]);
    }

    #[test]
    fn twelve_bit_pairs_unpack_as_gdal_reads_them() {
        // Each pair (b0, b1, b2) reads as b0 | (b1 >> 4) << 8 and
        // (b1 & 15) << 4 | b2 >> 4 | (b2 & 15) << 8.
        let plane = [0x12, 0x34, 0x56, 0xAB, 0xCD, 0xEF, 0x01, 0x23, 0x45];
        let expected: [u16; 6] = [0x312, 0x645, 0xCAB, 0xFDE, 0x201, 0x534];
        let big: Vec<u8> = expected.iter().flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(
            &decode_packed(12, "R", 1, ">u2", &plane).unwrap()[..],
            &big[..]
        );
        let little: Vec<u8> = expected.iter().flat_map(|v| v.to_le_bytes()).collect();
        let two: Vec<u8> = plane.iter().chain(&plane).copied().collect();
        let out = decode_packed(12, "S", 2, "<u2", &two).unwrap();
        assert_eq!(&out[..12], &little[..]);
        assert_eq!(&out[12..], &little[..]);
        let err = decode_packed(12, "B", 1, "<u2", &plane[..8]).unwrap_err();
        assert!(
            err.to_string().contains("12 bit(s) holds 9 bytes, got 8"),
            "{err}"
        );
    }

    #[test]
    fn wrong_lengths_and_configurations_are_errors() {
        let err = decode("B", "|u1", &[0; 11]).unwrap_err();
        assert!(err.to_string().contains("holds 12 bytes, got 11"), "{err}");
        let build = |json: &str| registry::build(URI, &crate::codec::testing::config(json));
        assert!(
            build(r#"{"num_bands": 1, "block_height": 1, "block_width": 1, "nbpp": 10}"#)
                .unwrap_err()
                .to_string()
                .contains("10 bits")
        );
        assert!(build(
            r#"{"num_bands": 2, "block_height": 1, "block_width": 1, "nbpp": 12, "imode": "P"}"#
        )
        .unwrap_err()
        .to_string()
        .contains("IMODE P or R with 2 bands"));
        assert!(
            build(r#"{"num_bands": 1, "block_height": 1, "block_width": 1, "imode": "X"}"#)
                .is_err()
        );
        assert!(build(r#"{"num_bands": 0, "block_height": 1, "block_width": 1}"#).is_err());
    }
}
