//! Byte buffers the hot paths share: each thread's spare decode buffers
//! (taken by codecs for their output, by fetches for their bodies, given
//! back once a chunk is pasted), and strided element copies.

use std::cell::RefCell;

use bytes::Bytes;

use crate::base::error::{Error, Result};

thread_local! {
    /// This thread's spare decode buffers (see [`recycle`]).
    static SPARES: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Bytes of spare buffers [`recycle`] keeps per thread, at most.
const MAX_SPARE_BYTES: usize = 8 << 20;

/// Spare buffers [`recycle`] keeps per thread, at most (decoders that do
/// not take their output from [`output_buffer`] hand buffers back too).
const MAX_SPARES: usize = 4;

/// An empty buffer able to hold `len` bytes: one of this thread's spares
/// whose capacity is `len` to twice that, else a new one, an allocation
/// failure reported as [`Error::Limits`] instead of aborting.
pub(crate) fn output_buffer(codec: &str, len: usize) -> Result<Vec<u8>> {
    let mut buffer = spare_or_new(codec, len)?;
    buffer.clear();
    Ok(buffer)
}

/// A buffer of `len` bytes whose contents are unspecified (an earlier
/// chunk's bytes where a spare is reused, else zeros), for writers that
/// overwrite every byte they keep: no pass zeroing it first.
pub(crate) fn scratch_buffer(what: &str, len: usize) -> Result<Vec<u8>> {
    let mut buffer = spare_or_new(what, len)?;
    if buffer.len() >= len {
        buffer.truncate(len);
    } else {
        buffer.resize(len, 0);
    }
    Ok(buffer)
}

/// One of this thread's spares able to hold `len` bytes (see
/// [`output_buffer`]), its contents as they were, else an empty new one.
fn spare_or_new(what: &str, len: usize) -> Result<Vec<u8>> {
    let fits = |b: &Vec<u8>| (len..=len.saturating_mul(2)).contains(&b.capacity());
    let spare = SPARES.with_borrow_mut(|spares| {
        let i = spares.iter().position(fits)?;
        Some(spares.swap_remove(i))
    });
    if let Some(spare) = spare {
        return Ok(spare);
    }
    let mut buffer = Vec::new();
    buffer.try_reserve_exact(len).map_err(|_| Error::Limits {
        what: format!("{what}: cannot allocate {len} bytes"),
    })?;
    Ok(buffer)
}

/// Keeps `buffer`, a decode buffer no longer needed (a pixel-interleaved
/// tile once split into planes, a chunk once copied out), as one of this
/// thread's spares for the next [`output_buffer`], the oldest spares
/// dropped past [`MAX_SPARES`] or [`MAX_SPARE_BYTES`]: its pages stay mapped, where a large
/// buffer freed may go back to the system and cost a page fault per 4 KiB
/// when allocated again (a fifth of the time of a one-tile read).
pub(crate) fn recycle(buffer: Vec<u8>) {
    if buffer.capacity() == 0 || buffer.capacity() > MAX_SPARE_BYTES {
        return;
    }
    SPARES.with_borrow_mut(|spares| {
        let mut held: usize = spares.iter().map(Vec::capacity).sum();
        while (held + buffer.capacity() > MAX_SPARE_BYTES || spares.len() >= MAX_SPARES)
            && !spares.is_empty()
        {
            held -= spares.remove(0).capacity();
        }
        spares.push(buffer);
    });
}

/// [`recycle`]s the buffer of a decoded chunk no one else holds.
pub(crate) fn recycle_bytes(chunk: Bytes) {
    if let Ok(chunk) = chunk.try_into_mut() {
        recycle(Vec::from(chunk));
    }
}

/// Copies `count` elements of `size` bytes from `src` (one every
/// `src_step` bytes) to `dst` (one every `dst_step` bytes). Common element
/// sizes are copied with fixed-size moves instead of a call per element.
pub fn copy_strided(
    src: &[u8],
    src_step: usize,
    dst: &mut [u8],
    dst_step: usize,
    count: usize,
    size: usize,
) {
    fn fixed<const N: usize>(
        src: &[u8],
        src_step: usize,
        dst: &mut [u8],
        dst_step: usize,
        count: usize,
    ) {
        for i in 0..count {
            let (s, d) = (i * src_step, i * dst_step);
            dst[d..d + N].copy_from_slice(&src[s..s + N]);
        }
    }
    match size {
        1 => fixed::<1>(src, src_step, dst, dst_step, count),
        2 => fixed::<2>(src, src_step, dst, dst_step, count),
        4 => fixed::<4>(src, src_step, dst, dst_step, count),
        8 => fixed::<8>(src, src_step, dst, dst_step, count),
        16 => fixed::<16>(src, src_step, dst, dst_step, count),
        _ => {
            for i in 0..count {
                let (s, d) = (i * src_step, i * dst_step);
                dst[d..d + size].copy_from_slice(&src[s..s + size]);
            }
        }
    }
}
