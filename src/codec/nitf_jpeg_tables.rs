//! The default tables of NITF JPEG (MIL-STD-188-198A): a stream may leave
//! out its quantisation tables and name one of five default ones by a Q
//! level in its `APP6` "NITF" segment. GDAL's NITF driver passes that level
//! to its JPEG driver, which loads the level's table, and the standard
//! luminance Huffman tables, into all four table slots before reading the
//! stream's header (tables the stream defines replace them). It loads the
//! 64 values straight into libjpeg's natural-order array, so they are
//! written here as a `DQT` segment in the zigzag order libjpeg reads back
//! into those same positions.

/// The default quantisation tables of Q levels 1 to 5, as GDAL loads them
/// into libjpeg (index = natural-order position).
const Q_TABLES: [[u8; 64]; 5] = [
    [
        8, 72, 72, 72, 72, 72, 72, 72, 72, 72, 78, 74, 76, 74, 78, 89, 81, 84, 84, 81, 89, 106, 93,
        94, 99, 94, 93, 106, 129, 111, 108, 116, 116, 108, 111, 129, 135, 128, 136, 145, 136, 128,
        135, 155, 160, 177, 177, 160, 155, 193, 213, 228, 213, 193, 255, 255, 255, 255, 255, 255,
        255, 255, 255, 255,
    ],
    [
        8, 36, 36, 36, 36, 36, 36, 36, 36, 36, 39, 37, 38, 37, 39, 45, 41, 42, 42, 41, 45, 53, 47,
        47, 50, 47, 47, 53, 65, 56, 54, 59, 59, 54, 56, 65, 68, 64, 69, 73, 69, 64, 68, 78, 81, 89,
        89, 81, 78, 98, 108, 115, 108, 98, 130, 144, 144, 130, 178, 190, 178, 243, 243, 255,
    ],
    [
        8, 10, 10, 10, 10, 10, 10, 10, 10, 10, 11, 10, 11, 10, 11, 13, 11, 12, 12, 11, 13, 15, 13,
        13, 14, 13, 13, 15, 18, 16, 15, 16, 16, 15, 16, 18, 19, 18, 19, 21, 19, 18, 19, 22, 23, 25,
        25, 23, 22, 27, 30, 32, 30, 27, 36, 40, 40, 36, 50, 53, 50, 68, 68, 91,
    ],
    [
        8, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 7, 8, 9, 8, 8, 8, 8, 9, 11, 9, 9, 10, 9, 9, 11, 13,
        11, 11, 12, 12, 11, 11, 13, 14, 13, 14, 15, 14, 13, 14, 16, 16, 18, 18, 16, 16, 20, 22, 23,
        22, 20, 26, 29, 29, 26, 36, 38, 36, 49, 49, 65,
    ],
    [
        4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 6, 5, 5, 6, 5, 5, 6, 7, 6,
        6, 6, 6, 6, 6, 7, 8, 7, 8, 8, 8, 7, 8, 9, 9, 10, 10, 9, 9, 11, 12, 13, 12, 11, 14, 16, 16,
        14, 20, 21, 20, 27, 27, 36,
    ],
];

/// Code counts by length (1 to 16 bits) of the standard luminance DC
/// Huffman table (ITU-T T.81 K.3, table K.3).
const DC_BITS: [u8; 16] = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0];
/// Its symbols, in code order.
const DC_VALUES: [u8; 12] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
/// Code counts by length of the standard luminance AC Huffman table (table
/// K.5).
const AC_BITS: [u8; 16] = [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 125];
/// Its symbols, in code order.
const AC_VALUES: [u8; 162] = [
    0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
    0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xA1, 0x08, 0x23, 0x42, 0xB1, 0xC1, 0x15, 0x52, 0xD1, 0xF0,
    0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0A, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x25, 0x26, 0x27, 0x28,
    0x29, 0x2A, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
    0x4A, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
    0x6A, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7A, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
    0x8A, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7,
    0xA8, 0xA9, 0xAA, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xC2, 0xC3, 0xC4, 0xC5,
    0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8, 0xD9, 0xDA, 0xE1, 0xE2,
    0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEA, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8,
    0xF9, 0xFA,
];

/// Table slots libjpeg has (and GDAL fills).
const SLOTS: u8 = 4;

/// The natural-order position of each zigzag-order coefficient of an 8 x 8
/// block (libjpeg's `jpeg_natural_order`).
fn zigzag() -> [usize; 64] {
    let mut order = [0; 64];
    let (mut row, mut col) = (0usize, 0usize);
    for slot in &mut order {
        *slot = row * 8 + col;
        // Even anti-diagonals run up and to the right, odd ones down-left.
        if (row + col).is_multiple_of(2) {
            if col == 7 {
                row += 1;
            } else if row == 0 {
                col += 1;
            } else {
                row -= 1;
                col += 1;
            }
        } else if row == 7 {
            col += 1;
        } else if col == 0 {
            row += 1;
        } else {
            row += 1;
            col -= 1;
        }
    }
    order
}

/// A marker segment: marker, length, body.
fn segment(marker: u8, body: &[u8]) -> Vec<u8> {
    let len = u16::try_from(body.len() + 2).expect("table segments are short");
    let mut out = vec![0xFF, marker];
    out.extend(len.to_be_bytes());
    out.extend(body);
    out
}

/// Whether `level` names a default quantisation table (1 to 5).
pub(super) fn is_level(level: u64) -> bool {
    (1..=Q_TABLES.len() as u64).contains(&level)
}

/// `stream` (starting with SOI) with the default tables of Q `level` (see
/// [`is_level`]) defined right after its SOI, in every table slot.
pub(super) fn with_default_tables(stream: &[u8], level: u64) -> Vec<u8> {
    let table = &Q_TABLES[(level - 1) as usize];
    let mut dqt = Vec::with_capacity(65 * usize::from(SLOTS));
    let mut dht = Vec::new();
    for slot in 0..SLOTS {
        dqt.push(slot);
        dqt.extend(zigzag().iter().map(|&natural| table[natural]));
        for (class, bits, values) in [(0u8, &DC_BITS, &DC_VALUES[..]), (1, &AC_BITS, &AC_VALUES)] {
            dht.push(class << 4 | slot);
            dht.extend(bits);
            dht.extend(values);
        }
    }
    let (soi, rest) = stream.split_at(stream.len().min(2));
    [soi, &segment(0xDB, &dqt), &segment(0xC4, &dht), rest].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_is_libjpegs_natural_order() {
        let order = zigzag();
        assert_eq!(&order[..10], &[0, 1, 8, 16, 9, 2, 3, 10, 17, 24]);
        assert_eq!(&order[54..], &[39, 46, 53, 60, 61, 54, 47, 55, 62, 63]);
        let mut sorted = order;
        sorted.sort_unstable();
        assert!(sorted.iter().enumerate().all(|(i, &n)| i == n));
    }

    #[test]
    fn tables_follow_soi() {
        assert_eq!(
            AC_BITS.iter().map(|&b| usize::from(b)).sum::<usize>(),
            AC_VALUES.len()
        );
        assert_eq!(
            DC_BITS.iter().map(|&b| usize::from(b)).sum::<usize>(),
            DC_VALUES.len()
        );
        let out = with_default_tables(&[0xFF, 0xD8, 0xFF, 0xD9], 3);
        assert_eq!(&out[..4], &[0xFF, 0xD8, 0xFF, 0xDB]);
        assert_eq!(
            usize::from(u16::from_be_bytes([out[4], out[5]])),
            2 + 4 * 65
        );
        // Slot 0's first zigzag coefficients: natural positions 0, 1, 8.
        assert_eq!(&out[6..10], &[0, 8, 10, 10]);
        let dht = 4 + 2 + 4 * 65;
        assert_eq!(&out[dht..dht + 2], &[0xFF, 0xC4]);
        assert_eq!(&out[out.len() - 2..], &[0xFF, 0xD9]);
        assert!(!is_level(0) && is_level(5) && !is_level(6));
    }
}
