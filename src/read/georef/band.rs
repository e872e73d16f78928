//! Per-band metadata from array attributes: nodata (`_FillValue`,
//! `missing_value`, `fill_value`), CF packing (`scale_factor`,
//! `add_offset`, `_Unsigned`), `units`, `long_name` / `standard_name`, and
//! colour interpretation (`chunkref:color_interpretation`, written by
//! `chunkref index`, else the colour model of a format codec such as the
//! TIFF Photometric of osml-imagery-io's `tiff-tile`).

use base64::Engine;
use serde_json::{Map, Value};

use crate::base::dtype::{json_number, ScalarKind};
use crate::codec::ColorModel;
use crate::conventions::attributes::SourceDriver;
use crate::conventions::attributes::BANDS_ATTRIBUTE;
use crate::conventions::attributes::COLOR_ATTRIBUTE;
use crate::conventions::attributes::COLOR_TABLE_ATTRIBUTE;
use crate::conventions::attributes::DATETIME_ATTRIBUTE;
use crate::conventions::attributes::NETCDF_DEFAULT_FILL_ATTRIBUTE;
use crate::conventions::colour::ColorInterp;
use crate::index::zarr::ArrayMeta;

/// Most colour table entries read.
pub const MAX_COLOR_ENTRIES: usize = 65536;

/// Band attributes also shown as band metadata.
pub const METADATA_ATTRIBUTES: [&str; 6] = [
    "long_name",
    "standard_name",
    "units",
    "valid_range",
    "valid_min",
    "valid_max",
];

/// What GDAL shows of one band.
#[derive(Debug, Clone, PartialEq)]
pub struct BandInfo {
    /// Nodata value.
    pub nodata: Option<f64>,
    /// The nodata value exactly, when the metadata wrote an integer (what
    /// GDAL's `GetNoDataValueAsInt64` / `AsUInt64` give for 64-bit integer
    /// bands, which a double cannot hold).
    pub nodata_int: Option<i128>,
    /// `scale_factor`.
    pub scale: Option<f64>,
    /// `add_offset`.
    pub offset: Option<f64>,
    /// `units`, or empty.
    pub unit: String,
    /// `long_name`, else `standard_name`, or empty.
    pub description: String,
    /// Colour interpretation.
    pub color: ColorInterp,
}

/// The element kind GDAL shows for `meta`: unsigned where
/// [`is_unsigned`] says so, else as stored.
pub fn served_kind(meta: &ArrayMeta) -> ScalarKind {
    match is_unsigned(meta) {
        true => ScalarKind::UInt,
        false => meta.dtype.kind,
    }
}

/// True when a signed integer array carries `_Unsigned = "true"`: its
/// elements are read as unsigned integers of the same size. For signed
/// bytes a two-value increasing `valid_range` decides first, as in GDAL's
/// netCDF driver: unsigned for `{0, 255}`, signed for any other range
/// (GOES-R quality flags: `_Unsigned` with `valid_range` `{0, 6}` stay
/// signed).
pub fn is_unsigned(meta: &ArrayMeta) -> bool {
    if meta.dtype.kind != ScalarKind::Int {
        return false;
    }
    let range: Option<Vec<f64>> = match meta.attributes.get("valid_range") {
        Some(Value::Array(r)) if r.len() == 2 => r.iter().map(Value::as_f64).collect(),
        _ => None,
    };
    if let (1, Some([low, high])) = (meta.dtype.size, range.as_deref()) {
        if low < high {
            return [*low, *high] == [0.0, 255.0];
        }
    }
    match meta.attributes.get("_Unsigned") {
        Some(Value::String(s)) => s.eq_ignore_ascii_case("true"),
        Some(Value::Bool(b)) => *b,
        _ => false,
    }
}

/// The attributes of band `band` (0-based): the array's, overridden by the
/// band's entry of [`BANDS_ATTRIBUTE`] (when it has one, without the
/// per-band lists [`PER_BAND_LISTS`]).
pub fn attributes(meta: &ArrayMeta, band: u64) -> std::borrow::Cow<'_, Map<String, Value>> {
    let own = meta
        .attributes
        .get(BANDS_ATTRIBUTE)
        .and_then(Value::as_array)
        .and_then(|bands| bands.get(usize::try_from(band).ok()?))
        .and_then(Value::as_object);
    match own {
        Some(o) if !o.is_empty() => {
            // The lists with an entry per band stay out: copied for every
            // band of a long stack they would cost time in bands squared.
            let mut a: Map<String, Value> = meta
                .attributes
                .iter()
                .filter(|(k, _)| !PER_BAND_LISTS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            a.extend(o.clone());
            std::borrow::Cow::Owned(a)
        }
        _ => std::borrow::Cow::Borrowed(&meta.attributes),
    }
}

/// Array attributes holding one entry per band, left out of
/// [`attributes`]' copies: read them from the array's attributes.
const PER_BAND_LISTS: [&str; 3] = [BANDS_ATTRIBUTE, COLOR_ATTRIBUTE, DATETIME_ATTRIBUTE];

/// The band information of band `band` (0-based) of an array.
pub fn info(meta: &ArrayMeta, band: u64) -> BandInfo {
    let a = &*attributes(meta, band);
    let text = |k: &str| a.get(k).and_then(Value::as_str).map(str::to_string);
    let color = match meta.attributes.get(COLOR_ATTRIBUTE) {
        Some(Value::Array(names)) => names
            .get(band as usize)
            .and_then(Value::as_str)
            .map_or(ColorInterp::Undefined, ColorInterp::from_name),
        _ => {
            let n = meta.shape.len();
            let bands = meta.shape[..n.saturating_sub(2)].iter().product();
            ColorInterp::of_model(meta.codecs.color_model(), band, bands)
        }
    };
    let nodata = nodata_of(meta, a);
    BandInfo {
        nodata: nodata.map(|n| n.float),
        nodata_int: nodata.and_then(|n| n.int),
        scale: number(a, "scale_factor"),
        offset: number(a, "add_offset"),
        unit: text("units").unwrap_or_default(),
        description: text("long_name")
            .or_else(|| text("standard_name"))
            .unwrap_or_default(),
        color,
    }
}

/// The colour table of an array (`chunkref:color_table`), if it has a
/// valid one: entries of 3 or 4 integers in 0..=255 (alpha 255 when absent).
pub fn color_table(meta: &ArrayMeta) -> Option<Vec<[i16; 4]>> {
    let list = meta.attributes.get(COLOR_TABLE_ATTRIBUTE)?.as_array()?;
    if list.len() > MAX_COLOR_ENTRIES {
        return None;
    }
    list.iter()
        .map(|e| {
            let c: Vec<i16> = e
                .as_array()?
                .iter()
                .map(|v| v.as_u64().filter(|&v| v <= 255).map(|v| v as i16))
                .collect::<Option<_>>()?;
            match c[..] {
                [r, g, b] => Some([r, g, b, 255]),
                [r, g, b, a] => Some([r, g, b, a]),
                _ => None,
            }
        })
        .collect()
}

/// Nodata: `_FillValue`, else `missing_value`, else
/// [`NETCDF_DEFAULT_FILL_ATTRIBUTE`] when there is one (none when it is
/// `null`, or for 1-byte types, as in GDAL's netCDF driver), else the Zarr
/// `fill_value`;
/// `_FillValue` alone for the datasets of a file GDAL's HDF5 driver opens;
/// negative values of `_Unsigned` arrays wrap to the unsigned domain.
pub fn nodata(meta: &ArrayMeta) -> Option<f64> {
    nodata_of(meta, &meta.attributes).map(|n| n.float)
}

/// A nodata value as a double, and exactly when it was written as an
/// integer.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Number {
    float: f64,
    int: Option<i128>,
}

impl Number {
    /// A JSON number.
    fn of_json(v: &Value) -> Option<Number> {
        let int = match v {
            Value::Number(n) => n
                .as_i64()
                .map(i128::from)
                .or_else(|| n.as_u64().map(i128::from)),
            _ => None,
        };
        Some(Number {
            float: json_number(v)?,
            int,
        })
    }

    /// A CF fill value (see [`cf_value`]).
    fn of_cf(v: &Value) -> Option<Number> {
        match v {
            Value::Array(l) => l.first().and_then(Number::of_cf),
            Value::Number(_) => Number::of_json(v),
            _ => Some(Number {
                float: cf_value(v)?,
                int: None,
            }),
        }
    }
}

/// [`nodata`] from attributes `a` (the array's, or one band's: see
/// [`attributes`]).
fn nodata_of(meta: &ArrayMeta, a: &Map<String, Value>) -> Option<Number> {
    let declared = a.get("_FillValue").and_then(Number::of_cf);
    let v = if SourceDriver::of(meta) == Some(SourceDriver::Hdf5) {
        declared?
    } else {
        declared
            .or_else(|| a.get("missing_value").and_then(Number::of_cf))
            .or_else(|| match a.get(NETCDF_DEFAULT_FILL_ATTRIBUTE) {
                Some(default) => Number::of_json(default).filter(|_| meta.dtype.size > 1),
                None => meta
                    .fill
                    .as_ref()
                    .and_then(|_| Number::of_json(&meta.fill_json)),
            })?
    };
    // A Float16 band's nodata is a half float, as GDAL's Zarr driver
    // reports it; its GTiff driver reports the GDAL_NODATA text as written.
    let tiff = meta.codecs.names().contains(&crate::codec::tiff_tile::URI);
    let v = if (meta.dtype.kind, meta.dtype.size) == (ScalarKind::Float, 2) && !tiff {
        Number {
            float: half::f16::from_f64(v.float).to_f64(),
            int: None,
        }
    } else {
        v
    };
    let wrap = 2f64.powi(8 * meta.dtype.size as i32);
    Some(if is_unsigned(meta) && v.float < 0.0 {
        Number {
            float: v.float + wrap,
            int: v.int.map(|i| i + (1i128 << (8 * meta.dtype.size))),
        }
    } else {
        v
    })
}

/// A number attribute, or the first of a list.
fn number(a: &Map<String, Value>, key: &str) -> Option<f64> {
    match a.get(key)? {
        Value::Array(l) => l.first().and_then(json_number),
        v => json_number(v),
    }
}

/// A CF fill value: a number, `NaN`/`Infinity` text, the base64 of a
/// little-endian double (xarray's encoding of float fill values), or a list.
fn cf_value(v: &Value) -> Option<f64> {
    match v {
        Value::Array(l) => l.first().and_then(cf_value),
        Value::String(s) => json_number(v).or_else(|| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(s.trim())
                .ok()?;
            match bytes.len() {
                8 => Some(f64::from_le_bytes(bytes.try_into().ok()?)),
                4 => Some(f32::from_le_bytes(bytes.try_into().ok()?) as f64),
                _ => None,
            }
        }),
        _ => json_number(v),
    }
}

impl SourceDriver {
    /// The driver [`GDAL_DRIVER_ATTRIBUTE`] names on `meta`, if any.
    pub fn of(meta: &ArrayMeta) -> Option<SourceDriver> {
        SourceDriver::in_attributes(&meta.attributes)
    }
}

impl ColorInterp {
    /// GDAL's interpretation of band `band` of `bands` under a source colour
    /// model: the first three bands of RGB, the first band of gray or
    /// palette images, the first four of CMYK; others are undefined.
    pub fn of_model(model: Option<ColorModel>, band: u64, bands: u64) -> ColorInterp {
        match (model, band) {
            (Some(ColorModel::Rgb), 0) if bands >= 3 => ColorInterp::Red,
            (Some(ColorModel::Rgb), 1) if bands >= 3 => ColorInterp::Green,
            (Some(ColorModel::Rgb), 2) if bands >= 3 => ColorInterp::Blue,
            (Some(ColorModel::Gray), 0) => ColorInterp::Gray,
            (Some(ColorModel::Palette), 0) => ColorInterp::Palette,
            (Some(ColorModel::Cmyk), 0) => ColorInterp::Cyan,
            (Some(ColorModel::Cmyk), 1) => ColorInterp::Magenta,
            (Some(ColorModel::Cmyk), 2) => ColorInterp::Yellow,
            (Some(ColorModel::Cmyk), 3) => ColorInterp::Black,
            _ => ColorInterp::Undefined,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conventions::attributes::GDAL_DRIVER_ATTRIBUTE;
    use serde_json::json;

    fn meta(dtype: &str, fill: Value, attrs: Value) -> ArrayMeta {
        let zarray = json!({"shape": [2, 4, 4], "chunks": [2, 4, 4], "dtype": dtype,
            "fill_value": fill, "compressor": null, "filters": null});
        ArrayMeta::from_v2("a", &zarray, Some(&attrs)).unwrap()
    }

    #[test]
    fn integer_nodata_is_kept_exactly() {
        let big = meta("<i8", json!(-9223372036854775806i64), json!({}));
        assert_eq!(info(&big, 0).nodata_int, Some(-9223372036854775806));
        let unsigned = meta("<u8", json!(18446744073709551614u64), json!({}));
        assert_eq!(info(&unsigned, 0).nodata_int, Some(18446744073709551614));
        // `_Unsigned` wraps the exact value too; text and floats have none.
        let wrapped = meta(
            "<i8",
            json!(0),
            json!({"_Unsigned": "true", "_FillValue": -2}),
        );
        assert_eq!(info(&wrapped, 0).nodata_int, Some((1i128 << 64) - 2));
        let float = meta("<f8", json!("NaN"), json!({}));
        assert_eq!(info(&float, 0).nodata_int, None);
    }

    #[test]
    fn fill_value_precedence() {
        // xarray writes float _FillValue as base64 of a little-endian double.
        let m = meta("<f4", json!(0), json!({"_FillValue": "AAAAAICHw8A="}));
        assert_eq!(nodata(&m), Some(-9999.0));
        let m = meta(
            "<i2",
            json!(0),
            json!({"missing_value": [-1], "_Unsigned": "true"}),
        );
        assert_eq!(nodata(&m), Some(65535.0));
        assert!(is_unsigned(&m));
        let flags = |range: Value| {
            meta(
                "|i1",
                json!(-1),
                json!({"_Unsigned": "true", "valid_range": range}),
            )
        };
        assert!(!is_unsigned(&flags(json!([0, 6]))));
        assert_eq!(nodata(&flags(json!([0, 6]))), Some(-1.0));
        assert!(is_unsigned(&flags(json!([0, 255]))));
        // {0, 255} stored in signed bytes: no range, `_Unsigned` decides.
        assert!(is_unsigned(&flags(json!([0, -1]))));
        assert_eq!(nodata(&meta("<u2", json!(7), json!({}))), Some(7.0));
        assert_eq!(nodata(&meta("<u2", Value::Null, json!({}))), None);
        // A file GDAL's HDF5 driver opens: `_FillValue` only.
        let hdf5 = json!({GDAL_DRIVER_ATTRIBUTE: "HDF5"});
        assert_eq!(nodata(&meta("<i4", json!(0), hdf5.clone())), None);
        let declared = json!({GDAL_DRIVER_ATTRIBUTE: "HDF5", "_FillValue": -5});
        assert_eq!(nodata(&meta("<i4", json!(-5), declared)), Some(-5.0));
        assert!(nodata(&meta("<f8", json!("NaN"), json!({})))
            .unwrap()
            .is_nan());
    }

    #[test]
    fn cf_attributes() {
        let m = meta(
            "<i2",
            Value::Null,
            json!({"scale_factor": 0.01, "add_offset": [273.15], "units": "K",
                   "standard_name": "air_temperature",
                   "chunkref:color_interpretation": ["Red", "green"]}),
        );
        let b = info(&m, 1);
        assert_eq!(
            (b.scale, b.offset, b.unit.as_str(), b.description.as_str()),
            (Some(0.01), Some(273.15), "K", "air_temperature")
        );
        assert_eq!(b.color, ColorInterp::Green);
        assert_eq!(info(&m, 0).color, ColorInterp::Red);
    }

    #[test]
    fn per_band_attributes_override_the_arrays() {
        let m = meta(
            "<i2",
            Value::Null,
            json!({"scale_factor": 0.01, "units": "K",
                   "chunkref:bands": [{"scale_factor": 2.0, "long_name": "a"}, {}]}),
        );
        let b0 = info(&m, 0);
        assert_eq!(
            (b0.scale, b0.unit.as_str(), b0.description.as_str()),
            (Some(2.0), "K", "a")
        );
        let b1 = info(&m, 1);
        assert_eq!((b1.scale, b1.description.as_str()), (Some(0.01), ""));
        assert!(matches!(attributes(&m, 1), std::borrow::Cow::Borrowed(_)));
        assert_eq!(info(&m, 7).scale, Some(0.01));
    }

    #[test]
    fn color_tables() {
        let m = meta(
            "|u1",
            Value::Null,
            json!({COLOR_TABLE_ATTRIBUTE: [[1, 2, 3], [4, 5, 6, 7]]}),
        );
        assert_eq!(color_table(&m), Some(vec![[1, 2, 3, 255], [4, 5, 6, 7]]));
        let bad = meta(
            "|u1",
            Value::Null,
            json!({COLOR_TABLE_ATTRIBUTE: [[1, 2, 300]]}),
        );
        assert_eq!(color_table(&bad), None);
    }
}
