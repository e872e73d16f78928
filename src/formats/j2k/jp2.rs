//! JP2 boxes (ISO/IEC 15444-1 Annex I): where the codestream is (at the
//! start of a raw `.j2k`, or in the `jp2c` box of a JP2 file), the colour
//! boxes of the header, and the walk the georeferencing boxes are found by.

use crate::base::error::Result;
use crate::conventions::colour::ColorInterp;
use crate::io::source::Source;

/// The JP2 signature box.
const JP2_SIGNATURE: [u8; 12] = [0, 0, 0, 12, b'j', b'P', b' ', b' ', 0x0D, 0x0A, 0x87, 0x0A];
/// Most boxes walked at one level before giving up.
const MAX_BOXES: usize = 4096;

/// One box: its type and where its contents (after the header) are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct JBox {
    /// Box type, e.g. `*b"jp2c"`.
    pub kind: [u8; 4],
    /// Offset of the contents in the source.
    pub start: u64,
    /// Length of the contents.
    pub len: u64,
}

/// True when `src` starts with the JP2 signature box.
pub(crate) fn is_jp2(src: &Source) -> Result<bool> {
    Ok(src.len() >= 12 && src.read(0, 12)? == JP2_SIGNATURE)
}

/// The boxes laid end to end in `start..end` of `src` (the whole file for
/// the top level, a superbox's contents for its children).
///
/// A box whose length runs past `end` ends the walk, as GDAL's box reader
/// stops there: a `jp2c` box is kept, cut at `end` (writers that got the
/// codestream's length wrong), any other such box and what follows it are
/// left out.
pub(crate) fn boxes(src: &Source, start: u64, end: u64) -> Result<Vec<JBox>> {
    let mut out = Vec::new();
    let mut at = start;
    while at + 8 <= end {
        if out.len() >= MAX_BOXES {
            return Err(src.malformed(format!("more than {MAX_BOXES} boxes from byte {start}")));
        }
        let b = src.read(at, 8)?;
        let kind = [b[4], b[5], b[6], b[7]];
        let lbox = u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let (header, length) = match lbox {
            0 => (8, end - at),
            1 if at + 16 <= end => {
                let x = src.read(at + 8, 8)?;
                (16, u64::from_be_bytes(x.try_into().unwrap_or([0; 8])))
            }
            n => (8, n),
        };
        if length < header {
            return Err(src.malformed(format!(
                "box '{}' at byte {at} claims {length} bytes, less than its own header",
                String::from_utf8_lossy(&kind)
            )));
        }
        if length > end - at {
            eprintln!(
                "chunkref: {}: box '{}' at byte {at} claims {length} bytes; only {} are left{}",
                src.path(),
                String::from_utf8_lossy(&kind),
                end - at,
                if &kind == b"jp2c" {
                    "; its codestream is read to the end"
                } else {
                    "; it and what follows are left out"
                }
            );
            if &kind == b"jp2c" {
                out.push(JBox {
                    kind,
                    start: at + header,
                    len: end - at - header,
                });
            }
            break;
        }
        out.push(JBox {
            kind,
            start: at + header,
            len: length - header,
        });
        at += length;
    }
    Ok(out)
}

/// The byte range `(start, length)` of the codestream in `src`.
pub(crate) fn locate_codestream(src: &Source) -> Result<(u64, u64)> {
    let head = src.read(0, 12.min(src.len()))?;
    if head.starts_with(&[0xFF, 0x4F, 0xFF, 0x51]) {
        return Ok((0, src.len()));
    }
    if !is_jp2(src)? {
        return Err(src.malformed(
            "neither a JPEG 2000 codestream (FF4F FF51) nor a JP2 file (signature box)",
        ));
    }
    jp2c_box(src, 0, src.len())
}

/// True when the `len` bytes at `start` of `src` begin with the JP2
/// signature box (a JP2 file embedded in another, as in a NITF image
/// segment).
pub fn is_jp2_at(src: &Source, start: u64, len: u64) -> Result<bool> {
    Ok(len >= 12 && src.read(start, 12)? == JP2_SIGNATURE)
}

/// The byte range `(start, length)` of the codestream box (`jp2c`) of the
/// JP2 file in `start..end` of `src`.
pub fn jp2c_box(src: &Source, start: u64, end: u64) -> Result<(u64, u64)> {
    boxes(src, start, end)?
        .into_iter()
        .find(|b| &b.kind == b"jp2c")
        .map(|b| (b.start, b.len))
        .ok_or_else(|| {
            src.malformed(format!(
                "JP2 file at byte {start} has no contiguous codestream box (jp2c)"
            ))
        })
}

/// The default-domain items (`<MDI key="NAME">value</MDI>` in a
/// `<Metadata>` without a domain) of the GDAL metadata GDAL writes in a
/// top-level `xml ` box (`-co WRITE_METADATA=YES`), as (key, value); none
/// for a raw codestream.
pub(crate) fn gdal_metadata(src: &Source) -> Result<Vec<(String, String)>> {
    if !is_jp2(src)? {
        return Ok(Vec::new());
    }
    let mut items = Vec::new();
    for b in boxes(src, 0, src.len())? {
        if &b.kind != b"xml " {
            continue;
        }
        let text = String::from_utf8_lossy(&src.read(b.start, b.len)?).into_owned();
        let Some(root) = text.find("<GDALMultiDomainMetadata") else {
            continue;
        };
        let mut rest = &text[root..];
        while let Some(start) = rest.find("<Metadata>") {
            rest = &rest[start + "<Metadata>".len()..];
            let end = rest.find("</Metadata>").unwrap_or(rest.len());
            items.extend(mdi_items(&rest[..end]));
            rest = &rest[end..];
        }
    }
    Ok(items)
}

/// The `<MDI key="...">value</MDI>` items of `xml`.
fn mdi_items(xml: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find("<MDI key=\"") {
        rest = &rest[start + "<MDI key=\"".len()..];
        let Some((key, after)) = rest.split_once("\">") else {
            break;
        };
        let Some((value, after)) = after.split_once("</MDI>") else {
            break;
        };
        out.push((key.to_string(), value.trim().to_string()));
        rest = after;
    }
    out
}

/// `colr` enumerated colour spaces: sRGB, greyscale, sYCC, and e-sRGB and
/// ROMM-RGB, which GDAL takes as sRGB.
const ENUM_SRGB: u32 = 16;
const ENUM_GREY: u32 = 17;
const ENUM_SYCC: u32 = 18;
const ENUM_E_SRGB: u32 = 20;
const ENUM_ROMM_RGB: u32 = 21;

/// The colour space of a JP2 header as GDAL's JP2OpenJPEG driver classes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Space {
    Rgb,
    Grey,
    Unknown,
}

/// How GDAL shows the components of a JP2 file: each band's colour
/// interpretation and the colour table of the first band, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Colours {
    /// Colour interpretation of each band.
    pub bands: Vec<ColorInterp>,
    /// The `pclr` palette GDAL gives band 1 as its colour table (entries
    /// `[r, g, b, a]`); GDAL then offers no reduced resolutions.
    pub palette: Option<Vec<[u8; 4]>>,
}

/// The red, green, blue and alpha channels a `cdef` box names, as GDAL's
/// JP2OpenJPEG driver reads it: only a box of one entry per band; an
/// entry naming a channel past the bands, or an association it does not
/// know, ends the reading with what was found so far; type 1 (opacity) is
/// alpha.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Channels {
    rgb: [Option<u64>; 3],
    alpha: Option<u64>,
}

impl Channels {
    const DEFAULT: Channels = Channels {
        rgb: [Some(0), Some(1), Some(2)],
        alpha: None,
    };

    fn from_cdef(d: &[u8], bands: u64) -> Option<Channels> {
        let n = u64::from(u16::from_be_bytes([*d.first()?, *d.get(1)?]));
        if d.len() as u64 != 2 + 6 * bands || n != bands {
            return None;
        }
        let mut out = Channels {
            rgb: [None; 3],
            alpha: Channels::DEFAULT.alpha,
        };
        for e in d[2..].chunks_exact(6) {
            let field = |i: usize| u64::from(u16::from_be_bytes([e[i], e[i + 1]]));
            let (channel, kind, assoc) = (field(0), field(2), field(4));
            if channel >= bands {
                break;
            }
            match (kind, assoc) {
                (0, 1..=3) => out.rgb[assoc as usize - 1] = Some(channel),
                (0, a) if a > bands && a != 65535 => break,
                (1, _) => out.alpha = Some(channel),
                _ => {}
            }
        }
        Some(out)
    }
}

/// A `pclr` box as GDAL takes it for a colour table: at most 256 entries of
/// 3 or 4 unsigned 8-bit columns, the box exactly that long.
fn palette(d: &[u8]) -> Option<Vec<[u8; 4]>> {
    if d.len() < 3 {
        return None;
    }
    let entries = usize::from(u16::from_be_bytes([d[0], d[1]]));
    let columns = usize::from(d[2]);
    if entries > 256
        || !matches!(columns, 3 | 4)
        || d.len() != 3 + columns + columns * entries
        || d[3..3 + columns].iter().any(|&b| b != 7)
    {
        return None;
    }
    let table = d[3 + columns..]
        .chunks_exact(columns)
        .map(|e| [e[0], e[1], e[2], if columns == 4 { e[3] } else { 255 }])
        .collect();
    Some(table)
}

/// GDAL's colour interpretation of each of the `bands` components of a
/// JP2 file, from the boxes of its header box as GDAL's JP2OpenJPEG driver
/// reads them: the last enumerated `colr` box gives the colour space (sRGB,
/// sYCC, e-sRGB and ROMM-RGB make bands red, green and blue; greyscale makes
/// one or two bands gray), `cdef` says which channel is red, green, blue or
/// alpha, and a `pclr` palette makes band 1 a palette band with a colour
/// table. None for a raw codestream.
pub(crate) fn colours(src: &Source, bands: u64) -> Result<Option<Colours>> {
    if !is_jp2(src)? {
        return Ok(None);
    }
    colours_in(src, 0, src.len(), bands)
}

/// [`colours`] of the JP2 file in `start..end` of `src` (None when it has
/// no header box).
pub fn colours_in(src: &Source, start: u64, end: u64, bands: u64) -> Result<Option<Colours>> {
    let Some(header) = boxes(src, start, end)?
        .into_iter()
        .find(|b| &b.kind == b"jp2h")
    else {
        return Ok(None);
    };
    let mut space = Space::Unknown;
    let mut channels = Channels::DEFAULT;
    let mut table = None;
    for b in boxes(src, header.start, header.start + header.len)? {
        match &b.kind {
            b"colr" if b.len == 7 => {
                let c = src.read(b.start, 7)?;
                if c[0] == 1 {
                    space = match u32::from_be_bytes([c[3], c[4], c[5], c[6]]) {
                        ENUM_SRGB | ENUM_SYCC | ENUM_E_SRGB | ENUM_ROMM_RGB => Space::Rgb,
                        ENUM_GREY => Space::Grey,
                        _ => Space::Unknown,
                    };
                }
            }
            b"cdef" => {
                if let Some(c) = Channels::from_cdef(&src.read(b.start, b.len)?, bands) {
                    channels = c;
                }
            }
            b"pclr" if table.is_none() && (3..=2 + 1 + 4 + 4 * 256).contains(&b.len) => {
                table = palette(&src.read(b.start, b.len)?);
            }
            _ => {}
        }
    }
    let rgb = [ColorInterp::Red, ColorInterp::Green, ColorInterp::Blue];
    let interp = (0..bands)
        .map(|band| {
            if band == 0 && table.is_some() {
                return ColorInterp::Palette;
            }
            if channels.alpha == Some(band) {
                return ColorInterp::Alpha;
            }
            match space {
                Space::Grey if bands <= 2 => ColorInterp::Gray,
                Space::Rgb => channels
                    .rgb
                    .iter()
                    .position(|&c| c == Some(band))
                    .map_or(ColorInterp::Undefined, |i| rgb[i]),
                _ => ColorInterp::Undefined,
            }
        })
        .collect();
    Ok(Some(Colours {
        bands: interp,
        palette: table,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_gdal_metadata_items() {
        let xml = r#"<Metadata>
            <MDI key="ACQUISITIONDATETIME">2021-03-09</MDI>
            <MDI key="TIFFTAG_DATETIME"> 2021:03:08 </MDI><MDI key="broken">x"#;
        assert_eq!(
            mdi_items(xml),
            [
                ("ACQUISITIONDATETIME".to_string(), "2021-03-09".to_string()),
                ("TIFFTAG_DATETIME".to_string(), "2021:03:08".to_string())
            ]
        );
    }
}
