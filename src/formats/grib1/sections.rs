//! The sections of a GRIB1 message: section 0 (`GRIB`, the message
//! length, edition 1), the product definition (PDS, section 1), the grid
//! definition (GDS, 2) and bitmap (BMS, 3) when the PDS flags say so, the
//! binary data (BDS, 4) and `7777`; each section's length is checked
//! against the message's before it is used.

use super::{malformed, unsupported, Refusal};
use crate::formats::grib2::sections::be_u64;

/// Bytes of section 0.
pub const INDICATOR_LEN: u64 = 8;
/// The end section.
const END: &[u8; 4] = b"7777";
/// The top bit of a message length: ECMWF's encoding of messages over
/// 8 MiB (a length in units of 120 bytes), which GDAL does not read.
const LARGE_MESSAGE: u64 = 0x80_0000;
/// The sections after section 0, in order: name, the shortest length
/// degrib reads (the PDS to its decimal scale factor, the GDS header and
/// grid size, the BMS header, the BDS to its bit width), and the PDS flag
/// (octet 8) announcing the section (0: always present).
const SECTIONS: [(&str, u64, u8); 4] = [
    ("product definition section", 28, 0),
    ("grid definition section", 10, 0x80),
    ("bitmap section", 6, 0x40),
    ("binary data section", 11, 0),
];

/// Where a message's sections lie: `(offset, length)` in the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The whole message's length.
    pub total_len: u64,
    /// Section 1, the product definition.
    pub pds: (u64, u64),
    /// Section 2, the grid definition (absent: a predefined grid).
    pub gds: Option<(u64, u64)>,
    /// Section 3, the bitmap.
    pub bms: Option<(u64, u64)>,
    /// Section 4, the binary data.
    pub bds: (u64, u64),
}

/// Is `bytes` the start of a GRIB edition 1 message?
pub fn is_edition_1(bytes: &[u8]) -> bool {
    bytes.len() >= INDICATOR_LEN as usize && bytes.starts_with(b"GRIB") && bytes[7] == 1
}

impl Layout {
    /// Walks the message whose first bytes are `head` (at least section 0),
    /// `room` bytes long at most (to the end of the file or chunk), reading
    /// `len` bytes at an offset of the message with `read` (section headers
    /// and the end section only).
    pub fn walk(
        head: &[u8],
        room: u64,
        mut read: impl FnMut(u64, u64) -> Result<Vec<u8>, Refusal>,
    ) -> Result<Layout, Refusal> {
        if !is_edition_1(head) {
            return malformed("no GRIB edition 1 indicator section where a message should start");
        }
        let total_len = be_u64(&head[4..7]);
        if total_len & LARGE_MESSAGE != 0 {
            return unsupported(format!(
                "the message length {total_len} has its top bit set (ECMWF's encoding of GRIB1 \
                 messages over 8 MiB, which GDAL's GRIB driver does not read)"
            ));
        }
        if total_len > room {
            return malformed(format!(
                "the message declares {total_len} bytes, but only {room} follow its start (truncated?)"
            ));
        }
        let end = total_len.saturating_sub(END.len() as u64);
        let mut at = INDICATOR_LEN;
        let mut flags = 0;
        let mut spans = [None; 4];
        for (n, &(name, min, flag)) in SECTIONS.iter().enumerate() {
            if flag != 0 && flags & flag == 0 {
                continue;
            }
            if at + 3 > end {
                return malformed(format!("the message ends before its {name} at byte {at}"));
            }
            let len = be_u64(&read(at, 3)?);
            if len < min || len > end - at {
                return malformed(format!(
                    "the {name} at byte {at} declares {len} bytes (at least {min}, at most the \
                     {} bytes before the end section)",
                    end - at
                ));
            }
            if n == 0 {
                flags = read(at + 7, 1)?[0];
            }
            spans[n] = Some((at, len));
            at += len;
        }
        if at != end {
            return malformed(format!(
                "the sections end at byte {at}, not where the end section should start (byte {end})"
            ));
        }
        if read(end, 4)? != END {
            return malformed("the message does not end with \"7777\"");
        }
        match spans {
            [Some(pds), gds, bms, Some(bds)] => Ok(Layout {
                total_len,
                pds,
                gds,
                bms,
                bds,
            }),
            _ => malformed("the message lacks its product definition or binary data section"),
        }
    }
}

/// An IBM System/360 single precision float (sign, 7-bit base-16
/// exponent biased by 64, 24-bit fraction), as degrib's `fval_360`
/// converts it.
pub fn ibm_float(bits: u32) -> f64 {
    let exponent = i32::from((bits >> 24) as u8 & 0x7f) - 64;
    let fraction = f64::from(bits & 0x00ff_ffff) / f64::from(0x0100_0000);
    let value = 16f64.powi(exponent) * fraction;
    if bits & 0x8000_0000 != 0 {
        -value
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ibm_floats() {
        assert_eq!(ibm_float(0x4110_0000), 1.0);
        assert_eq!(ibm_float(0xC276_A000), -118.625);
        assert_eq!(ibm_float(0x4311_1180), 273.09375);
        assert_eq!(ibm_float(0), 0.0);
    }

    /// A message of sections `pds`, `gds`, `bms`, `bds` (their bytes).
    fn message(sections: &[&[u8]]) -> Vec<u8> {
        let body: Vec<u8> = sections.concat();
        let len = 8 + body.len() + 4;
        let mut m = b"GRIB".to_vec();
        m.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
        m.push(1);
        m.extend_from_slice(&body);
        m.extend_from_slice(b"7777");
        m
    }

    fn section(len: usize, fill: u8) -> Vec<u8> {
        let mut s = vec![fill; len];
        s[..3].copy_from_slice(&(len as u32).to_be_bytes()[1..]);
        s
    }

    fn walk(m: &[u8]) -> Result<Layout, Refusal> {
        Layout::walk(m, m.len() as u64, |at, len| {
            m.get(at as usize..(at + len) as usize)
                .map(<[u8]>::to_vec)
                .ok_or(Refusal::Malformed("past the end".into()))
        })
    }

    #[test]
    fn walks_the_sections_the_flags_announce() {
        let mut pds = section(28, 0);
        pds[7] = 0x80 | 0x40;
        let m = message(&[&pds, &section(32, 0), &section(8, 0), &section(12, 0)]);
        let layout = walk(&m).unwrap();
        assert_eq!(layout.pds, (8, 28));
        assert_eq!(layout.gds, Some((36, 32)));
        assert_eq!(layout.bms, Some((68, 8)));
        assert_eq!(layout.bds, (76, 12));
        pds[7] = 0;
        let bare = message(&[&pds, &section(12, 0)]);
        let layout = walk(&bare).unwrap();
        assert_eq!((layout.gds, layout.bms), (None, None));
    }

    #[test]
    fn refuses_lengths_past_the_message() {
        let pds = section(28, 0);
        let mut m = message(&[&pds, &section(12, 0)]);
        // A BDS declaring more than the message holds.
        m[8 + 28 + 2] = 200;
        assert!(walk(&m).unwrap_err().text().contains("binary data section"));
        let m = message(&[&pds, &section(12, 0)]);
        let e = Layout::walk(&m, m.len() as u64 - 1, |_, _| Ok(vec![0; 3])).unwrap_err();
        assert!(e.text().contains("truncated"), "{e:?}");
        let mut large = m.clone();
        large[4] |= 0x80;
        assert!(matches!(walk(&large), Err(Refusal::Unsupported(_))));
        let mut tail = m.clone();
        let n = tail.len();
        tail[n - 1] = b'6';
        assert!(walk(&tail).unwrap_err().text().contains("7777"));
        assert!(walk(b"GRIB\0\0\x08\x02").is_err());
    }
}
