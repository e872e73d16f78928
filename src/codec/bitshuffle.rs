//! Bitshuffle (<https://github.com/kiyo-masui/bitshuffle>): the bit
//! transpose alone (imagecodecs `imagecodecs_bitshuffle`, and the HDF5
//! filter 32008 without compression) and the HDF5 filter's compressed
//! format (`hdf5-bitshuffle`, LZ4 or Zstandard).
//!
//! The elements are cut into blocks of `blocksize` elements (a multiple of
//! 8; 0 means bitshuffle's default, 8 KiB worth of elements but at least
//! 128), then a last block of the remaining elements rounded down to a
//! multiple of 8; the fewer than 8 elements left are stored as they are,
//! at the end. Within a block of `n` elements of `E` bytes the bytes form
//! `8 E` rows of `n / 8` bytes: row `8 j + k` holds bit `k` of byte `j` of
//! every element, element `i` at bit `i % 8` of byte `i / 8`.
//!
//! The HDF5 filter's compressed format (`bshuf_h5filter.c`) starts with the
//! decoded size (8 bytes, big-endian) and the block size in bytes (4 bytes,
//! big-endian); each block is then its compressed size (4 bytes,
//! big-endian) and one LZ4 block or Zstandard frame of the transposed
//! block; the tail follows uncompressed.

use bytes::Bytes;

use super::{Codec, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::error::{Error, Result};
use crate::codec::config::{config_str, config_uint, Config};

/// The transpose alone (imagecodecs' numcodecs name).
pub(super) const NAMES: &[&str] = &["imagecodecs_bitshuffle", "imagecodecs.bitshuffle"];

/// The HDF5 filter's compressed format.
pub(super) const H5_NAMES: &[&str] = &["hdf5-bitshuffle"];

/// Bitshuffle's default block size target, in bytes.
const TARGET_BLOCK_BYTES: usize = 8192;
/// Block sizes are multiples of this many elements.
const BLOCK_MULTIPLE: usize = 8;
/// Bitshuffle's smallest default block size, in elements.
const MIN_DEFAULT_BLOCK: usize = 128;
/// Size of the HDF5 filter's header: decoded size and block size.
const H5_HEADER_LEN: usize = 12;

/// How the transposed blocks are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compression {
    /// As they are, without a header (`imagecodecs_bitshuffle`).
    None,
    /// Each an LZ4 block after its size.
    Lz4,
    /// Each a Zstandard frame after its size.
    Zstd,
}

/// Undoes bitshuffle, decompressing blocks first when they are compressed.
#[derive(Debug)]
struct Bitshuffle {
    /// Bytes per element.
    element_size: usize,
    /// Elements per block (0: bitshuffle's default); the compressed format
    /// carries its own.
    block_size: usize,
    /// How the blocks are stored.
    compression: Compression,
}

/// Bitshuffle's default block size for elements of `element_size` bytes.
fn default_block_size(element_size: usize) -> usize {
    let block = TARGET_BLOCK_BYTES / element_size.max(1);
    (block / BLOCK_MULTIPLE * BLOCK_MULTIPLE).max(MIN_DEFAULT_BLOCK)
}

/// Transposes an 8 x 8 bit matrix: bit `t` of byte `k` becomes bit `k` of
/// byte `t` (Hacker's Delight, `transpose8`).
fn transpose8(mut x: u64) -> u64 {
    let t = (x ^ (x >> 7)) & 0x00AA_00AA_00AA_00AA;
    x ^= t ^ (t << 7);
    let t = (x ^ (x >> 14)) & 0x0000_CCCC_0000_CCCC;
    x ^= t ^ (t << 14);
    let t = (x ^ (x >> 28)) & 0x0000_0000_F0F0_F0F0;
    x ^= t ^ (t << 28);
    x
}

/// Undoes the bit transpose of one block: `input` and `out` hold `n`
/// elements of `size` bytes, `n` a multiple of 8.
fn untranspose(input: &[u8], out: &mut [u8], size: usize) {
    let row = input.len() / (8 * size);
    for group in 0..row {
        for byte in 0..size {
            let mut x = 0u64;
            for bit in 0..8 {
                x |= u64::from(input[(byte * 8 + bit) * row + group]) << (8 * bit);
            }
            for (element, value) in transpose8(x).to_le_bytes().into_iter().enumerate() {
                out[(group * 8 + element) * size + byte] = value;
            }
        }
    }
}

impl Bitshuffle {
    /// The decode error for `reason`.
    fn fail(&self, reason: String) -> Error {
        Error::decode(self.name(), reason)
    }

    /// The decoded size and the block size (elements) of `input`, and
    /// where its blocks start.
    fn layout(&self, input: &[u8], ctx: &DecodeContext<'_>) -> Result<(usize, usize, usize)> {
        let (decoded, block, start) = if self.compression == Compression::None {
            (input.len(), self.block_size, 0)
        } else {
            let header = input.get(..H5_HEADER_LEN).ok_or_else(|| {
                self.fail(format!(
                    "needs a {H5_HEADER_LEN}-byte header, chunk has {} bytes",
                    input.len()
                ))
            })?;
            let decoded = u64::from_be_bytes(header[..8].try_into().expect("8 bytes"));
            let block_bytes = u32::from_be_bytes(header[8..].try_into().expect("4 bytes"));
            let decoded = usize::try_from(decoded).unwrap_or(usize::MAX);
            let block = usize::try_from(block_bytes).unwrap_or(usize::MAX) / self.element_size;
            if block == 0 {
                return Err(self.fail(format!(
                    "header says blocks of {block_bytes} bytes, less than one \
                     {}-byte element",
                    self.element_size
                )));
            }
            (decoded, block, H5_HEADER_LEN)
        };
        if decoded > ctx.decoded_len {
            return Err(self.fail(format!(
                "{} {decoded} bytes, chunk should be at most {}",
                if start == 0 {
                    "input has"
                } else {
                    "header says"
                },
                ctx.decoded_len
            )));
        }
        if !decoded.is_multiple_of(self.element_size) {
            return Err(self.fail(format!(
                "{decoded} bytes is not a whole number of {}-byte elements",
                self.element_size
            )));
        }
        let block = match block {
            0 => default_block_size(self.element_size),
            n if n.is_multiple_of(BLOCK_MULTIPLE) => n,
            n => {
                return Err(self.fail(format!(
                    "block size {n} elements is not a multiple of {BLOCK_MULTIPLE}"
                )))
            }
        };
        Ok((decoded, block, start))
    }

    /// The transposed bytes of the block of `len` bytes at `*at` of
    /// `input` (then `*at` moves past it), decompressed into `scratch` when
    /// compressed.
    fn block<'a>(
        &self,
        input: &'a [u8],
        at: &mut usize,
        len: usize,
        scratch: &'a mut Vec<u8>,
        zstd: &mut Option<::zstd::bulk::Decompressor<'static>>,
    ) -> Result<&'a [u8]> {
        let truncated = |what: &str| self.fail(format!("input ends inside {what} at byte {at}"));
        if self.compression == Compression::None {
            let block = input
                .get(*at..*at + len)
                .ok_or_else(|| truncated("a block"))?;
            *at += len;
            return Ok(block);
        }
        let size = input
            .get(*at..*at + 4)
            .ok_or_else(|| truncated("a block size"))?;
        let stored = u32::from_be_bytes(size.try_into().expect("4 bytes"));
        let stored = usize::try_from(stored).unwrap_or(usize::MAX);
        let compressed = input
            .get(*at + 4..(*at + 4).saturating_add(stored))
            .ok_or_else(|| truncated(&format!("a compressed block of {stored} bytes")))?;
        *at += 4 + stored;
        scratch.clear();
        scratch.resize(len, 0);
        let written = match self.compression {
            Compression::Lz4 => lz4_flex::block::decompress_into(compressed, scratch)
                .map_err(|e| self.fail(format!("corrupt LZ4 block: {e}")))?,
            _ => {
                let zstd = match zstd {
                    Some(d) => d,
                    empty => empty.insert(
                        ::zstd::bulk::Decompressor::new()
                            .map_err(|e| self.fail(format!("no Zstandard context: {e}")))?,
                    ),
                };
                scratch.clear();
                zstd.decompress_to_buffer(compressed, scratch)
                    .map_err(|e| self.fail(format!("corrupt Zstandard block: {e}")))?
            }
        };
        if written != len {
            return Err(self.fail(format!(
                "a block decompresses to {written} bytes, expected {len}"
            )));
        }
        Ok(&scratch[..])
    }
}

impl Codec for Bitshuffle {
    fn name(&self) -> &str {
        match self.compression {
            Compression::None => NAMES[0],
            _ => H5_NAMES[0],
        }
    }

    fn compression(&self) -> String {
        match self.compression {
            Compression::None => "BITSHUFFLE".into(),
            Compression::Lz4 => "BITSHUFFLE,LZ4".into(),
            Compression::Zstd => "BITSHUFFLE,ZSTD".into(),
        }
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let (decoded, block, mut at) = self.layout(&input, ctx)?;
        let size = self.element_size;
        let elements = decoded / size;
        let mut out = output_buffer(self.name(), decoded)?;
        out.resize(decoded, 0);
        let mut scratch = Vec::new();
        let mut zstd = None;
        let last = elements % block / BLOCK_MULTIPLE * BLOCK_MULTIPLE;
        let blocks = std::iter::repeat_n(block, elements / block).chain((last > 0).then_some(last));
        let mut written = 0;
        for n in blocks {
            let len = n * size;
            let transposed = self.block(&input, &mut at, len, &mut scratch, &mut zstd)?;
            untranspose(transposed, &mut out[written..written + len], size);
            written += len;
        }
        let tail = decoded - written;
        let rest = input.get(at..).unwrap_or_default();
        if rest.len() != tail {
            return Err(self.fail(format!(
                "{} bytes follow the blocks, expected the {tail}-byte tail of {} elements",
                rest.len(),
                tail / size
            )));
        }
        out[written..].copy_from_slice(rest);
        Ok(Bytes::from(out))
    }
}

/// Reads a positive element size (`key`) and a block size in elements.
fn sizes(codec: &str, config: &Config, key: &str) -> Result<(usize, usize)> {
    let element_size = config_uint(codec, config, key)?.unwrap_or(1);
    let element_size = usize::try_from(element_size)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            Error::codec_config(
                codec,
                format!("'{key}' should be at least 1, found {element_size}"),
            )
        })?;
    let block = config_uint(codec, config, "blocksize")?.unwrap_or(0);
    let block_size = usize::try_from(block)
        .ok()
        .filter(|n| n.is_multiple_of(BLOCK_MULTIPLE))
        .ok_or_else(|| {
            Error::codec_config(
                codec,
                format!("'blocksize' should be a multiple of {BLOCK_MULTIPLE}, found {block}"),
            )
        })?;
    Ok((element_size, block_size))
}

/// Builds `imagecodecs_bitshuffle` from `itemsize` (default 1) and
/// `blocksize` (elements, default 0: bitshuffle's).
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let (element_size, block_size) = sizes(NAMES[0], config, "itemsize")?;
    Ok(Box::new(Bitshuffle {
        element_size,
        block_size,
        compression: Compression::None,
    }))
}

/// Builds `hdf5-bitshuffle` from `elementsize` (default 1) and
/// `compression` (`lz4`, the default, or `zstd`); the block size comes from
/// each chunk's header.
pub(super) fn h5_from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let codec = H5_NAMES[0];
    let (element_size, _) = sizes(codec, config, "elementsize")?;
    let compression = match config_str(codec, config, "compression")?.unwrap_or("lz4") {
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd,
        other => {
            return Err(Error::codec_config(
                codec,
                format!("'compression' should be \"lz4\" or \"zstd\", found \"{other}\""),
            ))
        }
    };
    Ok(Box::new(Bitshuffle {
        element_size,
        block_size: 0,
        compression,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testing::{assert_survives_mutations, decode_with, hex, sample};

    /// The bit transpose of one block, bit by bit.
    fn transpose(block: &[u8], size: usize) -> Vec<u8> {
        let n = block.len() / size;
        let mut out = vec![0u8; block.len()];
        for i in 0..n {
            for j in 0..size {
                for k in 0..8 {
                    let bit = (block[i * size + j] >> k) & 1;
                    out[(j * 8 + k) * (n / 8) + i / 8] |= bit << (i % 8);
                }
            }
        }
        out
    }

    /// The blocks of `data` as bitshuffle cuts them, each through `store`,
    /// then the tail.
    fn encode(data: &[u8], size: usize, block: usize, store: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
        let elements = data.len() / size;
        let last = elements % block / 8 * 8;
        let mut out = Vec::new();
        let mut at = 0;
        for n in std::iter::repeat_n(block, elements / block).chain((last > 0).then_some(last)) {
            out.extend(store(&transpose(&data[at..at + n * size], size)));
            at += n * size;
        }
        out.extend_from_slice(&data[at..]);
        out
    }

    fn h5_encode(data: &[u8], size: usize, block: usize, zstd: bool) -> Vec<u8> {
        let mut out = (data.len() as u64).to_be_bytes().to_vec();
        out.extend(u32::try_from(block * size).unwrap().to_be_bytes());
        out.extend(encode(data, size, block, |t| {
            let c = if zstd {
                ::zstd::bulk::compress(t, 3).unwrap()
            } else {
                lz4_flex::block::compress(t)
            };
            [&u32::try_from(c.len()).unwrap().to_be_bytes()[..], &c].concat()
        }));
        out
    }

    #[test]
    fn untranspose_matches_the_bitwise_definition() {
        for size in [1, 2, 3, 4, 8] {
            let data = sample(64 * size);
            let mut out = vec![0u8; data.len()];
            untranspose(&transpose(&data, size), &mut out, size);
            assert_eq!(out, data, "element size {size}");
        }
        assert_eq!(default_block_size(1), 8192);
        assert_eq!(default_block_size(4), 2048);
        assert_eq!(default_block_size(128), 128);
    }

    #[test]
    fn decodes_imagecodecs_output() {
        // imagecodecs.bitshuffle_encode(
        //     np.array([1, 2, 0x8000, 3, 4, 5, 6, 7], "<u2").tobytes(), itemsize=2)
        let golden = hex("a9 ca f0 00 00 00 00 00 00 00 00 00 00 00 00 04");
        let expected: Vec<u8> = [1u16, 2, 0x8000, 3, 4, 5, 6, 7]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let out = decode_with("imagecodecs_bitshuffle", r#"{"itemsize": 2}"#, &golden, 16);
        assert_eq!(&out.unwrap()[..], &expected[..]);
    }

    #[test]
    fn round_trips_blocks_last_block_and_tail() {
        // 1 003 four-byte elements in blocks of 64: 15 blocks, a last block
        // of 40, a tail of 3.
        let data = sample(4 * 1_003);
        let plain = encode(&data, 4, 64, <[u8]>::to_vec);
        let json = r#"{"itemsize": 4, "blocksize": 64}"#;
        let out = decode_with("imagecodecs.bitshuffle", json, &plain, data.len()).unwrap();
        assert_eq!(&out[..], &data[..]);
        for (zstd, json) in [
            (false, r#"{"elementsize": 4}"#),
            (true, r#"{"elementsize": 4, "compression": "zstd"}"#),
        ] {
            let encoded = h5_encode(&data, 4, 64, zstd);
            let out = decode_with("hdf5-bitshuffle", json, &encoded, data.len()).unwrap();
            assert_eq!(&out[..], &data[..], "zstd {zstd}");
        }
        // The default block size, and fewer than 8 elements (tail only).
        let data = sample(2 * 5_000);
        let plain = encode(&data, 2, 4096, <[u8]>::to_vec);
        let out = decode_with(
            "imagecodecs_bitshuffle",
            r#"{"itemsize": 2}"#,
            &plain,
            10_000,
        );
        assert_eq!(&out.unwrap()[..], &data[..]);
        let tiny = h5_encode(&sample(6), 2, 4096, false);
        let out = decode_with("hdf5-bitshuffle", r#"{"elementsize": 2}"#, &tiny, 6).unwrap();
        assert_eq!(&out[..], &sample(6)[..]);
    }

    #[test]
    fn rejects_hostile_input() {
        let data = sample(4 * 1_003);
        let json = r#"{"elementsize": 4}"#;
        let encoded = h5_encode(&data, 4, 64, false);
        let fails = |input: &[u8], len: usize, words: &str| {
            let err = decode_with("hdf5-bitshuffle", json, input, len).unwrap_err();
            assert!(err.to_string().contains(words), "{err}");
        };
        fails(&encoded[..11], 4_012, "needs a 12-byte header");
        fails(
            &encoded[..encoded.len() - 1],
            4_012,
            "bytes follow the blocks",
        );
        fails(
            &encoded[..100],
            4_012,
            "input ends inside a compressed block",
        );
        fails(
            &encoded,
            4_011,
            "header says 4012 bytes, chunk should be at most 4011",
        );
        let mut lying = encoded.clone();
        lying[..8].copy_from_slice(&u64::MAX.to_be_bytes());
        fails(&lying, 4_012, "header says");
        let mut lying = encoded.clone();
        lying[8..12].copy_from_slice(&3u32.to_be_bytes());
        fails(&lying, 4_012, "less than one");
        lying[8..12].copy_from_slice(&12u32.to_be_bytes());
        fails(&lying, 4_012, "not a multiple of 8");
        let mut lying = encoded.clone();
        lying[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
        fails(
            &lying,
            4_012,
            "input ends inside a compressed block of 4294967295 bytes",
        );
        lying[..8].copy_from_slice(&4_010u64.to_be_bytes());
        fails(&lying, 4_012, "not a whole number of 4-byte elements");
        let plain = encode(&data, 4, 64, <[u8]>::to_vec);
        let err = decode_with(
            "imagecodecs_bitshuffle",
            r#"{"itemsize": 4}"#,
            &plain,
            4_000,
        );
        assert!(err
            .unwrap_err()
            .to_string()
            .contains("input has 4012 bytes"));
        assert!(decode_with("hdf5-bitshuffle", r#"{"compression": "lzf"}"#, &[], 0).is_err());
        assert!(decode_with("imagecodecs_bitshuffle", r#"{"blocksize": 12}"#, &[], 0).is_err());
        assert!(decode_with("imagecodecs_bitshuffle", r#"{"itemsize": 0}"#, &[], 0).is_err());
        assert_survives_mutations("hdf5-bitshuffle", json, &encoded, 4_012);
        let zstd = h5_encode(&data, 4, 64, true);
        assert_survives_mutations(
            "hdf5-bitshuffle",
            r#"{"elementsize": 4, "compression": "zstd"}"#,
            &zstd,
            4_012,
        );
        assert_survives_mutations(
            "imagecodecs_bitshuffle",
            r#"{"itemsize": 4, "blocksize": 64}"#,
            &plain,
            4_012,
        );
    }
}
