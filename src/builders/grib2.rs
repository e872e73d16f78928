//! GRIB2 messages of a GRIB file ([`super::grib`]): each message of one
//! field is referenced whole as one chunk, decoded by the `grib2` codec. A
//! message holding several fields (sections 2 to 7, 3 to 7 or 4 to 7
//! repeated) gives each field a chunk of the byte ranges its decoding
//! needs: the section 3 in force, its own sections 4 to 7 (its section 6
//! the earlier one that defined the bitmap when it says 254, "the bitmap
//! defined before").
//!
//! Each band records what GDAL's GRIB driver shows of it: its reference
//! time, valid time and forecast seconds (`GRIB_REF_TIME`,
//! `GRIB_VALID_TIME`, `GRIB_FORECAST_SECONDS`), the names, units and
//! template numbers of [`describe`] and its description. Values are
//! converted as GDAL converts them by default (Kelvin to Celsius, ...)
//! unless [`Units::Raw`] asks for them as stored.

use std::borrow::Cow;

use super::grib_parts::{Band, MessageBytes};
use crate::base::error::Result;
use crate::codec::grib::unpack::declared_missing;
use crate::formats::grib2::describe::describe;
use crate::formats::grib2::describe::Units;
use crate::formats::grib2::grid::Grid;
use crate::formats::grib2::product::Product;
use crate::formats::grib2::sections::{indicator, Layout};
use crate::formats::grib2::tables::Tables;

/// The value GDAL's GRIB driver gives points a bitmap leaves out (and
/// reports as nodata): degrib's `UNDEFINED_PRIM`.
const BITMAP_MISSING: f32 = 9999.0;

/// Reads the headers of the GRIB2 message `message` and appends its
/// fields to `bands` (the georeferencing of the previous band's grid is
/// taken again when the grid is the same), described for values in
/// `units`; returns the message's length.
pub(super) fn read_message(
    message: &MessageBytes,
    bands: &mut Vec<Band>,
    units: Units,
) -> Result<u64> {
    let (src, offset) = (message.src, message.offset);
    let bad = |reason: String| src.malformed(reason);
    let ind = indicator(&message.head).map_err(bad)?;
    let room = message.room();
    if ind.total_len > room {
        return Err(bad(format!(
            "the message declares {} bytes, but the file ends {room} bytes after its start (truncated?)",
            ind.total_len
        )));
    }
    let read = |at: u64, len: u64| message.read(at, len);
    let layouts = Layout::walk(
        ind.total_len,
        |at, len| read(at, len).map(Cow::into_owned),
        bad,
    )?;
    for (f, layout) in layouts.iter().enumerate() {
        let section = |n: usize, most: u64| {
            let (at, len) = layout.span(n).unwrap_or_default();
            read(at, len.min(most))
        };
        // Errors name the field when the message holds several.
        let bad = |reason: String| match layouts.len() {
            1 => bad(reason),
            _ => bad(format!("field {}: {reason}", f + 1)),
        };
        let s5 = section(5, u64::MAX)?;
        let bitmap = section(6, 6)?.get(5) != Some(&255);
        let s3 = section(3, u64::MAX)?;
        let grid = Grid::parse(&s3).map_err(bad)?;
        let grid_key = [&[2], &s3[4..]].concat();
        let (georef, antimeridian_column) = Band::georef_after(bands.last(), &grid_key, || {
            grid.georeferencing()
                .map(|g| (g, grid.antimeridian_column()))
                .map_err(bad)
        })?;
        let (s1, s4) = (section(1, u64::MAX)?, section(4, u64::MAX)?);
        let product = Product::parse(ind.discipline, &s1, &s4).map_err(bad)?;
        let shown = describe(ind.discipline, &s1, &s4, &product, Tables::gdal(), units);
        let ranges = match layouts.len() {
            1 => vec![(offset, ind.total_len)],
            // Sections back to back make one range.
            _ => [3, 4, 5, 6, 7].iter().filter_map(|&n| layout.span(n)).fold(
                Vec::new(),
                |mut ranges: Vec<(u64, u64)>, (at, len)| {
                    match ranges.last_mut() {
                        Some(last) if last.0 + last.1 == offset + at => last.1 += len,
                        _ => ranges.push((offset + at, len)),
                    }
                    ranges
                },
            ),
        };
        let (d, c, n) = product.parameter;
        let mut items = vec![
            ("GRIB_REF_TIME", product.reference_time.to_string()),
            ("GRIB_VALID_TIME", product.valid_time.to_string()),
            (
                "GRIB_FORECAST_SECONDS",
                product.forecast_seconds.to_string(),
            ),
            ("GRIB2_PARAMETER", format!("{d}-{c}-{n}")),
            ("GRIB2_FIRST_SURFACE_TYPE", product.level_type.to_string()),
            (
                "GRIB2_FIRST_SURFACE_VALUE",
                product.level_value.map_or(String::new(), |v| v.to_string()),
            ),
            ("GRIB_PDS_PDTN", product.template.to_string()),
        ];
        items.extend(shown.items);
        let missing = declared_missing(&s5).or(bitmap.then_some(BITMAP_MISSING));
        bands.push(Band {
            ranges,
            edition: 2,
            shape: grid.shape(),
            grid_key,
            georef,
            antimeridian_column,
            missing: missing.map(f64::from),
            conversion: shown.conversion,
            items,
            description: shown.description,
            valid_time: product.valid_time,
        });
    }
    Ok(ind.total_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::grib::index_file;
    use crate::builders::writers::built::{Built, Ref};
    use crate::codec::grib::tests::message;
    use crate::codec::grib::NAME as CODEC;
    use crate::conventions::attributes::DATETIME_ATTRIBUTE;
    use crate::conventions::attributes::{BANDS_ATTRIBUTE, METADATA_ITEMS_ATTRIBUTE};
    use serde_json::{json, Value};

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
        // A bitmap message has another missing value: still one array,
        // the codec's fill and the nodata given per band.
        let two = index_bytes("two.grib2", &[plain.clone(), holes, plain].concat()).unwrap();
        assert_eq!(two.arrays.keys().collect::<Vec<_>>(), ["0/data"]);
        let a = zarray(&two, "0/data/.zarray");
        assert_eq!(a["fill_value"], Value::Null);
        assert_eq!(
            a["filters"],
            json!([{"id": "grib2", "fill_value": [null, 9999.0, null]}])
        );
        let attrs = zarray(&two, "0/data/.zattrs");
        let fill = |b: usize| attrs[BANDS_ATTRIBUTE][b].get("_FillValue").cloned();
        assert_eq!(
            (fill(0), fill(1), fill(2)),
            (None, Some(json!(9999.0)), None)
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

    /// The sections of `message` between sections 0 and 8, in order.
    fn sections(message: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut at = 16;
        while at < message.len() - 4 {
            let len = u32::from_be_bytes(message[at..at + 4].try_into().unwrap()) as usize;
            out.push(message[at..at + len].to_vec());
            at += len;
        }
        out
    }

    #[test]
    fn fields_of_a_message_become_bands_decoded_from_their_sections() {
        use crate::codec::testing::config;
        use crate::codec::DecodeContext;
        // A bitmap field, then sections 4 to 7 again with bitmap
        // indicator 254 (the bitmap defined before), after a plain message.
        let plain = message(0x40, &[0, 1, 2, 3, 4, 5], &[255]);
        let holes = message(0x40, &[7, 8, 9, 10], &[0, 0b1011_0100]);
        let s = sections(&holes);
        let mut two = holes[..holes.len() - 4].to_vec();
        for section in [&s[2], &s[3], &vec![0, 0, 0, 6, 6, 254], &s[5]] {
            two.extend_from_slice(section);
        }
        two.extend_from_slice(b"7777");
        let len = two.len() as u64;
        two[8..16].copy_from_slice(&len.to_be_bytes());
        let file = [plain.clone(), two].concat();
        let built = index_bytes("fields.grib2", &file).unwrap();
        let a = zarray(&built, "0/data/.zarray");
        assert_eq!(a["shape"], json!([3, 2, 3]));
        let refs = &built.arrays["0/data"];
        assert_eq!(refs[0].ranges, [(0, plain.len() as u64)]);
        let codec =
            crate::codec::registry::build(CODEC, &config(&a["filters"][0].to_string())).unwrap();
        let decode = |chunk: Vec<u8>, band: u64| {
            let ctx = DecodeContext {
                chunk_shape: &[1, 2, 3],
                chunk_index: &[band, 0, 0],
                dtype: crate::base::dtype::DataType::from_v2("<f8").unwrap(),
                decoded_len: 48,
                needed: 48,
                first_needed: 0,
            };
            let out = codec.decode(bytes::Bytes::from(chunk), &ctx).unwrap();
            out.chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
                .collect::<Vec<_>>()
        };
        let chunk = |r: &Ref| -> Vec<u8> {
            r.ranges
                .iter()
                .flat_map(|&(at, len)| file[at as usize..(at + len) as usize].to_vec())
                .collect()
        };
        let whole = decode(holes.clone(), 1);
        assert_eq!(whole, [9.0, 9999.0, 10.0, 7.0, 9999.0, 8.0]);
        for band in [1, 2] {
            let r = &refs[band];
            // Sections 3 to 7 back to back (band 1); section 3, sections
            // 4 and 5, band 1's section 6, section 7 (band 2).
            assert_eq!(r.ranges.len(), band * band, "{:?}", r.ranges);
            assert_eq!(decode(chunk(r), band as u64), whole);
        }
        // Band 2's section 6 is band 1's (indicator 254 reuses it).
        let s6 = (
            refs[1].ranges[0].0 + (s[1].len() + s[2].len() + s[3].len()) as u64,
            s[4].len() as u64,
        );
        assert_eq!(refs[2].ranges[2], s6);
        let attrs = zarray(&built, "0/data/.zattrs");
        assert_eq!(attrs[BANDS_ATTRIBUTE][2]["_FillValue"], json!(9999.0));
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
        // Section 4 again after section 7 without its sections 5 to 7.
        let mut short = m[..m.len() - 4].to_vec();
        short.extend_from_slice(&sections(&m)[2]);
        short.extend_from_slice(b"7777");
        let len = short.len() as u64;
        short[8..16].copy_from_slice(&len.to_be_bytes());
        let e = index_bytes("short.grib2", &[m.clone(), short].concat())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("short.grib2")
                && e.contains("message 2")
                && e.contains("field 2 is incomplete"),
            "{e}"
        );
        assert!(index_bytes("empty.grib2", b"").is_err());
        let mut grib3 = m.clone();
        grib3[7] = 3;
        assert!(index_bytes("one.grib", &grib3)
            .unwrap_err()
            .to_string()
            .contains("edition 3"));
    }
}
