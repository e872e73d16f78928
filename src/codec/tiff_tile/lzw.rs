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

use crate::codec::registry::{output_buffer, scratch_buffer};

/// Resets the code table.
const CLEAR: u16 = 256;
/// Ends the stream.
const END: u16 = 257;
/// The first code a stream defines.
const FIRST_FREE: u16 = 258;
/// Codes are at most 12 bits wide.
const MAX_CODES: usize = 4096;

/// Bytes past the end of the output the decoder may scribble on: strings
/// are copied in blocks of this many bytes.
const SLACK: usize = 16;

/// Decodes an LZW stream into at most `limit` bytes; a stream that goes on
/// past `limit` is an error.
pub(in crate::codec) fn decode(input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    // libtiff's test for old-style ("compat") LZW.
    if input.len() >= 2 && input[0] == 0 && input[1] & 1 == 1 {
        return decode_old_style(input, limit);
    }
    let size = limit.saturating_add(SLACK);
    // Initialised (with whatever an earlier chunk left), so that a block
    // copy may read past the string it copies.
    let mut out = scratch_buffer("LZW", size).map_err(|e| e.to_string())?;
    let written = decode_into(input, &mut out, limit)?;
    out.truncate(written);
    Ok(out)
}

/// MSB-first codes, read from a 64-bit window refilled eight bytes at a
/// time.
struct Codes<'a> {
    input: &'a [u8],
    /// The next byte of `input` not yet in `window`.
    at: usize,
    /// Unread bits, first bit at the top.
    window: u64,
    /// How many bits of `window` are unread.
    held: u32,
}

impl Codes<'_> {
    /// The next `width`-bit code, `None` when the input has fewer bits.
    #[inline(always)]
    fn next(&mut self, width: u32) -> Option<usize> {
        if self.held < width {
            self.refill();
            if self.held < width {
                return None;
            }
        }
        let code = (self.window >> (64 - width)) as usize;
        self.window <<= width;
        self.held -= width;
        Some(code)
    }

    /// Tops the window up to at least 56 bits (or the end of the input).
    #[inline(always)]
    fn refill(&mut self) {
        if let Some(word) = self.input.get(self.at..self.at + 8) {
            let word = u64::from_be_bytes(word.try_into().expect("eight bytes"));
            // The bits past the whole bytes taken are the next byte's own,
            // or-ed in again unchanged by the next refill.
            self.window |= word >> self.held;
            let bytes = (63 - self.held) / 8;
            self.at += bytes as usize;
            self.held += bytes * 8;
        } else {
            while self.held <= 56 && self.at < self.input.len() {
                self.window |= u64::from(self.input[self.at]) << (56 - self.held);
                self.held += 8;
                self.at += 1;
            }
        }
    }
}

/// Decodes `input` into `out` (`limit` bytes plus [`SLACK`], initialised),
/// returning how many bytes it holds.
fn decode_into(input: &[u8], out: &mut [u8], limit: usize) -> Result<usize, String> {
    // (offset in `out`, length) of each code's string; literals are not kept.
    let mut table = vec![(0u32, 0u32); MAX_CODES];
    let (mut next, mut width) = (usize::from(FIRST_FREE), 9u32);
    // The previous code's string, at `out[previous..pos]`; none after a clear.
    let (mut previous, mut pos, mut after_clear) = (0usize, 0usize, true);
    let mut codes = Codes {
        input,
        at: 0,
        window: 0,
        held: 0,
    };
    let too_long = || format!("stream decodes to more than {limit} bytes, the size of the tile");
    // The stream may end without an end code, as libtiff allows.
    while let Some(code) = codes.next(width) {
        let start = pos;
        if code < usize::from(CLEAR) {
            if start >= limit {
                return Err(too_long());
            }
            out[start] = code as u8;
            pos += 1;
        } else if code == usize::from(CLEAR) {
            (next, width, after_clear) = (usize::from(FIRST_FREE), 9, true);
            continue;
        } else if code == usize::from(END) {
            break;
        } else {
            let undefined = || format!("corrupt stream after {start} bytes: code {code} undefined");
            if after_clear || code > next {
                return Err(undefined());
            }
            // The string being defined is the previous one plus its first
            // byte; the previous one ends where this one starts.
            let (from, len) = match code < next {
                true => (table[code].0 as usize, table[code].1 as usize),
                false => (previous, start - previous + 1),
            };
            if start + len > limit {
                return Err(too_long());
            }
            // In blocks of SLACK bytes: the last may read this string's
            // own bytes (or past them) and write past its end, but every
            // byte the string needs lies before `start`, read before any
            // block overwrites it.
            for at in (0..len).step_by(SLACK) {
                let block: [u8; SLACK] = out[from + at..from + at + SLACK]
                    .try_into()
                    .expect("a block");
                out[start + at..start + at + SLACK].copy_from_slice(&block);
            }
            if code == next {
                out[start + len - 1] = out[from];
            }
            pos += len;
        }
        if !after_clear && next < MAX_CODES {
            // The previous string plus this one's first byte, which
            // follows it in the output.
            table[next] = (previous as u32, (start - previous + 1) as u32);
            next += 1;
            // libtiff widens one code early.
            if next + 1 >= 1 << width && width < 12 {
                width += 1;
            }
        }
        (previous, after_clear) = (start, false);
    }
    Ok(pos)
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
