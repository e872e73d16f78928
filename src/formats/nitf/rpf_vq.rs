//! RPF vector quantisation (CADRG, CIB; MIL-STD-2411 and MIL-C-89038): the
//! sizes of subframes, their coded form and the codebook, and the check
//! that a compression lookup subsection starts where a location table says.

use crate::base::error::Result;
use crate::io::source::Source;

/// Pixels across and down a subframe.
pub(crate) const SUBFRAME: usize = 256;

/// Bytes of a subframe's codes: (256 / 4)^2 codes of 12 bits.
pub(crate) const CODED_LEN: usize = (SUBFRAME / 4) * (SUBFRAME / 4) * 3 / 2;

/// Entries of each lookup table (12-bit codes).
pub(crate) const ENTRIES: usize = 4096;

/// Bytes of the four lookup tables.
pub(crate) const CODEBOOK_LEN: usize = 4 * ENTRIES * 4;

/// How a compression lookup subsection starts: offset of its offset table
/// (6) and length of an offset record (14).
pub(crate) const LOOKUP_SIGNATURE: [u8; 6] = [0, 0, 0, 6, 0, 14];

pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Whether the compression lookup subsection at `at` starts as one does and
/// its four tables lie within the file (GDAL's check of a location table
/// whose RPFHDR is misplaced; no search for a shifted start).
pub(crate) fn lookup_tables_at(src: &Source, at: u64) -> Result<bool> {
    if src.len().saturating_sub(at) < 6 + 4 * 14 || src.read(at, 6)? != LOOKUP_SIGNATURE {
        return Ok(false);
    }
    let records = src.read(at + 6, 4 * 14)?;
    Ok((0..4).all(|i| {
        let offset = u64::from(be32(&records, i * 14 + 10));
        src.len().saturating_sub(at) >= offset + CODEBOOK_LEN as u64 / 4
    }))
}
