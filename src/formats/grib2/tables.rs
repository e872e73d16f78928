//! GDAL's GRIB2 tables: the `grib2_*.csv` files of the installed GDAL's
//! data directory (parameters, code table 4.5 surfaces, centres,
//! sub-centres, local parameter tables), read where GDAL's GRIB driver reads
//! them, so that names, units and comments are the ones GDAL shows.
//!
//! The directory is `GRIB_RESOURCE_DIR` when set (as in GDAL), else where
//! GDAL finds its data files (`GDAL_DATA`, else the data directory GDAL
//! was built with). Each file is read once per process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::base::gdal::cpl::find_data_file;

/// The file GDAL's data directory is found by.
const PROBE: &str = "grib2_table_4_5.csv";

/// The setting that overrides the directory of the tables, as in GDAL.
const RESOURCE_DIR: &str = "GRIB_RESOURCE_DIR";

/// One table: its column names and rows of text fields.
#[derive(Debug, Default)]
pub(crate) struct Table {
    columns: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// Parses CSV text (fields optionally in double quotes, `""` a quote
    /// inside them); the first line names the columns.
    fn parse(text: &str) -> Table {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty()).map(fields);
        Table {
            columns: lines.next().unwrap_or_default(),
            rows: lines.collect(),
        }
    }

    /// The rows, each a function from a column name to its field (empty
    /// when the table has no such column or the row is short).
    pub(crate) fn rows(&self) -> impl Iterator<Item = Row<'_>> {
        self.rows.iter().map(move |fields| Row {
            table: self,
            fields,
        })
    }

    /// The first row whose integer column `key` (read as C's `atoi` reads,
    /// as GDAL compares them) is `value`.
    pub(crate) fn find(&self, key: &str, value: i64) -> Option<Row<'_>> {
        self.rows().find(|r| r.int(key) == value)
    }
}

/// One row of a [`Table`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Row<'a> {
    table: &'a Table,
    fields: &'a [String],
}

impl<'a> Row<'a> {
    /// The field of column `name` ("" when absent).
    pub(crate) fn get(&self, name: &str) -> &'a str {
        self.table
            .columns
            .iter()
            .position(|c| c == name)
            .and_then(|i| self.fields.get(i))
            .map_or("", String::as_str)
    }

    /// The field of column `name` as C's `atoi` reads it: leading blanks,
    /// a sign and the digits that follow; 0 when there are none.
    pub(crate) fn int(&self, name: &str) -> i64 {
        atoi(self.get(name))
    }
}

/// C's `atoi`.
fn atoi(text: &str) -> i64 {
    let t = text.trim_start();
    let (sign, digits) = match t.as_bytes().first() {
        Some(b'-') => (-1, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, t),
    };
    let n = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i64, |n, d| {
            n.saturating_mul(10).saturating_add(i64::from(d - b'0'))
        });
    sign * n
}

/// The fields of one CSV line.
fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.trim_end_matches('\r').chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    out.push(field);
    out
}

/// The GRIB2 tables of one directory, each read on first use.
#[derive(Debug)]
pub(crate) struct Tables {
    /// The directory, or `None` when GDAL's data files were not found.
    dir: Option<PathBuf>,
    /// Tables read so far, by file name (`None`: no such file).
    read: Mutex<HashMap<String, Option<Arc<Table>>>>,
}

impl Tables {
    /// The tables of directory `dir`.
    pub(crate) fn at(dir: Option<PathBuf>) -> Tables {
        Tables {
            dir,
            read: Mutex::new(HashMap::new()),
        }
    }

    /// The tables GDAL's GRIB driver reads (see the module documentation).
    pub(crate) fn gdal() -> &'static Tables {
        static TABLES: OnceLock<Tables> = OnceLock::new();
        TABLES.get_or_init(|| Tables::at(gdal_directory()))
    }

    /// The table in file `name`, `None` when there is no such file (or it
    /// cannot be read).
    pub(crate) fn get(&self, name: &str) -> Option<Arc<Table>> {
        let mut read = self.read.lock().unwrap_or_else(|p| p.into_inner());
        read.entry(name.to_string())
            .or_insert_with(|| {
                let text = std::fs::read_to_string(self.dir.as_ref()?.join(name)).ok()?;
                Some(Arc::new(Table::parse(&text)))
            })
            .clone()
    }
}

/// Where GDAL's GRIB driver finds its tables: `GRIB_RESOURCE_DIR`, else the
/// directory GDAL finds its data file [`PROBE`] in.
fn gdal_directory() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(RESOURCE_DIR) {
        return Some(PathBuf::from(dir));
    }
    find_data_file(PROBE)?.parent().map(Path::to_path_buf)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Tables made of `files` (name, CSV text) in a directory of their own
    /// (one per call: tests run in parallel).
    pub(crate) fn tables_of(tag: &str, files: &[(&str, &str)]) -> Tables {
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "chunkref-grib2-tables-{tag}-{}-{call}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        Tables::at(Some(dir))
    }

    #[test]
    fn csv_fields_and_lookups() {
        assert_eq!(
            fields(r#"0,"TMP","Temp, ""air""",K,"UC_K2F""#),
            ["0", "TMP", "Temp, \"air\"", "K", "UC_K2F"]
        );
        let t = Table::parse("\"code\",\"name\"\n-1,\"#\"\n7,\"Seven\"\n7,\"Again\"\n\n");
        assert_eq!(t.find("code", 7).map(|r| r.get("name")), Some("Seven"));
        assert_eq!(t.find("code", 8).map(|r| r.get("name")), None);
        assert_eq!(t.find("code", -1).map(|r| r.get("other")), Some(""));
        assert_eq!((atoi(" -12x"), atoi(""), atoi("+3")), (-12, 0, 3));
        let tables = tables_of("lookup", &[("a.csv", "code,name\n1,One\n")]);
        assert_eq!(
            tables
                .get("a.csv")
                .unwrap()
                .find("code", 1)
                .unwrap()
                .get("name"),
            "One"
        );
        assert!(tables.get("missing.csv").is_none());
        assert!(Tables::at(None).get("a.csv").is_none());
    }
}
