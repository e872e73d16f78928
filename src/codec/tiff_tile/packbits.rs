//! Macintosh PackBits (TIFF compression 32773).

use crate::base::buffers::output_buffer;

/// Decodes PackBits into at most `limit` bytes: a run that would go past
/// `limit` is cut there and decoding stops, and a truncated final run
/// keeps what it has, as libtiff does.
pub(super) fn decode(input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let mut out = output_buffer("PackBits", limit).map_err(|e| e.to_string())?;
    let mut at = 0;
    while let Some(&header) = input.get(at) {
        at += 1;
        let (len, literal) = match header as i8 {
            -128 => continue,
            n @ 0.. => (n as usize + 1, true),
            n => (1 + n.unsigned_abs() as usize, false),
        };
        let len = len.min(limit - out.len());
        if literal {
            let end = (at + len).min(input.len());
            out.extend_from_slice(&input[at..end]);
            at = end;
        } else if let Some(&byte) = input.get(at) {
            out.resize(out.len() + len, byte);
            at += 1;
        }
        if out.len() == limit {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A straightforward PackBits encoder: runs of 3 or more equal bytes
    /// become repeat runs, everything else literal runs of up to 128 bytes.
    pub(in super::super) fn encode(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut literal: Vec<u8> = Vec::new();
        let flush = |literal: &mut Vec<u8>, out: &mut Vec<u8>| {
            for part in literal.chunks(128) {
                out.push((part.len() - 1) as u8);
                out.extend_from_slice(part);
            }
            literal.clear();
        };
        let mut i = 0;
        while i < data.len() {
            let run = data[i..]
                .iter()
                .take(128)
                .take_while(|&&b| b == data[i])
                .count();
            if run >= 3 {
                flush(&mut literal, &mut out);
                out.push((1 - run as i32) as i8 as u8);
                out.push(data[i]);
                i += run;
            } else {
                literal.push(data[i]);
                i += 1;
            }
        }
        flush(&mut literal, &mut out);
        out
    }

    #[test]
    fn decodes_the_apple_example() {
        // The example of Apple's Technical Note TN1023.
        let packed = [
            0xFE, 0xAA, 0x02, 0x80, 0x00, 0x2A, 0xFD, 0xAA, 0x03, 0x80, 0x00, 0x2A, 0x22, 0xF7,
            0xAA,
        ];
        let expected = [
            0xAA, 0xAA, 0xAA, 0x80, 0x00, 0x2A, 0xAA, 0xAA, 0xAA, 0xAA, 0x80, 0x00, 0x2A, 0x22,
            0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA,
        ];
        assert_eq!(decode(&packed, 24).unwrap(), expected);
    }

    #[test]
    fn round_trips_and_is_bounded() {
        let data: Vec<u8> = (0..3000u32)
            .map(|i| if i % 300 < 150 { 9 } else { (i % 7) as u8 })
            .collect();
        let packed = encode(&data);
        assert!(packed.len() < data.len());
        assert_eq!(decode(&packed, 3000).unwrap(), data);
        // A stream going on past the strip: the strip's bytes, as libtiff
        // (runs cut inside, repeat and literal).
        for limit in [2999, 150, 151, 160, 0] {
            assert_eq!(decode(&packed, limit).unwrap(), data[..limit], "{limit}");
        }
        // No-op headers are skipped, truncated runs keep what they have.
        assert_eq!(decode(&[0x80, 0x02, 1, 2], 10).unwrap(), vec![1, 2]);
        assert_eq!(decode(&[0xFF], 10).unwrap(), Vec::<u8>::new());
    }
}
