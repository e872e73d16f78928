//! Bi-level images (IC = C1 / M1): ITU-T T.4 coded blocks of one 1-bit
//! band, each block a chunk for the `nitf-bilevel` codec, read as GDAL's
//! NITF driver reads them: bytes 0 / 1 (the black, white colour table of
//! 1-bit bands comes from `lut.rs`).

use serde_json::{json, Map, Value};

use super::{MaskTable, Recorded};
use crate::base::error::{Error, Result};
use crate::builders::writers::built::Ref;
use crate::builders::writers::pyramid;
use crate::codec::nitf_bilevel::NAME as BILEVEL_CODEC;
use crate::formats::nitf::header::Image;
use crate::io::source::Source;

/// The data array of a bi-level image segment `n` whose blocks start at
/// `start` (after the mask table, if any).
pub(crate) fn array(
    src: &Source,
    img: &Image,
    n: usize,
    start: u64,
    mask: Option<&MaskTable>,
    url: &str,
) -> Result<pyramid::Array> {
    let bands = img.band_reps.len();
    let unsupported =
        |what: String| Error::unsupported(format!("{}: image segment {n}: {what}", src.path()));
    if bands != 1 || img.nbpp != 1 {
        return Err(unsupported(format!(
            "bi-level (T.4) compression of {bands} band(s) of {} bits (GDAL's NITF driver \
             decodes one band of 1 bit)",
            img.nbpp
        )));
    }
    let end = img.data_offset + img.data_len;
    let grid = img.blocks_across * img.blocks_down;
    let masked = mask.is_some_and(|m| !m.blocks.is_empty());
    if grid > 1 && !masked {
        return Err(unsupported(format!(
            "{grid} bi-level (T.4) blocks without a block mask (IC = {}): where each block's \
             coded data ends is not recorded",
            img.ic
        )));
    }
    // Where each recorded block starts, in block order.
    let mut starts = Vec::new();
    for block in 0..grid {
        match MaskTable::offset(mask, block, src, n)? {
            Recorded::Absent => {}
            Recorded::At(o) => starts.push((block, start + o)),
            Recorded::Unmasked => starts.push((block, start)),
        }
    }
    // A block's data runs to the next block's start, or to the end of the
    // segment's data.
    let mut sorted: Vec<u64> = starts.iter().map(|&(_, at)| at).collect();
    sorted.sort_unstable();
    let url: std::sync::Arc<str> = url.into();
    let mut refs = Vec::with_capacity(starts.len());
    for (block, at) in starts {
        let next = sorted.iter().copied().find(|&s| s > at).unwrap_or(end);
        if at >= end || next > end {
            return Err(src.malformed(format!(
                "image segment {n}: bi-level block {block} at byte {at} is past the segment's \
                 data (which ends at byte {end})"
            )));
        }
        let (row, col) = (block / img.blocks_across, block % img.blocks_across);
        refs.push(Ref::single([0, row, col], url.clone(), at, next - at));
    }
    Ok(pyramid::Array {
        shape: [1, img.rows, img.cols],
        chunks: [1, img.block_height, img.block_width],
        dtype: "|u1".into(),
        codec: json!({
            "id": BILEVEL_CODEC,
            "block_width": img.block_width,
            "block_height": img.block_height,
            // GDAL asks libtiff for 2-D coding when COMRAT starts with 2
            // ("2DS", "2DH"), else 1-D ("1D").
            "coding": if img.comrat.starts_with('2') { "2D" } else { "1D" },
        }),
        fill: Value::Null,
        attrs: Map::new(),
        refs,
    })
}
