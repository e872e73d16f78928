//! Vector-quantised image segments (IC = C4 / M4) of RPF products (CADRG,
//! CIB; MIL-STD-2411), indexed as GDAL's NITF driver reads them.
//!
//! The RPF location table (see [`crate::formats::nitf::rpf`]) gives the absolute file
//! offsets of the RPF sections. From it come
//! - the compression lookup tables (the codebook of 4 x 4 kernels, carried
//!   whole in the `nitf-vq` codec's configuration);
//! - the spatial data subsection, where the 256 x 256 subframes lie 6144
//!   bytes apart (C4), unless the NITF mask table (M4) or the RPF mask
//!   subsection gives each subframe's offset or marks it absent;
//! - the colour/grey section's colour map, which replaces the first entries
//!   of the band's lookup table (the palette GDAL shows).
//!
//! Each present subframe is one chunk; absent ones read as the nodata value
//! GDAL reports (the transparent pad pixel, or the entry GDAL adds after
//! the lookup table's last).

use base64::Engine;
use serde_json::{json, Map, Value};

use super::{MaskTable, ABSENT};
use crate::base::error::{Error, Result};
use crate::builders::writers::built::Ref;
use crate::builders::writers::pyramid;
use crate::codec::nitf_vq::NAME as VQ_CODEC;
use crate::conventions::attributes::{COLOR_ATTRIBUTE, COLOR_TABLE_ATTRIBUTE};
use crate::conventions::colour::ColorInterp;
use crate::formats::nitf::header::Image;
use crate::formats::nitf::rpf::{
    location, COLORMAP, COLOR_GRAYSCALE, COMPRESSION_LOOKUP, MASK, SPATIAL_DATA,
};
use crate::formats::nitf::rpf_vq::be16;
use crate::formats::nitf::rpf_vq::be32;
use crate::formats::nitf::rpf_vq::LOOKUP_SIGNATURE;
use crate::formats::nitf::rpf_vq::{CODEBOOK_LEN, CODED_LEN, SUBFRAME};
use crate::io::source::Source;

/// Bytes past the listed offset searched for [`LOOKUP_SIGNATURE`], as GDAL
/// does for products whose offsets are a few bytes off.
const LOOKUP_SEARCH: u64 = 1000;
/// The CADRG colour map GDAL applies: table ID 2 of 216 4-byte RGBM entries
/// (MIL-C-89038 3.12.5).
const CADRG_COLORS: u32 = 216;

/// The four compression lookup tables, one after the other.
fn codebook(src: &Source, n: usize, locs: &[(u16, u64)]) -> Result<Vec<u8>> {
    let missing = || {
        Error::unsupported(format!(
            "{}: image segment {n}: VQ-compressed image without an RPF compression lookup \
             subsection (GDAL cannot decode it either)",
            src.path()
        ))
    };
    let listed = location(locs, COMPRESSION_LOOKUP)
        .filter(|&at| at > 0 && at < src.len())
        .ok_or_else(missing)?;
    let head = src.read(listed, LOOKUP_SEARCH.min(src.len() - listed))?;
    let shift = head
        .windows(LOOKUP_SIGNATURE.len())
        .position(|w| w == LOOKUP_SIGNATURE)
        .ok_or_else(missing)?;
    let at = listed + shift as u64;
    let records = src.read(at + 6, 4 * 14)?;
    let mut book = Vec::with_capacity(CODEBOOK_LEN);
    for i in 0..4 {
        let offset = u64::from(be32(&records, i * 14 + 10));
        book.extend(src.read(at + offset, CODEBOOK_LEN as u64 / 4)?);
    }
    Ok(book)
}

/// The file offset of each subframe (row-major), or [`ABSENT`], and the
/// nodata value the mask tables give, if any.
fn subframes(
    src: &Source,
    img: &Image,
    n: usize,
    mask: Option<&MaskTable>,
    locs: &[(u16, u64)],
) -> Result<(Vec<u64>, Option<u8>)> {
    let count = img.blocks_across * img.blocks_down;
    let spatial = location(locs, SPATIAL_DATA).unwrap_or(img.data_offset);
    let mut nodata = None;
    let mut starts: Vec<u64>;
    match mask {
        None => {
            if location(locs, SPATIAL_DATA).is_none() {
                eprintln!(
                    "chunkref: {}: image segment {n}: no RPF spatial data location; subframes \
                     taken from the start of the image data, as GDAL guesses",
                    src.path()
                );
            }
            starts = (0..count).map(|i| spatial + CODED_LEN as u64 * i).collect();
        }
        Some(m) => {
            if let Some(pad) = m.pad.as_ref().filter(|p| p.bits == 8) {
                nodata = pad.code.first().copied();
            }
            let base = img.data_offset + m.data_offset;
            if m.blocks.is_empty() {
                starts = (0..count).map(|i| base + CODED_LEN as u64 * i).collect();
            } else {
                let mut offsets = m.blocks.clone();
                if !on_subframe_bounds(&offsets) {
                    // Some CADRG products start their block table one byte
                    // late; GDAL reads it from there (and then ignores the
                    // RPF mask subsection).
                    let pad_bits = m.pad.as_ref().map_or(0, |p| p.bits);
                    let at = img.data_offset + 10 + pad_bits.div_ceil(8) + 1;
                    offsets = src
                        .read(at, 4 * offsets.len() as u64)?
                        .chunks_exact(4)
                        .map(|b| be32(b, 0))
                        .collect();
                    if !on_subframe_bounds(&offsets) {
                        return Err(src.malformed(format!(
                            "image segment {n}: the M4 block table gives offsets that are not \
                             multiples of {CODED_LEN}"
                        )));
                    }
                    let starts = with_base(&offsets, base);
                    return Ok((starts, nodata));
                }
                starts = with_base(&offsets, base);
            }
        }
    }
    // The RPF mask subsection: the transparent pixel, and each subframe's
    // offset from the spatial data subsection (or absent).
    if let Some(at) = location(locs, MASK) {
        let head = src.read(at, 6)?;
        let (record_len, pixel_bits) = (be16(&head, 0), be16(&head, 4));
        if pixel_bits == 8 {
            nodata = Some(src.read(at + 6, 1)?[0]);
        }
        if record_len == 4 {
            let table = at + 6 + u64::from(pixel_bits).div_ceil(8);
            let offsets: Vec<u32> = src
                .read(table, 4 * count)?
                .chunks_exact(4)
                .map(|b| be32(b, 0))
                .collect();
            starts = with_base(&offsets, spatial);
        }
    }
    Ok((starts, nodata))
}

/// Whether every recorded offset is a whole number of subframes.
fn on_subframe_bounds(offsets: &[u32]) -> bool {
    offsets
        .iter()
        .all(|&o| o == ABSENT || (o as usize).is_multiple_of(CODED_LEN))
}

/// Offsets from `base`, absent ones kept as [`ABSENT`].
fn with_base(offsets: &[u32], base: u64) -> Vec<u64> {
    offsets
        .iter()
        .map(|&o| {
            if o == ABSENT {
                u64::from(ABSENT)
            } else {
                base + u64::from(o)
            }
        })
        .collect()
}

/// The band's lookup table as GDAL holds it (red, green, blue planes of 256
/// entries; a single table is grey) and its number of entries, with the
/// CADRG colour map of the colour/grey section applied.
fn lookup_table(
    src: &Source,
    img: &Image,
    locs: &[(u16, u64)],
) -> Result<Option<([Vec<u8>; 3], usize)>> {
    let Some(luts) = img.luts.first().filter(|l| !l.is_empty()) else {
        return Ok(None);
    };
    let entries = luts[0].len().min(256);
    let plane = |i: usize| {
        let mut p = luts[i.min(luts.len() - 1)].clone();
        p.resize(256, 0);
        p
    };
    let mut rgb = if luts.len() == 3 {
        [plane(0), plane(1), plane(2)]
    } else {
        [plane(0), plane(0), plane(0)]
    };
    if let (Some(section), Some(map)) = (location(locs, COLOR_GRAYSCALE), location(locs, COLORMAP))
    {
        let records = src.read(section, 1)?[0];
        if records > 0 {
            // The first offset record: table ID, entries, entry length,
            // histogram record length, table offset, histogram offset.
            let first = src.read(map + 6, 17)?;
            let (id, count, width) = (be16(&first, 0), be32(&first, 2), first[6]);
            if id == 2 && width == 4 && count == CADRG_COLORS {
                let table = u64::from(be32(&first, 9));
                let rgbm = src.read(map + table, 4 * u64::from(CADRG_COLORS))?;
                for (j, e) in rgbm.chunks_exact(4).enumerate() {
                    for (c, plane) in rgb.iter_mut().enumerate() {
                        plane[j] = e[c];
                    }
                }
            }
        }
    }
    Ok(Some((rgb, entries)))
}

/// The data array of a VQ-compressed image: one chunk per subframe.
pub(crate) fn array(
    src: &Source,
    img: &Image,
    n: usize,
    mask: Option<&MaskTable>,
    url: &str,
) -> Result<pyramid::Array> {
    let bands = img.band_reps.len();
    let side = SUBFRAME as u64;
    if bands != 1 || img.nbpp != 8 || img.block_width != side || img.block_height != side {
        return Err(Error::unsupported(format!(
            "{}: image segment {n}: VQ compression of {bands} band(s) of {} bits in {} x {} \
             blocks (GDAL's NITF driver decodes one 8-bit band in 256 x 256 blocks)",
            src.path(),
            img.nbpp,
            img.block_width,
            img.block_height
        )));
    }
    let locs = crate::formats::nitf::rpf::locations(src, img)?;
    let book = codebook(src, n, &locs)?;
    let (starts, mut nodata) = subframes(src, img, n, mask, &locs)?;
    let url: std::sync::Arc<str> = url.into();
    let mut refs = Vec::new();
    for (i, &at) in starts.iter().enumerate() {
        if at == u64::from(ABSENT) {
            continue;
        }
        if at + CODED_LEN as u64 > src.len() {
            return Err(src.malformed(format!(
                "image segment {n}: subframe {i} at byte {at} (+{CODED_LEN}) is past the end \
                 of the file"
            )));
        }
        let i = i as u64;
        let (row, col) = (i / img.blocks_across, i % img.blocks_across);
        refs.push(Ref::single(
            [0, row, col],
            url.clone(),
            at,
            CODED_LEN as u64,
        ));
    }
    let mut attrs = Map::new();
    if let Some((mut rgb, entries)) = lookup_table(src, img, &locs)? {
        // GDAL makes the entry after the last transparent black, and the
        // nodata value, unless the mask tables named one or a 217th entry
        // is black already.
        if nodata.is_none() && entries < 255 {
            if entries == 217 && rgb.iter().all(|p| p[216] == 0) {
                nodata = Some(216);
            } else {
                rgb.iter_mut().for_each(|p| p[entries] = 0);
                nodata = Some(entries as u8);
            }
        }
        let len = nodata.map_or(entries, |v| entries.max(usize::from(v) + 1));
        let table: Vec<Value> = (0..len)
            .map(|j| match nodata {
                Some(v) if usize::from(v) == j => json!([0, 0, 0, 0]),
                _ if j < entries => json!([rgb[0][j], rgb[1][j], rgb[2][j], 255]),
                _ => json!([0, 0, 0, 0]),
            })
            .collect();
        if entries > 0 {
            attrs.insert(COLOR_TABLE_ATTRIBUTE.into(), json!(table));
            attrs.insert(COLOR_ATTRIBUTE.into(), json!([ColorInterp::Palette.name()]));
        }
    }
    Ok(pyramid::Array {
        shape: [1, img.rows, img.cols],
        chunks: [1, side, side],
        dtype: "|u1".into(),
        codec: json!({
            "id": VQ_CODEC,
            "codebook": base64::engine::general_purpose::STANDARD.encode(&book),
        }),
        fill: nodata.map_or(Value::Null, |v| json!(v)),
        attrs,
        refs,
    })
}
