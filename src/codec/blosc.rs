//! numcodecs `blosc` (Zarr v3 `blosc`): a c-blosc 1.x frame.
//!
//! c-blosc itself reads the inner compressor (blosclz, lz4, lz4hc, snappy,
//! zlib, zstd) and the shuffle (none, byte, bit) from the frame header, so
//! the configuration (`cname`, `clevel`, `shuffle`, `typesize`, `blocksize`)
//! is informational when decoding.

use std::ffi::c_void;

use blosc_src::{blosc_cbuffer_sizes, blosc_cbuffer_validate, blosc_decompress_ctx};
use bytes::Bytes;

use super::{Codec, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::error::{Error, Result};
use crate::codec::config::Config;

/// Length of the c-blosc frame header.
const HEADER_LEN: usize = blosc_src::BLOSC_MIN_HEADER_LENGTH as usize;

/// Decodes c-blosc frames on the calling thread.
#[derive(Debug)]
struct Blosc;

/// The sizes a c-blosc header declares.
struct Sizes {
    /// Decoded bytes.
    nbytes: usize,
    /// Bytes of the whole frame, header included.
    cbytes: usize,
}

impl Blosc {
    /// Reads the header sizes and checks them against the input and the chunk.
    fn checked_sizes(&self, input: &[u8], ctx: &DecodeContext<'_>) -> Result<Sizes> {
        let fail = |reason: String| Error::decode(self.name(), reason);
        if input.len() < HEADER_LEN {
            return Err(fail(format!(
                "needs a {HEADER_LEN}-byte header, chunk has {} bytes",
                input.len()
            )));
        }
        let (mut nbytes, mut cbytes, mut blocksize) = (0usize, 0usize, 0usize);
        // SAFETY: `input` holds at least the HEADER_LEN bytes this reads.
        unsafe {
            blosc_cbuffer_sizes(
                input.as_ptr().cast(),
                &mut nbytes,
                &mut cbytes,
                &mut blocksize,
            );
        }
        if cbytes != input.len() {
            return Err(fail(format!(
                "header says the frame has {cbytes} bytes, chunk has {}",
                input.len()
            )));
        }
        if nbytes > ctx.decoded_len {
            return Err(fail(format!(
                "header says {nbytes} bytes, chunk should be at most {}",
                ctx.decoded_len
            )));
        }
        let mut validated = 0usize;
        // SAFETY: the pointer and length describe `input`.
        let status =
            unsafe { blosc_cbuffer_validate(input.as_ptr().cast(), input.len(), &mut validated) };
        if status != 0 || validated != nbytes {
            return Err(fail("invalid or unsupported c-blosc header".to_string()));
        }
        Ok(Sizes { nbytes, cbytes })
    }
}

impl Codec for Blosc {
    fn name(&self) -> &str {
        "blosc"
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let Sizes { nbytes, cbytes } = self.checked_sizes(&input, ctx)?;
        let mut out = output_buffer(self.name(), nbytes)?;
        let dest: *mut c_void = out.as_mut_ptr().cast();
        // SAFETY: the header was validated against `input` (its compressed
        // size equals the input length), which is all c-blosc reads; it
        // writes at most `nbytes` bytes, the capacity of `out`.
        let written = unsafe { blosc_decompress_ctx(input.as_ptr().cast(), dest, nbytes, 1) };
        if usize::try_from(written).ok() != Some(nbytes) {
            return Err(Error::decode(
                self.name(),
                format!(
                    "corrupt frame of {cbytes} bytes: c-blosc returned {written}, \
                     expected {nbytes} bytes"
                ),
            ));
        }
        // SAFETY: c-blosc initialised exactly `nbytes` bytes of `out`.
        unsafe { out.set_len(nbytes) };
        Ok(Bytes::from(out))
    }
}

/// Builds the `blosc` codec; every decoding parameter comes from the frame.
pub(super) fn from_config(_config: &Config) -> Result<Box<dyn Codec>> {
    Ok(Box::new(Blosc))
}

#[cfg(test)]
mod tests {
    use std::ffi::CString;

    use super::*;
    use crate::codec::testing::{assert_survives_mutations, decode_with, hex};

    const CNAMES: [&str; 6] = ["blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"];

    fn values(count: u32) -> Vec<u8> {
        (0..count)
            .flat_map(|i| (i * 3 + i / 7).to_le_bytes())
            .collect()
    }

    fn encode(data: &[u8], cname: &str, clevel: i32, shuffle: i32, blocksize: usize) -> Vec<u8> {
        let compressor = CString::new(cname).unwrap();
        let mut dest = vec![0u8; data.len() + HEADER_LEN];
        // SAFETY: buffers and lengths match; the compressor name is a C string.
        let size = unsafe {
            blosc_src::blosc_compress_ctx(
                clevel,
                shuffle,
                4,
                data.len(),
                data.as_ptr().cast(),
                dest.as_mut_ptr().cast(),
                dest.len(),
                compressor.as_ptr(),
                blocksize,
                1,
            )
        };
        dest.truncate(usize::try_from(size).expect("c-blosc compressed"));
        dest
    }

    #[test]
    fn round_trips_every_compressor_and_shuffle() {
        let data = values(25_000);
        for cname in CNAMES {
            for shuffle in 0..=2 {
                for blocksize in [0, 4096] {
                    let encoded = encode(&data, cname, 5, shuffle, blocksize);
                    let out = decode_with("blosc", r#"{"cname": "lz4"}"#, &encoded, data.len());
                    let out = out.unwrap_or_else(|e| panic!("{cname}/{shuffle}/{blocksize}: {e}"));
                    assert!(out[..] == data[..], "{cname}/{shuffle}/{blocksize}");
                }
            }
        }
    }

    #[test]
    fn round_trips_stored_and_empty_frames() {
        let data = values(1_000);
        let stored = encode(&data, "lz4", 0, 0, 0);
        assert_eq!(stored.len(), data.len() + HEADER_LEN);
        assert_eq!(
            &decode_with("numcodecs.blosc", "{}", &stored, 4_000).unwrap()[..],
            &data[..]
        );
        let empty = encode(&[], "zstd", 5, 1, 0);
        assert!(decode_with("blosc", "{}", &empty, 0).unwrap().is_empty());
    }

    #[test]
    fn decodes_numcodecs_output() {
        // numcodecs.Blosc(cname="lz4", clevel=5, shuffle=Blosc.BITSHUFFLE) and
        // Blosc(cname="zstd", clevel=5, shuffle=Blosc.SHUFFLE)
        //     .encode(np.arange(64, dtype="<i4") * 3)
        let expected: Vec<u8> = (0..64i32).flat_map(|i| (i * 3).to_le_bytes()).collect();
        for golden in [GOLDEN_LZ4_BITSHUFFLE, GOLDEN_ZSTD_SHUFFLE] {
            assert_eq!(
                &decode_with("blosc", "{}", &hex(golden), 256).unwrap()[..],
                &expected[..]
            );
        }
        // numcodecs.Blosc(cname="blosclz", clevel=9, shuffle=Blosc.NOSHUFFLE)
        //     .encode(np.arange(64, dtype="<i4") % 5)
        let expected: Vec<u8> = (0..64i32).flat_map(|i| (i % 5).to_le_bytes()).collect();
        let out = decode_with("blosc", "{}", &hex(GOLDEN_BLOSCLZ_NOSHUFFLE), 256).unwrap();
        assert_eq!(&out[..], &expected[..]);
    }

    #[test]
    fn rejects_hostile_input() {
        let data = values(25_000);
        let encoded = encode(&data, "zstd", 5, 1, 4096);
        let truncated = &encoded[..encoded.len() - 1];
        let err = decode_with("blosc", "{}", truncated, data.len()).unwrap_err();
        assert!(err.to_string().contains("frame has"), "{err}");
        let padded = [&encoded[..], b"xx"].concat();
        assert!(decode_with("blosc", "{}", &padded, data.len()).is_err());
        assert!(decode_with("blosc", "{}", &encoded[..10], data.len()).is_err());
        let err = decode_with("blosc", "{}", &encoded, 65_536).unwrap_err();
        assert!(
            err.to_string()
                .contains("header says 100000 bytes, chunk should be at most 65536"),
            "{err}"
        );
        let mut shrunk = encoded.clone();
        shrunk[4..8].copy_from_slice(&50_000u32.to_le_bytes());
        assert!(decode_with("blosc", "{}", &shrunk, data.len()).is_err());
        assert!(decode_with("blosc", "{}", &[0xff; 64], data.len()).is_err());
        for cname in CNAMES {
            let small = encode(&values(3_000), cname, 5, 2, 1024);
            assert_survives_mutations("blosc", "{}", &small, 12_000);
        }
    }

    const GOLDEN_LZ4_BITSHUFFLE: &str = "
        02013404000100000001000057000000140000003f00000013aa01001366010013b401002238c70200
        f311c0073ff8c0073ff800f83f00ff07c0ff0000c0ffff0700000000000000f8ffff0a000f0200a150
        0000000000";
    const GOLDEN_ZSTD_SHUFFLE: &str = "
        0201910400010000000100006b000000140000005300000028b52ffd6000004d02001404000306090c
        0f1215181b1e2124272a2d303336393c3f4245484b4e5154575a5d606366696c6f7275787b7e818487
        8a8d909396999c9fa2a5a8abaeb1b4b7babd000100018f0251";
    const GOLDEN_BLOSCLZ_NOSHUFFLE: &str = "
        02011004000100000001000033000000140000001b0000003100000000010000000200000003000000
        04008000e0dd13010000";
}
