//! Chunk references kept columnar: one sorted position column and parallel
//! file / offset / length columns per array, a shared file table, inline
//! bytes and multi-range lists in side tables.
//!
//! Positions are row-major ranks of chunk grid indices. Storing them sorted
//! (instead of a dense array over the whole grid) keeps memory proportional
//! to the number of references even for huge, sparse grids.

use std::fmt::Debug;
use std::sync::Arc;

use bytes::Bytes;

use crate::base::error::{Error, Result};

/// Marks a row whose bytes are inline (offset = index into the inline table).
const INLINE: u32 = u32::MAX;
/// Marks a whole-file reference in the length column.
const WHOLE: u64 = u64::MAX;
/// Marks a multi-range reference in the length column (offset = list index).
const MULTI: u64 = u64::MAX - 1;

/// Where one chunk's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkRef<'a> {
    /// Bytes stored in the index itself.
    Inline(&'a Bytes),
    /// The entire object `file`.
    Whole {
        /// File id in the [`FileTable`].
        file: u32,
    },
    /// One contiguous byte range.
    Range {
        /// File id in the [`FileTable`].
        file: u32,
        /// First byte.
        offset: u64,
        /// Number of bytes.
        length: u64,
    },
    /// Several ranges of one file, concatenated in order.
    Multi {
        /// File id in the [`FileTable`].
        file: u32,
        /// `(offset, length)` pairs.
        ranges: &'a [(u64, u64)],
    },
}

impl ChunkRef<'_> {
    /// The file this reference reads from, if any.
    pub fn file(&self) -> Option<u32> {
        match *self {
            ChunkRef::Inline(_) => None,
            ChunkRef::Whole { file }
            | ChunkRef::Range { file, .. }
            | ChunkRef::Multi { file, .. } => Some(file),
        }
    }

    /// The reference as an owned [`RawRef`].
    pub fn to_raw(&self) -> RawRef {
        match *self {
            ChunkRef::Inline(b) => RawRef::Inline(b.clone()),
            ChunkRef::Whole { file } => RawRef::Whole(file),
            ChunkRef::Range {
                file,
                offset,
                length,
            } => RawRef::Range(file, offset, length),
            ChunkRef::Multi { file, ranges } => RawRef::Multi(file, ranges.to_vec()),
        }
    }
}

/// A reference as produced by an index reader, before it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawRef {
    /// Inline bytes.
    Inline(Bytes),
    /// Whole file.
    Whole(u32),
    /// One range.
    Range(u32, u64, u64),
    /// Several ranges.
    Multi(u32, Vec<(u64, u64)>),
}

impl RawRef {
    /// The reference with its file id mapped through `id`.
    pub fn map_file(self, id: impl Fn(u32) -> u32) -> RawRef {
        match self {
            RawRef::Inline(b) => RawRef::Inline(b),
            RawRef::Whole(f) => RawRef::Whole(id(f)),
            RawRef::Range(f, o, l) => RawRef::Range(id(f), o, l),
            RawRef::Multi(f, ranges) => RawRef::Multi(id(f), ranges),
        }
    }

    /// The file this reference reads from, if any.
    pub fn file(&self) -> Option<u32> {
        match *self {
            RawRef::Inline(_) => None,
            RawRef::Whole(f) | RawRef::Range(f, ..) | RawRef::Multi(f, _) => Some(f),
        }
    }
}

/// The references of one array: all in memory, or looked up in the index
/// file when chunks are read (large chunk-reference tables).
#[derive(Debug)]
pub enum Refs {
    /// Every reference, in memory.
    Loaded(ChunkTable),
    /// References read on demand.
    Paged(Paged),
}

impl Default for Refs {
    fn default() -> Refs {
        Refs::Loaded(ChunkTable::default())
    }
}

impl Refs {
    /// The references of the chunks at `positions`, one per position
    /// (`None`: the chunk has no reference).
    pub fn lookup(&self, positions: &[u64]) -> Result<Vec<Option<RawRef>>> {
        match self {
            Refs::Loaded(t) => Ok(t.lookup(positions)),
            Refs::Paged(p) => p.lookup(positions),
        }
    }

    /// Every reference, when they are in memory; an error for an index read
    /// on demand (tools that rewrite an index load it whole).
    pub fn table(&self) -> Result<&ChunkTable> {
        match self {
            Refs::Loaded(t) => Ok(t),
            Refs::Paged(_) => Err(Error::unsupported(
                "listing every reference of an index opened with references read on demand",
            )),
        }
    }

    /// Keeps the chunks at positions `start..end`, renumbered from 0 (one
    /// time range of a time stack).
    pub fn keep_range(&mut self, start: u64, end: u64) {
        match self {
            Refs::Loaded(t) => t.keep_range(start, end),
            Refs::Paged(p) => {
                p.local.keep_range(start, end);
                p.shift += start;
            }
        }
    }
}

/// Finds the references of chunks in an index file, reading only the parts
/// of the file that hold them.
pub trait PageSource: Debug + Send + Sync {
    /// The references of the chunks at `positions` of store array `array`,
    /// one per position (`None`: no reference).
    fn lookup(&self, array: usize, positions: &[u64]) -> Result<Vec<Option<RawRef>>>;
}

/// The references of one array read on demand from a [`PageSource`].
#[derive(Debug)]
pub struct Paged {
    pages: Arc<dyn PageSource>,
    array: usize,
    /// Added to positions before they are looked up (a time range).
    shift: u64,
    /// References kept in the index document itself (inline chunks).
    local: ChunkTable,
}

impl Paged {
    /// Store array `array` of `pages`, with the references `local` held in
    /// memory (looked up first).
    pub fn new(pages: Arc<dyn PageSource>, array: usize, local: ChunkTable) -> Paged {
        Paged {
            pages,
            array,
            shift: 0,
            local,
        }
    }

    fn lookup(&self, positions: &[u64]) -> Result<Vec<Option<RawRef>>> {
        let mut found = self.local.lookup(positions);
        let missing: Vec<usize> = (0..positions.len())
            .filter(|&i| found[i].is_none())
            .collect();
        if missing.is_empty() {
            return Ok(found);
        }
        let shifted: Vec<u64> = missing.iter().map(|&i| positions[i] + self.shift).collect();
        for (i, r) in missing
            .into_iter()
            .zip(self.pages.lookup(self.array, &shifted)?)
        {
            found[i] = r;
        }
        Ok(found)
    }
}

/// Distinct file URLs, interned to small ids.
#[derive(Debug, Default)]
pub struct FileTable {
    urls: Vec<String>,
    lookup: std::collections::HashMap<String, u32>,
    /// The id [`FileTable::intern`] returned last: references come in runs
    /// of one file, found again without hashing.
    last: Option<u32>,
}

impl FileTable {
    /// Returns the id of `url`, adding it if new.
    pub fn intern(&mut self, url: &str) -> u32 {
        if let Some(last) = self.last.filter(|&id| self.urls[id as usize] == url) {
            return last;
        }
        let id = match self.lookup.get(url) {
            Some(&id) => id,
            None => {
                let id = self.urls.len() as u32;
                self.urls.push(url.to_string());
                self.lookup.insert(url.to_string(), id);
                id
            }
        };
        self.last = Some(id);
        id
    }

    /// Appends `url` as a new id even when it is already present (tables
    /// whose file column refers to list positions); lookups find the first.
    pub fn push(&mut self, url: &str) -> u32 {
        let id = self.urls.len() as u32;
        self.urls.push(url.to_string());
        self.lookup.entry(url.to_string()).or_insert(id);
        id
    }

    /// The URL of a file id.
    pub fn url(&self, id: u32) -> &str {
        &self.urls[id as usize]
    }

    /// All URLs in id order.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// Replaces every URL with `f(url)` (template expansion, resolution).
    pub fn map_urls(&mut self, mut f: impl FnMut(&str) -> String) {
        for u in &mut self.urls {
            *u = f(u);
        }
        self.lookup.clear();
        self.last = None;
    }
}

/// The chunk references of one array, columnar and sorted by position.
#[derive(Debug, Default)]
pub struct ChunkTable {
    position: Vec<u64>,
    file: Vec<u32>,
    offset: Vec<u64>,
    length: Vec<u64>,
    inline: Vec<Bytes>,
    multi: Vec<Vec<(u64, u64)>>,
}

impl ChunkTable {
    /// Builds a table from `(position, reference)` rows in any order; for
    /// duplicate positions the last row wins, as in a JSON object.
    pub fn from_rows(mut rows: Vec<(u64, RawRef)>) -> ChunkTable {
        // Stable sort keeps document order among duplicates; keep the last.
        rows.sort_by_key(|(p, _)| *p);
        let mut t = ChunkTable::default();
        let n = rows.len();
        t.position.reserve(n);
        t.file.reserve(n);
        t.offset.reserve(n);
        t.length.reserve(n);
        let mut iter = rows.into_iter().peekable();
        while let Some((pos, r)) = iter.next() {
            if iter.peek().is_some_and(|(next, _)| *next == pos) {
                continue;
            }
            let (file, offset, length) = match r {
                RawRef::Inline(b) => {
                    t.inline.push(b);
                    (INLINE, (t.inline.len() - 1) as u64, 0)
                }
                RawRef::Whole(f) => (f, 0, WHOLE),
                // A length that would read as a marker is kept as a list of
                // one range (it is refused when read: no file is that long).
                RawRef::Range(f, o, l) if l >= MULTI => {
                    t.multi.push(vec![(o, l)]);
                    (f, (t.multi.len() - 1) as u64, MULTI)
                }
                RawRef::Range(f, o, l) => (f, o, l),
                RawRef::Multi(f, ranges) => {
                    t.multi.push(ranges);
                    (f, (t.multi.len() - 1) as u64, MULTI)
                }
            };
            t.position.push(pos);
            t.file.push(file);
            t.offset.push(offset);
            t.length.push(length);
        }
        t.position.shrink_to_fit();
        t
    }

    /// Number of chunks that have a reference.
    pub fn len(&self) -> usize {
        self.position.len()
    }

    /// True when no chunk has a reference.
    pub fn is_empty(&self) -> bool {
        self.position.is_empty()
    }

    /// The reference of the chunk at `position`, `None` if it was not written.
    pub fn get(&self, position: u64) -> Option<ChunkRef<'_>> {
        let i = self.position.binary_search(&position).ok()?;
        Some(self.at(i))
    }

    /// The reference stored in row `i`.
    fn at(&self, i: usize) -> ChunkRef<'_> {
        let (file, offset, length) = (self.file[i], self.offset[i], self.length[i]);
        if file == INLINE {
            ChunkRef::Inline(&self.inline[offset as usize])
        } else if length == WHOLE {
            ChunkRef::Whole { file }
        } else if length == MULTI {
            ChunkRef::Multi {
                file,
                ranges: &self.multi[offset as usize],
            }
        } else {
            ChunkRef::Range {
                file,
                offset,
                length,
            }
        }
    }

    /// The references of the chunks at `positions`, owned.
    pub fn lookup(&self, positions: &[u64]) -> Vec<Option<RawRef>> {
        positions
            .iter()
            .map(|&p| self.get(p).map(|r| r.to_raw()))
            .collect()
    }

    /// Keeps the chunks at positions `start..end`, renumbered from 0.
    pub fn keep_range(&mut self, start: u64, end: u64) {
        let rows = self
            .iter()
            .filter(|(p, _)| (start..end).contains(p))
            .map(|(p, r)| (p - start, r.to_raw()))
            .collect();
        *self = ChunkTable::from_rows(rows);
    }

    /// Every reference with its position, in position order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, ChunkRef<'_>)> + '_ {
        self.position
            .iter()
            .enumerate()
            .map(|(i, &p)| (p, self.at(i)))
    }

    /// Approximate heap bytes held by the table.
    pub fn heap_bytes(&self) -> usize {
        self.position.capacity() * 8
            + self.file.capacity() * 4
            + self.offset.capacity() * 8
            + self.length.capacity() * 8
            + self.inline.iter().map(Bytes::len).sum::<usize>()
            + self.multi.iter().map(|m| m.len() * 16 + 24).sum::<usize>()
    }
}

/// Row-major rank of a grid index, `None` if out of the grid.
pub fn position(index: &[u64], grid: &[u64]) -> Option<u64> {
    let mut pos = 0u64;
    for (&i, &g) in index.iter().zip(grid) {
        if i >= g {
            return None;
        }
        pos = pos.checked_mul(g)?.checked_add(i)?;
    }
    Some(pos)
}

/// Grid index of a row-major rank (inverse of [`position`]); `grid` must
/// have no zero extent.
pub fn unravel(mut pos: u64, grid: &[u64]) -> Vec<u64> {
    let mut idx = vec![0; grid.len()];
    for (i, &g) in idx.iter_mut().zip(grid).rev() {
        *i = pos % g;
        pos /= g;
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_runs_and_returns_gives_each_url_its_first_id() {
        let mut t = FileTable::default();
        let ids: Vec<u32> = ["a", "a", "b", "b", "a", "c", "b"]
            .iter()
            .map(|u| t.intern(u))
            .collect();
        assert_eq!(ids, [0, 0, 1, 1, 0, 2, 1]);
        assert_eq!(t.push("a"), 3, "a list position of its own");
        assert_eq!((t.intern("a"), t.intern("a")), (0, 0));
        t.map_urls(|u| format!("/d/{u}"));
        assert_eq!(t.intern("/d/c"), 4, "after map_urls lookups start anew");
        assert_eq!(t.url(4), "/d/c");
    }

    #[test]
    fn stores_every_form_and_last_duplicate_wins() {
        let rows = vec![
            (5, RawRef::Range(0, 10, 20)),
            (1, RawRef::Inline(Bytes::from_static(b"abc"))),
            (5, RawRef::Range(0, 30, 40)),
            (3, RawRef::Multi(1, vec![(0, 1), (9, 2)])),
            (2, RawRef::Whole(1)),
        ];
        let t = ChunkTable::from_rows(rows);
        assert_eq!(t.len(), 4);
        assert_eq!(
            t.get(5),
            Some(ChunkRef::Range {
                file: 0,
                offset: 30,
                length: 40
            })
        );
        assert_eq!(
            t.get(1),
            Some(ChunkRef::Inline(&Bytes::from_static(b"abc")))
        );
        assert_eq!(t.get(2), Some(ChunkRef::Whole { file: 1 }));
        assert_eq!(
            t.get(3),
            Some(ChunkRef::Multi {
                file: 1,
                ranges: &[(0, 1), (9, 2)]
            })
        );
        assert_eq!(t.get(4), None);
    }

    #[test]
    fn lengths_that_look_like_markers_stay_ranges() {
        let t = ChunkTable::from_rows(vec![
            (0, RawRef::Range(2, 0, u64::MAX)),
            (1, RawRef::Range(2, 7, u64::MAX - 1)),
        ]);
        let whole = ChunkRef::Multi {
            file: 2,
            ranges: &[(0, u64::MAX)],
        };
        assert_eq!(t.get(0), Some(whole), "not a whole-file reference");
        let tail = ChunkRef::Multi {
            file: 2,
            ranges: &[(7, u64::MAX - 1)],
        };
        assert_eq!(t.get(1), Some(tail));
    }

    #[test]
    fn positions() {
        assert_eq!(position(&[1, 2, 3], &[2, 3, 4]), Some(12 + 8 + 3));
        assert_eq!(position(&[0, 3, 0], &[2, 3, 4]), None);
        assert_eq!(position(&[], &[]), Some(0));
        assert_eq!(unravel(12 + 8 + 3, &[2, 3, 4]), vec![1, 2, 3]);
    }
}
