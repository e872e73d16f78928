//! Zarr v3 `crc32c` (and numcodecs `crc32c`): a CRC-32C (Castagnoli)
//! checksum of the data, stored as 4 little-endian bytes after it (or, with
//! numcodecs' `"location": "start"`, before it).

use super::checksum::Checksum;
use super::Codec;
use crate::base::error::Result;
use crate::codec::config::Config;

/// The reflected CRC-32C polynomial.
const POLYNOMIAL: u32 = 0x82f6_3b78;
/// Slicing-by-8 tables: `TABLES[0]` is the classic byte table, `TABLES[k]`
/// advances a byte through `k` more zero bytes.
static TABLES: [[u32; 256]; 8] = build_tables();

const fn build_tables() -> [[u32; 256]; 8] {
    let mut tables = [[0u32; 256]; 8];
    let mut n = 0;
    while n < 256 {
        let mut crc = n as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLYNOMIAL
            } else {
                crc >> 1
            };
            bit += 1;
        }
        tables[0][n] = crc;
        n += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut n = 0;
        while n < 256 {
            let prev = tables[k - 1][n];
            tables[k][n] = (prev >> 8) ^ tables[0][(prev & 0xff) as usize];
            n += 1;
        }
        k += 1;
    }
    tables
}

/// CRC-32C of `data`.
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let low = (crc ^ u32::from_le_bytes([word[0], word[1], word[2], word[3]])).to_le_bytes();
        crc = TABLES[7][usize::from(low[0])]
            ^ TABLES[6][usize::from(low[1])]
            ^ TABLES[5][usize::from(low[2])]
            ^ TABLES[4][usize::from(low[3])]
            ^ TABLES[3][usize::from(word[4])]
            ^ TABLES[2][usize::from(word[5])]
            ^ TABLES[1][usize::from(word[6])]
            ^ TABLES[0][usize::from(word[7])];
    }
    for &byte in words.remainder() {
        crc = (crc >> 8) ^ TABLES[0][usize::from(crc.to_le_bytes()[0] ^ byte)];
    }
    !crc
}

/// Builds the `crc32c` codec; numcodecs' optional `location` is `"end"`
/// (the default, as in Zarr v3) or `"start"`.
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    Checksum::from_config("crc32c", crc32c, config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testing::{assert_survives_mutations, decode_with, sample};

    /// Bit-at-a-time reference implementation.
    fn reference(data: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &byte in data {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ POLYNOMIAL
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }

    #[test]
    fn matches_known_check_values() {
        // The standard check value and the iSCSI test vectors (RFC 3720 B.4).
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62a8_ab43);
        let ascending: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c(&ascending), 0x46dd_794e);
        assert_eq!(crc32c(&[]), 0);
        for len in 0..40 {
            let data = sample(len);
            assert_eq!(crc32c(&data), reference(&data), "length {len}");
        }
    }

    #[test]
    fn verifies_and_strips_the_checksum() {
        let data = sample(1_001);
        let end = [&data[..], &crc32c(&data).to_le_bytes()].concat();
        assert_eq!(
            &decode_with("crc32c", "{}", &end, 1_001).unwrap()[..],
            &data[..]
        );
        let start = [&crc32c(&data).to_le_bytes(), &data[..]].concat();
        let out = decode_with(
            "numcodecs.crc32c",
            r#"{"location": "start"}"#,
            &start,
            1_001,
        );
        assert_eq!(&out.unwrap()[..], &data[..]);
        assert!(decode_with("crc32c", r#"{"location": "middle"}"#, &end, 1_001).is_err());
    }

    #[test]
    fn rejects_hostile_input() {
        let data = sample(100);
        let mut encoded = [&data[..], &crc32c(&data).to_le_bytes()].concat();
        encoded[7] ^= 1;
        let err = decode_with("crc32c", "{}", &encoded, 100).unwrap_err();
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
        assert!(decode_with("crc32c", "{}", b"abc", 100).is_err());
        assert_eq!(decode_with("crc32c", "{}", &[0; 4], 0).unwrap().len(), 0);
        assert_survives_mutations("crc32c", "{}", &encoded, 100);
    }
}
