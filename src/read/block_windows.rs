//! Block reads through windows, for levels whose blocks straddle chunks
//! (mosaic scenes off the block grid, rows served in reverse order, rolled
//! columns): the rectangle of blocks asked for is read a row of blocks at a
//! time, each row as one window, and each block copied out of it. A chunk
//! under several blocks of a row is then decoded once; one under two rows
//! is decoded once when the level keeps decoded chunks.

use crate::base::error::{Error, Result};
use crate::read::assemble;
use crate::read::window::{Spacing, Window};

/// One block buffer: block column `x`, row `y` of band `band` (0-based).
pub struct BlockOut<'a> {
    /// Block column.
    pub x: u64,
    /// Block row.
    pub y: u64,
    /// Band (0-based).
    pub band: u64,
    /// The block's native-order elements, `block width x block height`.
    pub out: &'a mut [u8],
}

/// Reads a window of bands (0-based, ascending) into a buffer at a spacing.
pub type ReadWindow<'r> = dyn FnMut(Window, &[u64], &mut [u8], Spacing) -> Result<()> + 'r;

/// Fills `outputs`, blocks of `block` (width, height) pixels of a `plane`
/// (width, height) level, through `read_window`; the part of an edge block
/// outside the level reads as `fill` (one native-order element).
pub fn read(
    plane: (u64, u64),
    block: (u64, u64),
    fill: &[u8],
    outputs: Vec<BlockOut<'_>>,
    read_window: &mut ReadWindow<'_>,
) -> Result<()> {
    if dense(outputs.iter().map(|o| (o.x, o.y))) {
        return read_rect(plane, block, fill, outputs, read_window);
    }
    // Scattered blocks: each on its own rather than all between them.
    let mut rest = outputs;
    while let Some(first) = rest.first() {
        let at = (first.x, first.y);
        let (mine, others) = rest.into_iter().partition(|o| (o.x, o.y) == at);
        rest = others;
        read_rect(plane, block, fill, mine, read_window)?;
    }
    Ok(())
}

/// [`read`] of the rectangle of blocks `outputs` span, a row of blocks at
/// a time.
fn read_rect(
    plane: (u64, u64),
    block: (u64, u64),
    fill: &[u8],
    outputs: Vec<BlockOut<'_>>,
    read_window: &mut ReadWindow<'_>,
) -> Result<()> {
    let size = fill.len();
    let (bw, bh) = (block.0 as usize, block.1 as usize);
    let block_bytes = bw * bh * size;
    if outputs.iter().any(|o| o.out.len() < block_bytes) {
        return Err(Error::Usage {
            what: format!("one block buffer of {block_bytes} bytes per band is required"),
        });
    }
    let Some(cols) = span(outputs.iter().map(|o| o.x)) else {
        return Ok(());
    };
    let rows = span(outputs.iter().map(|o| o.y)).unwrap_or(cols);
    let mut bands: Vec<u64> = outputs.iter().map(|o| o.band).collect();
    bands.sort_unstable();
    bands.dedup();
    let x = cols.0.saturating_mul(block.0);
    let width = ((cols.1 - cols.0 + 1) * block.0).min(plane.0.saturating_sub(x));
    let w = width as usize;
    // One row of blocks at a time through one strip.
    let row_bytes = (w * bh * size)
        .checked_mul(bands.len())
        .ok_or_else(|| Error::Limits {
            what: format!("a {w} x {bh} window of {} bands", bands.len()),
        })?;
    let mut strip = Vec::new();
    strip
        .try_reserve_exact(row_bytes)
        .map_err(|_| Error::Limits {
            what: format!("cannot allocate {row_bytes} bytes for a {w} x {bh} window"),
        })?;
    strip.resize(row_bytes, 0);
    let mut outputs = outputs;
    for row in rows.0..=rows.1 {
        let y = row.saturating_mul(block.1);
        let h = block.1.min(plane.1.saturating_sub(y)) as usize;
        let (these, rest): (Vec<_>, Vec<_>) = outputs.into_iter().partition(|o| o.y == row);
        outputs = rest;
        if these.is_empty() || h == 0 || w == 0 {
            continue;
        }
        let window = Window {
            x,
            y,
            width,
            height: h as u64,
        };
        let spacing = Spacing::packed(size, w, h);
        let strip = &mut strip[..spacing.band * bands.len()];
        read_window(window, &bands, strip, spacing)?;
        for o in these {
            let slot = bands.binary_search(&o.band).unwrap_or(0);
            let plane = &strip[slot * spacing.band..][..spacing.band];
            let c0 = (o.x - cols.0) as usize * bw;
            let cw = bw.min(w.saturating_sub(c0));
            if cw < bw || h < bh {
                assemble::fill(&mut o.out[..block_bytes], fill);
            }
            for r in 0..h {
                let from = &plane[(r * w + c0) * size..][..cw * size];
                o.out[r * bw * size..][..cw * size].copy_from_slice(from);
            }
        }
    }
    Ok(())
}

/// Whether the blocks at `places` (column, row) fill at least half of the
/// rectangle they span: then reading the rectangle wastes little.
fn dense(places: impl Iterator<Item = (u64, u64)>) -> bool {
    let mut places: Vec<(u64, u64)> = places.collect();
    places.sort_unstable();
    places.dedup();
    let side = |s: Option<(u64, u64)>| s.map_or(0, |(lo, hi)| hi - lo + 1);
    let cols = side(span(places.iter().map(|p| p.0)));
    let rows = side(span(places.iter().map(|p| p.1)));
    cols.saturating_mul(rows) <= 2 * places.len() as u64
}

/// The smallest and largest of `values`.
fn span(values: impl Iterator<Item = u64>) -> Option<(u64, u64)> {
    values.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rectangles_of_blocks_are_read_whole_and_scattered_blocks_alone() {
        assert!(dense([(3, 4)].into_iter()));
        assert!(dense((0..4).flat_map(|x| (0..2).map(move |y| (x, y)))));
        assert!(dense([(0, 0), (1, 1)].into_iter()), "2 of 4");
        assert!(!dense([(0, 0), (2, 2)].into_iter()), "2 of 9");
        assert!(!dense([(0, 0), (0, 0), (0, 9)].into_iter()), "2 of 10");
        assert_eq!(span([5, 2, 9].into_iter()), Some((2, 9)));
        assert_eq!(span(std::iter::empty()), None);
    }
}
