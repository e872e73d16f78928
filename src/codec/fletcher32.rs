//! numcodecs `fletcher32`, the checksum of HDF5's Fletcher-32 filter that
//! kerchunk and VirtualiZarr carry over from NetCDF4/HDF5 files: the data
//! followed by its Fletcher-32 checksum (16-bit words read big-endian, as
//! HDF5's `H5_checksum_fletcher32`), 4 little-endian bytes.

use super::checksum::Checksum;
use super::Codec;
use crate::base::error::Result;
use crate::codec::config::Config;

/// Words summed before the running sums are folded (they cannot overflow).
const BLOCK_WORDS: usize = 360;

/// HDF5's Fletcher-32 of `data` (an odd last byte counts as a word whose
/// low byte is zero).
fn fletcher32(data: &[u8]) -> u32 {
    let fold = |s: u32| (s & 0xffff) + (s >> 16);
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let words = data.chunks_exact(2);
    let odd = words.remainder().first().copied();
    let words: Vec<u32> = words
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .collect();
    for block in words.chunks(BLOCK_WORDS) {
        for &w in block {
            sum1 += w;
            sum2 += sum1;
        }
        (sum1, sum2) = (fold(sum1), fold(sum2));
    }
    if let Some(byte) = odd {
        sum1 += u32::from(byte) << 8;
        sum2 += sum1;
        (sum1, sum2) = (fold(sum1), fold(sum2));
    }
    (sum1, sum2) = (fold(sum1), fold(sum2));
    (sum2 << 16) | sum1
}

/// Builds the `fletcher32` codec (numcodecs has no settings for it).
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    Checksum::from_config("fletcher32", fletcher32, config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testing::{assert_survives_mutations, decode_with, sample};

    /// The definition, one word at a time with 64-bit sums reduced at the end.
    fn reference(data: &[u8]) -> u32 {
        let (mut a, mut b) = (0u64, 0u64);
        let mut padded = data.to_vec();
        if padded.len() % 2 == 1 {
            padded.push(0);
        }
        for w in padded.chunks_exact(2) {
            a = (a + u64::from(u16::from_be_bytes([w[0], w[1]]))) % 65535;
            b = (b + a) % 65535;
        }
        // HDF5 folds to 16 bits without the final modulo: 0xffff stays.
        ((b as u32) << 16) | a as u32
    }

    #[test]
    fn matches_the_definition_and_verifies() {
        for len in [0usize, 1, 2, 3, 719, 720, 721, 5_000] {
            let data = sample(len);
            let (want, got) = (reference(&data), fletcher32(&data));
            // Equal modulo 65535 in each half (HDF5 may leave 0xffff for 0).
            assert_eq!((got & 0xffff) % 65535, want & 0xffff, "length {len}");
            assert_eq!((got >> 16) % 65535, want >> 16, "length {len}");
        }
        let data = sample(1_001);
        let encoded = [&data[..], &fletcher32(&data).to_le_bytes()].concat();
        assert_eq!(
            &decode_with("fletcher32", "{}", &encoded, 1_001).unwrap()[..],
            &data[..]
        );
        let mut bad = encoded.clone();
        bad[10] ^= 4;
        let err = decode_with("fletcher32", "{}", &bad, 1_001).unwrap_err();
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
        assert_survives_mutations("fletcher32", "{}", &encoded, 1_001);
    }
}
