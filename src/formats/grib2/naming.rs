//! What degrib, the library GDAL's GRIB driver is built on, reads of
//! sections 1 and 4 to name a message's parameter ([`Context`]), the rows
//! of GDAL's parameter tables it names them from ([`Entry`]), and the
//! name it gives ([`Parameter`]).

use super::product::Interval;
use super::tables::{Row, Table, Tables};
use std::sync::Arc;

/// A parameter as degrib names it.
#[derive(Debug)]
pub(crate) struct Parameter {
    pub(crate) element: String,
    pub(crate) comment: String,
    pub(crate) unit: String,
    /// `unit_conv` of the table row (degrib's `UC_*` names).
    pub(crate) conversion: String,
}

/// A parameter's row of a parameter table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    /// Its short name (empty in some WMO rows).
    pub(crate) short_name: String,
    /// Its name.
    pub(crate) name: String,
    /// Its unit, without brackets.
    pub(crate) unit: String,
    /// degrib's unit conversion (`UC_*`).
    pub(crate) unit_conv: String,
}

impl Entry {
    /// The short name, or the name when the row has none (as degrib).
    pub(crate) fn short(&self) -> &str {
        if self.short_name.is_empty() {
            &self.name
        } else {
            &self.short_name
        }
    }

    /// The entry of a table row.
    pub(crate) fn of(row: Row<'_>) -> Entry {
        Entry {
            short_name: row.get("short_name").into(),
            name: row.get("name").into(),
            unit: row.get("unit").into(),
            unit_conv: row.get("unit_conv").into(),
        }
    }
}

/// What degrib reads of sections 1 and 4 to name a parameter.
pub(crate) struct Context<'a> {
    pub(crate) discipline: u8,
    pub(crate) center: u16,
    pub(crate) subcenter: u16,
    pub(crate) master_version: u8,
    pub(crate) template: u16,
    pub(crate) s4: &'a [u8],
    /// Length of the statistical process in hours (or months, years:
    /// `range_unit` 3, 4); for other templates the forecast hours.
    pub(crate) length: i64,
    pub(crate) range_unit: u8,
    /// The first fixed surface's value (0 when missing, as in degrib).
    pub(crate) first: f64,
    /// The second fixed surface's value, when there is one.
    pub(crate) second: Option<f64>,
}

impl Context<'_> {
    /// Byte `at` of section 4 (255 past its end).
    pub(crate) fn byte(&self, at: usize) -> u8 {
        self.s4.get(at).copied().unwrap_or(255)
    }

    /// Whether the message is NDFD's.
    pub(crate) fn ndfd(&self) -> bool {
        self.center == 8 && (self.subcenter == 65535 || self.subcenter == 0)
    }

    /// Whether the message is MOS's.
    pub(crate) fn mos(&self) -> bool {
        self.center == 7 && self.subcenter == 14
    }

    /// The type of time increment of the first time range (code table
    /// 4.11), 255 for templates without one.
    pub(crate) fn time_increment(&self) -> u8 {
        Interval::of(self.template).map_or(255, |i| self.byte(i.range_unit_at - 1))
    }

    /// The statistical process of template 4.8's first time range (code
    /// table 4.10; degrib reads it of that template only), else 255.
    pub(crate) fn statistical_process(&self) -> u8 {
        Interval::of(self.template)
            .filter(|_| self.template == 8)
            .map_or(255, |i| self.byte(i.range_unit_at - 2))
    }

    /// The parameter's row of the WMO table of its discipline and
    /// category (none when the master table version is 255, or the row is
    /// reserved for local use).
    pub(crate) fn wmo_row(&self, tables: &Tables) -> Option<Entry> {
        let file = format!("grib2_table_4_2_{}_{}.csv", self.discipline, self.byte(9));
        let table = (self.master_version != 255)
            .then(|| tables.get(&file))
            .flatten()?;
        let row = table
            .find("subcat", i64::from(self.byte(10)))
            .filter(|r| r.get("name") != "Reserved for local use")?;
        Some(Entry::of(row))
    }

    /// The parameter's row of the centre's local table.
    pub(crate) fn local_row(&self, tables: &Tables) -> Option<Entry> {
        let local = local_table(self, tables)?;
        let (d, cat, sub) = (self.discipline, self.byte(9), self.byte(10));
        let row = local.rows().find(|r| {
            r.int("prod") == i64::from(d)
                && r.int("cat") == i64::from(cat)
                && r.int("subcat") == i64::from(sub)
        })?;
        Some(Entry::of(row))
    }

    /// `base` with the length of its time range: `APCP06`, `APCP06m`.
    pub(crate) fn with_length(&self, base: &str) -> String {
        let suffix = match self.range_unit {
            3 => "m",
            4 => "y",
            _ => "",
        };
        format!("{base}{:02}{suffix}", self.length)
    }

    /// `text` after the length of its time range: `06 hr Total precipitation`.
    pub(crate) fn length_text(&self, text: &str) -> String {
        let unit = match self.range_unit {
            3 => "mon",
            4 => "yr",
            _ => "hr",
        };
        format!("{:02} {unit} {text}", self.length)
    }
}

/// The centre's local parameter table (`grib2_table_4_2_local_index.csv`).
pub(crate) fn local_table(ctx: &Context<'_>, tables: &Tables) -> Option<Arc<Table>> {
    let index = tables.get("grib2_table_4_2_local_index.csv")?;
    let file = index
        .rows()
        .find(|r| {
            r.int("center_code") == i64::from(ctx.center)
                && (r.get("subcenter_code").is_empty()
                    || r.int("subcenter_code") == i64::from(ctx.subcenter))
        })?
        .get("filename");
    tables.get(file)
}
