//! The sections of one GRIB2 message: where they are (section 0 and the
//! section table, read header by header) and the few numbers chunkref
//! takes from sections 1, 3, 4 and 5.
//!
//! Offsets below are 0-based within a section (the WMO manual's octet
//! numbers minus one).

use crate::base::error::{Error, Result};

/// Bytes of section 0 (the indicator section).
pub const INDICATOR_LEN: u64 = 16;
/// The end section, section 8.
const END: &[u8; 4] = b"7777";

/// Section 0: what `chunkref` needs of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Indicator {
    /// GRIB discipline (code table 0.0).
    pub discipline: u8,
    /// Bytes of the whole message, sections 0 to 8.
    pub total_len: u64,
}

/// Reads section 0, the first 16 bytes of a message.
pub fn indicator(bytes: &[u8]) -> std::result::Result<Indicator, String> {
    if bytes.len() < INDICATOR_LEN as usize || &bytes[..4] != b"GRIB" {
        return Err("no GRIB indicator section (\"GRIB\") where a message should start".into());
    }
    if bytes[7] != 2 {
        return Err(format!(
            "GRIB edition {} (editions 1 and 2 are read)",
            bytes[7]
        ));
    }
    let total_len = be_u64(&bytes[8..16]);
    if total_len < INDICATOR_LEN + 4 {
        return Err(format!(
            "a message length of {total_len} bytes is too short"
        ));
    }
    Ok(Indicator {
        discipline: bytes[6],
        total_len,
    })
}

/// Where the sections one field of a message is decoded from lie:
/// `(offset, length)` in the message, by section number (section 2,
/// local use, may be absent). Section 6 is the one whose bitmap applies:
/// for a field whose own section 6 says 254 ("the bitmap defined before
/// in this message"), the earlier section 6 that defined it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout {
    spans: [Option<(u64, u64)>; 8],
}

/// Bitmap indicator (section 6, octet 6): a bitmap follows.
const BITMAP_FOLLOWS: u8 = 0;
/// Bitmap indicator: the bitmap defined before in the same message applies.
const BITMAP_REUSED: u8 = 254;

impl Layout {
    /// Walks the sections of a message of `total_len` bytes, reading
    /// `len` bytes at `offset` of the message with `read` (only section
    /// headers, bitmap indicators and the end section are read); `bad`
    /// turns a description of what is wrong into the caller's error.
    ///
    /// Returns one layout per field: a message may hold several, sections
    /// 2 to 7, 3 to 7 or 4 to 7 repeated after the first field, each
    /// repetition keeping the sections before it that it does not repeat.
    pub fn walk(
        total_len: u64,
        mut read: impl FnMut(u64, u64) -> Result<Vec<u8>>,
        bad: impl Fn(String) -> Error,
    ) -> Result<Vec<Layout>> {
        let end = total_len - END.len() as u64;
        let fields = Layout::fields(INDICATOR_LEN, end, &[1, 3, 4, 5, 6], &mut read, &bad)?;
        if read(end, 4)? != END {
            return Err(bad("the message does not end with \"7777\"".into()));
        }
        Ok(fields)
    }

    /// Walks `len` bytes holding sections 3 to 7 of one field back to back
    /// (no sections 0, 1 and 8: the chunk `chunkref index` makes of a field
    /// of a message holding several), read with `read`.
    pub fn walk_field(
        len: u64,
        mut read: impl FnMut(u64, u64) -> Result<Vec<u8>>,
        bad: impl Fn(String) -> Error,
    ) -> Result<Layout> {
        match Layout::fields(0, len, &[3, 4, 5, 6], &mut read, &bad)?[..] {
            [field] => Ok(field),
            ref fields => Err(bad(format!(
                "the chunk holds {} fields where one was expected",
                fields.len()
            ))),
        }
    }

    /// The fields of the sections from `start` to `end`, each needing the
    /// sections `required` (and 7).
    fn fields(
        start: u64,
        end: u64,
        required: &[usize],
        read: &mut impl FnMut(u64, u64) -> Result<Vec<u8>>,
        bad: &impl Fn(String) -> Error,
    ) -> Result<Vec<Layout>> {
        let mut fields = Vec::new();
        let mut layout = Layout::default();
        let mut defined_bitmap = None;
        let mut at = start;
        let mut last = 0u8;
        while at < end {
            let head = read(at, 5)?;
            let len = u64::from(u32::from_be_bytes([head[0], head[1], head[2], head[3]]));
            let number = head[4];
            if len < 5 || len > end - at {
                return Err(bad(format!(
                    "section {number} at byte {at} declares {len} bytes, past the end of the \
                     sections (byte {end})"
                )));
            }
            let repeats = last == 7 && matches!(number, 2..=4);
            if !repeats && (!(1..=7).contains(&number) || number <= last) {
                return Err(bad(format!(
                    "section {number} at byte {at} is out of order (after section {last})"
                )));
            }
            let mut span = (at, len);
            if number == 6 {
                if len < 6 {
                    return Err(bad(format!(
                        "section 6 at byte {at} is too short for its bitmap indicator"
                    )));
                }
                match read(at + 5, 1)?[0] {
                    BITMAP_FOLLOWS => defined_bitmap = Some(span),
                    BITMAP_REUSED => {
                        span = defined_bitmap.ok_or_else(|| {
                            bad(format!(
                                "section 6 at byte {at} reuses the bitmap defined before \
                                 (indicator 254), but no bitmap was defined before it"
                            ))
                        })?;
                    }
                    _ => {}
                }
            }
            layout.spans[usize::from(number)..].fill(None);
            layout.spans[usize::from(number)] = Some(span);
            if number == 7 {
                let field = fields.len() + 1;
                if let Some(missing) = required.iter().find(|&&n| layout.spans[n].is_none()) {
                    return Err(bad(format!(
                        "section {missing} of field {field} is missing"
                    )));
                }
                fields.push(layout);
            }
            last = number;
            at += len;
        }
        if last != 7 {
            return Err(bad(format!(
                "the sections end without a section 7 at byte {at} (field {} is incomplete)",
                fields.len() + 1
            )));
        }
        Ok(fields)
    }

    /// `(offset, length)` of section `number` (1 to 7) when present.
    pub fn span(&self, number: usize) -> Option<(u64, u64)> {
        self.spans.get(number).copied().flatten()
    }
}

/// Big-endian unsigned integer of `bytes` (at most 8).
pub fn be_u64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |n, &b| n << 8 | u64::from(b))
}

/// GRIB's signed integers: sign bit, then magnitude (not two's complement).
pub fn be_signed(bytes: &[u8]) -> i64 {
    let n = be_u64(bytes);
    let sign = 1u64 << (8 * bytes.len() - 1);
    let magnitude = (n & (sign - 1)) as i64;
    if n & sign != 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// The bytes `at..at + len` of a section, or an error naming the section.
pub fn field(
    section: &[u8],
    number: u8,
    at: usize,
    len: usize,
) -> std::result::Result<&[u8], String> {
    section.get(at..at + len).ok_or_else(|| {
        format!(
            "section {number} is {} bytes, too short for its template (needs {})",
            section.len(),
            at + len
        )
    })
}

/// A section's template number (sections 3: octets 13-14, 4: 8-9, 5: 10-11).
pub fn template(section: &[u8], number: u8) -> std::result::Result<u16, String> {
    let at = match number {
        3 => 12,
        4 => 7,
        _ => 9,
    };
    field(section, number, at, 2).map(|b| u16::from_be_bytes([b[0], b[1]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice_reader(bytes: &[u8]) -> impl FnMut(u64, u64) -> Result<Vec<u8>> + '_ {
        move |at, len| {
            bytes
                .get(at as usize..(at + len) as usize)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| Error::decode("t", "short"))
        }
    }

    fn section(number: u8, body: &[u8]) -> Vec<u8> {
        let mut s = ((body.len() + 5) as u32).to_be_bytes().to_vec();
        s.push(number);
        s.extend_from_slice(body);
        s
    }

    fn message(sections: &[Vec<u8>]) -> Vec<u8> {
        let body: Vec<u8> = sections.concat();
        let mut m = b"GRIB\0\0\0\x02".to_vec();
        m.extend_from_slice(&(16 + body.len() as u64 + 4).to_be_bytes());
        m.extend_from_slice(&body);
        m.extend_from_slice(b"7777");
        m
    }

    fn walk(m: &[u8]) -> Result<Vec<Layout>> {
        let total = indicator(m).map_err(|e| Error::decode("t", e))?.total_len;
        Layout::walk(total, slice_reader(m), |e| Error::decode("t", e))
    }

    #[test]
    fn walks_sections_and_refuses_broken_layouts() {
        let all: Vec<Vec<u8>> = [1, 3, 4, 5, 6, 7]
            .iter()
            .map(|&n| section(n, &[0; 3]))
            .collect();
        let layouts = walk(&message(&all)).unwrap();
        assert_eq!(layouts.len(), 1);
        assert_eq!(layouts[0].span(1), Some((16, 8)));
        assert_eq!(layouts[0].span(2), None);
        assert_eq!(layouts[0].span(7), Some((56, 8)));
        let e = walk(&message(&all[..5])).unwrap_err().to_string();
        assert!(e.contains("without a section 7"), "{e}");
        let mut no_grid = all.clone();
        no_grid.remove(1);
        let e = walk(&message(&no_grid)).unwrap_err().to_string();
        assert!(e.contains("section 3 of field 1 is missing"), "{e}");
        let mut long = message(&all);
        long[19] = 200;
        assert!(walk(&long)
            .unwrap_err()
            .to_string()
            .contains("past the end of the sections"));
        let mut no_end = message(&all);
        let n = no_end.len();
        no_end[n - 1] = b'6';
        assert!(walk(&no_end).unwrap_err().to_string().contains("7777"));
        assert!(indicator(b"GRIB\0\0\0\x01").is_err());
        assert!(indicator(&message(&all)[..15]).is_err());
    }

    #[test]
    fn repeated_sections_make_fields() {
        let s = |n: u8| section(n, &[0; 3]);
        let bitmap = |indicator: u8| section(6, &[indicator, 0xff]);
        // Field 1; field 2 repeats 4 to 7 (bitmap 254: field 1's); field 3
        // repeats 2 to 7 (no bitmap).
        let fields = [
            vec![s(1), s(3), s(4), s(5), bitmap(0), s(7)],
            vec![s(4), s(5), bitmap(254), s(7)],
            vec![s(2), s(3), s(4), s(5), bitmap(255), s(7)],
        ];
        let layouts = walk(&message(&fields.concat())).unwrap();
        let [first, second, third] = layouts[..] else {
            panic!("{layouts:?}")
        };
        assert_eq!(second.span(1), first.span(1));
        assert_eq!(second.span(3), first.span(3));
        assert_eq!(second.span(6), first.span(6));
        assert_eq!(
            second.span(7).unwrap().0,
            first.span(7).unwrap().0 + 8 + 8 + 7 + 8
        );
        assert_eq!(third.span(2).unwrap().0, second.span(7).unwrap().0 + 8);
        assert_ne!(third.span(3), first.span(3));
        assert_ne!(third.span(6), first.span(6));
        // A repetition from section 2 needs its section 3; 254 needs a
        // bitmap defined before; a repetition must not stop short.
        let refused = [
            (
                vec![fields[0].clone(), vec![s(2), s(4), s(5), s(6), s(7)]],
                "section 3 of field 2",
            ),
            (
                vec![vec![s(1), s(3), s(4), s(5), bitmap(254), s(7)]],
                "no bitmap was defined",
            ),
            (
                vec![fields[0].clone(), vec![s(4), s(5)]],
                "field 2 is incomplete",
            ),
            (
                vec![fields[0].clone(), vec![s(5), s(6), s(7)]],
                "out of order",
            ),
        ];
        for (sections, what) in refused {
            let e = walk(&message(&sections.concat())).unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        }
        // A field's chunk: sections 3 to 7 alone.
        let chunk = [s(3), s(4), s(5), bitmap(255), s(7)].concat();
        let one = Layout::walk_field(chunk.len() as u64, slice_reader(&chunk), |e| {
            Error::decode("t", e)
        })
        .unwrap();
        assert_eq!(one.span(3), Some((0, 8)));
        let two = [chunk.clone(), chunk[8..].to_vec()].concat();
        let e = Layout::walk_field(two.len() as u64, slice_reader(&two), |e| {
            Error::decode("t", e)
        })
        .unwrap_err();
        assert!(e.to_string().contains("2 fields"), "{e}");
    }

    #[test]
    fn signed_integers_are_sign_and_magnitude() {
        assert_eq!(be_signed(&[0x80, 0x02]), -2);
        assert_eq!(be_signed(&[0x00, 0x02]), 2);
        assert_eq!(be_signed(&[0x81, 0, 0, 0]), -(1 << 24));
    }
}
