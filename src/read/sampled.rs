//! Nearest-neighbour resampled reads: a zoomed-out (or zoomed-in) view of a
//! level that no overview serves. GDAL's own path samples such a view from
//! full-resolution blocks pulled one at a time through its block cache;
//! here the source rows and columns GDAL's rule picks are found first, the
//! rows of chunks holding them are read a strip at a time through the
//! window reader (chunks fetched together, decoded in parallel), and the
//! picked pixels are copied into the caller's buffer. Pixels are those
//! GDAL's nearest-neighbour sampling returns, bit for bit.

use crate::base::error::{Error, Result};
use crate::read::raster::Dataset;
use crate::read::window::{check_buffer, Spacing, Window};

/// Largest strip of decoded pixels a sampled read holds at once; wider
/// strips are read in several runs of whole chunk columns.
const MAX_STRIP_BYTES: usize = 64 << 20;

/// GDAL's guard against rounding just below a pixel edge.
const EPS: f64 = 1e-10;

/// A resampled read: the source window, fractional as GDAL's
/// `GDALRasterIOExtraArg` may give it, and the buffer size it maps to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// First source column (may be fractional).
    pub x: f64,
    /// First source row (may be fractional).
    pub y: f64,
    /// Source columns covered.
    pub width: f64,
    /// Source rows covered.
    pub height: f64,
    /// Buffer columns.
    pub buf_width: u64,
    /// Buffer rows.
    pub buf_height: u64,
}

impl Sampling {
    /// The source column of each buffer column, as GDAL 3.6's
    /// `GDALRasterBand::IRasterIO` picks them: a running sum from the
    /// centre of the first buffer pixel, clamped to the raster.
    pub fn columns(&self, raster_width: u64) -> Vec<u64> {
        let step = self.width / self.buf_width as f64;
        let mut at = 0.5 * step + self.x + EPS;
        (0..self.buf_width)
            .map(|_| {
                let col = clamp(at, raster_width);
                at += step;
                col
            })
            .collect()
    }

    /// The source row of each buffer row: the centre of buffer row `i`,
    /// `(i + 0.5) * step`, from the window's top, clamped to the raster.
    pub fn rows(&self, raster_height: u64) -> Vec<u64> {
        let step = self.height / self.buf_height as f64;
        (0..self.buf_height)
            .map(|i| clamp((i as f64 + 0.5) * step + self.y + EPS, raster_height))
            .collect()
    }
}

/// `at` truncated to a pixel index in `0..len`.
fn clamp(at: f64, len: u64) -> u64 {
    at.max(0.0).min(len.saturating_sub(1) as f64) as u64
}

/// Consecutive runs of `positions` (ascending) whose chunks, `chunk` pixels
/// wide, are adjacent: `(first position index, end position index)`, each
/// run at most `most_chunks` chunks long. Chunks holding no picked position
/// are never read.
fn runs(positions: &[u64], chunk: u64, most_chunks: u64) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for i in 1..=positions.len() {
        let split = i == positions.len() || {
            let (first, prev, this) = (
                positions[start] / chunk,
                positions[i - 1] / chunk,
                positions[i] / chunk,
            );
            this > prev + 1 || this - first >= most_chunks
        };
        if split {
            out.push((start, i));
            start = i;
        }
    }
    out
}

impl Dataset {
    /// Reads `bands` (0-based) of `level` resampled by nearest neighbour
    /// as `sampling` says into `out`, element (b, r, c) of the buffer at
    /// `b * spacing.band + r * spacing.line + c * spacing.pixel`, in the
    /// level's native type.
    pub fn read_sampled(
        &self,
        level: usize,
        sampling: Sampling,
        bands: &[u64],
        out: &mut [u8],
        spacing: Spacing,
    ) -> Result<()> {
        let meta = self.level_meta(level)?;
        let l = &self.levels[level];
        let size = meta.dtype.size;
        let n = meta.chunks.len();
        let (chunk_w, chunk_h) = (meta.chunks[n - 1].max(1), meta.chunks[n - 2].max(1));
        let buffer = Window {
            x: 0,
            y: 0,
            width: sampling.buf_width,
            height: sampling.buf_height,
        };
        check_buffer(buffer, bands.len(), size, spacing, out.len())?;
        // Positions are clamped to the raster, as GDAL clamps them (a
        // fractional window may overshoot its edge by a rounding error).
        let usable = |v: f64| v.is_finite() && v >= 0.0;
        if ![sampling.x, sampling.y, sampling.width, sampling.height]
            .into_iter()
            .all(usable)
        {
            return Err(Error::Usage {
                what: format!(
                    "the window {sampling:?} of the {} x {} raster is not a window",
                    l.width, l.height
                ),
            });
        }
        if bands.is_empty() || sampling.buf_width == 0 || sampling.buf_height == 0 {
            return Ok(());
        }
        let cols = sampling.columns(l.width);
        let rows = sampling.rows(l.height);
        let strip_row_bytes = chunk_w as usize * size * bands.len() * chunk_h as usize;
        let most_chunks = (MAX_STRIP_BYTES / strip_row_bytes.max(1)).max(1) as u64;
        let col_runs = runs(&cols, chunk_w, most_chunks);
        let mut strip: Vec<u8> = Vec::new();
        for (r0, r1) in runs(&rows, chunk_h, 1) {
            let (y0, y1) = (rows[r0], rows[r1 - 1] + 1);
            for &(c0, c1) in &col_runs {
                let (x0, x1) = (cols[c0], cols[c1 - 1] + 1);
                let (w, h) = ((x1 - x0) as usize, (y1 - y0) as usize);
                let window = Window {
                    x: x0,
                    y: y0,
                    width: w as u64,
                    height: h as u64,
                };
                let packed = Spacing::packed(size, w, h);
                let bytes = packed.band * bands.len();
                if strip.len() < bytes {
                    strip
                        .try_reserve_exact(bytes - strip.len())
                        .map_err(|_| Error::Limits {
                            what: format!("cannot allocate {bytes} bytes for a {w} x {h} strip"),
                        })?;
                    strip.resize(bytes, 0);
                }
                self.read_window(level, window, bands, &mut strip[..bytes], packed)?;
                for (b, plane) in strip[..bytes].chunks_exact(packed.band).enumerate() {
                    for (i, &row) in rows.iter().enumerate().take(r1).skip(r0) {
                        let line = &plane[(row - y0) as usize * packed.line..][..packed.line];
                        let at = b * spacing.band + i * spacing.line;
                        pick(
                            line,
                            &cols[c0..c1],
                            x0,
                            size,
                            &mut out[at..],
                            c0,
                            spacing.pixel,
                        );
                    }
                }
            }
        }
        Ok(())
    }
}

/// Copies the `size`-byte elements at columns `cols` (from `x0`) of `line`
/// to buffer columns `first..` of the buffer row starting at `row`.
fn pick(
    line: &[u8],
    cols: &[u64],
    x0: u64,
    size: usize,
    row: &mut [u8],
    first: usize,
    step: usize,
) {
    let sources = cols.iter().map(|&c| (c - x0) as usize * size);
    let targets = (first..).map(|c| c * step);
    match size {
        1 => sources.zip(targets).for_each(|(s, t)| row[t] = line[s]),
        _ => sources
            .zip(targets)
            .for_each(|(s, t)| row[t..t + size].copy_from_slice(&line[s..s + size])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sampling(x: f64, width: f64, buf: u64) -> Sampling {
        Sampling {
            x,
            y: x,
            width,
            height: width,
            buf_width: buf,
            buf_height: buf,
        }
    }

    #[test]
    fn positions_are_buffer_pixel_centres() {
        // 10 columns to 4: step 2.5, centres 1.25, 3.75, 6.25, 8.75.
        let s = sampling(0.0, 10.0, 4);
        assert_eq!(s.columns(10), vec![1, 3, 6, 8]);
        assert_eq!(s.rows(10), vec![1, 3, 6, 8]);
        // Whole steps land on the pixel after the centre's floor.
        let s = sampling(4.0, 12.0, 3);
        assert_eq!(s.columns(16), vec![6, 10, 14]);
        assert_eq!(s.rows(16), vec![6, 10, 14]);
        // Enlarging repeats pixels.
        let s = sampling(0.0, 2.0, 5);
        assert_eq!(s.columns(2), vec![0, 0, 1, 1, 1]);
    }

    #[test]
    fn positions_stay_inside_the_raster() {
        let s = sampling(0.0, 3.0, 2);
        assert!(s.columns(2).iter().all(|&c| c < 2));
        assert_eq!(clamp(-3.0, 5), 0);
        assert_eq!(clamp(f64::MAX, 5), 4);
        assert_eq!(clamp(2.9999, 0), 0);
    }

    #[test]
    fn runs_skip_chunks_without_picked_pixels() {
        // Chunks of 10: positions in chunks 0, 0, 1, 3, 3, 4.
        let p = [2, 8, 12, 31, 35, 47];
        assert_eq!(runs(&p, 10, 100), vec![(0, 3), (3, 6)]);
        // At most 2 chunks a run.
        assert_eq!(runs(&[1, 11, 21, 31], 10, 2), vec![(0, 2), (2, 4)]);
        // One chunk a run: a row of chunks at a time.
        assert_eq!(runs(&[1, 5, 11], 10, 1), vec![(0, 2), (2, 3)]);
        assert_eq!(runs(&[], 10, 1), Vec::<(usize, usize)>::new());
    }

    #[test]
    fn pick_copies_elements_to_spaced_columns() {
        let line: Vec<u8> = (0..20).collect();
        let mut row = vec![0u8; 12];
        // Columns 11 and 14 of a line starting at column 10, 2-byte elements,
        // to buffer columns 1 and 2 spaced 4 bytes apart.
        pick(&line, &[11, 14], 10, 2, &mut row, 1, 4);
        assert_eq!(row, vec![0, 0, 0, 0, 2, 3, 0, 0, 8, 9, 0, 0]);
        let mut row = vec![0u8; 3];
        pick(&line, &[3, 4, 9], 0, 1, &mut row, 0, 1);
        assert_eq!(row, vec![3, 4, 9]);
    }
}
