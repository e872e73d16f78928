//! `hdf5-szip`: HDF5's szip filter (id 4), as libhdf5 writes it with
//! libaec or the original szip library: a 4-byte little-endian decoded
//! size, then the Rice-coded stream, decoded here by libaec's szip
//! interface (`SZ_BufftoBuffDecompress`, from `libsz`) with the filter's
//! parameters (its client data after libhdf5 completed it: option mask,
//! pixels per block, bits per pixel, pixels per scanline).
//!
//! The filter is optional: a chunk it cannot shrink is stored as it was
//! (its bit set in the chunk's filter mask), so an input exactly as long
//! as the decoded chunk is taken as stored; the HDF5 indexer checks every
//! chunk against that rule (`crate::builders::hdf5::filters::Skip`).

use std::ffi::{c_int, c_void};

use bytes::Bytes;

use super::config::{config_uint, Config};
use super::{Codec, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::error::{Error, Result};

/// The codec's names (chunkref's own: no Zarr codec reads this framing).
pub(super) const NAMES: &[&str] = &["hdf5-szip"];

/// Size of the decoded-size header libhdf5 writes before the stream.
const HEADER_LEN: usize = 4;

/// libaec's `SZ_com_t`.
#[repr(C)]
struct SzParams {
    options_mask: c_int,
    bits_per_pixel: c_int,
    pixels_per_block: c_int,
    pixels_per_scanline: c_int,
}

// The system's libsz, or with `static-deps` the static one libaec-sys built.
#[cfg_attr(not(feature = "static-deps"), link(name = "sz"))]
#[cfg_attr(feature = "static-deps", link(name = "sz", kind = "static"))]
extern "C" {
    fn SZ_BufftoBuffDecompress(
        dest: *mut c_void,
        dest_len: *mut usize,
        source: *const c_void,
        source_len: usize,
        param: *mut SzParams,
    ) -> c_int;
}

/// libaec's `SZ_OK`.
const SZ_OK: c_int = 0;

/// Decodes HDF5 szip chunks.
#[derive(Debug)]
struct Szip {
    options_mask: c_int,
    pixels_per_block: c_int,
    bits_per_pixel: c_int,
    pixels_per_scanline: c_int,
}

impl Szip {
    fn fail(&self, reason: String) -> Error {
        Error::decode(NAMES[0], reason)
    }
}

impl Codec for Szip {
    fn name(&self) -> &str {
        NAMES[0]
    }

    fn compression(&self) -> String {
        "SZIP".into()
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        if input.len() == ctx.decoded_len {
            return Ok(input);
        }
        let (header, stream) = input.split_first_chunk::<HEADER_LEN>().ok_or_else(|| {
            self.fail(format!(
                "needs a {HEADER_LEN}-byte size header, chunk has {} bytes",
                input.len()
            ))
        })?;
        let size = usize::try_from(u32::from_le_bytes(*header)).unwrap_or(usize::MAX);
        if size > ctx.decoded_len {
            return Err(self.fail(format!(
                "header says {size} bytes, the chunk holds at most {}",
                ctx.decoded_len
            )));
        }
        let mut out = output_buffer(NAMES[0], size)?;
        let mut written = size;
        let mut params = SzParams {
            options_mask: self.options_mask,
            bits_per_pixel: self.bits_per_pixel,
            pixels_per_block: self.pixels_per_block,
            pixels_per_scanline: self.pixels_per_scanline,
        };
        // SAFETY: `out` has room for `size` bytes and libaec writes at most
        // `written` (= size) of them; `stream` is read only; `params` lives
        // for the call.
        let status = unsafe {
            SZ_BufftoBuffDecompress(
                out.as_mut_ptr().cast(),
                &mut written,
                stream.as_ptr().cast(),
                stream.len(),
                &mut params,
            )
        };
        if status != SZ_OK || written != size {
            return Err(self.fail(format!(
                "libaec failed (status {status}) after {written} of {size} bytes"
            )));
        }
        // SAFETY: libaec wrote the first `written` bytes.
        unsafe { out.set_len(written) };
        Ok(out.into())
    }
}

/// Builds `hdf5-szip` from `options_mask`, `pixels_per_block`,
/// `bits_per_pixel` and `pixels_per_scanline` (the HDF5 filter's client
/// data), each checked against szip's limits.
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let field = |key: &str, range: std::ops::RangeInclusive<u64>| -> Result<c_int> {
        let value = config_uint(NAMES[0], config, key)?
            .ok_or_else(|| Error::codec_config(NAMES[0], format!("'{key}' is missing")))?;
        if !range.contains(&value) {
            return Err(Error::codec_config(
                NAMES[0],
                format!(
                    "'{key}' {value} is outside {}..={}",
                    range.start(),
                    range.end()
                ),
            ));
        }
        Ok(value as c_int)
    };
    Ok(Box::new(Szip {
        options_mask: field("options_mask", 0..=0xffff)?,
        pixels_per_block: field("pixels_per_block", 2..=32)?,
        bits_per_pixel: field("bits_per_pixel", 1..=64)?,
        pixels_per_scanline: field("pixels_per_scanline", 1..=128 * 32)?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testing::decode_with;

    const CONFIG: &str = r#"{"options_mask": 141, "pixels_per_block": 8, "bits_per_pixel": 16, "pixels_per_scanline": 64}"#;

    #[test]
    fn bad_headers_and_streams_are_errors() {
        assert!(decode_with(NAMES[0], CONFIG, b"\x01", 64).is_err());
        // A header asking for more than the chunk holds.
        assert!(decode_with(NAMES[0], CONFIG, b"\xff\xff\x00\x00garbage", 64).is_err());
        // Garbage after a plausible header.
        assert!(decode_with(NAMES[0], CONFIG, b"\x40\x00\x00\x00\xde\xad\xbe\xef", 64).is_err());
    }

    #[test]
    fn parameters_are_checked() {
        let bad = r#"{"options_mask": 141, "pixels_per_block": 64, "bits_per_pixel": 16, "pixels_per_scanline": 64}"#;
        assert!(decode_with(NAMES[0], bad, b"\x00\x00\x00\x00", 64).is_err());
        assert!(decode_with(NAMES[0], "{}", b"\x00\x00\x00\x00", 64).is_err());
    }
}
