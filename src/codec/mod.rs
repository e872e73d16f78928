//! Codecs: bytes-to-bytes transforms that turn stored chunk bytes back into
//! the chunk's element bytes.
//!
//! Every codec implements [`Codec`]. The [`registry`] maps Zarr v2 ids and
//! Zarr v3 names (with aliases) to constructors; format codecs of other
//! stages (TIFF tiles, JPEG 2000, NITF blocks, DTED) plug in there.
//! A [`CodecChain`] holds the codecs of one array in decode order.

pub mod config;
pub mod registry;
pub mod stream;
#[cfg(test)]
pub(crate) mod testing;

mod bitshuffle;
mod blosc;
mod bz2;
mod checksum;
pub(crate) mod crc32c;
mod delta;
mod dted;
mod fax;
mod fletcher32;
pub(crate) mod grib;
mod gzip;
mod imagecodecs;
mod jbp_block;
mod jpeg2000;
mod lz4;
mod lzf;
mod lzma;
pub(crate) mod nitf_bilevel;
mod nitf_jpeg;
mod nitf_jpeg_tables;
pub(crate) mod nitf_vq;
mod shuffle;
mod szip;
pub(crate) mod tiff_tile;
mod turbojpeg;
pub(crate) mod valid_range;
mod zlib;
mod zstd;

use bytes::Bytes;

use crate::base::dtype::DataType;
use crate::base::error::Result;

/// What a codec may need to know about the chunk it decodes.
#[derive(Debug, Clone, Copy)]
pub struct DecodeContext<'a> {
    /// Shape of a full chunk in elements (Zarr chunks are always full size).
    pub chunk_shape: &'a [u64],
    /// Position of the chunk in the array's chunk grid (empty when unknown).
    pub chunk_index: &'a [u64],
    /// Element type of the decoded chunk (byte order as stored).
    pub dtype: DataType,
    /// Number of bytes the fully decoded chunk must have.
    pub decoded_len: usize,
    /// Bytes of the decoded chunk the reader uses, from its start
    /// (`decoded_len` when it uses all of it; less for a window that ends
    /// above the chunk's last row). A codec able to stop early (see
    /// [`DecodeContext::prefix`]) may return any length from `needed` to
    /// `decoded_len`; the others decode the whole chunk.
    pub needed: usize,
    /// The first byte of the decoded chunk the reader uses (0 but for a
    /// window that starts below the chunk's first row; at most `needed`):
    /// the bytes before it may come back with the last steps of decoding,
    /// those that work row by row, left undone (a TIFF predictor is undone
    /// from the row holding this byte on).
    pub first_needed: usize,
}

impl DecodeContext<'_> {
    /// The length of the decoded prefix worth producing: `needed` when it
    /// is less than the whole chunk, `None` for a whole decode.
    pub fn prefix(&self) -> Option<usize> {
        (self.needed < self.decoded_len).then_some(self.needed)
    }

    /// This context for the whole chunk (a stage whose output is not the
    /// chunk's leading bytes).
    pub fn whole(&self) -> Self {
        DecodeContext {
            needed: self.decoded_len,
            first_needed: 0,
            ..*self
        }
    }
}

/// The colour model of the pixels a format codec decodes, as its source
/// declares it (TIFF Photometric, NITF IREP, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorModel {
    /// Red, green, blue samples (also YCbCr decoded to RGB).
    Rgb,
    /// One gray sample.
    Gray,
    /// Palette indices.
    Palette,
    /// Cyan, magenta, yellow, black inks (as stored, not converted).
    Cmyk,
}

impl ColorModel {
    /// The colour model of a TIFF `Photometric` value, as GDAL reads it
    /// (YCbCr, decoded to RGB, is RGB).
    pub fn from_tiff_photometric(photometric: u64) -> Option<ColorModel> {
        match photometric {
            0 | 1 => Some(ColorModel::Gray),
            2 | 6 => Some(ColorModel::Rgb),
            3 => Some(ColorModel::Palette),
            5 => Some(ColorModel::Cmyk),
            _ => None,
        }
    }
}

/// A bytes-to-bytes decoding step.
pub trait Codec: Send + Sync + std::fmt::Debug {
    /// The canonical name of the codec (v2 id or v3 name).
    fn name(&self) -> &str;
    /// What GDAL's `COMPRESSION` metadata item should say for this codec
    /// (format codecs report the compression they wrap, e.g. `DEFLATE`).
    fn compression(&self) -> String {
        self.name().to_ascii_uppercase()
    }
    /// Significant bits per sample when the codec stores fewer than the data
    /// type holds (GDAL's `NBITS`), else `None`.
    fn stored_bits(&self) -> Option<u32> {
        None
    }
    /// Decodes `input` into the bytes of the previous stage.
    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes>;
    /// The colour model of the decoded pixels, when the codec knows it.
    fn color_model(&self) -> Option<ColorModel> {
        None
    }
    /// Makes a codec that converts colour components (TIFF CMYK and
    /// CIELab to RGBA) decode them as stored instead, returning their
    /// number; `None` (and nothing changed) for the others.
    fn serve_stored_color(&mut self) -> Option<u64> {
        None
    }
}

/// The codecs of one array, stored in decode order (last encode step first).
#[derive(Debug, Default)]
pub struct CodecChain {
    decode_order: Vec<Box<dyn Codec>>,
}

impl CodecChain {
    /// Builds a chain from codecs listed in *encode* order (as metadata lists them).
    pub fn from_encode_order(mut codecs: Vec<Box<dyn Codec>>) -> CodecChain {
        codecs.reverse();
        CodecChain {
            decode_order: codecs,
        }
    }

    /// Runs every codec in decode order. Only a lone codec may stop early
    /// ([`DecodeContext::needed`]): a prefix of one stage's output is not
    /// the prefix of the next one's.
    pub fn decode(&self, mut data: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let ctx = match self.decode_order.len() {
            1 => *ctx,
            _ => ctx.whole(),
        };
        for codec in &self.decode_order {
            data = codec.decode(data, &ctx)?;
        }
        Ok(data)
    }

    /// Names of the codecs in encode order, for messages.
    pub fn names(&self) -> Vec<&str> {
        self.decode_order.iter().rev().map(|c| c.name()).collect()
    }

    /// `COMPRESSION` metadata value: each codec's compression, in encode order.
    pub fn compression(&self) -> String {
        let parts: Vec<String> = self
            .decode_order
            .iter()
            .rev()
            .map(|c| c.compression())
            .collect();
        parts.join(",")
    }

    /// The fewest significant bits per sample any codec stores, if any stores
    /// fewer than the data type holds.
    pub fn stored_bits(&self) -> Option<u32> {
        self.decode_order
            .iter()
            .filter_map(|c| c.stored_bits())
            .min()
    }

    /// The colour model the first codec that knows one declares.
    pub fn color_model(&self) -> Option<ColorModel> {
        self.decode_order.iter().find_map(|c| c.color_model())
    }

    /// Makes every codec serve colour components as stored (see
    /// [`Codec::serve_stored_color`]); their number when one converted them.
    pub fn serve_stored_color(&mut self) -> Option<u64> {
        self.decode_order.iter_mut().fold(None, |samples, codec| {
            codec.serve_stored_color().or(samples)
        })
    }

    /// True when no codec is applied (raw chunk bytes).
    pub fn is_empty(&self) -> bool {
        self.decode_order.is_empty()
    }
}
