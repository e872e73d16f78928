//! `https://awslabs.github.io/osml-imagery-io/codecs/jpeg` (alias
//! `nitf-jpeg`): one JPEG-compressed NITF block (IC = C3 / M3), as
//! osml-imagery-io 0.2.x indexes describe it.
//!
//! Configuration: `bits_per_pixel` (8, or 12 for 12-bit JPEG decoded into
//! 16-bit samples through libjpeg-turbo, see `jpeg12.rs`), `num_bands`,
//! `block_width`, `block_height`, `imode` and `color_space`. The chunk is
//! one complete JPEG stream holding every band (IMODE P, or a single band);
//! three-component streams are converted from YCbCr to RGB as GDAL's NITF
//! driver does through libjpeg. Decoding gives `[num_bands, block_height,
//! block_width]` of `|u1` (8-bit) or `<u2` (12-bit).

use bytes::Bytes;
use jpeg_decoder::{Decoder, PixelFormat};

use super::jpeg12;
use super::registry::{config_str, config_uint, Config};
use super::{Codec, DecodeContext};
use crate::error::{Error, Result};

/// The canonical name of the codec, as osml-imagery-io writes it.
pub(super) const URI: &str = "https://awslabs.github.io/osml-imagery-io/codecs/jpeg";

/// Every name the codec answers to, canonical first.
pub(super) const NAMES: &[&str] = &[URI, "nitf-jpeg"];

#[derive(Debug)]
struct NitfJpeg {
    bands: usize,
    width: usize,
    height: usize,
    /// 8 or 12.
    bits: u64,
}

impl Codec for NitfJpeg {
    fn name(&self) -> &str {
        URI
    }

    fn compression(&self) -> String {
        "JPEG".into()
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let (bands, w, h) = (self.bands, self.width, self.height);
        let size = if self.bits == 8 { 1 } else { 2 };
        if ctx.dtype.size != size || ctx.decoded_len != bands * w * h * size {
            return Err(Error::decode(
                URI,
                format!(
                    "a {w} x {h} block of {bands} {}-bit band(s) does not fit the chunk of {} \
                     bytes",
                    self.bits, ctx.decoded_len
                ),
            ));
        }
        if self.bits == 12 {
            return self.decode_12(&input);
        }
        let mut decoder = Decoder::new(&input[..]);
        decoder.set_max_decoding_buffer_size(ctx.decoded_len.max(1) * 4);
        let pixels = decoder
            .decode()
            .map_err(|e| Error::decode(URI, format!("corrupt or truncated JPEG: {e}")))?;
        let info = decoder
            .info()
            .ok_or_else(|| Error::decode(URI, "JPEG stream without a frame header"))?;
        let comps = match info.pixel_format {
            PixelFormat::L8 => 1,
            PixelFormat::RGB24 => 3,
            other => {
                return Err(Error::unsupported(format!(
                    "NITF JPEG blocks of pixel format {other:?}"
                )))
            }
        };
        let (jw, jh) = (usize::from(info.width), usize::from(info.height));
        if comps != bands || jw > w || jh > h {
            return Err(Error::decode(
                URI,
                format!(
                    "the JPEG stream is {jw} x {jh} with {comps} component(s), the block {w} x \
                     {h} with {bands} band(s)"
                ),
            ));
        }
        let mut out = vec![0u8; ctx.decoded_len];
        for (pixel, samples) in pixels.chunks_exact(comps).enumerate() {
            let (row, col) = (pixel / jw, pixel % jw);
            for (band, &v) in samples.iter().enumerate() {
                out[(band * h + row) * w + col] = v;
            }
        }
        Ok(Bytes::from(out))
    }
}

impl NitfJpeg {
    /// Decodes a 12-bit stream into little-endian `u16` band planes (`<u2`).
    fn decode_12(&self, input: &[u8]) -> Result<Bytes> {
        let (bands, w, h) = (self.bands, self.width, self.height);
        let img = jpeg12::decode(input, bands * w * h).map_err(|e| Error::decode(URI, e))?;
        if img.components != bands || img.width > w || img.height > h {
            return Err(Error::decode(
                URI,
                format!(
                    "the JPEG stream is {} x {} with {} component(s), the block {w} x {h} with \
                     {bands} band(s)",
                    img.width, img.height, img.components
                ),
            ));
        }
        let mut out = vec![0u8; bands * w * h * 2];
        for (pixel, samples) in img.samples.chunks_exact(bands).enumerate() {
            let (row, col) = (pixel / img.width, pixel % img.width);
            for (band, &v) in samples.iter().enumerate() {
                let at = ((band * h + row) * w + col) * 2;
                out[at..at + 2].copy_from_slice(&(v as u16).to_le_bytes());
            }
        }
        Ok(Bytes::from(out))
    }
}

/// Builds the codec from its osml-imagery-io configuration.
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let dim = |key: &str| -> Result<usize> {
        config_uint(URI, config, key)?
            .filter(|v| (1..=1 << 16).contains(v))
            .map(|v| v as usize)
            .ok_or_else(|| Error::codec_config(URI, format!("'{key}' should be in 1..=65536")))
    };
    let bits = config_uint(URI, config, "bits_per_pixel")?.unwrap_or(8);
    if bits != 8 && bits != 12 {
        return Err(Error::unsupported(format!(
            "{bits}-bit NITF JPEG blocks (8- and 12-bit JPEG are supported)"
        )));
    }
    let bands = dim("num_bands")?;
    let imode = config_str(URI, config, "imode")?.unwrap_or("P");
    if bands > 1 && imode != "P" {
        return Err(Error::unsupported(format!(
            "NITF JPEG blocks of {bands} bands with IMODE {imode} (one stream per band)"
        )));
    }
    Ok(Box::new(NitfJpeg {
        bands,
        width: dim("block_width")?,
        height: dim("block_height")?,
        bits,
    }))
}
