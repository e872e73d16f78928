//! GRIB1 messages of a GRIB file ([`super::grib`]): each message is
//! referenced whole as one chunk, decoded by the codec's GRIB1 reading
//! (grid point data in simple packing, with or without a bitmap, on the
//! grids GDAL georeferences); anything else is refused here, naming it.
//!
//! Each band records what GDAL's GRIB driver shows of a GRIB1 message:
//! `GRIB_REF_TIME`, `GRIB_VALID_TIME`, `GRIB_FORECAST_SECONDS`,
//! `GRIB_SHORT_NAME` and the description (the level), and, when GDAL's
//! parameter table is carried ([`crate::formats::grib1::tables`]),
//! `GRIB_ELEMENT`, `GRIB_UNIT` and `GRIB_COMMENT`. Points a bitmap leaves
//! out get degrib's missing value, GDAL's nodata.

use std::borrow::Cow;

use super::grib_parts::{Band, MessageBytes};
use crate::base::error::{Error, Result};
use crate::codec::grib::edition1::{bitmap, gds, Message, Packing, BDS_HEAD};
use crate::formats::grib1::grid::Grid;
use crate::formats::grib1::product::Product;
use crate::formats::grib1::sections::Layout;
use crate::formats::grib1::tables::{level_names, parameter};
use crate::formats::grib1::Refusal;
use crate::formats::grib2::describe::Units;
use crate::formats::grib2::units::Conversion;

/// degrib refuses grids of more than this many points whose file is
/// shorter than a thousandth of them.
const LARGE_GRID: u64 = 100 * 1024 * 1024;

/// Reads the headers of the GRIB1 message `message` and appends its
/// band to `bands` (the georeferencing of the previous band's grid is
/// taken again when the grid is the same), described for values in
/// `units`; returns the message's length.
pub(super) fn read_message(
    message: &MessageBytes,
    bands: &mut Vec<Band>,
    units: Units,
) -> Result<u64> {
    let src = message.src;
    let bad = |refusal: Refusal| match refusal {
        Refusal::Unsupported(what) => Error::unsupported(format!("GRIB1: {what}")),
        Refusal::Malformed(reason) => src.malformed(format!("GRIB1: {reason}")),
    };
    let read = |(at, len): (u64, u64)| message.read(at, len);
    let layout = Layout::walk(&message.head, message.room(), |at, len| {
        read((at, len))
            .map(Cow::into_owned)
            .map_err(|e| Refusal::Malformed(e.to_string()))
    })
    .map_err(bad)?;
    let product = Product::parse(&read(layout.pds)?).map_err(bad)?;
    let gds_bytes = read(gds(&layout, &product).map_err(bad)?)?;
    let grid = Grid::parse(&gds_bytes, &product).map_err(bad)?;
    let points = grid.shape.points() as u64;
    if points > LARGE_GRID && points / 1000 > src.len() {
        return Err(bad(Refusal::Malformed(format!(
            "a grid of {points} points in a file of {} bytes (GDAL's GRIB driver refuses it as \
             too short)",
            src.len()
        ))));
    }
    let present = match layout.bms {
        Some(bms) => Some(bitmap(&read(bms)?, grid.shape.points()).map_err(bad)?),
        None => None,
    };
    let count = present
        .as_ref()
        .map_or(grid.shape.points(), |p| p.iter().filter(|&&b| b).count());
    let packing =
        Packing::parse(&read((layout.bds.0, BDS_HEAD))?, product.decimal_scale).map_err(bad)?;
    packing.check_len(count, layout.bds.1).map_err(bad)?;
    let table = parameter(&product);
    let conversion = match units {
        Units::Normalized => table.conversion,
        Units::Raw => Conversion::None,
    };
    let missing = match present {
        Some(_) => Some(
            packing
                .bitmap_missing(conversion, || {
                    let whole = src
                        .read(message.offset, layout.total_len)
                        .map_err(|e| Refusal::Malformed(e.to_string()))?;
                    Message::parse(&whole)?.values(conversion)
                })
                .map_err(bad)?,
        ),
        None => None,
    };
    let grid_key = [&[1, product.centre], &gds_bytes[3..]].concat();
    let (georef, antimeridian_column) = Band::georef_after(bands.last(), &grid_key, || {
        grid.placement
            .georeferencing(&grid.shape, grid.earth)
            .map(|g| (g, grid.placement.antimeridian_column(&grid.shape)))
            .map_err(|e| bad(Refusal::Malformed(e)))
    })?;
    let (short_level, long_level) = level_names(&product);
    let mut items = vec![
        ("GRIB_REF_TIME", product.reference_time.to_string()),
        ("GRIB_VALID_TIME", product.valid_time.to_string()),
        (
            "GRIB_FORECAST_SECONDS",
            product.forecast_seconds().to_string(),
        ),
        ("GRIB_SHORT_NAME", short_level),
    ];
    if let Some(names) = table.names {
        items.extend([
            ("GRIB_ELEMENT", names.element),
            ("GRIB_UNIT", units.shown(&format!("[{}]", names.unit))),
            (
                "GRIB_COMMENT",
                units.shown(&format!("{} [{}]", names.comment, names.unit)),
            ),
        ]);
    }
    bands.push(Band {
        ranges: vec![(message.offset, layout.total_len)],
        edition: 1,
        shape: grid.shape,
        grid_key,
        georef,
        antimeridian_column,
        missing,
        conversion,
        items,
        description: long_level,
        valid_time: product.valid_time,
    });
    Ok(layout.total_len)
}

#[cfg(test)]
mod tests {
    use crate::builders::grib::index_file;
    use crate::codec::grib::edition1::tests::{message, ONE};
    use crate::conventions::attributes::{BANDS_ATTRIBUTE, METADATA_ITEMS_ATTRIBUTE};
    use crate::formats::grib2::describe::Units;
    use serde_json::json;

    /// Writes `bytes` to a file of its own and indexes it in `units`.
    fn index_bytes(
        name: &str,
        bytes: &[u8],
        units: Units,
    ) -> crate::base::error::Result<crate::builders::writers::built::Built> {
        let dir = std::env::temp_dir().join(format!("chunkref-grib1-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let path = path.to_string_lossy().into_owned();
        index_file(&path, &path, units)
    }

    #[test]
    #[cfg_attr(
        not(feature = "gdal"),
        ignore = "needs GDAL's OSR (GRIB1 earths are spheres)"
    )]
    fn messages_become_bands_with_gdals_items() {
        let plain = message(0x40, (ONE, 0, 0), &[0, 1, 2, 3, 4, 5], None);
        let holes = message(0x40, (ONE, 0, 0), &[7, 8, 9, 10], Some(0b1011_0100));
        let file = [plain.clone(), holes.clone()].concat();
        let built = index_bytes("two.grib1", &file, Units::Normalized).unwrap();
        let a = &built.metadata["0/data/.zarray"];
        assert_eq!(a["shape"], json!([2, 2, 3]));
        assert_eq!(
            a["filters"],
            json!([{"id": "grib1", "fill_value": [null, 9999.0], "unit_conversion": "kelvin_to_celsius"}])
        );
        let refs = &built.arrays["0/data"];
        assert_eq!(refs[1].ranges, [(plain.len() as u64, holes.len() as u64)]);
        let attrs = &built.metadata["0/data/.zattrs"];
        let band = &attrs[BANDS_ATTRIBUTE][0];
        let items = &band[METADATA_ITEMS_ATTRIBUTE];
        assert_eq!(items["GRIB_ELEMENT"], "T");
        assert_eq!(items["GRIB_UNIT"], "[C]");
        assert_eq!(items["GRIB_COMMENT"], "Temperature [C]");
        assert_eq!(items["GRIB_SHORT_NAME"], "500-ISBL");
        assert_eq!(items["GRIB_REF_TIME"], "1709186400");
        assert_eq!(band["long_name"], "500[hPa] ISBL (Isobaric surface)");
        let raw = index_bytes("raw.grib1", &file, Units::Raw).unwrap();
        let attrs = &raw.metadata["0/data/.zattrs"];
        assert_eq!(
            attrs[BANDS_ATTRIBUTE][0][METADATA_ITEMS_ATTRIBUTE]["GRIB_UNIT"],
            "[K]"
        );
        // A GRIB2 message after them: the codec named for both editions.
        let grib2 = crate::codec::grib::tests::message(0x40, &[0, 1, 2, 3, 4, 5], &[255]);
        let mixed = index_bytes("mixed.grib", &[file, grib2].concat(), Units::Raw).unwrap();
        let a = &mixed.metadata["0/data/.zarray"];
        assert_eq!(a["shape"], json!([3, 2, 3]));
        assert_eq!(a["filters"][0]["id"], "grib2");
    }

    #[test]
    fn refusals_name_the_message_and_structure() {
        // Each refused before its grid is placed (which needs GDAL's OSR).
        let plain = message(0x40, (ONE, 0, 0), &[0, 1, 2, 3, 4, 5], None);
        let mut complex = plain.clone();
        let bds = complex.len() - 4 - 17;
        complex[bds + 3] = 0x40;
        let e = index_bytes("so.grib1", &[complex, plain.clone()].concat(), Units::Raw)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("message 1 at byte 0")
                && e.contains("GRIB1: complex (second-order) packing"),
            "{e}"
        );
        let e = index_bytes("cut.grib1", &plain[..plain.len() - 1], Units::Raw)
            .unwrap_err()
            .to_string();
        assert!(e.contains("message 1") && e.contains("truncated"), "{e}");
        // Without its GDS (PDS octet 8 says none).
        let mut bare = [&plain[..36], &plain[68..]].concat();
        bare[8 + 7] = 0;
        let len = (bare.len() as u32).to_be_bytes();
        bare[4..7].copy_from_slice(&len[1..]);
        let e = index_bytes("bare.grib1", &bare, Units::Raw)
            .unwrap_err()
            .to_string();
        assert!(e.contains("predefined grids"), "{e}");
    }

    #[test]
    fn survives_mutated_headers() {
        let plain = message(0x40, (ONE, 0, 0), &[0, 1, 2, 3, 4, 5], None);
        let holes = message(0x00, (ONE, -1, 2), &[7, 8, 9, 10], Some(0b1011_0100));
        let file = [plain, holes].concat();
        let mut next = crate::codec::testing::xorshift(11);
        for round in 0..400 {
            let mut bytes = file.clone();
            for _ in 0..1 + round % 3 {
                let at = (next() % bytes.len() as u64) as usize;
                bytes[at] = next() as u8;
            }
            if round % 7 == 0 {
                bytes.truncate((next() % bytes.len() as u64) as usize);
            }
            let _ = index_bytes("mutated.grib1", &bytes, Units::Normalized);
        }
    }
}
