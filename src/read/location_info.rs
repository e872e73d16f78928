//! The files a pixel is read from: what GDAL's `LocationInfo` metadata
//! item (`Pixel_<x>_<y>` of a band) answers, as GDAL's VRT and GTI drivers
//! answer it for their sources. `gdallocationinfo` prints it for each band,
//! and `-lifonly` lists the files alone: for a time stack, the file of
//! each date; for a mosaic, every scene under the pixel. And where one
//! chunk of an array lies (the multidimensional view's raw block info).

use crate::base::error::{Error, Result};
use crate::index::refs;
use crate::read::mosaic::grid;
use crate::read::raster::Dataset;
use crate::read::window::Window;

/// The GDAL names (local paths, `/vsis3/...`, `/vsicurl/...`) of the files
/// holding the chunks that pixel (`x`, `y`) of `band` (0-based) of `level`
/// is read from: one file, or for a mosaic each scene covering the pixel in
/// paste order. None where the pixel is a fill value (no reference) or its
/// chunk is held in the index itself.
pub fn files_at(ds: &Dataset, level: usize, band: u64, x: u64, y: u64) -> Result<Vec<String>> {
    ds.level_meta(level)?;
    let l = &ds.levels[level];
    if band >= l.bands || x >= l.width || y >= l.height {
        return Err(Error::Usage {
            what: format!(
                "pixel ({x}, {y}) of band {} is outside level {level} ({} x {}, {} bands)",
                band + 1,
                l.width,
                l.height,
                l.bands
            ),
        });
    }
    let pixel = Window {
        x,
        y,
        width: 1,
        height: 1,
    };
    // The stored pixel of each array that serves this one.
    let stored: Vec<(usize, Window)> = match &l.mosaic {
        Some(scenes) => scenes
            .scenes
            .iter()
            .filter_map(|s| grid::overlap(pixel, s.place).map(|(inner, _)| (s.array, inner)))
            .collect(),
        None => l
            .axes
            .parts(pixel, l.width, l.height)
            .into_iter()
            .map(|part| (l.array, part.stored))
            .collect(),
    };
    let mut files: Vec<String> = Vec::new();
    for (a, at) in stored {
        let array = &ds.index.arrays[a];
        let meta = &array.meta;
        let chunk: Vec<u64> = Dataset::band_indices(meta, band)
            .into_iter()
            .chain([at.y, at.x])
            .zip(&meta.chunks)
            .map(|(i, c)| i / c.max(&1))
            .collect();
        let Some(position) = refs::position(&chunk, &meta.grid_shape()) else {
            continue;
        };
        let found = array.refs.lookup(&[position])?.pop().flatten();
        let Some(name) = found.and_then(|r| r.file()).and_then(|f| ds.file_name(f)) else {
            continue;
        };
        if !files.contains(&name) {
            files.push(name);
        }
    }
    Ok(files)
}

/// The reference of chunk `block` (one index per dimension the array
/// declares) of stored array `array`, answered from the index without
/// fetching: `None` for a chunk the index holds no reference for (read as
/// the fill value).
pub fn chunk_at(ds: &Dataset, array: usize, block: &[u64]) -> Result<Option<refs::RawRef>> {
    let stored = &ds.index.arrays[array];
    let meta = &stored.meta;
    let declared = meta.shape.len() - meta.added_axes;
    let grid = meta.grid_shape();
    if block.len() != declared
        || block
            .iter()
            .zip(&grid[meta.added_axes..])
            .any(|(b, g)| b >= g)
    {
        return Err(Error::Usage {
            what: format!(
                "block {block:?} is outside the chunk grid {:?} of array '{}'",
                &grid[meta.added_axes..],
                meta.path
            ),
        });
    }
    let chunk: Vec<u64> = std::iter::repeat_n(0, meta.added_axes)
        .chain(block.iter().copied())
        .collect();
    let Some(position) = refs::position(&chunk, &grid) else {
        return Ok(None);
    };
    Ok(stored.refs.lookup(&[position])?.pop().flatten())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::index::Index;
    use crate::io::config::Settings;
    use crate::io::resolve::Base;
    use crate::read::georef::orientation::YOrder;

    #[test]
    fn names_the_file_of_the_chunk_under_a_pixel() {
        // Two bands of 4 x 4 pixels in 2 x 2 chunks: band 0's chunks in
        // a.bin and b.bin (one inline, one never written), band 1's in c.bin.
        let zarray = serde_json::json!({
            "shape": [2, 4, 4], "chunks": [1, 2, 2], "dtype": "|u1", "fill_value": 0,
            "compressor": null, "filters": null, "order": "C", "zarr_format": 2,
        });
        let refs = serde_json::json!({
            ".zarray": zarray.to_string(),
            "0.0.0": ["a.bin", 0, 4], "0.0.1": ["b.bin", 0, 4], "0.1.0": "base64:AAAAAA==",
            "1.0.0": ["c.bin", 0, 4], "1.0.1": ["c.bin", 4, 4], "1.1.0": ["c.bin", 8, 4],
            "1.1.1": ["c.bin", 12, 4],
        });
        let doc = serde_json::json!({"version": 1, "refs": refs}).to_string();
        let index = Index::from_kerchunk_json("t.json", doc.as_bytes(), &[]).unwrap();
        let settings = Settings::from_lookup(|_| None).unwrap();
        let base = Base::Dir("/d".into());
        let ds =
            Dataset::from_index(Arc::new(index), &base, &settings, None, YOrder::Stored).unwrap();
        let at = |band, x, y| files_at(&ds, 0, band, x, y).unwrap();
        assert_eq!(at(0, 1, 1), ["/d/a.bin"]);
        assert_eq!(at(0, 3, 0), ["/d/b.bin"]);
        assert!(at(0, 0, 3).is_empty(), "an inline chunk");
        assert!(at(0, 3, 3).is_empty(), "a chunk never written");
        assert_eq!(at(1, 3, 3), ["/d/c.bin"]);
        for (band, x, y) in [(2, 0, 0), (0, 4, 0), (0, 0, 4)] {
            let e = files_at(&ds, 0, band, x, y).unwrap_err().to_string();
            assert!(e.contains("outside level 0"), "{e}");
        }
    }
}
