//! JPEG 2000 codestream structure (ISO/IEC 15444-1 Annex A): the main
//! header's SIZ, COD and TLM markers, and the SOT headers of tile-parts.
//!
//! Everything here works on bytes already read and never trusts a length:
//! the indexer uses it to find tiles, and the `jpeg2000` codec uses it to
//! check what it hands to OpenJPEG.

use std::fmt;

/// Start of codestream.
pub const SOC: u16 = 0xFF4F;
/// Image and tile size.
const SIZ: u16 = 0xFF51;
/// Coding style default.
const COD: u16 = 0xFF52;
/// Coding style of a component.
const COC: u16 = 0xFF53;
/// Tile-part lengths.
const TLM: u16 = 0xFF55;
/// Progression order change.
const POC: u16 = 0xFF5F;
/// Start of tile-part.
pub const SOT: u16 = 0xFF90;
/// End of codestream.
pub const EOC: u16 = 0xFFD9;
/// Bytes of an SOT marker segment (marker included).
pub const SOT_LEN: usize = 12;
/// Most components a codestream may declare (Csiz is at most 16384).
const MAX_COMPONENTS: usize = 16384;

/// Why bytes are not a codestream we can use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The main header goes on past the bytes given: read at least this many.
    NeedMore(usize),
    /// The bytes are not a valid codestream: the reason.
    Invalid(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::NeedMore(n) => write!(f, "main header truncated (needs {n} bytes)"),
            Problem::Invalid(reason) => f.write_str(reason),
        }
    }
}

fn invalid(reason: impl Into<String>) -> Problem {
    Problem::Invalid(reason.into())
}

/// What codestreams whose sampling [`Siz::sampling_readable`] refuses are
/// refused as.
pub const SUB_SAMPLED: &str =
    "JPEG 2000 codestreams with sub-sampled components other than 8-bit YCbCr 4:2:0 of even \
     width and height (GDAL's JP2OpenJPEG driver does not read them either)";

/// One image component (band) as SIZ declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Component {
    /// Bit depth, 1 to 38.
    pub bits: u8,
    /// Whether samples are signed.
    pub signed: bool,
    /// Horizontal and vertical sub-sampling.
    pub dx: u8,
    /// See `dx`.
    pub dy: u8,
}

/// The SIZ marker: image and tile geometry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Siz {
    /// Reference grid width and height (Xsiz, Ysiz).
    pub width: u32,
    /// See `width`.
    pub height: u32,
    /// Image offset on the reference grid (XOsiz, YOsiz).
    pub x_offset: u32,
    /// See `x_offset`.
    pub y_offset: u32,
    /// Nominal tile size (XTsiz, YTsiz).
    pub tile_width: u32,
    /// See `tile_width`.
    pub tile_height: u32,
    /// Tile grid offset (XTOsiz, YTOsiz).
    pub tile_x_offset: u32,
    /// See `tile_x_offset`.
    pub tile_y_offset: u32,
    /// The components.
    pub components: Vec<Component>,
}

impl Siz {
    /// Whether the components are YCbCr 4:2:0 as GDAL's JP2OpenJPEG reads
    /// them: three 8-bit unsigned components, the second and third
    /// sub-sampled by 2 both ways, on an image of even width and height.
    pub fn is_ycbcr420(&self) -> bool {
        let c = &self.components;
        c.len() == 3
            && self.width.is_multiple_of(2)
            && self.height.is_multiple_of(2)
            && c.iter().all(|c| c.bits == 8 && !c.signed)
            && (c[0].dx, c[0].dy) == (1, 1)
            && c[1..].iter().all(|c| (c.dx, c.dy) == (2, 2))
    }

    /// Whether GDAL's JP2OpenJPEG driver reads the components' sampling:
    /// none sub-sampled, or YCbCr 4:2:0.
    pub fn sampling_readable(&self) -> bool {
        self.is_ycbcr420() || self.components.iter().all(|c| (c.dx, c.dy) == (1, 1))
    }

    /// Width and height of the image: the reference grid from its origin
    /// (XOsiz, YOsiz) on.
    pub fn image_size(&self) -> (u32, u32) {
        (self.width - self.x_offset, self.height - self.y_offset)
    }

    /// Whether the tiles are blocks of the image: along each axis the tile
    /// grid starts where the image does (XTOsiz = XOsiz, YTOsiz = YOsiz) or
    /// one tile spans the whole image. Otherwise the first row or column of
    /// tiles is cut short, which GDAL's JP2OpenJPEG driver does not read
    /// either.
    pub fn tiles_are_blocks(&self) -> bool {
        let (across, down) = self.tile_grid();
        (self.tile_x_offset == self.x_offset || across == 1)
            && (self.tile_y_offset == self.y_offset || down == 1)
    }

    /// Tiles across and down.
    pub fn tile_grid(&self) -> (u32, u32) {
        (
            (self.width - self.tile_x_offset).div_ceil(self.tile_width),
            (self.height - self.tile_y_offset).div_ceil(self.tile_height),
        )
    }
}

/// The main header of a codestream, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MainHeader {
    /// Bytes from SOC up to (not including) the first SOT.
    pub len: usize,
    /// Image and tile geometry.
    pub siz: Siz,
    /// Progression order (0 LRCP, 1 RLCP, 2 RPCL, 3 PCRL, 4 CPRL).
    pub progression: u8,
    /// Decomposition levels of the default coding style.
    pub levels: u8,
    /// Whether COC or POC markers may change resolutions or progression.
    pub has_coc_or_poc: bool,
    /// Tile-part lengths from TLM markers: (tile index if given, Ptlm).
    pub tlm: Vec<(Option<u16>, u32)>,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl MainHeader {
    /// Parses the main header at the start of `bytes` (which begin with SOC).
    pub fn parse(bytes: &[u8]) -> Result<MainHeader, Problem> {
        if bytes.len() < 2 {
            return Err(Problem::NeedMore(2));
        }
        if be16(bytes, 0) != SOC {
            return Err(invalid(
                "no SOC marker (FF4F) at the start of the codestream",
            ));
        }
        let (mut siz, mut cod, mut has_coc_or_poc, mut tlm) = (None, None, false, Vec::new());
        let mut at = 2;
        loop {
            if bytes.len() < at + 4 {
                return Err(Problem::NeedMore(at + 4));
            }
            let marker = be16(bytes, at);
            if marker == SOT {
                break;
            }
            if marker >> 8 != 0xFF || marker < 0xFF30 {
                return Err(invalid(format!(
                    "expected a marker at byte {at} of the main header, found {marker:04X}"
                )));
            }
            let len = usize::from(be16(bytes, at + 2));
            if len < 2 {
                return Err(invalid(format!("marker {marker:04X} has length {len}")));
            }
            let end = at + 2 + len;
            if bytes.len() < end {
                return Err(Problem::NeedMore(end + 4));
            }
            let body = &bytes[at + 4..end];
            match marker {
                SIZ => siz = Some(parse_siz(body)?),
                COD => cod = Some(parse_cod(body)?),
                COC | POC => has_coc_or_poc = true,
                TLM => parse_tlm(body, &mut tlm)?,
                _ => {}
            }
            at = end;
        }
        let siz = siz.ok_or_else(|| invalid("the main header has no SIZ marker"))?;
        let (progression, levels) =
            cod.ok_or_else(|| invalid("the main header has no COD marker"))?;
        Ok(MainHeader {
            len: at,
            siz,
            progression,
            levels,
            has_coc_or_poc,
            tlm,
        })
    }
}

/// The main header `bytes` (as [`MainHeader::parse`] accepted them, up to
/// `header.len`) without its TLM markers: their tile-part lengths describe
/// the whole codestream, not one tile decoded on its own, and OpenJPEG would
/// follow them.
pub fn without_tlm(bytes: &[u8], header: &MainHeader) -> Vec<u8> {
    let mut out = bytes[..2].to_vec();
    let mut at = 2;
    while at < header.len {
        let end = at + 2 + usize::from(be16(bytes, at + 2));
        if be16(bytes, at) != TLM {
            out.extend_from_slice(&bytes[at..end]);
        }
        at = end;
    }
    out
}

/// Most tiles a codestream may have (Isot is 16 bits; 65,535 is reserved).
pub const MAX_TILES: u64 = 65_535;

fn parse_siz(b: &[u8]) -> Result<Siz, Problem> {
    if b.len() < 36 {
        return Err(invalid(format!("SIZ marker of {} bytes", b.len() + 2)));
    }
    let n = usize::from(be16(b, 34));
    if n == 0 || n > MAX_COMPONENTS || b.len() < 36 + 3 * n {
        return Err(invalid(format!(
            "SIZ declares {n} components in {} bytes",
            b.len() + 2
        )));
    }
    let components = (0..n)
        .map(|i| {
            let s = b[36 + 3 * i];
            Component {
                bits: (s & 0x7F) + 1,
                signed: s & 0x80 != 0,
                dx: b[37 + 3 * i],
                dy: b[38 + 3 * i],
            }
        })
        .collect::<Vec<_>>();
    let siz = Siz {
        width: be32(b, 2),
        height: be32(b, 6),
        x_offset: be32(b, 10),
        y_offset: be32(b, 14),
        tile_width: be32(b, 18),
        tile_height: be32(b, 22),
        tile_x_offset: be32(b, 26),
        tile_y_offset: be32(b, 30),
        components,
    };
    let bad_geometry = siz.x_offset >= siz.width
        || siz.y_offset >= siz.height
        || siz.tile_width == 0
        || siz.tile_height == 0
        || siz.tile_x_offset > siz.x_offset
        || siz.tile_y_offset > siz.y_offset
        || u64::from(siz.tile_x_offset) + u64::from(siz.tile_width) <= u64::from(siz.x_offset)
        || u64::from(siz.tile_y_offset) + u64::from(siz.tile_height) <= u64::from(siz.y_offset);
    if bad_geometry {
        return Err(invalid(format!(
            "SIZ geometry is inconsistent: image {}x{} at ({}, {}), tiles {}x{} at ({}, {})",
            siz.width,
            siz.height,
            siz.x_offset,
            siz.y_offset,
            siz.tile_width,
            siz.tile_height,
            siz.tile_x_offset,
            siz.tile_y_offset
        )));
    }
    // Isot, a tile's number in its SOT marker, is 16 bits: a codestream has
    // at most 65,535 tiles (OpenJPEG refuses more too). Checked before
    // anything is sized by the tile count.
    let (across, down) = siz.tile_grid();
    let tiles = u64::from(across) * u64::from(down);
    if tiles > MAX_TILES {
        return Err(invalid(format!(
            "SIZ declares {across} x {down} = {tiles} tiles of {}x{} (a codestream has at most \
             {MAX_TILES})",
            siz.tile_width, siz.tile_height
        )));
    }
    if let Some(c) = siz
        .components
        .iter()
        .find(|c| c.bits > 38 || c.dx == 0 || c.dy == 0)
    {
        return Err(invalid(format!("SIZ component {c:?} is invalid")));
    }
    Ok(siz)
}

fn parse_cod(b: &[u8]) -> Result<(u8, u8), Problem> {
    if b.len() < 10 {
        return Err(invalid(format!("COD marker of {} bytes", b.len() + 2)));
    }
    let (progression, levels) = (b[1], b[5]);
    if progression > 4 || levels > 32 {
        return Err(invalid(format!(
            "COD has progression order {progression} and {levels} decomposition levels"
        )));
    }
    Ok((progression, levels))
}

fn parse_tlm(b: &[u8], out: &mut Vec<(Option<u16>, u32)>) -> Result<(), Problem> {
    if b.len() < 2 {
        return Err(invalid("TLM marker too short"));
    }
    let st = usize::from((b[1] >> 4) & 3);
    let sp = if b[1] & 0x40 != 0 { 4 } else { 2 };
    if st == 3 {
        return Err(invalid("TLM marker with ST = 3"));
    }
    let entry = st + sp;
    let body = &b[2..];
    if !body.len().is_multiple_of(entry) {
        return Err(invalid(format!(
            "TLM body of {} bytes is not a whole number of {entry}-byte entries",
            body.len()
        )));
    }
    for e in body.chunks_exact(entry) {
        let tile = match st {
            0 => None,
            1 => Some(u16::from(e[0])),
            _ => Some(be16(e, 0)),
        };
        let len = if sp == 4 {
            be32(e, st)
        } else {
            u32::from(be16(e, st))
        };
        out.push((tile, len));
    }
    Ok(())
}

/// The SOT marker segment of a tile-part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sot {
    /// Tile index (Isot).
    pub tile: u16,
    /// Tile-part length from the SOT marker on (Psot; 0 = up to EOC).
    pub length: u32,
    /// Tile-part index within its tile (TPsot).
    pub part: u8,
    /// Number of tile-parts of the tile, 0 if not known (TNsot).
    pub parts: u8,
}

impl Sot {
    /// Parses the SOT marker segment at the start of `b` (at least
    /// [`SOT_LEN`] bytes).
    pub fn parse(b: &[u8]) -> Result<Sot, Problem> {
        if b.len() < SOT_LEN {
            return Err(invalid(format!(
                "{} bytes where an SOT marker segment ({SOT_LEN} bytes) should be",
                b.len()
            )));
        }
        if be16(b, 0) != SOT || be16(b, 2) != 10 {
            return Err(invalid(format!(
                "expected an SOT marker (FF90, length 10), found {:02X?}",
                &b[..4]
            )));
        }
        let sot = Sot {
            tile: be16(b, 4),
            length: be32(b, 6),
            part: b[10],
            parts: b[11],
        };
        if sot.length != 0 && (sot.length as usize) < SOT_LEN + 2 {
            return Err(invalid(format!(
                "tile-part of tile {} claims {} bytes, fewer than its headers",
                sot.tile, sot.length
            )));
        }
        Ok(sot)
    }
}

/// Checks that `data` is whole tile-parts of one tile, back to back, and
/// returns that tile's index.
pub fn check_tile_parts(data: &[u8]) -> Result<u16, Problem> {
    let mut at = 0;
    let mut tile = None;
    while at < data.len() {
        let sot = Sot::parse(&data[at..])?;
        if *tile.get_or_insert(sot.tile) != sot.tile {
            return Err(invalid(format!(
                "tile-parts of tiles {} and {} in one chunk",
                tile.unwrap_or(0),
                sot.tile
            )));
        }
        let len = match sot.length {
            0 => data.len() - at,
            n => n as usize,
        };
        if at + len > data.len() {
            return Err(invalid(format!(
                "tile-part {} of tile {} claims {len} bytes but only {} are left",
                sot.part,
                sot.tile,
                data.len() - at
            )));
        }
        at += len;
    }
    tile.ok_or_else(|| invalid("no tile-part data"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A main header: SOC, SIZ (`w` x `h`, tiles `t` x `t`, `comps` 8-bit
    /// components), COD (RPCL, `levels`), and optional extra marker bytes.
    pub(crate) fn header(w: u32, h: u32, t: u32, comps: u16, levels: u8, extra: &[u8]) -> Vec<u8> {
        let mut b = vec![0xFF, 0x4F, 0xFF, 0x51];
        b.extend((38 + 3 * comps).to_be_bytes());
        b.extend([0, 0]);
        for v in [w, h, 0, 0, t, t, 0, 0] {
            b.extend(v.to_be_bytes());
        }
        b.extend(comps.to_be_bytes());
        for _ in 0..comps {
            b.extend([7, 1, 1]);
        }
        b.extend([0xFF, 0x52, 0, 12, 0, 2, 0, 1, 0, levels, 4, 4, 0, 0]);
        b.extend_from_slice(extra);
        b
    }

    /// A tile-part of `body_len` payload bytes.
    pub(crate) fn tile_part(tile: u16, part: u8, parts: u8, body_len: usize) -> Vec<u8> {
        let mut b = vec![0xFF, 0x90, 0, 10];
        b.extend(tile.to_be_bytes());
        b.extend(((SOT_LEN + 2 + body_len) as u32).to_be_bytes());
        b.extend([part, parts, 0xFF, 0x93]);
        b.extend(std::iter::repeat_n(0xAB, body_len));
        b
    }

    #[test]
    fn tile_counts_past_the_format_limit_are_refused_before_allocation() {
        // 65,536 x 65,536 tiles of 1x1 (about 4.3 billion): the header that
        // made `chunkref index` ask for 103 GB.
        let with_tile = |w: u32, h: u32| {
            let mut b = header(w, h, 1, 1, 0, &[]);
            b.extend(tile_part(0, 0, 1, 1));
            MainHeader::parse(&b)
        };
        let e = with_tile(65_536, 65_536).unwrap_err().to_string();
        assert!(e.contains("4294967296 tiles"), "{e}");
        assert!(with_tile(256, 256).is_err());
        // 65,535 x 65,537 tiles: a count that fits 32 bits (103 GB of lists).
        let e = with_tile(65_535, 65_537).unwrap_err().to_string();
        assert!(e.contains("4294967295 tiles"), "{e}");
        // 255 x 257 = 65,535 tiles: the most there may be.
        let ok = with_tile(255, 257);
        assert!(ok.is_ok(), "{ok:?}");
    }

    #[test]
    fn main_header_geometry_and_tlm() {
        let tlm = [0xFF, 0x55, 0, 10, 0, 0x60, 0, 1, 0, 0, 0, 30];
        let mut bytes = header(300, 200, 128, 3, 5, &tlm);
        let len = bytes.len();
        bytes.extend(tile_part(0, 0, 1, 16));
        let h = MainHeader::parse(&bytes).unwrap();
        assert_eq!(h.len, len);
        assert_eq!(
            (h.siz.width, h.siz.height, h.siz.tile_width),
            (300, 200, 128)
        );
        assert_eq!(h.siz.tile_grid(), (3, 2));
        assert_eq!(h.siz.components.len(), 3);
        assert_eq!(h.siz.components[0].bits, 8);
        assert_eq!((h.progression, h.levels), (2, 5));
        assert_eq!(h.tlm, vec![(Some(1), 30)]);
        assert!(!h.has_coc_or_poc);
        assert_eq!(without_tlm(&bytes, &h), header(300, 200, 128, 3, 5, &[]));
    }

    #[test]
    fn short_headers_ask_for_more() {
        let bytes = header(300, 200, 128, 3, 5, &[]);
        assert_eq!(
            MainHeader::parse(&bytes[..20]),
            Err(Problem::NeedMore(bytes.len() - 14 + 4))
        );
        assert!(matches!(
            MainHeader::parse(&bytes),
            Err(Problem::NeedMore(_))
        ));
    }

    #[test]
    fn bad_headers_are_invalid() {
        let mut bytes = header(300, 200, 0, 3, 5, &[]);
        bytes.extend(tile_part(0, 0, 1, 1));
        let err = MainHeader::parse(&bytes).unwrap_err();
        assert!(err.to_string().contains("inconsistent"), "{err}");
        assert!(MainHeader::parse(b"\xFF\xD8\xFF\xE0").is_err());
        let mut no_cod = header(8, 8, 8, 1, 0, &[]);
        no_cod.truncate(no_cod.len() - 14);
        no_cod.extend(tile_part(0, 0, 1, 1));
        let err = MainHeader::parse(&no_cod).unwrap_err();
        assert!(err.to_string().contains("no COD"), "{err}");
    }

    #[test]
    fn tile_parts_are_checked() {
        let two = [tile_part(4, 0, 2, 10), tile_part(4, 1, 2, 3)].concat();
        assert_eq!(check_tile_parts(&two), Ok(4));
        let mixed = [tile_part(4, 0, 2, 10), tile_part(5, 0, 1, 3)].concat();
        assert!(check_tile_parts(&mixed)
            .unwrap_err()
            .to_string()
            .contains("tiles 4 and 5"));
        let short = &two[..two.len() - 1];
        assert!(check_tile_parts(short)
            .unwrap_err()
            .to_string()
            .contains("claims"));
        assert!(check_tile_parts(&[0xFF, 0x90, 0, 9]).is_err());
        assert!(check_tile_parts(&[]).is_err());
    }
}
