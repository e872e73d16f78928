//! `https://awslabs.github.io/osml-imagery-io/codecs/tiff-tile` (alias
//! `tiff-tile`): one tile or strip of a TIFF file, as osml-imagery-io 0.2.x
//! indexes describe it.
//!
//! The configuration carries the TIFF tags needed to decode the tile:
//! `compression` (1 none, 2 CCITT RLE, 3 CCITT Group 3 fax, 4 CCITT Group 4
//! fax, 5 LZW, 7 JPEG, 8 / 32946 Deflate, 32773 PackBits, 50000 ZSTD, 34925
//! LZMA, 50001 WebP, 34676 SGILOG and 34677 SGILOG24), `bits_per_sample`,
//! `samples_per_pixel`, `photometric`, `planar_config`, `predictor` (1, 2,
//! 3), `tile_width`, `tile_height`, `jpeg_tables` (base64 of tag 347) and
//! `t4_options` (tag 292: bit 0 says Group 3 rows may be 2-D coded).
//! Fax-coded (1-bit samples only) and SGILOG chunks that are strips also
//! carry `image_height`, the image's rows: the last strip is decoded for the
//! rows it holds, as libtiff decodes it (the data does not say where it
//! ends); `t6_options` (tag 293), which changes no decoding, is kept as the
//! file has it. LogLuv and LogL pixels (see [`sgilog`]) decode to what
//! `photometric`, `bits_per_sample` and `sample_format` choose, as in
//! libtiff.
//! `bits_per_sample` below the data type's width (1 to 32) means packed
//! integer samples (1-bit masks, 12-bit imagery), widened on decode. Missing
//! fields take their TIFF defaults; unknown fields are ignored, and
//! `sample_format` (an integer) matters to SGILOG chunks only: the data type
//! of other chunks already says what their samples are.
//! `color_to_rgba` (`"cmyk"`, `"cielab"`, with `white_point`) converts
//! 8-bit CMYK or CIELab pixels to the RGBA GDAL's GTiff driver shows
//! (see [`rgba`]): the chunk then holds four samples.
//!
//! Decoding yields the Zarr chunk `[samples, tile_height, tile_width]` in C
//! order, elements in the byte order of the chunk's data type (that of the
//! TIFF file). Pixel-interleaved tiles are transposed to band-major; a strip
//! holding fewer rows than the chunk (the last strip of an image) is padded
//! with zero rows.

mod compression;
mod jpeg;
mod layout;
pub(super) mod lzw;
mod packbits;
pub(super) mod predictor;
mod rgba;
mod sgilog;
#[cfg(test)]
mod vectors;
mod webp;

use base64::Engine;
use bytes::Bytes;

use super::{Codec, ColorModel, DecodeContext};
use crate::base::dtype::{ByteOrder, ScalarKind};
use crate::base::error::{Error, Result};
use crate::codec::config::{config_str, config_uint, Config};
use compression::{Compression, Tags};
use layout::Layout;
use predictor::Predictor;
use rgba::ToRgba;

/// The canonical name of the codec, as osml-imagery-io writes it.
pub(crate) const URI: &str = "https://awslabs.github.io/osml-imagery-io/codecs/tiff-tile";

/// Every name the codec answers to, canonical first.
pub(super) const NAMES: &[&str] = &[URI, "tiff-tile"];

/// TIFF `Photometric` value for YCbCr.
const PHOTOMETRIC_YCBCR: u64 = 6;

/// Decodes one TIFF tile or strip into a band-major chunk.
#[derive(Debug)]
struct TiffTile {
    compression: Compression,
    /// `bits_per_sample`; `None` follows the chunk's data type.
    bits_per_sample: Option<u64>,
    samples_per_pixel: usize,
    /// `Photometric`, `None` when absent (a JPEG decoder then guesses).
    photometric: Option<u64>,
    /// `PlanarConfiguration` 2: every tile holds one sample.
    planar: bool,
    predictor: Predictor,
    /// `FillOrder` 2: the bits of each stored byte come least-significant
    /// first, and are reversed before decompression (as libtiff does).
    lsb_first: bool,
    tile_width: Option<u64>,
    tile_height: Option<u64>,
    /// The image's rows, when chunks are strips of fax data (the last one
    /// holds fewer rows than the others).
    image_height: Option<u64>,
    /// The conversion of the stored colour components to RGBA, if any.
    to_rgba: Option<ToRgba>,
}

impl Codec for TiffTile {
    fn name(&self) -> &str {
        URI
    }

    fn compression(&self) -> String {
        self.compression.gdal_name().to_string()
    }

    fn stored_bits(&self) -> Option<u32> {
        self.bits_per_sample
            .filter(|b| ![8, 16, 32, 64].contains(b))
            .map(|b| b as u32)
    }

    fn color_model(&self) -> Option<ColorModel> {
        match self.to_rgba {
            Some(_) => Some(ColorModel::Rgb),
            None => self.photometric.and_then(ColorModel::from_tiff_photometric),
        }
    }

    fn serve_stored_color(&mut self) -> Option<u64> {
        self.to_rgba.take().map(|c| c.stored_samples() as u64)
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let Some(to_rgba) = &self.to_rgba else {
            return self.decode_stored(input, ctx);
        };
        // The stored tile is decoded whole, then converted.
        let stored_len = (ctx.decoded_len / rgba::RGBA)
            .checked_mul(to_rgba.stored_samples())
            .filter(|_| ctx.decoded_len.is_multiple_of(rgba::RGBA))
            .ok_or_else(|| {
                Error::decode(
                    URI,
                    format!(
                        "a chunk of {} bytes does not hold RGBA pixels",
                        ctx.decoded_len
                    ),
                )
            })?;
        let stored_ctx = DecodeContext {
            decoded_len: stored_len,
            needed: stored_len,
            first_needed: 0,
            ..*ctx
        };
        let stored = self.decode_stored(input, &stored_ctx)?;
        Ok(Bytes::from(to_rgba.convert(&stored)))
    }
}

impl TiffTile {
    /// Decodes the stored samples of the tile, band-major.
    fn decode_stored(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let layout = self.layout(ctx)?;
        // A reader needing some rows only (the chunk is the tile's rows in
        // order when pixels hold one whole sample): compressions that can
        // stop early stop after the last, the predictor undoes them alone
        // (from the first), and the chunk comes back short.
        let row_bytes = layout.row_bytes();
        let by_rows = layout.samples == 1 && !layout.is_packed() && row_bytes > 0;
        let rows = match ctx.prefix() {
            Some(needed) if by_rows => needed.div_ceil(row_bytes).min(layout.height),
            _ => layout.height,
        };
        let first_row = match by_rows {
            true => (ctx.first_needed / row_bytes).min(rows),
            false => 0,
        };
        let inner = match rows < layout.height {
            true => DecodeContext {
                needed: rows * row_bytes,
                ..*ctx
            },
            false => ctx.whole(),
        };
        let input = match self.lsb_first {
            true => input.iter().map(|b| b.reverse_bits()).collect(),
            false => input,
        };
        let data = self.compression.decompress(
            input,
            &inner,
            &layout,
            self.photometric,
            self.rows_stored(&layout, ctx.chunk_index),
        )?;
        let mut data = layout
            .fill_rows(data, rows)
            .map_err(|e| fail(&self.compression, e))?;
        let big_endian = ctx.dtype.order == ByteOrder::Big;
        if layout.is_packed() {
            data = layout.unpack(&data, big_endian, ctx.dtype.kind == ScalarKind::Int);
        } else if self.compression.uses_predictor() {
            self.predictor
                .undo(&mut data[first_row * row_bytes..], &layout, big_endian)
                .map_err(|reason| fail(&self.compression, reason))?;
        }
        Ok(Bytes::from(layout.band_major(data)?))
    }

    /// The rows the strip or tile at `chunk_index` holds: those of the
    /// layout but in the last strip of an image whose height is known.
    fn rows_stored(&self, layout: &Layout, chunk_index: &[u64]) -> usize {
        match (self.image_height, chunk_index) {
            (Some(height), [.., y, _]) => {
                let first = y.saturating_mul(layout.height as u64);
                let left = height.saturating_sub(first);
                usize::try_from(left).map_or(layout.height, |left| left.min(layout.height))
            }
            _ => layout.height,
        }
    }

    /// The geometry of the decoded tile, checked against the chunk.
    fn layout(&self, ctx: &DecodeContext<'_>) -> Result<Layout> {
        let size = ctx.dtype.size;
        let bits = self.bits_per_sample.unwrap_or(8 * size as u64);
        let packable = bits < 8 * size as u64 && ctx.dtype.kind != ScalarKind::Float;
        if bits != 8 * size as u64 && !packable {
            return Err(Error::decode(
                URI,
                format!("bits_per_sample {bits} does not fit the chunk's {size}-byte data type"),
            ));
        }
        let from_shape = |back: usize| {
            ctx.chunk_shape
                .len()
                .checked_sub(back)
                .map(|i| ctx.chunk_shape[i])
        };
        let dim = |configured: Option<u64>, back: usize, what: &str| {
            let value = configured.or_else(|| from_shape(back)).ok_or_else(|| {
                Error::decode(
                    URI,
                    format!("no {what} configured and the chunk is not 2-D"),
                )
            })?;
            usize::try_from(value)
                .map_err(|_| Error::decode(URI, format!("{what} {value} is too large")))
        };
        let layout = Layout {
            width: dim(self.tile_width, 1, "tile_width")?,
            height: dim(self.tile_height, 2, "tile_height")?,
            samples: if self.planar {
                1
            } else {
                self.samples_per_pixel
            },
            sample_size: size,
            bits: bits as usize,
        };
        match layout.chunk_len() {
            Some(len) if len == ctx.decoded_len => Ok(layout),
            len => Err(Error::decode(
                URI,
                format!(
                    "a {} x {} tile of {} sample(s) of {size} byte(s) holds {} bytes, \
                     but the chunk holds {}",
                    layout.width,
                    layout.height,
                    layout.samples,
                    len.map_or_else(|| "too many".to_string(), |n| n.to_string()),
                    ctx.decoded_len
                ),
            )),
        }
    }
}

/// A decode error naming the TIFF compression it happened in.
fn fail(compression: &Compression, reason: impl std::fmt::Display) -> Error {
    Error::decode(URI, format!("{compression}: {reason}"))
}

/// Reads an optional integer field that must be one of `allowed`.
fn config_choice(config: &Config, key: &str, default: u64, allowed: &[u64]) -> Result<u64> {
    let value = config_uint(URI, config, key)?.unwrap_or(default);
    if allowed.contains(&value) {
        Ok(value)
    } else {
        Err(Error::codec_config(
            URI,
            format!("'{key}' should be one of {allowed:?}, found {value}"),
        ))
    }
}

/// Builds the codec from its osml-imagery-io configuration.
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let jpeg_tables = match config_str(URI, config, "jpeg_tables")? {
        Some(text) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(text.trim())
                .map_err(|e| {
                    Error::codec_config(URI, format!("'jpeg_tables' is not valid base64: {e}"))
                })?,
        ),
        None => None,
    };
    let bits_per_sample = config_uint(URI, config, "bits_per_sample")?;
    let byte_sized = |bits: u64| [8, 16, 32, 64].contains(&bits);
    if let Some(bits) = bits_per_sample.filter(|b| !(1..=32).contains(b) && !byte_sized(*b)) {
        return Err(Error::unsupported(format!(
            "TIFF tiles with {bits} bits per sample (supported: 1 to 32, and 64)"
        )));
    }
    let samples_per_pixel = config_uint(URI, config, "samples_per_pixel")?.unwrap_or(1);
    let samples_per_pixel = usize::try_from(samples_per_pixel)
        .ok()
        .filter(|s| (1..=u64::from(u16::MAX)).contains(&(*s as u64)))
        .ok_or_else(|| {
            Error::codec_config(
                URI,
                format!("'samples_per_pixel' should be in 1..=65535, found {samples_per_pixel}"),
            )
        })?;
    let photometric = config_uint(URI, config, "photometric")?;
    let compression = Compression::from_tag(
        config_uint(URI, config, "compression")?.unwrap_or(1),
        Tags {
            jpeg_tables,
            t4_options: config_uint(URI, config, "t4_options")?.unwrap_or(0),
            photometric,
            samples_per_pixel,
            bits_per_sample,
            sample_format: config_uint(URI, config, "sample_format")?.unwrap_or(1),
        },
    )?;
    if photometric == Some(PHOTOMETRIC_YCBCR) && !matches!(compression, Compression::Jpeg(_)) {
        return Err(Error::unsupported(format!(
            "YCbCr (photometric 6) TIFF tiles with {compression}; only JPEG-compressed YCbCr \
             is supported"
        )));
    }
    let planar = config_choice(config, "planar_config", 1, &[1, 2])? == 2;
    if matches!(compression, Compression::Fax(_))
        && (bits_per_sample != Some(1) || (samples_per_pixel != 1 && !planar))
    {
        return Err(Error::unsupported(format!(
            "{compression} of {samples_per_pixel} sample(s) of {bits_per_sample:?} bits per \
             pixel: libtiff decodes fax data of one 1-bit sample per pixel only"
        )));
    }
    let predictor = config_choice(config, "predictor", 1, &[1, 2, 3])?;
    if let Some(bits) = bits_per_sample.filter(|b| predictor != 1 && !byte_sized(*b)) {
        return Err(Error::codec_config(
            URI,
            format!("predictor {predictor} with {bits}-bit samples (TIFF allows none)"),
        ));
    }
    let predictor = Predictor::from_tag(predictor);
    let to_rgba = ToRgba::from_config(config)?;
    if let Some(to_rgba) = &to_rgba {
        let stored = to_rgba.stored_samples();
        if bits_per_sample.is_some_and(|b| b != 8) || samples_per_pixel != stored || planar {
            return Err(Error::codec_config(
                URI,
                format!(
                    "'color_to_rgba' converts contiguous 8-bit pixels of {stored} samples, \
                     not {samples_per_pixel} of {bits_per_sample:?} bits{}",
                    if planar { " in separate planes" } else { "" }
                ),
            ));
        }
    }
    let lsb_first = config_choice(config, "fill_order", 1, &[1, 2])? == 2;
    if lsb_first && !compression.reverses_fill_order() {
        return Err(Error::unsupported(format!(
            "FillOrder 2 (bits least-significant first) with {compression}: libtiff leaves \
             such data to its codec, and so does no chunk codec here"
        )));
    }
    Ok(Box::new(TiffTile {
        compression,
        bits_per_sample,
        samples_per_pixel,
        photometric,
        planar,
        predictor,
        lsb_first,
        tile_width: config_uint(URI, config, "tile_width")?,
        tile_height: config_uint(URI, config, "tile_height")?,
        image_height: config_uint(URI, config, "image_height")?,
        to_rgba,
    }))
}

#[cfg(test)]
mod tests {
    //! End-to-end tests with tiles made by Rust encoders; GDAL-written tiles
    //! are in `vectors.rs`.

    use std::io::Write;
    use std::ops::Range;

    use super::layout::Layout;
    use super::predictor::tests::{difference, difference_fp};
    use super::*;
    use crate::base::dtype::DataType;
    use crate::codec::registry;

    /// A chunk: its shape, data type and band-major bytes.
    struct Chunk {
        shape: [u64; 3],
        dtype: DataType,
        band_major: Vec<u8>,
    }

    impl Chunk {
        /// A chunk of pseudo-random samples.
        fn new(shape: [u64; 3], dtype: &str) -> Chunk {
            let dtype = DataType::from_v2(dtype).unwrap();
            let len = shape.iter().product::<u64>() as usize * dtype.size;
            let band_major = (0..len).map(|i| ((i * 37 % 251) ^ (i / 7)) as u8).collect();
            Chunk {
                shape,
                dtype,
                band_major,
            }
        }

        fn layout(&self) -> Layout {
            Layout {
                width: self.shape[2] as usize,
                height: self.shape[1] as usize,
                samples: self.shape[0] as usize,
                sample_size: self.dtype.size,
                bits: 8 * self.dtype.size,
            }
        }

        /// The chunk as a chunky TIFF tile stores it: (row, column, sample).
        fn interleaved(&self) -> Vec<u8> {
            let layout = self.layout();
            let size = layout.sample_size;
            let pixels = layout.width * layout.height;
            let mut out = Vec::with_capacity(self.band_major.len());
            for pixel in 0..pixels {
                for sample in 0..layout.samples {
                    let at = (sample * pixels + pixel) * size;
                    out.extend_from_slice(&self.band_major[at..at + size]);
                }
            }
            out
        }

        fn decode(&self, json: &str, tile: &[u8]) -> Result<Bytes> {
            self.decode_part(json, tile, 0..self.band_major.len())
        }

        /// Decodes `tile` for a reader needing bytes `needed` of it.
        fn decode_part(&self, json: &str, tile: &[u8], needed: Range<usize>) -> Result<Bytes> {
            let codec = registry::build("tiff-tile", &crate::codec::testing::config(json))?;
            let ctx = DecodeContext {
                chunk_shape: &self.shape,
                chunk_index: &[],
                dtype: self.dtype,
                decoded_len: self.band_major.len(),
                needed: needed.end,
                first_needed: needed.start,
            };
            codec.decode(Bytes::copy_from_slice(tile), &ctx)
        }
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut encoder =
            flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn xz(data: &[u8]) -> Vec<u8> {
        let mut encoder = liblzma::write::XzEncoder::new(Vec::new(), 6);
        encoder.write_all(data).unwrap();
        encoder.finish().unwrap()
    }

    fn lzw(data: &[u8]) -> Vec<u8> {
        weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8)
            .encode(data)
            .unwrap()
    }

    /// A compressor of test data.
    type Encoder = fn(&[u8]) -> Vec<u8>;

    /// Every lossless compression of the codec, with its encoder.
    fn compressions() -> Vec<(u64, Encoder)> {
        vec![
            (1, <[u8]>::to_vec),
            (5, lzw),
            (8, zlib),
            (32946, zlib),
            (32773, super::packbits::tests::encode),
            (50000, |data| ::zstd::bulk::compress(data, 3).unwrap()),
            (34925, xz),
        ]
    }

    #[test]
    fn both_names_build_the_codec() {
        for name in NAMES {
            let codec = registry::build(name, &Config::new()).unwrap();
            assert_eq!(codec.name(), URI);
        }
    }

    #[test]
    fn every_compression_decodes_chunky_tiles_band_major() {
        for dtype in ["|u1", "<u2", ">i2", "<f4", ">f8"] {
            let chunk = Chunk::new([3, 5, 7], dtype);
            for (tag, encode) in compressions() {
                let json = format!(
                    r#"{{"compression": {tag}, "samples_per_pixel": 3, "planar_config": 1,
                        "tile_width": 7, "tile_height": 5, "photometric": 2,
                        "sample_format": 1, "extra": "ignored"}}"#
                );
                let out = chunk.decode(&json, &encode(&chunk.interleaved()));
                let out = out.unwrap_or_else(|e| panic!("{dtype} {tag}: {e}"));
                assert_eq!(&out[..], &chunk.band_major[..], "{dtype} compression {tag}");
            }
        }
    }

    #[test]
    fn predictors_are_undone_in_the_chunks_byte_order() {
        let cases = [
            ("|u1", 2),
            ("<u2", 2),
            (">u2", 2),
            ("<i4", 2),
            (">u4", 2),
            ("<u8", 2),
            (">i8", 2),
            ("<f4", 3),
            (">f4", 3),
            ("<f8", 3),
            (">f8", 3),
        ];
        for (dtype, predictor) in cases {
            for samples in [1, 2] {
                let chunk = Chunk::new([samples, 4, 6], dtype);
                let big_endian = chunk.dtype.order == ByteOrder::Big;
                let mut tile = chunk.interleaved();
                if predictor == 2 {
                    difference(&mut tile, &chunk.layout(), big_endian);
                } else {
                    difference_fp(&mut tile, &chunk.layout(), big_endian);
                }
                for (tag, encode) in compressions() {
                    let json = format!(
                        r#"{{"compression": {tag}, "predictor": {predictor},
                            "samples_per_pixel": {samples}, "tile_width": 6, "tile_height": 4}}"#
                    );
                    let out = chunk.decode(&json, &encode(&tile));
                    // libtiff applies predictors to LZW, Deflate, ZSTD and LZMA only.
                    if matches!(tag, 1 | 32773) {
                        assert_eq!(
                            &out.unwrap()[..],
                            &chunk.layout().band_major(tile.clone()).unwrap()[..]
                        );
                    } else {
                        let out = out.unwrap_or_else(|e| panic!("{dtype} {tag}: {e}"));
                        assert_eq!(&out[..], &chunk.band_major[..], "{dtype} {tag} {samples}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_reader_needing_the_first_rows_gets_them_decoded() {
        // 300 rows of 256 16-bit pixels (150 KiB: two zstd blocks), predictor 2.
        let chunk = Chunk::new([1, 300, 256], "<i2");
        let mut tile = chunk.interleaved();
        difference(&mut tile, &chunk.layout(), false);
        let row = 256 * 2;
        for (tag, encode) in compressions() {
            let json = format!(
                r#"{{"compression": {tag}, "predictor": 2, "tile_width": 256, "tile_height": 300}}"#
            );
            let want = if matches!(tag, 1 | 32773) {
                tile.clone()
            } else {
                chunk.band_major.clone()
            };
            // Rows 0..=3 needed (the 3rd row's first pixel ends the window).
            let out = chunk.decode_part(&json, &encode(&tile), 0..3 * row + 2);
            let out = out.unwrap_or_else(|e| panic!("{tag}: {e}"));
            // Whole rows, at least those needed: 4 for ZSTD and stored
            // tiles (which stop there), all of them for the others.
            assert!(
                out.len().is_multiple_of(row) && out.len() >= 4 * row,
                "{tag}: {}",
                out.len()
            );
            assert_eq!(&out[..], &want[..out.len()], "{tag}");
            if matches!(tag, 1 | 50000) {
                assert_eq!(out.len(), 4 * row, "{tag}");
            }
        }
        // A ZSTD tile cut short before the rows needed is an error; one cut
        // after them is not read that far.
        let json =
            r#"{"compression": 50000, "predictor": 2, "tile_width": 256, "tile_height": 300}"#;
        let zstd = ::zstd::bulk::compress(&tile, 3).unwrap();
        let err = chunk
            .decode_part(json, &zstd[..20], 0..3 * row)
            .unwrap_err();
        assert!(err.to_string().contains("ZSTD"), "{err}");
        assert!(chunk.decode(json, &zstd[..zstd.len() - 5]).is_err());
    }

    #[test]
    fn a_reader_needing_rows_below_the_first_gets_those_rows_right() {
        // Rows 150..=200 of 300 needed, 16-bit integers (predictor 2) and
        // 32-bit floats (predictor 3): the rows needed come back as a
        // whole decode gives them, whatever the rows above hold.
        let row_of = |dtype: &str| 256 * if dtype == "<f4" { 4 } else { 2 };
        for (dtype, predictor) in [("<i2", 2), ("<f4", 3)] {
            let chunk = Chunk::new([1, 300, 256], dtype);
            let mut tile = chunk.interleaved();
            match predictor {
                2 => difference(&mut tile, &chunk.layout(), false),
                _ => difference_fp(&mut tile, &chunk.layout(), false),
            }
            let row = row_of(dtype);
            let needed = 150 * row + 7..200 * row + 3;
            for (tag, encode) in compressions() {
                if matches!(tag, 1 | 32773) {
                    continue; // no predictor with these
                }
                let json = format!(
                    r#"{{"compression": {tag}, "predictor": {predictor},
                        "tile_width": 256, "tile_height": 300}}"#
                );
                let out = chunk.decode_part(&json, &encode(&tile), needed.clone());
                let out = out.unwrap_or_else(|e| panic!("{dtype} {tag}: {e}"));
                assert!(out.len() >= 201 * row, "{dtype} {tag}: {}", out.len());
                let rows = 150 * row..201 * row;
                assert_eq!(&out[rows.clone()], &chunk.band_major[rows], "{dtype} {tag}");
                // The rows above were not worked on (the predictor left them differenced).
                assert_eq!(&out[..150 * row], &tile[..150 * row], "{dtype} {tag}");
            }
        }
    }

    #[test]
    fn a_stored_tile_read_alone_is_handed_on_uncopied() {
        let chunk = Chunk::new([1, 8, 8], "|u1");
        let json = r#"{"compression": 1, "tile_width": 8, "tile_height": 8}"#;
        let codec = registry::build("tiff-tile", &crate::codec::testing::config(json)).unwrap();
        let ctx = DecodeContext {
            chunk_shape: &chunk.shape,
            chunk_index: &[],
            dtype: chunk.dtype,
            decoded_len: 64,
            needed: 64,
            first_needed: 0,
        };
        // The whole tile, and its first rows (3 of them for 20 bytes).
        for (needed, len) in [(64, 64), (20, 24)] {
            let tile = chunk.band_major.clone();
            let at = tile.as_ptr();
            let out = codec
                .decode(Bytes::from(tile), &DecodeContext { needed, ..ctx })
                .unwrap();
            assert_eq!(&out[..], &chunk.band_major[..len]);
            assert_eq!(out.as_ptr(), at, "the read buffer itself");
        }
        // Bytes shared with other chunks (a remote span) are copied.
        let span = Bytes::from(chunk.band_major.clone());
        let out = codec.decode(span.slice(..), &ctx).unwrap();
        assert_eq!(&out[..], &span[..]);
        assert_ne!(out.as_ptr(), span.as_ptr());
    }

    #[test]
    fn color_to_rgba_converts_the_stored_tile_and_can_be_dropped() {
        // One CMYK pixel and one white one, Deflate, in a 4-sample chunk.
        let rgba = Chunk::new([4, 1, 2], "|u1");
        let stored = [10u8, 200, 255, 100, 0, 0, 0, 0];
        let json = r#"{"compression": 8, "samples_per_pixel": 4, "photometric": 5,
                       "color_to_rgba": "cmyk", "tile_width": 2, "tile_height": 1}"#;
        let out = rgba.decode(json, &zlib(&stored)).unwrap();
        assert_eq!(&out[..], &[148, 255, 33, 255, 0, 255, 255, 255]);
        // The same codec serving the stored components.
        let mut codec = registry::build(URI, &crate::codec::testing::config(json)).unwrap();
        assert_eq!(codec.color_model(), Some(ColorModel::Rgb));
        assert_eq!(codec.serve_stored_color(), Some(4));
        assert_eq!(codec.color_model(), Some(ColorModel::Cmyk));
        assert_eq!(codec.serve_stored_color(), None);
        let ctx = DecodeContext {
            chunk_shape: &rgba.shape,
            chunk_index: &[],
            dtype: rgba.dtype,
            decoded_len: 8,
            needed: 8,
            first_needed: 0,
        };
        let out = codec.decode(Bytes::from(zlib(&stored)), &ctx).unwrap();
        assert_eq!(&out[..], &[10, 0, 200, 0, 255, 0, 100, 0]);
        // CIELab: 3 stored samples in a 4-sample chunk.
        let json = r#"{"samples_per_pixel": 3, "photometric": 8, "color_to_rgba": "cielab",
                       "tile_width": 1, "tile_height": 1}"#;
        let out = Chunk::new([4, 1, 1], "|u1")
            .decode(json, &[128, 0, 0])
            .unwrap();
        assert_eq!(&out[..], &[133, 123, 107, 255]);
        // Only contiguous 8-bit pixels of the right sample count convert.
        let build = |json: &str| registry::build(URI, &crate::codec::testing::config(json));
        assert!(build(r#"{"samples_per_pixel": 3, "color_to_rgba": "cmyk"}"#).is_err());
        assert!(build(
            r#"{"samples_per_pixel": 3, "bits_per_sample": 16,
                          "color_to_rgba": "cielab"}"#
        )
        .is_err());
        assert!(build(
            r#"{"samples_per_pixel": 4, "planar_config": 2,
                          "color_to_rgba": "cmyk"}"#
        )
        .is_err());
    }

    #[test]
    fn planar_tiles_hold_one_sample() {
        let chunk = Chunk::new([1, 4, 4], "<u2");
        let json = r#"{"compression": 8, "samples_per_pixel": 3, "planar_config": 2,
                       "tile_width": 4, "tile_height": 4}"#;
        let out = chunk.decode(json, &zlib(&chunk.band_major)).unwrap();
        assert_eq!(&out[..], &chunk.band_major[..]);
    }

    #[test]
    fn last_strips_are_padded_before_transposing() {
        // A strip of 2 rows in a chunk of 5, RGB 16-bit with predictor 2.
        let chunk = Chunk::new([3, 5, 4], "<u2");
        let rows = 2 * 4 * 3 * 2;
        let mut strip = chunk.interleaved()[..rows].to_vec();
        difference(&mut strip, &chunk.layout(), false);
        let json = r#"{"compression": 5, "predictor": 2, "samples_per_pixel": 3,
                       "tile_width": 4, "tile_height": 5}"#;
        let out = chunk.decode(json, &lzw(&strip)).unwrap();
        let mut padded = chunk.interleaved()[..rows].to_vec();
        padded.resize(chunk.band_major.len(), 0);
        assert_eq!(&out[..], &chunk.layout().band_major(padded).unwrap()[..]);
        // A partial row is not a strip.
        let err = chunk.decode(json, &lzw(&strip[..rows - 2])).unwrap_err();
        assert!(err.to_string().contains("expected 120 bytes"), "{err}");
        assert!(err.to_string().contains("got 46"), "{err}");
    }

    #[test]
    fn tile_geometry_falls_back_to_the_chunk_shape() {
        let chunk = Chunk::new([1, 3, 5], ">u2");
        let out = chunk
            .decode(r#"{"compression": 1}"#, &chunk.band_major)
            .unwrap();
        assert_eq!(&out[..], &chunk.band_major[..]);
    }

    #[test]
    fn packed_samples_are_widened() {
        // A 1-bit mask tile, 10 x 2, LZW: rows of two bytes.
        let chunk = Chunk::new([1, 2, 10], "|u1");
        let rows = [0b1100_0000, 0b0100_0000, 0b0000_0001, 0b1000_0000];
        let json = r#"{"compression": 5, "bits_per_sample": 1, "photometric": 4,
                       "tile_width": 10, "tile_height": 2}"#;
        let out = chunk.decode(json, &lzw(&rows)).unwrap();
        let expected = [
            [1, 1, 0, 0, 0, 0, 0, 0, 0, 1],
            [0, 0, 0, 0, 0, 0, 0, 1, 1, 0],
        ];
        assert_eq!(&out[..], expected.concat());
        // 12-bit RGB in a big-endian u2 chunk, one pixel: 36 bits in 5 bytes.
        let chunk = Chunk::new([3, 1, 1], ">u2");
        let json = r#"{"bits_per_sample": 12, "samples_per_pixel": 3, "tile_width": 1,
                       "tile_height": 1}"#;
        let out = chunk.decode(json, &[0xFF, 0xF0, 0x01, 0x80, 0x00]).unwrap();
        assert_eq!(&out[..], &[0x0F, 0xFF, 0x00, 0x01, 0x08, 0x00]);
        let err = Chunk::new([1, 1, 1], "<f4")
            .decode(
                r#"{"bits_per_sample": 24, "tile_width": 1, "tile_height": 1}"#,
                &[0; 3],
            )
            .unwrap_err();
        assert!(err.to_string().contains("does not fit"), "{err}");
    }

    #[test]
    fn mismatches_are_reported() {
        let chunk = Chunk::new([3, 4, 4], "|u1");
        let err = chunk
            .decode(
                r#"{"samples_per_pixel": 3, "tile_width": 8}"#,
                &chunk.band_major,
            )
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("holds 96 bytes, but the chunk holds 48"),
            "{err}"
        );
        let err = chunk
            .decode(r#"{"samples_per_pixel": 3, "bits_per_sample": 16}"#, &[])
            .unwrap_err();
        assert!(err.to_string().contains("bits_per_sample 16"), "{err}");
        // Stored bytes past the chunk are left, as libtiff leaves them.
        let long = chunk
            .decode(r#"{"samples_per_pixel": 3}"#, &[7; 49])
            .unwrap();
        assert_eq!(long.len(), 48);
        let mut rows = vec![5u8; 48];
        rows.extend([9; 16]);
        let deflated = {
            use std::io::Write;
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(5));
            e.write_all(&rows).unwrap();
            e.finish().unwrap()
        };
        let json = r#"{"samples_per_pixel": 3, "compression": 8}"#;
        assert_eq!(&chunk.decode(json, &deflated).unwrap()[..], &[5; 48][..]);
        let err = chunk
            .decode(r#"{"samples_per_pixel": 3, "compression": 8}"#, b"not zlib")
            .unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err}");
        assert!(
            err.to_string().contains("Deflate (TIFF compression 8)"),
            "{err}"
        );
    }

    #[test]
    fn bad_configurations_are_rejected() {
        let build = |json: &str| registry::build(URI, &crate::codec::testing::config(json));
        let err = build(r#"{"compression": 34887}"#).unwrap_err();
        assert!(matches!(err, Error::Unsupported { .. }), "{err}");
        assert!(err.to_string().contains("LERC"), "{err}");
        let err = build(r#"{"bits_per_sample": 40}"#).unwrap_err();
        assert!(err.to_string().contains("40 bits per sample"), "{err}");
        let err = build(r#"{"bits_per_sample": 12, "predictor": 2}"#).unwrap_err();
        assert!(err.to_string().contains("12-bit samples"), "{err}");
        let err = build(r#"{"predictor": 4}"#).unwrap_err();
        assert!(
            err.to_string().contains("'predictor' should be one of"),
            "{err}"
        );
        let err = build(r#"{"photometric": 6, "compression": 5}"#).unwrap_err();
        assert!(err.to_string().contains("YCbCr"), "{err}");
        let err = build(r#"{"compression": 7, "jpeg_tables": "@@"}"#).unwrap_err();
        assert!(err.to_string().contains("base64"), "{err}");
        assert!(build(r#"{"samples_per_pixel": 0}"#).is_err());
        assert!(build(r#"{"compression": 7, "jpeg_tables": null, "sample_format": 1}"#).is_ok());
    }

    /// Decodes `data` as a fax strip or tile of a `[1, height, 8]` `|u1`
    /// chunk at chunk row `y`.
    fn decode_fax(json: &str, data: &[u8], height: u64, y: u64) -> Result<Bytes> {
        let codec = registry::build("tiff-tile", &crate::codec::testing::config(json))?;
        let shape = [1, height, 8];
        let ctx = DecodeContext {
            chunk_shape: &shape,
            chunk_index: &[0, y, 0],
            dtype: DataType::from_v2("|u1").unwrap(),
            decoded_len: 8 * height as usize,
            needed: 8 * height as usize,
            first_needed: 0,
        };
        codec.decode(Bytes::copy_from_slice(data), &ctx)
    }

    #[test]
    fn fax_strips_decode_to_bits_of_0_and_1() {
        use crate::codec::fax::tests::pack;
        use crate::codec::fax::EOL;
        // Width 8, each row white 2, black 3, white 3.
        let row = [0, 0, 1, 1, 1, 0, 0, 0];
        let cases = [
            (2, "", pack("0111 10 1000 000000  0111 10 1000")),
            (
                3,
                "",
                pack(&format!("{EOL} 0111 10 1000 {EOL} 0111 10 1000")),
            ),
            (
                3,
                r#", "t4_options": 5"#,
                pack(&format!("{EOL}1 0111 10 1000 {EOL}0 1 1 1")),
            ),
            (4, "", pack(&format!("001 0111 10 1  1 1 1 {EOL}{EOL}"))),
        ];
        for (tag, options, data) in cases {
            // Strip 1 of an image of 5 rows in strips of 3: two rows.
            let json = format!(
                r#"{{"compression": {tag}, "bits_per_sample": 1, "tile_width": 8,
                    "tile_height": 3, "image_height": 5{options}}}"#
            );
            let out = decode_fax(&json, &data, 3, 1).unwrap_or_else(|e| panic!("{tag}: {e}"));
            assert_eq!(out[..8], row, "{tag}");
            assert_eq!(out[8..16], row, "{tag}");
            assert_eq!(out[16..], [0; 8], "{tag}");
            // Strip 0 holds three rows: the data ends first. Group 3 fails
            // as libtiff does; Group 4 keeps the rows it decoded; in RLE
            // the zeros libtiff reads past the last byte (the lookahead of
            // the last code) make a third row, white, as they do there.
            let first = decode_fax(&json, &data, 3, 0);
            assert_eq!(first.is_ok(), tag != 3, "{tag}: {first:?}");
            // FillOrder 2: the same bits, each byte reversed.
            let reversed: Vec<u8> = data.iter().map(|b| b.reverse_bits()).collect();
            let lsb = json.replace('}', r#", "fill_order": 2}"#);
            assert_eq!(decode_fax(&lsb, &reversed, 3, 1).unwrap(), out, "{tag}");
            crate::codec::testing::assert_survives_mutations(URI, &json, &data, 24);
        }
    }

    #[test]
    fn sgilog_strips_decode_to_luv_triples_floats_or_words() {
        // Strip 1 of an image of 3 rows in strips of 2: one row of two
        // 32-bit LogLuv words, 0x4000_56C2 and 0x3F80_1020, as four planes
        // of literals.
        let strip = [2, 0x40, 0x3F, 2, 0x00, 0x80, 2, 0x56, 0x10, 2, 0xC2, 0x20];
        let decode = |dtype: &str, samples: u64, extra: &str, data: &[u8]| {
            let json = format!(
                r#"{{"compression": 34676, "photometric": 32845, "samples_per_pixel": {samples},
                    "tile_width": 2, "tile_height": 2, "image_height": 3{extra}}}"#
            );
            let codec = registry::build("tiff-tile", &crate::codec::testing::config(&json))?;
            let dtype = DataType::from_v2(dtype).unwrap();
            let shape = [samples, 2, 2];
            let len = 4 * samples as usize * dtype.size;
            let ctx = DecodeContext {
                chunk_shape: &shape,
                chunk_index: &[0, 1, 0],
                dtype,
                decoded_len: len,
                needed: len,
                first_needed: 0,
            };
            codec.decode(Bytes::copy_from_slice(data), &ctx)
        };
        let int16 = r#", "bits_per_sample": 16, "sample_format": 2"#;
        let out = decode(">i2", 3, int16, &strip).unwrap();
        // Band-major, the missing second row zero.
        let scaled = |code: f64| ((code + 0.5) / 410.0 * 32768.0) as i16;
        let band = |a: i16, b: i16| [a.to_be_bytes(), b.to_be_bytes(), [0; 2], [0; 2]].concat();
        let expected = [
            band(0x4000, 0x3F80),
            band(scaled(86.0), scaled(16.0)),
            band(scaled(194.0), scaled(32.0)),
        ];
        assert_eq!(&out[..], expected.concat());
        let float = r#", "bits_per_sample": 32, "sample_format": 3"#;
        let out = decode("<f4", 3, float, &strip).unwrap();
        let y = f32::from_le_bytes(out[16..20].try_into().unwrap());
        assert!((f64::from(y) - 2f64.powf(0.5 / 256.0)).abs() < 1e-6, "{y}");
        let raw = r#", "bits_per_sample": 32, "sample_format": 1"#;
        let out = decode("<u4", 1, raw, &strip).unwrap();
        assert_eq!(out[..8], [0xC2, 0x56, 0x00, 0x40, 0x20, 0x10, 0x80, 0x3F]);
        // Data ending in the row fails, naming the compression.
        let err = decode(">i2", 3, int16, &strip[..11]).unwrap_err();
        assert!(err.to_string().contains("SGILOG"), "{err}");
        assert!(err.to_string().contains("row 0 of 1"), "{err}");
        // FillOrder 2: every byte's bits reversed first.
        let reversed: Vec<u8> = strip.iter().map(|b| b.reverse_bits()).collect();
        let lsb = format!(r#"{int16}, "fill_order": 2"#);
        assert_eq!(
            decode(">i2", 3, &lsb, &reversed).unwrap(),
            decode(">i2", 3, int16, &strip).unwrap()
        );
        let json = r#"{"compression": 34676, "photometric": 32845, "samples_per_pixel": 3,
                       "bits_per_sample": 16, "sample_format": 2, "tile_width": 2,
                       "tile_height": 2}"#;
        crate::codec::testing::assert_survives_mutations(URI, json, &strip, 24);
        // Rows of no pixels, however many, take no time.
        let json = r#"{"compression": 34676, "photometric": 32844, "bits_per_sample": 16,
                       "tile_width": 0, "tile_height": 1000000000000}"#;
        let codec = registry::build("tiff-tile", &crate::codec::testing::config(json)).unwrap();
        let ctx = DecodeContext {
            chunk_shape: &[1, 1 << 40, 0],
            chunk_index: &[0, 0, 0],
            dtype: DataType::from_v2("<i2").unwrap(),
            decoded_len: 0,
            needed: 0,
            first_needed: 0,
        };
        assert!(codec.decode(Bytes::new(), &ctx).unwrap().is_empty());
        // 8-bit samples are libtiff's display RGB, served by GDAL as RGBA.
        let json = r#"{"compression": 34677, "photometric": 32845, "samples_per_pixel": 3,
                       "bits_per_sample": 8}"#;
        let err = registry::build("tiff-tile", &crate::codec::testing::config(json));
        assert!(err.unwrap_err().to_string().contains("RGBA"));
    }

    #[test]
    fn fax_needs_one_bit_samples() {
        for json in [
            r#"{"compression": 4, "bits_per_sample": 8}"#,
            r#"{"compression": 3}"#,
            r#"{"compression": 2, "bits_per_sample": 1, "samples_per_pixel": 2}"#,
        ] {
            let err = registry::build("tiff-tile", &crate::codec::testing::config(json));
            let err = err.unwrap_err().to_string();
            assert!(err.contains("1-bit sample"), "{json}: {err}");
        }
        let planar = r#"{"compression": 4, "bits_per_sample": 1, "samples_per_pixel": 2,
                         "planar_config": 2}"#;
        assert!(registry::build("tiff-tile", &crate::codec::testing::config(planar)).is_ok());
    }
}
