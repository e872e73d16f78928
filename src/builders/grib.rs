//! GRIB files of either edition: `chunkref index` reads the headers of
//! every message ([`super::grib1`] for edition 1, [`super::grib2`] for
//! edition 2, told apart by each message's edition octet, so a file may
//! mix them) and makes of their fields one array `[fields, rows,
//! columns]`, one band per field in file order, as GDAL's GRIB driver
//! shows them: the first field's grid, those of another grid size at its
//! top left, each band's nodata its field's missing value. Values are
//! doubles, as GDAL shows them. Each band records what GDAL's GRIB driver
//! shows of it (band metadata items and description); its valid time is
//! the band's datetime.

use serde_json::{json, Map, Value};

use super::grib_parts::{Band, MessageBytes};
use crate::base::error::{Error, Result};
use crate::builders::writers::built::Built;
use crate::builders::writers::built::Ref;
use crate::builders::writers::pyramid::{self, Pyramid};
use crate::codec::grib::{CONVERSION_KEY, GRIB1_NAME, NAME as GRIB2_NAME, OTHER_GRIDS_KEY};
use crate::conventions::attributes::ANTIMERIDIAN_COLUMN_ATTRIBUTE;
use crate::conventions::attributes::DATETIME_ATTRIBUTE;
use crate::conventions::attributes::{BANDS_ATTRIBUTE, METADATA_ITEMS_ATTRIBUTE};
use crate::formats::grib1::sections::is_edition_1;
use crate::formats::grib2::describe::Units;
use crate::formats::grib2::product::Product;
use crate::formats::grib2::units::Conversion;
use crate::io::source::Source;

/// Indexes the GRIB file at `path`, its messages referenced by `url`,
/// its values in `units`.
pub fn index_file(path: &str, url: &str, units: Units) -> Result<Built> {
    let src = Source::open(path, "GRIB file")?;
    let mut bands: Vec<Band> = Vec::new();
    let mut number = 0;
    let mut offset = 0;
    while offset < src.len() {
        // Zero bytes after a message pad it (ECMWF pads messages to a
        // multiple of 120 bytes); GDAL's GRIB driver skips them too.
        offset += zero_run(&src, offset)?;
        if offset == src.len() {
            break;
        }
        number += 1;
        let message = MessageBytes::at(&src, offset)?;
        let read = if is_edition_1(&message.head) {
            super::grib1::read_message
        } else {
            super::grib2::read_message
        };
        let len = read(&message, &mut bands, units).map_err(|e| match e {
            Error::Unsupported { what } => {
                Error::unsupported(format!("{path}, message {number} at byte {offset}: {what}"))
            }
            Error::MalformedSource { path, reason } => Error::MalformedSource {
                path,
                reason: format!("message {number} at byte {offset}: {reason}"),
            },
            other => other,
        })?;
        offset += len;
    }
    if bands.is_empty() {
        return Err(src.malformed("the file holds no message"));
    }
    Ok(pyramid(&bands, url).into_built())
}

/// Bytes read at a time when skipping the zeros that pad a message.
const PADDING_PROBE: u64 = 4096;

/// How many zero bytes `src` holds from `offset` on (up to its end).
fn zero_run(src: &Source, offset: u64) -> Result<u64> {
    let mut at = offset;
    while at < src.len() {
        let bytes = src.read(at, PADDING_PROBE.min(src.len() - at))?;
        match bytes.iter().position(|&b| b != 0) {
            Some(first) => return Ok(at + first as u64 - offset),
            None => at += bytes.len() as u64,
        }
    }
    Ok(at - offset)
}

/// One array of bands: the first band's grid and georeferencing. A band
/// of another grid size is read as GDAL's GRIB driver reads it (the
/// codec's `other_grids`: its field at the top left, cut to the first
/// grid, the rest 0), with GDAL's warning.
fn pyramid(bands: &[Band], url: &str) -> Pyramid {
    let first = &bands[0];
    let (rows, cols) = (u64::from(first.shape.nj), u64::from(first.shape.ni));
    let mut other_grids = false;
    for (b, m) in bands.iter().enumerate() {
        if (m.shape.nj, m.shape.ni) != (first.shape.nj, first.shape.ni) {
            other_grids = true;
            eprintln!(
                "chunkref: warning: {url}: band {} is {}x{}, while the first band and dataset \
                 is {cols}x{rows}: as GDAL's GRIB driver, its georeferencing is the first \
                 band's and its pixels are those at its top left (the rest 0)",
                b + 1,
                m.shape.ni,
                m.shape.nj
            );
        }
    }
    let georef = &first.georef;
    let url: std::sync::Arc<str> = url.into();
    let refs = bands
        .iter()
        .enumerate()
        .map(|(b, m)| Ref {
            index: [b as u64, 0, 0],
            url: url.clone(),
            ranges: m.ranges.clone(),
        })
        .collect();
    let fills: Vec<Value> = bands
        .iter()
        .map(|m| m.missing.map_or(Value::Null, |v| json!(v)))
        .collect();
    // Both codec names decode both editions; `grib1` says every message
    // is of edition 1.
    let name = if bands.iter().all(|b| b.edition == 1) {
        GRIB1_NAME
    } else {
        GRIB2_NAME
    };
    let mut codec = json!({"id": name});
    // One missing value (the array's fill value, GDAL's nodata), or one
    // per band: the codec's fill of each message's bitmap points, and each
    // band's `_FillValue` (none: no nodata), as GDAL gives each band its
    // message's.
    let same = fills.iter().all(|f| *f == fills[0]);
    let fill = if same { fills[0].clone() } else { Value::Null };
    if !same {
        codec["fill_value"] = Value::Array(fills.clone());
    } else if !fill.is_null() {
        codec["fill_value"] = fill.clone();
    }
    if other_grids {
        codec[OTHER_GRIDS_KEY] = json!("top_left");
    }
    // One conversion for every band, or a list of one per band.
    let conversions: Vec<Conversion> = bands.iter().map(|m| m.conversion).collect();
    if conversions.iter().all(|&c| c == conversions[0]) {
        if let Some(name) = conversions[0].name() {
            codec[CONVERSION_KEY] = json!(name);
        }
    } else {
        codec[CONVERSION_KEY] = conversions.iter().map(|c| c.name()).collect();
    }
    // Doubles, as GDAL's GRIB driver shows every band.
    let mut data = pyramid::Array {
        shape: [bands.len() as u64, rows, cols],
        chunks: [1, rows, cols],
        dtype: "<f8".into(),
        codec,
        fill,
        attrs: band_attributes(bands, (!same).then_some(&fills[..])),
        refs,
    };
    if let Some(column) = first.antimeridian_column {
        data.attrs
            .insert(ANTIMERIDIAN_COLUMN_ATTRIBUTE.into(), json!(column));
    }
    Pyramid {
        source: json!(&*url),
        attrs: georef.root_attributes([rows, cols]),
        levels: vec![pyramid::Level {
            data,
            mask: None,
            attrs: georef.attributes([rows, cols], [1.0, 1.0]),
        }],
    }
}

/// Per-band attributes: band metadata items, the band description
/// (`long_name`), the band's own nodata (`_FillValue`, when `fills` gives
/// one per band), and the valid time as the band's datetime.
fn band_attributes(bands: &[Band], fills: Option<&[Value]>) -> Map<String, Value> {
    let entries: Vec<Value> = bands
        .iter()
        .enumerate()
        .map(|(b, m)| {
            let items: Map<String, Value> = m
                .items
                .iter()
                .map(|(key, value)| (key.to_string(), json!(value)))
                .collect();
            let mut band = json!({
                METADATA_ITEMS_ATTRIBUTE: items,
                "long_name": m.description,
            });
            if let Some(fill) = fills.and_then(|f| f.get(b)).filter(|f| !f.is_null()) {
                band["_FillValue"] = fill.clone();
            }
            band
        })
        .collect();
    let datetimes: Vec<String> = bands.iter().map(|m| Product::iso(m.valid_time)).collect();
    let mut attrs = Map::new();
    attrs.insert(BANDS_ATTRIBUTE.into(), Value::Array(entries));
    attrs.insert(DATETIME_ATTRIBUTE.into(), json!(datetimes));
    attrs
}
