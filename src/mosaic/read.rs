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
        let whole = Rect {
            row: 0,
            col: 0,
            rows: window.height as usize,
            cols: window.width as usize,
        };
        for slot in 0..bands.len() {
            let target = Target {
                start: slot * spacing.band,
                line: spacing.line,
                pixel: spacing.pixel,
            };
            assemble::fill_rect(&self.gap, whole, out, target);
        }
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

    /// Reads block (`block_x`, `block_y`) of `block` (width, height) pixels
    /// of `bands` into `outputs`, one native-order block buffer per band;
    /// the part of an edge block outside the level reads as the gap value.
    #[allow(clippy::too_many_arguments)]
    pub fn read_block(
        &self,
        index: &Index,
        locations: &Locations,
        block: (u64, u64),
        block_x: u64,
        block_y: u64,
        bands: &[u64],
        outputs: &mut [&mut [u8]],
    ) -> Result<()> {
        let size = self.gap.len();
        let (bw, bh) = (block.0 as usize, block.1 as usize);
        let block_bytes = bw * bh * size;
        if bands.len() != outputs.len() || outputs.iter().any(|o| o.len() < block_bytes) {
            return Err(Error::Usage {
                what: format!("one block buffer of {block_bytes} bytes per band is required"),
            });
        }
        let (x, y) = (
            block_x.saturating_mul(block.0),
            block_y.saturating_mul(block.1),
        );
        let window = Window {
            x,
            y,
            width: block.0.min(self.width.saturating_sub(x)),
            height: block.1.min(self.height.saturating_sub(y)),
        };
        let (w, h) = (window.width as usize, window.height as usize);
        let mut strip = vec![0u8; w * h * size * bands.len()];
        let spacing = Spacing::packed(size, w, h);
        self.read_window(index, locations, window, bands, &mut strip, spacing)?;
        for (plane, out) in strip.chunks_exact(spacing.band).zip(outputs.iter_mut()) {
            assemble::fill(&mut out[..block_bytes], &self.gap);
            for (r, row) in plane.chunks_exact(w * size).enumerate() {
                out[r * bw * size..][..w * size].copy_from_slice(row);
            }
        }
        Ok(())
    }
}
