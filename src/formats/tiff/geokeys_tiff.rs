//! A one-pixel TIFF holding only the GeoKeys of an image (the
//! GeoKeyDirectory and the tags its keys point into), written so GDAL's
//! GTiff driver can be asked which CRS those keys make, wherever the image
//! itself lives (a local file, object storage, a GeoJP2 box).

use super::ifd::Ifd;
use super::tags;

/// Byte size of one classic TIFF directory entry.
const ENTRY: usize = 12;
/// TIFF field types used here.
const SHORT: u16 = 3;
const LONG: u16 = 4;
const ASCII: u16 = 2;
const DOUBLE: u16 = 12;

/// One field: tag, type, count and its value bytes (little-endian).
struct Field {
    tag: u16,
    kind: u16,
    count: u32,
    bytes: Vec<u8>,
}

impl Field {
    fn shorts(tag: u16, values: &[u16]) -> Field {
        Field {
            tag,
            kind: SHORT,
            count: values.len() as u32,
            bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    fn long(tag: u16, value: u32) -> Field {
        Field {
            tag,
            kind: LONG,
            count: 1,
            bytes: value.to_le_bytes().to_vec(),
        }
    }
}

/// The GeoKeyDirectory of `ifd` as SHORTs, keeping only the keys `keep`
/// accepts (by key id); None without a directory, or with one that does
/// not fit in SHORTs.
fn directory(ifd: &Ifd, keep: impl Fn(u16) -> bool) -> Option<Vec<u16>> {
    let dir = ifd.ints(tags::GEO_KEY_DIRECTORY)?;
    let dir: Vec<u16> = dir
        .iter()
        .map(|&v| u16::try_from(v).ok())
        .collect::<Option<_>>()?;
    let (head, entries) = dir.split_at_checked(4)?;
    let kept: Vec<&[u16]> = entries
        .chunks_exact(4)
        .take(usize::from(head[3]))
        .filter(|e| keep(e[0]))
        .collect();
    let mut out = vec![head[0], head[1], head[2], u16::try_from(kept.len()).ok()?];
    out.extend(kept.into_iter().flatten());
    Some(out)
}

/// A one-pixel little-endian TIFF carrying the GeoKeys of `ifd` that
/// `keep` accepts, with the GeoDoubleParams and GeoAsciiParams tags they
/// may point into; None when `ifd` has no GeoKeyDirectory.
pub fn geokeys_tiff(ifd: &Ifd, keep: impl Fn(u16) -> bool) -> Option<Vec<u8>> {
    let mut fields = vec![
        Field::shorts(256, &[1]),
        Field::shorts(257, &[1]),
        Field::shorts(258, &[8]),
        Field::shorts(259, &[1]),
        Field::shorts(262, &[1]),
        Field::long(273, 0), // the strip offset, set below
        Field::shorts(277, &[1]),
        Field::shorts(278, &[1]),
        Field::long(279, 1),
        Field::shorts(tags::GEO_KEY_DIRECTORY, &directory(ifd, keep)?),
    ];
    if let Some(doubles) = ifd.floats(tags::GEO_DOUBLE_PARAMS) {
        fields.push(Field {
            tag: tags::GEO_DOUBLE_PARAMS,
            kind: DOUBLE,
            count: u32::try_from(doubles.len()).ok()?,
            bytes: doubles.iter().flat_map(|v| v.to_le_bytes()).collect(),
        });
    }
    if let Some(text) = ifd.ascii(tags::GEO_ASCII_PARAMS) {
        let mut bytes = text.as_bytes().to_vec();
        bytes.push(0);
        fields.push(Field {
            tag: tags::GEO_ASCII_PARAMS,
            kind: ASCII,
            count: u32::try_from(bytes.len()).ok()?,
            bytes,
        });
    }
    let ifd_len = 2 + fields.len() * ENTRY + 4;
    let mut data_at = 8 + ifd_len;
    let mut head = Vec::with_capacity(ifd_len);
    let mut data = Vec::new();
    head.extend_from_slice(&u16::try_from(fields.len()).ok()?.to_le_bytes());
    for f in &fields {
        head.extend_from_slice(&f.tag.to_le_bytes());
        head.extend_from_slice(&f.kind.to_le_bytes());
        head.extend_from_slice(&f.count.to_le_bytes());
        if f.bytes.len() <= 4 {
            let mut inline = [0u8; 4];
            inline[..f.bytes.len()].copy_from_slice(&f.bytes);
            head.extend_from_slice(&inline);
        } else {
            head.extend_from_slice(&u32::try_from(data_at).ok()?.to_le_bytes());
            data.extend_from_slice(&f.bytes);
            data_at += f.bytes.len();
            if data_at % 2 == 1 {
                data.push(0);
                data_at += 1;
            }
        }
    }
    head.extend_from_slice(&0u32.to_le_bytes());
    // The single pixel, after everything else.
    let pixel_at = u32::try_from(data_at).ok()?;
    let strip = fields.iter().position(|f| f.tag == 273)?;
    let at = 2 + strip * ENTRY + 8;
    head[at..at + 4].copy_from_slice(&pixel_at.to_le_bytes());
    let mut out = b"II*\0".to_vec();
    out.extend_from_slice(&8u32.to_le_bytes());
    out.extend(head);
    out.extend(data);
    out.push(0);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::tiff::ifd::{self, Value};
    use crate::io::source::Source;

    #[test]
    fn the_keys_read_back_as_written() {
        let mut src = Ifd::default();
        src.tags.insert(
            tags::GEO_KEY_DIRECTORY,
            Value::Ints(vec![
                1, 1, 0, 3, 1024, 0, 1, 1, 3072, 0, 1, 32633, 3076, 0, 1, 9002,
            ]),
        );
        src.tags.insert(
            tags::GEO_ASCII_PARAMS,
            Value::Ascii("WGS 84 / UTM zone 33N|".into()),
        );
        let bytes = geokeys_tiff(&src, |k| k != 3076).unwrap();
        let read = ifd::read(&Source::from_bytes("keys.tif", bytes, "TIFF")).unwrap();
        let back = &read.ifds[0];
        assert_eq!(
            back.ints(tags::GEO_KEY_DIRECTORY).unwrap(),
            [1, 1, 0, 2, 1024, 0, 1, 1, 3072, 0, 1, 32633]
        );
        assert_eq!(
            back.ascii(tags::GEO_ASCII_PARAMS),
            Some("WGS 84 / UTM zone 33N|")
        );
        assert_eq!(back.int(256), Some(1));
        assert!(geokeys_tiff(&Ifd::default(), |_| true).is_none());
    }
}
