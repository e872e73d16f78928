//! Placing decoded chunk elements into GDAL buffers: whole block buffers
//! and rectangles of caller buffers with any pixel and line spacing.

use std::ops::Range;

use crate::base::buffers::copy_strided;
use crate::index::zarr::ArrayMeta;

/// A rectangle of a chunk's (y, x) plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    /// First row inside the chunk.
    pub row: usize,
    /// First column inside the chunk.
    pub col: usize,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
}

/// Where a rectangle goes in a buffer: its first element at byte `start`,
/// the next column `pixel` bytes on, the next row `line` bytes on (back,
/// when negative: the rectangle's rows land bottom-up, as a level whose
/// rows are served in reverse stored order places them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// Byte offset of the rectangle's first element.
    pub start: usize,
    /// Bytes between rows (negative: the next row lands above).
    pub line: isize,
    /// Bytes between columns.
    pub pixel: usize,
}

impl Target {
    /// Byte offset of the first element of the rectangle's row `r`.
    fn row(&self, r: usize) -> usize {
        self.start.wrapping_add_signed(r as isize * self.line)
    }
}

/// Copies the whole (y, x) plane at leading offsets `within` (one per
/// leading axis, relative to the chunk) of a decoded chunk into `out`, a
/// packed block of `chunks[y] * chunks[x]` native-order elements.
pub fn copy_plane(meta: &ArrayMeta, chunk: &[u8], within: &[u64], out: &mut [u8]) {
    let n = meta.chunks.len();
    let (rows, cols) = (meta.chunks[n - 2] as usize, meta.chunks[n - 1] as usize);
    let size = meta.dtype.size;
    let rect = Rect {
        row: 0,
        col: 0,
        rows,
        cols,
    };
    let target = Target {
        start: 0,
        line: (cols * size) as isize,
        pixel: size,
    };
    copy_rect(meta, chunk, within, rect, out, target);
}

/// Copies `rect` of the (y, x) plane at leading offsets `within` of a
/// decoded chunk to `target` in `out`, as native-order elements.
pub fn copy_rect(
    meta: &ArrayMeta,
    chunk: &[u8],
    within: &[u64],
    rect: Rect,
    out: &mut [u8],
    target: Target,
) {
    let size = meta.dtype.size;
    let Walk {
        first,
        sy,
        sx,
        swap,
    } = Walk::new(meta, within, rect);
    for r in 0..rect.rows {
        let src_row = first + r * sy;
        let dst_row = target.row(r);
        if sx == 1 && target.pixel == size {
            let bytes = rect.cols * size;
            let dst = &mut out[dst_row..dst_row + bytes];
            dst.copy_from_slice(&chunk[src_row * size..src_row * size + bytes]);
            if let Some(unit) = swap {
                dst.chunks_exact_mut(unit).for_each(<[u8]>::reverse);
            }
        } else {
            copy_strided(
                &chunk[src_row * size..],
                sx * size,
                &mut out[dst_row..],
                target.pixel,
                rect.cols,
                size,
            );
            if let Some(unit) = swap {
                for c in 0..rect.cols {
                    let at = dst_row + c * target.pixel;
                    out[at..at + size]
                        .chunks_exact_mut(unit)
                        .for_each(<[u8]>::reverse);
                }
            }
        }
    }
}

/// Fills `out` with repetitions of `value` (a native-order element).
pub fn fill(out: &mut [u8], value: &[u8]) {
    if value.iter().all(|&b| b == 0) {
        out.fill(0);
    } else {
        for e in out.chunks_exact_mut(value.len()) {
            e.copy_from_slice(value);
        }
    }
}

/// Fills a `rect`-sized rectangle at `target` in `out` with `value`.
pub fn fill_rect(value: &[u8], rect: Rect, out: &mut [u8], target: Target) {
    let size = value.len();
    for r in 0..rect.rows {
        let row = target.row(r);
        if target.pixel == size {
            fill(&mut out[row..row + rect.cols * size], value);
        } else {
            for c in 0..rect.cols {
                let at = row + c * target.pixel;
                out[at..at + size].copy_from_slice(value);
            }
        }
    }
}

/// Elements a paste leaves out (a mosaic scene's nodata): those equal to
/// `value`, or, for a NaN float value, every NaN (as GDAL's VRT sources
/// compare nodata).
#[derive(Debug, Clone, PartialEq)]
pub struct Nodata {
    /// The value as a native-order element.
    value: Vec<u8>,
    /// True when `value` is a float NaN: any NaN matches.
    nan: bool,
}

impl Nodata {
    /// The nodata `value` (a native-order element); `float` says the
    /// elements are IEEE floats.
    pub fn new(value: Vec<u8>, float: bool) -> Nodata {
        let nan = float && is_nan(&value);
        Nodata { value, nan }
    }

    /// The value as a native-order element.
    pub fn value(&self) -> &[u8] {
        &self.value
    }

    /// True when the native-order element `e` is nodata.
    pub fn matches(&self, e: &[u8]) -> bool {
        e == self.value || (self.nan && is_nan(e))
    }
}

/// True when `e` is a native-order f16, f32 or f64 NaN.
fn is_nan(e: &[u8]) -> bool {
    match e.len() {
        2 => e
            .try_into()
            .is_ok_and(|b| half::f16::from_ne_bytes(b).is_nan()),
        4 => e.try_into().is_ok_and(|b| f32::from_ne_bytes(b).is_nan()),
        8 => e.try_into().is_ok_and(|b| f64::from_ne_bytes(b).is_nan()),
        _ => false,
    }
}

/// Where a rectangle of a decoded chunk starts and how to step through it.
struct Walk {
    /// Element index of the rectangle's first element in the chunk.
    first: usize,
    /// Element strides between rows and between columns.
    sy: usize,
    sx: usize,
    /// Byte-swap unit when the chunk's byte order is not native.
    swap: Option<usize>,
}

impl Walk {
    /// The walk over `rect` of the 2-D slice at leading indices `within`.
    fn new(meta: &ArrayMeta, within: &[u64], rect: Rect) -> Walk {
        let n = meta.chunks.len();
        let strides = &meta.chunk_strides;
        let base: u64 = within.iter().zip(strides).map(|(i, s)| i * s).sum();
        let (sy, sx) = (strides[n - 2] as usize, strides[n - 1] as usize);
        Walk {
            first: base as usize + rect.row * sy + rect.col * sx,
            sy,
            sx,
            swap: meta
                .dtype
                .order
                .needs_swap()
                .then(|| meta.dtype.swap_unit()),
        }
    }
}

/// The bytes of a decoded chunk from the first to the end of the last
/// element [`copy_rect`] reads for `rect` of the 2-D slice at leading
/// indices `within` (strides are positive: the first element is the
/// nearest, the last the farthest).
pub fn rect_span(meta: &ArrayMeta, within: &[u64], rect: Rect) -> Range<usize> {
    let Walk { first, sy, sx, .. } = Walk::new(meta, within, rect);
    let last = first + rect.rows.saturating_sub(1) * sy + rect.cols.saturating_sub(1) * sx;
    first * meta.dtype.size..(last + 1) * meta.dtype.size
}

/// Like [`copy_rect`], leaving out the elements that are `nodata`.
pub fn copy_rect_except(
    meta: &ArrayMeta,
    chunk: &[u8],
    within: &[u64],
    rect: Rect,
    out: &mut [u8],
    target: Target,
    nodata: &Nodata,
) {
    let size = meta.dtype.size;
    let Walk {
        first,
        sy,
        sx,
        swap,
    } = Walk::new(meta, within, rect);
    let mut e = vec![0u8; size];
    for r in 0..rect.rows {
        for c in 0..rect.cols {
            let src = (first + r * sy + c * sx) * size;
            e.copy_from_slice(&chunk[src..src + size]);
            if let Some(unit) = swap {
                e.chunks_exact_mut(unit).for_each(<[u8]>::reverse);
            }
            if !nodata.matches(&e) {
                let dst = target.row(r) + c * target.pixel;
                out[dst..dst + size].copy_from_slice(&e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodata_matches_its_value_and_any_nan() {
        let zero = Nodata::new(vec![0, 0], false);
        assert!(zero.matches(&[0, 0]) && !zero.matches(&[0, 1]));
        let nan = Nodata::new(f32::NAN.to_ne_bytes().to_vec(), true);
        assert!(nan.matches(&(-f32::NAN).to_ne_bytes()));
        assert!(!nan.matches(&1f32.to_ne_bytes()));
        let bytes = Nodata::new(f32::NAN.to_ne_bytes().to_vec(), false);
        assert!(!bytes.matches(&(-f32::NAN).to_ne_bytes()));
    }

    #[test]
    fn pastes_leave_nodata_out() {
        let z = serde_json::json!({"shape": [2, 3], "chunks": [2, 3], "dtype": ">u2",
            "fill_value": 0, "compressor": null, "filters": null});
        let meta = ArrayMeta::from_v2("a", &z, None).unwrap();
        let chunk: Vec<u8> = [1u16, 0, 3, 0, 5, 6]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        let mut out = vec![9u8; 12];
        let rect = Rect {
            row: 0,
            col: 0,
            rows: 2,
            cols: 3,
        };
        let target = Target {
            start: 0,
            line: 6,
            pixel: 2,
        };
        let nodata = Nodata::new(vec![0, 0], false);
        copy_rect_except(&meta, &chunk, &[], rect, &mut out, target, &nodata);
        let got: Vec<u16> = out
            .chunks_exact(2)
            .map(|e| u16::from_ne_bytes([e[0], e[1]]))
            .collect();
        assert_eq!(got, vec![1, 0x0909, 3, 0x0909, 5, 6]);
    }
}
