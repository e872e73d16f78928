//! LZ4 block framings: numcodecs `lz4` (a 4-byte little-endian decoded
//! size, then one LZ4 block) and `hdf5-lz4`, the HDF5 LZ4 filter (32004):
//! an 8-byte big-endian decoded size and a 4-byte big-endian block size,
//! then per block a 4-byte big-endian stored size and the block, LZ4
//! compressed, or as it is when the stored size is the block's own.

use bytes::Bytes;

use super::{Codec, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::error::{Error, Result};
use crate::codec::config::Config;

/// Size of the numcodecs header holding the decoded size.
const HEADER_LEN: usize = 4;

/// Decodes the numcodecs LZ4 framing (not the LZ4 frame format).
#[derive(Debug)]
struct Lz4;

impl Codec for Lz4 {
    fn name(&self) -> &str {
        "lz4"
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let (header, block) = input.split_first_chunk::<HEADER_LEN>().ok_or_else(|| {
            Error::decode(
                self.name(),
                format!(
                    "needs a {HEADER_LEN}-byte size header, chunk has {} bytes",
                    input.len()
                ),
            )
        })?;
        let size = usize::try_from(u32::from_le_bytes(*header)).unwrap_or(usize::MAX);
        if size > ctx.decoded_len {
            return Err(Error::decode(
                self.name(),
                format!(
                    "header says {size} bytes, chunk should be at most {}",
                    ctx.decoded_len
                ),
            ));
        }
        let mut out = output_buffer(self.name(), size)?;
        out.resize(size, 0);
        let written = lz4_flex::block::decompress_into(block, &mut out)
            .map_err(|e| Error::decode(self.name(), format!("corrupt LZ4 block: {e}")))?;
        if written != size {
            return Err(Error::decode(
                self.name(),
                format!("header says {size} bytes, block decodes to {written}"),
            ));
        }
        Ok(Bytes::from(out))
    }
}

/// Builds the `lz4` codec (`acceleration` only matters for encoding).
pub(super) fn from_config(_config: &Config) -> Result<Box<dyn Codec>> {
    Ok(Box::new(Lz4))
}

/// The names of the HDF5 LZ4 filter's codec (chunkref's own: neither
/// numcodecs nor imagecodecs reads this framing).
pub(super) const HDF5_NAMES: &[&str] = &["hdf5-lz4"];

/// Size of the HDF5 LZ4 filter's header: decoded size (8), block size (4).
const HDF5_HEADER_LEN: usize = 12;

/// Decodes the HDF5 LZ4 filter's framing.
#[derive(Debug)]
struct Hdf5Lz4;

impl Hdf5Lz4 {
    fn fail(&self, reason: String) -> Error {
        Error::decode(self.name(), reason)
    }
}

impl Codec for Hdf5Lz4 {
    fn name(&self) -> &str {
        "hdf5-lz4"
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let Some((header, mut rest)) = input.split_first_chunk::<HDF5_HEADER_LEN>() else {
            return Err(self.fail(format!(
                "needs a {HDF5_HEADER_LEN}-byte header, chunk has {} bytes",
                input.len()
            )));
        };
        let (size, block) = header.split_at(8);
        let size = u64::from_be_bytes(size.try_into().expect("8 bytes"));
        let block = u32::from_be_bytes(block.try_into().expect("4 bytes")) as usize;
        let size = usize::try_from(size)
            .ok()
            .filter(|&s| s <= ctx.decoded_len)
            .ok_or_else(|| {
                self.fail(format!(
                    "header says {size} bytes, chunk should be at most {}",
                    ctx.decoded_len
                ))
            })?;
        if block == 0 && size > 0 {
            return Err(self.fail("header says blocks of 0 bytes".into()));
        }
        let mut out = output_buffer(self.name(), size)?;
        out.resize(size, 0);
        let mut at = 0;
        while at < size {
            let want = block.min(size - at);
            let Some((stored, tail)) = rest.split_first_chunk::<4>() else {
                return Err(self.fail(format!("stream ends before the block at decoded byte {at}")));
            };
            let stored = u32::from_be_bytes(*stored) as usize;
            let Some((data, tail)) = tail.split_at_checked(stored) else {
                return Err(self.fail(format!(
                    "block at decoded byte {at} says {stored} bytes, {} are left",
                    tail.len()
                )));
            };
            let dest = &mut out[at..at + want];
            if stored == want {
                dest.copy_from_slice(data);
            } else {
                let written = lz4_flex::block::decompress_into(data, dest).map_err(|e| {
                    self.fail(format!("corrupt LZ4 block at decoded byte {at}: {e}"))
                })?;
                if written != want {
                    return Err(self.fail(format!(
                        "block at decoded byte {at} decodes to {written} bytes, not {want}"
                    )));
                }
            }
            at += want;
            rest = tail;
        }
        Ok(Bytes::from(out))
    }
}

/// Builds the `hdf5-lz4` codec (no configuration).
pub(super) fn hdf5_from_config(_config: &Config) -> Result<Box<dyn Codec>> {
    Ok(Box::new(Hdf5Lz4))
}

#[cfg(test)]
mod tests {
    use crate::codec::testing::{assert_survives_mutations, decode_with, hex, sample};

    fn encode(data: &[u8]) -> Vec<u8> {
        let size = u32::try_from(data.len()).unwrap().to_le_bytes();
        [&size[..], &lz4_flex::block::compress(data)].concat()
    }

    #[test]
    fn round_trips() {
        let data = sample(70_000);
        let out = decode_with("lz4", r#"{"acceleration": 1}"#, &encode(&data), 70_000);
        assert_eq!(&out.unwrap()[..], &data[..]);
        assert!(decode_with("numcodecs.lz4", "{}", &encode(&[]), 0)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn decodes_numcodecs_output() {
        // numcodecs.LZ4().encode(bytes(range(16)) * 4)
        let golden = hex(
            "40 00 00 00 ff 01 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 00
             18 50 0b 0c 0d 0e 0f",
        );
        let expected: Vec<u8> = (0..64u8).map(|i| i % 16).collect();
        assert_eq!(
            &decode_with("lz4", "{}", &golden, 64).unwrap()[..],
            &expected[..]
        );
    }

    #[test]
    fn rejects_lying_size_headers() {
        let mut encoded = encode(&sample(65_536));
        encoded[..4].copy_from_slice(&1_000_000u32.to_le_bytes());
        let err = decode_with("lz4", "{}", &encoded, 65_536).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("header says 1000000 bytes, chunk should be at most 65536"),
            "{text}"
        );
        encoded[..4].copy_from_slice(&65_000u32.to_le_bytes());
        assert!(decode_with("lz4", "{}", &encoded, 65_536).is_err());
    }

    /// The HDF5 LZ4 filter's framing of `data` in blocks of `block` bytes,
    /// a block stored as it is when LZ4 cannot shrink it (as the filter does).
    fn encode_hdf5(data: &[u8], block: usize) -> Vec<u8> {
        let mut out = (data.len() as u64).to_be_bytes().to_vec();
        out.extend_from_slice(&(block as u32).to_be_bytes());
        for b in data.chunks(block) {
            let packed = lz4_flex::block::compress(b);
            let stored = if packed.len() < b.len() {
                &packed[..]
            } else {
                b
            };
            out.extend_from_slice(&(stored.len() as u32).to_be_bytes());
            out.extend_from_slice(stored);
        }
        out
    }

    #[test]
    fn hdf5_framing_round_trips() {
        let mut data = sample(70_000);
        // An incompressible tail: the last block is stored as it is.
        data.extend((0..5_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
        for block in [1 << 16, 4096, 1 << 30] {
            let out = decode_with("hdf5-lz4", "{}", &encode_hdf5(&data, block), data.len());
            assert_eq!(&out.unwrap()[..], &data[..], "block {block}");
        }
        assert!(decode_with("hdf5-lz4", "{}", &encode_hdf5(&[], 4096), 0)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn hdf5_framing_rejects_hostile_input() {
        let encoded = encode_hdf5(&sample(10_000), 4096);
        for cut in [3, 12, 15, encoded.len() / 2, encoded.len() - 1] {
            assert!(decode_with("hdf5-lz4", "{}", &encoded[..cut], 10_000).is_err());
        }
        let mut lying = encoded.clone();
        lying[..8].copy_from_slice(&(1u64 << 40).to_be_bytes());
        let text = decode_with("hdf5-lz4", "{}", &lying, 10_000)
            .unwrap_err()
            .to_string();
        assert!(text.contains("chunk should be at most 10000"), "{text}");
        let mut zero = encoded.clone();
        zero[8..12].copy_from_slice(&0u32.to_be_bytes());
        assert!(decode_with("hdf5-lz4", "{}", &zero, 10_000).is_err());
        assert_survives_mutations("hdf5-lz4", "{}", &encoded, 10_000);
    }

    #[test]
    fn rejects_hostile_input() {
        let encoded = encode(&sample(10_000));
        assert!(decode_with("lz4", "{}", &encoded[..encoded.len() / 2], 10_000).is_err());
        assert!(decode_with("lz4", "{}", &encoded[..3], 10_000).is_err());
        assert_survives_mutations("lz4", "{}", &encode(&sample(3_000)), 3_000);
        assert!(decode_with("lz4", "{}", b"\x10\x00\x00\x00\xff\xff\xff\xff", 10_000).is_err());
    }
}
