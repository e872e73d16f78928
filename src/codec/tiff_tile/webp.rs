//! WebP (TIFF compression 50001), as libtiff writes it: one WebP image per
//! tile, RGB or RGBA.

use std::io::Cursor;

use image_webp::WebPDecoder;

use super::layout::Layout;
use crate::base::buffers::output_buffer;

/// Decodes one tile into pixel-interleaved RGB (3 samples) or RGBA (4);
/// alpha is added (opaque) or dropped when the image has or lacks it,
/// as libwebp's RGB / RGBA output modes do for libtiff.
pub(super) fn decode(tile: &[u8], layout: &Layout) -> Result<Vec<u8>, String> {
    if layout.sample_size != 1 || !matches!(layout.samples, 3 | 4) {
        return Err(format!(
            "WebP tiles hold 3 or 4 8-bit samples per pixel, not {} of {} bits",
            layout.samples,
            8 * layout.sample_size
        ));
    }
    let corrupt = |e: image_webp::DecodingError| format!("corrupt or truncated WebP: {e}");
    let mut decoder = WebPDecoder::new(Cursor::new(tile)).map_err(corrupt)?;
    let (width, height) = decoder.dimensions();
    let (width, height) = (width as usize, height as usize);
    if width != layout.width || height > layout.height {
        return Err(format!(
            "WebP image is {width} x {height}, expected {} x {} (or fewer rows)",
            layout.width, layout.height
        ));
    }
    let channels = if decoder.has_alpha() { 4 } else { 3 };
    let len = width * height * channels;
    let mut pixels = output_buffer("WebP", len).map_err(|e| e.to_string())?;
    pixels.resize(len, 0);
    decoder.read_image(&mut pixels).map_err(corrupt)?;
    if channels == layout.samples {
        return Ok(pixels);
    }
    let out = pixels
        .chunks_exact(channels)
        .flat_map(|pixel| {
            let alpha = pixel.get(3).copied().unwrap_or(u8::MAX);
            [pixel[0], pixel[1], pixel[2], alpha]
                .into_iter()
                .take(layout.samples)
        })
        .collect();
    Ok(out)
}
