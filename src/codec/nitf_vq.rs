//! `nitf-vq`: one vector-quantised NITF block (IC = C4 / M4), a 256 x 256
//! subframe of an RPF product (CADRG, CIB), decoded as GDAL's NITF driver
//! decodes it.
//!
//! The chunk is the subframe's 6144 bytes of 12-bit codes: 64 rows of 64
//! codes, two codes packed in three bytes, each code naming a 4 x 4 kernel
//! of 8-bit pixels. Configuration: `codebook`, base64 of the RPF
//! compression lookup tables, four tables of 4096 entries of 4 bytes (table
//! t holds row t of every kernel). Decoding gives `[1, 256, 256]` of `|u1`
//! (palette indices, or grey levels for CIB).

use base64::Engine;
use bytes::Bytes;

use super::{Codec, ColorModel, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::error::{Error, Result};
use crate::codec::config::{config_str, Config};
use crate::formats::nitf::rpf_vq::CODEBOOK_LEN;
use crate::formats::nitf::rpf_vq::CODED_LEN;
use crate::formats::nitf::rpf_vq::ENTRIES;
use crate::formats::nitf::rpf_vq::SUBFRAME;

/// The codec's name.
pub(crate) const NAME: &str = "nitf-vq";

/// Every name the codec answers to.
pub(super) const NAMES: &[&str] = &[NAME];

#[derive(Debug)]
struct NitfVq {
    /// Row t of kernel k at `codebook[(t * ENTRIES + k) * 4..][..4]`.
    codebook: Vec<u8>,
}

impl Codec for NitfVq {
    fn name(&self) -> &str {
        NAME
    }

    fn compression(&self) -> String {
        "VECTOR QUANTIZATION".into()
    }

    fn color_model(&self) -> Option<ColorModel> {
        Some(ColorModel::Palette)
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        if ctx.decoded_len != SUBFRAME * SUBFRAME || ctx.dtype.size != 1 {
            return Err(Error::decode(
                NAME,
                format!(
                    "a {SUBFRAME} x {SUBFRAME} subframe of bytes does not fit the chunk of {} \
                     bytes",
                    ctx.decoded_len
                ),
            ));
        }
        let codes = input.get(..CODED_LEN).ok_or_else(|| {
            Error::decode(
                NAME,
                format!(
                    "a subframe holds {CODED_LEN} bytes of codes, the chunk {}",
                    input.len()
                ),
            )
        })?;
        let mut out = output_buffer(NAME, SUBFRAME * SUBFRAME)?;
        out.resize(SUBFRAME * SUBFRAME, 0);
        // Each 3 bytes hold two codes: kernels side by side on 4 rows.
        for (i, triple) in codes.chunks_exact(3).enumerate() {
            let (row, col) = (i / (SUBFRAME / 8) * 4, i % (SUBFRAME / 8) * 8);
            let (a, b, c) = (
                usize::from(triple[0]),
                usize::from(triple[1]),
                usize::from(triple[2]),
            );
            let first = (a << 4) | (b >> 4);
            let second = ((b & 0x0F) << 8) | c;
            for t in 0..4 {
                let line = &mut out[(row + t) * SUBFRAME + col..][..8];
                line[..4].copy_from_slice(self.kernel_row(t, first));
                line[4..].copy_from_slice(self.kernel_row(t, second));
            }
        }
        Ok(Bytes::from(out))
    }
}

impl NitfVq {
    /// Row `t` of kernel `code`.
    fn kernel_row(&self, t: usize, code: usize) -> &[u8] {
        &self.codebook[(t * ENTRIES + code) * 4..][..4]
    }
}

/// Builds the codec from its configuration.
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let text = config_str(NAME, config, "codebook")?
        .ok_or_else(|| Error::codec_config(NAME, "'codebook' is missing"))?;
    let codebook = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| Error::codec_config(NAME, format!("'codebook' is not valid base64: {e}")))?;
    if codebook.len() != CODEBOOK_LEN {
        return Err(Error::codec_config(
            NAME,
            format!(
                "'codebook' holds {} bytes; four tables of 4096 kernel rows of 4 bytes are \
                 {CODEBOOK_LEN}",
                codebook.len()
            ),
        ));
    }
    Ok(Box::new(NitfVq { codebook }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testing::{assert_survives_mutations, decode_with};

    /// A codebook whose kernel k has row t = [k % 256, t, k / 16 % 256, 9].
    fn codebook() -> String {
        let mut book = vec![0u8; CODEBOOK_LEN];
        for t in 0..4 {
            for k in 0..ENTRIES {
                let e = &mut book[(t * ENTRIES + k) * 4..][..4];
                e.copy_from_slice(&[(k % 256) as u8, t as u8, (k / 16 % 256) as u8, 9]);
            }
        }
        base64::engine::general_purpose::STANDARD.encode(book)
    }

    #[test]
    fn expands_code_pairs_into_kernels() {
        let mut codes = vec![0u8; CODED_LEN];
        // The first two codes: 0xABC and 0x123; the last pair: 0xFFF, 0x001.
        codes[..3].copy_from_slice(&[0xAB, 0xC1, 0x23]);
        codes[CODED_LEN - 3..].copy_from_slice(&[0xFF, 0xF0, 0x01]);
        let config = format!(r#"{{"codebook": "{}"}}"#, codebook());
        let out = decode_with(NAME, &config, &codes, SUBFRAME * SUBFRAME).unwrap();
        assert_eq!(out[..8], [0xBC, 0, 0xAB, 9, 0x23, 0, 0x12, 9]);
        assert_eq!(
            out[3 * SUBFRAME..][..8],
            [0xBC, 3, 0xAB, 9, 0x23, 3, 0x12, 9]
        );
        assert_eq!(out[4 * SUBFRAME..][..4], [0, 0, 0, 9]);
        let last = (SUBFRAME - 1) * SUBFRAME + SUBFRAME - 8;
        assert_eq!(out[last..][..8], [0xFF, 3, 0xFF, 9, 1, 3, 0, 9]);
    }

    #[test]
    fn refuses_short_chunks_and_bad_codebooks() {
        let config = format!(r#"{{"codebook": "{}"}}"#, codebook());
        let short = decode_with(NAME, &config, &[0; 100], SUBFRAME * SUBFRAME).unwrap_err();
        assert!(short.to_string().contains("6144"), "{short}");
        let wrong = decode_with(NAME, &config, &[0; CODED_LEN], 100).unwrap_err();
        assert!(wrong.to_string().contains("subframe"), "{wrong}");
        let bad = decode_with(NAME, r#"{"codebook": "AAAA"}"#, &[], 1).unwrap_err();
        assert!(bad.to_string().contains("65536"), "{bad}");
        assert_survives_mutations(NAME, &config, &[7; CODED_LEN], SUBFRAME * SUBFRAME);
    }
}
