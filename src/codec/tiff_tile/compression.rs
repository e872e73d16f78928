//! TIFF `Compression` values and the decompressor behind each.

use std::fmt;

use bytes::Bytes;

use super::layout::Layout;
use super::sgilog::{self, SgiLog};
use super::{jpeg, lzw, packbits, webp};
use crate::base::buffers::output_buffer;
use crate::base::dtype::ByteOrder;
use crate::base::error::{Error, Result};
use crate::codec::config::BuildFn;
use crate::codec::config::Config;
use crate::codec::fax::{self, Mode, Pixels};
use crate::codec::{lzma, zlib, zstd};
use crate::codec::{Codec, DecodeContext};

/// How a tile's bytes are compressed.
#[derive(Debug)]
pub(super) enum Compression {
    /// 1: stored as is.
    None,
    /// 5: LZW as libtiff writes it (and old-style LZW).
    Lzw,
    /// 32773: Macintosh PackBits.
    PackBits,
    /// 8 / 32946 (zlib), 50000 (ZSTD) or 34925 (LZMA, an xz stream): decoded
    /// by the codec of that stream format.
    Stream {
        /// The TIFF compression value.
        tag: u64,
        /// The codec decoding the stream.
        codec: Box<dyn Codec>,
    },
    /// 7: JPEG, with the `JPEGTables` (tag 347) if the file has them.
    Jpeg(Option<Vec<u8>>),
    /// 50001: WebP.
    WebP,
    /// 2 (CCITT RLE), 3 (T.4 Group 3 fax, 2-D coding when bit 0 of
    /// `T4Options` is set) or 4 (T.6 Group 4 fax): 1-bit rows coded as
    /// [`fax`] decodes them. The other option bits do not change how libtiff
    /// decodes (fill bits before EOLs are skipped anyway; uncompressed-mode
    /// codes it does not support, and ends their row as a bad code).
    Fax(Mode),
    /// 34676 (SGILOG: run-length coded 32-bit LogLuv or 16-bit LogL) or
    /// 34677 (SGILOG24: 24-bit LogLuv), decoded by [`sgilog`].
    SgiLog {
        /// The TIFF compression value.
        tag: u64,
        /// The decoder of these pixels.
        decoder: SgiLog,
    },
}

/// The TIFF tags a compression is configured by, besides its own value.
#[derive(Debug, Default)]
pub(super) struct Tags {
    /// `JPEGTables` (tag 347) of JPEG tiles.
    pub(super) jpeg_tables: Option<Vec<u8>>,
    /// `T4Options` (tag 292) of Group 3 fax.
    pub(super) t4_options: u64,
    /// `Photometric`: LogLuv or LogL for SGILOG pixels.
    pub(super) photometric: Option<u64>,
    /// `SamplesPerPixel`, `BitsPerSample` and `SampleFormat`, which choose
    /// what SGILOG pixels decode to.
    pub(super) samples_per_pixel: usize,
    /// See [`Tags::samples_per_pixel`].
    pub(super) bits_per_sample: Option<u64>,
    /// See [`Tags::samples_per_pixel`].
    pub(super) sample_format: u64,
}

impl Compression {
    /// The name GDAL's GTiff driver reports for this compression.
    pub(super) fn gdal_name(&self) -> &'static str {
        match self {
            Compression::None => "NONE",
            Compression::Lzw => "LZW",
            Compression::PackBits => "PACKBITS",
            Compression::Stream { tag: 50000, .. } => "ZSTD",
            Compression::Stream { tag: 34925, .. } => "LZMA",
            Compression::Stream { .. } => "DEFLATE",
            Compression::Jpeg(_) => "JPEG",
            Compression::WebP => "WEBP",
            Compression::Fax(Mode::Rle) => "CCITTRLE",
            Compression::Fax(Mode::Group3 { .. }) => "CCITTFAX3",
            Compression::Fax(Mode::Group4) => "CCITTFAX4",
            Compression::SgiLog {
                tag: sgilog::SGILOG,
                ..
            } => "SGILOG",
            Compression::SgiLog { .. } => "SGILOG24",
        }
    }

    /// The compression for TIFF tag value `tag`, configured by `tags`.
    pub(super) fn from_tag(tag: u64, tags: Tags) -> Result<Compression> {
        let stream = |build: BuildFn| -> Result<Compression> {
            let codec = build(&Config::new())?;
            Ok(Compression::Stream { tag, codec })
        };
        match tag {
            1 => Ok(Compression::None),
            2 => Ok(Compression::Fax(Mode::Rle)),
            3 => Ok(Compression::Fax(Mode::Group3 {
                two_d: tags.t4_options & 1 == 1,
            })),
            4 => Ok(Compression::Fax(Mode::Group4)),
            5 => Ok(Compression::Lzw),
            7 => Ok(Compression::Jpeg(tags.jpeg_tables)),
            8 | 32946 => stream(zlib::from_config),
            32773 => Ok(Compression::PackBits),
            34925 => stream(lzma::from_config),
            50000 => stream(zstd::from_config),
            50001 => Ok(Compression::WebP),
            sgilog::SGILOG | sgilog::SGILOG24 => {
                let decoder = SgiLog::new(
                    tag,
                    tags.photometric,
                    tags.samples_per_pixel,
                    tags.bits_per_sample,
                    tags.sample_format,
                )
                .map_err(|why| {
                    let name = if tag == sgilog::SGILOG {
                        "SGILOG"
                    } else {
                        "SGILOG24"
                    };
                    Error::unsupported(format!("TIFF compression {tag} ({name}) of {why}"))
                })?;
                Ok(Compression::SgiLog { tag, decoder })
            }
            other => Err(Error::unsupported(format!(
                "TIFF compression {other}{} in tiff-tile chunks (supported: 1 none, 2 CCITT RLE, \
                 3 CCITT Group 3 fax, 4 CCITT Group 4 fax, 5 LZW, 7 JPEG, 8 and 32946 Deflate, \
                 32773 PackBits, 34676 SGILOG, 34677 SGILOG24, 34925 LZMA, 50000 ZSTD, \
                 50001 WebP)",
                known_name(other).map_or_else(String::new, |name| format!(" ({name})"))
            ))),
        }
    }

    /// Whether libtiff reverses the bits of every stored byte of this
    /// compression when `FillOrder` is 2 (the classic codecs, and the fax
    /// ones, whose decoder reads the bits in that order itself; JPEG and the
    /// newer ones ask libtiff not to, and are refused with FillOrder 2).
    pub(super) fn reverses_fill_order(&self) -> bool {
        match self {
            Compression::None | Compression::Lzw | Compression::PackBits => true,
            Compression::Fax(_) | Compression::SgiLog { .. } => true,
            Compression::Stream { tag, .. } => matches!(tag, 8 | 32946),
            _ => false,
        }
    }

    /// Whether libtiff applies the `Predictor` tag to this compression.
    pub(super) fn uses_predictor(&self) -> bool {
        matches!(self, Compression::Lzw | Compression::Stream { .. })
    }

    /// Decompresses one tile into pixel-interleaved rows, at most
    /// `ctx.decoded_len` bytes (a last strip may hold fewer rows; where
    /// `ctx.needed` asks for fewer, none, ZSTD and stored tiles stop after
    /// them, the others decode the whole tile). `rows` is how many rows the
    /// tile holds (fewer than the layout's in an image's last strip): fax
    /// data, which does not say where it ends, is decoded for that many.
    pub(super) fn decompress(
        &self,
        input: Bytes,
        ctx: &DecodeContext<'_>,
        layout: &Layout,
        photometric: Option<u64>,
        rows: usize,
    ) -> Result<Vec<u8>> {
        let limit = ctx.decoded_len;
        match self {
            Compression::None => {
                // Bytes past the chunk are left, as libtiff leaves them.
                let input = if input.len() > limit {
                    input.slice(..limit)
                } else {
                    input
                };
                // A reader needing the first rows only gets those. The
                // buffer a local read made is handed on, not copied (bytes
                // shared with other chunks, as a remote span's are, are).
                if ctx.needed < input.len() {
                    let first_rows = input.slice(..ctx.needed);
                    drop(input);
                    return Ok(Vec::from(first_rows));
                }
                Ok(Vec::from(input))
            }
            Compression::Lzw => lzw::decode(&input, limit).map_err(|e| super::fail(self, e)),
            Compression::PackBits => {
                packbits::decode(&input, limit).map_err(|e| super::fail(self, e))
            }
            Compression::Stream { codec, tag } => match codec.decode(input.clone(), ctx) {
                Ok(bytes) => Ok(Vec::from(bytes)),
                Err(Error::Decode { reason, .. }) => {
                    overrun_prefix(*tag, &input, limit).ok_or_else(|| super::fail(self, reason))
                }
                Err(other) => Err(other),
            },
            Compression::Jpeg(tables) => {
                jpeg::decode(&input, tables.as_deref(), layout, photometric).map_err(|e| match e {
                    jpeg::Failure::Unsupported(what) => {
                        Error::unsupported(format!("{self}: {what}"))
                    }
                    jpeg::Failure::Corrupt(reason) => super::fail(self, reason),
                })
            }
            Compression::WebP => webp::decode(&input, layout).map_err(|e| super::fail(self, e)),
            Compression::Fax(mode) => self.decode_fax(&input, *mode, layout, rows),
            Compression::SgiLog { decoder, .. } => {
                let big_endian = ctx.dtype.order == ByteOrder::Big;
                self.decode_sgilog(&input, decoder, layout, rows, big_endian)
            }
        }
    }

    /// Decodes `rows` rows of fax-coded 1-bit pixels, packed as the tile
    /// stores them; warns where libtiff would (bad codes, Group 4 data that
    /// ends early, whose missing rows come back white).
    fn decode_fax(
        &self,
        input: &[u8],
        mode: Mode,
        layout: &Layout,
        rows: usize,
    ) -> Result<Vec<u8>> {
        let rows = rows.min(layout.height);
        let len = rows * layout.row_bytes();
        let mut out = output_buffer("TIFF fax", len)?;
        out.resize(len, 0);
        if layout.width == 0 || rows == 0 {
            return Ok(out);
        }
        let decoded = fax::decode(input, layout.width, mode, Pixels::Bits, &mut out)
            .map_err(|e| super::fail(self, format_args!("row {} of {rows}: {}", e.row, e.why)))?;
        if decoded.bad_codes > 0 {
            crate::base::warnings::gdal_warning(&format!(
                "{self}: {} row(s) of a strip or tile hold a code of no fax table (or an \
                 uncompressed-mode code, which libtiff does not support); each was ended \
                 there and padded with white, as libtiff does",
                decoded.bad_codes
            ));
        }
        if decoded.rows < rows {
            crate::base::warnings::gdal_warning(&format!(
                "{self}: the data of a strip or tile ends after row {} of {rows}; libtiff \
                 keeps the rows decoded and leaves the others undecoded, read here as white",
                decoded.rows
            ));
        }
        Ok(out)
    }

    /// Decodes `rows` rows of LogLuv or LogL pixels, samples in the byte
    /// order `big_endian` says. A strip or tile whose data ends before its
    /// last row fails, as it does in libtiff.
    fn decode_sgilog(
        &self,
        input: &[u8],
        decoder: &SgiLog,
        layout: &Layout,
        rows: usize,
        big_endian: bool,
    ) -> Result<Vec<u8>> {
        let rows = rows.min(layout.height);
        let len = decoder
            .decoded_len(layout.width, rows)
            .ok_or_else(|| super::fail(self, "the tile is too large"))?;
        let mut out = output_buffer("TIFF SGILOG", len)?;
        if len == 0 {
            return Ok(out);
        }
        decoder
            .decode(input, layout.width, rows, big_endian, &mut out)
            .map_err(|short| {
                super::fail(
                    self,
                    format_args!(
                        "the data ends in row {} of {rows} ({} pixel(s) short)",
                        short.row, short.pixels
                    ),
                )
            })?;
        Ok(out)
    }

    /// The TIFF compression value.
    fn tag(&self) -> u64 {
        match self {
            Compression::None => 1,
            Compression::Lzw => 5,
            Compression::Jpeg(_) => 7,
            Compression::PackBits => 32773,
            Compression::Stream { tag, .. } => *tag,
            Compression::WebP => 50001,
            Compression::Fax(Mode::Rle) => 2,
            Compression::Fax(Mode::Group3 { .. }) => 3,
            Compression::Fax(Mode::Group4) => 4,
            Compression::SgiLog { tag, .. } => *tag,
        }
    }
}

/// The first `limit` bytes of a Deflate, ZSTD or LZMA stream (compression
/// `tag`) that decodes to more than `limit`: libtiff stops once the strip or
/// tile is full and leaves the rest of the stream, so GDAL reads such a
/// chunk. `None` for other compressions and for streams that fail before
/// `limit`.
fn overrun_prefix(tag: u64, input: &[u8], limit: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    let reader: Box<dyn Read + '_> = match tag {
        8 | 32946 => Box::new(flate2::read::ZlibDecoder::new(input)),
        50000 => Box::new(::zstd::stream::read::Decoder::new(input).ok()?),
        34925 => Box::new(liblzma::read::XzDecoder::new(input)),
        _ => return None,
    };
    let mut out = crate::base::buffers::output_buffer("TIFF stream", limit).ok()?;
    let cap = u64::try_from(limit).unwrap_or(u64::MAX);
    reader.take(cap).read_to_end(&mut out).ok()?;
    (out.len() == limit).then_some(out)
}

/// The usual name of a TIFF compression value, for messages.
fn known_name(tag: u64) -> Option<&'static str> {
    Some(match tag {
        1 => "none",
        2 => "CCITT RLE",
        3 => "CCITT Group 3 fax",
        4 => "CCITT Group 4 fax",
        5 => "LZW",
        6 => "old-style JPEG",
        7 => "JPEG",
        8 | 32946 => "Deflate",
        32773 => "PackBits",
        33003 | 33005 | 34712 => "JPEG 2000",
        34676 => "SGILOG",
        34677 => "SGILOG24",
        34887 => "LERC",
        34925 => "LZMA",
        50000 => "ZSTD",
        50001 => "WebP",
        50002 => "JPEG XL",
        _ => return None,
    })
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tag = self.tag();
        let name = known_name(tag).unwrap_or("unknown");
        write!(f, "{name} (TIFF compression {tag})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_compressions_are_named() {
        for (tag, name) in [
            (34887, "LERC"),
            (34712, "JPEG 2000"),
            (6, "old-style JPEG"),
            (9, "9"),
        ] {
            let err = Compression::from_tag(tag, Tags::default()).unwrap_err();
            assert!(matches!(err, Error::Unsupported { .. }), "{err}");
            assert!(err.to_string().contains(name), "{err}");
        }
    }

    #[test]
    fn messages_name_the_compression() {
        let deflate = Compression::from_tag(32946, Tags::default()).unwrap();
        assert_eq!(deflate.to_string(), "Deflate (TIFF compression 32946)");
        assert!(deflate.uses_predictor());
        assert!(!Compression::PackBits.uses_predictor());
        assert!(super::super::fail(&Compression::Lzw, "x")
            .to_string()
            .contains(super::super::URI));
    }
}
