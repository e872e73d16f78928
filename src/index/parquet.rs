//! The Parquet form of a chunk-reference table (docs/reference-table.md):
//! nine integer columns, row groups of [`table::BATCH_ROWS`] sorted rows, the
//! metadata document in the footer's key-value metadata under `chunkref`.

use std::io::Write;
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, Type as Physical, ZstdLevel};
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::{DataType, Int32Type, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::FileReader;
use parquet::file::serialized_reader::SerializedFileReader;
use parquet::file::statistics::Statistics;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use super::stack::TimeOptions;
use super::table::{self, Rows, TableDoc, TableReader, COLUMNS, DOC_KEY};
use super::Index;
use crate::error::{Error, Result};

/// First (and last) bytes of every Parquet file.
pub const MAGIC: &[u8] = b"PAR1";

/// The table schema, columns in [`COLUMNS`] order.
const SCHEMA: &str = "message chunkref_table {
    REQUIRED INT32 array (INTEGER(16, false));
    REQUIRED INT32 time (INTEGER(32, false));
    REQUIRED INT32 band (INTEGER(32, false));
    REQUIRED INT32 y_chunk (INTEGER(32, false));
    REQUIRED INT32 x_chunk (INTEGER(32, false));
    REQUIRED INT32 file (INTEGER(32, false));
    REQUIRED INT64 offset (INTEGER(64, false));
    OPTIONAL INT64 length (INTEGER(64, false));
    REQUIRED INT32 part (INTEGER(16, false));
}";

fn parquet_error(source: &str) -> impl Fn(parquet::errors::ParquetError) -> Error + '_ {
    move |e| Error::MalformedIndex {
        index: source.to_string(),
        reason: format!("Parquet: {e}"),
    }
}

/// Writes `index` as a Parquet reference table to `out`.
pub fn write(index: &Index, out: impl Write + Send) -> Result<()> {
    write_groups(index, out, table::BATCH_ROWS)
}

/// [`write`] with row groups of `group_rows` rows.
fn write_groups(index: &Index, out: impl Write + Send, group_rows: usize) -> Result<()> {
    let mut writer = TableWriter::new(&index.source, out)?;
    let doc = table::rows_of(index, group_rows, |rows| writer.write(rows))?;
    writer.finish(&doc)
}

/// A Parquet reference table being written, one row group per batch of
/// rows (batches in table order), the document last (in the footer).
pub struct TableWriter<W: Write + Send> {
    source: String,
    writer: SerializedFileWriter<W>,
}

impl<W: Write + Send> TableWriter<W> {
    /// Starts the table `source` (named in messages) on `out`.
    pub fn new(source: &str, out: W) -> Result<Self> {
        let err = parquet_error(source);
        let schema = Arc::new(parse_message_type(SCHEMA).map_err(&err)?);
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).map_err(&err)?))
            .set_dictionary_enabled(false)
            .set_encoding(Encoding::DELTA_BINARY_PACKED)
            .set_created_by(format!("chunkref {}", env!("CARGO_PKG_VERSION")))
            .build();
        let writer = SerializedFileWriter::new(out, schema, Arc::new(props)).map_err(&err)?;
        Ok(TableWriter {
            source: source.to_string(),
            writer,
        })
    }

    /// Writes `rows` as one row group (with min/max statistics per column).
    pub fn write(&mut self, rows: &Rows) -> Result<()> {
        let err = parquet_error(&self.source);
        let mut group = self.writer.next_row_group().map_err(&err)?;
        let mut c = 0;
        while let Some(mut col) = group.next_column().map_err(&err)? {
            let as_i32 = |v: &[u32]| v.iter().map(|&x| x as i32).collect::<Vec<_>>();
            let as_i32_16 = |v: &[u16]| v.iter().map(|&x| i32::from(x)).collect::<Vec<_>>();
            match COLUMNS[c] {
                "array" => write_i32(&mut col, &as_i32_16(&rows.array), None),
                "time" => write_i32(&mut col, &as_i32(&rows.time), None),
                "band" => write_i32(&mut col, &as_i32(&rows.band), None),
                "y_chunk" => write_i32(&mut col, &as_i32(&rows.y), None),
                "x_chunk" => write_i32(&mut col, &as_i32(&rows.x), None),
                "file" => write_i32(&mut col, &as_i32(&rows.file), None),
                "offset" => {
                    let v: Vec<i64> = rows.offset.iter().map(|&x| x as i64).collect();
                    col.typed::<Int64Type>()
                        .write_batch(&v, None, None)
                        .map(drop)
                }
                "length" => {
                    let def: Vec<i16> =
                        rows.length.iter().map(|l| i16::from(l.is_some())).collect();
                    let v: Vec<i64> = rows.length.iter().flatten().map(|&x| x as i64).collect();
                    col.typed::<Int64Type>()
                        .write_batch(&v, Some(&def), None)
                        .map(drop)
                }
                _ => write_i32(&mut col, &as_i32_16(&rows.part), None),
            }
            .map_err(&err)?;
            col.close().map_err(&err)?;
            c += 1;
        }
        group.close().map_err(&err)?;
        Ok(())
    }

    /// Puts `doc` in the footer and finishes the file.
    pub fn finish(mut self, doc: &TableDoc) -> Result<()> {
        let text = table::doc_text(&self.source, doc)?;
        self.writer
            .append_key_value_metadata(KeyValue::new(DOC_KEY.to_string(), text));
        self.writer.close().map_err(parquet_error(&self.source))?;
        Ok(())
    }
}

fn write_i32(
    col: &mut parquet::file::writer::SerializedColumnWriter<'_>,
    values: &[i32],
    def: Option<&[i16]>,
) -> parquet::errors::Result<()> {
    col.typed::<Int32Type>()
        .write_batch(values, def, None)
        .map(drop)
}

/// Reads a Parquet reference table; `source` names it in messages. With
/// `time` options, row groups of time-stack arrays whose `time` statistics
/// lie outside the chosen steps are not read.
pub fn read(source: &str, bytes: Bytes, time: &TimeOptions) -> Result<Index> {
    let err = parquet_error(source);
    let bad = |reason: String| Error::MalformedIndex {
        index: source.to_string(),
        reason,
    };
    let reader = SerializedFileReader::new(bytes).map_err(&err)?;
    let meta = reader.metadata();
    let doc = meta
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == DOC_KEY))
        .and_then(|k| k.value.as_deref())
        .ok_or_else(|| {
            bad(format!(
                "no '{DOC_KEY}' entry in the Parquet key-value metadata: not a chunkref \
                 reference table (docs/reference-table.md)"
            ))
        })?;
    let mut table = TableReader::new(source, doc)?;
    let descr = meta.file_metadata().schema_descr();
    let mut columns = [0usize; COLUMNS.len()];
    for (slot, name) in columns.iter_mut().zip(COLUMNS) {
        let (i, col) = descr
            .columns()
            .iter()
            .enumerate()
            .find(|(_, c)| c.path().string() == name)
            .ok_or_else(|| {
                bad(format!(
                    "missing column '{name}' (a reference table has columns {})",
                    COLUMNS.join(", ")
                ))
            })?;
        let integer = matches!(col.physical_type(), Physical::INT32 | Physical::INT64);
        if !integer || col.max_rep_level() != 0 {
            let want = if name == "offset" || name == "length" {
                "INT64"
            } else {
                "INT32"
            };
            return Err(bad(format!(
                "column '{name}' is {}{}, expected a flat {want} column",
                col.physical_type(),
                if col.max_rep_level() > 0 {
                    " (repeated)"
                } else {
                    ""
                }
            )));
        }
        *slot = i;
    }
    let window = if time.is_empty() {
        None
    } else {
        let metas: Vec<_> = table.metas().iter().collect();
        Some(time.steps(source, &metas)?)
    };
    let mut first_row = 0u64;
    for g in 0..reader.num_row_groups() {
        let group = reader.get_row_group(g).map_err(&err)?;
        let n = usize::try_from(group.metadata().num_rows()).unwrap_or(0);
        if let Some((lo, hi)) = window {
            let range = |c: usize| min_max(group.metadata().column(columns[c]).statistics()?);
            if let (Some((a0, a1)), Some((t0, t1))) = (range(0), range(1)) {
                let all_stacks = (a0..=a1).all(|t| table.time_axis(t as usize));
                if all_stacks && (t1 < lo || t0 > hi) {
                    table.skip(n as u64);
                    first_row += n as u64;
                    continue;
                }
            }
        }
        let column = |c: usize| -> Result<Vec<Option<u64>>> {
            let values = read_integers(group.get_column_reader(columns[c]).map_err(&err)?, n)
                .map_err(&err)?;
            if values.len() != n {
                return Err(bad(format!(
                    "row group {g}: column '{}' has {} values for {n} rows",
                    COLUMNS[c],
                    values.len()
                )));
            }
            Ok(values)
        };
        // A required value that fits `max`: the error names column and row.
        let narrow = |c: usize, max: u64| -> Result<Vec<u64>> {
            column(c)?
                .into_iter()
                .enumerate()
                .map(|(r, v)| match v {
                    Some(v) if v <= max => Ok(v),
                    Some(v) => Err(bad(format!(
                        "row {}: column '{}' holds {v}, above its largest value {max}",
                        first_row + r as u64,
                        COLUMNS[c]
                    ))),
                    None => Err(bad(format!(
                        "row {}: column '{}' is null",
                        first_row + r as u64,
                        COLUMNS[c]
                    ))),
                })
                .collect()
        };
        let u16s = |c| {
            Ok::<_, Error>(
                narrow(c, u16::MAX.into())?
                    .into_iter()
                    .map(|v| v as u16)
                    .collect(),
            )
        };
        let u32s = |c| {
            Ok::<_, Error>(
                narrow(c, u32::MAX.into())?
                    .into_iter()
                    .map(|v| v as u32)
                    .collect(),
            )
        };
        let rows = Rows {
            array: u16s(0)?,
            time: u32s(1)?,
            band: u32s(2)?,
            y: u32s(3)?,
            x: u32s(4)?,
            file: u32s(5)?,
            offset: narrow(6, u64::MAX)?,
            length: column(7)?,
            part: u16s(8)?,
        };
        table.push(&rows)?;
        first_row += n as u64;
    }
    Ok(table.finish())
}

/// The minimum and maximum of an integer column chunk's statistics (INT32
/// as unsigned 32-bit values).
fn min_max(stats: &Statistics) -> Option<(u64, u64)> {
    match stats {
        Statistics::Int32(v) => Some((
            u64::from(*v.min_opt()? as u32),
            u64::from(*v.max_opt()? as u32),
        )),
        Statistics::Int64(v) => Some((*v.min_opt()? as u64, *v.max_opt()? as u64)),
        _ => None,
    }
}

/// Reads the `n` values of one integer column chunk as unsigned 64-bit
/// integers (INT32 values as their unsigned 32-bit pattern), `None` for nulls.
fn read_integers(column: ColumnReader, n: usize) -> parquet::errors::Result<Vec<Option<u64>>> {
    match column {
        ColumnReader::Int32ColumnReader(r) => Ok(read_values(r, n)?
            .into_iter()
            .map(|v| v.map(|x| u64::from(x as u32)))
            .collect()),
        ColumnReader::Int64ColumnReader(r) => Ok(read_values(r, n)?
            .into_iter()
            .map(|v| v.map(|x| x as u64))
            .collect()),
        _ => Err(parquet::errors::ParquetError::General(
            "not an integer column".into(),
        )),
    }
}

/// Reads all `n` values of one column chunk, nulls as `None`.
fn read_values<T: DataType>(
    mut reader: ColumnReaderImpl<T>,
    n: usize,
) -> parquet::errors::Result<Vec<Option<T::T>>>
where
    T::T: Copy,
{
    let (mut values, mut def) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut records = 0;
    while records < n {
        let (read, _, _) = reader.read_records(n - records, Some(&mut def), None, &mut values)?;
        if read == 0 {
            break;
        }
        records += read;
    }
    if def.is_empty() {
        // A required column has no definition levels.
        return Ok(values.into_iter().map(Some).collect());
    }
    let mut values = values.into_iter();
    Ok(def
        .iter()
        .map(|&d| if d > 0 { values.next() } else { None })
        .collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::index::to_kerchunk::to_kerchunk;

    const ZARRAY: &str = r#"{\"shape\": [2, 4, 6], \"chunks\": [1, 2, 3], \"dtype\": \"<u2\", \"fill_value\": 0, \"compressor\": null, \"filters\": null, \"order\": \"C\", \"zarr_format\": 2}"#;

    /// An index with every reference form (range, whole file, multi-range,
    /// inline) in a time-axis array and a plain one.
    pub(crate) fn index() -> Index {
        let doc = format!(
            r#"{{"version": 1, "refs": {{".zgroup": "{{\"zarr_format\": 2}}", "a/.zarray": "{ZARRAY}",
              "a/.zattrs": "{{\"_ARRAY_DIMENSIONS\": [\"time\", \"y\", \"x\"]}}",
              "a/0.0.0": ["/d/f.bin", 10, 12], "a/0.1.1": ["/d/g.bin"],
              "a/1.0.1": ["/d/f.bin", [[100, 4], [50, 8], [0, 2]]],
              "a/1.1.0": "base64:AAECAwQFBgcICQoL", "b/.zarray": "{ZARRAY}", "b/1.1.1": ["rel.bin", 7, 5]}}}}"#
        );
        Index::from_kerchunk_json("t.json", doc.as_bytes(), &[]).unwrap()
    }

    fn to_parquet(index: &Index) -> Bytes {
        let mut out = Vec::new();
        write(index, &mut out).unwrap();
        Bytes::from(out)
    }

    #[test]
    fn every_reference_form_round_trips() {
        let original = index();
        let bytes = to_parquet(&original);
        assert!(bytes.starts_with(MAGIC));
        let back = read("t.parquet", bytes, &TimeOptions::default()).unwrap();
        assert_eq!(to_kerchunk(&back), to_kerchunk(&original));
        assert_eq!(back.array("a").unwrap().refs.len(), 4);
        assert!(back.warnings.is_empty(), "{:?}", back.warnings);
    }

    #[test]
    fn time_options_skip_row_groups_outside_the_steps() {
        let original = index();
        let mut out = Vec::new();
        write_groups(&original, &mut out, 2).unwrap();
        let bytes = Bytes::from(out);
        let step = |s: &str| TimeOptions {
            step: Some(s.into()),
            ..TimeOptions::default()
        };
        // Array `b` has no time axis: its row group is always read.
        let one = read("t.parquet", bytes.clone(), &step("1")).unwrap();
        let a = one.array("a").unwrap();
        assert_eq!(
            (a.meta.shape[0], a.refs.len()),
            (2, 2),
            "rows of step 1 only"
        );
        assert_eq!(one.array("b").unwrap().refs.len(), 1);
        // Step 0 skips the group holding the first parts of step 1's
        // multi-range chunk; its last part, in a group that is read, is dropped.
        let zero = read("t.parquet", bytes.clone(), &step("0")).unwrap();
        assert_eq!(
            zero.array("a").unwrap().refs.len(),
            3,
            "2 of step 0 and the inline one"
        );
        let e = read("t.parquet", bytes, &step("2"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("outside the 2 time steps"), "{e}");
    }

    /// Rows of the table of `index()`, to be altered.
    fn rows() -> (TableReader, Rows) {
        let original = index();
        let mut all = Rows::default();
        let doc = table::rows_of(&original, table::BATCH_ROWS, |r| {
            all = r.clone();
            Ok(())
        })
        .unwrap();
        let text = serde_json::to_string(&doc).unwrap();
        (TableReader::new("t.parquet", &text).unwrap(), all)
    }

    #[test]
    fn bad_rows_are_named() {
        type Alter = fn(&mut Rows);
        let cases: [(&str, Alter); 5] = [
            ("outside the chunk grid", |r| r.y[0] = 2),
            ("array 9 does not exist", |r| r.array[0] = 9),
            ("file 7 does not exist", |r| r.file[0] = 7),
            ("does not follow part", |r| r.part[0] = 1),
            ("non-zero offset", |r| r.length[0] = None),
        ];
        for (want, alter) in cases {
            let (mut reader, mut r) = rows();
            alter(&mut r);
            let e = reader.push(&r).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("row 0"), "{want}: {e}");
        }
        let e = TableReader::new(
            "t.parquet",
            r#"{"chunkref_table": 1, "arrays": [{"path": "zz"}], "files": [], "metadata": {}}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("array 'zz'"), "{e}");
    }
}
