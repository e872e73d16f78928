//! Where a dataset's bytes are: one reference per allocated chunk of a
//! chunked dataset (from the file's own chunk index), row blocks of a
//! contiguous one, or the inline bytes of a compact one.

use hdf5_metno_sys::h5::{haddr_t, herr_t, hsize_t, HADDR_UNDEF};
use hdf5_metno_sys::h5d::{
    H5Dget_chunk_info, H5Dget_num_chunks, H5Dget_offset, H5Dget_space, H5Dget_storage_size, H5Dread,
};
use hdf5_metno_sys::h5i::hid_t;
use hdf5_metno_sys::h5p::H5P_DEFAULT;
use hdf5_metno_sys::h5s::H5S_ALL;

use super::compat;
use super::filters;
use super::handle::{check, malformed, Handle};
use super::vfd::Reader;
use crate::base::error::{Error, Result};

/// The largest block of a contiguous dataset one reference covers: a
/// reader fetches no more than this for any tile.
pub(crate) const CONTIGUOUS_BLOCK_BYTES: u64 = 4 << 20;

/// The largest stored chunk located (HDF5 chunks are below 4 GiB; real
/// ones a few MiB): `H5Dread_chunk` is handed a buffer of its size.
const MAX_CHUNK_BYTES: u64 = 1 << 32;

/// Chunk grids with at most this many cells per allocated chunk are walked
/// cell by cell (see [`Dataset::chunked`]).
const GRID_PER_CHUNK: u64 = 4;

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

/// A stored chunk: its grid position, its bytes and its filter mask.
type Located = (Vec<u64>, Bytes, u32);

/// A dataset being indexed.
#[derive(Clone, Copy)]
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
    /// What libhdf5 reads the file through.
    pub(crate) reader: &'a Reader,
    /// The chunks with a skipped filter its codecs read (see
    /// [`filters::Skip`]), if any.
    pub(crate) skip: Option<filters::Skip>,
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
    /// none: they read as the fill value) with its file range, and the
    /// filter mask they all share (the filters every chunk skipped, which
    /// the codec list then leaves out); chunks whose masks differ are
    /// refused (but LZF's and szip's, see [`filters::Skip`]).
    ///
    /// libhdf5 1.10 has no one-pass chunk iteration, and its lookups by
    /// index (`H5Dget_chunk_info`) walk the chunk index from its start:
    /// listing n chunks that way takes time in n². Where the chunk grid is
    /// mostly written (at most [`GRID_PER_CHUNK`] cells per allocated
    /// chunk), each cell is looked up by its coordinate instead
    /// (`H5Dget_chunk_storage_size`, then `H5Dread_chunk` with raw reads
    /// recorded by the file driver, which gives the address): libhdf5
    /// searches its chunk index for those, in logarithmic or constant time.
    /// Sparse grids keep the lookups by index, which visit allocated chunks
    /// only.
    pub(crate) fn chunked(&self, chunks: &[u64]) -> Result<(Storage, u32)> {
        let mut allocated: hsize_t = 0;
        let what = || format!("cannot count the chunks of dataset '{}'", self.name);
        // SAFETY: valid dataset id; the dataspace is owned by a Handle.
        let space = Handle::new(unsafe { H5Dget_space(self.id) }, what)?;
        check(
            unsafe { H5Dget_num_chunks(self.id, space.id(), &mut allocated) },
            what,
        )?;
        let refs = match allocated {
            0 => Vec::new(),
            n => match grid_cells(self.shape, chunks) {
                Some(cells) if cells <= n.saturating_mul(GRID_PER_CHUNK) => {
                    match self.chunks_by_grid(chunks)? {
                        // Chunks outside the current shape are found by index.
                        found if found.len() as u64 == n => found,
                        _ => self.chunks_by_index(space.id(), n, chunks)?,
                    }
                }
                _ => self.chunks_by_index(space.id(), n, chunks)?,
            },
        };
        let skipped = self.shared_mask(&refs)?;
        let refs = refs
            .into_iter()
            .map(|(position, bytes, _)| (position, bytes))
            .collect();
        let storage = Storage {
            chunks: chunks.to_vec(),
            refs,
        };
        Ok((storage, skipped))
    }

    /// The filter mask every chunk of `refs` has; an error naming a chunk
    /// whose mask differs from the first's.
    fn shared_mask(&self, refs: &[Located]) -> Result<u32> {
        let Some((first, _, mask)) = refs.first() else {
            return Ok(0);
        };
        match refs.iter().find(|(_, _, m)| m != mask) {
            None => Ok(*mask),
            Some((position, _, other)) => {
                let (odd, odd_mask, usual, usual_mask) = match *mask {
                    0 => (position, *other, first, *mask),
                    _ => (first, *mask, position, *other),
                };
                Err(Error::unsupported(format!(
                    "chunk {} of dataset '{}' skips filters (filter mask {odd_mask:#x}) where \
                     chunk {} has filter mask {usual_mask:#x}, which a Zarr codec list cannot say \
                     for one chunk",
                    key(odd),
                    self.name,
                    key(usual)
                )))
            }
        }
    }

    /// The allocated chunks, each cell of the chunk grid looked up by its
    /// coordinate (in C order).
    fn chunks_by_grid(&self, chunks: &[u64]) -> Result<Vec<Located>> {
        let grid: Vec<u64> = self
            .shape
            .iter()
            .zip(chunks)
            .map(|(&n, &c)| n.div_ceil(c.max(1)))
            .collect();
        let mut found = Vec::new();
        let mut scratch = Vec::new();
        let mut position = vec![0u64; grid.len()];
        if grid.contains(&0) {
            return Ok(found);
        }
        loop {
            let offset: Vec<hsize_t> = position.iter().zip(chunks).map(|(p, c)| p * c).collect();
            let mut size: hsize_t = 0;
            // SAFETY: `offset` has one entry per dimension of the dataset.
            let status = unsafe { H5Dget_chunk_storage_size(self.id, offset.as_ptr(), &mut size) };
            if status < 0 {
                // libhdf5 1.10 fails for a chunk never allocated. A failed
                // read is an error; a chunk missed otherwise makes the count
                // differ, and the chunks are then listed by index.
                if let Some(e) = self.reader.take_failure() {
                    return Err(e);
                }
                size = 0;
            }
            if size > 0 {
                let (mask, addr) = self.locate(&offset, size, &mut scratch)?;
                found.push(self.reference(&position, mask, addr, size)?);
            }
            // The next cell in C order; done after the last.
            let Some(axis) = (0..grid.len()).rev().find(|&a| position[a] + 1 < grid[a]) else {
                return Ok(found);
            };
            position[axis] += 1;
            position[axis + 1..].iter_mut().for_each(|p| *p = 0);
        }
    }

    /// Where libhdf5 reads the `size` stored bytes of the chunk at element
    /// `offset`: `H5Dread_chunk` with raw reads recorded by the file driver
    /// (not performed; `scratch`, grown to `size` zeroed bytes, is the
    /// buffer it is handed and stays untouched). The filter mask and the
    /// address from the start of the file (user block included).
    fn locate(&self, offset: &[hsize_t], size: u64, scratch: &mut Vec<u8>) -> Result<(u32, u64)> {
        let fail = || format!("cannot locate a chunk of dataset '{}'", self.name);
        if size > MAX_CHUNK_BYTES {
            return Err(malformed(format!("{}: it stores {size} bytes", fail())));
        }
        if (scratch.len() as u64) < size {
            // Zeroed pages are mapped lazily: never written, never paid for.
            *scratch = vec![0u8; size as usize];
        }
        let mut mask = 0u32;
        // SAFETY: `offset` has one entry per dimension; `scratch` holds the
        // chunk's stored size.
        let (status, reads) = self.reader.recording(|| unsafe {
            compat::read_chunk(self.id, offset, &mut mask, &mut scratch[..size as usize])
        });
        check(status, fail)?;
        match reads[..] {
            [(addr, length)] if length == size => Ok((mask, addr)),
            _ => Err(malformed(format!(
                "{}: libhdf5 read {reads:?} (address, size) for a chunk of {size} bytes",
                fail()
            ))),
        }
    }

    /// The reference to a stored chunk at grid `position` and its filter
    /// mask (0 for a chunk stored without its optional LZF or szip filter,
    /// which the codec reads, see [`filters::Skip`]); an error when a
    /// compressed chunk is as long as one stored without it would be.
    fn reference(&self, position: &[u64], mask: u32, offset: u64, length: u64) -> Result<Located> {
        let bytes = Bytes::Range { offset, length };
        match self.skip {
            Some(skip) if length == skip.stored_len && mask == skip.mask => {
                return Ok((position.to_vec(), bytes, 0));
            }
            Some(skip) if length == skip.stored_len && mask == 0 => {
                return Err(Error::unsupported(format!(
                    "chunk {} of dataset '{}' holds an LZF or szip stream exactly as long \
                     as the chunk uncompressed ({length} bytes), which its codec would read \
                     as a chunk stored uncompressed",
                    key(position),
                    self.name
                )));
            }
            _ => {}
        }
        Ok((position.to_vec(), bytes, mask))
    }

    /// The `allocated` chunks by index in the file's chunk index (each
    /// lookup walks the index from its start).
    fn chunks_by_index(
        &self,
        space: hid_t,
        allocated: hsize_t,
        chunks: &[u64],
    ) -> Result<Vec<Located>> {
        let shift = self.address_shift(space)?;
        (0..allocated)
            .filter_map(|i| self.chunk_at(space, i, chunks, shift).transpose())
            .collect()
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
    ) -> Result<Option<Located>> {
        let (offsets, mask, addr, size) = self.chunk_info(space, index)?;
        let position: Vec<u64> = offsets
            .iter()
            .zip(chunks)
            .map(|(o, c)| o / c.max(&1))
            .collect();
        if addr == HADDR_UNDEF || size == 0 {
            return Ok(None);
        }
        self.reference(&position, mask, addr.saturating_add(shift), size)
            .map(Some)
    }

    /// What to add to the chunk addresses `H5Dget_chunk_info` reports to
    /// make them file offsets. libhdf5 1.10 reports them relative to the
    /// superblock, later releases from the start of the file; in a file
    /// with a user block, the first chunk is located as the file driver
    /// sees it (from the start of the file) and the two compared.
    fn address_shift(&self, space: hid_t) -> Result<u64> {
        if self.user_block == 0 {
            return Ok(0);
        }
        let (first, _, addr, size) = self.chunk_info(space, 0)?;
        let (_, absolute) = self.locate(&first, size, &mut Vec::new())?;
        absolute.checked_sub(addr).ok_or_else(|| {
            malformed(format!(
                "dataset '{}': chunk address {addr} lies past where it is read ({absolute})",
                self.name
            ))
        })
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

/// The number of cells of the chunk grid of `shape` in `chunks`; `None`
/// when it overflows.
fn grid_cells(shape: &[u64], chunks: &[u64]) -> Option<u64> {
    shape.iter().zip(chunks).try_fold(1u64, |cells, (&n, &c)| {
        cells.checked_mul(n.div_ceil(c.max(1)))
    })
}

extern "C" {
    /// libhdf5 1.10.2+: the stored size of the chunk at element `offset`
    /// (0 when it is not allocated), looked up in the chunk index (not
    /// declared by the binding crate).
    fn H5Dget_chunk_storage_size(
        dset_id: hid_t,
        offset: *const hsize_t,
        chunk_bytes: *mut hsize_t,
    ) -> herr_t;
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

    /// The chunk index kinds of libhdf5 1.10 (`H5D_chunk_index_t`).
    const BTREE: u32 = 0;
    const SINGLE: u32 = 1;
    const IMPLICIT: u32 = 2;
    const FIXED_ARRAY: u32 = 3;
    const EXTENSIBLE_ARRAY: u32 = 4;
    const BTREE2: u32 = 5;

    /// A chunked 2-D int32 dataset written by [`write_file`].
    struct Spec {
        name: &'static str,
        shape: [u64; 2],
        chunks: [u64; 2],
        /// Unlimited axes.
        unlimited: [bool; 2],
        /// Early allocation, no filters, nothing written (implicit index).
        early: bool,
        /// Which cells (in C order) are written.
        written: fn(u64) -> bool,
    }

    /// The stored bytes written for cell `i` (deflate declared; stored as
    /// they are, with sizes varying by cell).
    fn stored(i: u64) -> Vec<u8> {
        (0..16 + i % 7).map(|j| (i * 7 + j) as u8).collect()
    }

    const SPECS: &[Spec] = &[
        Spec {
            name: "fixed",
            shape: [10, 13],
            chunks: [3, 4],
            unlimited: [false, false],
            early: false,
            written: |i| i != 5,
        },
        Spec {
            name: "extensible",
            shape: [10, 13],
            chunks: [3, 4],
            unlimited: [true, false],
            early: false,
            written: |i| i % 3 != 1,
        },
        Spec {
            name: "btree2",
            shape: [10, 13],
            chunks: [3, 4],
            unlimited: [true, true],
            early: false,
            written: |_| true,
        },
        Spec {
            name: "single",
            shape: [10, 13],
            chunks: [10, 13],
            unlimited: [false, false],
            early: false,
            written: |_| true,
        },
        Spec {
            name: "implicit",
            shape: [10, 13],
            chunks: [3, 4],
            unlimited: [false, false],
            early: true,
            written: |_| false,
        },
        Spec {
            name: "sparse",
            shape: [100, 130],
            chunks: [3, 4],
            unlimited: [false, false],
            early: false,
            written: |i| i % 200 == 3,
        },
    ];

    /// Writes `path` with libhdf5: every dataset of [`SPECS`], chunks
    /// written directly, after a user block of `user_block` bytes, with
    /// the latest file format (`latest`) or the earliest.
    fn write_file(path: &std::path::Path, latest: bool, user_block: u64) {
        use hdf5_metno_sys::h5d::{H5D_alloc_time_t, H5Dcreate2, H5Dwrite_chunk};
        use hdf5_metno_sys::h5f::{H5F_libver_t, H5Fcreate, H5F_ACC_TRUNC, H5F_LIBVER_LATEST};
        use hdf5_metno_sys::h5p::{
            H5Pcreate, H5Pset_alloc_time, H5Pset_chunk, H5Pset_deflate, H5Pset_libver_bounds,
            H5Pset_userblock, H5P_CLS_DATASET_CREATE, H5P_CLS_FILE_ACCESS, H5P_CLS_FILE_CREATE,
        };
        use hdf5_metno_sys::h5s::{H5Screate_simple, H5S_UNLIMITED};
        use hdf5_metno_sys::h5t::H5T_STD_I32LE;
        let what = || "test file".to_string();
        let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: valid ids, NUL-terminated names, buffers of the sizes given.
        unsafe {
            let fcpl = Handle::new(H5Pcreate(*H5P_CLS_FILE_CREATE), what).unwrap();
            check(H5Pset_userblock(fcpl.id(), user_block), what).unwrap();
            let fapl = Handle::new(H5Pcreate(*H5P_CLS_FILE_ACCESS), what).unwrap();
            let low = if latest {
                H5F_LIBVER_LATEST
            } else {
                H5F_libver_t::H5F_LIBVER_EARLIEST
            };
            check(
                H5Pset_libver_bounds(fapl.id(), low, H5F_LIBVER_LATEST),
                what,
            )
            .unwrap();
            let file = Handle::new(
                H5Fcreate(name.as_ptr(), H5F_ACC_TRUNC, fcpl.id(), fapl.id()),
                what,
            )
            .unwrap();
            for spec in SPECS {
                let max: Vec<u64> = (0..2)
                    .map(|a| {
                        if spec.unlimited[a] {
                            H5S_UNLIMITED
                        } else {
                            spec.shape[a]
                        }
                    })
                    .collect();
                let space =
                    Handle::new(H5Screate_simple(2, spec.shape.as_ptr(), max.as_ptr()), what)
                        .unwrap();
                let dcpl = Handle::new(H5Pcreate(*H5P_CLS_DATASET_CREATE), what).unwrap();
                check(H5Pset_chunk(dcpl.id(), 2, spec.chunks.as_ptr()), what).unwrap();
                if spec.early {
                    check(
                        H5Pset_alloc_time(dcpl.id(), H5D_alloc_time_t::H5D_ALLOC_TIME_EARLY),
                        what,
                    )
                    .unwrap();
                } else {
                    check(H5Pset_deflate(dcpl.id(), 4), what).unwrap();
                }
                let c = std::ffi::CString::new(spec.name).unwrap();
                let dset = Handle::new(
                    H5Dcreate2(
                        file.id(),
                        c.as_ptr(),
                        *H5T_STD_I32LE,
                        space.id(),
                        H5P_DEFAULT,
                        dcpl.id(),
                        H5P_DEFAULT,
                    ),
                    what,
                )
                .unwrap();
                let grid = grid_of(spec);
                for i in (0..grid[0] * grid[1]).filter(|&i| (spec.written)(i)) {
                    let offset = [i / grid[1] * spec.chunks[0], i % grid[1] * spec.chunks[1]];
                    let bytes = stored(i);
                    check(
                        H5Dwrite_chunk(
                            dset.id(),
                            H5P_DEFAULT,
                            0,
                            offset.as_ptr(),
                            bytes.len(),
                            bytes.as_ptr().cast(),
                        ),
                        what,
                    )
                    .unwrap();
                }
            }
            drop(file);
        }
    }

    fn grid_of(spec: &Spec) -> [u64; 2] {
        [
            spec.shape[0].div_ceil(spec.chunks[0]),
            spec.shape[1].div_ceil(spec.chunks[1]),
        ]
    }

    #[test]
    fn hdf5_chunks_by_grid_equal_chunks_by_index_on_every_chunk_index_kind() {
        use hdf5_metno_sys::h5d::{H5Dget_chunk_index_type, H5Dopen2};
        use hdf5_metno_sys::h5f::{H5Fopen, H5F_ACC_RDONLY};
        use std::sync::Arc;
        let _library = hdf5_metno_sys::LOCK.lock();
        // SAFETY: initialises the library (idempotent).
        unsafe { hdf5_metno_sys::h5::H5open() };
        super::super::handle::silence_library();
        let dir = std::env::temp_dir().join(format!("chunkref-kinds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let what = || "test".to_string();
        let mut kinds = std::collections::BTreeSet::new();
        for (latest, user_block) in [(false, 0), (false, 512), (true, 0), (true, 1024)] {
            let path = dir.join(format!("kinds-{latest}-{user_block}.h5"));
            write_file(&path, latest, user_block);
            let file_bytes = std::fs::read(&path).unwrap();
            let reader = Reader::open(path.to_str().unwrap()).unwrap();
            let fapl = reader.fapl().unwrap();
            let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
            // SAFETY: valid names and property list; ids owned by Handles.
            let file = Handle::new(
                unsafe { H5Fopen(name.as_ptr(), H5F_ACC_RDONLY, fapl.id()) },
                what,
            )
            .unwrap();
            for spec in SPECS {
                let c = std::ffi::CString::new(spec.name).unwrap();
                let id = Handle::new(
                    unsafe { H5Dopen2(file.id(), c.as_ptr(), H5P_DEFAULT) },
                    what,
                )
                .unwrap();
                let mut kind = 0;
                check(unsafe { H5Dget_chunk_index_type(id.id(), &mut kind) }, what).unwrap();
                let want_kind = match (latest, spec.name) {
                    (false, _) => BTREE,
                    (true, "single") => SINGLE,
                    (true, "implicit") => IMPLICIT,
                    (true, "extensible") => EXTENSIBLE_ARRAY,
                    (true, "btree2") => BTREE2,
                    (true, _) => FIXED_ARRAY,
                };
                assert_eq!(kind, want_kind, "{} latest {latest}", spec.name);
                kinds.insert(kind);
                let array = Dataset {
                    id: id.id(),
                    name: spec.name,
                    shape: &spec.shape,
                    item_size: 4,
                    user_block,
                    reader: &reader,
                    skip: None,
                };
                let space = Handle::new(unsafe { H5Dget_space(id.id()) }, what).unwrap();
                let mut n = 0;
                check(
                    unsafe { H5Dget_num_chunks(id.id(), space.id(), &mut n) },
                    what,
                )
                .unwrap();
                let by_grid = array.chunks_by_grid(&spec.chunks).unwrap();
                let mut by_index = array.chunks_by_index(space.id(), n, &spec.chunks).unwrap();
                by_index.sort_by(|a, b| a.0.cmp(&b.0));
                let label = format!("{} (latest {latest}, user block {user_block})", spec.name);
                assert_eq!(by_grid, by_index, "{label}");
                assert_eq!(by_grid.len() as u64, n, "{label}");
                assert_eq!(array.chunked(&spec.chunks).unwrap().0.refs.len() as u64, n);
                let grid = grid_of(spec);
                for (position, bytes, _) in &by_grid {
                    let Bytes::Range { offset, length } = bytes else {
                        panic!("{label}")
                    };
                    let i = position[0] * grid[1] + position[1];
                    let at = &file_bytes[*offset as usize..(offset + length) as usize];
                    if spec.early {
                        assert_eq!(*length, 3 * 4 * 4, "{label}");
                    } else {
                        assert!((spec.written)(i) && at == stored(i), "{label} chunk {i}");
                    }
                }
                if spec.early {
                    assert_eq!(by_grid.len() as u64, grid[0] * grid[1], "{label}");
                }
            }
            // Closed, libhdf5 holds no reference to the reader.
            drop((file, fapl));
            assert_eq!(Arc::strong_count(&reader), 1);
        }
        assert_eq!(
            kinds.into_iter().collect::<Vec<_>>(),
            vec![
                BTREE,
                SINGLE,
                IMPLICIT,
                FIXED_ARRAY,
                EXTENSIBLE_ARRAY,
                BTREE2
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
