//! `https://awslabs.github.io/osml-imagery-io/codecs/jpeg` (alias
//! `nitf-jpeg`): one JPEG-compressed NITF block (IC = C3 / M3), as
//! osml-imagery-io 0.2.x indexes describe it.
//!
//! Configuration: `bits_per_pixel` (8; 12-bit JPEG is refused by name),
//! `num_bands`, `block_width`, `block_height`, `imode` and `color_space`.
//! The chunk is one complete JPEG stream holding every band (IMODE P, or a
//! single band); three-component streams are converted from YCbCr to RGB as
//! GDAL's NITF driver does through libjpeg. Decoding gives `[num_bands,
//! block_height, block_width]`.

use bytes::Bytes;
use jpeg_decoder::{Decoder, PixelFormat};

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
        if ctx.dtype.size != 1 || ctx.decoded_len != bands * w * h {
            return Err(Error::decode(
                URI,
                format!(
                    "a {w} x {h} block of {bands} 8-bit band(s) does not fit the chunk of {} \
                     bytes",
                    ctx.decoded_len
                ),
            ));
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

/// Builds the codec from its osml-imagery-io configuration.
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let dim = |key: &str| -> Result<usize> {
        config_uint(URI, config, key)?
            .filter(|v| (1..=1 << 16).contains(v))
            .map(|v| v as usize)
            .ok_or_else(|| Error::codec_config(URI, format!("'{key}' should be in 1..=65536")))
    };
    let bits = config_uint(URI, config, "bits_per_pixel")?.unwrap_or(8);
    if bits != 8 {
        return Err(Error::unsupported(format!(
            "{bits}-bit NITF JPEG blocks (only 8-bit JPEG is supported)"
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
    }))
}
