//! Batched block reads: many (block, band) planes of one array filled in
//! one go, for GDAL's block cache. Every chunk the planes need is looked up,
//! fetched and decoded once (together, in parallel, see
//! [`read_chunks_each`]), and each plane is copied out of its chunk as soon
//! as it is decoded.
//!
//! This is what lets a band-by-band or scanline reader pay each chunk's
//! decode once: the shim asks for the blocks of every band sharing a chunk,
//! and for whole rows of blocks, and keeps them in GDAL's cache.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::base::buffers::recycle_bytes;
use crate::base::error::{Error, Result};
use crate::index::{Array, Index};
use crate::read::assemble;
use crate::read::chunk::{read_chunks_each, FirstFailure, Locations};

/// One block buffer to fill: the (y, x) plane of block (`x`, `y`) at
/// leading-axis indices `lead` (one per leading axis: the band).
#[derive(Debug)]
pub struct BlockPlane<'a> {
    /// Block column.
    pub x: u64,
    /// Block row.
    pub y: u64,
    /// Indices along the leading axes (the band's position).
    pub lead: Vec<u64>,
    /// A packed block of `chunks[y] * chunks[x]` native-order elements.
    pub out: &'a mut [u8],
}

/// Fills every plane of `planes` from `array`: chunks without a reference
/// read as the fill value. Fails (naming the chunk) if any chunk fails;
/// the buffers are then partly written and must be discarded.
pub fn read(
    index: &Index,
    locations: &Locations,
    array: &Array,
    planes: &mut [BlockPlane<'_>],
) -> Result<()> {
    let meta = &array.meta;
    let n = meta.shape.len();
    let block_bytes = (meta.chunks[n - 2] * meta.chunks[n - 1]) as usize * meta.dtype.size;
    if let Some(small) = planes.iter().find(|p| p.out.len() < block_bytes) {
        return Err(Error::Usage {
            what: format!(
                "block buffer of {} bytes, {block_bytes} needed",
                small.out.len()
            ),
        });
    }
    // Each distinct chunk once, in the order first asked for.
    let mut chunks: Vec<Vec<u64>> = Vec::new();
    let mut slot: HashMap<Vec<u64>, usize> = HashMap::new();
    let mut of_plane: Vec<usize> = Vec::with_capacity(planes.len());
    for p in planes.iter() {
        let mut idx: Vec<u64> = p
            .lead
            .iter()
            .zip(&meta.chunks)
            .map(|(i, c)| i / c)
            .collect();
        idx.extend([p.y, p.x]);
        let next = chunks.len();
        let k = *slot.entry(idx.clone()).or_insert(next);
        if k == next {
            chunks.push(idx);
        }
        of_plane.push(k);
    }
    let fill = meta
        .fill
        .clone()
        .unwrap_or_else(|| vec![0; meta.dtype.size]);
    // The planes of each chunk, filled as soon as it is decoded.
    let mut of_chunk: Vec<Vec<&mut BlockPlane<'_>>> = chunks.iter().map(|_| Vec::new()).collect();
    for (p, k) in planes.iter_mut().zip(of_plane) {
        of_chunk[k].push(p);
    }
    let of_chunk: Vec<Mutex<Vec<&mut BlockPlane<'_>>>> =
        of_chunk.into_iter().map(Mutex::new).collect();
    let failed = FirstFailure::default();
    read_chunks_each(
        index,
        locations,
        array,
        &chunks,
        None,
        &|k, decoded| match decoded {
            Ok(chunk) => {
                let mut mine = of_chunk[k].lock().unwrap_or_else(|p| p.into_inner());
                for p in mine.iter_mut() {
                    let out = &mut p.out[..block_bytes];
                    match &chunk {
                        Some(chunk) => {
                            let within: Vec<u64> = p
                                .lead
                                .iter()
                                .zip(&meta.chunks)
                                .map(|(i, c)| i % c)
                                .collect();
                            assemble::copy_plane(meta, chunk, &within, out);
                        }
                        None => assemble::fill(out, &fill),
                    }
                }
                drop(mine);
                if let Some(chunk) = chunk {
                    recycle_bytes(chunk);
                }
            }
            Err(e) => failed.record(k, e),
        },
    );
    failed.into_result()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::config::Settings;
    use crate::io::resolve::Base;

    /// A 3 x 4 x 4 u8 array in 3 x 2 x 2 chunks (pixel-interleaved: every
    /// chunk holds all bands); element (b, y, x) is 100 * b + 10 * y + x.
    /// Chunk (0, 1, 1) has no reference (fill 7).
    fn fixture(dir: &std::path::Path) -> Index {
        let mut file = Vec::new();
        let mut refs = serde_json::Map::new();
        refs.insert(
            "a/.zarray".into(),
            serde_json::json!({"shape": [3, 4, 4], "chunks": [3, 2, 2], "dtype": "|u1",
                "fill_value": 7, "compressor": null, "filters": null, "order": "C",
                "zarr_format": 2})
            .to_string()
            .into(),
        );
        for cy in 0..2u64 {
            for cx in 0..2u64 {
                if (cy, cx) == (1, 1) {
                    continue;
                }
                let offset = file.len();
                for b in 0..3u64 {
                    for y in 2 * cy..2 * cy + 2 {
                        for x in 2 * cx..2 * cx + 2 {
                            file.push((100 * b + 10 * y + x) as u8);
                        }
                    }
                }
                refs.insert(
                    format!("a/0.{cy}.{cx}"),
                    serde_json::json!(["data.bin", offset, file.len() - offset]),
                );
            }
        }
        std::fs::write(dir.join("data.bin"), &file).unwrap();
        let doc = serde_json::json!({"version": 1, "refs": refs}).to_string();
        Index::from_kerchunk_json("t.json", doc.as_bytes(), &[]).unwrap()
    }

    #[test]
    fn fills_planes_of_many_blocks_and_bands_at_once() {
        let dir = std::env::temp_dir().join(format!("chunkref-blocks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let index = fixture(&dir);
        let settings = Settings::from_lookup(|_| None).unwrap();
        let locations = Locations::resolve(&index, &Base::Dir(dir.clone()), &settings);
        let wanted = [
            (0u64, 0u64, 2u64),
            (1, 0, 0),
            (1, 1, 1),
            (0, 1, 0),
            (1, 0, 1),
        ];
        let mut buffers = vec![[0u8; 4]; wanted.len()];
        let mut planes: Vec<BlockPlane<'_>> = wanted
            .iter()
            .zip(buffers.iter_mut())
            .map(|(&(x, y, b), out)| BlockPlane {
                x,
                y,
                lead: vec![b],
                out,
            })
            .collect();
        read(&index, &locations, &index.arrays[0], &mut planes).unwrap();
        for (&(x, y, b), got) in wanted.iter().zip(&buffers) {
            let want: Vec<u8> = if (x, y) == (1, 1) {
                vec![7; 4]
            } else {
                (2 * y..2 * y + 2)
                    .flat_map(|r| (2 * x..2 * x + 2).map(move |c| (100 * b + 10 * r + c) as u8))
                    .collect()
            };
            assert_eq!(got.to_vec(), want, "block ({x}, {y}) band {b}");
        }
        let mut small = [0u8; 3];
        let e = read(
            &index,
            &locations,
            &index.arrays[0],
            &mut [BlockPlane {
                x: 0,
                y: 0,
                lead: vec![0],
                out: &mut small,
            }],
        )
        .unwrap_err();
        assert!(e.to_string().contains("4 needed"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
