//! Placing decoded chunk elements into GDAL block buffers.

use crate::zarr::ArrayMeta;

/// Copies the (y, x) plane at leading offsets `within` (one per leading axis,
/// relative to the chunk) of a decoded chunk into `out`, a block of
/// `chunks[y] * chunks[x]` native-order elements.
pub fn copy_plane(meta: &ArrayMeta, chunk: &[u8], within: &[u64], out: &mut [u8]) {
    let n = meta.chunks.len();
    let size = meta.dtype.size;
    let (rows, cols) = (meta.chunks[n - 2] as usize, meta.chunks[n - 1] as usize);
    let strides = &meta.chunk_strides;
    let base: u64 = within.iter().zip(strides).map(|(i, s)| i * s).sum();
    let (sy, sx) = (strides[n - 2] as usize, strides[n - 1] as usize);
    let base = base as usize;
    if sx == 1 {
        let row_bytes = cols * size;
        for r in 0..rows {
            let src = (base + r * sy) * size;
            out[r * row_bytes..(r + 1) * row_bytes].copy_from_slice(&chunk[src..src + row_bytes]);
        }
    } else {
        for r in 0..rows {
            for c in 0..cols {
                let src = (base + r * sy + c * sx) * size;
                let dst = (r * cols + c) * size;
                out[dst..dst + size].copy_from_slice(&chunk[src..src + size]);
            }
        }
    }
    if meta.dtype.order.needs_swap() {
        let unit = meta.dtype.swap_unit();
        for e in out[..rows * cols * size].chunks_exact_mut(unit) {
            e.reverse();
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
