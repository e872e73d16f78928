//! HDF5 numeric datatypes as Zarr v2 `dtype` strings, and their values
//! (fill values) as Zarr v2 JSON.

use hdf5_metno_sys::h5i::hid_t;
use hdf5_metno_sys::h5t::{
    H5T_class_t, H5T_order_t, H5T_sign_t, H5Tget_class, H5Tget_order, H5Tget_precision,
    H5Tget_sign, H5Tget_size, H5Tis_variable_str,
};
use serde_json::{json, Value};

/// What kind of number an element is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Two's complement signed integer.
    Signed,
    /// Unsigned integer.
    Unsigned,
    /// IEEE 754 binary floating point.
    Float,
    /// One text character (a fixed-length string of one byte: netCDF's
    /// `NC_CHAR`), Zarr `|S1`.
    Char,
}

/// A numeric element type as stored in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Element {
    /// Integer or float.
    pub(crate) kind: Kind,
    /// Bytes per element.
    pub(crate) size: usize,
    /// Stored most significant byte first.
    pub(crate) big_endian: bool,
}

/// Whether HDF5 datatype `type_id` is a string type (fixed or variable
/// length).
pub(crate) fn is_string(type_id: hid_t) -> bool {
    // SAFETY: `type_id` is a valid datatype identifier.
    unsafe { H5Tget_class(type_id) == H5T_class_t::H5T_STRING }
}

impl Element {
    /// The numeric element type of HDF5 datatype `type_id`, or a short
    /// description of the class when it is not one chunkref reads as
    /// numbers (string, compound, enum, ...).
    pub(crate) fn of(type_id: hid_t) -> Result<Element, String> {
        // SAFETY: `type_id` is a valid datatype identifier.
        let (class, size, order, precision) = unsafe {
            (
                H5Tget_class(type_id),
                H5Tget_size(type_id),
                H5Tget_order(type_id),
                H5Tget_precision(type_id),
            )
        };
        let kind = match class {
            H5T_class_t::H5T_INTEGER => {
                // SAFETY: as above; the type is an integer type.
                match unsafe { H5Tget_sign(type_id) } {
                    H5T_sign_t::H5T_SGN_2 => Kind::Signed,
                    _ => Kind::Unsigned,
                }
            }
            H5T_class_t::H5T_FLOAT => Kind::Float,
            // SAFETY: as above; the type is a string type.
            H5T_class_t::H5T_STRING if size == 1 && unsafe { H5Tis_variable_str(type_id) } == 0 => {
                return Ok(Element {
                    kind: Kind::Char,
                    size,
                    big_endian: false,
                })
            }
            other => return Err(class_name(other).into()),
        };
        let big_endian = match order {
            H5T_order_t::H5T_ORDER_LE | H5T_order_t::H5T_ORDER_NONE => false,
            H5T_order_t::H5T_ORDER_BE => true,
            _ => return Err("numbers of VAX or mixed byte order".into()),
        };
        let sizes: &[usize] = match kind {
            Kind::Float => &[2, 4, 8],
            _ => &[1, 2, 4, 8],
        };
        if !sizes.contains(&size) || precision != size * 8 {
            return Err(format!(
                "{size}-byte numbers of {precision} significant bits"
            ));
        }
        Ok(Element {
            kind,
            size,
            big_endian,
        })
    }

    /// The Zarr v2 `dtype`, e.g. `<f4`, `>i2`, `|u1`.
    pub(crate) fn zarr_dtype(&self) -> String {
        let order = match (self.size, self.big_endian) {
            (1, _) => '|',
            (_, true) => '>',
            (_, false) => '<',
        };
        let kind = match self.kind {
            Kind::Signed => 'i',
            Kind::Unsigned => 'u',
            Kind::Float => 'f',
            Kind::Char => 'S',
        };
        format!("{order}{kind}{}", self.size)
    }

    /// The element stored in `bytes` (at least `size` of them) as a Zarr
    /// v2 fill value: an integer, a float, or `"NaN"` / `"Infinity"` /
    /// `"-Infinity"`; none (`null`) for text.
    pub(crate) fn fill_value(&self, bytes: &[u8]) -> Value {
        let mut raw = [0u8; 8];
        let mut word = bytes[..self.size].to_vec();
        if self.big_endian {
            word.reverse();
        }
        raw[..self.size].copy_from_slice(&word);
        let bits = u64::from_le_bytes(raw);
        match self.kind {
            Kind::Char => Value::Null,
            Kind::Unsigned => json!(bits),
            Kind::Signed => {
                let shift = 64 - 8 * self.size as u32;
                json!(((bits << shift) as i64) >> shift)
            }
            Kind::Float => float_value(match self.size {
                2 => f64::from(half::f16::from_bits(bits as u16)),
                4 => f64::from(f32::from_bits(bits as u32)),
                _ => f64::from_bits(bits),
            }),
        }
    }
}

/// A float as Zarr v2 JSON writes it.
fn float_value(v: f64) -> Value {
    if v.is_nan() {
        json!("NaN")
    } else if v.is_infinite() {
        json!(if v > 0.0 { "Infinity" } else { "-Infinity" })
    } else {
        json!(v)
    }
}

/// How a warning names a datatype class chunkref leaves out.
fn class_name(class: H5T_class_t) -> &'static str {
    match class {
        H5T_class_t::H5T_STRING => "strings",
        H5T_class_t::H5T_COMPOUND => "compound values",
        H5T_class_t::H5T_VLEN => "variable-length sequences",
        H5T_class_t::H5T_ENUM => "enumerations",
        H5T_class_t::H5T_REFERENCE => "references",
        H5T_class_t::H5T_ARRAY => "array-typed elements",
        H5T_class_t::H5T_OPAQUE => "opaque values",
        H5T_class_t::H5T_BITFIELD => "bit fields",
        _ => "values of an unknown class",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn element(kind: Kind, size: usize, big_endian: bool) -> Element {
        Element {
            kind,
            size,
            big_endian,
        }
    }

    #[test]
    fn dtypes_carry_kind_size_and_byte_order() {
        assert_eq!(element(Kind::Float, 4, false).zarr_dtype(), "<f4");
        assert_eq!(element(Kind::Signed, 4, true).zarr_dtype(), ">i4");
        assert_eq!(element(Kind::Unsigned, 1, true).zarr_dtype(), "|u1");
        assert_eq!(element(Kind::Signed, 1, false).zarr_dtype(), "|i1");
        assert_eq!(element(Kind::Char, 1, false).zarr_dtype(), "|S1");
        assert_eq!(element(Kind::Char, 1, false).fill_value(b"x"), Value::Null);
    }

    #[test]
    fn fill_values_decode_in_the_stored_byte_order() {
        let i2 = element(Kind::Signed, 2, false);
        assert_eq!(i2.fill_value(&(-32767i16).to_le_bytes()), json!(-32767));
        let i4be = element(Kind::Signed, 4, true);
        assert_eq!(i4be.fill_value(&(-999i32).to_be_bytes()), json!(-999));
        let u2 = element(Kind::Unsigned, 2, false);
        assert_eq!(u2.fill_value(&[0xff, 0xff]), json!(65535));
        let u8_ = element(Kind::Unsigned, 8, false);
        assert_eq!(u8_.fill_value(&u64::MAX.to_le_bytes()), json!(u64::MAX));
    }

    #[test]
    fn float_fill_values_spell_nan_and_infinities() {
        let f4 = element(Kind::Float, 4, false);
        assert_eq!(f4.fill_value(&f32::NAN.to_le_bytes()), json!("NaN"));
        assert_eq!(f4.fill_value(&(-1.0f32).to_le_bytes()), json!(-1.0));
        let f8be = element(Kind::Float, 8, true);
        assert_eq!(
            f8be.fill_value(&f64::INFINITY.to_be_bytes()),
            json!("Infinity")
        );
        assert_eq!(f8be.fill_value(&9.5f64.to_be_bytes()), json!(9.5));
        let f2 = element(Kind::Float, 2, false);
        assert_eq!(f2.fill_value(&0x3c00u16.to_le_bytes()), json!(1.0));
        assert_eq!(f2.fill_value(&0xfc00u16.to_le_bytes()), json!("-Infinity"));
        assert_eq!(f2.fill_value(&0xc100u16.to_le_bytes()), json!(-2.5));
    }
}
