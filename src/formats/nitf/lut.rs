//! Colour tables and nodata of an image segment as GDAL's NITF driver
//! derives them from the band look-up tables (LUTs) of the image subheader
//! and the pad pixel of a masked image (nitfimage.c: NITFImageAccess;
//! nitfrasterband.cpp: NITFMakeColorTable).
//!
//! - Nodata: the pad pixel of a masked image (IC = NM or Mx) when its code
//!   is 8 bits long; else, for one band of 8 bits whose LUT has fewer than
//!   255 entries, the entry after the last (216 for 217 entries whose last
//!   is black, that entry itself).
//! - A band's colour table: its LUT entries (three LUTs are red, green and
//!   blue; one is gray; two of a MONO image are the high and low bytes of
//!   16-bit grays scaled to 8 bits), the nodata entry transparent; without
//!   a LUT, black and white for 1-bit samples.
//!
//! GDAL shows neither for images it hands to its JPEG driver whole (IC = C3
//! in one block), and for JPEG 2000 images (C8 / M8) only the colour table
//! of one band of IREP `RGB/LUT`.

use serde_json::{json, Map, Value};

use super::header::Image;
use crate::conventions::attributes::{COLOR_ATTRIBUTE, COLOR_TABLE_ATTRIBUTE};
use crate::conventions::colour::ColorInterp;

/// Most LUT entries GDAL keeps.
const MAX_ENTRIES: usize = 256;
/// LUT length below which GDAL adds a transparent nodata entry.
const NODATA_BELOW: usize = 255;
/// The LUT length GDAL reads as a CADRG table whose last entry may be the
/// nodata one.
const CADRG_ENTRIES: usize = 217;

/// Which of GDAL's band kinds reads an image segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reader {
    /// GDAL's own NITF bands: colour tables and nodata.
    Nitf,
    /// A JPEG 2000 dataset behind the NITF one: only the `RGB/LUT` table.
    Jpeg2000,
    /// A whole JPEG stream read by GDAL's JPEG driver: neither.
    Jpeg,
}

impl Reader {
    /// The reader GDAL uses for image `img`.
    pub(crate) fn of(img: &Image) -> Reader {
        match img.ic.as_str() {
            "C8" | "M8" => Reader::Jpeg2000,
            "C3" if img.blocks_across == 1 && img.blocks_down == 1 => Reader::Jpeg,
            _ => Reader::Nitf,
        }
    }
}

/// The pad pixel of a masked image: its code's length in bits and bytes.
#[derive(Debug, Clone)]
pub(crate) struct Pad {
    /// TPXCDLNTH.
    pub bits: u64,
    /// TPXCD (its bytes, `bits` rounded up to whole bytes).
    pub code: Vec<u8>,
}

/// The nodata value GDAL reports for image `img` whose mask table has pad
/// pixel `pad`.
pub(crate) fn nodata(img: &Image, pad: Option<&Pad>) -> Option<u8> {
    if Reader::of(img) != Reader::Nitf {
        return None;
    }
    if let Some(p) = pad.filter(|p| p.bits == 8) {
        return p.code.first().copied();
    }
    lut_nodata(img)
}

/// Nodata from the LUT of a one-band 8-bit image (GDAL's fix for absent
/// CADRG subblocks).
fn lut_nodata(img: &Image) -> Option<u8> {
    if img.luts.len() != 1 || img.nbpp != 8 {
        return None;
    }
    let tables = img.luts[0].first()?;
    let n = tables.len().min(MAX_ENTRIES);
    if n >= NODATA_BELOW {
        return None;
    }
    let rgb = rgb(img, 0)?;
    if n == CADRG_ENTRIES && rgb[n - 1] == [0, 0, 0] {
        return Some((n - 1) as u8);
    }
    Some(n as u8)
}

/// The entries (red, green, blue) of band `band`'s LUTs, None without.
fn rgb(img: &Image, band: usize) -> Option<Vec<[u8; 3]>> {
    let tables = img.luts.get(band).filter(|t| !t.is_empty())?;
    let n = tables[0].len().min(MAX_ENTRIES);
    let at = |t: usize, i: usize| tables.get(t).and_then(|l| l.get(i)).copied().unwrap_or(0);
    let rep = img.band_reps[band].to_ascii_uppercase();
    let entries = match tables.len() {
        3 => (0..n).map(|i| [at(0, i), at(1, i), at(2, i)]).collect(),
        2 if img.irep.to_ascii_uppercase().starts_with("MONO")
            && (rep.starts_with('M') || rep.starts_with("LU")) =>
        {
            (0..n)
                .map(|i| sixteen_bit_gray(at(0, i), at(1, i), i))
                .collect()
        }
        _ => (0..n).map(|i| [at(0, i); 3]).collect(),
    };
    Some(entries)
}

/// Entry `i` of a MONO image's two LUTs, high and low bytes of a 16-bit
/// gray scaled to 8 bits, as GDAL computes it on a little-endian machine
/// (bytes swapped, entry 255 left as read, its blue 0).
fn sixteen_bit_gray(high: u8, low: u8, i: usize) -> [u8; 3] {
    if i == MAX_ENTRIES - 1 {
        return [high, low, 0];
    }
    let value = u16::from_le_bytes([high, low]);
    let v = (f64::from(value) * (255.0 / 65535.0)).ceil() as u8;
    [v; 3]
}

/// The colour table GDAL gives band `band` of image `img` whose nodata is
/// `nodata`, as `[r, g, b, a]` entries.
fn table(img: &Image, band: usize, nodata: Option<u8>) -> Option<Vec<[u8; 4]>> {
    match Reader::of(img) {
        Reader::Jpeg => return None,
        Reader::Jpeg2000 if !(img.irep.eq_ignore_ascii_case("RGB/LUT") && img.luts.len() == 1) => {
            return None
        }
        _ => {}
    }
    let Some(entries) = rgb(img, band).filter(|e| !e.is_empty()) else {
        return (img.nbpp == 1 && Reader::of(img) == Reader::Nitf)
            .then(|| vec![[0, 0, 0, 255], [255, 255, 255, 255]]);
    };
    let mut table: Vec<[u8; 4]> = entries.iter().map(|&[r, g, b]| [r, g, b, 255]).collect();
    if let Some(v) = nodata {
        let v = usize::from(v);
        if table.len() <= v {
            table.resize(v + 1, [0; 4]);
        }
        table[v] = [0; 4];
    }
    Some(table)
}

/// Marks as palette bands, in the colour attributes `attrs` of image
/// `img` (see [`super::colour`]), the bands GDAL gives a colour table, and
/// adds the table. The array's one table is the first band's: bands whose
/// table differs keep their colour interpretation (`warn` says so).
pub(crate) fn apply(
    img: &Image,
    nodata: Option<u8>,
    attrs: &mut Map<String, Value>,
    warn: impl Fn(&str),
) {
    let tables: Vec<_> = (0..img.band_reps.len())
        .map(|b| table(img, b, nodata))
        .collect();
    let Some(first) = tables.iter().flatten().next().cloned() else {
        return;
    };
    let Some(Value::Array(names)) = attrs.get_mut(COLOR_ATTRIBUTE) else {
        return;
    };
    for (b, t) in tables.iter().enumerate() {
        match t {
            Some(t) if *t == first => {
                if let Some(name) = names.get_mut(b) {
                    *name = json!(ColorInterp::Palette.name());
                }
            }
            Some(_) => warn(&format!(
                "band {} has a colour table of its own, which an index of one table per \
                 image cannot carry: it is left out",
                b + 1
            )),
            None => {}
        }
    }
    attrs.insert(COLOR_TABLE_ATTRIBUTE.into(), json!(first));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(ic: &str, irep: &str, nbpp: u64, luts: Vec<Vec<Vec<u8>>>) -> Image {
        Image {
            rows: 10,
            cols: 10,
            pvtype: "INT".into(),
            irep: irep.into(),
            ic: ic.into(),
            comrat: String::new(),
            band_reps: vec!["LU".into(); luts.len()],
            luts,
            imode: 'B',
            blocks_across: 2,
            blocks_down: 1,
            block_width: 5,
            block_height: 10,
            nbpp,
            abpp: nbpp,
            iid1: String::new(),
            ititle: String::new(),
            idatim: String::new(),
            icords: String::new(),
            igeolo: String::new(),
            tres: Vec::new(),
            data_offset: 0,
            data_len: 0,
        }
    }

    fn rgb_luts(n: usize) -> Vec<Vec<Vec<u8>>> {
        vec![(0..3u8)
            .map(|c| (0..n).map(|i| i as u8 ^ c).collect())
            .collect()]
    }

    #[test]
    fn short_luts_get_a_transparent_nodata_entry() {
        let img = image("NC", "RGB/LUT", 8, rgb_luts(128));
        assert_eq!(nodata(&img, None), Some(128));
        let t = table(&img, 0, Some(128)).unwrap();
        assert_eq!((t.len(), t[1], t[128]), (129, [1, 0, 3, 255], [0; 4]));
        // 217 entries, the last black: that entry is nodata.
        let mut cadrg = rgb_luts(217);
        for l in &mut cadrg[0] {
            l[216] = 0;
        }
        assert_eq!(nodata(&image("NC", "RGB/LUT", 8, cadrg), None), Some(216));
        // Full tables, other sizes, other readers: none.
        assert_eq!(
            nodata(&image("NC", "RGB/LUT", 8, rgb_luts(256)), None),
            None
        );
        assert_eq!(nodata(&image("NC", "RGB/LUT", 1, rgb_luts(2)), None), None);
        assert_eq!(nodata(&image("C8", "RGB/LUT", 8, rgb_luts(8)), None), None);
    }

    #[test]
    fn only_8_bit_pad_codes_are_nodata() {
        let img = image("NM", "MONO", 8, vec![vec![]]);
        let pad = |bits, code: &[u8]| Pad {
            bits,
            code: code.to_vec(),
        };
        assert_eq!(nodata(&img, Some(&pad(8, &[7]))), Some(7));
        assert_eq!(nodata(&img, Some(&pad(16, &[0, 7]))), None);
        assert_eq!(nodata(&img, Some(&pad(1, &[0x80]))), None);
    }

    #[test]
    fn tables_by_lut_count_and_bits() {
        let gray = image("NC", "MONO", 8, vec![vec![vec![5, 6]]]);
        assert_eq!(
            table(&gray, 0, None).unwrap(),
            vec![[5, 5, 5, 255], [6, 6, 6, 255]]
        );
        let mono16 = image(
            "NC",
            "MONO",
            16,
            vec![vec![vec![0xFF, 0, 1], vec![0xFF, 0, 2]]],
        );
        let t = table(&mono16, 0, None).unwrap();
        assert_eq!(t[0], [255, 255, 255, 255]);
        // 0x0201 (bytes swapped) * 255 / 65535, rounded up.
        assert_eq!(t[2], [2, 2, 2, 255]);
        let bilevel = image("NC", "MONO", 1, vec![vec![]]);
        assert_eq!(table(&bilevel, 0, None).unwrap()[1], [255; 4]);
        let jpeg = image("C3", "RGB/LUT", 8, rgb_luts(8));
        let whole = Image {
            blocks_across: 1,
            ..jpeg.clone()
        };
        assert!(table(&jpeg, 0, None).is_some() && table(&whole, 0, None).is_none());
        assert!(table(&image("C8", "RGB/LUT", 8, rgb_luts(8)), 0, None).is_some());
        assert!(table(&image("C8", "MONO", 8, rgb_luts(8)), 0, None).is_none());
    }

    #[test]
    fn palette_bands_and_their_table() {
        let img = image("NC", "RGB/LUT", 8, rgb_luts(4));
        let mut attrs = Map::new();
        attrs.insert(COLOR_ATTRIBUTE.into(), json!(["Undefined"]));
        apply(&img, nodata(&img, None), &mut attrs, |w| panic!("{w}"));
        assert_eq!(attrs[COLOR_ATTRIBUTE], json!(["Palette"]));
        assert_eq!(attrs[COLOR_TABLE_ATTRIBUTE].as_array().unwrap().len(), 5);
    }
}
