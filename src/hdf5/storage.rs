//! Where a dataset's bytes are: one reference per allocated chunk of a
//! chunked dataset (from the file's own chunk index), row blocks of a
//! contiguous one, or the inline bytes of a compact one.

use hdf5_metno_sys::h5::{haddr_t, hsize_t, HADDR_UNDEF};
use hdf5_metno_sys::h5d::{
    H5Dget_chunk_info, H5Dget_num_chunks, H5Dget_offset, H5Dget_space, H5Dget_storage_size,
    H5Dread, H5Dread_chunk,
};
use hdf5_metno_sys::h5i::hid_t;
use hdf5_metno_sys::h5p::H5P_DEFAULT;
use hdf5_metno_sys::h5s::H5S_ALL;

use super::handle::{check, malformed, Handle};
use crate::error::{Error, Result};

/// The largest block of a contiguous dataset one reference covers: a
/// reader fetches no more than this for any tile.
pub(crate) const CONTIGUOUS_BLOCK_BYTES: u64 = 4 << 20;

/// The largest chunk read to find where a file with a user block keeps
/// its chunks (HDF5 chunks are below 4 GiB; real ones a few MiB).
const MAX_PROBE_BYTES: u64 = 1 << 30;

/// The most a compact dataset holds (its data sits in the object header).
const MAX_COMPACT_BYTES: u64 = 64 << 10;

/// Where one chunk's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Bytes {
    /// A byte range of the source file.
    Range {
        /// First byte.
        offset: u64,
        /// Number of bytes.
        length: u64,
    },
    /// The bytes themselves (compact datasets).
    Inline(Vec<u8>),
}

/// A dataset's chunk grid and the chunks that have bytes (unlisted chunks
/// read as the fill value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Storage {
    /// The chunk shape (the dataset's shape when there is one chunk).
    pub(crate) chunks: Vec<u64>,
    /// Each stored chunk: its position in the chunk grid and its bytes.
    pub(crate) refs: Vec<(Vec<u64>, Bytes)>,
}

/// A dataset being indexed.
pub(crate) struct Dataset<'a> {
    /// The dataset's identifier.
    pub(crate) id: hid_t,
    /// Its path in the file (`/grp/name`), for messages.
    pub(crate) name: &'a str,
    /// Its shape.
    pub(crate) shape: &'a [u64],
    /// Bytes per element.
    pub(crate) item_size: u64,
    /// The size of the file's user block (the bytes before the HDF5
    /// superblock), 0 for most files.
    pub(crate) user_block: u64,
    /// The source file's path.
    pub(crate) source: &'a str,
}

impl Dataset<'_> {
    /// The bytes of all elements (saturating: a shape too large to
    /// address is refused where it matters).
    fn total_bytes(&self) -> u64 {
        self.shape
            .iter()
            .fold(self.item_size, |total, &n| total.saturating_mul(n))
    }

    /// Chunked layout: every allocated chunk (never-written chunks have
    /// none: they read as the fill value) with its file range, by index
    /// in the file's chunk index; chunks with a filter skipped (a nonzero
    /// filter mask) are refused.
    ///
    /// libhdf5 1.10 has no one-pass chunk iteration: each lookup, by
    /// index or by coordinate, walks the chunk index from its start, so
    /// this is quadratic in the number of chunks (see
    /// docs/reference-table.md). By index it visits allocated chunks
    /// only, where by coordinate every cell of a sparse grid costs a
    /// whole walk.
    pub(crate) fn chunked(&self, chunks: &[u64]) -> Result<Storage> {
        let mut allocated: hsize_t = 0;
        let what = || format!("cannot count the chunks of dataset '{}'", self.name);
        // SAFETY: valid dataset id; the dataspace is owned by a Handle.
        let space = Handle::new(unsafe { H5Dget_space(self.id) }, what)?;
        check(
            unsafe { H5Dget_num_chunks(self.id, space.id(), &mut allocated) },
            what,
        )?;
        let shift = match allocated {
            0 => 0,
            _ => self.address_shift(space.id())?,
        };
        let refs = (0..allocated)
            .filter_map(|i| self.chunk_at(space.id(), i, chunks, shift).transpose())
            .collect::<Result<Vec<_>>>()?;
        Ok(Storage {
            chunks: chunks.to_vec(),
            refs,
        })
    }

    /// What libhdf5 reports of allocated chunk `index`: its offset in
    /// elements, filter mask, address and stored size.
    fn chunk_info(&self, space: hid_t, index: hsize_t) -> Result<(Vec<u64>, u32, haddr_t, u64)> {
        let mut offsets = vec![0 as hsize_t; self.shape.len()];
        let (mut mask, mut addr, mut size): (u32, haddr_t, hsize_t) = (0, HADDR_UNDEF, 0);
        // SAFETY: `offsets` has one entry per dimension of the dataset.
        check(
            unsafe {
                H5Dget_chunk_info(
                    self.id,
                    space,
                    index,
                    offsets.as_mut_ptr(),
                    &mut mask,
                    &mut addr,
                    &mut size,
                )
            },
            || format!("cannot locate chunk #{index} of dataset '{}'", self.name),
        )?;
        Ok((offsets, mask, addr, size))
    }

    /// The grid position and file range of allocated chunk `index`
    /// (addresses moved by `shift`), `None` when it has no storage.
    fn chunk_at(
        &self,
        space: hid_t,
        index: hsize_t,
        chunks: &[u64],
        shift: u64,
    ) -> Result<Option<(Vec<u64>, Bytes)>> {
        let (offsets, mask, addr, size) = self.chunk_info(space, index)?;
        let position: Vec<u64> = offsets
            .iter()
            .zip(chunks)
            .map(|(o, c)| o / c.max(&1))
            .collect();
        if addr == HADDR_UNDEF || size == 0 {
            return Ok(None);
        }
        if mask != 0 {
            return Err(Error::unsupported(format!(
                "chunk {} of dataset '{}' skips filters (filter mask {mask:#x}), which a \
                 Zarr codec list cannot say for one chunk",
                key(&position),
                self.name
            )));
        }
        let range = Bytes::Range {
            offset: addr.saturating_add(shift),
            length: size,
        };
        Ok(Some((position, range)))
    }

    /// What to add to the chunk addresses libhdf5 reports to make them
    /// file offsets. libhdf5 1.10 reports them relative to the superblock,
    /// later releases from the start of the file; in a file with a user
    /// block, the first chunk's stored bytes (read by libhdf5) are looked
    /// for at both places in the file.
    fn address_shift(&self, space: hid_t) -> Result<u64> {
        if self.user_block == 0 {
            return Ok(0);
        }
        let fail = || format!("cannot locate the first chunk of dataset '{}'", self.name);
        let (first, mut mask, addr, size) = self.chunk_info(space, 0)?;
        if size > MAX_PROBE_BYTES {
            return Err(malformed(format!("{}: it stores {size} bytes", fail())));
        }
        let mut stored = vec![0u8; size as usize];
        // SAFETY: `stored` holds the chunk's stored size.
        check(
            unsafe {
                H5Dread_chunk(
                    self.id,
                    H5P_DEFAULT,
                    first.as_ptr(),
                    &mut mask,
                    stored.as_mut_ptr().cast(),
                )
            },
            fail,
        )?;
        let file =
            std::fs::File::open(self.source).map_err(|e| malformed(format!("{}: {e}", fail())))?;
        let holds = |offset: u64| {
            let mut found = vec![0u8; stored.len()];
            std::os::unix::fs::FileExt::read_exact_at(&file, &mut found, offset).is_ok()
                && found == stored
        };
        [self.user_block, 0]
            .into_iter()
            .find(|&shift| holds(addr.saturating_add(shift)))
            .ok_or_else(|| malformed(format!("{}: its bytes are not where libhdf5 says", fail())))
    }

    /// Contiguous layout: blocks of whole rows of the one extent (see
    /// [`row_blocks`]); no references when it was never written.
    pub(crate) fn contiguous(&self) -> Result<Storage> {
        let chunks = row_blocks(self.shape, self.item_size, CONTIGUOUS_BLOCK_BYTES);
        // SAFETY: valid dataset id.
        let (offset, stored) = unsafe { (H5Dget_offset(self.id), H5Dget_storage_size(self.id)) };
        let total = self.total_bytes();
        if offset == HADDR_UNDEF || total == 0 {
            return Ok(Storage {
                chunks,
                refs: Vec::new(),
            });
        }
        if stored < total {
            return Err(malformed(format!(
                "contiguous dataset '{}' stores {stored} bytes, its shape needs {total}",
                self.name
            )));
        }
        let block_bytes = chunks.iter().product::<u64>() * self.item_size;
        let blocks = self.shape.first().map_or(1, |&rows| rows / chunks[0]);
        let refs = (0..blocks)
            .map(|b| {
                let mut position = vec![0; self.shape.len().max(1)];
                position[0] = b;
                let range = Bytes::Range {
                    offset: offset + b * block_bytes,
                    length: block_bytes,
                };
                (position, range)
            })
            .collect();
        Ok(Storage { chunks, refs })
    }

    /// Compact layout: the stored bytes read through libhdf5 with the
    /// file's own datatype (no conversion), as one inline chunk.
    pub(crate) fn compact(&self, file_type: hid_t) -> Result<Storage> {
        let total = self.total_bytes();
        if total > MAX_COMPACT_BYTES {
            return Err(malformed(format!(
                "compact dataset '{}' claims {total} bytes (the format holds at most 64 KiB)",
                self.name
            )));
        }
        let mut bytes = vec![0u8; total as usize];
        // SAFETY: `bytes` holds every element of the file datatype.
        check(
            unsafe {
                H5Dread(
                    self.id,
                    file_type,
                    H5S_ALL,
                    H5S_ALL,
                    H5P_DEFAULT,
                    bytes.as_mut_ptr().cast(),
                )
            },
            || format!("cannot read compact dataset '{}'", self.name),
        )?;
        Ok(Storage {
            chunks: self.shape.to_vec(),
            refs: vec![(vec![0; self.shape.len().max(1)], Bytes::Inline(bytes))],
        })
    }
}

/// The chunk shape splitting a contiguous extent of `shape` (elements of
/// `item_size` bytes) into blocks of whole rows of at most `limit` bytes:
/// the whole extent when it fits, else the most rows that fit and divide
/// the row count evenly (so no block is partial), at least one row.
pub(crate) fn row_blocks(shape: &[u64], item_size: u64, limit: u64) -> Vec<u64> {
    let Some((&rows, rest)) = shape.split_first() else {
        return Vec::new();
    };
    let row_bytes = rest.iter().fold(item_size, |b, &n| b.saturating_mul(n));
    if rows.saturating_mul(row_bytes) <= limit || rows == 0 {
        return shape.iter().map(|&n| n.max(1)).collect();
    }
    let fit = (limit / row_bytes.max(1)).clamp(1, rows);
    let per_block = (1..=fit).rev().find(|r| rows % r == 0).unwrap_or(1);
    std::iter::once(per_block)
        .chain(rest.iter().copied())
        .collect()
}

/// The Zarr v2 key of grid `position`: `i.j.k`, or `0` for a scalar.
pub(crate) fn key(position: &[u64]) -> String {
    if position.is_empty() {
        return "0".into();
    }
    position
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_join_positions_with_dots() {
        assert_eq!(key(&[0, 12, 3]), "0.12.3");
        assert_eq!(key(&[]), "0");
    }

    #[test]
    fn small_contiguous_extents_are_one_block() {
        assert_eq!(row_blocks(&[40, 60], 8, 4 << 20), vec![40, 60]);
        assert_eq!(row_blocks(&[], 8, 4 << 20), Vec::<u64>::new());
        assert_eq!(row_blocks(&[0, 5], 8, 16), vec![1, 5]);
    }

    #[test]
    fn large_contiguous_extents_split_into_even_row_blocks() {
        // 4 000 000 bytes fit in 4 MiB: one block.
        assert_eq!(row_blocks(&[1000, 1000], 4, 4 << 20), vec![1000, 1000]);
        // 4000 rows of 8000 bytes: 524 rows fit; 500 divides 4000.
        assert_eq!(row_blocks(&[4000, 2000], 4, 4 << 20), vec![500, 2000]);
        // A prime row count falls back to single rows.
        assert_eq!(row_blocks(&[4001, 2000], 4, 4 << 20), vec![1, 2000]);
        // Rows larger than the limit are blocks of one row.
        assert_eq!(row_blocks(&[3, 10, 10], 8, 100), vec![1, 10, 10]);
        // 3-D: a block is whole planes' rows of the leading axis.
        assert_eq!(row_blocks(&[6, 4, 4], 4, 128), vec![2, 4, 4]);
    }
}
