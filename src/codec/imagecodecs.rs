//! The imagecodecs numcodecs codecs tifffile writes in the Zarr metadata
//! of TIFF images (what kerchunk's `tiff_to_zarr` references):
//! `imagecodecs_lzw` (TIFF LZW), `imagecodecs_delta` (TIFF predictor 2,
//! integer differences along an axis) and `imagecodecs_floatpred` (TIFF
//! predictor 3, byte planes differenced along an axis). They share the TIFF
//! tile codec's LZW decoder and predictor rows.
//!
//! `delta` and `floatpred` are configured with the chunk's `shape`, numpy
//! `dtype`, `axis` and `dist` (1, the only distance imagecodecs decodes):
//! the elements from `axis` to the last axis form one row, differenced at
//! a distance of one step along `axis` (the samples of one pixel for a
//! pixel-interleaved tile of shape (y, x, sample) and `axis` -2).

use bytes::Bytes;
use serde_json::Value;

use super::tiff_tile::{lzw, predictor};
use super::{Codec, DecodeContext};
use crate::base::dtype::{ByteOrder, DataType, ScalarKind};
use crate::base::error::{Error, Result};
use crate::codec::config::{config_str, Config};

/// Names of the LZW codec.
pub(super) const LZW_NAMES: &[&str] = &["imagecodecs_lzw", "imagecodecs.lzw"];
/// Names of the delta (integer predictor) codec.
pub(super) const DELTA_NAMES: &[&str] = &["imagecodecs_delta", "imagecodecs.delta"];
/// Names of the floating point predictor codec.
pub(super) const FLOATPRED_NAMES: &[&str] = &["imagecodecs_floatpred", "imagecodecs.floatpred"];

/// TIFF LZW.
#[derive(Debug)]
struct Lzw;

impl Codec for Lzw {
    fn name(&self) -> &str {
        LZW_NAMES[0]
    }

    fn compression(&self) -> String {
        "LZW".into()
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        lzw::decode_within(&input, ctx.decoded_len)
            .map(Bytes::from)
            .map_err(|reason| Error::decode(self.name(), reason))
    }
}

/// Builds `imagecodecs_lzw` (no configuration).
pub(super) fn lzw_from_config(_config: &Config) -> Result<Box<dyn Codec>> {
    Ok(Box::new(Lzw))
}

/// Which TIFF predictor a codec undoes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Integer differences (`imagecodecs_delta`).
    Delta,
    /// Byte-plane differences of floats (`imagecodecs_floatpred`).
    FloatingPoint,
}

/// A predictor along one axis of a chunk.
#[derive(Debug)]
struct Predictor {
    kind: Kind,
    /// Chunk shape from the configuration (else the chunk's own).
    shape: Option<Vec<u64>>,
    /// Element type from the configuration (else the array's).
    dtype: Option<DataType>,
    /// Axis the differences run along (negative from the end).
    axis: i64,
}

impl Predictor {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Delta => DELTA_NAMES[0],
            Kind::FloatingPoint => FLOATPRED_NAMES[0],
        }
    }

    /// (row length in elements, distance in elements) for a chunk of `shape`.
    fn rows(&self, shape: &[u64]) -> Result<(usize, usize)> {
        let n = shape.len() as i64;
        let axis = if self.axis < 0 {
            self.axis + n
        } else {
            self.axis
        };
        if !(0..n).contains(&axis) {
            return Err(Error::decode(
                self.name(),
                format!(
                    "axis {} is outside the {n} axes of shape {shape:?}",
                    self.axis
                ),
            ));
        }
        let axis = axis as usize;
        let product = |axes: &[u64]| {
            axes.iter()
                .try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?))
        };
        let too_big = || Error::decode(self.name(), format!("shape {shape:?} is too large"));
        let stride = product(&shape[axis + 1..]).ok_or_else(too_big)?;
        let row = product(&shape[axis..]).ok_or_else(too_big)?;
        Ok((row, stride))
    }
}

impl Codec for Predictor {
    fn name(&self) -> &str {
        Predictor::name(self)
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let dtype = self.dtype.unwrap_or(ctx.dtype);
        let size = dtype.size;
        let fail = |reason: String| Error::decode(self.name(), reason);
        if !input.len().is_multiple_of(size) {
            return Err(fail(format!(
                "{} bytes is not a whole number of {size}-byte elements",
                input.len()
            )));
        }
        // Without a shape imagecodecs differences the flat buffer.
        let flat = [(input.len() / size) as u64];
        let shape = self.shape.as_deref().unwrap_or(&flat);
        let (row, stride) = self.rows(shape)?;
        let row_bytes = row * size;
        if row_bytes == 0 || input.len() != row_bytes * (input.len() / row_bytes) {
            return Err(fail(format!(
                "{} bytes do not make whole rows of {row} {size}-byte elements (shape {shape:?})",
                input.len()
            )));
        }
        let big_endian = dtype.order == ByteOrder::Big;
        let mut data = input.to_vec();
        match self.kind {
            Kind::Delta => {
                for r in data.chunks_exact_mut(row_bytes) {
                    predictor::horizontal_row(r, stride, size, big_endian);
                }
            }
            Kind::FloatingPoint => {
                let mut planes = vec![0; row_bytes];
                for r in data.chunks_exact_mut(row_bytes) {
                    predictor::floating_point_row(r, &mut planes, stride, size, big_endian);
                }
            }
        }
        Ok(Bytes::from(data))
    }
}

/// Builds `imagecodecs_delta`.
pub(super) fn delta_from_config(config: &Config) -> Result<Box<dyn Codec>> {
    predictor_from_config(Kind::Delta, config)
}

/// Builds `imagecodecs_floatpred`.
pub(super) fn floatpred_from_config(config: &Config) -> Result<Box<dyn Codec>> {
    predictor_from_config(Kind::FloatingPoint, config)
}

fn predictor_from_config(kind: Kind, config: &Config) -> Result<Box<dyn Codec>> {
    let name = match kind {
        Kind::Delta => DELTA_NAMES[0],
        Kind::FloatingPoint => FLOATPRED_NAMES[0],
    };
    let int = |key: &str, default: i64| -> Result<i64> {
        match config.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => v.as_i64().ok_or_else(|| {
                Error::codec_config(name, format!("'{key}' should be an integer, found {v}"))
            }),
        }
    };
    let dist = int("dist", 1)?;
    if dist != 1 {
        return Err(Error::unsupported(format!(
            "{name} with dist {dist} (imagecodecs decodes only 1)"
        )));
    }
    let axis = int("axis", -1)?;
    let shape = match config.get("shape") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_array()
                .and_then(|items| items.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
                .ok_or_else(|| {
                    Error::codec_config(name, format!("'shape' should list integers, found {v}"))
                })?,
        ),
    };
    let dtype = config_str(name, config, "dtype")?
        .map(DataType::from_v2)
        .transpose()?;
    let expected = match kind {
        Kind::Delta => [ScalarKind::Int, ScalarKind::UInt, ScalarKind::Bool].as_slice(),
        Kind::FloatingPoint => [ScalarKind::Float].as_slice(),
    };
    if let Some(dt) = dtype.filter(|dt| !expected.contains(&dt.kind)) {
        return Err(Error::unsupported(format!(
            "{name} over {:?} elements",
            dt.kind
        )));
    }
    Ok(Box::new(Predictor {
        kind,
        shape,
        dtype,
        axis,
    }))
}

#[cfg(test)]
mod tests {
    use crate::codec::testing::{assert_survives_mutations, decode_with, hex};

    // Golden values from imagecodecs 2026.3.6 (`lzw_encode`,
    // `delta_encode(a, axis=-2)`, `floatpred_encode(a, axis=-2)`).

    #[test]
    fn lzw_decodes_imagecodecs_output() {
        let stream = hex(
            "800000202018100a0603820120a058301a0e078402212098502a160b860321a0d8703a1e0f8804222118\
             904a2613c0a09068442a190e8844a29168c46a391e9048a4926944aa0b0784c2e1b0f88c4e2b178cc6e3\
             b1f90c8e4b2713c040",
        );
        let want: Vec<u8> = (0..3).flat_map(|_| 0u8..40).collect();
        let got = decode_with("imagecodecs_lzw", "{}", &stream, 120).unwrap();
        assert_eq!(&got[..], &want[..]);
        assert!(decode_with("imagecodecs_lzw", "{}", &stream, 100).is_err());
        assert_survives_mutations("imagecodecs_lzw", "{}", &stream, 120);
    }

    #[test]
    fn delta_runs_along_the_pixels_of_interleaved_samples() {
        let config = r#"{"id": "imagecodecs_delta", "shape": [2, 3, 2], "dtype": ">u2",
            "axis": -2, "dist": 1}"#;
        let got = decode_with(
            "imagecodecs_delta",
            config,
            &hex("00010002000200030007012700070007fff9fff800040002"),
            24,
        )
        .unwrap();
        assert_eq!(
            &got[..],
            &hex("0001000200030005000a012c000700070000ffff00040001")[..]
        );
        assert!(decode_with("imagecodecs_delta", config, &[0; 10], 24).is_err());
        assert_survives_mutations("imagecodecs_delta", config, &[7; 24], 24);
    }

    #[test]
    fn floatpred_undoes_byte_planes() {
        let config = r#"{"shape": [2, 4], "dtype": "<f4", "axis": -1, "dist": 1}"#;
        let got = decode_with(
            "imagecodecs_floatpred",
            config,
            &hex("3f8190b0c050cf210000847c0000768a3a06007fc45d002012ee00006f910000"),
            32,
        )
        .unwrap();
        assert_eq!(
            &got[..],
            &hex("0000c03f000010c07684df50000000006f12833a0000e0400000e040000000bf")[..]
        );
        let config = r#"{"shape": [2, 2, 2], "dtype": ">f8", "axis": -2}"#;
        let got = decode_with(
            "imagecodecs_floatpred",
            config,
            &hex(
                "3fc00340b60223fee500f00010008e007200b0005000000000000000000000003f40017f105dccc4\
                 46209e004d00b300d2002e00f1000f00a9005700fc000400",
            ),
            64,
        )
        .unwrap();
        assert_eq!(
            &got[..],
            &hex(
                "3ff8000000000000c002000000000000421bf08eb000000000000000000000003f50624dd2f1a9fc\
                 401c000000000000401c000000000000bfe0000000000000"
            )[..]
        );
    }

    #[test]
    fn refuses_what_imagecodecs_refuses() {
        for json in [
            r#"{"dtype": "<f4", "dist": 2}"#,
            r#"{"dtype": "<f4", "shape": "x"}"#,
        ] {
            assert!(decode_with("imagecodecs_floatpred", json, &[0; 8], 8).is_err());
        }
        assert!(decode_with("imagecodecs_delta", r#"{"dtype": "<f4"}"#, &[0; 8], 8).is_err());
        let far = r#"{"dtype": "<u2", "shape": [2, 2], "axis": 2}"#;
        assert!(decode_with("imagecodecs_delta", far, &[0; 8], 8).is_err());
    }
}
