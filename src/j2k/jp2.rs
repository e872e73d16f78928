//! Where the codestream is: at the start of a raw `.j2k`, or in the `jp2c`
//! box of a JP2 file (ISO/IEC 15444-1 Annex I).

use crate::error::Result;
use crate::source::Source;

/// The JP2 signature box.
const JP2_SIGNATURE: [u8; 12] = [0, 0, 0, 12, b'j', b'P', b' ', b' ', 0x0D, 0x0A, 0x87, 0x0A];
/// Most boxes walked before giving up.
const MAX_BOXES: usize = 4096;

/// The byte range `(start, length)` of the codestream in `src`.
pub(super) fn locate_codestream(src: &Source) -> Result<(u64, u64)> {
    let head = src.read(0, 12.min(src.len()))?;
    if head.starts_with(&[0xFF, 0x4F, 0xFF, 0x51]) {
        return Ok((0, src.len()));
    }
    if head != JP2_SIGNATURE {
        return Err(src.malformed(
            "neither a JPEG 2000 codestream (FF4F FF51) nor a JP2 file (signature box)",
        ));
    }
    let mut at = 0u64;
    for _ in 0..MAX_BOXES {
        if at + 8 > src.len() {
            break;
        }
        let b = src.read(at, 8)?;
        let lbox = u64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        let (header, length) = match lbox {
            0 => (8, src.len() - at),
            1 => {
                let x = src.read(at + 8, 8)?;
                (16, u64::from_be_bytes(x.try_into().unwrap_or([0; 8])))
            }
            n => (8, n),
        };
        if length < header || at + length > src.len() {
            return Err(src.malformed(format!(
                "box '{}' at byte {at} claims {length} bytes; the file has {}",
                String::from_utf8_lossy(&b[4..8]),
                src.len()
            )));
        }
        if &b[4..8] == b"jp2c" {
            return Ok((at + header, length - header));
        }
        at += length;
    }
    Err(src.malformed("no contiguous codestream box (jp2c)"))
}
