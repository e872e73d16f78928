//! Indexing NITF 2.0 / 2.1 and NSIF 1.0 files: every image segment becomes
//! a pyramid (a single segment is the index's root, as osml-imagery-io
//! writes it; several become groups `image_0`, `image_1`, ... which GDAL
//! lists as subdatasets, numbered as GDAL's NITF driver numbers segments).
//!
//! - IC = NC / NM: each block is a chunk for the `jbp-block` codec (IMODE B,
//!   P and R hold every band in a block; S gives each band its own chunks);
//!   blocks the NM mask table marks absent are left out and read as the pad
//!   value, which is also the nodata value.
//! - IC = C3 / M3: each block's JPEG stream is a chunk for the `jpeg` codec
//!   (found through the mask table, or by walking the JPEG markers).
//! - IC = C8 / M8: the segment's JPEG 2000 codestream (bare, or in the
//!   codestream box of a JP2 file), indexed by tiles with its resolution
//!   levels as overviews (see [`crate::builders::j2k`]).
//! - IC = C4 / M4: the 256 x 256 subframes of RPF vector quantisation, with
//!   their codebook and colour table (see [`vq`]).
//! - IC = C1 / M1: bi-level blocks, each one T.4 (fax) coded chunk for the
//!   `nitf-bilevel` codec (see [`bilevel`]).
//!
//! R-set companions (`image.ntf.r1`, ...) of a file with one image segment
//! become its overview levels, in place of its own (see [`rsets`]).

mod bilevel;
mod rsets;
pub(crate) mod vq;

use serde_json::{json, Map, Value};

use crate::base::error::{Error, Result};
use crate::builders::j2k::Codestream;
use crate::builders::writers::built::Built;
use crate::builders::writers::built::Ref;
use crate::builders::writers::pyramid::{self, Pyramid};
use crate::conventions::attributes::COLOR_TABLE_ATTRIBUTE;
use crate::conventions::attributes::DEFAULT_RASTER;
use crate::conventions::colour::ColorInterp;
use crate::formats::j2k::jp2;
use crate::formats::nitf::header::Image;
use crate::io::source::Source;

/// Codec URI of JPEG-compressed NITF blocks, as osml-imagery-io names it.
pub const JPEG_CODEC: &str = "https://awslabs.github.io/osml-imagery-io/codecs/jpeg";
/// Largest C3 image data scanned for its JPEG streams (1 GiB).
const MAX_SCAN_BYTES: u64 = 1 << 30;

/// Codec URI of uncompressed NITF blocks, as osml-imagery-io names it.
pub const JBP_BLOCK_CODEC: &str = "https://awslabs.github.io/osml-imagery-io/codecs/jbp-block";

/// A block the mask table marks as not recorded.
const ABSENT: u32 = 0xFFFF_FFFF;

/// Builds the Kerchunk JSON index of the NITF file at `path`, whose chunks
/// are referenced by `url`.
pub fn index_file(path: &str, url: &str) -> Result<Built> {
    let src = Source::open(path, "NITF file")?;
    let (segments, version_20) = crate::formats::nitf::header::segments(&src)?;
    let rsets = rsets::companions(path, url);
    let mut pyramids = Vec::new();
    let mut datetime = None;
    for (n, seg) in segments.iter().enumerate() {
        let img = crate::formats::nitf::header::image(&src, seg, n, version_20)?;
        if n == 0 {
            datetime = crate::base::datetime::nitf_idatim(&img.idatim, version_20);
        }
        let mut levels = levels(&src, &img, n, url)?;
        if segments.len() == 1 && !rsets.is_empty() {
            levels.truncate(1);
            for (k, (rset_path, rset_url)) in rsets.iter().enumerate() {
                let data = rsets::fit(
                    &levels[0].data,
                    base_array(rset_path, rset_url)?,
                    k + 1,
                    rset_path,
                )?;
                levels.push(pyramid::Level {
                    data,
                    mask: None,
                    attrs: Map::new(),
                });
            }
        }
        let locations = crate::formats::nitf::rpf::locations(&src, &img)?;
        let placement = crate::formats::nitf::rpf::placement(&src, &img, &locations)
            .unwrap_or_else(|why| {
                eprintln!("chunkref: {path}: image segment {n}: no georeferencing: {why}");
                None
            });
        let georef = match placement {
            Some(crate::formats::nitf::igeolo::Placement::Frame(g)) => g,
            Some(crate::formats::nitf::igeolo::Placement::Gcps(gcps)) => {
                let attrs = &mut levels[0].data.attrs;
                attrs.insert(crate::conventions::attributes::GCPS_ATTRIBUTE.into(), gcps);
                Default::default()
            }
            None => Default::default(),
        };
        let base = [img.rows, img.cols];
        if let Some(rpc) = crate::formats::nitf::rpc::attribute(&img.tres) {
            let attrs = &mut levels[0].data.attrs;
            attrs.insert(crate::conventions::attributes::RPC_ATTRIBUTE.into(), rpc);
        }
        for level in &mut levels {
            let shape = [level.data.shape[1], level.data.shape[2]];
            level.attrs.extend(georef.level_attributes(base, shape));
            for (key, value) in crate::formats::nitf::colour::attributes(&img) {
                level.data.attrs.entry(key).or_insert(value);
            }
            // The nodata GDAL derives is the fill value of each level; the
            // colour table a compression gives (C4/M4 VQ) is kept.
            if !level.data.attrs.contains_key(COLOR_TABLE_ATTRIBUTE) {
                let nodata = level.data.fill.as_u64().and_then(|v| u8::try_from(v).ok());
                crate::formats::nitf::lut::apply(&img, nodata, &mut level.data.attrs, |why| {
                    eprintln!("chunkref: {path}: image segment {n}: {why}")
                });
            }
        }
        pyramids.push(Pyramid {
            source: json!(url),
            attrs: georef.root_attributes(base),
            levels,
        });
    }
    let mut built = match pyramids.len() {
        0 => return Err(no_image(&src)),
        1 => pyramids.remove(0).into_built(),
        _ => {
            let mut built = Built::default();
            for (n, p) in pyramids.into_iter().enumerate() {
                p.write(&mut built, &format!("image_{n}"));
            }
            let meta = &mut built.metadata;
            meta.insert(".zgroup".into(), json!({"zarr_format": 2}));
            // GDAL's NITF driver opens the first image and lists them all.
            meta.insert(
                ".zattrs".into(),
                json!({"source": url, DEFAULT_RASTER: "image_0"}),
            );
            built
        }
    };
    // The first image segment's date and time stands for the file.
    built.datetime = datetime;
    Ok(built)
}

/// The refusal of a NITF file without image segments (graphics, text or
/// data extensions only): there are no pixels to reference.
fn no_image(src: &Source) -> Error {
    Error::unsupported(format!(
        "{}: the NITF file has no image segment (only graphic, text or data extension \
         segments), so there are no pixels to index; GDAL's NITF driver opens it as a \
         1 x 1 dataset without bands",
        src.path()
    ))
}

/// The full-resolution array of the first image segment of the NITF file
/// at `path`, referenced through `url`.
fn base_array(path: &str, url: &str) -> Result<pyramid::Array> {
    let src = Source::open(path, "NITF file")?;
    let (segments, version_20) = crate::formats::nitf::header::segments(&src)?;
    let seg = segments.first().ok_or_else(|| no_image(&src))?;
    let img = crate::formats::nitf::header::image(&src, seg, 0, version_20)?;
    let mut levels = levels(&src, &img, 0, url)?;
    levels.truncate(1);
    Ok(levels.remove(0).data)
}

/// Builds the array of a blocked image: source, image, segment number,
/// where the blocks start, the mask table and the URL of the file.
type BlockArrayFn =
    fn(&Source, &Image, usize, u64, Option<&MaskTable>, &str) -> Result<pyramid::Array>;

/// The index levels of image segment `n`.
fn levels(src: &Source, img: &Image, n: usize, url: &str) -> Result<Vec<pyramid::Level>> {
    let unsupported =
        |what: String| Error::unsupported(format!("{}: image segment {n}: {what}", src.path()));
    if img.data_len == 0 {
        return Err(src.malformed(format!(
            "image segment {n} holds no image data (its length field is 0): there are no pixels \
             to index (GDAL's NITF driver opens it but fails to read any block)"
        )));
    }
    let masked = img.ic.starts_with('M') || img.ic == "NM";
    let mask = if masked {
        Some(MaskTable::read(src, img, n)?)
    } else {
        None
    };
    let data_start = img.data_offset + mask.as_ref().map_or(0, |m| m.data_offset);
    let level = |data: pyramid::Array| pyramid::Level {
        data,
        mask: None,
        attrs: Map::new(),
    };
    match img.ic.as_str() {
        "NC" | "NM" | "C3" | "M3" => {
            let build: BlockArrayFn = if img.ic.ends_with('3') {
                jpeg_blocks
            } else {
                blocks
            };
            let base = build(src, img, n, data_start, mask.as_ref(), url)?;
            // GDAL reads a one-block C3 image through its JPEG driver, which
            // offers it at 1/2, 1/4 and 1/8 of its size.
            let overviews = if img.ic == "C3" && img.blocks_across * img.blocks_down == 1 {
                crate::formats::nitf::jpeg::implicit_overviews(img.cols, img.rows)
            } else {
                0
            };
            let scaled = (1..=overviews)
                .map(|k| level(scaled_jpeg(&base, 1 << k)))
                .collect::<Vec<_>>();
            Ok([vec![level(base)], scaled].concat())
        }
        "C8" | "M8" => {
            let len = img.data_len - (data_start - img.data_offset);
            let bands = img.band_reps.len();
            // A JP2 file in place of a bare codestream: GDAL reads its
            // codestream box, and takes the colours of bands IREPBANDn
            // leaves undefined from its header box.
            // A paletted JP2 has no reduced resolutions, as when bare.
            let (start, len, colours, palette) = if jp2::is_jp2_at(src, data_start, len)? {
                let (start, cs_len) = jp2::jp2c_box(src, data_start, data_start + len)?;
                let found = jp2::colours_in(src, data_start, data_start + len, bands as u64)?;
                let palette = found.as_ref().is_some_and(|c| c.palette.is_some());
                let base = found.map_or_else(|| vec![ColorInterp::Undefined; bands], |c| c.bands);
                (
                    start,
                    cs_len,
                    Some(crate::formats::nitf::colour::attributes_over(img, &base)),
                    palette,
                )
            } else {
                (data_start, len, None, false)
            };
            let cs = Codestream::read(src, start, len)?;
            if cs.header.siz.components.len() != bands {
                return Err(src.malformed(format!(
                    "image segment {n} has {bands} bands but its codestream {} components",
                    cs.header.siz.components.len()
                )));
            }
            Ok(cs
                .levels(palette)
                .into_iter()
                .map(|r| {
                    let mut array = cs.array(r, url);
                    array.attrs.extend(colours.clone().unwrap_or_default());
                    level(array)
                })
                .collect())
        }
        "C4" | "M4" => Ok(vec![level(vq::array(src, img, n, mask.as_ref(), url)?)]),
        "C1" | "M1" => Ok(vec![level(bilevel::array(
            src,
            img,
            n,
            data_start,
            mask.as_ref(),
            url,
        )?)]),
        "I1" => Err(unsupported(
            "compression IC = I1 (down-sampled JPEG): GDAL's NITF driver reads its data as \
             uncompressed pixels and fails, so there are no pixels to index as GDAL serves them"
                .into(),
        )),
        other => Err(unsupported(format!("compression IC = {other}"))),
    }
}

/// The NM/Mx image data mask table (MIL-STD-2500C 5.4.3.2).
#[derive(Debug)]
pub(crate) struct MaskTable {
    /// IMDATOFF: where the blocked image data starts, from the segment's data.
    data_offset: u64,
    /// Offset of each block (each band-block for IMODE S) from there, or
    /// [`ABSENT`]; empty when there is no block mask.
    blocks: Vec<u32>,
    /// The pad pixel, if any.
    pad: Option<crate::formats::nitf::lut::Pad>,
}

impl MaskTable {
    fn read(src: &Source, img: &Image, n: usize) -> Result<MaskTable> {
        let at = img.data_offset;
        let head = src.read(at, 10)?;
        let be16 = |i: usize| u16::from_be_bytes([head[i], head[i + 1]]);
        let data_offset = u64::from(u32::from_be_bytes([head[0], head[1], head[2], head[3]]));
        let (bmr_len, pad_bits) = (be16(4), u64::from(be16(8)));
        let pad_len = pad_bits.div_ceil(8);
        let pad = (pad_len > 0)
            .then(|| src.read(at + 10, pad_len))
            .transpose()?
            .map(|code| crate::formats::nitf::lut::Pad {
                bits: pad_bits,
                code,
            });
        let count = img.blocks_across
            * img.blocks_down
            * if img.imode == 'S' {
                img.band_reps.len() as u64
            } else {
                1
            };
        let blocks = if bmr_len == 0 {
            Vec::new()
        } else {
            src.read(at + 10 + pad_len, 4 * count)?
                .chunks_exact(4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        };
        if data_offset > img.data_len {
            return Err(src.malformed(format!(
                "image segment {n}: IMDATOFF {data_offset} is past its {} bytes of data",
                img.data_len
            )));
        }
        Ok(MaskTable {
            data_offset,
            blocks,
            pad,
        })
    }
}

/// Where the mask table says a block is.
enum Recorded {
    /// Marked as not recorded: the block reads as the pad value.
    Absent,
    /// At this offset from the start of the blocked image data.
    At(u64),
    /// There is no block mask: blocks follow one another.
    Unmasked,
}

impl MaskTable {
    /// Where block `i` (band-block for IMODE S) of image segment `n` is.
    fn offset(mask: Option<&MaskTable>, i: u64, src: &Source, n: usize) -> Result<Recorded> {
        let Some(m) = mask.filter(|m| !m.blocks.is_empty()) else {
            return Ok(Recorded::Unmasked);
        };
        match m.blocks.get(i as usize) {
            Some(&ABSENT) => Ok(Recorded::Absent),
            Some(&o) => Ok(Recorded::At(u64::from(o))),
            None => Err(src.malformed(format!("image segment {n}: short mask table"))),
        }
    }
}

/// The data array of an uncompressed (NC / NM) image.
fn blocks(
    src: &Source,
    img: &Image,
    n: usize,
    start: u64,
    mask: Option<&MaskTable>,
    url: &str,
) -> Result<pyramid::Array> {
    let url: std::sync::Arc<str> = url.into();
    let bad =
        |what: String| Error::unsupported(format!("{}: image segment {n}: {what}", src.path()));
    // NBPP 1 and 12 are bit-packed into whole bytes per band plane; GDAL
    // reads them as 8- and 16-bit unsigned samples, and SI bytes as
    // unsigned bytes too.
    let kind = match (img.pvtype.as_str(), img.nbpp) {
        ("INT", 8 | 12 | 16 | 32 | 64) | ("INT" | "B", 1) | ("SI", 8) => 'u',
        ("SI", 16 | 32 | 64) => 'i',
        ("R", 32 | 64) => 'f',
        (pv, bits) => return Err(bad(format!("PVTYPE {pv} with NBPP {bits}"))),
    };
    if !matches!(img.imode, 'B' | 'P' | 'R' | 'S') {
        return Err(bad(format!("IMODE '{}'", img.imode)));
    }
    let size = img.nbpp.div_ceil(8);
    let bands = img.band_reps.len() as u64;
    if !img.nbpp.is_multiple_of(8) && bands > 1 && matches!(img.imode, 'P' | 'R') {
        return Err(bad(format!(
            "{}-bit samples of {bands} bands in IMODE {} (GDAL's NITF driver reads bit-packed \
             samples only in IMODE B or S)",
            img.nbpp, img.imode
        )));
    }
    let planar = img.imode == 'S' && bands > 1;
    let per_chunk = if planar { 1 } else { bands };
    let chunk_bytes = per_chunk * (img.block_width * img.block_height * img.nbpp).div_ceil(8);
    let grid = img.blocks_across * img.blocks_down;
    let band_major = img.imode == 'B' || img.imode == 'S' || bands == 1;
    if grid == 1
        && img.ic == "NC"
        && img.nbpp.is_multiple_of(8)
        && band_major
        && u128::from(start)
            + u128::from(bands * (img.nbpp / 8))
                * u128::from(img.block_width)
                * u128::from(img.block_height)
            > u128::from(img.data_offset + img.data_len)
    {
        return Ok(lines(src, img, n, start, &url, kind));
    }
    let mut refs = Vec::new();
    for plane in 0..if planar { bands } else { 1 } {
        for block in 0..grid {
            let i = plane * grid + block;
            let offset = match MaskTable::offset(mask, i, src, n)? {
                Recorded::Absent => continue,
                Recorded::At(o) => o,
                Recorded::Unmasked => i * chunk_bytes,
            };
            let at = start + offset;
            if at + chunk_bytes > img.data_offset + img.data_len {
                return Err(src.malformed(format!(
                    "image segment {n}: block {block} of band group {plane} at byte {at} (+{chunk_bytes}) is past the segment's data"
                )));
            }
            let (row, col) = (block / img.blocks_across, block % img.blocks_across);
            refs.push(Ref::single([plane, row, col], url.clone(), at, chunk_bytes));
        }
    }
    let order = if size == 1 { '|' } else { '>' };
    Ok(pyramid::Array {
        shape: [bands, img.rows, img.cols],
        chunks: [per_chunk, img.block_height, img.block_width],
        dtype: format!("{order}{kind}{size}"),
        codec: json!({
            "id": JBP_BLOCK_CODEC, "num_bands": per_chunk, "block_height": img.block_height,
            "block_width": img.block_width, "nbpp": img.nbpp,
            "imode": img.imode.to_string(), "pvtype": img.pvtype,
        }),
        fill: gdal_nodata(img, mask),
        attrs: Map::new(),
        refs,
    })
}

/// A one-block uncompressed image (bands one after the other) whose data
/// stops short, as GDAL's NITF driver reads it: line by line, each line of
/// each band read from the file where the segment's data would hold it.
/// Every line is a chunk; a line the file ends inside is a chunk of the
/// bytes it has, whose read fails as GDAL's does; lines wholly past the end
/// of the file are left out (read as the fill value), with a warning.
fn lines(
    src: &Source,
    img: &Image,
    n: usize,
    start: u64,
    url: &std::sync::Arc<str>,
    kind: char,
) -> pyramid::Array {
    let size = img.nbpp / 8;
    let line = img.block_width * size;
    let bands = img.band_reps.len() as u64;
    let mut refs = Vec::new();
    // Lines lie in file order: the first past the end ends the listing (so
    // a huge image of few bytes costs no more than its bytes).
    'bands: for band in 0..bands {
        for row in 0..img.rows {
            let at = (band * img.block_height + row)
                .checked_mul(line)
                .and_then(|o| o.checked_add(start))
                .filter(|&at| at < src.len());
            let Some(at) = at else { break 'bands };
            let len = line.min(src.len() - at);
            refs.push(Ref::single([band, row, 0], url.clone(), at, len));
        }
    }
    let missing = bands * img.rows - refs.len() as u64;
    eprintln!(
        "chunkref: {}: image segment {n}: its data ends before its last pixels; lines are \
         indexed one by one, as GDAL reads them{}",
        src.path(),
        if missing > 0 {
            format!(" ({missing} line(s) past the end of the file read as the fill value)")
        } else {
            String::new()
        }
    );
    pyramid::Array {
        shape: [bands, img.rows, img.cols],
        chunks: [1, 1, img.block_width],
        dtype: format!("{}{kind}{size}", if size == 1 { '|' } else { '>' }),
        codec: json!({
            "id": JBP_BLOCK_CODEC, "num_bands": 1, "block_height": 1,
            "block_width": img.block_width, "nbpp": img.nbpp, "imode": "B",
            "pvtype": img.pvtype,
        }),
        fill: gdal_nodata(img, None),
        attrs: Map::new(),
        refs,
    }
}

/// The nodata GDAL reports for image `img` with mask table `mask` (see
/// [`crate::formats::nitf::lut::nodata`]), as a fill value: absent blocks read as it, else as 0.
fn gdal_nodata(img: &Image, mask: Option<&MaskTable>) -> Value {
    crate::formats::nitf::lut::nodata(img, mask.and_then(|m| m.pad.as_ref()))
        .map_or(Value::Null, |v| json!(v))
}

/// The data array of a JPEG-compressed (C3 / M3) image: one chunk per
/// block, each a whole JPEG stream holding every band.
fn jpeg_blocks(
    src: &Source,
    img: &Image,
    n: usize,
    start: u64,
    mask: Option<&MaskTable>,
    url: &str,
) -> Result<pyramid::Array> {
    let url: std::sync::Arc<str> = url.into();
    let bands = img.band_reps.len() as u64;
    // 12-bit JPEG: GDAL writes NBPP 16 (ABPP 12 or 16) for it.
    let twelve = matches!(img.nbpp, 12 | 16);
    if !(img.nbpp == 8 || twelve) || (bands > 1 && img.imode != 'P') {
        return Err(Error::unsupported(format!(
            "{}: image segment {n}: JPEG blocks of {} bits with {bands} bands in IMODE {} \
             (supported: 8 or 12-bit JPEG, one band or IMODE P)",
            src.path(),
            img.nbpp,
            img.imode
        )));
    }
    let len = img.data_offset + img.data_len - start;
    if len > MAX_SCAN_BYTES {
        return Err(Error::Limits {
            what: format!(
                "{}: image segment {n} holds {len} bytes of JPEG data to scan (limit {MAX_SCAN_BYTES})",
                src.path()
            ),
        });
    }
    let data = src.read(start, len)?;
    let grid = img.blocks_across * img.blocks_down;
    let mut refs = Vec::new();
    let mut at = 0usize;
    for block in 0..grid {
        let begin = match MaskTable::offset(mask, block, src, n)? {
            Recorded::Absent => continue,
            Recorded::At(o) => o as usize,
            Recorded::Unmasked => crate::formats::nitf::jpeg::stream_start(&data, at).unwrap_or(at),
        };
        let end = crate::formats::nitf::jpeg::stream_end(&data, begin).ok_or_else(|| {
            src.malformed(format!(
                "image segment {n}: no complete JPEG stream for block {block} at byte {}",
                start + begin as u64
            ))
        })?;
        let (row, col) = (block / img.blocks_across, block % img.blocks_across);
        refs.push(Ref::single(
            [0, row, col],
            url.clone(),
            start + begin as u64,
            (end - begin) as u64,
        ));
        at = end;
    }
    // GDAL takes the Q level of the first block's stream for every block.
    let first = refs
        .first()
        .and_then(|r| r.ranges.first())
        .map(|&(at, _)| (at - start) as usize);
    let q_level = first
        .and_then(|at| crate::formats::nitf::jpeg::q_level(&data, at))
        .filter(|&q| !twelve && (1..=5).contains(&q));
    let color_space = match (bands, img.irep.as_str()) {
        (1, _) => "MONO",
        (_, "YCbCr601") => "YCbCr601",
        _ => "RGB",
    };
    let mut codec = json!({
        "id": JPEG_CODEC, "bits_per_pixel": if twelve { 12 } else { 8 }, "num_bands": bands,
        "block_width": img.block_width, "block_height": img.block_height,
        "imode": img.imode.to_string(), "color_space": color_space,
    });
    if let Some(q) = q_level {
        codec["q_level"] = json!(q);
    }
    Ok(pyramid::Array {
        shape: [bands, img.rows, img.cols],
        chunks: [bands, img.block_height, img.block_width],
        dtype: if twelve { "<u2" } else { "|u1" }.into(),
        codec,
        fill: gdal_nodata(img, mask),
        attrs: Map::new(),
        refs,
    })
}

/// The one-block JPEG image `base` at 1/`scale` of its size: the same
/// stream, decoded through libjpeg's scaled inverse DCT (sides rounded up).
fn scaled_jpeg(base: &pyramid::Array, scale: u64) -> pyramid::Array {
    let mut array = base.clone();
    for axis in 1..3 {
        array.shape[axis] = base.shape[axis].div_ceil(scale);
        array.chunks[axis] = base.chunks[axis].div_ceil(scale);
    }
    array.codec["scale"] = json!(scale);
    array
}
