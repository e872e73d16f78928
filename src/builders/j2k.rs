//! JPEG 2000: finding the tiles of a codestream (raw `.j2k`, inside a
//! `.jp2` file, or inside a NITF image segment) and indexing them.
//!
//! A tile becomes one chunk: its tile-parts, merged into one range when they
//! are back to back and a multi-range reference when other tiles' parts sit
//! between them. Each resolution level GDAL would expose as an overview
//! becomes a level of the index, decoded with `resolution_level = r`; when
//! every tile's tile-parts are split by resolution in a resolution-first
//! progression, level r references only the tile-parts it needs.

use serde_json::{json, Map, Value};

use crate::base::error::Result;
use crate::builders::writers::built::Ref;
use crate::builders::writers::pyramid::{self, Pyramid};
use crate::formats::j2k::codestream::{MainHeader, Problem, Sot, EOC, SOT_LEN};
use crate::io::source::Source;

/// Codec URI of JPEG 2000 tiles, as osml-imagery-io names it.
pub const JPEG2000_CODEC: &str = "https://awslabs.github.io/osml-imagery-io/codecs/jpeg2000";

/// GDAL adds overviews while the previous level is larger than this.
const OVERVIEW_MIN: u64 = 128;

/// One tile-part: where it is in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TilePart {
    /// Absolute file offset of its SOT marker.
    pub offset: u64,
    /// Bytes, SOT marker included.
    pub length: u64,
}

/// A codestream located in a file: its main header and every tile's parts.
#[derive(Debug)]
pub struct Codestream {
    /// Main header bytes (SOC up to the first SOT, TLM markers left out).
    pub header_bytes: Vec<u8>,
    /// The main header, parsed.
    pub header: MainHeader,
    /// Tile-parts of each tile, in codestream order, by tile index.
    pub tiles: Vec<Vec<TilePart>>,
}

impl Codestream {
    /// Reads the codestream of `len` bytes at `start` in `src`: the main
    /// header, then the tile-parts from TLM markers or by walking SOTs.
    pub fn read(src: &Source, start: u64, len: u64) -> Result<Codestream> {
        let mut want = len.min(16 << 10);
        let (header_bytes, header) = loop {
            let bytes = src.read(start, want)?;
            match MainHeader::parse(&bytes) {
                Ok(h) => break (crate::formats::j2k::codestream::without_tlm(&bytes, &h), h),
                Err(Problem::NeedMore(n)) if (n as u64) <= len && want < len => {
                    want = (n as u64).max(want * 2).min(len);
                }
                Err(p) => return Err(src.malformed(format!("codestream at byte {start}: {p}"))),
            }
        };
        let siz = &header.siz;
        if !siz.tiles_are_blocks() {
            return Err(crate::base::error::Error::unsupported(format!(
                "{}: JPEG 2000 tile grid not aligned with the image (image at ({}, {}), tiles at \
                 ({}, {}): the first tiles are cut short; GDAL's JP2OpenJPEG driver cannot read \
                 such tiles either)",
                src.path(),
                siz.x_offset,
                siz.y_offset,
                siz.tile_x_offset,
                siz.tile_y_offset
            )));
        }
        if !siz.sampling_readable() {
            return Err(crate::base::error::Error::unsupported(format!(
                "{}: {}",
                src.path(),
                crate::formats::j2k::codestream::SUB_SAMPLED
            )));
        }
        let (across, down) = siz.tile_grid();
        let mut tiles = vec![Vec::new(); (across * down) as usize];
        let end = start + len;
        let first = start + header.len as u64;
        let parts = if header.tlm.is_empty() {
            scan_sots(src, first, end, tiles.len())?
        } else {
            tlm_parts(src, &header, first, end)?
        };
        for (tile, part) in parts {
            let slot = tiles.get_mut(usize::from(tile)).ok_or_else(|| {
                src.malformed(format!(
                    "tile-part at byte {} is for tile {tile}, but the codestream has {} tiles",
                    part.offset,
                    across * down
                ))
            })?;
            slot.push(part);
        }
        Ok(Codestream {
            header_bytes,
            header,
            tiles,
        })
    }

    /// The index levels GDAL's JP2OpenJPEG driver shows: full resolution,
    /// then reduced ones while the previous level is over 128 pixels wide or
    /// high and, unless GDAL reads the image through a decode area (see
    /// [`Codestream::decode_area`]), its tiles have an even size. A paletted
    /// JP2 (`palette`) has none: GDAL offers no reduced resolution with a
    /// colour table.
    ///
    /// A level is a grid of whole reduced tiles, so the levels also stop
    /// where reduced tiles of several no longer make a regular grid (only
    /// possible for GDAL's small-tile decode area), and where an image whose
    /// origin is not (0, 0) reduces to another size than GDAL's halving says
    /// (GDAL could not read that level either).
    pub fn levels(&self, palette: bool) -> Vec<u32> {
        let siz = &self.header.siz;
        let (width, height) = siz.image_size();
        let mut levels = vec![0];
        if palette {
            return levels;
        }
        let (across, down) = siz.tile_grid();
        let decode_area = self.decode_area();
        for r in 1..=u32::from(self.header.levels) {
            let (w, h) = reduced(width, height, r - 1);
            let halves = |size: u32| size.is_multiple_of(1 << r);
            let tiles_halve = halves(siz.tile_width) && halves(siz.tile_height);
            let grid_holds = tiles_halve || (across == 1 && down == 1);
            if (w <= OVERVIEW_MIN && h <= OVERVIEW_MIN)
                || !(decode_area || tiles_halve)
                || !grid_holds
                || self.level_size(r) != reduced(width, height, r)
            {
                break;
            }
            levels.push(r);
        }
        levels
    }

    /// Whether GDAL 3.6's JP2OpenJPEG driver reads the image through an
    /// OpenJPEG decode area rather than tile by tile, which lets its reduced
    /// levels go on where tiles stop halving: one tile exactly the size of an
    /// image over 1024 pixels wide or high; an image smaller than its one
    /// tile both ways; or an image of at most 1024 x 1024 pixels in tiles
    /// under 32 x 32.
    fn decode_area(&self) -> bool {
        let siz = &self.header.siz;
        let (width, height) = siz.image_size();
        let (tw, th) = (siz.tile_width, siz.tile_height);
        let small_tiles = width <= 1024 && height <= 1024 && tw < 32 && th < 32;
        let single_tiled = width == tw && height == th && (width > 1024 || height > 1024);
        small_tiles || single_tiled || (width < tw && height < th)
    }

    /// Width and height of the image at resolution level r: its corners on
    /// the reference grid, divided by 2^r and rounded up (ISO/IEC 15444-1
    /// B.5).
    fn level_size(&self, r: u32) -> (u64, u64) {
        let siz = &self.header.siz;
        let (x1, y1) = reduced(siz.width, siz.height, r);
        let (x0, y0) = reduced(siz.x_offset, siz.y_offset, r);
        (x1 - x0, y1 - y0)
    }

    /// Whether level r can reference only the first `levels + 1 - r`
    /// tile-parts of each tile: every tile is split into one tile-part per
    /// resolution and the progression is resolution-first.
    fn parts_by_resolution(&self) -> bool {
        let resolutions = usize::from(self.header.levels) + 1;
        matches!(self.header.progression, 1 | 2)
            && !self.header.has_coc_or_poc
            && self
                .tiles
                .iter()
                .all(|t| t.len() == resolutions || t.is_empty())
    }

    /// The index array of resolution level `r` whose chunks point into the
    /// source of this codestream, at `url`.
    pub fn array(&self, r: u32, url: &str) -> pyramid::Array {
        let url: std::sync::Arc<str> = url.into();
        let siz = &self.header.siz;
        let comps = siz.components.len() as u64;
        let (w, h) = self.level_size(r);
        let (across, down) = siz.tile_grid();
        // A tile larger than the image decodes to the image's extent: the
        // chunk is no larger (GDAL's block is the image then, too).
        let (tw, th) = reduced(siz.tile_width, siz.tile_height, r);
        let tw = if across == 1 { tw.min(w) } else { tw };
        let th = if down == 1 { th.min(h) } else { th };
        let keep = if self.parts_by_resolution() {
            usize::from(self.header.levels) + 1 - r as usize
        } else {
            usize::MAX
        };
        let refs = self
            .tiles
            .iter()
            .enumerate()
            .filter(|(_, parts)| !parts.is_empty())
            .map(|(t, parts)| {
                let (row, col) = (t as u32 / across, t as u32 % across);
                Ref {
                    index: [0, row.into(), col.into()],
                    url: url.clone(),
                    ranges: parts
                        .iter()
                        .take(keep)
                        .map(|p| (p.offset, p.length))
                        .collect(),
                }
            })
            .collect();
        // GDAL's types: Byte up to 8 bits whatever the sign (signed samples
        // clamped to 0..255, as GDAL copies them), then (U)Int16, (U)Int32.
        let c = &siz.components[0];
        let size = match c.bits {
            0..=8 => 1,
            9..=16 => 2,
            _ => 4,
        };
        let kind = if c.signed && size > 1 { 'i' } else { 'u' };
        let order = if size == 1 { '|' } else { '<' };
        pyramid::Array {
            shape: [comps, h, w],
            chunks: [comps, th, tw],
            dtype: format!("{order}{kind}{size}"),
            codec: json!({
                "id": JPEG2000_CODEC,
                "main_header": base64_encode(&self.header_bytes),
                "resolution_level": r,
            }),
            fill: Value::Null,
            attrs: Map::new(),
            refs,
        }
    }
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `w` and `h` divided by 2^r, rounded up.
fn reduced(w: u32, h: u32, r: u32) -> (u64, u64) {
    let scale = 1u64 << r;
    (u64::from(w).div_ceil(scale), u64::from(h).div_ceil(scale))
}

/// Walks SOT markers from `at` to `end` (the codestream's end).
fn scan_sots(src: &Source, mut at: u64, end: u64, tiles: usize) -> Result<Vec<(u16, TilePart)>> {
    let mut parts = Vec::new();
    while at < end {
        let head = src.read(at, (SOT_LEN as u64).min(end - at))?;
        // OpenJPEG takes the last two bytes for the end marker, whatever
        // they are (GDAL warns "Stream does not end with EOC" and reads on).
        if head.starts_with(&EOC.to_be_bytes()) || head.len() == 2 {
            break;
        }
        if head.len() < SOT_LEN {
            return Err(src.malformed(format!(
                "the codestream ends with {} stray bytes {head:02X?} at byte {at}, after its last \
                 tile-part, where an SOT or EOC marker should be; OpenJPEG stops there \
                 (\"Stream too short, expected SOT\") and GDAL's JP2OpenJPEG driver reads no \
                 pixel of it",
                head.len()
            )));
        }
        let sot = Sot::parse(&head)
            .map_err(|p| src.malformed(format!("codestream tile-part at byte {at}: {p}")))?;
        let length = match u64::from(sot.length) {
            0 => end - at - ends_with_eoc(src, end)?,
            n => n,
        };
        if at + length > end {
            return Err(src.malformed(format!(
                "tile-part {} of tile {} at byte {at} claims {length} bytes, past the end of \
                 the codestream at byte {end}",
                sot.part, sot.tile
            )));
        }
        if parts.len() > tiles.saturating_mul(256) {
            return Err(src.malformed(format!("more than 255 tile-parts per tile at byte {at}")));
        }
        parts.push((sot.tile, TilePart { offset: at, length }));
        at += length;
    }
    Ok(parts)
}

/// 2 if the codestream ending at `end` ends with EOC, else 0.
fn ends_with_eoc(src: &Source, end: u64) -> Result<u64> {
    let tail = src.read(end - 2, 2)?;
    Ok(if tail == EOC.to_be_bytes() { 2 } else { 0 })
}

/// Tile-parts from the TLM markers of the main header.
fn tlm_parts(
    src: &Source,
    header: &MainHeader,
    mut at: u64,
    end: u64,
) -> Result<Vec<(u16, TilePart)>> {
    let mut parts = Vec::with_capacity(header.tlm.len());
    for (i, &(tile, len)) in header.tlm.iter().enumerate() {
        let tile = match tile {
            Some(t) => t,
            None => u16::try_from(i)
                .map_err(|_| src.malformed("TLM lists more than 65535 implicit tiles"))?,
        };
        let length = u64::from(len);
        if length < (SOT_LEN + 2) as u64 || at + length > end {
            return Err(src.malformed(format!(
                "TLM gives tile {tile} a tile-part of {length} bytes at byte {at}, which does \
                 not fit the codestream ending at byte {end}"
            )));
        }
        parts.push((tile, TilePart { offset: at, length }));
        at += length;
    }
    Ok(parts)
}

/// Builds the Kerchunk JSON index of the JPEG 2000 file (`.j2k` codestream
/// or `.jp2`) at `path`, whose chunks are referenced by `url`.
pub fn index_file(path: &str, url: &str) -> Result<crate::builders::writers::built::Built> {
    let src = Source::open(path, "JPEG 2000 file")?;
    let (start, len) = crate::formats::j2k::jp2::locate_codestream(&src)?;
    let cs = Codestream::read(&src, start, len)?;
    let georef = crate::formats::j2k::geo::georef(&src)?.unwrap_or_default();
    let (width, height) = cs.header.siz.image_size();
    let base = [u64::from(height), u64::from(width)];
    let colours = crate::formats::j2k::jp2::colours(&src, cs.header.siz.components.len() as u64)?;
    let palette = colours.as_ref().and_then(|c| c.palette.as_ref());
    let levels = cs
        .levels(palette.is_some())
        .into_iter()
        .map(|r| {
            let mut data = cs.array(r, url);
            if let Some(colours) = &colours {
                let names: Vec<&str> = colours.bands.iter().map(|c| c.name()).collect();
                data.attrs.insert(
                    crate::conventions::attributes::COLOR_ATTRIBUTE.into(),
                    json!(names),
                );
            }
            if let Some(table) = palette {
                data.attrs.insert(
                    crate::conventions::attributes::COLOR_TABLE_ATTRIBUTE.into(),
                    json!(table),
                );
            }
            pyramid::Level {
                attrs: georef.level_attributes(base, [data.shape[1], data.shape[2]]),
                data,
                mask: None,
            }
        })
        .collect();
    let pyramid = Pyramid {
        source: json!(url),
        attrs: georef.root_attributes(base),
        levels,
    };
    let metadata = crate::formats::j2k::jp2::gdal_metadata(&src)?;
    let mut built = pyramid.into_built();
    built.datetime = crate::base::datetime::METADATA_ITEMS
        .iter()
        .filter_map(|name| metadata.iter().find(|(k, _)| k == name))
        .find_map(|(_, v)| crate::base::datetime::parse(v));
    Ok(built)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::j2k::codestream::tests::{header, tile_part};

    /// A codestream of `w` x `h` pixels in `t` x `t` tiles with `levels`
    /// decomposition levels (its tile-parts are not needed for levels).
    fn codestream(w: u32, h: u32, t: u32, levels: u8) -> Codestream {
        let mut bytes = header(w, h, t, 1, levels, &[]);
        bytes.extend(tile_part(0, 0, 1, 1));
        let header = MainHeader::parse(&bytes).unwrap();
        Codestream {
            header_bytes: bytes[..header.len].to_vec(),
            header,
            tiles: Vec::new(),
        }
    }

    #[test]
    fn levels_stop_where_tiles_stop_halving() {
        // 300 x 300 tiles halve twice: levels 0..=2, though 5 are coded.
        assert_eq!(codestream(2000, 2000, 300, 5).levels(false), [0, 1, 2]);
        // 1024 x 1024 tiles halve on until the level is 128 wide.
        assert_eq!(
            codestream(2048, 2048, 1024, 5).levels(false),
            [0, 1, 2, 3, 4]
        );
        assert_eq!(codestream(2048, 2048, 1024, 5).levels(true), [0]);
    }

    #[test]
    fn one_tile_read_by_decode_area_halves_on() {
        // One odd tile over 1024 pixels: GDAL decodes areas, levels go on.
        assert_eq!(
            codestream(1800, 1800, 1800, 11).levels(false),
            [0, 1, 2, 3, 4]
        );
        // One odd tile of at most 1024 pixels: tile by tile, no level.
        assert_eq!(codestream(1001, 1001, 1001, 5).levels(false), [0]);
        // An image smaller than its one tile: decode area.
        assert_eq!(codestream(1001, 1001, 2001, 5).levels(false), [0, 1, 2, 3]);
    }

    #[test]
    fn small_tiles_that_stop_halving_end_the_levels() {
        // 24 x 24 tiles on a 600 x 600 image: GDAL decodes areas, but a
        // level of reduced tiles only holds while they halve.
        assert_eq!(codestream(600, 600, 24, 5).levels(false), [0, 1, 2, 3]);
    }
}
