//! `https://awslabs.github.io/osml-imagery-io/codecs/jpeg2000` (alias
//! `jpeg2000`): one tile of a JPEG 2000 codestream, as osml-imagery-io 0.2.x
//! indexes describe it.
//!
//! Configuration: `main_header` (base64 of the codestream's main header, SOC
//! up to the first SOT) and `resolution_level` (0 = full resolution, r =
//! reduced 2^r times). A chunk is the tile's tile-parts, concatenated; the
//! codec checks their SOT headers, appends them to the main header with an
//! EOC and decodes that one tile with OpenJPEG into `[components, h, w]`,
//! padding edge tiles with zeros to the chunk's shape.
//!
//! Sub-sampled components are decoded only in the one case GDAL's
//! JP2OpenJPEG driver (3.6) reads: three 8-bit unsigned components, the
//! second and third at half resolution both ways (YCbCr 4:2:0), on an image
//! of even width and height. Like GDAL,
//! the chroma samples are repeated over 2 x 2 pixels of the tile and the
//! pixels converted to RGB (`R = Y + 1.402 (Cr - 128)`,
//! `G = Y - 0.34414 (Cb - 128) - 0.71414 (Cr - 128)`,
//! `B = Y + 1.772 (Cb - 128)`, truncated and clamped to 0..255).

pub(super) mod openjpeg;

use base64::Engine;
use bytes::Bytes;

use super::{Codec, DecodeContext};
use crate::base::dtype::{ByteOrder, ScalarKind};
use crate::base::error::{Error, Result};
use crate::codec::config::{config_str, config_uint, Config};
use crate::formats::j2k::codestream::{check_tile_parts, without_tlm, MainHeader, SUB_SAMPLED};

/// The canonical name of the codec, as osml-imagery-io writes it.
pub(super) const URI: &str = "https://awslabs.github.io/osml-imagery-io/codecs/jpeg2000";

/// Every name the codec answers to, canonical first.
pub(super) const NAMES: &[&str] = &[URI, "jpeg2000"];

/// Decodes one JPEG 2000 tile.
#[derive(Debug)]
struct Jpeg2000 {
    /// The main header bytes.
    header: Vec<u8>,
    /// The main header, parsed.
    parsed: MainHeader,
    /// Resolution reduction.
    reduce: u32,
    /// Whether the components are YCbCr 4:2:0, converted to RGB.
    ycbcr420: bool,
}

impl Codec for Jpeg2000 {
    fn name(&self) -> &str {
        URI
    }

    fn compression(&self) -> String {
        "JPEG2000".into()
    }

    fn stored_bits(&self) -> Option<u32> {
        let bits = u32::from(self.parsed.siz.components[0].bits);
        (![8, 16, 32].contains(&bits)).then_some(bits)
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let tile = check_tile_parts(&input).map_err(|p| Error::decode(URI, p))?;
        let (across, down) = self.parsed.siz.tile_grid();
        if u32::from(tile) >= across * down {
            return Err(Error::decode(
                URI,
                format!(
                    "tile-part of tile {tile}, but the codestream has {} tiles",
                    across * down
                ),
            ));
        }
        let n = ctx.chunk_shape.len();
        let (comps, height, width) = match n {
            0 | 1 => return Err(Error::decode(URI, "the chunk is not 2-D")),
            _ => (
                ctx.chunk_shape[..n - 2].iter().product::<u64>() as usize,
                ctx.chunk_shape[n - 2] as usize,
                ctx.chunk_shape[n - 1] as usize,
            ),
        };
        let components = self.parsed.siz.components.len();
        if comps != components {
            return Err(Error::decode(
                URI,
                format!("the codestream has {components} components, the chunk {comps} bands"),
            ));
        }
        let mut stream = Vec::with_capacity(self.header.len() + input.len() + 2);
        stream.extend_from_slice(&self.header);
        stream.extend_from_slice(&input);
        stream.extend_from_slice(&[0xFF, 0xD9]);
        let mut planes = openjpeg::decode_tile(&stream, u32::from(tile), self.reduce)
            .map_err(|e| Error::decode(URI, format!("tile {tile}: {e}")))?;
        if self.ycbcr420 {
            planes = ycbcr420_to_rgb(&planes)
                .map_err(|e| Error::decode(URI, format!("tile {tile}: {e}")))?;
        }
        let size = ctx.dtype.size;
        let signed = ctx.dtype.kind == ScalarKind::Int;
        let big_endian = ctx.dtype.order == ByteOrder::Big;
        let mut out = vec![0u8; ctx.decoded_len];
        if out.len() != comps * height * width * size {
            return Err(Error::decode(URI, "chunk size does not match its shape"));
        }
        for (c, plane) in planes.iter().enumerate() {
            if plane.width > width || plane.height > height {
                return Err(Error::decode(
                    URI,
                    format!(
                        "tile {tile} component {c} decodes to {} x {}, larger than the {width} x \
                         {height} chunk",
                        plane.width, plane.height
                    ),
                ));
            }
            for (row, values) in plane.data.chunks_exact(plane.width.max(1)).enumerate() {
                let at = (c * height + row) * width * size;
                let dst = &mut out[at..at + plane.width * size];
                for (v, d) in values.iter().zip(dst.chunks_exact_mut(size)) {
                    store(*v, signed, big_endian, d);
                }
            }
        }
        Ok(Bytes::from(out))
    }
}

/// Converts the decoded Y, Cb, Cr planes of a 4:2:0 tile to R, G and B
/// planes at the size of Y, as GDAL's JP2OpenJPEG driver does.
fn ycbcr420_to_rgb(
    planes: &[openjpeg::Plane],
) -> std::result::Result<Vec<openjpeg::Plane>, String> {
    let [y, cb, cr] = planes else {
        return Err(format!("{} components decoded, 3 expected", planes.len()));
    };
    let (w, h) = (y.width, y.height);
    if [cb, cr]
        .iter()
        .any(|c| c.width < w.div_ceil(2) || c.height < h.div_ceil(2))
    {
        return Err(format!(
            "chroma of {} x {} and {} x {} for luma of {w} x {h}",
            cb.width, cb.height, cr.width, cr.height
        ));
    }
    let convert = |f: fn(f64, f64, f64) -> f64| {
        let mut data = Vec::with_capacity(w * h);
        for row in 0..h {
            for col in 0..w {
                let at =
                    |p: &openjpeg::Plane| f64::from(p.data[row / 2 * p.width + col / 2]) - 128.0;
                let v = f(f64::from(y.data[row * w + col]), at(cb), at(cr));
                data.push((v as i32).clamp(0, 255));
            }
        }
        openjpeg::Plane {
            width: w,
            height: h,
            data,
        }
    };
    Ok(vec![
        convert(|y, _, cr| y + 1.402 * cr),
        convert(|y, cb, cr| y - 0.34414 * cb - 0.71414 * cr),
        convert(|y, cb, _| y + 1.772 * cb),
    ])
}

/// Writes `v` clamped to the sample type held in `dst`.
fn store(v: i32, signed: bool, big_endian: bool, dst: &mut [u8]) {
    let bits = 8 * dst.len() as u32;
    let v = i64::from(v);
    let (lo, hi) = if signed {
        (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
    } else {
        (0, (1i64 << bits.min(62)) - 1)
    };
    let bytes = v.clamp(lo, hi).to_le_bytes();
    let n = dst.len();
    dst.copy_from_slice(&bytes[..n]);
    if big_endian {
        dst.reverse();
    }
}

/// Builds the codec from its osml-imagery-io configuration.
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let text = config_str(URI, config, "main_header")?
        .ok_or_else(|| Error::codec_config(URI, "'main_header' is required"))?;
    let mut header = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| Error::codec_config(URI, format!("'main_header' is not valid base64: {e}")))?;
    // The header ends where the first tile-part begins; parse it as such.
    header.extend_from_slice(&[0xFF, 0x90, 0, 10]);
    let parsed = MainHeader::parse(&header)
        .map_err(|p| Error::codec_config(URI, format!("'main_header': {p}")))?;
    let header = without_tlm(&header, &parsed);
    let siz = &parsed.siz;
    if !siz.sampling_readable() {
        return Err(Error::unsupported(SUB_SAMPLED));
    }
    if siz.components.iter().any(|c| c.bits > 32) {
        return Err(Error::unsupported(
            "JPEG 2000 components of more than 32 bits",
        ));
    }
    let reduce = config_uint(URI, config, "resolution_level")?.unwrap_or(0);
    if reduce > u64::from(parsed.levels) {
        return Err(Error::codec_config(
            URI,
            format!(
                "'resolution_level' {reduce} is more than the codestream's {} decomposition levels",
                parsed.levels
            ),
        ));
    }
    let ycbcr420 = siz.is_ycbcr420();
    Ok(Box::new(Jpeg2000 {
        header,
        parsed,
        reduce: reduce as u32,
        ycbcr420,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::registry;
    use crate::formats::j2k::codestream::tests::{header, tile_part};

    fn config(header: &[u8], level: u64) -> Config {
        let b64 = base64::engine::general_purpose::STANDARD.encode(header);
        crate::codec::testing::config(&format!(
            r#"{{"main_header": "{b64}", "resolution_level": {level}}}"#
        ))
    }

    #[test]
    fn configurations_are_checked() {
        let h = header(300, 200, 128, 3, 2, &[]);
        assert!(registry::build(URI, &config(&h, 2)).is_ok());
        let err = registry::build(URI, &config(&h, 3)).unwrap_err();
        assert!(err.to_string().contains("2 decomposition levels"), "{err}");
        let err = registry::build("jpeg2000", &config(&h[..30], 0)).unwrap_err();
        assert!(err.to_string().contains("main_header"), "{err}");
        let err = registry::build(URI, &crate::codec::testing::config("{}")).unwrap_err();
        assert!(err.to_string().contains("required"), "{err}");
    }

    #[test]
    fn bad_tile_parts_never_reach_openjpeg() {
        let h = header(300, 200, 128, 3, 2, &[]);
        let codec = registry::build(URI, &config(&h, 0)).unwrap();
        let dtype = crate::base::dtype::DataType::from_v2("|u1").unwrap();
        let ctx = DecodeContext {
            chunk_shape: &[3, 128, 128],
            dtype,
            decoded_len: 3 * 128 * 128,
            needed: 3 * 128 * 128,
            first_needed: 0,
            chunk_index: &[],
        };
        let part = tile_part(0, 0, 1, 20);
        let err = codec
            .decode(Bytes::copy_from_slice(&part[..part.len() - 3]), &ctx)
            .unwrap_err();
        assert!(err.to_string().contains("claims"), "{err}");
        let err = codec
            .decode(Bytes::from(tile_part(9, 0, 1, 4)), &ctx)
            .unwrap_err();
        assert!(err.to_string().contains("has 6 tiles"), "{err}");
        // Valid framing, garbage packets: whatever OpenJPEG makes of them,
        // the call returns.
        let _ = codec.decode(Bytes::from(part), &ctx);
    }

    #[test]
    fn ycbcr420_repeats_chroma_and_truncates_like_gdal() {
        let plane = |width: usize, height: usize, data: Vec<i32>| openjpeg::Plane {
            width,
            height,
            data,
        };
        // A 3 x 2 luma tile; chroma of 2 x 1 covers it.
        let y = plane(3, 2, vec![100, 101, 102, 103, 104, 250]);
        let cb = plane(2, 1, vec![128, 200]);
        let cr = plane(2, 1, vec![130, 10]);
        let rgb = ycbcr420_to_rgb(&[y, cb, cr]).unwrap();
        // R = Y + 1.402 (Cr - 128): 100 + 2.804 -> 102; 250 - 165.4 -> 84.
        assert_eq!(rgb[0].data, vec![102, 103, 0, 105, 106, 84]);
        // B = Y + 1.772 (Cb - 128): 102 + 127.6 -> 229; 250 + 127.6 -> 255.
        assert_eq!(rgb[2].data, vec![100, 101, 229, 103, 104, 255]);
        let small = ycbcr420_to_rgb(&[
            plane(4, 2, vec![0; 8]),
            plane(1, 1, vec![0]),
            plane(2, 1, vec![0; 2]),
        ]);
        assert!(small.unwrap_err().contains("chroma of 1 x 1"));
    }

    #[test]
    fn samples_are_clamped_to_their_type() {
        let mut b = [0u8; 2];
        store(-5, false, false, &mut b);
        assert_eq!(b, [0, 0]);
        store(4095, false, true, &mut b);
        assert_eq!(b, [0x0F, 0xFF]);
        store(-2, true, false, &mut b);
        assert_eq!(b, [0xFE, 0xFF]);
        let mut one = [0u8; 1];
        store(300, false, false, &mut one);
        assert_eq!(one, [255]);
    }
}
