//! Reading a mosaic level: gaps filled with nodata (or 0), then the part of
//! every scene the window meets pasted in order, later scenes over earlier
//! ones and each scene's nodata left out, with the chunks of all scenes
//! fetched and decoded together.

use super::{grid, Scenes};
use crate::assemble::{self, Rect, Target};
use crate::chunk::Locations;
use crate::error::{Error, Result};
use crate::index::Index;
use crate::raster::Dataset;
use crate::window::{self, Layer, Spacing, Window};

impl Scenes {
    /// Reads `window` of `bands` (0-based band numbers) of the level into
    /// `out` at `spacing`, as native-order elements.
    pub fn read_window(
        &self,
        index: &Index,
        locations: &Locations,
        window: Window,
        bands: &[u64],
        out: &mut [u8],
        spacing: Spacing,
    ) -> Result<()> {
        window::check_window(window, self.width, self.height, "mosaic")?;
        window::check_buffer(window, bands.len(), self.gap.len(), spacing, out.len())?;
        let met: Vec<_> = self
            .scenes
            .iter()
            .filter_map(|s| {
                let (inner, at) = grid::overlap(window, s.place)?;
                let meta = &index.arrays[s.array].meta;
                let lead = bands.iter().map(|&b| Dataset::band_indices(meta, b));
                Some((s, inner, at, lead.collect::<Vec<_>>()))
            })
            .collect();
        // The gap value goes where no scene without nodata lands.
        let opaque: Vec<Window> = met
            .iter()
            .filter(|(s, ..)| s.nodata.is_none())
            .map(|(_, inner, at, _)| Window {
                x: at.1,
                y: at.0,
                width: inner.width,
                height: inner.height,
            })
            .collect();
        for gap in grid::uncovered(window.width, window.height, &opaque) {
            let rect = Rect {
                row: 0,
                col: 0,
                rows: gap.height as usize,
                cols: gap.width as usize,
            };
            for slot in 0..bands.len() {
                let target = Target {
                    start: slot * spacing.band
                        + gap.y as usize * spacing.line
                        + gap.x as usize * spacing.pixel,
                    line: spacing.line,
                    pixel: spacing.pixel,
                };
                assemble::fill_rect(&self.gap, rect, out, target);
            }
        }
        let layers: Vec<Layer<'_>> = met
            .iter()
            .map(|(s, inner, at, lead)| Layer {
                array: &index.arrays[s.array],
                window: *inner,
                bands: lead,
                at: *at,
                nodata: s.nodata.as_ref(),
            })
            .collect();
        window::read_layers(index, locations, &layers, out, spacing, window::BATCH_BYTES)
    }

    /// Reads blocks of `block` (width, height) pixels: `outputs` holds one
    /// native-order block buffer per (block column, block row, band) asked
    /// for. The rectangle of blocks they span is read a row of blocks at a
    /// time, each row as one window, so each scene chunk under it is
    /// fetched and decoded once however many blocks it straddles (those
    /// under two rows are kept decoded by `locations`); the part of an edge
    /// block outside the level reads as the gap value.
    pub fn read_blocks(
        &self,
        index: &Index,
        locations: &Locations,
        block: (u64, u64),
        outputs: Vec<BlockOut<'_>>,
    ) -> Result<()> {
        if dense(outputs.iter().map(|o| (o.x, o.y))) {
            return self.read_rect(index, locations, block, outputs);
        }
        // Scattered blocks: each on its own rather than all between them.
        let mut rest = outputs;
        while let Some(first) = rest.first() {
            let at = (first.x, first.y);
            let (mine, others) = rest.into_iter().partition(|o| (o.x, o.y) == at);
            rest = others;
            self.read_rect(index, locations, block, mine)?;
        }
        Ok(())
    }

    /// [`Scenes::read_blocks`] of the rectangle of blocks `outputs` span,
    /// read a row of blocks at a time.
    fn read_rect(
        &self,
        index: &Index,
        locations: &Locations,
        block: (u64, u64),
        outputs: Vec<BlockOut<'_>>,
    ) -> Result<()> {
        let size = self.gap.len();
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
        let width = ((cols.1 - cols.0 + 1) * block.0).min(self.width.saturating_sub(x));
        let w = width as usize;
        // One row of blocks at a time through one strip: the scene chunks
        // straddling two rows are decoded once (kept by the locations).
        let row_bytes = (w * bh * size)
            .checked_mul(bands.len())
            .ok_or_else(|| Error::Limits {
                what: format!("a {w} x {bh} window of {} bands", bands.len()),
            })?;
        let mut strip = Vec::new();
        strip
            .try_reserve_exact(row_bytes)
            .map_err(|_| Error::Limits {
                what: format!("cannot allocate {row_bytes} bytes for a {w} x {bh} mosaic window"),
            })?;
        strip.resize(row_bytes, 0);
        let mut outputs = outputs;
        for row in rows.0..=rows.1 {
            let y = row.saturating_mul(block.1);
            let h = block.1.min(self.height.saturating_sub(y)) as usize;
            let (these, rest): (Vec<_>, Vec<_>) = outputs.into_iter().partition(|o| o.y == row);
            outputs = rest;
            if these.is_empty() || h == 0 {
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
            self.read_window(index, locations, window, &bands, strip, spacing)?;
            for o in these {
                let slot = bands.binary_search(&o.band).unwrap_or(0);
                let plane = &strip[slot * spacing.band..][..spacing.band];
                let c0 = (o.x - cols.0) as usize * bw;
                let cw = bw.min(w.saturating_sub(c0));
                if cw < bw || h < bh {
                    assemble::fill(&mut o.out[..block_bytes], &self.gap);
                }
                for r in 0..h {
                    let from = &plane[(r * w + c0) * size..][..cw * size];
                    o.out[r * bw * size..][..cw * size].copy_from_slice(from);
                }
            }
        }
        Ok(())
    }
}

/// One block buffer of a mosaic block read: block column `x`, row `y` of
/// band `band` (0-based).
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
