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

use crate::base::buffers::{output_buffer, scratch_buffer};

/// Resets the code table.
const CLEAR: u16 = 256;
/// Ends the stream.
const END: u16 = 257;
/// The first code a stream defines.
const FIRST_FREE: u16 = 258;
/// [`CLEAR`] as a decoded code.
const CLEAR_CODE: usize = CLEAR as usize;
/// [`END`] as a decoded code.
const END_CODE: usize = END as usize;
/// Codes are at most 12 bits wide.
const MAX_CODES: usize = 4096;

/// Bytes past the end of the output the decoder may scribble on: strings
/// are copied in blocks of this many bytes.
const SLACK: usize = 16;

/// The strings of the literal codes: byte `i` at offset `i`, then room for
/// a block read at any of them.
static LITERALS: [u8; 256 + SLACK] = {
    let mut bytes = [0; 256 + SLACK];
    let mut i = 0;
    while i < 256 {
        bytes[i] = i as u8;
        i += 1;
    }
    bytes
};

/// Decodes an LZW stream into at most `limit` bytes: a stream that goes on
/// past `limit` gives its first `limit` bytes, as libtiff stops decoding
/// once the strip or tile is full.
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

/// Decodes an LZW stream that must fit in `limit` bytes (a Zarr chunk's,
/// whose size is exact): a stream going on past `limit` is an error.
pub(in crate::codec) fn decode_within(input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let out = decode(input, limit.saturating_add(1))?;
    if out.len() > limit {
        return Err(too_long(limit));
    }
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
        let rest = self.input.get(self.at..).unwrap_or_default();
        if let Some(word) = rest.first_chunk::<8>() {
            let word = u64::from_be_bytes(*word);
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
    // Exactly `limit + SLACK` bytes, which the block copies below rely on.
    let Some(out) = limit.checked_add(SLACK).and_then(|len| out.get_mut(..len)) else {
        return Err(too_long(limit));
    };
    // (offset, length) of each code's string: a literal's in LITERALS, any
    // other's in `out`. Twice MAX_CODES slots, indexed with a mask: codes
    // are below MAX_CODES, and a full table's next code is MAX_CODES.
    //
    // The block copies (`copy_string`) rely on these invariants, which make
    // `from + SLACK` and `pos + SLACK` at most their slices' lengths:
    // - `out` holds exactly `limit + SLACK` bytes, and `pos <= limit`:
    //   `pos` only grows by a `len` checked against `limit - pos`;
    // - a literal's slot holds (its byte, 1), below 256, and LITERALS holds
    //   256 + SLACK bytes: slots 0 to 255 keep what they are given here,
    //   as slots are only written at `next` (FIRST_FREE to MAX_CODES,
    //   which the mask leaves as they are);
    // - any other slot holds 0 or a `previous` that was at most `pos`
    //   (truncated to 32 bits, which only makes it smaller), so at most
    //   `limit`.
    let mut table = [(0u32, 0u32); 2 * MAX_CODES];
    for (byte, entry) in table.iter_mut().take(256).enumerate() {
        *entry = (byte as u32, 1);
    }
    let mut codes = Codes {
        input,
        at: 0,
        window: 0,
        held: 0,
    };
    let mut pos = 0usize;
    // Each pass starts at a clear code (or the start of the stream), whose
    // next code must be a literal; the inner loop runs until the next clear.
    // The stream may end without an end code, as libtiff allows.
    'clear: while let Some(code) = codes.next(9) {
        match code {
            CLEAR_CODE => continue,
            END_CODE => break,
            _ if code > END_CODE => return Err(undefined(pos, code)),
            _ => {}
        }
        if pos >= limit {
            break;
        }
        out[pos] = code as u8;
        // The previous code's string is `out[previous..pos]`.
        let mut previous = pos;
        pos += 1;
        let (mut next, mut width) = (usize::from(FIRST_FREE), 9u32);
        // Below this `next`, defining a code leaves the width as it is.
        let mut widen_at = (1 << width) - 2;
        while let Some(code) = codes.next(width) {
            // The string code `next` will stand for: the previous one plus
            // the first byte of this one, which follows it in the output.
            // Written before this code is looked up, so that a code equal
            // to `next` (KwKwK) finds it.
            table[next & (2 * MAX_CODES - 1)] = (previous as u32, (pos - previous + 1) as u32);
            let (from, len) = table[code & (2 * MAX_CODES - 1)];
            let (from, len) = (from as usize, len as usize);
            // The rare cases first, out of the way of the common ones.
            if code | 1 == END_CODE {
                match code {
                    CLEAR_CODE => continue 'clear,
                    _ => break 'clear,
                }
            }
            if len > limit - pos {
                // The strip or tile is full: its part of this string, and
                // the rest of the stream left (a KwKwK string's missing
                // last byte is never part of it, as len - 1 bytes fit at
                // most).
                if code > next {
                    return Err(undefined(pos, code));
                }
                // SAFETY: the block copies' invariants, above.
                #[allow(unsafe_code)]
                unsafe {
                    copy_string(out, code < CLEAR_CODE, from, limit - pos, pos);
                }
                return Ok(limit);
            }
            if code >= next {
                if code > next {
                    return Err(undefined(pos, code));
                }
                // KwKwK: the string's last byte, its first, is not written
                // yet when the blocks read it.
                // SAFETY: the block copies' invariants, above.
                #[allow(unsafe_code)]
                unsafe {
                    copy_string(out, false, from, len, pos);
                }
                out[pos + len - 1] = out[from];
            } else {
                // Literals and strings alike, without a branch between
                // them (the two alternate unpredictably).
                // SAFETY: the block copies' invariants, above.
                #[allow(unsafe_code)]
                unsafe {
                    copy_string(out, code < CLEAR_CODE, from, len, pos);
                }
            }
            let start = pos;
            pos += len;
            if next < widen_at {
                next += 1;
            } else if next < MAX_CODES {
                next += 1;
                // libtiff widens one code early.
                if width < 12 {
                    width += 1;
                    widen_at = if width < 12 {
                        (1 << width) - 2
                    } else {
                        MAX_CODES
                    };
                }
            }
            previous = start;
        }
        // The input ran out (fewer bits than a code).
        break;
    }
    Ok(pos)
}

/// Copies the `len`-byte string at `from` in LITERALS (a `literal` code's)
/// or `out` to `out[pos..]`, writing up to [`SLACK`] bytes past it.
///
/// # Safety
///
/// `from + SLACK` must be at most the length of the string's slice
/// (LITERALS or `out`), and `pos + SLACK` at most `out.len()`.
#[inline(always)]
#[allow(unsafe_code)]
unsafe fn copy_string(out: &mut [u8], literal: bool, from: usize, len: usize, pos: usize) {
    let source: &[u8] = if literal { &LITERALS } else { out };
    debug_assert!(from + SLACK <= source.len() && pos + SLACK <= out.len());
    // In blocks of SLACK bytes: the last may read this string's own bytes
    // (or past them) and write past its end, but every byte the string
    // needs lies before `pos`, read before any block overwrites it.
    // SAFETY: both blocks of the first copy lie inside their slices, as
    // the caller guarantees; `read_unaligned` and `write_unaligned` need no
    // alignment, and the block is a copy, so overlapping is fine. (Bounds
    // checks here cost about a tenth of the decoding time.)
    unsafe {
        let block = source
            .as_ptr()
            .add(from)
            .cast::<[u8; SLACK]>()
            .read_unaligned();
        out.as_mut_ptr()
            .add(pos)
            .cast::<[u8; SLACK]>()
            .write_unaligned(block);
    }
    // Only strings in `out` are longer than a block.
    let mut at = SLACK;
    while at < len {
        out.copy_within(from + at..from + at + SLACK, pos + at);
        at += SLACK;
    }
}

/// The error for a stream that decodes to more than `limit` bytes.
#[cold]
fn too_long(limit: usize) -> String {
    format!("stream decodes to more than {limit} bytes, the size of the tile")
}

/// The error for a code not (yet) defined, met after `start` bytes.
#[cold]
fn undefined(start: usize, code: usize) -> String {
    format!("corrupt stream after {start} bytes: code {code} undefined")
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
    // Past `limit`: the first `limit` bytes, as libtiff.
    out.truncate(written.min(limit));
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
        // A stream going on past the strip: the strip's bytes, as libtiff.
        for limit in [0, 1, 4999, 2500, 17] {
            assert_eq!(decode(&stream, limit).unwrap(), data[..limit], "{limit}");
        }
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

    /// Packs codes MSB first at the widths the decoder reads them at.
    fn pack(codes: &[u16]) -> Vec<u8> {
        let (mut bits, mut held, mut out) = (0u64, 0u32, Vec::new());
        let (mut next, mut width, mut fresh) = (usize::from(FIRST_FREE), 9u32, true);
        for &code in codes {
            bits = bits << width | u64::from(code);
            held += width;
            while held >= 8 {
                out.push((bits >> (held - 8)) as u8);
                held -= 8;
            }
            if code == CLEAR {
                (next, width, fresh) = (usize::from(FIRST_FREE), 9, true);
                continue;
            }
            if !fresh && next < MAX_CODES {
                next += 1;
                if next + 1 >= 1 << width && width < 12 {
                    width += 1;
                }
            }
            fresh = false;
        }
        if held > 0 {
            out.push((bits << (8 - held)) as u8);
        }
        out
    }

    #[test]
    fn copies_strings_around_the_block_size() {
        for n in [2usize, 15, 16, 17, 31, 32, 33] {
            // "a", then KwKwK codes for "aa", "aaa", ... up to n bytes,
            // then that last code again, looked up as an older one.
            let last = 258 + n as u16 - 2;
            let mut codes: Vec<u16> = vec![97];
            codes.extend(258..=last);
            codes.extend([last, END]);
            let len = n * (n + 1) / 2 + n;
            let stream = pack(&codes);
            assert_eq!(reference(&stream), vec![97; len]);
            // The last string ends exactly at the limit.
            assert_eq!(decode(&stream, len).unwrap(), vec![97; len], "{n}");
            // Cut inside it (a KwKwK string): its first bytes.
            for cut in [len - 1, len - n / 2 - 1] {
                assert_eq!(decode(&stream, cut).unwrap(), vec![97; cut], "{n} {cut}");
            }
            // KwKwK codes for "cc" up to n bytes of "c", then older,
            // shorter codes ("cc", "bc"), then that long one again.
            let mut codes: Vec<u16> = vec![98, 99];
            codes.extend(259..=last + 1);
            codes.extend([259, 258, last + 1, END]);
            let stream = pack(&codes);
            let want = reference(&stream);
            assert_eq!(decode(&stream, want.len()).unwrap(), want, "{n}");
        }
    }

    #[test]
    fn clears_mid_stream() {
        // 258 stands for "aa", then after the clear for "bb".
        let stream = pack(&[97, 258, CLEAR, 98, 258, 258, END]);
        assert_eq!(decode(&stream, 100).unwrap(), b"aaabbbbb");
        assert_eq!(reference(&stream), b"aaabbbbb");
        // Clears in a row, and at the start.
        let stream = pack(&[CLEAR, CLEAR, 97, 258, CLEAR, CLEAR, 98, END]);
        assert_eq!(decode(&stream, 100).unwrap(), b"aaab");
        // After a clear only a literal is defined.
        let stream = pack(&[97, 258, CLEAR, 258, END]);
        let err = decode(&stream, 100).unwrap_err();
        assert!(err.contains("after 3 bytes: code 258 undefined"), "{err}");
        // Nor is any code past the next one.
        let stream = pack(&[97, 98, 260, END]);
        let err = decode(&stream, 100).unwrap_err();
        assert!(err.contains("after 2 bytes: code 260 undefined"), "{err}");
    }

    #[test]
    fn keeps_decoding_with_a_full_table() {
        // KwKwK codes up to the last one, then codes that define nothing.
        let mut codes: Vec<u16> = vec![97];
        codes.extend(258..MAX_CODES as u16);
        codes.extend([98, 4095, 258, 99, END]);
        let run = MAX_CODES - 258 + 1;
        let mut want = vec![97; run * (run + 1) / 2];
        want.push(98);
        want.extend(vec![97; run]);
        want.extend([97, 97, 99]);
        let got = decode(&pack(&codes), want.len()).unwrap();
        assert!(got == want, "{} bytes, want {}", got.len(), want.len());
    }

    #[test]
    fn stops_at_a_truncated_stream() {
        let data: Vec<u8> = (0..3000u32).map(|i| (i * 7 % 13) as u8).collect();
        let stream = encode(&data);
        for cut in [0, 1, 2, 3, stream.len() / 2, stream.len() - 2] {
            let got = decode(&stream[..cut], data.len()).unwrap();
            assert!(data.starts_with(&got), "{cut}");
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
