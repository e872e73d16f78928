//! TIFF LZW (compression 5): MSB-first codes with libtiff's early code
//! width change, or the old-style LSB-first variant libtiff still reads.

use weezl::decode::Decoder;
use weezl::{BitOrder, LzwStatus};

use crate::codec::registry::output_buffer;

/// Decodes an LZW stream into at most `limit` bytes; a stream that goes on
/// past `limit` is an error.
pub(super) fn decode(input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    // libtiff's test for old-style ("compat") LZW.
    let mut decoder = if input.len() >= 2 && input[0] == 0 && input[1] & 1 == 1 {
        Decoder::new(BitOrder::Lsb, 8)
    } else {
        Decoder::with_tiff_size_switch(BitOrder::Msb, 8)
    };
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
