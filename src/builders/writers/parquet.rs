//! The Parquet form of a chunk-reference table (docs/reference-table.md):
//! nine integer columns, row groups of [`table::BATCH_ROWS`] sorted rows in
//! pages of [`PAGE_ROWS`] with a page index, the metadata document in the
//! footer's key-value metadata under `chunkref`.

use std::io::Write;
use std::sync::Arc;

use parquet::basic::{Compression, Encoding};
use parquet::data_type::{Int32Type, Int64Type};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use crate::base::error::{Error, Result};
use crate::index::table::{self, Rows, TableDoc, COLUMNS, DOC_KEY};
use crate::index::Index;

/// Rows per data page. A lookup in a table read on demand decodes the pages
/// whose page-index statistics admit its chunk (one or two per column)
/// rather than its whole row group: a tile of a 22-million-reference table
/// costs 2.5 ms instead of 4 (pages of 20,000 rows) or 13 (whole groups),
/// for a table 40 % larger than with 20,000-row pages when steps repeat
/// (docs/performance.md).
const PAGE_ROWS: usize = 8192;

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
    write_groups(index, out, table::BATCH_ROWS, PAGE_ROWS)
}

/// [`write`] with row groups of `group_rows` rows in pages of `page_rows`.
pub(crate) fn write_groups(
    index: &Index,
    out: impl Write + Send,
    group_rows: usize,
    page_rows: usize,
) -> Result<()> {
    let mut writer = TableWriter::with_pages(&index.source, out, page_rows)?;
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
        Self::with_pages(source, out, PAGE_ROWS)
    }

    /// [`TableWriter::new`] with data pages of `page_rows` rows.
    fn with_pages(source: &str, out: W, page_rows: usize) -> Result<Self> {
        let err = parquet_error(source);
        let schema = Arc::new(parse_message_type(SCHEMA).map_err(&err)?);
        let props = WriterProperties::builder()
            // Not compressed: on delta-packed integers ZSTD saves 4-11 % of
            // the bytes, and the parquet crate makes a ZSTD compressor and
            // decompressor for every column chunk it reads (about a quarter
            // of opening a small table; docs/performance.md).
            .set_compression(Compression::UNCOMPRESSED)
            .set_dictionary_enabled(false)
            .set_encoding(Encoding::DELTA_BINARY_PACKED)
            // The row limit is checked after each write batch.
            .set_data_page_row_count_limit(page_rows)
            .set_write_batch_size(page_rows.clamp(1, 1024))
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::index::readers::parquet_read::MAGIC;

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

    #[test]
    fn column_chunks_are_written_uncompressed() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let bytes = bytes::Bytes::from(to_parquet(&index(), 2));
        let reader = SerializedFileReader::new(bytes).unwrap();
        let meta = reader.metadata();
        assert!(meta.num_row_groups() > 1);
        for g in meta.row_groups() {
            for c in g.columns() {
                assert_eq!(
                    c.compression(),
                    Compression::UNCOMPRESSED,
                    "{}",
                    c.column_path()
                );
            }
        }
    }

    /// `index` as Parquet with row groups of `group_rows` rows.
    pub(crate) fn to_parquet(index: &Index, group_rows: usize) -> Vec<u8> {
        to_parquet_pages(index, group_rows, PAGE_ROWS)
    }

    /// `index` as Parquet with row groups of `group_rows` rows in pages of
    /// `page_rows`.
    pub(crate) fn to_parquet_pages(index: &Index, group_rows: usize, page_rows: usize) -> Vec<u8> {
        let mut out = Vec::new();
        write_groups(index, &mut out, group_rows, page_rows).unwrap();
        assert!(out.starts_with(MAGIC));
        out
    }
}
