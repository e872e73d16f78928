//! Zarr v3 `sharding_indexed` shards: the codec's configuration, and the
//! shard index (offset and length of every inner chunk) at the start or
//! end of each shard file, decoded with its index codecs (`bytes`, then an
//! optional `crc32c` that is verified).

use super::walk::Root;

use serde_json::{Map, Value};

use crate::base::error::{Error, Result};
use crate::codec::crc32c::crc32c;

/// An index entry's value for an inner chunk that was never written.
const EMPTY: u64 = u64::MAX;

/// Bytes of one index entry: offset and length, two u64.
const ENTRY_BYTES: u64 = 16;

/// Bytes of the `crc32c` checksum after the index.
const CHECKSUM_BYTES: u64 = 4;

/// How the shards of one array are laid out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sharding {
    /// Shape of an inner chunk in elements.
    pub(crate) inner_shape: Vec<u64>,
    /// Inner chunks per shard along each axis.
    pub(crate) per_shard: Vec<u64>,
    /// The index is at the start of the shard file (else at its end).
    index_at_start: bool,
    /// The index entries are big-endian (else little-endian).
    big_endian: bool,
    /// A `crc32c` checksum follows the index.
    checksum: bool,
    /// The codecs of the inner chunks, as written in the metadata.
    pub(crate) inner_codecs: Value,
}

/// An inner chunk stored in a shard: its rank in the shard (row-major over
/// [`Sharding::per_shard`]) and its byte range in the shard file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InnerChunk {
    /// Row-major rank of the inner chunk within its shard.
    pub(crate) rank: u64,
    /// Offset in the shard file.
    pub(crate) offset: u64,
    /// Length in bytes.
    pub(crate) nbytes: u64,
}

impl Sharding {
    /// Parses the configuration of the `sharding_indexed` codec of array
    /// `array`, whose chunk grid has chunks (shards) of `shard_shape`.
    pub(crate) fn from_config(
        array: &str,
        shard_shape: &[u64],
        config: &Map<String, Value>,
    ) -> Result<Sharding> {
        let bad = |reason: String| Error::InvalidMetadata {
            array: array.to_string(),
            reason: format!("sharding_indexed: {reason}"),
        };
        let inner_shape =
            crate::index::zarr::u64_list(config.get("chunk_shape"), "chunk_shape").map_err(bad)?;
        let divides = inner_shape.len() == shard_shape.len()
            && inner_shape
                .iter()
                .zip(shard_shape)
                .all(|(&i, &s)| i > 0 && s % i == 0);
        if !divides {
            return Err(bad(format!(
                "the shard shape {shard_shape:?} is not a multiple of the inner chunk shape \
                 {inner_shape:?}"
            )));
        }
        let per_shard: Vec<u64> = shard_shape
            .iter()
            .zip(&inner_shape)
            .map(|(s, i)| s / i)
            .collect();
        per_shard
            .iter()
            .try_fold(ENTRY_BYTES + CHECKSUM_BYTES, |acc, &n| acc.checked_mul(n))
            .ok_or_else(|| Error::Limits {
                what: format!(
                    "array '{array}': {per_shard:?} inner chunks per shard make an index larger \
                     than 2^64 bytes"
                ),
            })?;
        let inner_codecs = config
            .get("codecs")
            .filter(|c| c.is_array())
            .cloned()
            .ok_or_else(|| bad("no 'codecs' list".into()))?;
        if codec_names(&inner_codecs).any(|n| n == "sharding_indexed") {
            return Err(Error::unsupported(format!(
                "nested sharding (a sharding_indexed codec inside the sharding_indexed codec) \
                 in array '{array}'"
            )));
        }
        let index_at_start = match config.get("index_location").and_then(Value::as_str) {
            None | Some("end") => false,
            Some("start") => true,
            Some(other) => return Err(bad(format!("index_location '{other}'"))),
        };
        let (big_endian, checksum) = index_codecs(config.get("index_codecs")).map_err(|what| {
            Error::unsupported(format!("shard index codecs {what} in array '{array}'"))
        })?;
        Ok(Sharding {
            inner_shape,
            per_shard,
            index_at_start,
            big_endian,
            checksum,
            inner_codecs,
        })
    }

    /// Inner chunks in one shard.
    fn chunks_per_shard(&self) -> u64 {
        self.per_shard.iter().product()
    }

    /// Bytes of the encoded shard index.
    fn index_len(&self) -> u64 {
        self.chunks_per_shard() * ENTRY_BYTES + if self.checksum { CHECKSUM_BYTES } else { 0 }
    }

    /// The stored inner chunks of the shard file `key` of the store at
    /// `root`, `size` bytes long.
    pub(crate) fn read_index(&self, root: &Root, key: &str, size: u64) -> Result<Vec<InnerChunk>> {
        let bad = |reason: String| Error::MalformedSource {
            path: root.name_of(key),
            reason,
        };
        let len = self.index_len();
        if size < len {
            return Err(bad(format!(
                "the shard file is {size} bytes, shorter than its index ({len} bytes expected \
                 for {} inner chunks{})",
                self.chunks_per_shard(),
                if self.checksum { " and a crc32c" } else { "" }
            )));
        }
        let at = if self.index_at_start { 0 } else { size - len };
        let bytes = root.read(key, at, len)?;
        self.decode_index(&bytes, size).map_err(bad)
    }

    /// Decodes an encoded shard index (`bytes`, [`Sharding::index_len`]
    /// long) of a shard file of `size` bytes.
    fn decode_index(&self, bytes: &[u8], size: u64) -> Result<Vec<InnerChunk>, String> {
        let entries_len = (self.chunks_per_shard() * ENTRY_BYTES) as usize;
        if bytes.len() as u64 != self.index_len() {
            return Err(format!(
                "the shard index is {} bytes, {} expected",
                bytes.len(),
                self.index_len()
            ));
        }
        let (entries, stored) = bytes.split_at(entries_len);
        if self.checksum {
            let expected = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
            let actual = crc32c(entries);
            if actual != expected {
                return Err(format!(
                    "shard index crc32c mismatch (stored {expected:#010x}, computed \
                     {actual:#010x})"
                ));
            }
        }
        let word = |b: &[u8]| {
            let b: [u8; 8] = b.try_into().unwrap_or_default();
            if self.big_endian {
                u64::from_be_bytes(b)
            } else {
                u64::from_le_bytes(b)
            }
        };
        let mut chunks = Vec::new();
        for (rank, entry) in (0u64..).zip(entries.chunks_exact(ENTRY_BYTES as usize)) {
            let (offset, nbytes) = (word(&entry[..8]), word(&entry[8..]));
            match (offset, nbytes) {
                (EMPTY, EMPTY) => continue,
                _ if offset.checked_add(nbytes).is_some_and(|end| end <= size) => {
                    chunks.push(InnerChunk {
                        rank,
                        offset,
                        nbytes,
                    })
                }
                _ => {
                    return Err(format!(
                        "inner chunk {rank} of the shard index lies at bytes {offset} + \
                         {nbytes}, outside the shard file of {size} bytes"
                    ))
                }
            }
        }
        Ok(chunks)
    }

    /// The grid index, in the array's inner-chunk grid, of inner chunk
    /// `rank` of the shard at shard grid index `shard`.
    pub(crate) fn inner_index(&self, shard: &[u64], rank: u64) -> Vec<u64> {
        let mut rest = rank;
        let mut idx = vec![0; shard.len()];
        for axis in (0..shard.len()).rev() {
            let n = self.per_shard[axis];
            idx[axis] = shard[axis] * n + rest % n;
            rest /= n;
        }
        idx
    }
}

/// The names of the codecs of a v3 codec list.
fn codec_names(codecs: &Value) -> impl Iterator<Item = &str> {
    codecs
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.as_str().or_else(|| c.get("name")?.as_str()))
}

/// The byte order and presence of a checksum of `index_codecs`: `bytes`
/// (any endianness) and an optional `crc32c`; what else it holds as the
/// error. Absent, they are the default, `bytes` little-endian + `crc32c`.
fn index_codecs(v: Option<&Value>) -> Result<(bool, bool), String> {
    let Some(list) = v else {
        return Ok((false, true));
    };
    let names: Vec<&str> = codec_names(list).collect();
    let endian = list
        .get(0)
        .and_then(|c| c.get("configuration"))
        .and_then(|c| c.get("endian"))
        .and_then(Value::as_str);
    let big_endian = endian == Some("big");
    match names.as_slice() {
        ["bytes"] => Ok((big_endian, false)),
        ["bytes", "crc32c"] => Ok((big_endian, true)),
        _ => Err(format!(
            "{list} (chunkref reads 'bytes' and an optional 'crc32c')"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sharding(config: Value) -> Result<Sharding> {
        Sharding::from_config("a", &[4, 6], config.as_object().unwrap())
    }

    fn config() -> Value {
        json!({"chunk_shape": [2, 3], "codecs": [{"name": "bytes"}]})
    }

    /// An index of (offset, nbytes) entries, little-endian, with a crc32c.
    fn encode(entries: &[(u64, u64)]) -> Vec<u8> {
        let mut out: Vec<u8> = entries
            .iter()
            .flat_map(|(o, n)| [o.to_le_bytes(), n.to_le_bytes()].concat())
            .collect();
        out.extend(crc32c(&out).to_le_bytes());
        out
    }

    #[test]
    fn decodes_an_index_skipping_empty_chunks() {
        let s = sharding(config()).unwrap();
        assert_eq!((s.per_shard.clone(), s.index_len()), (vec![2, 2], 68));
        let index = encode(&[(0, 10), (EMPTY, EMPTY), (10, 5), (15, 0)]);
        let chunks = s.decode_index(&index, 15 + 68).unwrap();
        let ranks: Vec<_> = chunks
            .iter()
            .map(|c| (c.rank, c.offset, c.nbytes))
            .collect();
        assert_eq!(ranks, [(0, 0, 10), (2, 10, 5), (3, 15, 0)]);
        assert_eq!(s.inner_index(&[1, 2], 3), vec![3, 5]);
        assert_eq!(s.inner_index(&[1, 2], 2), vec![3, 4]);
    }

    #[test]
    fn verifies_the_checksum_and_ranges() {
        let s = sharding(config()).unwrap();
        let mut index = encode(&[(0, 10), (EMPTY, EMPTY), (10, 5), (15, 0)]);
        index[3] ^= 1;
        let e = s.decode_index(&index, 200).unwrap_err();
        assert!(e.contains("crc32c mismatch"), "{e}");
        let index = encode(&[(0, 10), (EMPTY, EMPTY), (10, 5), (150, 60)]);
        let e = s.decode_index(&index, 200).unwrap_err();
        assert!(
            e.contains("inner chunk 3") && e.contains("200 bytes"),
            "{e}"
        );
        let index = encode(&[(0, 10), (EMPTY, 0), (10, 5), (15, 0)]);
        assert!(s.decode_index(&index, 200).is_err());
        let e = s.decode_index(&index[..60], 200).unwrap_err();
        assert!(e.contains("60 bytes, 68 expected"), "{e}");
    }

    #[test]
    fn reads_big_endian_indexes_without_checksum() {
        let mut c = config();
        c["index_codecs"] = json!([{"name": "bytes", "configuration": {"endian": "big"}}]);
        c["index_location"] = json!("start");
        let s = sharding(c).unwrap();
        assert_eq!(s.index_len(), 64);
        let mut index: Vec<u8> = [(64u64, 3u64), (EMPTY, EMPTY), (EMPTY, EMPTY), (67, 1)]
            .iter()
            .flat_map(|(o, n)| [o.to_be_bytes(), n.to_be_bytes()].concat())
            .collect();
        let chunks = s.decode_index(&index, 68).unwrap();
        assert_eq!((chunks.len(), chunks[1].offset), (2, 67));
        index.push(0);
        assert!(s.decode_index(&index, 68).is_err());
    }

    #[test]
    fn refuses_bad_configurations() {
        let mut c = config();
        c["chunk_shape"] = json!([4, 4]);
        let e = sharding(c).unwrap_err().to_string();
        assert!(e.contains("not a multiple"), "{e}");
        let mut c = config();
        c["codecs"] = json!([{"name": "sharding_indexed", "configuration": {}}]);
        let e = sharding(c).unwrap_err().to_string();
        assert!(e.contains("nested sharding"), "{e}");
        let mut c = config();
        c["index_codecs"] = json!([{"name": "bytes"}, {"name": "gzip"}]);
        assert!(sharding(c).is_err());
        let mut c = config();
        c["index_location"] = json!("middle");
        assert!(sharding(c).is_err());
    }
}
