//! JPEG-in-TIFF (compression 7): abbreviated JPEG streams whose tables may
//! sit in the `JPEGTables` tag.
//!
//! Colour follows GDAL, which reads YCbCr JPEG tiles through libtiff's
//! `JPEGCOLORMODE_RGB`: photometric 6 tiles are converted to RGB, any other
//! three-component tile is returned as stored (libtiff decodes those with
//! `JCS_UNKNOWN`, so an RGB tile gets no YCbCr conversion, whatever its
//! component ids or Adobe marker suggest). Tiles of one, three or four
//! samples are supported; four (RGBA, CMYK) are returned as stored, as
//! libtiff's `JCS_UNKNOWN` returns them (not YCCK).

use jpeg_decoder::{ColorTransform, Decoder, PixelFormat, UnsupportedFeature};

use super::super::turbojpeg;
use super::layout::Layout;
use super::PHOTOMETRIC_YCBCR;

/// Why a JPEG tile could not be decoded.
#[derive(Debug)]
pub(super) enum Failure {
    /// Valid JPEG this decoder does not handle (12-bit, arithmetic coding).
    Unsupported(String),
    /// Corrupt data or a tile that does not fit the chunk.
    Corrupt(String),
}

impl From<jpeg_decoder::Error> for Failure {
    fn from(error: jpeg_decoder::Error) -> Failure {
        match error {
            jpeg_decoder::Error::Unsupported(UnsupportedFeature::SamplePrecision(bits)) => {
                Failure::Unsupported(format!("{bits}-bit JPEG (only 8-bit JPEG is supported)"))
            }
            jpeg_decoder::Error::Unsupported(feature) => {
                Failure::Unsupported(format!("JPEG feature {feature:?}"))
            }
            other => Failure::Corrupt(format!("corrupt or truncated JPEG: {other}")),
        }
    }
}

/// Decodes one tile into pixel-interleaved 8-bit samples, `layout.width`
/// wide and at most `layout.height` rows high.
pub(super) fn decode(
    tile: &[u8],
    tables: Option<&[u8]>,
    layout: &Layout,
    photometric: Option<u64>,
) -> Result<Vec<u8>, Failure> {
    if layout.sample_size != 1 {
        return Err(Failure::Unsupported(format!(
            "JPEG tiles with {}-bit samples (only 8-bit JPEG is supported)",
            8 * layout.sample_size
        )));
    }
    let stream = full_stream(tables, tile);
    // Grey, YCbCr and 4-sample tiles go through libjpeg-turbo, GDAL's own
    // decoder (same IDCT and chroma upsampling, so the same pixels).
    if matches!(layout.samples, 1 | 4) || photometric == Some(PHOTOMETRIC_YCBCR) {
        return decode_turbo(&stream, layout);
    }
    let mut decoder = Decoder::new(&stream[..]);
    decoder.set_max_decoding_buffer_size(layout.chunk_len().unwrap_or(usize::MAX));
    match (photometric, layout.samples) {
        (Some(PHOTOMETRIC_YCBCR), _) => decoder.set_color_transform(ColorTransform::YCbCr),
        // jpeg-decoder's `RGB` only interleaves the components; its `None`
        // returns them one plane after the other.
        (Some(_), 3) => decoder.set_color_transform(ColorTransform::RGB),
        (_, 1 | 3) => {}
        (_, samples) => {
            return Err(Failure::Unsupported(format!(
                "JPEG tiles with {samples} samples per pixel (1, 3 or 4 are supported)"
            )))
        }
    }
    decoder.read_info()?;
    let info = decoder
        .info()
        .ok_or_else(|| Failure::Corrupt("JPEG stream has no frame header".to_string()))?;
    if info.pixel_format == PixelFormat::L16 {
        return Err(Failure::Unsupported(
            "16-bit lossless JPEG (only 8-bit JPEG is supported)".to_string(),
        ));
    }
    let components = info.pixel_format.pixel_bytes();
    let (width, height) = (usize::from(info.width), usize::from(info.height));
    if components != layout.samples || width != layout.width || height > layout.height {
        return Err(Failure::Corrupt(format!(
            "JPEG image is {width} x {height} with {components} component(s), expected \
             {} x {} (or fewer rows) with {}",
            layout.width, layout.height, layout.samples
        )));
    }
    // jpeg-decoder works on the current rayon pool: make that ours, which a
    // forked child rebuilds (the global one would wait for the parent's threads).
    Ok(crate::base::process::decoding_pool().install(|| decoder.decode())?)
}

/// Decodes a grey or YCbCr tile through libjpeg-turbo.
fn decode_turbo(stream: &[u8], layout: &Layout) -> Result<Vec<u8>, Failure> {
    let limit = layout.chunk_len().unwrap_or(usize::MAX);
    let img = turbojpeg::decode(stream, &[8], limit).map_err(|e| match e {
        turbojpeg::Failure::Unsupported(what) => Failure::Unsupported(what),
        turbojpeg::Failure::Corrupt(what) => Failure::Corrupt(what),
    })?;
    let (width, height, components) = (img.width, img.height, img.components);
    if components != layout.samples || width != layout.width || height > layout.height {
        return Err(Failure::Corrupt(format!(
            "JPEG image is {width} x {height} with {components} component(s), expected \
             {} x {} (or fewer rows) with {}",
            layout.width, layout.height, layout.samples
        )));
    }
    match img.samples {
        turbojpeg::Samples::Eight(samples) => Ok(samples),
        turbojpeg::Samples::Twelve(_) => Err(Failure::Unsupported("12-bit JPEG".into())),
    }
}

/// The tables stream without its EOI followed by the tile without its SOI;
/// the tile alone when there are no tables.
fn full_stream(tables: Option<&[u8]>, tile: &[u8]) -> Vec<u8> {
    const SOI: &[u8] = &[0xFF, 0xD8];
    const EOI: &[u8] = &[0xFF, 0xD9];
    match tables {
        Some(tables) if tables.len() > 4 => {
            let tables = tables.strip_suffix(EOI).unwrap_or(tables);
            let tile = tile.strip_prefix(SOI).unwrap_or(tile);
            [tables, tile].concat()
        }
        _ => tile.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_and_tile_are_joined() {
        let tables = [0xFF, 0xD8, 0xFF, 0xDB, 1, 0xFF, 0xD9];
        let tile = [0xFF, 0xD8, 0xFF, 0xDA, 2, 0xFF, 0xD9];
        assert_eq!(
            full_stream(Some(&tables), &tile),
            [0xFF, 0xD8, 0xFF, 0xDB, 1, 0xFF, 0xDA, 2, 0xFF, 0xD9]
        );
        // An empty tables tag (just SOI + EOI) changes nothing.
        assert_eq!(full_stream(Some(&[0xFF, 0xD8, 0xFF, 0xD9]), &tile), tile);
        assert_eq!(full_stream(None, &tile), tile);
    }

    #[test]
    fn twelve_bit_jpeg_is_unsupported() {
        // SOI, then a baseline-extended SOF1 header with 12-bit precision.
        let stream = [
            0xFF, 0xD8, 0xFF, 0xC1, 0x00, 0x0B, 12, 0x00, 0x10, 0x00, 0x10, 0x01, 0x01, 0x11, 0x00,
            0xFF, 0xD9,
        ];
        // An RGB tile goes through jpeg-decoder, which names the precision.
        let layout = Layout {
            width: 16,
            height: 16,
            samples: 3,
            sample_size: 1,
            bits: 8,
        };
        match decode(&stream, None, &layout, Some(2)) {
            Err(Failure::Unsupported(what)) => assert!(what.contains("12-bit"), "{what}"),
            other => panic!("unexpected {other:?}"),
        }
        // A grey tile goes through libjpeg-turbo: this stream stops before
        // its scan, an error either way, never a panic.
        let grey = Layout {
            samples: 1,
            ..layout
        };
        assert!(decode(&stream, None, &grey, Some(1)).is_err());
        let wide = Layout {
            sample_size: 2,
            bits: 16,
            ..layout
        };
        assert!(matches!(
            decode(&stream, None, &wide, Some(1)),
            Err(Failure::Unsupported(_))
        ));
    }
}
