//! JP2 boxes (ISO/IEC 15444-1 Annex I): where the codestream is (at the
//! start of a raw `.j2k`, or in the `jp2c` box of a JP2 file), the colour
//! boxes of the header, and the walk the georeferencing boxes are found by.

use crate::error::Result;
use crate::georef::band::ColorInterp;
use crate::source::Source;

/// The JP2 signature box.
const JP2_SIGNATURE: [u8; 12] = [0, 0, 0, 12, b'j', b'P', b' ', b' ', 0x0D, 0x0A, 0x87, 0x0A];
/// Most boxes walked at one level before giving up.
const MAX_BOXES: usize = 4096;

/// One box: its type and where its contents (after the header) are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct JBox {
    /// Box type, e.g. `*b"jp2c"`.
    pub kind: [u8; 4],
    /// Offset of the contents in the source.
    pub start: u64,
    /// Length of the contents.
    pub len: u64,
}

/// True when `src` starts with the JP2 signature box.
pub(super) fn is_jp2(src: &Source) -> Result<bool> {
    Ok(src.len() >= 12 && src.read(0, 12)? == JP2_SIGNATURE)
}

/// The boxes laid end to end in `start..end` of `src` (the whole file for
/// the top level, a superbox's contents for its children).
pub(super) fn boxes(src: &Source, start: u64, end: u64) -> Result<Vec<JBox>> {
    let mut out = Vec::new();
    let mut at = start;
    while at + 8 <= end {
        if out.len() >= MAX_BOXES {
            return Err(src.malformed(format!("more than {MAX_BOXES} boxes from byte {start}")));
        }
        let b = src.read(at, 8)?;
        let lbox = u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let (header, length) = match lbox {
            0 => (8, end - at),
            1 if at + 16 <= end => {
                let x = src.read(at + 8, 8)?;
                (16, u64::from_be_bytes(x.try_into().unwrap_or([0; 8])))
            }
            n => (8, n),
        };
        if length < header || length > end - at {
            return Err(src.malformed(format!(
                "box '{}' at byte {at} claims {length} bytes; only {} are left",
                String::from_utf8_lossy(&b[4..8]),
                end - at
            )));
        }
        out.push(JBox {
            kind: [b[4], b[5], b[6], b[7]],
            start: at + header,
            len: length - header,
        });
        at += length;
    }
    Ok(out)
}

/// The byte range `(start, length)` of the codestream in `src`.
pub(super) fn locate_codestream(src: &Source) -> Result<(u64, u64)> {
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
pub(super) fn gdal_metadata(src: &Source) -> Result<Vec<(String, String)>> {
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

/// `colr` enumerated colour spaces GDAL maps to RGB (sRGB, sYCC) and gray.
const ENUM_SRGB: u32 = 16;
const ENUM_GREY: u32 = 17;
const ENUM_SYCC: u32 = 18;

/// GDAL's colour interpretation of each of the `bands` components of a
/// JP2 file, from the `colr` (enumerated colour space) and `cdef` (opacity
/// channels) boxes of its header box, as GDAL's JP2OpenJPEG driver reports
/// them: sRGB/sYCC make the first three bands red, green, blue; greyscale
/// makes one or two bands gray; opacity channels are alpha; the rest is
/// undefined. None for a raw codestream.
pub(super) fn colour_interpretation(src: &Source, bands: u64) -> Result<Option<Vec<ColorInterp>>> {
    if !is_jp2(src)? {
        return Ok(None);
    }
    colour_interpretation_in(src, 0, src.len(), bands).map(Some)
}

/// [`colour_interpretation`] of the JP2 file in `start..end` of `src`
/// (all undefined when it has no header box).
pub fn colour_interpretation_in(
    src: &Source,
    start: u64,
    end: u64,
    bands: u64,
) -> Result<Vec<ColorInterp>> {
    let Some(header) = boxes(src, start, end)?
        .into_iter()
        .find(|b| &b.kind == b"jp2h")
    else {
        return Ok(vec![ColorInterp::Undefined; bands as usize]);
    };
    let mut space = None;
    let mut alpha = Vec::new();
    for b in boxes(src, header.start, header.start + header.len)? {
        match &b.kind {
            b"colr" if b.len >= 7 && space.is_none() => {
                let c = src.read(b.start, 7)?;
                if c[0] == 1 {
                    space = Some(u32::from_be_bytes([c[3], c[4], c[5], c[6]]));
                }
            }
            b"cdef" if b.len >= 2 && b.len <= 2 + 6 * 65535 => {
                let d = src.read(b.start, b.len)?;
                for e in d[2..].chunks_exact(6) {
                    let field = |i: usize| u16::from_be_bytes([e[i], e[i + 1]]);
                    if matches!(field(2), 1 | 2) && field(4) == 0 {
                        alpha.push(u64::from(field(0)));
                    }
                }
            }
            _ => {}
        }
    }
    let rgb = [ColorInterp::Red, ColorInterp::Green, ColorInterp::Blue];
    Ok((0..bands)
        .map(|band| match space {
            _ if alpha.contains(&band) => ColorInterp::Alpha,
            Some(ENUM_GREY) if bands <= 2 => ColorInterp::Gray,
            Some(ENUM_SRGB | ENUM_SYCC) if band < 3 && bands >= 3 => rgb[band as usize],
            _ => ColorInterp::Undefined,
        })
        .collect())
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
