//! Array element data types (Zarr v2 `dtype` strings and v3 names) and byte
//! order: below both the codecs and the Zarr metadata that use them.

use serde_json::Value;

use crate::base::error::{Error, Result};

/// The scalar kind of array elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarKind {
    /// Boolean, one byte.
    Bool,
    /// Unsigned integer.
    UInt,
    /// Signed integer.
    Int,
    /// IEEE float.
    Float,
    /// Complex of two IEEE floats (size is the whole complex value).
    Complex,
}

/// Byte order of multi-byte elements as stored in decoded chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Little endian.
    Little,
    /// Big endian.
    Big,
    /// Not applicable (one-byte elements).
    NotApplicable,
}

impl ByteOrder {
    /// True when elements in this order must be swapped to become native.
    pub fn needs_swap(self) -> bool {
        match self {
            ByteOrder::Little => cfg!(target_endian = "big"),
            ByteOrder::Big => cfg!(target_endian = "little"),
            ByteOrder::NotApplicable => false,
        }
    }

    /// Up to 8 bytes of one element loaded as an unsigned integer.
    pub fn load_bits(self, bytes: &[u8]) -> u64 {
        let mut buf = [0u8; 8];
        match self {
            ByteOrder::Big => {
                buf[8 - bytes.len()..].copy_from_slice(bytes);
                u64::from_be_bytes(buf)
            }
            ByteOrder::Little | ByteOrder::NotApplicable => {
                buf[..bytes.len()].copy_from_slice(bytes);
                u64::from_le_bytes(buf)
            }
        }
    }
}

/// An element type: kind, size in bytes and byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DataType {
    /// Scalar kind.
    pub kind: ScalarKind,
    /// Size of one element in bytes.
    pub size: usize,
    /// Byte order of stored (decoded) elements.
    pub order: ByteOrder,
}

/// A number as a Zarr `fill_value`: NaN and the infinities as the texts
/// `"NaN"`, `"Infinity"`, `"-Infinity"` (JSON has no such numbers).
pub fn fill_json(v: f64) -> serde_json::Value {
    match v {
        v if v.is_nan() => "NaN".into(),
        f64::INFINITY => "Infinity".into(),
        f64::NEG_INFINITY => "-Infinity".into(),
        v => v.into(),
    }
}

/// A JSON number, boolean, or Zarr's `NaN` / `Infinity` / `-Infinity` text.
pub fn json_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(*b as u8 as f64),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "Infinity" => Some(f64::INFINITY),
            "-Infinity" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}

impl DataType {
    /// Appends the low `size` bytes of `bits` in this type's byte order
    /// (the inverse of [`ByteOrder::load_bits`]).
    pub fn push_bits(self, out: &mut Vec<u8>, bits: u64) {
        match self.order {
            ByteOrder::Big => out.extend_from_slice(&bits.to_be_bytes()[8 - self.size..]),
            ByteOrder::Little | ByteOrder::NotApplicable => {
                out.extend_from_slice(&bits.to_le_bytes()[..self.size]);
            }
        }
    }

    /// Parses a Zarr v2 / numpy type string such as `<u2`, `|u1`, `>f8`.
    pub fn from_v2(s: &str) -> Result<DataType> {
        let bad = || Error::unsupported(format!("Zarr v2 dtype '{s}'"));
        let mut chars = s.chars();
        let order = match chars.next().ok_or_else(bad)? {
            '<' => ByteOrder::Little,
            '>' => ByteOrder::Big,
            '|' => ByteOrder::NotApplicable,
            _ => return Err(bad()),
        };
        let kind = match chars.next().ok_or_else(bad)? {
            'b' => ScalarKind::Bool,
            'u' => ScalarKind::UInt,
            'i' => ScalarKind::Int,
            'f' => ScalarKind::Float,
            'c' => ScalarKind::Complex,
            _ => return Err(bad()),
        };
        let size: usize = chars.as_str().parse().map_err(|_| bad())?;
        let dt = DataType::new(kind, size, order).ok_or_else(bad)?;
        Ok(dt)
    }

    /// Parses a Zarr v3 data type name (`uint8`, `int16`, `float32`, ...).
    /// The byte order comes from the `bytes` codec, given here.
    pub fn from_v3(name: &str, order: ByteOrder) -> Result<DataType> {
        let (kind, size) = match name {
            "bool" => (ScalarKind::Bool, 1),
            "uint8" => (ScalarKind::UInt, 1),
            "uint16" => (ScalarKind::UInt, 2),
            "uint32" => (ScalarKind::UInt, 4),
            "uint64" => (ScalarKind::UInt, 8),
            "int8" => (ScalarKind::Int, 1),
            "int16" => (ScalarKind::Int, 2),
            "int32" => (ScalarKind::Int, 4),
            "int64" => (ScalarKind::Int, 8),
            "float16" => (ScalarKind::Float, 2),
            "float32" => (ScalarKind::Float, 4),
            "float64" => (ScalarKind::Float, 8),
            "complex64" => (ScalarKind::Complex, 8),
            "complex128" => (ScalarKind::Complex, 16),
            _ => return Err(Error::unsupported(format!("Zarr v3 data type '{name}'"))),
        };
        let order = if size == 1 {
            ByteOrder::NotApplicable
        } else {
            order
        };
        DataType::new(kind, size, order)
            .ok_or_else(|| Error::unsupported(format!("Zarr v3 data type '{name}'")))
    }

    /// Builds a data type if the combination is one chunkref can serve.
    pub fn new(kind: ScalarKind, size: usize, order: ByteOrder) -> Option<DataType> {
        let ok = match kind {
            ScalarKind::Bool => size == 1,
            ScalarKind::UInt | ScalarKind::Int => matches!(size, 1 | 2 | 4 | 8),
            ScalarKind::Float => matches!(size, 2 | 4 | 8),
            ScalarKind::Complex => matches!(size, 8 | 16),
        };
        let order = if size == 1 {
            ByteOrder::NotApplicable
        } else {
            order
        };
        ok.then_some(DataType { kind, size, order })
    }

    /// The type elements of this type are served as where GDAL has a
    /// 16-bit float type (from 3.11, see
    /// [`crate::base::gdal::compat::FLOAT16_BANDS`]): as they are; before,
    /// [`DataType::widened`].
    pub fn served(self) -> DataType {
        if crate::base::gdal::compat::FLOAT16_BANDS {
            self
        } else {
            self.widened()
        }
    }

    /// This type with IEEE half floats widened to native float32 (as
    /// GDAL's drivers serve them before 3.11, and its HDF5 driver in every
    /// version); others as they are.
    pub fn widened(self) -> DataType {
        match (self.kind, self.size) {
            (ScalarKind::Float, 2) => DataType {
                kind: ScalarKind::Float,
                size: 4,
                order: if cfg!(target_endian = "big") {
                    ByteOrder::Big
                } else {
                    ByteOrder::Little
                },
            },
            _ => self,
        }
    }

    /// Size of one swap unit (a complex value swaps each half separately).
    pub fn swap_unit(&self) -> usize {
        match self.kind {
            ScalarKind::Complex => self.size / 2,
            _ => self.size,
        }
    }

    /// The same type in native byte order.
    pub fn native(&self) -> DataType {
        let order = if self.size == 1 {
            ByteOrder::NotApplicable
        } else if cfg!(target_endian = "little") {
            ByteOrder::Little
        } else {
            ByteOrder::Big
        };
        DataType { order, ..*self }
    }

    /// Whether an element of this type can hold `v` exactly (any number
    /// for floating-point types).
    pub fn holds(&self, v: f64) -> bool {
        let bits = 8 * self.size as i32;
        match self.kind {
            ScalarKind::UInt => v.fract() == 0.0 && v >= 0.0 && v < 2f64.powi(bits),
            ScalarKind::Int => {
                v.fract() == 0.0 && v >= -(2f64.powi(bits - 1)) && v < 2f64.powi(bits - 1)
            }
            ScalarKind::Bool => v == 0.0 || v == 1.0,
            _ => true,
        }
    }

    /// Encodes a JSON fill value (number, bool, "NaN", "Infinity", base64 for
    /// v2 strings is not used here) into `size` native-order bytes.
    pub fn fill_bytes(&self, fill: &serde_json::Value) -> Result<Vec<u8>> {
        let bad = || Error::unsupported(format!("fill_value {fill} for data type {self:?}"));
        let as_f64 = |v: &Value| -> Option<f64> {
            match v {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => match s.as_str() {
                    "NaN" => Some(f64::NAN),
                    "Infinity" => Some(f64::INFINITY),
                    "-Infinity" => Some(f64::NEG_INFINITY),
                    _ => None,
                },
                Value::Bool(b) => Some(*b as u8 as f64),
                _ => None,
            }
        };
        if fill.is_null() {
            return Ok(vec![0; self.size]);
        }
        let out = match (self.kind, self.size) {
            (ScalarKind::Bool, _) => vec![as_f64(fill).ok_or_else(bad)? as u8],
            (ScalarKind::UInt, n) => {
                let v = fill.as_u64().or_else(|| {
                    as_f64(fill)
                        .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                        .map(|f| f as u64)
                });
                let v = v.ok_or_else(bad)?;
                match n {
                    1 => vec![v as u8],
                    2 => (v as u16).to_ne_bytes().to_vec(),
                    4 => (v as u32).to_ne_bytes().to_vec(),
                    _ => v.to_ne_bytes().to_vec(),
                }
            }
            (ScalarKind::Int, n) => {
                let v = fill
                    .as_i64()
                    .or_else(|| as_f64(fill).filter(|f| f.fract() == 0.0).map(|f| f as i64))
                    .ok_or_else(bad)?;
                match n {
                    1 => (v as i8).to_ne_bytes().to_vec(),
                    2 => (v as i16).to_ne_bytes().to_vec(),
                    4 => (v as i32).to_ne_bytes().to_vec(),
                    _ => v.to_ne_bytes().to_vec(),
                }
            }
            (ScalarKind::Float, 2) => half::f16::from_f64(as_f64(fill).ok_or_else(bad)?)
                .to_ne_bytes()
                .to_vec(),
            (ScalarKind::Float, 4) => (as_f64(fill).ok_or_else(bad)? as f32)
                .to_ne_bytes()
                .to_vec(),
            (ScalarKind::Float, _) => as_f64(fill).ok_or_else(bad)?.to_ne_bytes().to_vec(),
            (ScalarKind::Complex, n) => {
                let (re, im) = match fill {
                    Value::Array(parts) if parts.len() == 2 => (
                        as_f64(&parts[0]).ok_or_else(bad)?,
                        as_f64(&parts[1]).ok_or_else(bad)?,
                    ),
                    other => (as_f64(other).ok_or_else(bad)?, 0.0),
                };
                if n == 8 {
                    [(re as f32).to_ne_bytes(), (im as f32).to_ne_bytes()].concat()
                } else {
                    [re.to_ne_bytes(), im.to_ne_bytes()].concat()
                }
            }
        };
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_v2_strings() {
        let dt = DataType::from_v2("<u2").unwrap();
        assert_eq!(
            (dt.kind, dt.size, dt.order),
            (ScalarKind::UInt, 2, ByteOrder::Little)
        );
        assert_eq!(
            DataType::from_v2("|u1").unwrap().order,
            ByteOrder::NotApplicable
        );
        assert_eq!(DataType::from_v2(">f8").unwrap().kind, ScalarKind::Float);
        let half = DataType::from_v2("<f2").unwrap();
        assert_eq!(half.served(), DataType::from_v2("<f4").unwrap());
        assert_eq!(DataType::from_v2(">i2").unwrap().served().size, 2);
        assert!(DataType::from_v2("<U8").is_err());
    }

    #[test]
    fn fill_values() {
        let dt = DataType::from_v2("<i2").unwrap();
        assert_eq!(
            dt.fill_bytes(&serde_json::json!(-5)).unwrap(),
            (-5i16).to_ne_bytes()
        );
        let f = DataType::from_v2("<f4").unwrap();
        let nan = f.fill_bytes(&serde_json::json!("NaN")).unwrap();
        assert!(f32::from_ne_bytes(nan.try_into().unwrap()).is_nan());
        let u = DataType::from_v2("<u4").unwrap();
        assert_eq!(u.fill_bytes(&serde_json::Value::Null).unwrap(), vec![0; 4]);
    }
}
