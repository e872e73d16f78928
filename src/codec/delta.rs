//! numcodecs `delta`: element-wise differences, stored as `astype` elements.
//!
//! Decoding follows numpy's `cumsum(enc, out=dec)`: every stored difference
//! is cast to `dtype` and summed in `dtype` arithmetic (wrapping for
//! integers, IEEE for floats), one element after the other.

use bytes::Bytes;

use super::{Codec, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::dtype::{DataType, ScalarKind};
use crate::base::error::{Error, Result};
use crate::codec::config::{config_str, Config};

/// One stored difference, widened losslessly.
#[derive(Debug, Clone, Copy)]
enum Value {
    Int(i128),
    Float(f64),
}

impl Value {
    /// Reads one element of type `dt` from its `dt.size` bytes.
    fn read(bytes: &[u8], dt: DataType) -> Value {
        let bits = dt.order.load_bits(bytes);
        let unused = 64 - 8 * bytes.len() as u32;
        match (dt.kind, dt.size) {
            (ScalarKind::Int, _) => Value::Int(i128::from(((bits << unused) as i64) >> unused)),
            (ScalarKind::Float, 4) => Value::Float(f64::from(f32::from_bits(bits as u32))),
            (ScalarKind::Float, _) => Value::Float(f64::from_bits(bits)),
            _ => Value::Int(i128::from(bits)),
        }
    }

    /// numpy's cast to an integer type, as two's complement bits (the low
    /// bytes are the value modulo the type's range). NaN becomes 0 and
    /// out-of-range floats saturate, where numpy leaves them undefined.
    fn to_int_bits(self) -> u64 {
        match self {
            Value::Int(i) => i as u64,
            Value::Float(f) => f as i64 as u64,
        }
    }

    /// numpy's cast to `float64`.
    fn to_f64(self) -> f64 {
        match self {
            Value::Int(i) => i as f64,
            Value::Float(f) => f,
        }
    }

    /// numpy's cast to `float32` (a single rounding from the exact value).
    fn to_f32(self) -> f32 {
        match self {
            Value::Int(i) => i as f32,
            Value::Float(f) => f as f32,
        }
    }
}

/// Running sums in the decoded type.
fn cumulative_sum(values: impl Iterator<Item = Value>, dtype: DataType, out: &mut Vec<u8>) {
    match (dtype.kind, dtype.size) {
        (ScalarKind::Float, 4) => {
            let mut sum: Option<f32> = None;
            for value in values {
                let next = sum.map_or(value.to_f32(), |s| s + value.to_f32());
                sum = Some(next);
                dtype.push_bits(out, u64::from(next.to_bits()));
            }
        }
        (ScalarKind::Float, _) => {
            let mut sum: Option<f64> = None;
            for value in values {
                let next = sum.map_or(value.to_f64(), |s| s + value.to_f64());
                sum = Some(next);
                dtype.push_bits(out, next.to_bits());
            }
        }
        _ => {
            let mut sum = 0u64;
            for value in values {
                sum = sum.wrapping_add(value.to_int_bits());
                dtype.push_bits(out, sum);
            }
        }
    }
}

/// Undoes a delta filter.
#[derive(Debug)]
struct Delta {
    /// Type of the decoded elements.
    dtype: DataType,
    /// Type of the stored differences.
    astype: DataType,
}

impl Codec for Delta {
    fn name(&self) -> &str {
        "delta"
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let fail = |reason: String| Error::decode(self.name(), reason);
        let in_size = self.astype.size;
        if !input.len().is_multiple_of(in_size) {
            return Err(fail(format!(
                "{} bytes is not a whole number of {in_size}-byte differences",
                input.len()
            )));
        }
        let count = input.len() / in_size;
        let out_len = count
            .checked_mul(self.dtype.size)
            .filter(|len| *len <= ctx.decoded_len)
            .ok_or_else(|| {
                fail(format!(
                    "{count} differences decode to more than the {} bytes of the chunk",
                    ctx.decoded_len
                ))
            })?;
        let mut out = output_buffer(self.name(), out_len)?;
        let values = input
            .chunks_exact(in_size)
            .map(|bytes| Value::read(bytes, self.astype));
        cumulative_sum(values, self.dtype, &mut out);
        Ok(Bytes::from(out))
    }
}

/// Parses the `dtype` or `astype` field: integers and floats only (numpy
/// cannot take differences of booleans; complex deltas are not used).
fn numeric_type(config: &Config, key: &str) -> Result<Option<DataType>> {
    let Some(text) = config_str("delta", config, key)? else {
        return Ok(None);
    };
    let dt = DataType::from_v2(text)?;
    match dt.kind {
        ScalarKind::Int | ScalarKind::UInt | ScalarKind::Float => Ok(Some(dt)),
        ScalarKind::Bool | ScalarKind::Complex => Err(Error::unsupported(format!(
            "delta codec over '{text}' elements ({key})"
        ))),
    }
}

/// Builds the `delta` codec from `dtype` (required) and `astype` (defaults
/// to `dtype`), both numpy type strings such as `<i4`.
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let dtype = numeric_type(config, "dtype")?
        .ok_or_else(|| Error::codec_config("delta", "'dtype' is required"))?;
    let astype = numeric_type(config, "astype")?.unwrap_or(dtype);
    Ok(Box::new(Delta { dtype, astype }))
}

#[cfg(test)]
mod tests {
    use crate::codec::testing::{assert_survives_mutations, decode_with, hex};

    fn decode(json: &str, golden: &str, decoded_len: usize) -> Vec<u8> {
        decode_with("delta", json, &hex(golden), decoded_len)
            .unwrap()
            .to_vec()
    }

    #[test]
    fn decodes_numcodecs_integer_output() {
        // Delta(dtype="<i8", astype="<i2").encode([100, 101, 103, 99, 50, 50, 1000, -5])
        let out = decode(
            r#"{"dtype": "<i8", "astype": "<i2"}"#,
            "640001000200fcffcfff0000b60313fc",
            64,
        );
        let expected: Vec<u8> = [100i64, 101, 103, 99, 50, 50, 1000, -5]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(out, expected);
        // Delta(dtype="|u1").encode([250, 3, 7, 255, 0, 128]): wraps around.
        let out = decode(r#"{"dtype": "|u1", "astype": "|u1"}"#, "fa0904f80180", 6);
        assert_eq!(out, [250, 3, 7, 255, 0, 128]);
        // Delta(dtype=">u2", astype="<i4").encode([1, 2, 65535, 3])
        let out = decode(
            r#"{"id": "delta", "dtype": ">u2", "astype": "<i4"}"#,
            "0100000001000000fdff000004000000",
            8,
        );
        assert_eq!(out, hex("00010002ffff0003"));
    }

    #[test]
    fn decodes_numcodecs_float_output_bit_exactly() {
        // Delta(dtype=">f4") of [1.5, 2.25, -3.0, 1e10, 0.1]: numpy's float32
        // running sum loses the last value, and so must we.
        let out = decode(
            r#"{"dtype": ">f4"}"#,
            "3fc000003f400000c0a80000501502f9d01502f9",
            20,
        );
        assert_eq!(out, hex("3fc0000040100000c0400000501502f900000000"));
        // Delta(dtype="<f8") of [0.1, 0.2, 0.7, -1e300, 5.0]
        let out = decode(
            r#"{"dtype": "<f8", "astype": "<f8"}"#,
            "9a9999999999b93f9a9999999999b93fffffffffffffdf3f9c7500883ce437fe9c7500883ce4377e",
            40,
        );
        let expected =
            "9a9999999999b93f9a9999999999c93f666666666666e63f9c7500883ce437fe0000000000000000";
        assert_eq!(out, hex(expected));
    }

    #[test]
    fn casts_between_kinds() {
        // Stored as <f8 differences [1.5, 2.5, -1.0], decoded as <i2 (truncating casts).
        let stored: Vec<u8> = [1.5f64, 2.5, -1.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let out = decode_with("delta", r#"{"dtype": "<i2", "astype": "<f8"}"#, &stored, 6).unwrap();
        let expected: Vec<u8> = [1i16, 3, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(&out[..], &expected[..]);
        // Stored as |i1, decoded as >f4.
        let out = decode_with(
            "delta",
            r#"{"dtype": ">f4", "astype": "|i1"}"#,
            &[3, 0xff],
            8,
        )
        .unwrap();
        let expected: Vec<u8> = [3.0f32, 2.0].iter().flat_map(|v| v.to_be_bytes()).collect();
        assert_eq!(&out[..], &expected[..]);
    }

    #[test]
    fn rejects_bad_config_and_input() {
        for json in [
            "{}",
            r#"{"dtype": "<i3"}"#,
            r#"{"dtype": "|b1"}"#,
            r#"{"dtype": "<c8"}"#,
            r#"{"dtype": 4}"#,
            r#"{"dtype": "<i4", "astype": "<f2"}"#,
        ] {
            assert!(decode_with("delta", json, &[0; 8], 8).is_err(), "{json}");
        }
        let err = decode_with("delta", r#"{"dtype": "<i4"}"#, &[0; 7], 8).unwrap_err();
        assert!(
            err.to_string()
                .contains("7 bytes is not a whole number of 4-byte"),
            "{err}"
        );
        let err =
            decode_with("delta", r#"{"dtype": "<i8", "astype": "|i1"}"#, &[0; 8], 32).unwrap_err();
        assert!(err.to_string().contains("more than the 32 bytes"), "{err}");
        assert_survives_mutations(
            "delta",
            r#"{"dtype": "<i8", "astype": "<i2"}"#,
            &[7; 32],
            128,
        );
    }
}
