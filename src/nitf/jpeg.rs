//! Finding the JPEG streams of a C3 / M3 image: each block is one complete
//! stream (SOI ... EOI); without a mask table their ends are found by
//! walking marker segments and the entropy-coded data after each SOS.

/// The end (one past EOI) of the JPEG stream starting at `start` in `data`,
/// or `None` if there is no complete stream there.
pub(super) fn stream_end(data: &[u8], start: usize) -> Option<usize> {
    if data.get(start..start + 2)? != [0xFF, 0xD8] {
        return None;
    }
    let mut at = start + 2;
    loop {
        // Fill bytes (FF FF ...) may precede a marker.
        while data.get(at..at + 2)? == [0xFF, 0xFF] {
            at += 1;
        }
        if *data.get(at)? != 0xFF {
            return None;
        }
        let marker = *data.get(at + 1)?;
        match marker {
            0xD9 => return Some(at + 2),
            0x01 | 0xD0..=0xD7 => at += 2,
            _ => {
                let len = usize::from(u16::from_be_bytes([*data.get(at + 2)?, *data.get(at + 3)?]));
                at += 2 + len;
                if marker == 0xDA {
                    at = entropy_end(data, at)?;
                }
            }
        }
    }
}

/// The position of the first marker (other than stuffing and restarts)
/// in the entropy-coded data starting at `at`.
fn entropy_end(data: &[u8], mut at: usize) -> Option<usize> {
    loop {
        at += data.get(at..)?.iter().position(|&b| b == 0xFF)?;
        match *data.get(at + 1)? {
            0x00 | 0xD0..=0xD7 | 0xFF => at += 1,
            _ => return Some(at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_end_after_eoi_not_inside_entropy_data() {
        let stream = [
            0xFF, 0xD8, 0xFF, 0xDB, 0, 3, 9, // SOI, DQT of 1 byte
            0xFF, 0xDA, 0, 2, // SOS
            1, 0xFF, 0x00, 2, 0xFF, 0xD3, 4, // stuffing, restart
            0xFF, 0xD9,
        ];
        let two = [&stream[..], &stream[..]].concat();
        assert_eq!(stream_end(&two, 0), Some(stream.len()));
        assert_eq!(stream_end(&two, stream.len()), Some(two.len()));
        assert_eq!(stream_end(&stream[..stream.len() - 1], 0), None);
        assert_eq!(stream_end(&stream, 1), None);
    }
}
