//! `https://awslabs.github.io/osml-imagery-io/codecs/jpeg` (alias
//! `nitf-jpeg`): one JPEG-compressed NITF block (IC = C3 / M3), as
//! osml-imagery-io 0.2.x indexes describe it.
//!
//! Configuration: `bits_per_pixel` (8, or 12 for 12-bit JPEG decoded into
//! 16-bit samples), `num_bands`,
//! `block_width`, `block_height`, `imode` and `color_space`; chunkref adds
//! `q_level` (1 to 5: the default quantisation and Huffman tables a NITF
//! stream without its own names in its APP6 segment, loaded as GDAL's JPEG
//! driver loads them, see `nitf_jpeg_tables.rs`) and `scale` (2, 4 or 8:
//! the block decoded at that fraction of its size through libjpeg's scaled
//! inverse DCT, as GDAL's JPEG driver makes the overviews of a one-block
//! image; the decoded block is then `ceil(block_width / scale)` wide and
//! `ceil(block_height / scale)` high). The chunk is
//! one complete JPEG stream holding every band (IMODE P, or a single band);
//! three-component streams are converted from YCbCr to RGB as GDAL's NITF
//! driver does through libjpeg. Decoded by libjpeg-turbo (`turbojpeg.rs`),
//! GDAL's own JPEG library, so pixels match GDAL's. Decoding gives `[num_bands, block_height,
//! block_width]` (scaled) of `|u1` (8-bit) or `<u2` (12-bit).

use bytes::Bytes;

use super::nitf_jpeg_tables;
use super::turbojpeg::{self, Samples};
use super::{Codec, DecodeContext};
use crate::base::error::{Error, Result};
use crate::codec::config::{config_str, config_uint, Config};

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
    /// The default tables loaded before the stream's (8-bit only).
    q_level: Option<u64>,
    /// 1, or the overview's reduction (2, 4, 8).
    scale: u8,
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
        let precision = if self.bits == 8 { 8 } else { 12 };
        let stream = match self.q_level {
            Some(level) => nitf_jpeg_tables::with_default_tables(&input, level).into(),
            None => input,
        };
        let img = turbojpeg::decode_scaled(&stream, &[precision], bands * w * h, self.scale)
            .map_err(|e| Error::decode(URI, e))?;
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
        // Interleaved pixels to band planes; 12-bit samples as `<u2`.
        let mut out = vec![0u8; ctx.decoded_len];
        let at = |pixel: usize, band: usize| {
            let (row, col) = (pixel / img.width, pixel % img.width);
            (band * h + row) * w + col
        };
        match (&img.samples, self.bits) {
            (Samples::Eight(samples), 8) => {
                for (i, &v) in samples.iter().enumerate() {
                    out[at(i / bands, i % bands)] = v;
                }
            }
            (Samples::Twelve(samples), 12) => {
                for (i, &v) in samples.iter().enumerate() {
                    let o = 2 * at(i / bands, i % bands);
                    out[o..o + 2].copy_from_slice(&(v as u16).to_le_bytes());
                }
            }
            _ => return Err(Error::decode(URI, "unexpected JPEG sample precision")),
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
    let scale = match config_uint(URI, config, "scale")?.unwrap_or(1) {
        s @ (1 | 2 | 4 | 8) => s as u8,
        s => {
            return Err(Error::codec_config(
                URI,
                format!("'scale' {s} should be 1, 2, 4 or 8"),
            ))
        }
    };
    let q_level = match config_uint(URI, config, "q_level")? {
        Some(q) if !nitf_jpeg_tables::is_level(q) => {
            return Err(Error::codec_config(
                URI,
                format!("'q_level' {q} should be in 1..=5"),
            ))
        }
        Some(_) if bits != 8 => {
            return Err(Error::codec_config(
                URI,
                "'q_level' applies to 8-bit JPEG only",
            ))
        }
        q => q,
    };
    let scaled = |v: usize| v.div_ceil(usize::from(scale));
    Ok(Box::new(NitfJpeg {
        bands,
        width: scaled(dim("block_width")?),
        height: scaled(dim("block_height")?),
        bits,
        q_level,
        scale,
    }))
}
