//! Reading the Parquet form of a chunk-reference table by byte range: the
//! footer first (schema, row-group statistics, the metadata document), then
//! row groups, each fetched in one read.
//!
//! A table of at most `eager_rows` rows is read whole at open. A larger one
//! stays in its file: a chunk lookup visits only the row groups whose
//! min/max statistics of (`array`, `time`, `band`, `y_chunk`, `x_chunk`)
//! can hold the chunk, and in each decodes only the pages whose statistics
//! can (`parquet_spans`), keeping the last few decoded row spans.

use std::collections::{BTreeSet, VecDeque};
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::{Buf, Bytes};
use parquet::basic::Type as Physical;

use crate::index::readers::thrift_check;
use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::DataType;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader, RowGroupMetaData};
use parquet::file::properties::ReaderProperties;
use parquet::file::reader::{ChunkReader, Length, RowGroupReader};
use parquet::file::serialized_reader::SerializedRowGroupReader;
use parquet::file::statistics::Statistics;

use crate::base::error::{contain_panics, Error, Result};
use crate::index::readers::parquet_spans::GroupSpans;
use crate::index::readers::stack::TimeOptions;
use crate::index::refs::{ChunkTable, PageSource, RawRef};
use crate::index::table::{RowChecker, RowSink, Rows, TableDoc, TableReader, COLUMNS, DOC_KEY};
use crate::index::Index;
use crate::io::index_file::IndexFile;

/// First (and last) bytes of every Parquet file.
pub const MAGIC: &[u8] = b"PAR1";

/// Decoded row spans kept by a table read on demand.
const CACHED_SPANS: usize = 16;
/// Rows read past a span at a time to find the last parts of a multi-range
/// chunk that continues beyond it.
const LEAD_ROWS: usize = 1024;
/// Key columns (of [`COLUMNS`]): `array`, `time`, `band`, `y_chunk`, `x_chunk`.
const KEYS: usize = 5;
/// The `part` column (of [`COLUMNS`]).
const PART: usize = 8;
/// Most rows of one row group decoded (a hostile footer cannot make a read
/// allocate more than this many values per column).
const MAX_GROUP_ROWS: usize = 1 << 24;
/// Bytes read at once from the end of a remote table: the footer and, in
/// most tables, the page index before it, in one request instead of three.
const REMOTE_TAIL: usize = 2 << 20;
/// Largest page index read whole for a remote table.
const MAX_PAGE_INDEX: usize = 64 << 20;
/// Bytes read from the end of the file for the footer in one request.
const FOOTER_PREFETCH: usize = 16 << 10;

/// Reads a Parquet reference table from `file`; `source` names it in
/// messages. With `time` options, row groups of time-stack arrays whose
/// `time` statistics lie outside the chosen steps are not read. A table of
/// more than `eager_rows` rows is read on demand.
pub fn read(
    source: &str,
    file: Arc<dyn IndexFile>,
    time: &TimeOptions,
    eager_rows: u64,
) -> Result<Index> {
    read_parts(source, vec![file], time, eager_rows)
}

/// Reads a table stored as `parts` (Parquet files holding rows of one
/// table, in order; the last one's document, a superset of the others',
/// describes the whole table, docs/reference-table.md "Growing
/// collections"), as [`read`] reads one file.
pub fn read_parts(
    source: &str,
    parts: Vec<Arc<dyn IndexFile>>,
    time: &TimeOptions,
    eager_rows: u64,
) -> Result<Index> {
    let single = parts.len() == 1;
    let open = |file: Arc<dyn IndexFile>| {
        // A part is named by its own file; a one-file table as given.
        let name = if single { source } else { file.name() }.to_string();
        contain_panics(&name, "the footer", || Table::open(&name, file))
    };
    // The footers of several parts are read at once (a remote collection
    // costs one round trip per part).
    let tables: Vec<Table> = if single {
        parts.into_iter().map(open).collect::<Result<_>>()?
    } else {
        use rayon::prelude::*;
        crate::base::process::decoding_pool()
            .install(|| parts.into_par_iter().map(open).collect::<Result<_>>())?
    };
    let Some(last) = tables.last() else {
        return Err(malformed(source, "a table of no parts".into()));
    };
    let mut reader = TableReader::new(source, last.doc()?)?;
    let rows: u64 = tables
        .iter()
        .map(|t| u64::try_from(t.metadata.file_metadata().num_rows()).unwrap_or(0))
        .sum();
    if rows > eager_rows {
        let check = reader.checker();
        let parts: Vec<Pages> = tables
            .into_iter()
            .map(|table| Pages::new(table, Arc::clone(&check)))
            .collect();
        let pages: Arc<dyn PageSource> = match <[Pages; 1]>::try_from(parts) {
            Ok([one]) => Arc::new(one),
            Err(parts) => Arc::new(PartPages(parts)),
        };
        return Ok(reader.finish_paged(|_| pages));
    }
    let window = if time.is_empty() {
        None
    } else {
        let metas: Vec<_> = reader.metas().iter().collect();
        Some(time.steps(source, &metas)?)
    };
    for table in &tables {
        for g in 0..table.groups() {
            if let (Some((lo, hi)), Some((a0, a1)), Some((t0, t1))) =
                (window, table.range(g, 0), table.range(g, 1))
            {
                let all_stacks = (a0..=a1).all(|t| reader.time_axis(t as usize));
                if all_stacks && (t1 < lo || t0 > hi) {
                    reader.skip(table.group_rows(g));
                    continue;
                }
            }
            reader.push(&table.rows(g, 0..table.group_len(g))?)?;
        }
    }
    Ok(reader.finish())
}

/// The metadata document of the Parquet table `file` (`source` names it
/// in messages), read from its footer alone.
pub fn read_doc(source: &str, file: Arc<dyn IndexFile>) -> Result<TableDoc> {
    Ok(read_footer(source, file)?.0)
}

/// The metadata document of the Parquet table `file` and the first time
/// step its rows hold (from the row groups' statistics; `None` without
/// rows), read from its footer alone.
pub fn read_footer(source: &str, file: Arc<dyn IndexFile>) -> Result<(TableDoc, Option<u64>)> {
    let table = contain_panics(source, "the footer", || Table::open(source, file))?;
    let doc = serde_json::from_str(table.doc()?).map_err(|e| malformed(source, e.to_string()))?;
    let first_step = (0..table.groups())
        .filter_map(|g| table.range(g, 1).map(|(lo, _)| lo))
        .min();
    Ok((doc, first_step))
}

/// The parts of a table read on demand: a chunk's reference is in the
/// first part whose row groups hold it.
#[derive(Debug)]
struct PartPages(Vec<Pages>);

impl PageSource for PartPages {
    fn lookup(&self, array: usize, positions: &[u64]) -> Result<Vec<Option<RawRef>>> {
        let mut found: Vec<Option<RawRef>> = vec![None; positions.len()];
        for part in &self.0 {
            let missing: Vec<usize> = (0..positions.len())
                .filter(|&i| found[i].is_none())
                .collect();
            if missing.is_empty() {
                break;
            }
            let wanted: Vec<u64> = missing.iter().map(|&i| positions[i]).collect();
            for (i, r) in missing.into_iter().zip(part.lookup(array, &wanted)?) {
                found[i] = r;
            }
        }
        Ok(found)
    }
}

/// An opened Parquet table: its file and footer.
#[derive(Debug)]
struct Table {
    source: String,
    file: Arc<dyn IndexFile>,
    metadata: ParquetMetaData,
    /// Leaf column number of each of [`COLUMNS`].
    columns: [usize; COLUMNS.len()],
    /// Table row number of each group's first row.
    first_rows: Vec<u64>,
    /// A remote table's page index (of every group), read in one request
    /// the first time a lookup needs it; `None` for a local table (its
    /// groups' page indexes are read one by one) or when it cannot be read.
    page_index: OnceLock<Option<Window>>,
    /// The end of a remote table, read at open with the footer.
    tail: Option<Window>,
}

impl Table {
    /// Reads the footer of `file` and checks the columns.
    fn open(source: &str, file: Arc<dyn IndexFile>) -> Result<Table> {
        let err = parquet_error(source);
        let bad = |reason: String| malformed(source, reason);
        // The footer from one read of the file's end; a footer longer than
        // that end is read as the crate reads it.
        let remote = !file.is_local();
        let tail_len = if remote { REMOTE_TAIL } else { FOOTER_PREFETCH };
        let (metadata, tail) = match footer_from_tail(source, &file, tail_len)? {
            Some((metadata, tail)) => (metadata, remote.then_some(tail)),
            None => {
                check_footer(source, &file)?;
                (
                    ParquetMetaDataReader::new()
                        .with_prefetch_hint(Some(FOOTER_PREFETCH))
                        .parse_and_finish(&Whole(Arc::clone(&file)))
                        .map_err(&err)?,
                    None,
                )
            }
        };
        let descr = metadata.file_metadata().schema_descr();
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
        let first_rows = metadata
            .row_groups()
            .iter()
            .scan(0u64, |next, g| {
                let first = *next;
                *next += u64::try_from(g.num_rows()).unwrap_or(0);
                Some(first)
            })
            .collect();
        Ok(Table {
            source: source.to_string(),
            file,
            metadata,
            columns,
            first_rows,
            page_index: OnceLock::new(),
            tail,
        })
    }

    /// The metadata document.
    fn doc(&self) -> Result<&str> {
        self.metadata
            .file_metadata()
            .key_value_metadata()
            .and_then(|kv| kv.iter().find(|k| k.key == DOC_KEY))
            .and_then(|k| k.value.as_deref())
            .ok_or_else(|| {
                malformed(
                    &self.source,
                    format!(
                        "no '{DOC_KEY}' entry in the Parquet key-value metadata: not a chunkref \
                         reference table (docs/reference-table.md)"
                    ),
                )
            })
    }

    fn groups(&self) -> usize {
        self.metadata.num_row_groups()
    }

    fn group_rows(&self, g: usize) -> u64 {
        u64::try_from(self.metadata.row_group(g).num_rows()).unwrap_or(0)
    }

    /// Rows in group `g`, as an index.
    fn group_len(&self, g: usize) -> usize {
        usize::try_from(self.group_rows(g)).unwrap_or(usize::MAX)
    }

    /// Where in group `g` each key can lie, from its page index.
    fn spans(&self, g: usize) -> GroupSpans {
        let keys: Vec<usize> = self.columns[..KEYS].to_vec();
        let held = self.page_index.get_or_init(|| self.remote_page_index());
        // A page index the crate cannot decode leaves the whole group to read.
        contain_panics(&self.source, "a page index", || {
            Ok(match held {
                Some(held) => GroupSpans::read(held, &self.metadata, g, &keys),
                None => GroupSpans::read(&Whole(Arc::clone(&self.file)), &self.metadata, g, &keys),
            })
        })
        .unwrap_or_else(|_| GroupSpans::whole(self.group_len(g)))
    }

    /// The page index of every group of a remote table, in one read: a
    /// lookup in a new group then costs one request (the group) instead of
    /// two. `None` for a local table, a table without a page index, or one
    /// whose page index is larger than [`MAX_PAGE_INDEX`].
    fn remote_page_index(&self) -> Option<Window> {
        if self.file.is_local() {
            return None;
        }
        let ranges = self
            .metadata
            .row_groups()
            .iter()
            .flat_map(|g| g.columns())
            .flat_map(|c| {
                [
                    (c.column_index_offset(), c.column_index_length()),
                    (c.offset_index_offset(), c.offset_index_length()),
                ]
            });
        let (mut start, mut end) = (u64::MAX, 0u64);
        for (offset, length) in ranges {
            let (Some(o), Some(l)) = (offset, length) else {
                continue;
            };
            let (o, l) = (u64::try_from(o).ok()?, u64::try_from(l).ok()?);
            start = start.min(o);
            end = end.max(o.checked_add(l)?);
        }
        let len = usize::try_from(end.checked_sub(start)?).ok()?;
        let size = self.file.size();
        if len > MAX_PAGE_INDEX || end > size {
            return None;
        }
        if let Some(tail) = &self.tail {
            if let Ok(bytes) = tail.slice(start, Some(len)) {
                return Some(Window { start, bytes, size });
            }
        }
        let bytes = self.file.read_at(start, len).ok()?;
        Some(Window { start, bytes, size })
    }

    /// Min and max of column `c` (of [`COLUMNS`]) in group `g`, from its
    /// statistics (`None` without them, or when they are not ordered as
    /// unsigned values).
    fn range(&self, g: usize, c: usize) -> Option<(u64, u64)> {
        min_max(
            self.metadata
                .row_group(g)
                .column(self.columns[c])
                .statistics()?,
        )
    }

    /// Rows `span` of group `g`, the group's bytes fetched in one read; the
    /// pages before the span are skipped without being decoded.
    fn rows(&self, g: usize, span: Range<usize>) -> Result<Rows> {
        let what = format!("row group {g}");
        contain_panics(&self.source, &what, || self.decode_rows(g, span))
    }

    /// [`Table::rows`], panics of the Parquet crate not contained.
    fn decode_rows(&self, g: usize, span: Range<usize>) -> Result<Rows> {
        let err = parquet_error(&self.source);
        let bad = |reason: String| malformed(&self.source, reason);
        let meta = self.metadata.row_group(g);
        let n = usize::try_from(meta.num_rows()).unwrap_or(usize::MAX);
        if n > MAX_GROUP_ROWS {
            return Err(bad(format!(
                "row group {g} has {} rows; at most {MAX_GROUP_ROWS} are read per group \
                 (rewrite the table with smaller row groups)",
                meta.num_rows()
            )));
        }
        // Each column chunk's bytes (the crate's `byte_range` panics on the
        // negative values a damaged footer may hold).
        let spans = column_spans(meta).ok_or_else(|| {
            bad(format!(
                "row group {g}: a column chunk has a negative or overflowing offset or size"
            ))
        })?;
        let start = spans.iter().map(|s| s.0).min().unwrap_or(0);
        let end = spans.iter().map(|s| s.1).max().unwrap_or(0);
        let len = usize::try_from(end - start)
            .ok()
            .filter(|_| end <= self.file.size())
            .ok_or_else(|| {
                bad(format!(
                    "row group {g} (bytes {start}..{end}) lies past the end of the {}-byte file",
                    self.file.size()
                ))
            })?;
        let bytes = self.file.read_at(start, len)?;
        for &(from, to) in &spans {
            let chunk = bytes
                .get((from - start) as usize..(to - start) as usize)
                .unwrap_or_default();
            thrift_check::check_pages(chunk)
                .map_err(|e| bad(format!("row group {g}, column chunk at byte {from}: {e}")))?;
        }
        let size = self.file.size();
        let window = Arc::new(Window { start, bytes, size });
        let props = Arc::new(ReaderProperties::builder().build());
        let group = SerializedRowGroupReader::new(window, meta, None, props).map_err(&err)?;
        if span.end > n {
            return Err(bad(format!(
                "rows {}..{} asked of row group {g}, which has {n}",
                span.start, span.end
            )));
        }
        let first_row = self.first_rows[g] + span.start as u64;
        let want = span.len();
        let column = |c: usize| -> Result<Vec<Option<u64>>> {
            let reader = group.get_column_reader(self.columns[c]).map_err(&err)?;
            let values = read_integers(reader, span.start, want).map_err(&err)?;
            if values.len() != want {
                return Err(bad(format!(
                    "row group {g}: column '{}' has {} values for rows {}..{} of {n}",
                    COLUMNS[c],
                    values.len(),
                    span.start,
                    span.end
                )));
            }
            Ok(values)
        };
        // A required value that fits `max`: the error names column and row.
        let narrow = |c: usize, max: u64| -> Result<Vec<u64>> {
            column(c)?
                .into_iter()
                .enumerate()
                .map(|(r, v)| {
                    let row = first_row + r as u64;
                    match v {
                        Some(v) if v <= max => Ok(v),
                        Some(v) => Err(bad(format!(
                            "row {row}: column '{}' holds {v}, above its largest value {max}",
                            COLUMNS[c]
                        ))),
                        None => Err(bad(format!("row {row}: column '{}' is null", COLUMNS[c]))),
                    }
                })
                .collect()
        };
        let u16s = |c| -> Result<Vec<u16>> {
            Ok(narrow(c, u16::MAX.into())?
                .into_iter()
                .map(|v| v as u16)
                .collect())
        };
        let u32s = |c| -> Result<Vec<u32>> {
            Ok(narrow(c, u32::MAX.into())?
                .into_iter()
                .map(|v| v as u32)
                .collect())
        };
        Ok(Rows {
            array: u16s(0)?,
            time: u32s(1)?,
            band: u32s(2)?,
            y: u32s(3)?,
            x: u32s(4)?,
            file: u32s(5)?,
            offset: narrow(6, u64::MAX)?,
            length: column(7)?,
            part: u16s(8)?,
        })
    }
}

/// A table read on demand, row group by row group.
#[derive(Debug)]
struct Pages {
    table: Table,
    check: Arc<RowChecker>,
    /// Per group: min/max of `array`, `time`, `band`, `y_chunk`, `x_chunk`
    /// (the whole range when a statistic is missing).
    boxes: Vec<[(u64, u64); KEYS]>,
    /// Per group, read at its first lookup: where in it each key can lie.
    spans: Vec<OnceLock<GroupSpans>>,
    /// Recently decoded row spans, most recent last: group, rows, and their
    /// references by store array.
    cache: Mutex<VecDeque<Decoded>>,
    arrays: usize,
}

/// The references of a span of rows of one group.
type Decoded = (usize, Range<usize>, Arc<Vec<ChunkTable>>);

impl Pages {
    fn new(table: Table, check: Arc<RowChecker>) -> Pages {
        let boxes = (0..table.groups())
            .map(|g| std::array::from_fn(|c| table.range(g, c).unwrap_or((0, u64::MAX))))
            .collect();
        let arrays = check.arrays();
        let spans = (0..table.groups()).map(|_| OnceLock::new()).collect();
        Pages {
            table,
            check,
            boxes,
            spans,
            cache: Mutex::new(VecDeque::new()),
            arrays,
        }
    }

    /// The references of rows `span` of group `g`, decoded or from the cache.
    fn decoded(&self, g: usize, span: Range<usize>) -> Result<Arc<Vec<ChunkTable>>> {
        let cache = || self.cache.lock().unwrap_or_else(|p| p.into_inner());
        let covers =
            |(k, rows, _): &&Decoded| *k == g && rows.start <= span.start && span.end <= rows.end;
        if let Some(hit) = cache().iter().find(covers) {
            return Ok(Arc::clone(&hit.2));
        }
        let decoded = Arc::new(self.decode(g, span.clone())?);
        let mut cache = cache();
        if cache.len() == CACHED_SPANS {
            cache.pop_front();
        }
        cache.push_back((g, span, Arc::clone(&decoded)));
        Ok(decoded)
    }

    /// Decodes rows `span` of group `g`. Rows at its start that continue a
    /// multi-range chunk begun before it are dropped (the span that holds
    /// the chunk's first part reads them); rows after it that continue a
    /// chunk of the span are read too, from the next group if need be.
    fn decode(&self, g: usize, span: Range<usize>) -> Result<Vec<ChunkTable>> {
        let first_row = self.table.first_rows[g] + span.start as u64;
        let (mut at_group, mut at) = (g, span.end);
        let mut rows = self.table.rows(g, span)?;
        loop {
            if at >= self.table.group_len(at_group) {
                (at_group, at) = (at_group + 1, 0);
            }
            let continued = at_group < self.table.groups()
                && self
                    .table
                    .range(at_group, PART)
                    .is_none_or(|(_, hi)| hi > 0);
            if !continued {
                break;
            }
            let end = (at + LEAD_ROWS).min(self.table.group_len(at_group));
            let more = self.table.rows(at_group, at..end)?;
            let lead = more.part.iter().take_while(|&&p| p > 0).count();
            rows.extend(&more.head(lead));
            if lead < more.len() || more.is_empty() {
                break;
            }
            at = end;
        }
        let mut sink = RowSink::new(self.arrays, first_row);
        sink.skip(0);
        sink.push(&self.check, &rows)?;
        Ok(sink
            .into_rows()
            .into_iter()
            .map(ChunkTable::from_rows)
            .collect())
    }
}

impl PageSource for Pages {
    fn lookup(&self, array: usize, positions: &[u64]) -> Result<Vec<Option<RawRef>>> {
        let Some((t, _)) = self.check.table_array(array) else {
            return Ok(vec![None; positions.len()]);
        };
        let keys: Vec<[u64; 5]> = positions
            .iter()
            .map(|&p| {
                let c = self.check.columns(t, p);
                [
                    u64::from(t),
                    c[0].into(),
                    c[1].into(),
                    c[2].into(),
                    c[3].into(),
                ]
            })
            .collect();
        let holds = |g: usize, key: &[u64; 5]| {
            self.boxes[g]
                .iter()
                .zip(key)
                .all(|(&(lo, hi), v)| (lo..=hi).contains(v))
        };
        let wanted: BTreeSet<usize> = keys
            .iter()
            .flat_map(|k| (0..self.boxes.len()).filter(move |&g| holds(g, k)))
            .collect();
        let mut found = vec![None; positions.len()];
        for g in wanted {
            let here: Vec<usize> = (0..keys.len())
                .filter(|&i| found[i].is_none() && holds(g, &keys[i]))
                .collect();
            let spans = self.spans[g].get_or_init(|| self.table.spans(g));
            let Some(span) = here
                .iter()
                .filter_map(|&i| spans.span(&keys[i]))
                .reduce(|a, b| a.start.min(b.start)..a.end.max(b.end))
            else {
                continue;
            };
            let tables = self.decoded(g, span)?;
            for i in here {
                found[i] = tables[array].get(positions[i]).map(|r| r.to_raw());
            }
        }
        Ok(found)
    }
}

/// Bytes `start..` of a file of `size` bytes (one row group, served to
/// the Parquet column readers, or a remote table's page index or end).
#[derive(Debug)]
struct Window {
    start: u64,
    bytes: Bytes,
    size: u64,
}

impl Window {
    fn slice(&self, start: u64, len: Option<usize>) -> parquet::errors::Result<Bytes> {
        let from = start
            .checked_sub(self.start)
            .and_then(|f| usize::try_from(f).ok())
            .filter(|&f| f <= self.bytes.len());
        let to = from.and_then(|f| match len {
            None => Some(self.bytes.len()),
            Some(l) => f.checked_add(l).filter(|&t| t <= self.bytes.len()),
        });
        match (from, to) {
            (Some(f), Some(t)) => Ok(self.bytes.slice(f..t)),
            _ => Err(parquet::errors::ParquetError::EOF(format!(
                "bytes at {start} lie outside the row group ({} bytes from {})",
                self.bytes.len(),
                self.start
            ))),
        }
    }
}

impl Length for Window {
    fn len(&self) -> u64 {
        self.size
    }
}

impl ChunkReader for Window {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(self.slice(start, None)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.slice(start, Some(length))
    }
}

/// The footer of `file` (named `source` in messages) parsed from its last
/// `tail_len` bytes, read in one request, with those bytes; `None` when
/// the footer is longer.
fn footer_from_tail(
    source: &str,
    file: &Arc<dyn IndexFile>,
    tail_len: usize,
) -> Result<Option<(ParquetMetaData, Window)>> {
    let size = file.size();
    let len = file.available(size.saturating_sub(tail_len as u64), tail_len);
    let start = size - len as u64;
    let bytes = file.read_at(start, len)?;
    match footer_in(&bytes) {
        Some(footer) => thrift_check::check_struct(footer)
            .map_err(|e| malformed(source, format!("Parquet footer: {e}")))?,
        None => return Ok(None),
    };
    let mut reader = ParquetMetaDataReader::new();
    match reader.try_parse_sized(&bytes, size) {
        Ok(()) => {}
        Err(parquet::errors::ParquetError::NeedMoreData(_)) => return Ok(None),
        Err(e) => return Err(parquet_error(source)(e)),
    }
    let metadata = reader.finish().map_err(parquet_error(source))?;
    Ok(Some((metadata, Window { start, bytes, size })))
}

/// The byte range of each column chunk of a row group (the crate's
/// `byte_range` panics on the negative values a damaged footer may hold);
/// `None` when one is negative or overflows.
pub(crate) fn column_spans(meta: &RowGroupMetaData) -> Option<Vec<(u64, u64)>> {
    meta.columns()
        .iter()
        .map(|c| {
            let start = c.dictionary_page_offset().unwrap_or(c.data_page_offset());
            let start = u64::try_from(start).ok()?;
            Some((
                start,
                start.checked_add(u64::try_from(c.compressed_size()).ok()?)?,
            ))
        })
        .collect()
}

/// The footer (Thrift `FileMetaData`) at the end of `tail`, the last
/// bytes of a Parquet file; `None` when `tail` does not hold all of it.
pub(crate) fn footer_in(tail: &[u8]) -> Option<&[u8]> {
    let n = tail.len();
    let len = u32::from_le_bytes(tail.get(n.checked_sub(8)?..n - 4)?.try_into().ok()?) as usize;
    tail.get(n.checked_sub(8)?.checked_sub(len)?..n - 8)
}

/// Walks the footer of `file` before the parquet crate parses it (see
/// [`thrift_check`]).
fn check_footer(source: &str, file: &Arc<dyn IndexFile>) -> Result<()> {
    let size = file.size();
    let Some(at) = size.checked_sub(8) else {
        return Ok(()); // too short: the crate says so
    };
    let tail = file.read_at(at, 8)?;
    let len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    let Some(start) = at.checked_sub(len) else {
        return Ok(()); // the crate reports the impossible length
    };
    let footer = file.read_at(start, len as usize)?;
    thrift_check::check_struct(&footer)
        .map(drop)
        .map_err(|e| malformed(source, format!("Parquet footer: {e}")))
}

/// The whole index file, for the footer reader.
struct Whole(Arc<dyn IndexFile>);

impl Whole {
    fn read(&self, start: u64, len: usize) -> parquet::errors::Result<Bytes> {
        self.0
            .read_at(start, len)
            .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
    }
}

impl Length for Whole {
    fn len(&self) -> u64 {
        self.0.size()
    }
}

impl ChunkReader for Whole {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        let rest = usize::try_from(self.0.size().saturating_sub(start)).unwrap_or(usize::MAX);
        Ok(self.read(start, rest)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.read(start, length)
    }
}

fn parquet_error(source: &str) -> impl Fn(parquet::errors::ParquetError) -> Error + '_ {
    move |e| malformed(source, format!("Parquet: {e}"))
}

fn malformed(source: &str, reason: String) -> Error {
    Error::MalformedIndex {
        index: source.to_string(),
        reason,
    }
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
    .filter(|(lo, hi)| lo <= hi)
}

/// Reads the `n` values of one integer column chunk as unsigned 64-bit
/// integers (INT32 values as their unsigned 32-bit pattern), `None` for nulls.
fn read_integers(
    column: ColumnReader,
    skip: usize,
    n: usize,
) -> parquet::errors::Result<Vec<Option<u64>>> {
    match column {
        ColumnReader::Int32ColumnReader(r) => Ok(read_values(r, skip, n)?
            .into_iter()
            .map(|v| v.map(|x| u64::from(x as u32)))
            .collect()),
        ColumnReader::Int64ColumnReader(r) => Ok(read_values(r, skip, n)?
            .into_iter()
            .map(|v| v.map(|x| x as u64))
            .collect()),
        _ => Err(parquet::errors::ParquetError::General(
            "not an integer column".into(),
        )),
    }
}

/// Reads `n` values of one column chunk after its first `skip` (whole pages
/// of them skipped undecoded), nulls as `None`; fewer at the chunk's end.
fn read_values<T: DataType>(
    mut reader: ColumnReaderImpl<T>,
    skip: usize,
    n: usize,
) -> parquet::errors::Result<Vec<Option<T::T>>>
where
    T::T: Copy,
{
    if reader.skip_records(skip)? < skip {
        return Ok(Vec::new());
    }
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
mod tests {
    use super::*;
    use crate::builders::writers::parquet::tests::{index, to_parquet, to_parquet_pages};
    use crate::builders::writers::to_kerchunk::to_kerchunk;
    use crate::index::refs::position;
    use crate::index::table;
    use crate::io::index_file::InMemory;

    fn open(bytes: Vec<u8>, time: &TimeOptions, eager_rows: u64) -> Result<Index> {
        read(
            "t.parquet",
            Arc::new(InMemory::new("t.parquet", bytes)),
            time,
            eager_rows,
        )
    }

    #[test]
    fn every_reference_form_round_trips() {
        let original = index();
        let back = open(
            to_parquet(&original, 1 << 20),
            &TimeOptions::default(),
            u64::MAX,
        )
        .unwrap();
        assert_eq!(to_kerchunk(&back).unwrap(), to_kerchunk(&original).unwrap());
        assert_eq!(back.array("a").unwrap().refs.table().unwrap().len(), 4);
        assert!(back.warnings.is_empty(), "{:?}", back.warnings);
    }

    #[test]
    fn references_read_on_demand_match_the_loaded_ones() {
        let original = index();
        let layouts = [
            (1, 1),
            (2, 1),
            (3, 1),
            (3, 2),
            (100, 1),
            (100, 2),
            (100, 8192),
        ];
        for (group_rows, page_rows) in layouts {
            let paged = open(
                to_parquet_pages(&original, group_rows, page_rows),
                &TimeOptions::default(),
                0,
            )
            .unwrap();
            for (a, b) in original.arrays.iter().zip(&paged.arrays) {
                let grid = a.meta.grid_shape();
                let all: Vec<u64> = (0..grid.iter().product()).collect();
                assert_eq!(
                    a.refs.lookup(&all).unwrap(),
                    b.refs.lookup(&all).unwrap(),
                    "{} in groups of {group_rows}, pages of {page_rows}",
                    a.meta.path
                );
                assert!(b.refs.table().is_err());
            }
        }
    }

    /// An array of `steps` x 8 x 8 chunks (bands, y, x), one range each.
    fn stack(bands: usize) -> Index {
        let zarray = format!(
            r#"{{\"shape\": [{bands}, 64, 64], \"chunks\": [1, 8, 8], \"dtype\": \"|u1\", \"compressor\": null, \"fill_value\": 0, \"filters\": null, \"order\": \"C\", \"zarr_format\": 2}}"#
        );
        let mut refs = vec![
            r#"".zgroup": "{\"zarr_format\": 2}""#.to_string(),
            format!(r#""a/.zarray": "{zarray}""#),
        ];
        for t in 0..bands {
            for y in 0..8 {
                for x in 0..8 {
                    let at = ((t * 8 + y) * 8 + x) * 64;
                    refs.push(format!(r#""a/{t}.{y}.{x}": ["/d/f{t}.bin", {at}, 64]"#));
                }
            }
        }
        let doc = format!(r#"{{"version": 1, "refs": {{{}}}}}"#, refs.join(", "));
        Index::from_kerchunk_json("t.json", doc.as_bytes(), &[]).unwrap()
    }

    #[test]
    fn a_lookup_decodes_only_the_pages_that_can_hold_its_chunk() {
        let original = stack(32);
        let bytes = to_parquet_pages(&original, 1024, 64);
        let table = Table::open(
            "t.parquet",
            Arc::new(InMemory::new("t.parquet", bytes.clone())),
        )
        .unwrap();
        assert_eq!(table.groups(), 2);
        // Chunks (20, y, x), keys (array 0, time 0, band 20, y, x), are rows
        // 1280..1344 of the table: rows 256..320 of group 1.
        let spans = table.spans(1);
        assert_eq!(spans.span(&[0, 0, 20, 3, 5]), Some(256..320));
        assert_eq!(spans.span(&[0, 0, 3, 3, 5]), None, "band 3 is in group 0");
        let paged = open(bytes, &TimeOptions::default(), 0).unwrap();
        let (a, b) = (original.array("a").unwrap(), paged.array("a").unwrap());
        let all: Vec<u64> = (0..32 * 64).collect();
        assert_eq!(a.refs.lookup(&all).unwrap(), b.refs.lookup(&all).unwrap());
    }

    #[test]
    fn a_remote_table_reads_footer_and_page_index_in_one_request() {
        let original = stack(32);
        let bytes = to_parquet_pages(&original, 1024, 64);
        let name = "/vsicurl/http://127.0.0.1:9/t.parquet";
        let table = Table::open(name, Arc::new(InMemory::new(name, bytes.clone()))).unwrap();
        let tail = table
            .tail
            .as_ref()
            .expect("the footer came with the file's end");
        assert_eq!(tail.start, 0, "a small table is read whole");
        let held = table
            .remote_page_index()
            .expect("the page index is in the tail");
        assert!(held.start > 0 && held.bytes.len() < bytes.len());
        assert_eq!(table.spans(1).span(&[0, 0, 20, 3, 5]), Some(256..320));
        let paged = read(
            name,
            Arc::new(InMemory::new(name, bytes)),
            &TimeOptions::default(),
            0,
        )
        .unwrap();
        let all: Vec<u64> = (0..32 * 64).collect();
        assert_eq!(
            original.array("a").unwrap().refs.lookup(&all).unwrap(),
            paged.array("a").unwrap().refs.lookup(&all).unwrap()
        );
    }

    #[test]
    fn time_ranges_of_paged_tables_shift_positions() {
        let original = index();
        let step = TimeOptions {
            step: Some("1".into()),
            ..TimeOptions::default()
        };
        let paged = open(to_parquet(&original, 2), &step, 0).unwrap();
        let paged = crate::index::readers::stack::select_time(paged, &step).unwrap();
        let a = paged.array("a").unwrap();
        assert_eq!(a.meta.shape[0], 1);
        let grid = [1, 2, 2];
        let got = a
            .refs
            .lookup(&[
                position(&[0, 0, 1], &grid).unwrap(),
                position(&[0, 1, 0], &grid).unwrap(),
                position(&[0, 0, 0], &grid).unwrap(),
            ])
            .unwrap();
        assert_eq!(
            got[0],
            Some(RawRef::Multi(0, vec![(100, 4), (50, 8), (0, 2)]))
        );
        assert!(matches!(got[1], Some(RawRef::Inline(_))));
        assert_eq!(got[2], None);
    }

    #[test]
    fn time_options_skip_row_groups_outside_the_steps() {
        let bytes = to_parquet(&index(), 2);
        let step = |s: &str| TimeOptions {
            step: Some(s.into()),
            ..TimeOptions::default()
        };
        let len = |i: &Index, a: &str| i.array(a).unwrap().refs.table().unwrap().len();
        // Array `b` has no time axis: its row group is always read.
        let one = open(bytes.clone(), &step("1"), u64::MAX).unwrap();
        let a = one.array("a").unwrap();
        assert_eq!(
            (a.meta.shape[0], len(&one, "a")),
            (2, 2),
            "rows of step 1 only"
        );
        assert_eq!(len(&one, "b"), 1);
        // Step 0 skips the group holding the first parts of step 1's
        // multi-range chunk; its last part, in a group that is read, is dropped.
        let zero = open(bytes.clone(), &step("0"), u64::MAX).unwrap();
        assert_eq!(len(&zero, "a"), 3, "2 of step 0 and the inline one");
        let e = open(bytes, &step("2"), u64::MAX).unwrap_err().to_string();
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

    #[test]
    fn truncated_files_are_refused() {
        let mut bytes = to_parquet(&index(), 2);
        bytes.truncate(bytes.len() / 2);
        let e = open(bytes, &TimeOptions::default(), 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.parquet") && e.contains("Parquet"), "{e}");
    }
}
