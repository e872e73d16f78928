//! 12-bit JPEG (extended sequential, `SOF1` precision 12) through
//! libjpeg-turbo's TurboJPEG 3 API: `turbojpeg-sys` builds libjpeg-turbo
//! 3.1 from its bundled source. Neither the `jpeg-decoder` crate nor Debian
//! 12's libjpeg-turbo 2.1 decode 12-bit JPEG, which NITF C3/M3 blocks of
//! 12-bit imagery use (GDAL reads them with its own libjpeg12).
//!
//! This is the only unsafe code of the JPEG codecs: one TurboJPEG handle per
//! call, destroyed on every path; sizes are checked against the caller's
//! limit before the output is allocated; libjpeg-turbo reports corrupt
//! streams through return codes (no `longjmp` crosses Rust frames).

use std::ffi::{c_int, CStr};

use turbojpeg_sys as tj;

/// A decoded 12-bit image: `components` samples per pixel, interleaved.
#[derive(Debug)]
pub(super) struct Decoded {
    /// Columns.
    pub(super) width: usize,
    /// Rows.
    pub(super) height: usize,
    /// Samples per pixel (1 grey, 3 RGB converted from YCbCr).
    pub(super) components: usize,
    /// `height * width * components` samples in 0..4096.
    pub(super) samples: Vec<i16>,
}

/// An initialised TurboJPEG decompressor, destroyed when dropped.
struct Handle(tj::tjhandle);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle came from tj3Init and is destroyed once.
        unsafe { tj::tj3Destroy(self.0) }
    }
}

impl Handle {
    /// The last error of this handle, as text.
    fn error(&self) -> String {
        // SAFETY: tj3GetErrorStr returns a NUL-terminated string owned by
        // the handle (or a static one), valid until the next call.
        let text = unsafe { CStr::from_ptr(tj::tj3GetErrorStr(self.0)) };
        text.to_string_lossy().into_owned()
    }

    fn get(&self, param: tj::TJPARAM) -> c_int {
        // SAFETY: a read-only parameter query on a live handle.
        unsafe { tj::tj3Get(self.0, param as c_int) }
    }
}

/// Decodes a 12-bit JPEG stream of at most `max_samples` samples.
pub(super) fn decode(input: &[u8], max_samples: usize) -> Result<Decoded, String> {
    // SAFETY: tj3Init has no preconditions; NULL means failure.
    let raw = unsafe { tj::tj3Init(tj::TJINIT_TJINIT_DECOMPRESS as c_int) };
    if raw.is_null() {
        return Err("libjpeg-turbo could not start a decompressor".into());
    }
    let handle = Handle(raw);
    // SAFETY: the pointer and length describe `input`, alive for the call.
    if unsafe { tj::tj3DecompressHeader(handle.0, input.as_ptr(), input.len() as u64) } != 0 {
        return Err(format!("corrupt or truncated JPEG: {}", handle.error()));
    }
    let precision = handle.get(tj::TJPARAM_TJPARAM_PRECISION);
    if precision != 12 {
        return Err(format!(
            "a {precision}-bit JPEG stream where 12 bits were expected"
        ));
    }
    let width = usize::try_from(handle.get(tj::TJPARAM_TJPARAM_JPEGWIDTH)).unwrap_or(0);
    let height = usize::try_from(handle.get(tj::TJPARAM_TJPARAM_JPEGHEIGHT)).unwrap_or(0);
    let gray = handle.get(tj::TJPARAM_TJPARAM_COLORSPACE) == tj::TJCS_TJCS_GRAY as c_int;
    let (components, format) = if gray {
        (1, tj::TJPF_TJPF_GRAY)
    } else {
        (3, tj::TJPF_TJPF_RGB)
    };
    let count = width
        .checked_mul(height)
        .and_then(|p| p.checked_mul(components))
        .filter(|&n| n > 0 && n <= max_samples)
        .ok_or_else(|| {
            format!(
                "the JPEG stream is {width} x {height} with {components} component(s), more than \
                 the {max_samples} samples of the block"
            )
        })?;
    let mut samples = vec![0i16; count];
    // SAFETY: `samples` holds width * height * components samples, the size
    // TurboJPEG writes for this pixel format with pitch 0 (packed rows).
    let status = unsafe {
        tj::tj3Decompress12(
            handle.0,
            input.as_ptr(),
            input.len() as u64,
            samples.as_mut_ptr(),
            0,
            format,
        )
    };
    if status != 0 {
        return Err(format!("corrupt or truncated JPEG: {}", handle.error()));
    }
    Ok(Decoded {
        width,
        height,
        components,
        samples,
    })
}
