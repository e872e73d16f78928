//! `nitf-bilevel`: one bi-level NITF block (IC = C1 / M1), ITU-T T.4
//! (Group 3 fax) coded, decoded as GDAL's NITF driver decodes it.
//!
//! GDAL hands each block to libtiff's Group 3 decoder as one strip
//! (bits most significant first, one-dimensional coding, or the 2-D
//! option when COMRAT starts with `2`) and gives the pixels as bytes: 1
//! where a black run lies, 0 elsewhere. The decoder ([`super::fax`], shared
//! with TIFF's fax compressions) follows libtiff's rules: every row starts after an EOL code (fill bits before it are
//! skipped); with the 2-D option a tag bit after the EOL says whether the
//! row is coded alone (1) or against the row above (0); a row whose runs
//! fall short or overrun is cut or padded with white; a code that fits no
//! table ends its row (a warning, the block still reads); data that ends
//! before the last row fails the block, as it fails GDAL's read.
//!
//! Configuration: `block_width`, `block_height` (the chunk's pixels) and
//! `coding` (`"1D"` or `"2D"`). Decoding gives `[1, block_height,
//! block_width]` of `|u1`.

use bytes::Bytes;

use super::fax::{self, Mode, Pixels};
use super::{Codec, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::error::{Error, Result};
use crate::codec::config::{config_str, config_uint, Config};

/// The codec's name.
pub(crate) const NAME: &str = "nitf-bilevel";

/// Every name the codec answers to.
pub(super) const NAMES: &[&str] = &[NAME];

/// Largest block side the codec accepts (NITF blocks are at most 8192).
const MAX_SIDE: u64 = 1 << 16;

#[derive(Debug)]
struct NitfBilevel {
    width: usize,
    height: usize,
    /// Rows may be coded against the row above (T.4 2-D coding).
    two_d: bool,
}

impl Codec for NitfBilevel {
    fn name(&self) -> &str {
        NAME
    }

    fn compression(&self) -> String {
        "BILEVEL".into()
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let len = self.width * self.height;
        if ctx.decoded_len != len || ctx.dtype.size != 1 {
            return Err(Error::decode(
                NAME,
                format!(
                    "a {} x {} block of bytes does not fit the chunk of {} bytes",
                    self.width, self.height, ctx.decoded_len
                ),
            ));
        }
        let mut out = output_buffer(NAME, len)?;
        out.resize(len, 0);
        let mode = Mode::Group3 { two_d: self.two_d };
        let decoded =
            fax::decode(&input, self.width, mode, Pixels::Bytes, &mut out).map_err(|e| {
                Error::decode(NAME, format!("row {} of {}: {}", e.row, self.height, e.why))
            })?;
        if decoded.bad_codes > 0 {
            crate::base::warnings::gdal_warning(&format!(
                "{NAME}: {} row(s) of a block hold a code of no T.4 table; each was \
                 ended there and padded with white, as libtiff does",
                decoded.bad_codes
            ));
        }
        Ok(Bytes::from(out))
    }
}

/// Builds the codec from its configuration.
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let side = |key: &str| -> Result<usize> {
        match config_uint(NAME, config, key)? {
            Some(v) if (1..=MAX_SIDE).contains(&v) => Ok(v as usize),
            other => Err(Error::codec_config(
                NAME,
                format!("'{key}' should be 1 to {MAX_SIDE}, found {other:?}"),
            )),
        }
    };
    let two_d = match config_str(NAME, config, "coding")? {
        Some("1D") => false,
        Some("2D") => true,
        other => {
            return Err(Error::codec_config(
                NAME,
                format!("'coding' should be \"1D\" or \"2D\", found {other:?}"),
            ))
        }
    };
    Ok(Box::new(NitfBilevel {
        width: side("block_width")?,
        height: side("block_height")?,
        two_d,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::fax::tests::pack;
    use crate::codec::fax::EOL;
    use crate::codec::testing::{assert_survives_mutations, decode_with};

    fn config(width: usize, height: usize, coding: &str) -> String {
        format!(r#"{{"block_width": {width}, "block_height": {height}, "coding": "{coding}"}}"#)
    }

    #[test]
    fn decodes_one_dimensional_rows() {
        // Width 16: row 0 = white 3, black 2, white 11; row 1 = white 0, black 16.
        let data = pack(&format!(
            "{EOL} 1000 11 01000 {EOL} 00110101 0000010111 {EOL}{EOL}"
        ));
        let out = decode_with(NAME, &config(16, 2, "1D"), &data, 32).unwrap();
        let mut want = [0u8; 32];
        want[3..5].fill(1);
        want[16..].fill(1);
        assert_eq!(out[..], want[..]);
    }

    #[test]
    fn decodes_two_dimensional_rows() {
        // Width 8: row 0 (1-D) = white 2, black 3, white 3; row 1 (2-D):
        // V0 (a1 = 2), VR1 (a2 = 6), then V0 to the end: white 2, black 4,
        // white 2.
        let data = pack(&format!("{EOL}1 0111 10 1000 {EOL}0 1 011 1"));
        let out = decode_with(NAME, &config(8, 2, "2D"), &data, 16).unwrap();
        assert_eq!(out[..], [0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0]);
    }

    #[test]
    fn pads_short_rows_and_fails_truncated_blocks() {
        // Row 0 stops after white 3 (an EOL follows): padded with white.
        let data = pack(&format!("{EOL} 1000 {EOL} 1000 0011 0111"));
        let out = decode_with(NAME, &config(9, 2, "1D"), &data, 18).unwrap();
        assert_eq!(out[..9], [0; 9]);
        assert_eq!(out[9..], [0, 0, 0, 1, 1, 1, 1, 1, 0]);
        // The data ends before the second row.
        let short = pack(&format!("{EOL} 1000 0011 0111"));
        let err = decode_with(NAME, &config(9, 2, "1D"), &short, 18).unwrap_err();
        assert!(err.to_string().contains("row 1 of 2"), "{err}");
    }

    #[test]
    fn refuses_bad_configurations() {
        for bad in [
            r#"{"block_width": 0, "block_height": 1, "coding": "1D"}"#,
            r#"{"block_width": 8, "block_height": 1, "coding": "3D"}"#,
            r#"{"block_width": 8, "block_height": 1}"#,
        ] {
            assert!(decode_with(NAME, bad, &[], 8).is_err(), "{bad}");
        }
        let wrong = decode_with(NAME, &config(8, 2, "1D"), &[], 8).unwrap_err();
        assert!(wrong.to_string().contains("8 x 2"), "{wrong}");
    }

    #[test]
    fn survives_garbage_and_truncation() {
        let row = format!("{EOL}0111 10 1000 ");
        let one = pack(&row.repeat(64));
        assert_survives_mutations(NAME, &config(8, 64, "1D"), &one, 512);
        let two = pack(&format!(
            "{EOL}1 0111 10 1000 {}",
            format!("{EOL}0 1 011 1 ").repeat(63)
        ));
        assert_survives_mutations(NAME, &config(8, 64, "2D"), &two, 512);
        // Long runs of ones and zeros: no hang, no panic.
        for fill in [0x00u8, 0xFF, 0x01, 0x80] {
            for coding in ["1D", "2D"] {
                let _ = decode_with(NAME, &config(64, 64, coding), &[fill; 4096], 4096);
            }
        }
    }
}
