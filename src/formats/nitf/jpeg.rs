//! Finding the JPEG streams of a C3 / M3 image: each block is one complete
//! stream (SOI ... EOI); without a mask table their ends are found by
//! walking marker segments and the entropy-coded data after each SOS.

/// Most bytes GDAL's NITF driver skips before a block's JPEG stream (it
/// looks for the stream's start in the first 100 bytes, less 23).
const MAX_LEAD: usize = 77;

/// Where the JPEG stream (SOI, then a marker) of a block whose data starts
/// at `at` in `data` begins: `at` itself, or after up to [`MAX_LEAD`]
/// bytes of fill before it, as GDAL finds it; None when there is none.
pub(crate) fn stream_start(data: &[u8], at: usize) -> Option<usize> {
    let window = data.get(at..)?;
    let window = &window[..window.len().min(MAX_LEAD + 3)];
    window
        .windows(3)
        .position(|w| w == [0xFF, 0xD8, 0xFF])
        .map(|lead| at + lead)
}

/// The Q level of the default tables the stream starting at `start`
/// names, as GDAL's NITF driver reads it: byte 22 of a stream whose
/// APP6 segment says "NITF" (bytes 6 to 10); None for other streams.
pub(crate) fn q_level(data: &[u8], start: usize) -> Option<u8> {
    let head = data.get(start..start + 23)?;
    (&head[6..11] == b"NITF\0").then_some(head[22])
}

/// How many overviews (1/2, 1/4, 1/8) GDAL's JPEG driver offers for an
/// image of `width` x `height`: 3 when a side is at least 1024, 2 from
/// 512, 1 from 256.
pub(crate) fn implicit_overviews(width: u64, height: u64) -> u32 {
    (0..3u32)
        .rev()
        .find(|&i| width >= 256 << i || height >= 256 << i)
        .map_or(0, |i| i + 1)
}

/// The end (one past EOI) of the JPEG stream starting at `start` in `data`,
/// or `None` if there is no complete stream there.
pub(crate) fn stream_end(data: &[u8], start: usize) -> Option<usize> {
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

    #[test]
    fn q_levels_and_overview_counts() {
        let mut app6 = vec![0u8; 30];
        app6[2..13].copy_from_slice(b"\xFF\xD8\xFF\xE6\0\x19NITF\0");
        app6[24] = 3;
        assert_eq!(q_level(&app6, 2), Some(3));
        assert_eq!(q_level(&app6, 0), None);
        assert_eq!(q_level(&app6[..24], 2), None);
        let counts: Vec<u32> = [(255, 255), (256, 1), (683, 512), (1023, 20), (8, 1024)]
            .iter()
            .map(|&(w, h)| implicit_overviews(w, h))
            .collect();
        assert_eq!(counts, [0, 1, 2, 2, 3]);
    }

    #[test]
    fn streams_may_follow_fill_bytes() {
        let mut data = vec![0xFF; 6];
        data.extend([0xFF, 0xD8, 0xFF, 0xD9]);
        assert_eq!(stream_start(&data, 0), Some(6));
        assert_eq!(stream_start(&data, 6), Some(6));
        let far = [vec![0; 78], data.clone()].concat();
        assert_eq!(stream_start(&far, 0), None);
        assert_eq!(stream_start(&data, 99), None);
    }
}
