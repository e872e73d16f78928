//! How the pages of a large read's destination come to be: backed by huge
//! pages where the kernel offers them, and faulted in while the read's
//! requests are in flight instead of by the decoders that fill them.
//!
//! A fresh destination (a new numpy array, a `bytearray`) is memory the
//! process has never touched: every page is found and zeroed by the kernel
//! on its first write. For a 60 MB window that is a third of the CPU time
//! of a cold read, spent by the decoding threads as they copy chunks in.
//! A remote read waits for its first bytes first (tens of milliseconds on
//! object storage) with those threads idle, so the pages are faulted in
//! then, on a thread of their own.

/// Size of a transparent huge page on x86-64 (and most aarch64 kernels).
const HUGE_PAGE: usize = 2 << 20;

/// Destinations smaller than this are left to fault in as they are written
/// (a thread costs more than the faults it would save).
const PREFAULT_MIN: usize = 8 << 20;

/// Asks the kernel to back the whole huge pages inside `buf` with huge
/// pages (where transparent huge pages are `madvise`, Debian's default):
/// a fresh 60 MB window is then faulted in 30 times instead of 15,000,
/// about 15 ms less. numpy does the same for its own large arrays. A
/// refusal (huge pages disabled, another system) changes nothing, so it is
/// not an error.
pub fn advise_huge_pages(buf: &mut [u8]) {
    #[cfg(target_os = "linux")]
    {
        let start = buf.as_mut_ptr() as usize;
        let first = start.next_multiple_of(HUGE_PAGE);
        let end = (start + buf.len()) / HUGE_PAGE * HUGE_PAGE;
        if end > first {
            // SAFETY: [first, end) lies inside `buf`, which this function
            // borrows mutably; MADV_HUGEPAGE changes how pages are backed,
            // never their contents.
            unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

/// Runs `read` on `out`, its pages faulted in meanwhile on a thread of
/// their own when `waits` (the read waits on the network first) and `out`
/// is large (`MADV_POPULATE_WRITE`, Linux 5.14 and later: pages already
/// there, written or not, are left as they are, so the read may write
/// anywhere at any time; on older kernels the call fails and nothing
/// changes).
pub fn prefaulting<T>(out: &mut [u8], waits: bool, read: impl FnOnce(&mut [u8]) -> T) -> T {
    #[cfg(target_os = "linux")]
    if waits && out.len() >= PREFAULT_MIN {
        let (start, len) = (out.as_mut_ptr() as usize, out.len());
        return std::thread::scope(|s| {
            s.spawn(move || {
                // SAFETY: the range is `out`, borrowed mutably for the whole
                // scope; MADV_POPULATE_WRITE only maps the pages not yet
                // mapped (zeroed, as the first write would) and never
                // changes a byte of one that is.
                unsafe {
                    libc::madvise(start as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE)
                };
            });
            read(out)
        });
    }
    let _ = waits;
    read(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_faulted_in_meanwhile_keep_what_the_read_wrote() {
        let mut out = vec![0u8; PREFAULT_MIN * 2];
        advise_huge_pages(&mut out);
        let sum = prefaulting(&mut out, true, |out| {
            for (i, b) in out.iter_mut().enumerate().step_by(4096) {
                *b = (i / 4096 % 251) as u8 + 1;
            }
            out.len()
        });
        assert_eq!(sum, out.len());
        for (i, b) in out.iter().enumerate() {
            let want = if i % 4096 == 0 {
                (i / 4096 % 251) as u8 + 1
            } else {
                0
            };
            assert_eq!(*b, want, "byte {i}");
        }
    }
}
