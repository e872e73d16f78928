//! Which rows of a Parquet row group can hold a chunk: the group's page
//! index (per page of each key column, its first row and min/max) narrows a
//! lookup from the whole group to the pages whose statistics admit the key.
//!
//! A reference table's rows are sorted by (`array`, `time`, `band`,
//! `y_chunk`, `x_chunk`), so the pages of one key are adjacent: a lookup in
//! a group of 131,072 rows written in pages of 8,192 decodes one or two
//! pages instead of the group.

use std::ops::Range;

use parquet::file::metadata::{
    FileMetaData, PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader, RowGroupMetaData,
};
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::reader::ChunkReader;

/// One page of a column: its first row and (min, max), `None` where the
/// page has no usable statistics.
type Page = (usize, Option<(u64, u64)>);

/// The key columns' page statistics of one row group.
#[derive(Debug, Default, PartialEq)]
pub struct GroupSpans {
    /// Per key column, its pages. Empty: no page index.
    columns: Vec<Vec<Page>>,
    /// Rows in the group.
    rows: usize,
}

impl GroupSpans {
    /// No page statistics: every key may lie anywhere in the group's `rows`.
    pub fn whole(rows: usize) -> GroupSpans {
        GroupSpans {
            columns: Vec::new(),
            rows,
        }
    }

    /// Reads the page index of row group `group` (of `file`'s `metadata`)
    /// for the key columns `keys` (leaf column numbers). A group without a
    /// page index, or with one that does not describe its rows (pages out
    /// of order, past the group's end), gets no spans: every lookup then
    /// reads the whole group, which is always right.
    pub fn read<R: ChunkReader>(
        file: &R,
        metadata: &ParquetMetaData,
        group: usize,
        keys: &[usize],
    ) -> GroupSpans {
        let meta = metadata.row_group(group);
        let rows = usize::try_from(meta.num_rows()).unwrap_or(0);
        let none = GroupSpans::whole(rows);
        let Ok(indexed) = page_index(file, metadata.file_metadata(), meta) else {
            return none;
        };
        let (Some(column_index), Some(offset_index)) =
            (indexed.column_index(), indexed.offset_index())
        else {
            return none;
        };
        let (Some(stats), Some(locations)) = (column_index.first(), offset_index.first()) else {
            return none;
        };
        let mut columns = Vec::with_capacity(keys.len());
        for &c in keys {
            let (Some(stats), Some(locations)) = (stats.get(c), locations.get(c)) else {
                return none;
            };
            let firsts: Vec<usize> = locations
                .page_locations()
                .iter()
                .map(|p| usize::try_from(p.first_row_index).unwrap_or(usize::MAX))
                .collect();
            let ordered = firsts.first() == Some(&0)
                && firsts.windows(2).all(|w| w[0] < w[1])
                && firsts.last().is_some_and(|&l| l < rows.max(1));
            if !ordered {
                return none;
            }
            columns.push(
                firsts
                    .into_iter()
                    .enumerate()
                    .map(|(p, first)| (first, page_min_max(stats, p)))
                    .collect(),
            );
        }
        GroupSpans { columns, rows }
    }

    /// The rows that may hold `key` (one value per key column, in the order
    /// the spans were read): from the first to the last row of the pages
    /// whose statistics admit it in every key column; `None` when no page
    /// does.
    pub fn span(&self, key: &[u64]) -> Option<Range<usize>> {
        let mut rows: Vec<Range<usize>> = std::iter::once(0..self.rows).collect();
        for (pages, &value) in self.columns.iter().zip(key) {
            let admitted = pages
                .iter()
                .enumerate()
                .filter(|(_, (_, stats))| stats.is_none_or(|(lo, hi)| (lo..=hi).contains(&value)))
                .map(|(p, &(first, _))| first..pages.get(p + 1).map_or(self.rows, |next| next.0));
            rows = intersect(&rows, admitted);
        }
        Some(rows.first()?.start..rows.last()?.end)
    }
}

/// The page index of one row group: a copy of `meta` in a file of its own,
/// so only that group's column and offset indexes are read.
fn page_index<R: ChunkReader>(
    file: &R,
    file_meta: &FileMetaData,
    meta: &RowGroupMetaData,
) -> parquet::errors::Result<ParquetMetaData> {
    let lean = FileMetaData::new(
        file_meta.version(),
        meta.num_rows(),
        None,
        None,
        file_meta.schema_descr_ptr(),
        None,
    );
    // Each column and offset index walked before the crate parses it.
    for c in meta.columns() {
        let ranges = [
            (c.column_index_offset(), c.column_index_length()),
            (c.offset_index_offset(), c.offset_index_length()),
        ];
        for (offset, length) in ranges {
            let (Some(offset), Some(length)) = (offset, length) else {
                continue;
            };
            let (Ok(offset), Ok(length)) = (u64::try_from(offset), usize::try_from(length)) else {
                continue; // the crate refuses negative ones
            };
            let bytes = file.get_bytes(offset, length)?;
            crate::index::readers::thrift_check::check_struct(&bytes)
                .map_err(|e| parquet::errors::ParquetError::General(format!("page index: {e}")))?;
        }
    }
    let mut reader =
        ParquetMetaDataReader::new_with_metadata(ParquetMetaData::new(lean, vec![meta.clone()]))
            .with_page_index_policy(PageIndexPolicy::Optional);
    reader.read_page_indexes(file)?;
    reader.finish()
}

/// Min and max of page `p` of an integer column index (INT32 as unsigned
/// 32-bit values); `None` without statistics or when they are not ordered
/// as unsigned values.
fn page_min_max(stats: &ColumnIndexMetaData, p: usize) -> Option<(u64, u64)> {
    let (lo, hi) = match stats {
        ColumnIndexMetaData::INT32(i) => (
            u64::from(*i.min_value(p)? as u32),
            u64::from(*i.max_value(p)? as u32),
        ),
        ColumnIndexMetaData::INT64(i) => (*i.min_value(p)? as u64, *i.max_value(p)? as u64),
        _ => return None,
    };
    (lo <= hi).then_some((lo, hi))
}

/// The rows in both `a` and `b` (sorted, disjoint ranges each).
fn intersect(a: &[Range<usize>], b: impl Iterator<Item = Range<usize>>) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut a = a.iter().peekable();
    for r in b {
        while let Some(x) = a.peek() {
            let (start, end) = (x.start.max(r.start), x.end.min(r.end));
            if start < end {
                match out.last_mut() {
                    Some(last) if last.end == start => last.end = end,
                    _ => out.push(start..end),
                }
            }
            if x.end <= r.end {
                a.next();
            } else {
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(rows: usize, columns: Vec<Vec<Page>>) -> GroupSpans {
        GroupSpans { columns, rows }
    }

    #[test]
    fn ranges_intersect() {
        let a = [0..10, 20..30];
        assert_eq!(intersect(&a, std::iter::once(5..25)), vec![5..10, 20..25]);
        assert_eq!(
            intersect(&a, std::iter::once(10..20)),
            Vec::<Range<usize>>::new()
        );
        assert_eq!(intersect(&a, [0..5, 5..12].into_iter()), vec![0..10]);
        assert_eq!(
            intersect(&a[..1], [3..4, 5..60].into_iter()),
            vec![3..4, 5..10]
        );
    }

    #[test]
    fn a_key_narrows_to_its_pages() {
        // Column 0 (time) in pages of 4 rows: 0-0, 0-1, 1-2; column 1 (y)
        // in pages of 6 rows, both 0-9.
        let s = spans(
            12,
            vec![
                vec![(0, Some((0, 0))), (4, Some((0, 1))), (8, Some((1, 2)))],
                vec![(0, Some((0, 9))), (6, Some((0, 9)))],
            ],
        );
        assert_eq!(s.span(&[0, 3]), Some(0..8));
        assert_eq!(s.span(&[2, 3]), Some(8..12));
        assert_eq!(s.span(&[1, 3]), Some(4..12));
        assert_eq!(s.span(&[3, 3]), None);
        assert_eq!(s.span(&[1, 10]), None);
    }

    #[test]
    fn pages_without_statistics_admit_every_key() {
        let s = spans(10, vec![vec![(0, Some((0, 0))), (5, None)]]);
        assert_eq!(s.span(&[7]), Some(5..10));
        assert_eq!(spans(10, Vec::new()).span(&[7]), Some(0..10));
    }
}
