//! GRIB2 files: `chunkref index` reads the headers of every message (one
//! field each) and references each message whole as one chunk, decoded by
//! the `grib2` codec.
//!
//! Messages sharing one missing value make one array `[messages, rows,
//! columns]`, one band per message in file order, as GDAL's GRIB driver
//! shows them: the first message's grid, those of another grid size at
//! its top left; in a file of several missing values, those of one
//! parameter (discipline, category, number), level type, grid and missing
//! value make one array each (subdatasets). Values are doubles, as
//! GDAL shows them. Each band records what GDAL's GRIB
//! driver shows of it: its reference time, valid time and forecast seconds
//! (`GRIB_REF_TIME`, `GRIB_VALID_TIME`, `GRIB_FORECAST_SECONDS`), the
//! names, units and template numbers of [`describe`] and its description;
//! its valid time is the band's datetime. Values are converted as GDAL
//! converts them by default (Kelvin to Celsius, ...) unless [`Units::Raw`]
//! asks for them as stored.

mod describe;
pub mod grid;
pub mod product;
pub mod sections;
mod tables;

pub use describe::Units;

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use crate::codec::grib2::{
    declared_missing, Conversion, CONVERSION_KEY, NAME as CODEC, OTHER_GRIDS_KEY,
};
use crate::error::{Error, Result};
use crate::georef::band::{BANDS_ATTRIBUTE, METADATA_ITEMS_ATTRIBUTE};
use crate::georef::orientation::ANTIMERIDIAN_COLUMN_ATTRIBUTE;
use crate::index::readers::stack::DATETIME_ATTRIBUTE;
use crate::index::writers::built::Built;
use crate::index::writers::pyramid::{self, Pyramid, Ref};
use crate::source::Source;
use crate::tiff::geo::Georef;
use describe::{describe, Description};
use grid::Grid;
use product::Product;
use sections::{indicator, Layout};
use tables::Tables;

/// Bytes read at the start of each message: its sections 0 to 5 usually
/// fit; a section past them is read on its own.
const HEAD_BYTES: u64 = 4096;

/// The value GDAL's GRIB driver gives points a bitmap leaves out (and
/// reports as nodata): degrib's `UNDEFINED_PRIM`.
const BITMAP_MISSING: f32 = 9999.0;

/// One message, as its headers describe it.
#[derive(Debug)]
struct Message {
    offset: u64,
    len: u64,
    product: Product,
    grid: Grid,
    /// The grid's georeferencing.
    georef: Georef,
    /// The value of missing points, when the message has any.
    missing: Option<f32>,
    /// What GDAL shows of the message, and how it converts its values.
    shown: Description,
}

/// Indexes the GRIB2 file at `path`, its messages referenced by `url`,
/// its values in `units`.
pub fn index_file(path: &str, url: &str, units: Units) -> Result<Built> {
    let src = Source::open(path, "GRIB2 file")?;
    let mut messages = Vec::new();
    let mut offset = 0;
    while offset < src.len() {
        let number = messages.len() + 1;
        let message = read_message(&src, offset, messages.last(), units).map_err(|e| match e {
            Error::Unsupported { what } => {
                Error::unsupported(format!("{path}, message {number} at byte {offset}: {what}"))
            }
            Error::MalformedSource { path, reason } => Error::MalformedSource {
                path,
                reason: format!("message {number} at byte {offset}: {reason}"),
            },
            other => other,
        })?;
        offset += message.len;
        messages.push(message);
    }
    if messages.is_empty() {
        return Err(src.malformed("the file holds no message"));
    }
    let groups = group(&messages);
    let mut built = Built::default();
    if let [(_, only)] = &groups[..] {
        return Ok(pyramid(only, url).into_built());
    }
    for (name, members) in &groups {
        pyramid(members, url).write(&mut built, name);
    }
    built
        .metadata
        .insert(".zgroup".into(), json!({"zarr_format": 2}));
    built
        .metadata
        .insert(".zattrs".into(), json!({"source": url}));
    Ok(built)
}

/// Reads the headers of the message at `offset` (the georeferencing of
/// the `previous` message's grid is taken again when the grid is the same),
/// described for values in `units`.
fn read_message(
    src: &Source,
    offset: u64,
    previous: Option<&Message>,
    units: Units,
) -> Result<Message> {
    let head = src.read(offset, HEAD_BYTES.min(src.len() - offset))?;
    let bad = |reason: String| src.malformed(reason);
    let ind = indicator(&head).map_err(bad)?;
    let room = src.len() - offset;
    if ind.total_len > room {
        return Err(bad(format!(
            "the message declares {} bytes, but the file ends {room} bytes after its start (truncated?)",
            ind.total_len
        )));
    }
    let read = |at: u64, len: u64| -> Result<Cow<'_, [u8]>> {
        match head.get(at as usize..(at + len) as usize) {
            Some(bytes) => Ok(Cow::Borrowed(bytes)),
            None => src.read(offset + at, len).map(Cow::Owned),
        }
    };
    let layout = Layout::walk(
        ind.total_len,
        |at, len| read(at, len).map(Cow::into_owned),
        bad,
    )?;
    let section = |n: usize, most: u64| {
        let (at, len) = layout.span(n).unwrap_or_default();
        read(at, len.min(most))
    };
    let s5 = section(5, u64::MAX)?;
    let bitmap = match section(6, 6)?.get(5) {
        Some(&indicator) => indicator != 255,
        None => return Err(bad("section 6 is too short for its bitmap indicator".into())),
    };
    let grid = Grid::parse(&section(3, u64::MAX)?).map_err(bad)?;
    let georef = match previous {
        Some(p) if p.grid == grid => p.georef.clone(),
        _ => grid.georeferencing().map_err(bad)?,
    };
    let (s1, s4) = (section(1, u64::MAX)?, section(4, u64::MAX)?);
    let product = Product::parse(ind.discipline, &s1, &s4).map_err(bad)?;
    let shown = describe(ind.discipline, &s1, &s4, &product, Tables::gdal(), units);
    Ok(Message {
        offset,
        len: ind.total_len,
        product,
        grid,
        georef,
        missing: declared_missing(&s5).or(bitmap.then_some(BITMAP_MISSING)),
        shown,
    })
}

/// Messages grouped into arrays: all of them in file order when they share
/// one missing value, as GDAL's GRIB driver shows them (one dataset of the
/// first message's grid, one band per message; see [`pyramid`] for those
/// of other grids); else (a nodata per band, which one array cannot say)
/// one array per parameter, level type, grid and missing value, each named
/// after its parameter and level type, in order of first appearance.
fn group(messages: &[Message]) -> Vec<(String, Vec<&Message>)> {
    let same_missing =
        |a: &Message, b: &Message| a.missing.map(f32::to_bits) == b.missing.map(f32::to_bits);
    let same_grid = |a: &Message, b: &Message| a.grid == b.grid && same_missing(a, b);
    if messages.iter().all(|m| same_missing(&messages[0], m)) {
        return vec![(String::new(), messages.iter().collect())];
    }
    let mut groups: Vec<(String, Vec<&Message>)> = Vec::new();
    let same = |a: &Message, b: &Message| {
        a.product.parameter == b.product.parameter
            && a.product.level_type == b.product.level_type
            && same_grid(a, b)
    };
    for m in messages {
        match groups.iter_mut().find(|(_, list)| same(list[0], m)) {
            Some((_, list)) => list.push(m),
            None => {
                let (d, c, p) = m.product.parameter;
                let base = format!(
                    "discipline{d}_category{c}_parameter{p}_level{}",
                    m.product.level_type
                );
                let taken = groups.iter().filter(|(n, _)| n.starts_with(&base)).count();
                let name = if taken == 0 {
                    base
                } else {
                    format!("{base}_{}", taken + 1)
                };
                groups.push((name, vec![m]));
            }
        }
    }
    groups
}

/// One array of messages: one band per message, the first message's grid
/// and georeferencing. A message of another grid size is read as GDAL's
/// GRIB driver reads it (the codec's `other_grids`: its field at the top
/// left, cut to the first grid, the rest 0), with GDAL's warning.
fn pyramid(members: &[&Message], url: &str) -> Pyramid {
    let first = members[0];
    let (rows, cols) = (u64::from(first.grid.nj), u64::from(first.grid.ni));
    let mut other_grids = false;
    for (b, m) in members.iter().enumerate() {
        if (m.grid.nj, m.grid.ni) != (first.grid.nj, first.grid.ni) {
            other_grids = true;
            eprintln!(
                "chunkref: warning: {url}: band {} is {}x{}, while the first band and dataset \
                 is {cols}x{rows}: as GDAL's GRIB driver, its georeferencing is the first \
                 band's and its pixels are those at its top left (the rest 0)",
                b + 1,
                m.grid.ni,
                m.grid.nj
            );
        }
    }
    let georef = &first.georef;
    let url: std::sync::Arc<str> = url.into();
    let refs = members
        .iter()
        .enumerate()
        .map(|(b, m)| Ref::single([b as u64, 0, 0], url.clone(), m.offset, m.len))
        .collect();
    let fill = first.missing.map_or(Value::Null, |v| json!(f64::from(v)));
    let mut codec = json!({"id": CODEC});
    if !fill.is_null() {
        codec["fill_value"] = fill.clone();
    }
    if other_grids {
        codec[OTHER_GRIDS_KEY] = json!("top_left");
    }
    // One conversion for every band, or a list of one per band.
    let conversions: Vec<Conversion> = members.iter().map(|m| m.shown.conversion).collect();
    if conversions.iter().all(|&c| c == conversions[0]) {
        if let Some(name) = conversions[0].name() {
            codec[CONVERSION_KEY] = json!(name);
        }
    } else {
        codec[CONVERSION_KEY] = conversions.iter().map(|c| c.name()).collect();
    }
    // Doubles, as GDAL's GRIB driver shows every band (it unpacks in
    // single precision and converts units in double precision).
    let dtype = "<f8";
    let mut data = pyramid::Array {
        shape: [members.len() as u64, rows, cols],
        chunks: [1, rows, cols],
        dtype: dtype.into(),
        codec,
        fill,
        attrs: band_attributes(members),
        refs,
    };
    if let Some(column) = first.grid.antimeridian_column() {
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

/// Per-band attributes: band metadata items (GDAL's GRIB items, and the
/// parameter and level numbers), the band description (`long_name`), and
/// the valid time as the band's datetime.
fn band_attributes(members: &[&Message]) -> Map<String, Value> {
    let bands: Vec<Value> = members
        .iter()
        .map(|m| {
            let p = &m.product;
            let (d, c, n) = p.parameter;
            let mut items = json!({
                "GRIB_REF_TIME": p.reference_time.to_string(),
                "GRIB_VALID_TIME": p.valid_time.to_string(),
                "GRIB_FORECAST_SECONDS": p.forecast_seconds.to_string(),
                "GRIB2_PARAMETER": format!("{d}-{c}-{n}"),
                "GRIB2_FIRST_SURFACE_TYPE": p.level_type.to_string(),
                "GRIB2_FIRST_SURFACE_VALUE": p.level_value.map_or(String::new(), |v| v.to_string()),
                "GRIB_PDS_PDTN": p.template.to_string(),
            });
            for (key, value) in &m.shown.items {
                items[*key] = json!(value);
            }
            json!({
                METADATA_ITEMS_ATTRIBUTE: items,
                "long_name": m.shown.description,
            })
        })
        .collect();
    let datetimes: Vec<String> = members
        .iter()
        .map(|m| Product::iso(m.product.valid_time))
        .collect();
    let mut attrs = Map::new();
    attrs.insert(BANDS_ATTRIBUTE.into(), Value::Array(bands));
    attrs.insert(DATETIME_ATTRIBUTE.into(), json!(datetimes));
    attrs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::grib2::tests::message;

    /// Writes `bytes` to a file of its own and indexes it, values as stored.
    fn index_bytes(name: &str, bytes: &[u8]) -> Result<Built> {
        let dir = std::env::temp_dir().join(format!("chunkref-grib2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let path = path.to_string_lossy().into_owned();
        index_file(&path, &path, Units::Raw)
    }

    fn zarray(built: &Built, key: &str) -> Value {
        built.metadata[key].clone()
    }

    #[test]
    fn messages_become_bands_of_arrays() {
        let plain = message(0x40, &[0, 1, 2, 3, 4, 5], &[255]);
        let holes = message(0x40, &[7, 8, 9, 10], &[0, 0b1011_0100]);
        let one = index_bytes("one.grib2", &[plain.clone(), plain.clone()].concat()).unwrap();
        let a = zarray(&one, "0/data/.zarray");
        assert_eq!(
            (a["shape"].clone(), a["chunks"].clone()),
            (json!([2, 2, 3]), json!([1, 2, 3]))
        );
        assert_eq!(a["filters"], json!([{"id": "grib2"}]));
        let refs = &one.arrays["0/data"];
        assert_eq!(refs[1].ranges, [(plain.len() as u64, plain.len() as u64)]);
        let attrs = zarray(&one, "0/data/.zattrs");
        assert_eq!(
            attrs[DATETIME_ATTRIBUTE],
            json!(["2024-02-29T12:30:00", "2024-02-29T12:30:00"])
        );
        assert_eq!(
            attrs[BANDS_ATTRIBUTE][0][METADATA_ITEMS_ATTRIBUTE]["GRIB_FORECAST_SECONDS"],
            "21600"
        );
        // A bitmap message has another missing value: an array of its own.
        let two = index_bytes("two.grib2", &[plain.clone(), holes, plain].concat()).unwrap();
        let names: Vec<&str> = two.arrays.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "discipline0_category0_parameter2_level103/0/data",
                "discipline0_category0_parameter2_level103_2/0/data"
            ]
        );
        let holes = zarray(
            &two,
            "discipline0_category0_parameter2_level103_2/0/data/.zarray",
        );
        assert_eq!(holes["fill_value"], json!(9999.0));
        assert_eq!(
            holes["filters"],
            json!([{"id": "grib2", "fill_value": 9999.0}])
        );
    }

    #[test]
    fn parameters_on_one_grid_make_one_array_of_doubles() {
        let temperature = message(0x40, &[0, 1, 2, 3, 4, 5], &[255]);
        // The same message as parameter 0-0-3: section 4's parameter
        // category is byte 9, its number byte 10.
        let mut pressure = temperature.clone();
        let mut at = 16;
        while pressure[at + 4] != 4 {
            at += u32::from_be_bytes(pressure[at..at + 4].try_into().unwrap()) as usize;
        }
        pressure[at + 10] = 3;
        let built = index_bytes("mixed.grib2", &[temperature, pressure].concat()).unwrap();
        assert_eq!(built.arrays.keys().collect::<Vec<_>>(), ["0/data"]);
        let a = zarray(&built, "0/data/.zarray");
        assert_eq!(
            (a["shape"].clone(), a["dtype"].clone()),
            (json!([2, 2, 3]), json!("<f8"))
        );
        let attrs = zarray(&built, "0/data/.zattrs");
        let parameter = |b: usize| {
            attrs[BANDS_ATTRIBUTE][b][METADATA_ITEMS_ATTRIBUTE]["GRIB2_PARAMETER"].clone()
        };
        assert_eq!(
            (parameter(0), parameter(1)),
            (json!("0-0-2"), json!("0-0-3"))
        );
    }

    #[test]
    fn bad_files_are_refused_naming_the_message() {
        let m = message(0x40, &[0, 1, 2, 3, 4, 5], &[255]);
        let cut = [m.clone(), m[..m.len() - 1].to_vec()].concat();
        let e = index_bytes("cut.grib2", &cut).unwrap_err().to_string();
        assert!(
            e.contains("cut.grib2") && e.contains("message 2 at byte") && e.contains("truncated"),
            "{e}"
        );
        // Sections 3 to 7 again before 7777: two fields in one message.
        let fields = &m[16 + 21..m.len() - 4];
        let mut twice = m[..m.len() - 4].to_vec();
        twice.extend_from_slice(fields);
        twice.extend_from_slice(b"7777");
        let len = twice.len() as u64;
        twice[8..16].copy_from_slice(&len.to_be_bytes());
        let e = index_bytes("twice.grib2", &[m.clone(), twice].concat())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("message 2") && e.contains("several fields"),
            "{e}"
        );
        assert!(index_bytes("empty.grib2", b"").is_err());
        let mut grib1 = m.clone();
        grib1[7] = 1;
        assert!(index_bytes("one.grib", &grib1)
            .unwrap_err()
            .to_string()
            .contains("edition 1"));
    }
}
