//! Indexing TIFF / BigTIFF / COG files into Kerchunk JSON chunk indexes in
//! the layout osml-imagery-io writes: a root group with GeoZarr
//! `multiscales`, level groups `0`, `1`, ... each holding array `data`
//! with axes (bands, y, x) and the `tiff-tile` codec.
mod pages;
mod rgba;
mod sidecar;

use std::sync::Arc;

use base64::Engine;
use serde_json::{json, Map, Value};

use crate::base::dtype::DataType;
use crate::base::error::{Error, Result};
use crate::builders::writers::built::Built;
use crate::builders::writers::built::Ref;
use crate::builders::writers::pyramid::{self, Pyramid};
use crate::codec::ColorModel;
use crate::conventions::colour::ColorInterp;
use crate::conventions::geozarr::Georef;
use crate::formats::tiff::ifd::Ifd;
use crate::io::source::Source;

/// Codec URI of TIFF tiles, as osml-imagery-io names it.
pub const TIFF_TILE_CODEC: &str = "https://awslabs.github.io/osml-imagery-io/codecs/tiff-tile";

/// One image IFD, reduced to what the index needs.
#[derive(Debug)]
struct Image {
    width: u64,
    height: u64,
    /// Chunk (tile or strip) height and width.
    chunk_h: u64,
    chunk_w: u64,
    samples: u64,
    planar: bool,
    dtype: String,
    codec: Value,
    /// Array attributes besides `_ARRAY_DIMENSIONS` (colour interpretation,
    /// CF band attributes).
    attrs: Map<String, Value>,
    /// `(grid index, offset, length)` of every stored chunk.
    chunks: Vec<([u64; 3], u64, u64)>,
    /// URL of the file holding the chunks (the source, or a sidecar).
    url: Arc<str>,
}

/// Builds the index of the TIFF at `path`, whose chunks are referenced by
/// `url`. A file of several pages (full-resolution IFDs that are neither
/// overviews nor masks) becomes one pyramid per page (see [`pages`]).
pub fn index_file(path: &str, url: &str) -> Result<Built> {
    let src = Source::open(path, "TIFF")?;
    let tiff = crate::formats::tiff::ifd::read(&src)?;
    let nodata = nodata(&tiff.ifds[0]);
    let Images {
        mut levels,
        mut masks,
        pages,
    } = images(&src, &tiff, url, nodata)?;
    sidecar::add(path, url, nodata, &mut levels, &mut masks);
    let main = pyramid(&tiff.ifds[0], path, url, levels, masks)?;
    let mut built = if pages.is_empty() {
        main.into_built()
    } else {
        let pages = pages
            .into_iter()
            .map(|(n, image)| {
                let page = pyramid(&tiff.ifds[n], path, url, vec![image], Vec::new())?;
                Ok((n, page))
            })
            .collect::<Result<Vec<_>>>()?;
        pages::built(main, pages, tiff.ifds.len(), url)
    };
    let gdal_xml = tiff.ifds[0]
        .ascii(crate::formats::tiff::tags::GDAL_METADATA)
        .unwrap_or_default();
    built.datetime = acquisition_datetime(&tiff.ifds[0], gdal_xml);
    Ok(built)
}

/// The `GDAL_NODATA` value of an IFD.
fn nodata(ifd: &Ifd) -> Option<f64> {
    ifd.ascii(crate::formats::tiff::tags::GDAL_NODATA)
        .and_then(|s| s.trim().parse::<f64>().ok())
}

/// The pyramid of the image of `ifd` (of the TIFF at `path`, referenced by
/// `url`): its `levels` and their `masks`, georeferenced, described and
/// given a fill value from the tags of `ifd`, as GDAL's GTiff driver shows
/// that image.
fn pyramid(
    ifd: &Ifd,
    path: &str,
    url: &str,
    mut levels: Vec<Image>,
    masks: Vec<Image>,
) -> Result<Pyramid> {
    let nodata = nodata(ifd);
    let mut georef =
        Georef::from_ifd_with(ifd, path, crate::base::gdal::geo::geotiff_bytes_crs_wkt2);
    // Tie points without a pixel scale place the image by GCPs: the CRS is
    // theirs, the dataset has none (as GDAL shows it).
    if let Some(points) = crate::formats::tiff::geo::tie_point_gcps(ifd, &georef) {
        let crs = georef.crs_code.take().or(georef.crs_wkt2.take());
        levels[0].attrs.insert(
            crate::conventions::attributes::GCPS_ATTRIBUTE.into(),
            json!({"crs": crs, "points": points}),
        );
    }
    // Rational polynomial coefficients from the tag, unless a sidecar gave
    // them (GDAL reads .RPB / _rpc.txt files first).
    if let Some(rpc) = crate::formats::tiff::rpc::attribute(ifd) {
        levels[0]
            .attrs
            .entry(crate::conventions::attributes::RPC_ATTRIBUTE)
            .or_insert(rpc);
    }
    // Band scale/offset/unit/description and colour interpretations GDAL
    // recorded for the full image apply to every level.
    let gdal_xml = ifd
        .ascii(crate::formats::tiff::tags::GDAL_METADATA)
        .unwrap_or_default();
    let samples = levels[0].samples;
    let band_attrs = crate::formats::tiff::gdal_metadata::band_attributes(gdal_xml, samples);
    let colors = crate::formats::tiff::gdal_metadata::color_interpretations(gdal_xml, samples);
    for img in levels.iter_mut() {
        img.attrs.extend(band_attrs.clone());
        // GDAL shows a bitmap band as a palette, and RGBA converted from
        // CMYK or CIELab as such, whatever it recorded.
        if !is_bitmap(ifd) && !rgba::is_converted(img) {
            override_colors(&mut img.attrs, &colors);
        }
    }
    // GDAL reports the nodata of a Float32 image rounded to Float32, the
    // value its pixels hold; a nodata no pixel can hold (-10000 of a Byte
    // image) as it is written: as `_FillValue`, the fill value staying 0.
    let float32 = levels[0].dtype.ends_with("f4");
    let nodata = nodata.map(|v| if float32 { f64::from(v as f32) } else { v });
    let fill = match nodata {
        Some(v) if !DataType::from_v2(&levels[0].dtype)?.holds(v) => {
            for img in levels.iter_mut() {
                img.attrs.insert("_FillValue".into(), json!(v));
            }
            Value::Null
        }
        v => v.map_or(Value::Null, crate::base::dtype::fill_json),
    };
    let base = [levels[0].height, levels[0].width];
    let levels = levels
        .into_iter()
        .map(|img| {
            let mask = masks
                .iter()
                .find(|m| m.width == img.width && m.height == img.height)
                .map(|m| m.array(&Value::Null));
            pyramid::Level {
                attrs: georef.level_attributes(base, [img.height, img.width]),
                data: img.array(&fill),
                mask,
            }
        })
        .collect::<Vec<_>>();
    Ok(Pyramid {
        source: json!(url),
        attrs: georef.root_attributes(base),
        levels,
    })
}

/// The images of one TIFF file as GDAL's GTiff driver sees them: IFD 0
/// and the reduced-resolution IFDs (overviews), the transparency masks, and
/// the other pages.
struct Images {
    levels: Vec<Image>,
    masks: Vec<Image>,
    /// The full-resolution IFDs after the first that are not masks (the
    /// pages GDAL lists as subdatasets), with their IFD numbers.
    pages: Vec<(usize, Image)>,
}

/// The levels, masks and other pages of `tiff` (read from `src`, referenced
/// by `url`). `nodata` is the first page's, for its colour tables (each
/// other page has its own).
fn images(
    src: &Source,
    tiff: &crate::formats::tiff::ifd::Tiff,
    url: &str,
    nodata: Option<f64>,
) -> Result<Images> {
    let url: Arc<str> = url.into();
    let path = src.path();
    let mut found = Images {
        levels: Vec::new(),
        masks: Vec::new(),
        pages: Vec::new(),
    };
    for (n, ifd) in tiff.ifds.iter().enumerate() {
        let subfile = ifd
            .int(crate::formats::tiff::tags::NEW_SUBFILE_TYPE)
            .unwrap_or(0);
        let image = |nodata| image(src, tiff.big_endian, n, ifd, nodata, url.clone());
        if subfile & crate::formats::tiff::tags::SUBFILE_MASK != 0 {
            // A mask the builder cannot index must not cost the image.
            match image(nodata) {
                Ok(mask) => found.masks.push(mask),
                Err(e) => eprintln!("chunkref: {path}: mask IFD {n} is left out: {e}"),
            }
        } else if found.levels.is_empty() {
            found.levels.push(image(nodata)?);
        } else if subfile & crate::formats::tiff::tags::SUBFILE_REDUCED != 0 {
            // GDAL takes reduced IFDs after any page as overviews of the
            // first, when they have its bands.
            let level = image(nodata)?;
            if level.samples == found.levels[0].samples {
                found.levels.push(level);
            } else {
                eprintln!(
                    "chunkref: {path}: reduced-resolution IFD {n} has {} bands, the image {}: \
                     it is left out, as GDAL leaves it",
                    level.samples, found.levels[0].samples
                );
            }
        } else if matches!(subfile, 0 | crate::formats::tiff::tags::SUBFILE_PAGE) {
            found.pages.push((n, image(self::nodata(ifd))?));
        } else {
            eprintln!(
                "chunkref: {path}: IFD {n} has NewSubfileType {subfile}, neither a page, an \
                 overview nor a mask: it is left out, as GDAL leaves it"
            );
        }
    }
    if found.levels.is_empty() {
        return Err(src.malformed("no image IFD, only transparency masks"));
    }
    Ok(found)
}

/// The image's datetime: the first of the GDAL metadata items
/// [`crate::base::datetime::METADATA_ITEMS`] that reads as one, else the DateTime
/// tag (306, GDAL's `TIFFTAG_DATETIME`).
fn acquisition_datetime(ifd: &Ifd, gdal_xml: &str) -> Option<String> {
    crate::formats::tiff::gdal_metadata::dataset_items(
        gdal_xml,
        &crate::base::datetime::METADATA_ITEMS,
    )
    .into_iter()
    .chain(
        ifd.ascii(crate::formats::tiff::tags::DATE_TIME)
            .map(str::to_string),
    )
    .find_map(|text| crate::base::datetime::parse(&text))
}

impl Image {
    /// The image as an index array whose chunks point into its file.
    fn array(&self, fill: &Value) -> pyramid::Array {
        let band_chunk = if self.planar { 1 } else { self.samples };
        let url = &self.url;
        pyramid::Array {
            shape: [self.samples, self.height, self.width],
            chunks: [band_chunk, self.chunk_h, self.chunk_w],
            dtype: self.dtype.clone(),
            codec: self.codec.clone(),
            fill: fill.clone(),
            attrs: self.attrs.clone(),
            refs: self
                .chunks
                .iter()
                .map(|&(index, offset, length)| Ref::single(index, url.clone(), offset, length))
                .collect(),
        }
    }
}

/// GDAL's colour interpretation of each band of an IFD: the colour model
/// of its Photometric (see [`ColorInterp::of_model`]), extra samples marked
/// as alpha (ExtraSamples 1 or 2) as alpha, a bitmap as a palette; and its
/// colour table (the ColorMap, or a bitmap's black and white).
fn color_interpretation(ifd: &Ifd, samples: u64, nodata: Option<f64>) -> Map<String, Value> {
    let photometric = ifd
        .int(crate::formats::tiff::tags::PHOTOMETRIC)
        .unwrap_or(1);
    let bitmap = is_bitmap(ifd);
    let model = ColorModel::from_tiff_photometric(photometric);
    let extra = ifd
        .ints(crate::formats::tiff::tags::EXTRA_SAMPLES)
        .unwrap_or_default();
    let first_extra = samples.saturating_sub(extra.len() as u64);
    let grey_bits = min_is_white_bits(ifd, photometric, samples);
    let names: Vec<&str> = (0..samples)
        .map(|b| {
            let alpha = b
                .checked_sub(first_extra)
                .and_then(|e| extra.get(e as usize))
                .is_some_and(|&kind| kind == 1 || kind == 2);
            if alpha {
                ColorInterp::Alpha.name()
            } else if bitmap {
                ColorInterp::Palette.name()
            } else if grey_bits.is_some() {
                ColorInterp::Undefined.name()
            } else {
                ColorInterp::of_model(model, b, samples).name()
            }
        })
        .collect();
    // Written even when all are undefined: readers would otherwise take
    // the codec's photometric.
    let mut attrs = Map::new();
    attrs.insert(
        crate::conventions::attributes::COLOR_ATTRIBUTE.into(),
        json!(names),
    );
    let table = match color_table(ifd, nodata).filter(|_| photometric == 3) {
        Some(table) => Some(table),
        None if bitmap => Some(bilevel_table(photometric)),
        None => grey_bits.map(|bits| white_to_black_table(bits, nodata)),
    };
    if let Some(table) = table {
        attrs.insert(
            crate::conventions::attributes::COLOR_TABLE_ATTRIBUTE.into(),
            table,
        );
    }
    attrs
}

/// Whether GDAL's GTiff driver reads the IFD as a bitmap: one band of
/// 1-bit samples, shown as a palette.
fn is_bitmap(ifd: &Ifd) -> bool {
    ifd.int(crate::formats::tiff::tags::SAMPLES_PER_PIXEL)
        .unwrap_or(1)
        == 1
        && ifd
            .ints(crate::formats::tiff::tags::BITS_PER_SAMPLE)
            .unwrap_or_else(|| vec![1])
            == [1]
}

/// The table GDAL gives a one-band 1-bit image without a ColorMap: black
/// then white, or white then black for MinIsWhite (Photometric 0).
fn bilevel_table(photometric: u64) -> Value {
    let (black, white) = (json!([0, 0, 0, 255]), json!([255, 255, 255, 255]));
    if photometric == 0 {
        json!([white, black])
    } else {
        json!([black, white])
    }
}

/// The bits of a one-band MinIsWhite (Photometric 0) image of 2 to 16 bits,
/// which GDAL's GTiff driver shows as an undefined band with a white-to-black
/// table (1-bit ones are bitmaps, see [`bilevel_table`]).
fn min_is_white_bits(ifd: &Ifd, photometric: u64, samples: u64) -> Option<u32> {
    let bits = ifd.ints(crate::formats::tiff::tags::BITS_PER_SAMPLE)?;
    match (photometric, samples, bits.as_slice()) {
        (0, 1, &[b]) if (2..=16).contains(&b) => Some(b as u32),
        _ => None,
    }
}

/// GDAL's table for a MinIsWhite image of `bits` bits: 2^bits greys from
/// white to black (255 (n - 1 - i) / (n - 1), truncated), the entry of the
/// nodata value transparent.
fn white_to_black_table(bits: u32, nodata: Option<f64>) -> Value {
    let n = 1u32 << bits;
    let transparent = nodata.filter(|v| v.is_finite()).map(|v| v.trunc());
    let entries: Vec<Value> = (0..n)
        .map(|i| {
            let grey = 255 * (n - 1 - i) / (n - 1);
            let alpha = if transparent == Some(f64::from(i)) {
                0
            } else {
                255
            };
            json!([grey, grey, grey, alpha])
        })
        .collect();
    Value::Array(entries)
}

/// Replaces the colour interpretation of bands GDAL recorded one for.
fn override_colors(attrs: &mut Map<String, Value>, colors: &[Option<String>]) {
    if colors.iter().all(Option::is_none) {
        return;
    }
    let key = crate::conventions::attributes::COLOR_ATTRIBUTE;
    let current: Vec<Value> = attrs
        .get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let names: Vec<&str> = current
        .iter()
        .zip(colors)
        .map(|(c, o)| {
            let name = o.as_deref().or(c.as_str()).unwrap_or("Undefined");
            ColorInterp::from_name(name).name()
        })
        .collect();
    attrs.insert(key.into(), json!(names));
}

/// The ColorMap of a palette image as `[[r, g, b, a], ...]` with 8-bit
/// components (16-bit TIFF values divided by 257, as GDAL reads them),
/// opaque but for the entry of the nodata value (truncated to an integer,
/// as GDAL does), which is transparent.
fn color_table(ifd: &Ifd, nodata: Option<f64>) -> Option<Value> {
    let map = ifd.ints(crate::formats::tiff::tags::COLOR_MAP)?;
    let n = map.len() / 3;
    if n == 0 || map.len() % 3 != 0 {
        return None;
    }
    let transparent = nodata.filter(|v| v.is_finite()).map(|v| v.trunc());
    let entries: Vec<Value> = (0..n)
        .map(|i| {
            let alpha = if transparent == Some(i as f64) {
                0
            } else {
                255
            };
            json!([map[i] / 257, map[n + i] / 257, map[2 * n + i] / 257, alpha])
        })
        .collect();
    Some(Value::Array(entries))
}

/// The chunk offsets and byte counts of `ifd`, under the Tile tags for a
/// `tiled` image and the Strip tags otherwise; libtiff keeps both pairs in
/// one table, so the other pair serves when the expected one is missing
/// (tile tables stored under the Strip tags, as GDAL reads them).
fn chunk_table(ifd: &Ifd, tiled: bool) -> std::result::Result<(Vec<u64>, Vec<u64>), String> {
    use crate::formats::tiff::tags::{
        STRIP_BYTE_COUNTS, STRIP_OFFSETS, TILE_BYTE_COUNTS, TILE_OFFSETS,
    };
    let (strips, tiles) = (
        (
            "StripOffsets",
            STRIP_OFFSETS,
            "StripByteCounts",
            STRIP_BYTE_COUNTS,
        ),
        (
            "TileOffsets",
            TILE_OFFSETS,
            "TileByteCounts",
            TILE_BYTE_COUNTS,
        ),
    );
    let (want, other) = if tiled {
        (tiles, strips)
    } else {
        (strips, tiles)
    };
    let pick = |(name, tag): (&str, u16), other: u16| {
        ifd.ints(tag)
            .or_else(|| ifd.ints(other))
            .ok_or_else(|| format!("missing {name} (tag {tag})"))
    };
    Ok((
        pick((want.0, want.1), other.1)?,
        pick((want.2, want.3), other.3)?,
    ))
}

fn image(
    src: &Source,
    big_endian: bool,
    n: usize,
    ifd: &Ifd,
    nodata: Option<f64>,
    url: Arc<str>,
) -> Result<Image> {
    let bad = |what: String| src.malformed(format!("IFD {n}: {what}"));
    let need = |tag: u16, name: &str| {
        ifd.int(tag)
            .ok_or_else(|| bad(format!("missing {name} (tag {tag})")))
    };
    let width = need(crate::formats::tiff::tags::IMAGE_WIDTH, "ImageWidth")?;
    let height = need(crate::formats::tiff::tags::IMAGE_LENGTH, "ImageLength")?;
    let samples = ifd
        .int(crate::formats::tiff::tags::SAMPLES_PER_PIXEL)
        .unwrap_or(1);
    // A SHORT in the TIFF specification, as libtiff reads it.
    if !(1..=u64::from(u16::MAX)).contains(&samples) {
        return Err(bad(format!(
            "SamplesPerPixel {samples} (tag 277) is not 1 to 65535"
        )));
    }
    let bits = ifd
        .ints(crate::formats::tiff::tags::BITS_PER_SAMPLE)
        .unwrap_or_else(|| vec![1]);
    let Some(&first) = bits.first() else {
        return Err(bad("BitsPerSample (tag 258) holds no value".into()));
    };
    if bits.iter().any(|&b| b != first) {
        return Err(Error::unsupported(format!(
            "{}: IFD {n} mixes BitsPerSample {bits:?} (tag 258)",
            src.path()
        )));
    }
    let bits = first;
    let sample_format = ifd
        .int(crate::formats::tiff::tags::SAMPLE_FORMAT)
        .unwrap_or(1);
    // Unsigned samples narrower than a byte-sized type (1-bit masks, 12-bit
    // imagery) are packed; the codec widens them to the next type up.
    // Half floats are indexed as `f2`, served as Float32 as GDAL does.
    let kind = match (sample_format, bits) {
        (1, 1..=32 | 64) => 'u',
        (2, 8 | 16 | 32 | 64) => 'i',
        (3, 16 | 32 | 64) => 'f',
        _ => {
            return Err(Error::unsupported(format!(
                "{}: IFD {n} has SampleFormat {sample_format} (tag 339) with BitsPerSample {bits} (tag 258)",
                src.path()
            )))
        }
    };
    let predictor = ifd.int(crate::formats::tiff::tags::PREDICTOR).unwrap_or(1);
    // Floating-point predictor data is rebuilt from byte planes, so any byte
    // order can be produced; declare little-endian as osml-imagery-io does.
    let size = bits.next_power_of_two().max(8) / 8;
    let order = match (size, big_endian && predictor != 3) {
        (1, _) => '|',
        (_, true) => '>',
        _ => '<',
    };
    let dtype = format!("{order}{kind}{size}");
    let planar = ifd
        .int(crate::formats::tiff::tags::PLANAR_CONFIG)
        .unwrap_or(1)
        == 2
        && samples > 1;
    let tiled = ifd.int(crate::formats::tiff::tags::TILE_WIDTH).is_some();
    let (chunk_w, chunk_h, offsets, counts) =
        if let Some(tw) = ifd.int(crate::formats::tiff::tags::TILE_WIDTH) {
            let th = need(crate::formats::tiff::tags::TILE_LENGTH, "TileLength")?;
            let (offs, cnts) = chunk_table(ifd, true).map_err(bad)?;
            (tw, th, offs, cnts)
        } else {
            let rps = ifd
                .int(crate::formats::tiff::tags::ROWS_PER_STRIP)
                .unwrap_or(height)
                .clamp(1, height.max(1));
            let (offs, cnts) = chunk_table(ifd, false).map_err(bad)?;
            (width, rps, offs, cnts)
        };
    if chunk_w == 0 || chunk_h == 0 {
        return Err(bad(format!("chunk size {chunk_w}x{chunk_h}")));
    }
    let across = width.div_ceil(chunk_w);
    let down = height.div_ceil(chunk_h);
    let planes = if planar { samples } else { 1 };
    let expected = across * down * planes;
    if offsets.len() as u64 != expected || counts.len() as u64 != expected {
        return Err(bad(format!(
            "{} offsets and {} byte counts for {expected} chunks",
            offsets.len(),
            counts.len()
        )));
    }
    let mut chunks = Vec::with_capacity(expected as usize);
    for (i, (&o, &c)) in offsets.iter().zip(&counts).enumerate() {
        let i = i as u64;
        if c == 0 {
            continue; // sparse chunk: reads as fill value
        }
        if o.checked_add(c).is_none_or(|e| e > src.len()) {
            // A truncated file: its other chunks read, this one fails to
            // (as through GDAL, whose libtiff fails that block alone).
            eprintln!(
                "chunkref: warning: {}: IFD {n}: chunk {i} at {o}+{c} runs past the end of the \
                 file ({} bytes): its block will fail to read",
                src.path(),
                src.len()
            );
        }
        let (plane, rest) = (i / (across * down), i % (across * down));
        chunks.push(([plane, rest / across, rest % across], o, c));
    }
    let jpeg_tables = ifd
        .bytes(crate::formats::tiff::tags::JPEG_TABLES)
        .map_or(Value::Null, |t| {
            json!(base64::engine::general_purpose::STANDARD.encode(t))
        });
    let codec = json!({
        "id": TIFF_TILE_CODEC,
        "compression": ifd.int(crate::formats::tiff::tags::COMPRESSION).unwrap_or(1),
        "bits_per_sample": bits,
        // A planar chunk holds one sample; say so as osml-imagery-io does.
        "samples_per_pixel": if planar { 1 } else { samples },
        "photometric": ifd.int(crate::formats::tiff::tags::PHOTOMETRIC).unwrap_or(1),
        "planar_config": 1,
        "predictor": predictor,
        "tile_width": chunk_w,
        "tile_height": chunk_h,
        "sample_format": sample_format,
        "jpeg_tables": jpeg_tables,
    });
    // FillOrder 2 only (the osml-imagery-io codec this one reads knows no
    // such key; its indexes keep their form).
    let mut codec = codec;
    // Fax data: the options libtiff decodes by. Fax and SGILOG strips: the
    // image's height (the last strip is decoded for the rows it holds).
    let compression = codec["compression"].as_u64();
    if matches!(compression, Some(2..=4)) {
        use crate::formats::tiff::tags::{T4_OPTIONS, T6_OPTIONS};
        for (key, tag) in [("t4_options", T4_OPTIONS), ("t6_options", T6_OPTIONS)] {
            if let Some(options) = ifd.int(tag) {
                codec[key] = json!(options);
            }
        }
    }
    let sgilog = matches!(compression, Some(34676 | 34677));
    if sgilog && planar {
        return Err(Error::unsupported(format!(
            "{}: IFD {n} holds SGILOG (LogLuv) samples in separate planes, which libtiff \
             cannot decode",
            src.path()
        )));
    }
    if (matches!(compression, Some(2..=4)) || sgilog) && !tiled {
        codec["image_height"] = json!(height);
    }
    if let Some(order) = ifd
        .int(crate::formats::tiff::tags::FILL_ORDER)
        .filter(|&o| o != 1)
    {
        codec["fill_order"] = json!(order);
    }
    let mut image = Image {
        width,
        height,
        chunk_h,
        chunk_w,
        samples,
        planar,
        dtype,
        codec,
        attrs: color_interpretation(ifd, samples, nodata),
        chunks,
        url,
    };
    rgba::convert(&mut image, ifd, src.path(), n);
    Ok(image)
}
