//! `https://awslabs.github.io/osml-imagery-io/codecs/dted` (alias `dted`):
//! the data records of a DTED cell, as osml-imagery-io 0.2.x indexes
//! describe them.
//!
//! Input: `num_lon_lines` records of `record_size` bytes, one per longitude
//! line (west to east), each the sentinel `0xAA`, block and line counts,
//! `num_lat_points` big-endian signed-magnitude posts (south to north) and
//! a 32-bit checksum (the sum of the record's preceding bytes).
//! Output: the chunk (1, rows, cols) of int16 posts, north-up, row-major,
//! in the chunk's byte order, after `trim_top` / `trim_bottom` /
//! `trim_left` / `trim_right` posts are removed from the edges.
//!
//! Like GDAL's DTED driver, a negative post below -16000 other than the void
//! value -32767 is taken as wrongly written in two's complement.
//!
//! chunkref extensions (absent from indexes the peer writes):
//! - `bad_checksum`: `"error"` (the default: a record whose checksum does
//!   not match fails the read, naming the record) or `"warning"` (a GDAL
//!   warning naming the record, and the posts are read).
//! - `trimmed_edge_chunks` `[row, col]`: the chunk row `row` / column `col`
//!   of a mosaic shows the posts `trim_bottom` / `trim_right` removed from
//!   the cell it references (the mosaic's outer south row and east column).
//! - A trimmed cell smaller than the chunk fills its north-west corner; the
//!   rest (outside the array) is void.

use bytes::Bytes;

use super::{Codec, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::dtype::{ByteOrder, ScalarKind};
use crate::base::error::{Error, Result};
use crate::codec::config::{config_str, config_uint, Config};

/// The canonical name of the codec, as osml-imagery-io writes it.
pub(super) const URI: &str = "https://awslabs.github.io/osml-imagery-io/codecs/dted";

/// Every name the codec answers to, canonical first.
pub(super) const NAMES: &[&str] = &[URI, "dted"];

/// Bytes before the posts of a record (sentinel, counts).
const RECORD_HEAD: usize = 8;
/// Bytes after the posts of a record (checksum).
const RECORD_TAIL: usize = 4;
/// First byte of every record.
const SENTINEL: u8 = 0xAA;
/// DTED's void post.
const VOID: i16 = -32767;

/// Decodes the data records of one DTED cell.
#[derive(Debug)]
struct Dted {
    /// Posts per record (rows).
    num_lat_points: usize,
    /// Records (columns).
    num_lon_lines: usize,
    record_size: usize,
    /// Posts removed from the north, south, west and east edges.
    trim_top: usize,
    trim_bottom: usize,
    trim_left: usize,
    trim_right: usize,
    /// A bad checksum is a warning (true) or an error (false).
    checksum_warns: bool,
    /// Chunk row and column showing what `trim_bottom` / `trim_right` removed.
    trimmed_edge_chunks: Option<[u64; 2]>,
}

/// Rows or columns of the cell a chunk shows: `start..start + len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    len: usize,
}

impl Codec for Dted {
    fn name(&self) -> &str {
        URI
    }

    fn compression(&self) -> String {
        "DTED".into()
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        if ctx.dtype.kind != ScalarKind::Int || ctx.dtype.size != 2 {
            return Err(Error::decode(
                URI,
                format!(
                    "DTED posts are int16, but the array's data type is {:?} of {} bytes",
                    ctx.dtype.kind, ctx.dtype.size
                ),
            ));
        }
        let expected = self.num_lon_lines * self.record_size;
        if input.len() != expected {
            return Err(Error::decode(
                URI,
                format!(
                    "expected {} records of {} bytes ({expected} bytes), got {} bytes",
                    self.num_lon_lines,
                    self.record_size,
                    input.len()
                ),
            ));
        }
        let (chunk_rows, chunk_cols) = chunk_plane(ctx)?;
        let (rows, cols) = self.window(ctx.chunk_index);
        if rows.len > chunk_rows || cols.len > chunk_cols {
            return Err(Error::decode(
                URI,
                format!(
                    "the trimmed cell of {} x {} posts does not fit the chunk of {chunk_rows} x {chunk_cols}",
                    rows.len, cols.len
                ),
            ));
        }
        let mut posts = vec![VOID; chunk_rows * chunk_cols];
        for c in 0..cols.len {
            let line = cols.start + c;
            let record = &input[line * self.record_size..(line + 1) * self.record_size];
            self.check_record(line, record)?;
            for r in 0..rows.len {
                // North-up row -> post index counted from the south.
                let post = self.num_lat_points - 1 - (rows.start + r);
                let at = RECORD_HEAD + 2 * post;
                posts[r * chunk_cols + c] = post_value(record[at], record[at + 1]);
            }
        }
        let mut out = output_buffer(URI, ctx.decoded_len)?;
        for v in posts {
            out.extend_from_slice(&match ctx.dtype.order {
                ByteOrder::Big => v.to_be_bytes(),
                _ => v.to_le_bytes(),
            });
        }
        Ok(Bytes::from(out))
    }
}

impl Dted {
    /// Rows (north-up) and columns (west-east) of the cell the chunk at
    /// `chunk_index` shows.
    fn window(&self, chunk_index: &[u64]) -> (Span, Span) {
        let kept = |n: usize, lead: usize, trail: usize| Span {
            start: lead.min(n),
            len: n.saturating_sub(lead + trail),
        };
        let trimmed = |n: usize, trail: usize| Span {
            start: n - trail.min(n),
            len: trail.min(n),
        };
        let mut rows = kept(self.num_lat_points, self.trim_top, self.trim_bottom);
        let mut cols = kept(self.num_lon_lines, self.trim_left, self.trim_right);
        if let (Some([edge_row, edge_col]), [.., y, x]) = (self.trimmed_edge_chunks, chunk_index) {
            if *y == edge_row {
                rows = trimmed(self.num_lat_points, self.trim_bottom);
            }
            if *x == edge_col {
                cols = trimmed(self.num_lon_lines, self.trim_right);
            }
        }
        (rows, cols)
    }

    /// Checks the framing and checksum of record `line`.
    fn check_record(&self, line: usize, record: &[u8]) -> Result<()> {
        if record[0] != SENTINEL {
            return Err(Error::decode(
                URI,
                format!(
                    "record {line} (longitude line {line}) starts with 0x{:02X}, not the sentinel 0xAA",
                    record[0]
                ),
            ));
        }
        let body = RECORD_HEAD + 2 * self.num_lat_points;
        let computed: u32 = record[..body].iter().map(|&b| u32::from(b)).sum();
        let stored = u32::from_be_bytes([
            record[body],
            record[body + 1],
            record[body + 2],
            record[body + 3],
        ]);
        if computed == stored {
            return Ok(());
        }
        let counted = u16::from_be_bytes([record[4], record[5]]);
        let what = format!(
            "bad checksum in record {line} (longitude line {line}, header says {counted}): \
             computed 0x{computed:08X}, stored 0x{stored:08X}"
        );
        if self.checksum_warns {
            crate::base::warnings::gdal_warning(&format!(
                "{URI}: {what}; its posts are read as stored"
            ));
            return Ok(());
        }
        Err(Error::decode(
            URI,
            format!(
                "{what}; the file is corrupt (re-index with \
                 `chunkref index --bad-checksum-warning` to read it with a warning)"
            ),
        ))
    }
}

/// A signed-magnitude post, with GDAL's repair of posts written in two's
/// complement.
fn post_value(hi: u8, lo: u8) -> i16 {
    let magnitude = (i16::from(hi & 0x7f) << 8) | i16::from(lo);
    if hi & 0x80 == 0 {
        return magnitude;
    }
    let v = -magnitude;
    if v < -16000 && v != VOID {
        i16::from_be_bytes([hi, lo])
    } else {
        v
    }
}

/// (rows, cols) of the chunk: its last two axes; leading axes must be 1.
fn chunk_plane(ctx: &DecodeContext<'_>) -> Result<(usize, usize)> {
    let bad = || {
        Error::decode(
            URI,
            format!("a DTED chunk is (1, rows, cols), not {:?}", ctx.chunk_shape),
        )
    };
    match ctx.chunk_shape {
        [lead @ .., rows, cols] if lead.iter().all(|&n| n == 1) => {
            let rows = usize::try_from(*rows).map_err(|_| bad())?;
            let cols = usize::try_from(*cols).map_err(|_| bad())?;
            if rows.checked_mul(cols).and_then(|n| n.checked_mul(2)) == Some(ctx.decoded_len) {
                Ok((rows, cols))
            } else {
                Err(bad())
            }
        }
        _ => Err(bad()),
    }
}

/// Builds the codec from its osml-imagery-io configuration (missing fields
/// take the peer's defaults: a level 1 cell of 1201 x 1201 posts).
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let size = |key: &str, default: u64| -> Result<usize> {
        let v = config_uint(URI, config, key)?.unwrap_or(default);
        usize::try_from(v)
            .ok()
            .filter(|&n| n <= 1 << 20)
            .ok_or_else(|| Error::codec_config(URI, format!("'{key}' {v} is too large")))
    };
    let num_lat_points = size("num_lat_points", 1201)?;
    let num_lon_lines = size("num_lon_lines", 1201)?;
    let record_size = size("record_size", 2414)?;
    let needed = RECORD_HEAD + 2 * num_lat_points + RECORD_TAIL;
    if record_size != needed {
        return Err(Error::codec_config(
            URI,
            format!("'record_size' {record_size} should be 12 + 2 * num_lat_points = {needed}"),
        ));
    }
    let checksum_warns = match config_str(URI, config, "bad_checksum")? {
        None | Some("error") => false,
        Some("warning") => true,
        Some(other) => {
            return Err(Error::codec_config(
                URI,
                format!("'bad_checksum' should be \"error\" or \"warning\", found \"{other}\""),
            ))
        }
    };
    let trimmed_edge_chunks = match config.get("trimmed_edge_chunks") {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => {
            let pair: Option<Vec<u64>> = v
                .as_array()
                .and_then(|a| a.iter().map(serde_json::Value::as_u64).collect());
            match pair.as_deref() {
                Some(&[row, col]) => Some([row, col]),
                _ => {
                    return Err(Error::codec_config(
                        URI,
                        format!("'trimmed_edge_chunks' should be [row, col], found {v}"),
                    ))
                }
            }
        }
    };
    Ok(Box::new(Dted {
        num_lat_points,
        num_lon_lines,
        record_size,
        trim_top: size("trim_top", 0)?,
        trim_bottom: size("trim_bottom", 0)?,
        trim_left: size("trim_left", 0)?,
        trim_right: size("trim_right", 0)?,
        checksum_warns,
        trimmed_edge_chunks,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::dtype::DataType;
    use crate::codec::testing::{assert_survives_mutations, config};

    /// DTED records of `columns` (west to east, posts south to north), each
    /// framed and checksummed as GDAL writes them.
    fn records(columns: &[Vec<i16>]) -> Vec<u8> {
        let mut out = Vec::new();
        for (line, posts) in columns.iter().enumerate() {
            let line = line as u16;
            let mut r = vec![SENTINEL, 0];
            r.extend(line.to_be_bytes());
            r.extend(line.to_be_bytes());
            r.extend([0, 0]);
            for &p in posts {
                let magnitude = p.unsigned_abs();
                let hi = (magnitude >> 8) as u8 | if p < 0 { 0x80 } else { 0 };
                r.extend([hi, magnitude as u8]);
            }
            let sum: u32 = r.iter().map(|&b| u32::from(b)).sum();
            r.extend(sum.to_be_bytes());
            out.extend(r);
        }
        out
    }

    /// A 3-line cell of 4 posts: column c, post p (from the south) = 100 c + p,
    /// with a negative post and a void.
    fn cell() -> Vec<Vec<i16>> {
        let mut cols: Vec<Vec<i16>> = (0..3)
            .map(|c| (0..4).map(|p| 100 * c + p).collect())
            .collect();
        cols[0][1] = -5;
        cols[2][3] = VOID;
        cols
    }

    fn json(trims: [u64; 4], extra: &str) -> String {
        format!(
            r#"{{"num_lat_points": 4, "num_lon_lines": 3, "record_size": 20,
                "trim_top": {}, "trim_bottom": {}, "trim_left": {}, "trim_right": {}{extra}}}"#,
            trims[0], trims[1], trims[2], trims[3]
        )
    }

    fn decode(
        json: &str,
        input: &[u8],
        shape: [u64; 3],
        index: &[u64],
        dtype: &str,
    ) -> Result<Vec<i16>> {
        let codec = from_config(&config(json))?;
        let dtype = DataType::from_v2(dtype).unwrap();
        let ctx = DecodeContext {
            chunk_shape: &shape,
            chunk_index: index,
            dtype,
            decoded_len: (shape[1] * shape[2] * 2) as usize,
            needed: (shape[1] * shape[2] * 2) as usize,
            first_needed: 0,
        };
        let out = codec.decode(Bytes::copy_from_slice(input), &ctx)?;
        Ok(out
            .chunks(2)
            .map(|b| match dtype.order {
                ByteOrder::Big => i16::from_be_bytes([b[0], b[1]]),
                _ => i16::from_le_bytes([b[0], b[1]]),
            })
            .collect())
    }

    #[test]
    fn posts_are_transposed_north_up_in_either_byte_order() {
        let input = records(&cell());
        #[rustfmt::skip]
        let north_up = vec![
            3, 103, VOID,
            2, 102, 202,
            -5, 101, 201,
            0, 100, 200,
        ];
        for dtype in ["<i2", ">i2"] {
            let got = decode(&json([0; 4], ""), &input, [1, 4, 3], &[0, 0, 0], dtype).unwrap();
            assert_eq!(got, north_up, "{dtype}");
        }
    }

    #[test]
    fn signed_magnitude_and_gdal_twos_complement_repair() {
        assert_eq!(post_value(0x00, 0x05), 5);
        assert_eq!(post_value(0x80, 0x05), -5);
        assert_eq!(post_value(0xFF, 0xFF), VOID);
        assert_eq!(post_value(0x3E, 0x80), 16000);
        // -(0x7F38) is below -16000: read as two's complement, -200.
        assert_eq!(post_value(0xFF, 0x38), -200);
    }

    #[test]
    fn trims_remove_edge_posts_and_edge_chunks_show_them() {
        let input = records(&cell());
        let got = decode(
            &json([1, 0, 1, 0], ""),
            &input,
            [1, 3, 2],
            &[0, 0, 0],
            "<i2",
        )
        .unwrap();
        assert_eq!(got, vec![102, 202, 101, 201, 100, 200]);
        let mosaic = json([0, 1, 0, 1], r#", "trimmed_edge_chunks": [1, 1]"#);
        let inner = decode(&mosaic, &input, [1, 3, 2], &[0, 0, 0], "<i2").unwrap();
        assert_eq!(inner, vec![3, 103, 2, 102, -5, 101]);
        // The south row the trim removed, then void (outside the array).
        let south = decode(&mosaic, &input, [1, 3, 2], &[0, 1, 0], "<i2").unwrap();
        assert_eq!(south, vec![0, 100, VOID, VOID, VOID, VOID]);
        let east = decode(&mosaic, &input, [1, 3, 2], &[0, 0, 1], "<i2").unwrap();
        assert_eq!(east, vec![VOID, VOID, 202, VOID, 201, VOID]);
        let corner = decode(&mosaic, &input, [1, 3, 2], &[0, 1, 1], "<i2").unwrap();
        assert_eq!(corner, vec![200, VOID, VOID, VOID, VOID, VOID]);
    }

    #[test]
    fn bad_checksum_names_the_record_and_may_be_a_warning() {
        let mut input = records(&cell());
        input[20 + 8 + 3] ^= 1; // a post of record 1
        let err = decode(&json([0; 4], ""), &input, [1, 4, 3], &[], "<i2").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("bad checksum in record 1 (longitude line 1"),
            "{text}"
        );
        assert!(text.contains("--bad-checksum-warning"), "{text}");
        let lenient = json([0; 4], r#", "bad_checksum": "warning""#);
        let got = decode(&lenient, &input, [1, 4, 3], &[], "<i2").unwrap();
        assert_eq!(got[2 * 3 + 1], 101 ^ 1);
    }

    #[test]
    fn framing_sizes_and_types_are_checked() {
        let input = records(&cell());
        let j = json([0; 4], "");
        let err = decode(&j, &input[..59], [1, 4, 3], &[], "<i2").unwrap_err();
        assert!(
            err.to_string()
                .contains("expected 3 records of 20 bytes (60 bytes), got 59"),
            "{err}"
        );
        let mut bad = input.clone();
        bad[40] = 0;
        let err = decode(&j, &bad, [1, 4, 3], &[], "<i2").unwrap_err();
        assert!(
            err.to_string()
                .contains("record 2 (longitude line 2) starts with 0x00"),
            "{err}"
        );
        let err = decode(&j, &input, [1, 3, 3], &[], "<i2").unwrap_err();
        assert!(err.to_string().contains("does not fit the chunk"), "{err}");
        assert!(decode(&j, &input, [1, 4, 3], &[], "<u2").is_err());
        let err = from_config(&config(r#"{"num_lat_points": 4, "record_size": 21}"#)).unwrap_err();
        assert!(
            err.to_string().contains("12 + 2 * num_lat_points = 20"),
            "{err}"
        );
        assert!(from_config(&config(r#"{"bad_checksum": "ignore"}"#)).is_err());
        assert!(from_config(&config(r#"{"trimmed_edge_chunks": [1]}"#)).is_err());
    }

    #[test]
    fn hostile_bytes_do_not_panic() {
        let input = records(&cell());
        assert_survives_mutations("dted", &json([0; 4], ""), &input, 24);
    }
}
