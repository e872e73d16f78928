//! TIFF and BigTIFF structure: the header and the chain of IFDs, read with
//! range reads only (a small head block serves the usual COG layout).

use std::collections::{BTreeMap, HashSet};

use crate::base::error::{Error, Result};
use crate::io::source::Source;
/// Most IFDs followed in one file.
const MAX_IFDS: usize = 4096;
/// Most entries in one IFD.
const MAX_ENTRIES: u64 = 4096;
/// Largest single tag value read (256 MiB: 32M tile offsets in BigTIFF).
const MAX_TAG_BYTES: u64 = 256 << 20;

/// A tag's value, widened.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Integer types (BYTE, SHORT, LONG, LONG8, IFD, signed ones).
    Ints(Vec<i128>),
    /// RATIONAL, FLOAT, DOUBLE.
    Floats(Vec<f64>),
    /// ASCII, NUL-trimmed.
    Ascii(String),
    /// UNDEFINED bytes.
    Bytes(Vec<u8>),
}

/// One image file directory: tag number -> value.
#[derive(Debug, Clone, Default)]
pub struct Ifd {
    /// Tags of the IFD.
    pub tags: BTreeMap<u16, Value>,
}

impl Ifd {
    /// The first integer of a tag.
    pub fn int(&self, tag: u16) -> Option<u64> {
        match self.tags.get(&tag)? {
            Value::Ints(v) => v.first().and_then(|&i| u64::try_from(i).ok()),
            _ => None,
        }
    }

    /// All integers of a tag (non-negative).
    pub fn ints(&self, tag: u16) -> Option<Vec<u64>> {
        match self.tags.get(&tag)? {
            Value::Ints(v) => v.iter().map(|&i| u64::try_from(i).ok()).collect(),
            _ => None,
        }
    }

    /// All numbers of a tag as floats.
    pub fn floats(&self, tag: u16) -> Option<Vec<f64>> {
        match self.tags.get(&tag)? {
            Value::Ints(v) => Some(v.iter().map(|&i| i as f64).collect()),
            Value::Floats(v) => Some(v.clone()),
            _ => None,
        }
    }

    /// A tag's text.
    pub fn ascii(&self, tag: u16) -> Option<&str> {
        match self.tags.get(&tag)? {
            Value::Ascii(s) => Some(s),
            _ => None,
        }
    }

    /// A tag's raw bytes (UNDEFINED or BYTE values).
    pub fn bytes(&self, tag: u16) -> Option<Vec<u8>> {
        match self.tags.get(&tag)? {
            Value::Bytes(b) => Some(b.clone()),
            Value::Ints(v) => v.iter().map(|&i| u8::try_from(i).ok()).collect(),
            _ => None,
        }
    }
}

/// The structure of a TIFF file.
#[derive(Debug)]
pub struct Tiff {
    /// True for `MM` (big-endian) files.
    pub big_endian: bool,
    /// True for BigTIFF.
    pub bigtiff: bool,
    /// Every IFD of the main chain, in file order.
    pub ifds: Vec<Ifd>,
}

/// Reads the header and every IFD of `src`; a chain that loops, or whose
/// next IFD cannot be read, ends before it (with a warning), as GDAL reads
/// it. The first IFD must read.
pub fn read(src: &Source) -> Result<Tiff> {
    let head = src.read(0, 16.min(src.len()))?;
    if head.len() < 8 {
        return Err(src.malformed("file shorter than a TIFF header"));
    }
    let big_endian = match &head[..2] {
        b"II" => false,
        b"MM" => true,
        _ => return Err(src.malformed("no II/MM byte-order mark")),
    };
    let r = Reader { big_endian };
    let (bigtiff, first) = match r.u16(&head[2..4]) {
        42 => (false, r.u32(&head[4..8]) as u64),
        43 if head.len() >= 16 => (true, r.u64(&head[8..16])),
        other => return Err(src.malformed(format!("version {other} is neither 42 nor 43"))),
    };
    let mut ifds = Vec::new();
    let mut seen = HashSet::new();
    let mut next = first;
    while next != 0 {
        // libtiff treats an IFD pointing back into the chain as the last
        // one, with a warning, and GDAL opens the file.
        if !seen.insert(next) {
            eprintln!(
                "chunkref: warning: {}: IFD {} points back to offset {next}, an earlier IFD: \
                 the chain ends there, as libtiff ends it",
                src.path(),
                ifds.len() - 1
            );
            break;
        }
        if ifds.len() >= MAX_IFDS {
            return Err(src.malformed(format!("more than {MAX_IFDS} IFDs")));
        }
        let (ifd, after) = match read_ifd(src, &r, bigtiff, next) {
            Ok(read) => read,
            Err(e) => {
                let e = format!("IFD {} at offset {next}: {}", ifds.len(), strip(e));
                if ifds.is_empty() {
                    return Err(src.malformed(e));
                }
                // GDAL opens the IFDs libtiff read before the one it failed on.
                eprintln!(
                    "chunkref: warning: {}: {e}: the chain ends before it, as GDAL reads it",
                    src.path()
                );
                break;
            }
        };
        ifds.push(ifd);
        next = after;
    }
    if ifds.is_empty() {
        return Err(src.malformed("no IFD"));
    }
    Ok(Tiff {
        big_endian,
        bigtiff,
        ifds,
    })
}

fn strip(e: Error) -> String {
    match e {
        Error::MalformedSource { reason, .. } => reason
            .trim_start_matches("not a readable TIFF: ")
            .to_string(),
        other => other.to_string(),
    }
}

struct Reader {
    big_endian: bool,
}

impl Reader {
    fn u16(&self, b: &[u8]) -> u16 {
        let a = [b[0], b[1]];
        if self.big_endian {
            u16::from_be_bytes(a)
        } else {
            u16::from_le_bytes(a)
        }
    }
    fn u32(&self, b: &[u8]) -> u32 {
        let a = [b[0], b[1], b[2], b[3]];
        if self.big_endian {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    }
    fn u64(&self, b: &[u8]) -> u64 {
        let a: [u8; 8] = b[..8].try_into().unwrap_or_default();
        if self.big_endian {
            u64::from_be_bytes(a)
        } else {
            u64::from_le_bytes(a)
        }
    }
    fn f32(&self, b: &[u8]) -> f32 {
        f32::from_bits(self.u32(b))
    }
    fn f64(&self, b: &[u8]) -> f64 {
        f64::from_bits(self.u64(b))
    }
}

/// Size in bytes of one value of a TIFF field type.
fn type_size(t: u16) -> Option<u64> {
    Some(match t {
        1 | 2 | 6 | 7 => 1,
        3 | 8 => 2,
        4 | 9 | 11 | 13 => 4,
        5 | 10 | 12 | 16 | 17 | 18 => 8,
        _ => return None,
    })
}

fn read_ifd(src: &Source, r: &Reader, bigtiff: bool, offset: u64) -> Result<(Ifd, u64)> {
    let (count_len, entry_len, next_len) = if bigtiff { (8, 20, 8) } else { (2, 12, 4) };
    let cb = src.read(offset, count_len)?;
    let n = if bigtiff {
        r.u64(&cb)
    } else {
        r.u16(&cb) as u64
    };
    if n > MAX_ENTRIES {
        return Err(src.malformed(format!("{n} entries")));
    }
    let body = src.read(offset + count_len, n * entry_len + next_len)?;
    let mut ifd = Ifd::default();
    for e in body[..(n * entry_len) as usize].chunks_exact(entry_len as usize) {
        let tag = r.u16(&e[0..2]);
        let typ = r.u16(&e[2..4]);
        let (count, inline) = if bigtiff {
            (r.u64(&e[4..12]), &e[12..20])
        } else {
            (r.u32(&e[4..8]) as u64, &e[8..12])
        };
        let Some(size) = type_size(typ) else { continue }; // unknown types are skipped, as libtiff does
        let total = count
            .checked_mul(size)
            .filter(|&t| t <= MAX_TAG_BYTES)
            .ok_or_else(|| src.malformed(format!("tag {tag} has {count} values")))?;
        let data = if total <= inline.len() as u64 {
            inline[..total as usize].to_vec()
        } else {
            let at = if bigtiff {
                r.u64(inline)
            } else {
                r.u32(inline) as u64
            };
            src.read(at, total)?
        };
        ifd.tags
            .insert(tag, decode_value(r, typ, size as usize, &data));
    }
    let tail = &body[(n * entry_len) as usize..];
    let next = if bigtiff {
        r.u64(tail)
    } else {
        r.u32(tail) as u64
    };
    Ok((ifd, next))
}

fn decode_value(r: &Reader, typ: u16, size: usize, data: &[u8]) -> Value {
    let items = data.chunks_exact(size);
    match typ {
        2 => Value::Ascii(
            String::from_utf8_lossy(data)
                .trim_end_matches('\0')
                .to_string(),
        ),
        7 => Value::Bytes(data.to_vec()),
        1 => Value::Ints(data.iter().map(|&b| b as i128).collect()),
        6 => Value::Ints(data.iter().map(|&b| b as i8 as i128).collect()),
        3 => Value::Ints(items.map(|b| r.u16(b) as i128).collect()),
        8 => Value::Ints(items.map(|b| r.u16(b) as i16 as i128).collect()),
        4 | 13 => Value::Ints(items.map(|b| r.u32(b) as i128).collect()),
        9 => Value::Ints(items.map(|b| r.u32(b) as i32 as i128).collect()),
        16 | 18 => Value::Ints(items.map(|b| r.u64(b) as i128).collect()),
        17 => Value::Ints(items.map(|b| r.u64(b) as i64 as i128).collect()),
        5 => Value::Floats(
            items
                .map(|b| r.u32(&b[..4]) as f64 / r.u32(&b[4..]).max(1) as f64)
                .collect(),
        ),
        10 => Value::Floats(
            items
                .map(|b| r.u32(&b[..4]) as i32 as f64 / (r.u32(&b[4..]) as i32).max(1) as f64)
                .collect(),
        ),
        11 => Value::Floats(items.map(|b| r.f32(b) as f64).collect()),
        _ => Value::Floats(items.map(|b| r.f64(b)).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal classic or BigTIFF file with one IFD of SHORT/LONG tags,
    /// whose next-IFD pointer is `next` (0 ends the chain).
    fn tiff(
        big_endian: bool,
        bigtiff: bool,
        entries: &[(u16, u16, Vec<u32>)],
        next: u64,
    ) -> Vec<u8> {
        let w16 = |v: u16| {
            if big_endian {
                v.to_be_bytes().to_vec()
            } else {
                v.to_le_bytes().to_vec()
            }
        };
        let w32 = |v: u32| {
            if big_endian {
                v.to_be_bytes().to_vec()
            } else {
                v.to_le_bytes().to_vec()
            }
        };
        let w64 = |v: u64| {
            if big_endian {
                v.to_be_bytes().to_vec()
            } else {
                v.to_le_bytes().to_vec()
            }
        };
        let mut out = if big_endian {
            b"MM".to_vec()
        } else {
            b"II".to_vec()
        };
        let first = if bigtiff { 16u64 } else { 8 };
        if bigtiff {
            out.extend(w16(43));
            out.extend(w16(8));
            out.extend(w16(0));
            out.extend(w64(first));
        } else {
            out.extend(w16(42));
            out.extend(w32(first as u32));
        }
        out.extend(if bigtiff {
            w64(entries.len() as u64)
        } else {
            w16(entries.len() as u16)
        });
        for (tag, typ, values) in entries {
            out.extend(w16(*tag));
            out.extend(w16(*typ));
            let mut inline = Vec::new();
            for v in values {
                inline.extend(if *typ == 3 { w16(*v as u16) } else { w32(*v) });
            }
            out.extend(if bigtiff {
                w64(values.len() as u64)
            } else {
                w32(values.len() as u32)
            });
            inline.resize(if bigtiff { 8 } else { 4 }, 0);
            out.extend(inline);
        }
        out.extend(if bigtiff { w64(next) } else { w32(next as u32) });
        out
    }

    fn read_bytes(bytes: &[u8]) -> Result<Tiff> {
        let path = std::env::temp_dir().join(format!(
            "chunkref-ifd-{}-{}.tif",
            std::process::id(),
            bytes.len()
        ));
        std::fs::write(&path, bytes).unwrap();
        let r = read(&Source::open(path.to_str().unwrap(), "TIFF").unwrap());
        std::fs::remove_file(&path).unwrap();
        r
    }

    #[test]
    fn reads_all_header_kinds() {
        let entries = [
            (256u16, 3u16, vec![300]),
            (257, 4, vec![200]),
            (258, 3, vec![8, 8]),
        ];
        for (be, big) in [(false, false), (true, false), (false, true), (true, true)] {
            let t = read_bytes(&tiff(be, big, &entries, 0)).unwrap();
            assert_eq!((t.big_endian, t.bigtiff, t.ifds.len()), (be, big, 1));
            assert_eq!(t.ifds[0].int(256), Some(300));
            assert_eq!(t.ifds[0].int(257), Some(200));
            assert_eq!(t.ifds[0].ints(258), Some(vec![8, 8]));
        }
    }

    #[test]
    fn a_chain_ends_at_a_loop_or_an_unreadable_ifd() {
        let looped = tiff(false, false, &[(256, 3, vec![1])], 8);
        assert_eq!(read_bytes(&looped).unwrap().ifds.len(), 1);
        let far = tiff(false, false, &[(256, 3, vec![1])], 1 << 30);
        assert_eq!(read_bytes(&far).unwrap().ifds.len(), 1);
    }

    #[test]
    fn refuses_truncation_and_non_tiffs() {
        let mut truncated = tiff(false, false, &[(256, 3, vec![1]), (257, 3, vec![1])], 0);
        truncated.truncate(20);
        assert!(read_bytes(&truncated)
            .unwrap_err()
            .to_string()
            .contains("past the end"));
        assert!(read_bytes(b"GIF89a...")
            .unwrap_err()
            .to_string()
            .contains("byte-order"));
    }
}
