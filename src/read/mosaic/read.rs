//! Reading a mosaic level: gaps filled with nodata (or 0), then the part of
//! every scene the window meets pasted in order, later scenes over earlier
//! ones and each scene's nodata left out, with the chunks of all scenes
//! fetched and decoded together.

use super::grid;
use crate::base::error::Result;
use crate::index::Index;
use crate::read::assemble::{self, Rect, Target};
use crate::read::block_windows::{self, BlockOut};
use crate::read::chunk::Locations;
use crate::read::level::Scenes;
use crate::read::raster::Dataset;
use crate::read::window::{self, Layer, Spacing, Window};

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
                    line: spacing.line as isize,
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
                rows_reversed: false,
            })
            .collect();
        window::read_layers(index, locations, &layers, out, spacing, window::BATCH_BYTES)
    }

    /// Reads blocks of `block` (width, height) pixels: `outputs` holds one
    /// native-order block buffer per (block column, block row, band) asked
    /// for, read through windows (see [`block_windows`]) so that each scene
    /// chunk under them is fetched and decoded once however many blocks it
    /// straddles; the part of an edge block outside the level reads as the
    /// gap value.
    pub fn read_blocks(
        &self,
        index: &Index,
        locations: &Locations,
        block: (u64, u64),
        outputs: Vec<BlockOut<'_>>,
    ) -> Result<()> {
        let plane = (self.width, self.height);
        block_windows::read(plane, block, &self.gap, outputs, &mut |w, b, o, s| {
            self.read_window(index, locations, w, b, o, s)
        })
    }
}
