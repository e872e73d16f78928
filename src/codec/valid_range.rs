//! `valid_range` (chunkref's own filter, written by `chunkref index` on
//! netCDF-4 variables with a `valid_range`, or both `valid_min` and
//! `valid_max`): elements below `min` or above `max` become `nodata`, as
//! GDAL's netCDF driver shows them.
//!
//! Configuration: `nodata` (a number, or `"NaN"`), and `min` and / or `max` (numbers;
//! a missing bound is not checked: GDAL skips a bound equal to the nodata
//! value); `nan: true` makes NaN elements nodata too, as GDAL's netCDF
//! driver shows NaN in a float variable whose nodata is a number. `unsigned: true` reads integer elements as unsigned integers of
//! the same size (a variable with `_Unsigned = "true"`), bounds and nodata
//! in that domain. Elements keep the array's type and byte order; the
//! filter runs after every other codec (first in the Zarr v2 `filters`).

use bytes::Bytes;

use super::{Codec, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::dtype::{DataType, ScalarKind};
use crate::base::error::{Error, Result};
use crate::codec::config::Config;

/// The codec's name.
pub(crate) const NAME: &str = "valid_range";

/// Every name the codec answers to.
pub(crate) const NAMES: &[&str] = &[NAME];

/// Replaces elements outside a valid range by nodata.
#[derive(Debug)]
struct ValidRange {
    min: Option<f64>,
    max: Option<f64>,
    nodata: f64,
    unsigned: bool,
    /// NaN elements become nodata.
    nan: bool,
}

impl ValidRange {
    /// The element type the bounds apply to: `dtype`, or its unsigned twin.
    fn element(&self, dtype: DataType) -> DataType {
        match dtype.kind {
            ScalarKind::Int if self.unsigned => DataType {
                kind: ScalarKind::UInt,
                ..dtype
            },
            _ => dtype,
        }
    }

    /// Whether `v` is outside the range (or NaN, with `nan`).
    fn outside(&self, v: f64) -> bool {
        self.min.is_some_and(|m| v < m)
            || self.max.is_some_and(|m| v > m)
            || (self.nan && v.is_nan())
    }
}

impl Codec for ValidRange {
    fn name(&self) -> &str {
        NAME
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let dtype = self.element(ctx.dtype);
        let size = dtype.size;
        let numeric = matches!(
            dtype.kind,
            ScalarKind::Int | ScalarKind::UInt | ScalarKind::Float
        );
        if !numeric || !matches!(size, 1 | 2 | 4 | 8) || !input.len().is_multiple_of(size) {
            return Err(Error::decode(
                NAME,
                format!(
                    "a valid range applies to integers or floats, not {} bytes of {:?} elements of {size} bytes",
                    input.len(),
                    dtype.kind
                ),
            ));
        }
        let nodata = bits_of(self.nodata, dtype);
        let mut out = output_buffer(NAME, input.len())?;
        for element in input.chunks_exact(size) {
            let bits = dtype.order.load_bits(element);
            if self.outside(value_of(bits, dtype)) {
                dtype.push_bits(&mut out, nodata);
            } else {
                out.extend_from_slice(element);
            }
        }
        Ok(Bytes::from(out))
    }
}

/// The value of an element's `bits` of type `dt`.
fn value_of(bits: u64, dt: DataType) -> f64 {
    let unused = 64 - 8 * dt.size as u32;
    match (dt.kind, dt.size) {
        (ScalarKind::Int, _) => (((bits << unused) as i64) >> unused) as f64,
        (ScalarKind::Float, 4) => f64::from(f32::from_bits(bits as u32)),
        (ScalarKind::Float, _) => f64::from_bits(bits),
        _ => bits as f64,
    }
}

/// The bits of `v` as an element of type `dt` (integers saturate).
fn bits_of(v: f64, dt: DataType) -> u64 {
    match (dt.kind, dt.size) {
        (ScalarKind::Float, 4) => u64::from((v as f32).to_bits()),
        (ScalarKind::Float, _) => v.to_bits(),
        (ScalarKind::Int, 1) => v as i8 as u8 as u64,
        (ScalarKind::Int, 2) => v as i16 as u16 as u64,
        (ScalarKind::Int, 4) => v as i32 as u32 as u64,
        (ScalarKind::Int, _) => v as i64 as u64,
        (_, 1) => u64::from(v as u8),
        (_, 2) => u64::from(v as u16),
        (_, 4) => u64::from(v as u32),
        _ => v as u64,
    }
}

/// Builds the `valid_range` filter.
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let number = |key: &str| -> Result<Option<f64>> {
        match config.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(v) => crate::base::dtype::json_number(v).map(Some).ok_or_else(|| {
                Error::codec_config(NAME, format!("'{key}' should be a number, found {v}"))
            }),
        }
    };
    let nodata = number("nodata")?.ok_or_else(|| {
        Error::codec_config(
            NAME,
            "'nodata' (the value of elements out of range) is missing",
        )
    })?;
    Ok(Box::new(ValidRange {
        min: number("min")?,
        max: number("max")?,
        nodata,
        unsigned: config
            .get("unsigned")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
        nan: config
            .get("nan")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testing::config;

    fn decode(json: &str, dtype: &str, input: &[u8]) -> Result<Vec<u8>> {
        let ctx = DecodeContext {
            chunk_shape: &[],
            chunk_index: &[],
            dtype: DataType::from_v2(dtype).unwrap(),
            decoded_len: input.len(),
            needed: input.len(),
            first_needed: 0,
        };
        from_config(&config(json))?
            .decode(Bytes::copy_from_slice(input), &ctx)
            .map(|b| b.to_vec())
    }

    fn i16s(v: &[i16]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn out_of_range_elements_become_nodata() {
        let json = r#"{"min": -18000, "max": 18000, "nodata": -32767}"#;
        let got = decode(json, "<i2", &i16s(&[-32768, -18000, 0, 18000, 18001])).unwrap();
        assert_eq!(got, i16s(&[-32767, -18000, 0, 18000, -32767]));
        // One bound only; big-endian floats.
        let f: Vec<u8> = [1.5f32, -3.0, 7.0]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        let got = decode(r#"{"max": 2, "nodata": -999}"#, ">f4", &f).unwrap();
        let want: Vec<u8> = [1.5f32, -3.0, -999.0]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn nan_becomes_nodata_when_asked() {
        let f: Vec<u8> = [1.5f32, f32::NAN, 7.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let got = decode(r#"{"nodata": -999, "nan": true}"#, "<f4", &f).unwrap();
        let want: Vec<u8> = [1.5f32, -999.0, 7.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(got, want);
        let kept = decode(r#"{"nodata": -999}"#, "<f4", &f).unwrap();
        assert!(f32::from_le_bytes(kept[4..8].try_into().unwrap()).is_nan());
    }

    #[test]
    fn unsigned_reads_integers_as_unsigned() {
        let json = r#"{"min": 0, "max": 10000, "nodata": 65535, "unsigned": true}"#;
        let got = decode(json, "<i2", &i16s(&[-20000, 0, 9000, 12000])).unwrap();
        assert_eq!(got, i16s(&[-1, 0, 9000, -1]));
    }

    #[test]
    fn bad_configurations_and_types_are_errors() {
        assert!(from_config(&config(r#"{"min": 0}"#)).is_err());
        assert!(from_config(&config(r#"{"min": "a", "nodata": 0}"#)).is_err());
        assert!(decode(r#"{"min": 0, "nodata": 0}"#, "<i2", &[1, 2, 3]).is_err());
    }
}
