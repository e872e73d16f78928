//! TIFF LZW (compression 5): MSB-first codes with libtiff's early code
//! width change, or the old-style LSB-first variant libtiff still reads.
//!
//! Every string an LZW code stands for is a stretch of the output already
//! written (a previous string plus one byte), so the MSB-first decoder keeps
//! each code as an (offset, length) into the output and decodes by copying
//! from it: no string table to walk backwards. The rare old-style streams go
//! through weezl.

use weezl::decode::Decoder;
use weezl::{BitOrder, LzwStatus};

use crate::codec::registry::output_buffer;

/// Resets the code table.
const CLEAR: u16 = 256;
/// Ends the stream.
const END: u16 = 257;
/// The first code a stream defines.
const FIRST_FREE: u16 = 258;
/// Codes are at most 12 bits wide.
const MAX_CODES: usize = 4096;

/// Decodes an LZW stream into at most `limit` bytes; a stream that goes on
/// past `limit` is an error.
pub(in crate::codec) fn decode(input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    // libtiff's test for old-style ("compat") LZW.
    if input.len() >= 2 && input[0] == 0 && input[1] & 1 == 1 {
        return decode_old_style(input, limit);
    }
    let mut out = output_buffer("LZW", limit).map_err(|e| e.to_string())?;
    // (offset in `out`, length) of each code's string; literals are not kept.
    let mut table = vec![(0u32, 0u32); MAX_CODES];
    let (mut next, mut width) = (FIRST_FREE, 9u32);
    // The previous code's string, as (offset, length) in `out`.
    let mut previous: Option<(usize, usize)> = None;
    let (mut bits, mut held, mut at) = (0u64, 0u32, 0usize);
    let too_long = || format!("stream decodes to more than {limit} bytes, the size of the tile");
    loop {
        while held < width && at < input.len() {
            bits = bits << 8 | u64::from(input[at]);
            held += 8;
            at += 1;
        }
        if held < width {
            break; // the stream ends without an end code, as libtiff allows
        }
        held -= width;
        let code = (bits >> held) as u16 & ((1 << width) - 1);
        bits &= (1u64 << held) - 1;
        if code == CLEAR {
            (next, width, previous) = (FIRST_FREE, 9, None);
            continue;
        }
        if code == END {
            break;
        }
        let start = out.len();
        let len = if code < CLEAR {
            if start >= limit {
                return Err(too_long());
            }
            out.push(code as u8);
            1
        } else {
            let undefined = || format!("corrupt stream after {start} bytes: code {code} undefined");
            let (p, plen) = previous.ok_or_else(undefined)?;
            let (from, len) = match code.cmp(&next) {
                std::cmp::Ordering::Less => {
                    let (from, len) = table[usize::from(code)];
                    (from as usize, len as usize)
                }
                // The string being defined: the previous one plus its first byte.
                std::cmp::Ordering::Equal => (p, plen + 1),
                std::cmp::Ordering::Greater => return Err(undefined()),
            };
            if start + len > limit {
                return Err(too_long());
            }
            // Copied in one piece, or (the string being defined) as the
            // previous string then its first byte.
            if from + len <= start {
                out.extend_from_within(from..from + len);
            } else {
                out.extend_from_within(from..start);
                out.push(out[from]);
            }
            len
        };
        if let Some((p, plen)) = previous {
            if usize::from(next) < MAX_CODES {
                // The previous string plus this one's first byte, which
                // follows it in the output.
                table[usize::from(next)] = (p as u32, plen as u32 + 1);
                next += 1;
                // libtiff widens one code early.
                if u32::from(next) + 1 >= 1 << width && width < 12 {
                    width += 1;
                }
            }
        }
        previous = Some((start, len));
    }
    Ok(out)
}

/// Old-style (LSB-first, no early change) LZW, through weezl.
fn decode_old_style(input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let mut decoder = Decoder::new(BitOrder::Lsb, 8);
    let mut out = output_buffer("LZW", limit.saturating_add(1)).map_err(|e| e.to_string())?;
    out.resize(limit.saturating_add(1), 0);
    let (mut read, mut written) = (0, 0);
    loop {
        let result = decoder.decode_bytes(&input[read..], &mut out[written..]);
        read += result.consumed_in;
        written += result.consumed_out;
        match result.status {
            Ok(LzwStatus::Done | LzwStatus::NoProgress) => break,
            Ok(LzwStatus::Ok) => {
                let stalled = result.consumed_in == 0 && result.consumed_out == 0;
                if stalled || written == out.len() {
                    break;
                }
            }
            Err(e) => return Err(format!("corrupt stream after {written} bytes: {e}")),
        }
    }
    if written > limit {
        return Err(format!(
            "stream decodes to more than {limit} bytes, the size of the tile"
        ));
    }
    out.truncate(written);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use weezl::encode::Encoder;

    /// Encodes like libtiff does.
    fn encode(data: &[u8]) -> Vec<u8> {
        Encoder::with_tiff_size_switch(BitOrder::Msb, 8)
            .encode(data)
            .unwrap()
    }

    #[test]
    fn round_trips_and_is_bounded() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * i % 251) as u8).collect();
        let stream = encode(&data);
        assert_eq!(decode(&stream, 5000).unwrap(), data);
        // A last strip decodes to fewer bytes than the limit.
        assert_eq!(decode(&stream, 6000).unwrap(), data);
        let err = decode(&stream, 4999).unwrap_err();
        assert!(err.contains("more than 4999"), "{err}");
    }

    /// weezl's decoding of a TIFF LZW stream, the reference.
    fn reference(stream: &[u8]) -> Vec<u8> {
        weezl::decode::Decoder::with_tiff_size_switch(BitOrder::Msb, 8)
            .decode(stream)
            .unwrap()
    }

    #[test]
    fn matches_weezl_on_long_and_repetitive_streams() {
        let mut state = 7u32;
        let mut noise = |n: usize, spread: u32| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    ((state >> 16) % spread) as u8
                })
                .collect()
        };
        let runs: Vec<u8> = (0..70_000u32).map(|i| (i / 1000) as u8).collect();
        // Many table resets (noise), KwKwK codes (runs), every code width.
        for data in [
            noise(100_000, 256),
            noise(100_000, 3),
            runs,
            vec![9; 50_000],
            vec![1],
        ] {
            let stream = encode(&data);
            assert_eq!(reference(&stream), data);
            assert_eq!(decode(&stream, data.len()).unwrap(), data);
            // Without the end code, as some writers leave it.
            let cut = &stream[..stream.len() - 1];
            let got = decode(cut, data.len()).unwrap();
            assert!(data.starts_with(&got) && got.len() + 2 >= data.len().min(2));
        }
    }

    #[test]
    fn reads_old_style_lzw() {
        let data = b"old style old style old style".to_vec();
        let stream = Encoder::new(BitOrder::Lsb, 8).encode(&data).unwrap();
        // The leading clear code, 9 bits LSB first, is what marks it.
        assert_eq!((stream[0], stream[1] & 1), (0, 1));
        assert_eq!(decode(&stream, 100).unwrap(), data);
    }

    #[test]
    fn survives_corruption() {
        let data: Vec<u8> = (0..2000u32).map(|i| (i % 97) as u8).collect();
        let stream = encode(&data);
        let mut state = 12345u32;
        for round in 0..300 {
            let mut bytes = stream.clone();
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let at = state as usize % bytes.len();
            bytes[at] ^= (state >> 16) as u8 | 1;
            bytes.truncate(bytes.len() - round % 5);
            let _ = decode(&bytes, 2000);
        }
    }
}
