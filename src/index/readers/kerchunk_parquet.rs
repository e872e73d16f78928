//! Kerchunk Parquet references (formats.md section 3): a directory holding
//! `.zmetadata` (`{"metadata": {key: document}, "record_size": N}`) and, per
//! array, `VAR/refs.K.parq` files of `record_size` rows each, with columns
//! `path`, `offset`, `size`, `raw`. Row `i` of file `K` is the chunk of
//! row-major rank `K * record_size + i`; a row with neither `path` nor `raw`
//! is a chunk that was not written; `size` 0 references the whole file.
//! osml-imagery-io adds `range_path`, `offsets`, `sizes` (lists) for
//! multi-range chunks.

use std::collections::HashMap;

use bytes::Bytes;
use parquet::basic::{LogicalType, Type as PhysicalType};
use parquet::column::reader::ColumnReader;
use parquet::data_type::ByteArray;
use parquet::file::reader::{FileReader, RowGroupReader};
use parquet::file::serialized_reader::SerializedFileReader;
use serde_json::Value;

use super::{json_dialect, parquet_read, thrift_check};
use crate::base::error::{Error, Result};
use crate::index::refs::{FileTable, RawRef};
use crate::index::{Index, Store};
use crate::io::resolve;

/// Name of the consolidated metadata document at the directory's root.
pub const ZMETADATA: &str = ".zmetadata";

/// Reads a Kerchunk Parquet directory: `zmetadata` is its `.zmetadata`,
/// `read_file(relative path)` returns the bytes of a file inside it, or
/// `None` when it does not exist (a record file never written).
///
/// `store_dir` is the directory's name as seen from the index's base (the
/// directory holding it). A relative `path` names a file next to its record
/// file, as GDAL resolves it: `0.bin` in `x/refs.0.parq` becomes
/// `store_dir/x/0.bin`, still relative, so the index's base resolves it.
pub fn read(
    source: &str,
    zmetadata: &[u8],
    store_dir: &str,
    mut read_file: impl FnMut(&str) -> Result<Option<Vec<u8>>>,
) -> Result<Index> {
    let bad = |reason: String| Error::MalformedIndex {
        index: source.to_string(),
        reason,
    };
    let doc: Value = json_dialect::parse(zmetadata, |b| serde_json::from_slice(b))
        .map_err(|e| bad(format!("{ZMETADATA} is not valid JSON: {e}")))?;
    let record_size = doc
        .get("record_size")
        .and_then(Value::as_u64)
        .filter(|&n| n > 0)
        .ok_or_else(|| bad(format!("{ZMETADATA} has no positive integer 'record_size'")))?;
    let Some(Value::Object(metadata)) = doc.get("metadata") else {
        return Err(bad(format!("{ZMETADATA} has no 'metadata' object")));
    };
    let mut docs = HashMap::new();
    for (key, v) in metadata {
        let v = match v {
            // Some writers keep the documents as JSON text.
            Value::String(text) => {
                json_dialect::parse(text.as_bytes(), |b| serde_json::from_slice(b))
                    .map_err(|e| bad(format!("metadata document '{key}' is not valid JSON: {e}")))?
            }
            other => other.clone(),
        };
        docs.insert(key.clone(), v);
    }
    let store = Store::from_documents(docs)?;
    let mut files = FileTable::default();
    let mut rows = store.empty_rows();
    for (a, meta) in store.metas().iter().enumerate() {
        let chunks: u64 = store.grids()[a].iter().product();
        let records = chunks.div_ceil(record_size);
        let record_dir = crate::index::join_key(store_dir, &meta.path);
        let mut intern = |url: String| {
            if resolve::is_relative(&url) {
                files.intern(&format!("{record_dir}/{url}"))
            } else {
                files.intern(&url)
            }
        };
        for k in 0..records {
            let name = crate::index::join_key(&meta.path, &format!("refs.{k}.parq"));
            let Some(bytes) = read_file(&name)? else {
                continue; // never written: its chunks read as the fill value
            };
            let first = k * record_size;
            let wanted = (chunks - first).min(record_size);
            read_record_file(source, &name, Bytes::from(bytes), wanted, &mut |i, r| {
                let r = match r {
                    Record::Missing => return,
                    Record::Inline(b) => RawRef::Inline(b),
                    Record::Whole(url) => RawRef::Whole(intern(url)),
                    Record::Range(url, o, l) => RawRef::Range(intern(url), o, l),
                    Record::Multi(url, ranges) => RawRef::Multi(intern(url), ranges),
                };
                rows[a].push((first + i, r));
            })?;
        }
    }
    Ok(store.into_index(source, files, rows))
}

/// The columns every record file has (as GDAL requires them): name,
/// accepted physical types, what they hold. A column of Arrow's `null`
/// type (all values null) fits any of them.
const REQUIRED_COLUMNS: [(&str, &[PhysicalType], &str); 4] = [
    ("path", &[PhysicalType::BYTE_ARRAY], "a string"),
    (
        "offset",
        &[PhysicalType::INT32, PhysicalType::INT64],
        "an integer",
    ),
    (
        "size",
        &[PhysicalType::INT32, PhysicalType::INT64],
        "an integer",
    ),
    ("raw", &[PhysicalType::BYTE_ARRAY], "binary"),
];

/// One row of a record file.
enum Record {
    Missing,
    Inline(Bytes),
    Whole(String),
    Range(String, u64, u64),
    Multi(String, Vec<(u64, u64)>),
}

/// The values of one column, one entry per row.
enum Column {
    Bytes(Vec<Option<ByteArray>>),
    Ints(Vec<Option<i64>>),
    Lists(Vec<Option<Vec<i64>>>),
}

/// Reads the first `wanted` rows of record file `name`, handing each
/// row's reference to `sink` with its row number.
fn read_record_file(
    source: &str,
    name: &str,
    bytes: Bytes,
    wanted: u64,
    sink: &mut dyn FnMut(u64, Record),
) -> Result<()> {
    let bad = |reason: String| Error::MalformedIndex {
        index: source.to_string(),
        reason: format!("{name}: {reason}"),
    };
    // The footer and every page header walked before the crate parses them.
    if let Some(footer) = parquet_read::footer_in(&bytes) {
        thrift_check::check_struct(footer).map_err(|e| bad(format!("Parquet footer: {e}")))?;
    }
    let reader =
        SerializedFileReader::new(bytes.clone()).map_err(|e| bad(format!("Parquet: {e}")))?;
    for (g, group) in reader.metadata().row_groups().iter().enumerate() {
        let spans = parquet_read::column_spans(group).ok_or_else(|| {
            bad(format!(
                "row group {g}: a column chunk has a negative offset"
            ))
        })?;
        for (from, to) in spans {
            let chunk = usize::try_from(from)
                .ok()
                .zip(usize::try_from(to).ok())
                .and_then(|(from, to)| bytes.get(from..to))
                .ok_or_else(|| bad(format!("row group {g} lies past the end of the file")))?;
            thrift_check::check_pages(chunk)
                .map_err(|e| bad(format!("row group {g}, column chunk at byte {from}: {e}")))?;
        }
    }
    let descr = reader.metadata().file_metadata().schema_descr_ptr();
    let find = |column: &str| {
        descr
            .columns()
            .iter()
            .position(|c| c.path().parts().first().map(String::as_str) == Some(column))
    };
    for (column, kinds, what) in REQUIRED_COLUMNS {
        let problem = match find(column).map(|i| descr.column(i)) {
            None => "is missing",
            Some(c) if c.max_rep_level() > 0 => "is a list",
            Some(c) if c.logical_type_ref() == Some(&LogicalType::Unknown) => continue, // all null
            Some(c) if !kinds.contains(&c.physical_type()) => "has another type",
            Some(_) => continue,
        };
        return Err(Error::MalformedIndex {
            index: source.to_string(),
            reason: format!(
                "{name} has an unexpected field structure: column '{column}' {problem}, \
                 expected {what} (Kerchunk Parquet record files have columns path, offset, \
                 size and raw)"
            ),
        });
    }
    let mut row = 0u64;
    for g in 0..reader.num_row_groups() {
        let group = reader
            .get_row_group(g)
            .map_err(|e| bad(format!("Parquet: {e}")))?;
        let n = group.metadata().num_rows() as usize;
        let column = |c: &str| -> Result<Option<Column>> {
            let Some(i) = find(c) else { return Ok(None) };
            read_column(group.as_ref(), i, n)
                .map(Some)
                .map_err(|e| bad(format!("column '{c}': {e}")))
        };
        let (path, offset, size) = (column("path")?, column("offset")?, column("size")?);
        let (raw, range_path) = (column("raw")?, column("range_path")?);
        let (offsets, sizes) = (column("offsets")?, column("sizes")?);
        let text = |b: &ByteArray| -> Result<String> {
            std::str::from_utf8(b.data())
                .map(str::to_string)
                .map_err(|_| bad("a path is not UTF-8".into()))
        };
        for i in 0..n {
            if row >= wanted {
                break;
            }
            let bytes_at = |c: &Option<Column>| match c {
                Some(Column::Bytes(v)) => v.get(i).cloned().flatten(),
                _ => None,
            };
            let int_at = |c: &Option<Column>| match c {
                Some(Column::Ints(v)) => v.get(i).copied().flatten(),
                _ => None,
            };
            let list_at = |c: &Option<Column>| match c {
                Some(Column::Lists(v)) => v.get(i).cloned().flatten(),
                _ => None,
            };
            let record = if let Some(b) = bytes_at(&raw) {
                Record::Inline(Bytes::copy_from_slice(b.data()))
            } else if let Some(p) = bytes_at(&path) {
                let (o, l) = (int_at(&offset).unwrap_or(0), int_at(&size).unwrap_or(0));
                if o < 0 || l < 0 {
                    return Err(bad(format!("row {row}: negative offset or size")));
                }
                if l == 0 {
                    Record::Whole(text(&p)?)
                } else {
                    Record::Range(text(&p)?, o as u64, l as u64)
                }
            } else if let Some(offs) = list_at(&offsets).filter(|o| !o.is_empty()) {
                let lens = list_at(&sizes).unwrap_or_default();
                let url = bytes_at(&range_path)
                    .ok_or_else(|| bad(format!("row {row}: 'offsets' without 'range_path'")))?;
                if lens.len() != offs.len() || offs.iter().chain(&lens).any(|&v| v < 0) {
                    return Err(bad(format!(
                        "row {row}: 'offsets' and 'sizes' differ in length or hold negative values"
                    )));
                }
                let ranges = offs.iter().zip(&lens).map(|(&o, &l)| (o as u64, l as u64));
                Record::Multi(text(&url)?, ranges.collect())
            } else {
                Record::Missing
            };
            sink(row, record);
            row += 1;
        }
    }
    if row < wanted {
        return Err(bad(format!(
            "{row} rows, {wanted} expected (one per chunk of the record)"
        )));
    }
    Ok(())
}

/// Reads column `i` of a row group: byte arrays, integers, or lists of
/// integers, one entry per row (`None` for nulls).
fn read_column(group: &dyn RowGroupReader, i: usize, n: usize) -> parquet::errors::Result<Column> {
    let descr = group.metadata().column(i).column_descr_ptr();
    let (max_def, max_rep) = (descr.max_def_level(), descr.max_rep_level());
    let (mut def, mut rep) = (Vec::new(), Vec::new());
    macro_rules! levels_and_values {
        ($reader:expr) => {{
            let mut r = $reader;
            let mut values = Vec::new();
            let mut records = 0;
            while records < n {
                let (got, _, _) =
                    r.read_records(n - records, Some(&mut def), Some(&mut rep), &mut values)?;
                if got == 0 {
                    break;
                }
                records += got;
            }
            values
        }};
    }
    // Spreads leaf values over rows: one value per row for flat columns,
    // the row's defined elements for lists (an empty or null list is None).
    fn rows_of<T>(values: Vec<T>, def: &[i16], rep: &[i16], max_def: i16) -> Vec<Option<Vec<T>>> {
        if def.is_empty() {
            return values.into_iter().map(|v| Some(vec![v])).collect();
        }
        let mut values = values.into_iter();
        let mut out: Vec<Vec<T>> = Vec::new();
        for (k, &d) in def.iter().enumerate() {
            if rep.get(k).is_none_or(|&r| r == 0) {
                out.push(Vec::new());
            }
            if d == max_def {
                if let (Some(v), Some(row)) = (values.next(), out.last_mut()) {
                    row.push(v);
                }
            }
        }
        out.into_iter()
            .map(|v| (!v.is_empty()).then_some(v))
            .collect()
    }
    // Integer values: one per row, or a list per row in list columns.
    fn ints(values: Vec<i64>, def: &[i16], rep: &[i16], max_def: i16, list: bool) -> Column {
        let rows = rows_of(values, def, rep, max_def);
        if list {
            Column::Lists(rows)
        } else {
            Column::Ints(
                rows.into_iter()
                    .map(|v| v.and_then(|mut v| v.pop()))
                    .collect(),
            )
        }
    }
    let column = match group.get_column_reader(i)? {
        ColumnReader::ByteArrayColumnReader(r) => {
            let values = levels_and_values!(r);
            Column::Bytes(
                rows_of(values, &def, &rep, max_def)
                    .into_iter()
                    .map(|v| v.and_then(|mut v| v.pop()))
                    .collect(),
            )
        }
        ColumnReader::Int64ColumnReader(r) => {
            let values = levels_and_values!(r);
            ints(values, &def, &rep, max_def, max_rep > 0)
        }
        ColumnReader::Int32ColumnReader(r) => {
            let values = levels_and_values!(r).into_iter().map(i64::from).collect();
            ints(values, &def, &rep, max_def, max_rep > 0)
        }
        _ => {
            return Err(parquet::errors::ParquetError::General(
                "expected strings, binary or integers".into(),
            ))
        }
    };
    Ok(column)
}
