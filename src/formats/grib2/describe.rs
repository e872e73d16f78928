//! What GDAL 3.6's GRIB driver shows of a message besides its pixels and
//! times: the band metadata items `GRIB_ELEMENT`, `GRIB_SHORT_NAME`,
//! `GRIB_UNIT`, `GRIB_COMMENT`, `GRIB_DISCIPLINE`, `GRIB_IDS`,
//! `GRIB_PDS_TEMPLATE_NUMBERS`, `GRIB_PDS_TEMPLATE_ASSEMBLED_VALUES`, the
//! band description (the first fixed surface, e.g. `50000[Pa]
//! ISBL="Isobaric surface"`), and the unit conversion its
//! `GRIB_NORMALIZE_UNITS=YES` default applies to the pixels.
//!
//! Names, units and comments come from GDAL's tables (see [`Tables`]) by
//! the rules of degrib, the library GDAL's driver is built on: the WMO
//! parameter table of the discipline and category (unless the master table
//! version is 255), else the centre's local table, else `unknown`;
//! accumulations (`APCP`, ...) named after their length in hours (`APCP06`);
//! NDFD's and MOS's own names; derived ensemble statistics (template 4.2)
//! in their own units and never converted.

use super::naming::{Context, Entry, Parameter};
use super::probability::{self, Limits};
use super::product::{Interval, Product};
use super::tables::Tables;
use crate::formats::grib2::units::Conversion;

/// How `chunkref index` gives a GRIB2 file's values and units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Units {
    /// As GDAL's GRIB driver shows them by default
    /// (`GRIB_NORMALIZE_UNITS=YES`): Kelvin as Celsius (unit `[C]`), and
    /// the fields degrib stores as logarithms as their values.
    #[default]
    Normalized,
    /// As the file stores them (GDAL's `GRIB_NORMALIZE_UNITS=NO`).
    Raw,
}

impl Units {
    /// A unit or comment as GDAL shows it in these units: its first
    /// `[K]` as `[C]` when normalized (whether or not the values are
    /// converted: degrib's tables say so apart).
    pub(crate) fn shown(self, text: &str) -> String {
        match self {
            Units::Normalized => text.replacen("[K]", "[C]", 1),
            Units::Raw => text.to_string(),
        }
    }

    /// Parses `raw` or `normalized`.
    pub fn parse(text: &str) -> Option<Units> {
        match text {
            "normalized" => Some(Units::Normalized),
            "raw" => Some(Units::Raw),
            _ => None,
        }
    }
}

/// degrib's missing value of a signed 4-byte number.
const MISSING_S4: i64 = -2_147_483_647;
/// degrib's missing value of a signed byte.
const MISSING_S1: i64 = -127;

/// GRIB disciplines (code table 0.0) as GDAL names them.
const DISCIPLINES: &[&str] = &[
    "Meteorological",
    "Hydrological",
    "Land Surface",
    "Space products",
    "Space products",
    "Reserved",
    "Reserved",
    "Reserved",
    "Reserved",
    "Reserved",
    "Oceanographic Products",
];
/// Significance of the reference time (code table 1.2).
const REF_TIME_SIGNIFICANCE: &[&str] = &[
    "Analysis",
    "Start of Forecast",
    "Verifying time of forecast",
    "Observation time",
];
/// Production status (code table 1.3).
const PRODUCTION_STATUS: &[&str] = &[
    "Operational",
    "Operational test",
    "Research",
    "Re-analysis",
    "TIGGE",
    "TIGGE test",
    "S2S operational",
    "S2S test",
    "UERRA",
    "UERRA test",
];
/// Type of processed data (code table 1.4).
const DATA_TYPES: &[&str] = &[
    "Analysis",
    "Forecast",
    "Analysis and forecast",
    "Control forecast",
    "Perturbed forecast",
    "Control and perturbed forecast",
    "Processed satellite observations",
    "Processed radar observations",
    "Event Probability",
];
/// NDFD's names for some WMO short names (degrib's override table).
const NDFD_NAMES: &[(&str, &str)] = &[
    ("TMP", "T"),
    ("TMAX", "MaxT"),
    ("TMIN", "MinT"),
    ("DPT", "Td"),
    ("APCP", "QPF"),
    ("WDIR", "WindDir"),
    ("WIND", "WindSpd"),
    ("TCDC", "Sky"),
    ("WVHGT", "WaveHeight"),
    ("ASNOW", "SnowAmt"),
    ("GUST", "WindGust"),
    ("MAXRH", "MaxRH"),
    ("HTSGW", "WaveHeight"),
];
/// Units of derived forecasts (code table 4.7) degrib shows in place of
/// the parameter's (up to GDAL 3.12: [`crate::base::gdal::compat::GRIB_DERIVED_PARAMETER_UNITS`]).
const DERIVED_UNITS: &[(u8, &str)] = &[
    (2, "[stddev]"),
    (3, "[stddev normalized]"),
    (4, "[spread]"),
    (5, "[large anomaly index]"),
    (7, "[interquantile range]"),
];

/// Octet widths of the product definition templates read (g2clib's maps:
/// negative for sign-and-magnitude numbers): template 4.0's, then each
/// template's own; those over a time interval end with one time range
/// ([`INTERVAL`]) and repeat its six numbers for each further range.
const TEMPLATE_4_0: &[i8] = &[1, 1, 1, 1, 1, 2, 1, 1, -4, 1, -1, -4, 1, -1, -4];
const ENSEMBLE: &[i8] = &[1, 1, 1];
const DERIVED: &[i8] = &[1, 1];
const PROBABILITY: &[i8] = &[1, 1, 1, -1, -4, -1, -4];
/// The end of the overall interval, the number of time ranges and of
/// missing values, and the first time range.
const INTERVAL: &[i8] = &[2, 1, 1, 1, 1, 1, 1, 4, 1, 1, 1, 4, 1, 4];
/// The numbers of one time range, at the end of [`INTERVAL`].
const TIME_RANGE_NUMBERS: usize = 6;
/// Where [`INTERVAL`] gives the number of time ranges.
const TIME_RANGES_IN_INTERVAL: usize = 6;

/// What GDAL shows of one message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Description {
    /// Band metadata items, in the order GDAL sets them.
    pub(crate) items: Vec<(&'static str, String)>,
    /// The band description: the first fixed surface.
    pub(crate) description: String,
    /// The conversion GDAL applies to the values.
    pub(crate) conversion: Conversion,
}

/// Describes a message of `discipline` with sections `s1` and `s4` and
/// `product` (read from them), its names taken from `tables`, its units
/// as `units` asks.
pub(crate) fn describe(
    discipline: u8,
    s1: &[u8],
    s4: &[u8],
    product: &Product,
    tables: &Tables,
    units: Units,
) -> Description {
    let b1 = |at: usize| s1.get(at).copied().unwrap_or(255);
    let u16_at = |s: &[u8], at: usize| {
        s.get(at..at + 2)
            .map_or(65535, |b| u16::from_be_bytes([b[0], b[1]]))
    };
    let template = u16_at(s4, 7);
    let (length, range_unit) = time_range(s4, template, product);
    let ctx = Context {
        discipline,
        center: u16_at(s1, 5),
        subcenter: u16_at(s1, 7),
        master_version: b1(9),
        template,
        s4,
        length,
        range_unit,
        first: surface(s4, 22).unwrap_or(0.0),
        second: surface(s4, 28),
    };
    let p = parameter(&ctx, tables);
    let conversion = match (units, p.conversion.as_str()) {
        (Units::Normalized, "UC_K2F") => Conversion::KelvinToCelsius,
        (Units::Normalized, "UC_LOG10") => Conversion::Exp10,
        _ => Conversion::None,
    };
    let shown = |text: &str| units.shown(text);
    let (short, long) = level_names(&ctx, tables);
    let mut items = vec![
        ("GRIB_UNIT", shown(&p.unit)),
        ("GRIB_COMMENT", shown(&p.comment)),
        ("GRIB_ELEMENT", p.element),
        ("GRIB_SHORT_NAME", short),
        ("GRIB_DISCIPLINE", labelled(discipline, DISCIPLINES)),
    ];
    if (21..=100_000).contains(&s1.len()) {
        items.push(("GRIB_IDS", identification(s1, tables)));
    }
    let coordinates = usize::from(u16_at(s4, 5)).saturating_mul(4);
    let body = s4
        .get(9..s4.len().saturating_sub(coordinates).max(9))
        .unwrap_or_default();
    items.push((
        "GRIB_PDS_TEMPLATE_NUMBERS",
        body.iter().map(u8::to_string).collect::<Vec<_>>().join(" "),
    ));
    if let Some(values) = assembled(template, body) {
        items.push(("GRIB_PDS_TEMPLATE_ASSEMBLED_VALUES", values));
    }
    Description {
        items,
        description: long,
        conversion,
    }
}

/// degrib's length of the time range (`lenTime`) and its unit: for
/// templates over a time interval their first time range converted to hours (months, years
/// kept), else the forecast time in hours.
fn time_range(s4: &[u8], template: u16, product: &Product) -> (i64, u8) {
    let hours = |seconds: i64| seconds / 3600;
    let Some(b) = Interval::of(template).and_then(|i| s4.get(i.range_unit_at..i.range_unit_at + 5))
    else {
        return (hours(product.forecast_seconds), 1);
    };
    let length = i64::from(i32::from_be_bytes([b[1], b[2], b[3], b[4]]));
    let (length, unit) = match b[0] {
        255 => (
            hours(product.valid_time - product.forecast_seconds - product.reference_time),
            1,
        ),
        0 => (length / 60, 1),
        2 => (length * 24, 1),
        10 => (length * 3, 1),
        11 => (length * 6, 1),
        12 => (length * 12, 1),
        13 => (length / 3600, 1),
        5 => (length * 10, 4),
        6 => (length * 30, 4),
        7 => (length * 100, 4),
        unit => (length, unit),
    };
    (if length == MISSING_S4 { 0 } else { length }, unit)
}

/// The value of the fixed surface whose type is at `at` in section 4
/// (scale factor and scaled value follow, in sign and magnitude), as degrib
/// computes it; `None` when missing (or its type is).
fn surface(s4: &[u8], at: usize) -> Option<f64> {
    let b = s4.get(at..at + 6)?;
    let scale = if b[1] & 0x80 != 0 {
        -i64::from(b[1] & 0x7f)
    } else {
        i64::from(b[1])
    };
    let raw = u32::from_be_bytes([b[2], b[3], b[4], b[5]]);
    let value = if raw & 0x8000_0000 != 0 {
        -i64::from(raw & 0x7fff_ffff)
    } else {
        i64::from(raw)
    };
    (value != MISSING_S4 && scale != MISSING_S1 && b[0] != 255)
        .then(|| value as f64 * 10f64.powf(-scale as f64))
}

/// The parameter's element, comment (its unit appended), unit and unit
/// conversion, as degrib's `ParseElemName` gives them for the templates
/// read (4.0, 4.1, 4.2, 4.5, 4.8, 4.9, 4.12).
fn parameter(ctx: &Context<'_>, tables: &Tables) -> Parameter {
    let limits = matches!(ctx.template, 5 | 9)
        .then(|| Limits::read(ctx.s4))
        .flatten();
    let mut p = match limits {
        Some(limits) => probability::named(ctx, limits, tables),
        None => named(ctx, tables),
    };
    if matches!(ctx.template, 2 | 12) {
        if let Some((_, unit)) = DERIVED_UNITS.iter().find(|(d, _)| *d == ctx.byte(34)) {
            // GDAL 3.13 gives derived forecasts at a point in time (4.2)
            // their parameter's unit, and keeps the derived one over an
            // interval (4.12).
            if !crate::base::gdal::compat::GRIB_DERIVED_PARAMETER_UNITS || ctx.template == 12 {
                p.unit = (*unit).to_string();
            }
            p.conversion.clear();
        }
    }
    if matches!(ctx.byte(11), 6 | 7) {
        p.conversion.clear();
        p.element = "ERR".into();
        p.comment = format!("{} error {}", p.comment, p.unit);
    } else {
        p.comment = format!("{} {}", p.comment, p.unit);
    }
    p
}

/// The parameter before degrib's last touches (see [`parameter`]).
fn named(ctx: &Context<'_>, tables: &Tables) -> Parameter {
    let (d, cat, sub) = (ctx.discipline, ctx.byte(9), ctx.byte(10));
    let fixed = |element: String, comment: String, unit: &str, conversion: &str| Parameter {
        element,
        comment,
        unit: unit.into(),
        conversion: conversion.into(),
    };
    if d == 0 && ctx.template == 8 && cat == 14 && sub == 193 {
        return if ctx.length > 0 {
            let unit = match ctx.range_unit {
                3 => "mon",
                4 => "yr",
                _ => "hr",
            };
            fixed(
                ctx.with_length("Ozone"),
                format!("{} {unit} Average Ozone Concentration", ctx.length),
                "[PPB]",
                "",
            )
        } else {
            fixed(
                "AVGOZCON".into(),
                "Average Ozone Concentration".into(),
                "[PPB]",
                "",
            )
        };
    }
    if ctx.center == 7 && d == 0 && cat == 13 && sub == 195 {
        if let Some(b) = ctx.second {
            let what = if ctx.byte(13) == 6 { "dust" } else { "smoke" };
            let delta = (ctx.first - b).abs();
            let unit = "[log10(10^-6g/m^3)]";
            if delta <= 100.0 {
                let comment = if what == "dust" {
                    "Surface level dust"
                } else {
                    "Surface level smoke from fires"
                };
                return fixed(format!("{what}s"), comment.into(), unit, "UC_LOG10");
            }
            if delta <= 5000.0 {
                let comment = if what == "dust" {
                    "Average vertical column dust"
                } else {
                    "Average vertical column smoke from fires"
                };
                return fixed(format!("{what}c"), comment.into(), unit, "UC_LOG10");
            }
        }
    }
    if let Some(row) = ctx.wmo_row(tables) {
        return from_wmo(ctx, &row, cat, sub);
    }
    if let Some(r) = ctx.local_row(tables) {
        return fixed(r.short_name, r.name, &format!("[{}]", r.unit), &r.unit_conv);
    }
    fixed(
        "unknown".into(),
        format!("(prodType {d}, cat {cat}, subcat {sub})"),
        "[-]",
        "",
    )
}

/// A parameter of the WMO table, with NDFD's and MOS's names and the
/// lengths of accumulations.
fn from_wmo(ctx: &Context<'_>, row: &Entry, cat: u8, sub: u8) -> Parameter {
    let name = row.name.as_str();
    let short = row.short();
    let mut p = Parameter {
        element: short.into(),
        comment: name.into(),
        unit: format!("[{}]", row.unit),
        conversion: row.unit_conv.clone(),
    };
    let mos_name = match short {
        "APCP" => Some("QPF"),
        "ASNOW" => Some("SnowAmt"),
        _ => None,
    };
    if let Some(base) = mos_name.filter(|_| ctx.mos()) {
        p.element = ctx.with_length(base);
        p.comment = ctx.length_text(name);
        return p;
    }
    if ctx.ndfd() || ctx.mos() {
        if short == "EVP" {
            let (base, text) = if ctx.statistical_process() == 10 {
                ("EvpDep", "Evapo-Transpiration departure from normal")
            } else {
                ("Evp", "Evapo-Transpiration")
            };
            p.element = format!("{base}{:02}", ctx.length);
            p.comment = format!("{:02} hr {text}", ctx.length);
            return p;
        }
        if let Some((_, ndfd)) = NDFD_NAMES.iter().find(|(wmo, _)| *wmo == short) {
            p.element = (*ndfd).into();
            return p;
        }
    }
    let accumulation = matches!(
        (ctx.discipline, cat, sub),
        (1, 1, 2) | (0, 19, 2) | (0, 1, 8) | (0, 19, 203)
    );
    if accumulation && ctx.length > 0 {
        p.element = ctx.with_length(short);
        p.comment = ctx.length_text(name);
    }
    p
}

/// The short and long names of the first fixed surface (`50000-ISBL`,
/// `50000[Pa] ISBL="Isobaric surface"`), as degrib's `ParseLevelName`
/// makes them from code table 4.5.
fn level_names(ctx: &Context<'_>, tables: &Tables) -> (String, String) {
    let code = ctx.byte(22);
    let (mut reserved, mut short, mut name, mut unit) = (
        false,
        "RESERVED".to_string(),
        "Reserved".to_string(),
        "-".to_string(),
    );
    if code > 191 && code < 255 && ctx.center != 7 {
        reserved = true;
        name = "Reserved Local use".into();
    } else if let Some(table) = tables.get("grib2_table_4_5.csv") {
        if let Some(r) = table.find("code", i64::from(code)) {
            short = r.get("short_name").into();
            name = r.get("name").into();
            unit = r.get("unit").into();
            if code > 191 && code < 255 && name == "Reserved for local use" {
                short = "RESERVED".into();
                reserved = true;
            }
        }
    }
    let value = printf_trimmed(ctx.first);
    let value = match ctx.second {
        Some(second) => format!("{value}-{}", printf_trimmed(second)),
        None => value,
    };
    if reserved {
        (
            format!("{value}-{short}({code})"),
            format!("{value}[{unit}] {short}({code}) ({name})"),
        )
    } else {
        (
            format!("{value}-{short}"),
            format!("{value}[{unit}] {short}=\"{name}\""),
        )
    }
}

/// `value` as C's `%f` prints it, trailing zeros and point removed.
fn printf_trimmed(value: f64) -> String {
    let text = format!("{value:.6}");
    let text = text.trim_end_matches('0');
    text.strip_suffix('.').unwrap_or(text).to_string()
}

/// `code` followed by its name in `names`, spaces as underscores:
/// `0(Meteorological)`.
fn labelled(code: u8, names: &[&str]) -> String {
    match names.get(usize::from(code)) {
        Some(name) => format!("{code}({})", name.replace(' ', "_")),
        None => code.to_string(),
    }
}

/// GDAL's `GRIB_IDS`: section 1's centre, sub-centre, tables, reference
/// time and its significance, production status and data type.
fn identification(s1: &[u8], tables: &Tables) -> String {
    let u16_at = |at: usize| u16::from_be_bytes([s1[at], s1[at + 1]]);
    let (center, subcenter) = (u16_at(5), u16_at(7));
    let mut parts = Vec::new();
    if center != 255 && center != 65535 {
        let name = tables
            .get("grib2_center.csv")
            .and_then(|t| {
                t.find("code", i64::from(center))
                    .map(|r| r.get("name").to_string())
            })
            .filter(|n| !n.is_empty());
        parts.push(named_code("CENTER", center, name));
    }
    if subcenter != 65535 {
        let name = tables.get("grib2_subcenter.csv").and_then(|t| {
            t.rows()
                .find(|r| {
                    r.int("center_code") == i64::from(center)
                        && r.int("subcenter_code") == i64::from(subcenter)
                })
                .map(|r| r.get("name").to_string())
        });
        parts.push(named_code("SUBCENTER", subcenter, name));
    }
    parts.push(format!("MASTER_TABLE={}", s1[9]));
    parts.push(format!("LOCAL_TABLE={}", s1[10]));
    parts.push(format!(
        "SIGNF_REF_TIME={}",
        labelled(s1[11], REF_TIME_SIGNIFICANCE)
    ));
    parts.push(format!(
        "REF_TIME={:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        u16_at(12),
        s1[14],
        s1[15],
        s1[16],
        s1[17],
        s1[18]
    ));
    parts.push(format!(
        "PROD_STATUS={}",
        labelled(s1[19], PRODUCTION_STATUS)
    ));
    parts.push(format!("TYPE={}", labelled(s1[20], DATA_TYPES)));
    parts.join(" ")
}

/// `KEY=code`, then `(name)` when there is one.
fn named_code(key: &str, code: u16, name: Option<String>) -> String {
    match name {
        Some(n) => format!("{key}={code}({n})"),
        None => format!("{key}={code}"),
    }
}

/// GDAL's `GRIB_PDS_TEMPLATE_ASSEMBLED_VALUES`: the numbers of product
/// definition template `template` in section 4's `body` (from octet 10),
/// when the template's map accounts for every byte.
fn assembled(template: u16, body: &[u8]) -> Option<String> {
    let mut map = TEMPLATE_4_0.to_vec();
    let own: &[i8] = match template {
        0 | 8 => &[],
        1 => ENSEMBLE,
        2 | 12 => DERIVED,
        5 | 9 => PROBABILITY,
        _ => return None,
    };
    map.extend_from_slice(own);
    let interval = Interval::of(template).is_some();
    if interval {
        map.extend_from_slice(INTERVAL);
    }
    let mut values = numbers(&map, body)?;
    if interval {
        let at = TEMPLATE_4_0.len() + own.len() + TIME_RANGES_IN_INTERVAL;
        let ranges = usize::try_from(*values.get(at)?).ok()?;
        let last = &INTERVAL[INTERVAL.len() - TIME_RANGE_NUMBERS..];
        for _ in 1..ranges.min(body.len()) {
            map.extend_from_slice(last);
        }
        values = numbers(&map, body)?;
    }
    let used: usize = map.iter().map(|w| usize::from(w.unsigned_abs())).sum();
    (used == body.len()).then(|| {
        values
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// The numbers of `body` by octet widths `map` (negative widths in sign
/// and magnitude); `None` when the body is too short.
fn numbers(map: &[i8], body: &[u8]) -> Option<Vec<i64>> {
    let mut at = 0;
    map.iter()
        .map(|&w| {
            let width = usize::from(w.unsigned_abs());
            let bytes = body.get(at..at + width)?;
            at += width;
            let raw = bytes.iter().fold(0i64, |n, &b| n << 8 | i64::from(b));
            let sign = 1i64 << (8 * width - 1);
            Some(if w < 0 && raw & sign != 0 {
                -(raw & (sign - 1))
            } else {
                raw
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::product::tests::{identification, product_section};
    use super::super::tables::tests::tables_of;
    use super::*;

    /// Tables of a temperature, an accumulation, a local parameter and
    /// two surfaces, in GDAL's layout.
    fn tables() -> Tables {
        tables_of(
            "describe",
            &[
                (
                    "grib2_table_4_2_0_0.csv",
                    "\"subcat\",\"short_name\",\"name\",\"unit\",\"unit_conv\"\n\
                     -1,\"#\",\"#\",\"#\",\"#\"\n0,\"TMP\",\"Temperature\",\"K\",\"UC_K2F\"\n\
                     2,\"\",\"Potential, dry\",\"K\",\"UC_NONE\"\n\
                     192,\"\",\"Reserved for local use\",\"\",\"UC_NONE\"\n",
                ),
                (
                    "grib2_table_4_2_0_1.csv",
                    "subcat,short_name,name,unit,unit_conv\n8,APCP,Total precipitation,kg/(m^2),UC_NONE\n",
                ),
                (
                    "grib2_table_4_2_local_index.csv",
                    "center_code,subcenter_code,filename\n7,,local.csv\n",
                ),
                (
                    "local.csv",
                    "prod,cat,subcat,short_name,name,unit,unit_conv\n0,0,192,\"SNOHF\",\"Snow\",\"W\",UC_NONE\n",
                ),
                (
                    "grib2_table_4_5.csv",
                    "code,short_name,name,unit\n1,SFC,Ground or water surface,-\n103,HTGL,Height above ground,m\n",
                ),
                ("grib2_center.csv", "code,name\n7,\"US-NCEP\"\n"),
                ("grib2_subcenter.csv", "center_code,subcenter_code,name\n7,4,EMC\n"),
            ],
        )
    }

    /// Section 4 (template 4.0, 2 m above ground, forecast hour 30) of
    /// parameter `category`-`number`.
    fn s4(category: u8, number: u8) -> Vec<u8> {
        let mut s = product_section(30);
        s[9] = category;
        s[10] = number;
        s[28] = 255;
        s
    }

    fn item<'a>(d: &'a Description, key: &str) -> &'a str {
        d.items
            .iter()
            .find(|(k, _)| *k == key)
            .map_or("", |(_, v)| v.as_str())
    }

    fn shown(s1: &[u8], s4: &[u8], units: Units) -> Description {
        let product = Product::parse(0, s1, s4).unwrap();
        describe(0, s1, s4, &product, &tables(), units)
    }

    #[test]
    fn temperature_in_both_units() {
        let d = shown(&identification(), &s4(0, 0), Units::Normalized);
        assert_eq!(
            (
                item(&d, "GRIB_ELEMENT"),
                item(&d, "GRIB_UNIT"),
                item(&d, "GRIB_COMMENT")
            ),
            ("TMP", "[C]", "Temperature [C]")
        );
        assert_eq!(d.conversion, Conversion::KelvinToCelsius);
        assert_eq!(item(&d, "GRIB_SHORT_NAME"), "2-HTGL");
        assert_eq!(d.description, "2[m] HTGL=\"Height above ground\"");
        assert_eq!(item(&d, "GRIB_DISCIPLINE"), "0(Meteorological)");
        assert_eq!(
            item(&d, "GRIB_PDS_TEMPLATE_ASSEMBLED_VALUES"),
            "0 0 0 0 0 0 0 1 30 103 0 2 255 0 0"
        );
        let raw = shown(&identification(), &s4(0, 0), Units::Raw);
        assert_eq!(item(&raw, "GRIB_COMMENT"), "Temperature [K]");
        assert_eq!(raw.conversion, Conversion::None);
        // A WMO-only entry: the name for the short name; K not converted,
        // but GDAL's text still says [C].
        let dry = shown(&identification(), &s4(0, 2), Units::Normalized);
        assert_eq!(
            (item(&dry, "GRIB_ELEMENT"), item(&dry, "GRIB_UNIT")),
            ("Potential, dry", "[C]")
        );
        assert_eq!(dry.conversion, Conversion::None);
    }

    #[test]
    fn accumulations_local_and_unknown_parameters() {
        let d = shown(&identification(), &s4(1, 8), Units::Normalized);
        assert_eq!(
            (item(&d, "GRIB_ELEMENT"), item(&d, "GRIB_COMMENT")),
            ("APCP30", "30 hr Total precipitation [kg/(m^2)]")
        );
        let unknown = shown(&identification(), &s4(0, 192), Units::Normalized);
        assert_eq!(
            (
                item(&unknown, "GRIB_ELEMENT"),
                item(&unknown, "GRIB_COMMENT")
            ),
            ("unknown", "(prodType 0, cat 0, subcat 192) [-]")
        );
        let mut ncep = identification();
        ncep[5..9].copy_from_slice(&[0, 7, 0, 4]);
        let local = shown(&ncep, &s4(0, 192), Units::Normalized);
        assert_eq!(
            (item(&local, "GRIB_ELEMENT"), item(&local, "GRIB_UNIT")),
            ("SNOHF", "[W]")
        );
        assert_eq!(
            item(&local, "GRIB_IDS"),
            "CENTER=7(US-NCEP) SUBCENTER=4(EMC) MASTER_TABLE=0 LOCAL_TABLE=0 \
             SIGNF_REF_TIME=0(Analysis) REF_TIME=2024-02-29T06:30:00Z \
             PROD_STATUS=0(Operational) TYPE=0(Analysis)"
        );
    }

    #[test]
    fn levels_and_template_values() {
        assert_eq!(printf_trimmed(50000.0), "50000");
        assert_eq!(printf_trimmed(0.1), "0.1");
        assert_eq!(printf_trimmed(-2.5), "-2.5");
        // Sign and magnitude: scale -1 (0x81), value -3 (0x80000003).
        let mut s = s4(0, 0);
        s[23..28].copy_from_slice(&[0x81, 0x80, 0, 0, 3]);
        assert_eq!(surface(&s, 22), Some(-30.0));
        s[22] = 255;
        assert_eq!(surface(&s, 22), None);
        s[22..28].copy_from_slice(&[200, 0, 0, 0, 0, 0]);
        let d = shown(&identification(), &s, Units::Normalized);
        assert_eq!(item(&d, "GRIB_SHORT_NAME"), "0-RESERVED(200)");
        assert_eq!(d.description, "0[-] RESERVED(200) (Reserved Local use)");
        // Template 4.8 with two time ranges: the second range's six numbers too.
        let mut body = vec![0u8; 49];
        body[32] = 2;
        body.extend_from_slice(&[0; 12]);
        let values = assembled(8, &body).unwrap();
        assert_eq!(values.split(' ').count(), 15 + 14 + 6);
        assert!(assembled(8, &body[..body.len() - 1]).is_none());
        assert!(assembled(9, &body).is_none());
        assert!(assembled(10, &body).is_none());
        assert_eq!(
            numbers(&[-1, -4, 2], &[0x81, 0x80, 0, 0, 5, 1, 2]).unwrap(),
            [-1, -5, 258]
        );
    }
}
