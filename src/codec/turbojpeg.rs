//! 8- and 12-bit JPEG through libjpeg-turbo's TurboJPEG 3 API:
//! `turbojpeg-sys` builds libjpeg-turbo 3.1 from its bundled source. It is
//! the decoder GDAL itself uses for 8-bit JPEG (libjpeg-turbo's exact IDCT
//! and "fancy" chroma upsampling, so pixels match GDAL's), and it decodes
//! the 12-bit JPEG (extended sequential, `SOF1` precision 12) of 12-bit
//! NITF imagery, which neither the `jpeg-decoder` crate nor Debian 12's
//! libjpeg-turbo 2.1 handle (GDAL reads those with its own libjpeg12).
//!
//! This is the only unsafe code of the JPEG codecs: one TurboJPEG handle per
//! call, destroyed on every path; sizes are checked against the caller's
//! limit before the output is allocated; libjpeg-turbo reports corrupt
//! streams through return codes (no `longjmp` crosses Rust frames).

use std::ffi::{c_int, CStr};

use turbojpeg_sys as tj;

/// Decoded samples, by precision.
#[derive(Debug)]
pub(super) enum Samples {
    /// 8-bit samples.
    Eight(Vec<u8>),
    /// 12-bit samples (0..4096).
    Twelve(Vec<i16>),
}

/// A decoded image: `components` samples per pixel, interleaved.
#[derive(Debug)]
pub(super) struct Decoded {
    /// Columns.
    pub(super) width: usize,
    /// Rows.
    pub(super) height: usize,
    /// Samples per pixel (1 grey, 3 RGB, converted from YCbCr when the
    /// stream is YCbCr).
    pub(super) components: usize,
    /// `height * width * components` samples.
    pub(super) samples: Samples,
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

/// The handle's last error as a [`Failure::Corrupt`].
fn corrupt(handle: &Handle) -> Failure {
    Failure::Corrupt(format!("corrupt or truncated JPEG: {}", handle.error()))
}

/// Why a stream was not decoded.
#[derive(Debug)]
pub(super) enum Failure {
    /// Valid JPEG the caller does not take (precision, CMYK).
    Unsupported(String),
    /// Corrupt data, or an image larger than the caller's limit.
    Corrupt(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unsupported(what) | Failure::Corrupt(what) => f.write_str(what),
        }
    }
}

/// Decodes a JPEG stream of one of the sample `precisions` (8 and/or 12
/// bits) holding at most `max_samples` samples.
pub(super) fn decode(
    input: &[u8],
    precisions: &[u8],
    max_samples: usize,
) -> Result<Decoded, Failure> {
    decode_scaled(input, precisions, max_samples, 1)
}

/// [`decode`] at 1/`denom` of the stream's size (`denom` 1, 2, 4 or 8),
/// through libjpeg's scaled inverse DCT, as GDAL's JPEG driver makes its
/// implicit overviews: each dimension divided by `denom`, rounded up.
pub(super) fn decode_scaled(
    input: &[u8],
    precisions: &[u8],
    max_samples: usize,
    denom: u8,
) -> Result<Decoded, Failure> {
    // SAFETY: tj3Init has no preconditions; NULL means failure.
    let raw = unsafe { tj::tj3Init(tj::TJINIT_TJINIT_DECOMPRESS as c_int) };
    if raw.is_null() {
        return Err(Failure::Corrupt(
            "libjpeg-turbo could not start a decompressor".into(),
        ));
    }
    let handle = Handle(raw);
    // SAFETY: the pointer and length describe `input`, alive for the call.
    if unsafe { tj::tj3DecompressHeader(handle.0, input.as_ptr(), input.len() as u64) } != 0 {
        return Err(corrupt(&handle));
    }
    let precision = handle.get(tj::TJPARAM_TJPARAM_PRECISION);
    if !precisions.iter().any(|&p| c_int::from(p) == precision) {
        let supported: Vec<String> = precisions.iter().map(u8::to_string).collect();
        return Err(Failure::Unsupported(format!(
            "{precision}-bit JPEG (supported here: {}-bit)",
            supported.join(" and ")
        )));
    }
    let colorspace = handle.get(tj::TJPARAM_TJPARAM_COLORSPACE);
    // Four components without an Adobe marker saying YCCK are CMYK to
    // libjpeg, decoded as stored: what libtiff's JCS_UNKNOWN gives GDAL for
    // 4-sample JPEG tiles. YCCK would be converted, GDAL does not.
    if colorspace == tj::TJCS_TJCS_YCCK as c_int {
        return Err(Failure::Unsupported(
            "YCCK JPEG (grey, RGB, YCbCr and 4 components as stored are supported)".into(),
        ));
    }
    if denom != 1 {
        let factor = tj::tjscalingfactor {
            num: 1,
            denom: c_int::from(denom),
        };
        // SAFETY: a parameter set on a live handle whose header was read.
        if unsafe { tj::tj3SetScalingFactor(handle.0, factor) } != 0 {
            return Err(Failure::Unsupported(format!(
                "decoding at 1/{denom} of the size: {}",
                handle.error()
            )));
        }
    }
    let scaled = |param| {
        usize::try_from(handle.get(param)).map_or(0, |n| n.div_ceil(usize::from(denom.max(1))))
    };
    let width = scaled(tj::TJPARAM_TJPARAM_JPEGWIDTH);
    let height = scaled(tj::TJPARAM_TJPARAM_JPEGHEIGHT);
    let (components, format) = if colorspace == tj::TJCS_TJCS_GRAY as c_int {
        (1, tj::TJPF_TJPF_GRAY)
    } else if colorspace == tj::TJCS_TJCS_CMYK as c_int {
        (4, tj::TJPF_TJPF_CMYK)
    } else {
        (3, tj::TJPF_TJPF_RGB)
    };
    let count = width
        .checked_mul(height)
        .and_then(|p| p.checked_mul(components))
        .filter(|&n| n > 0 && n <= max_samples)
        .ok_or_else(|| {
            Failure::Corrupt(format!(
                "the JPEG stream is {width} x {height} with {components} component(s), more than \
                 the {max_samples} samples of the block"
            ))
        })?;
    // SAFETY (both calls): the buffer holds width * height * components
    // samples, the size TurboJPEG writes for this pixel format with pitch 0
    // (packed rows); the input pointer and length describe `input`.
    let (status, samples) = if precision == 8 {
        let mut out = vec![0u8; count];
        let status = unsafe {
            tj::tj3Decompress8(
                handle.0,
                input.as_ptr(),
                input.len() as u64,
                out.as_mut_ptr(),
                0,
                format,
            )
        };
        (status, Samples::Eight(out))
    } else {
        let mut out = vec![0i16; count];
        let status = unsafe {
            tj::tj3Decompress12(
                handle.0,
                input.as_ptr(),
                input.len() as u64,
                out.as_mut_ptr(),
                0,
                format,
            )
        };
        (status, Samples::Twelve(out))
    };
    if status != 0 {
        return Err(corrupt(&handle));
    }
    Ok(Decoded {
        width,
        height,
        components,
        samples,
    })
}
