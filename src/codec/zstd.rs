//! numcodecs `zstd` (Zarr v3 `zstd`): one or more Zstandard frames.

use bytes::Bytes;

use ::zstd::zstd_safe::{DCtx, DParameter, InBuffer, OutBuffer, ResetDirective};

use super::{Codec, DecodeContext};
use crate::base::buffers::{output_buffer, scratch_buffer};
use crate::base::error::{Error, Result};
use crate::codec::config::Config;
use crate::codec::stream::read_bounded;

/// Smallest window (as a power of two) always accepted: 8 MiB covers what
/// streaming encoders declare up to level 19 when they do not know the size.
const MIN_WINDOW_LOG: u32 = 23;
/// Largest window zstd can decode (`ZSTD_WINDOWLOG_MAX`).
const MAX_WINDOW_LOG: u32 = if usize::BITS == 64 { 31 } else { 30 };

/// Decodes Zstandard frames with streaming decompression, so frames without a
/// content size work too.
#[derive(Debug)]
struct Zstd;

impl Codec for Zstd {
    fn name(&self) -> &str {
        "zstd"
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let fail = |e: std::io::Error| Error::decode(self.name(), e);
        if let Some(declared) = single_frame(&input, ctx.decoded_len) {
            if let Some(needed) = ctx.prefix() {
                // The reader needs the first rows only: stop decoding once
                // they are in (at the end of a zstd block, at most 128 KiB on).
                let out = with_context(|d| decode_prefix(d, &input, needed, ctx.decoded_len))
                    .map_err(|e| Error::decode(self.name(), e))?;
                return Ok(Bytes::from(out));
            }
            // One frame of at most the chunk's size (declared or not, as
            // libtiff's streaming writer leaves it): decoded in one call
            // straight into the chunk (a spare buffer of this thread: no
            // fresh pages), with this thread's context (no window buffer,
            // no context set-up per chunk).
            let mut out = output_buffer(self.name(), ctx.decoded_len)?;
            with_context(|d| {
                d.decompress(&mut out, &input[..])
                    .map_err(|code| ::zstd::zstd_safe::get_error_name(code).to_string())
            })
            .map_err(|e| Error::decode(self.name(), e))?;
            if out.len() > ctx.decoded_len || declared.is_some_and(|size| size != out.len()) {
                return Err(Error::decode(
                    self.name(),
                    format!(
                        "the frame declares {declared:?} bytes but holds {} (the chunk holds {})",
                        out.len(),
                        ctx.decoded_len
                    ),
                ));
            }
            return Ok(Bytes::from(out));
        }
        let mut decoder = ::zstd::stream::read::Decoder::with_buffer(&input[..]).map_err(fail)?;
        decoder
            .window_log_max(window_log_max(ctx.decoded_len))
            .map_err(fail)?;
        read_bounded(self.name(), decoder, ctx)
    }
}

thread_local! {
    /// Each thread's decompression context, made on first use.
    static DECOMPRESSOR: std::cell::RefCell<Option<DCtx<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` with this thread's decompression context.
fn with_context<T>(f: impl FnOnce(&mut DCtx<'static>) -> Result<T, String>) -> Result<T, String> {
    DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        let d = match &mut *d {
            Some(d) => d,
            empty => {
                empty.insert(DCtx::try_create().ok_or("cannot allocate a decompression context")?)
            }
        };
        f(d)
    })
}

/// Decodes the first `needed` bytes (or more, up to `limit`) of the single
/// frame `input` with the streaming decoder, which stops when its output
/// is full: the blocks of the frame after them are left undecoded. A frame
/// that ends before `needed` bytes (a short strip) gives what it holds.
fn decode_prefix(
    d: &mut DCtx<'static>,
    input: &[u8],
    needed: usize,
    limit: usize,
) -> Result<Vec<u8>, String> {
    let name = |code| ::zstd::zstd_safe::get_error_name(code).to_string();
    d.reset(ResetDirective::SessionOnly).map_err(name)?;
    d.set_parameter(DParameter::WindowLogMax(window_log_max(limit)))
        .map_err(name)?;
    let mut out = scratch_buffer("zstd", needed).map_err(|e| e.to_string())?;
    let mut output = OutBuffer::around(&mut out[..]);
    let mut src = InBuffer::around(input);
    let done = loop {
        let before = (src.pos(), output.pos());
        let hint = d.decompress_stream(&mut output, &mut src).map_err(name)?;
        if hint == 0 || output.pos() == needed {
            break output.pos();
        }
        if (src.pos(), output.pos()) == before {
            return Err(format!(
                "truncated frame: {} bytes decoded, {needed} needed",
                output.pos()
            ));
        }
    };
    d.reset(ResetDirective::SessionOnly).map_err(name)?;
    out.truncate(done);
    Ok(out)
}

/// `Some(declared size)` when `input` is exactly one frame declaring at
/// most `limit` bytes, or none (what TIFF and numcodecs writers make);
/// `None` sends the input to the streaming decoder (several frames,
/// skippable frames, a larger declared size).
fn single_frame(input: &[u8], limit: usize) -> Option<Option<usize>> {
    let frame = ::zstd::zstd_safe::find_frame_compressed_size(input).ok()?;
    if frame != input.len() {
        return None;
    }
    match ::zstd::zstd_safe::get_frame_content_size(input).ok()? {
        None => Some(None),
        Some(size) => usize::try_from(size).ok().filter(|&n| n <= limit).map(Some),
    }
}

/// The largest window a frame may declare: the window buffer is allocated
/// from the frame header, so it must not go far beyond the chunk.
fn window_log_max(decoded_len: usize) -> u32 {
    let ceil_log2 = usize::BITS - decoded_len.saturating_sub(1).leading_zeros();
    ceil_log2.clamp(MIN_WINDOW_LOG, MAX_WINDOW_LOG)
}

/// Builds the `zstd` codec (`level` and `checksum` only matter for encoding).
pub(crate) fn from_config(_config: &Config) -> Result<Box<dyn Codec>> {
    Ok(Box::new(Zstd))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::codec::testing::{assert_survives_mutations, decode_with, hex, sample};

    /// Streams `data` through an encoder that does not know its size, so
    /// the frame has no content size.
    fn encode_streaming(data: &[u8], window_log: u32) -> Vec<u8> {
        let mut encoder = ::zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        encoder.window_log(window_log).unwrap();
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    #[test]
    fn round_trips_with_and_without_content_size() {
        let data = sample(100_000);
        let framed = ::zstd::bulk::compress(&data, 5).unwrap();
        let out = decode_with(
            "zstd",
            r#"{"level": 5, "checksum": false}"#,
            &framed,
            100_000,
        );
        assert_eq!(&out.unwrap()[..], &data[..]);
        let streamed = encode_streaming(&data, 20);
        let out = decode_with("numcodecs.zstd", "{}", &streamed, 100_000).unwrap();
        assert_eq!(&out[..], &data[..]);
    }

    #[test]
    fn stops_after_the_prefix_a_reader_needs() {
        let data = sample(600_000);
        let codec = crate::codec::registry::build("zstd", &Config::new()).unwrap();
        let ctx = |needed| DecodeContext {
            needed,
            ..crate::codec::testing::ctx(600_000)
        };
        for framed in [
            encode_streaming(&data, 22),
            ::zstd::bulk::compress(&data, 3).unwrap(),
        ] {
            // 1000 bytes needed: the first block (128 KiB) is decoded, no more.
            let out = codec
                .decode(Bytes::from(framed.clone()), &ctx(1000))
                .unwrap();
            assert!((1000..600_000).contains(&out.len()), "{}", out.len());
            assert_eq!(&out[..], &data[..out.len()]);
            // Cut inside the first block: an error.
            let err = codec
                .decode(Bytes::copy_from_slice(&framed[..100]), &ctx(1000))
                .unwrap_err();
            assert!(err.to_string().contains("truncated"), "{err}");
        }
        // A frame ending before the bytes needed (a short strip) gives what it holds.
        let short = ::zstd::bulk::compress(&data[..500], 3).unwrap();
        let out = codec.decode(Bytes::from(short), &ctx(1000)).unwrap();
        assert_eq!(&out[..], &data[..500]);
        // Damaged frames: an error or some bytes, never a panic or a hang.
        let framed = ::zstd::bulk::compress(&data, 3).unwrap();
        for i in 0..200 {
            let mut bad = framed.clone();
            let at = 4 + (i * 7919) % (bad.len() - 4);
            bad[at] ^= 1 << (i % 8);
            bad.truncate(bad.len() - (i % 3) * (i % 50));
            if let Ok(out) = codec.decode(Bytes::from(bad), &ctx(1000)) {
                assert!(out.len() <= 600_000);
            }
        }
    }

    #[test]
    fn decodes_concatenated_frames() {
        let data = sample(5_000);
        let two = [
            ::zstd::bulk::compress(&data[..2_000], 1).unwrap(),
            ::zstd::bulk::compress(&data[2_000..], 1).unwrap(),
        ]
        .concat();
        assert_eq!(
            &decode_with("zstd", "{}", &two, 5_000).unwrap()[..],
            &data[..]
        );
    }

    #[test]
    fn decodes_numcodecs_output() {
        // numcodecs.Zstd(level=1).encode(bytes(range(16)) * 4)
        let golden = hex(
            "28 b5 2f fd 20 40 bd 00 00 80 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d
             0e 0f 01 00 9a 68 2e 01",
        );
        let expected: Vec<u8> = (0..64u8).map(|i| i % 16).collect();
        assert_eq!(
            &decode_with("zstd", "{}", &golden, 64).unwrap()[..],
            &expected[..]
        );
    }

    #[test]
    fn window_limit_follows_the_chunk_size() {
        assert_eq!(window_log_max(0), MIN_WINDOW_LOG);
        assert_eq!(window_log_max(1 << 24), 24);
        assert_eq!(window_log_max((1 << 24) + 1), 25);
        assert_eq!(window_log_max(usize::MAX), MAX_WINDOW_LOG);
    }

    #[test]
    fn rejects_hostile_input() {
        let data = sample(10_000);
        let framed = ::zstd::bulk::compress(&data, 3).unwrap();
        assert!(decode_with("zstd", "{}", &framed[..framed.len() - 1], 10_000).is_err());
        assert!(decode_with("zstd", "{}", b"\x28\xb5\x2f\xfd garbage", 10_000).is_err());
        assert!(decode_with("zstd", "{}", &framed, 9_000).is_err());
        let small = ::zstd::bulk::compress(&sample(3_000), 3).unwrap();
        assert_survives_mutations("zstd", "{}", &small, 3_000);
        // A frame declaring a 128 MiB window for a 10 kB chunk: alone, it is
        // decoded in one pass into the chunk (no window buffer at all); as
        // one of several frames (the streaming decoder), it is refused.
        let huge_window = encode_streaming(&data, 27);
        let one = decode_with("zstd", "{}", &huge_window, 10_000).unwrap();
        assert_eq!(&one[..], &data[..]);
        let mut two = huge_window.clone();
        two.extend_from_slice(&::zstd::bulk::compress(b"", 1).unwrap());
        let err = decode_with("zstd", "{}", &two, 10_000).unwrap_err();
        assert!(err.to_string().contains("too much memory"), "{err}");
    }
}
