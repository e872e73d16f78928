//! SGI LogLuv and LogL pixels (TIFF compressions 34676 SGILOG and 34677
//! SGILOG24, photometric 32844 LogL and 32845 LogLuv), decoded as libtiff
//! 4.5 decodes them for a reader that picks no data format of its own, as
//! GDAL's GTiff driver does.
//!
//! The file's BitsPerSample and SampleFormat then choose what a pixel
//! decodes to (see [`Pixels`]): libtiff writes every such file with 16-bit
//! signed samples, so most read as 16-bit (L, u, v) triples (LogLuv) or the
//! stored 16-bit log luminance (LogL); 32-bit floats give CIE XYZ or Y, and
//! 32-bit integers of one sample the stored LogLuv word.
//!
//! Stored pixels (Greg Ward Larson's encodings):
//! - SGILOG LogLuv: 32 bits, a sign, 15 bits of log luminance, 8 bits each
//!   of u' and v'; SGILOG LogL: the first 16 of those bits. Each row is
//!   run-length coded one byte plane at a time, most significant first: a
//!   byte of 128 or more repeats the next byte `byte - 126` times, a smaller
//!   one is followed by that many literal bytes.
//! - SGILOG24 LogLuv: 24 bits stored as they are, 10 bits of log luminance
//!   and a 14-bit index into the (u', v') grid of [`UV_ROWS`].

/// TIFF `Compression` of run-length coded 32-bit LogLuv and 16-bit LogL.
pub(super) const SGILOG: u64 = 34676;
/// TIFF `Compression` of 24-bit LogLuv, stored as is.
pub(super) const SGILOG24: u64 = 34677;
/// TIFF `Photometric` of LogL (log luminance only).
const PHOTOMETRIC_LOGL: u64 = 32844;
/// TIFF `Photometric` of LogLuv.
const PHOTOMETRIC_LOGLUV: u64 = 32845;

/// A decoder of one kind of LogLuv or LogL strip or tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SgiLog {
    /// How the file stores the pixels.
    stored: Stored,
    /// What they decode to.
    pixels: Pixels,
}

/// What libtiff decodes each pixel to, chosen from the file's BitsPerSample
/// and SampleFormat (its `SGILOGDATAFMT` guess).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pixels {
    /// 32-bit floats (SampleFormat 3): CIE X, Y, Z (LogLuv) or Y (LogL).
    Float,
    /// 16-bit integers: log luminance, u' and v' scaled by 32768 (LogLuv),
    /// or the stored 16-bit log luminance (LogL).
    Int16,
    /// One 32-bit integer sample (LogLuv only): the stored word.
    Raw,
}

/// How the pixels are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stored {
    /// SGILOG LogLuv: 32-bit words in four run-length coded byte planes.
    Luv32,
    /// SGILOG24 LogLuv: 24-bit words, three bytes each, uncoded.
    Luv24,
    /// SGILOG LogL: 16-bit words in two run-length coded byte planes.
    L16,
}

/// Why a strip or tile could not be decoded.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Short {
    /// The row of the strip or tile that ran out of data.
    pub(super) row: usize,
    /// The pixels of that row left undecoded.
    pub(super) pixels: usize,
}

impl SgiLog {
    /// The decoder for compression `tag` (SGILOG or SGILOG24) of pixels of
    /// `photometric`, `samples` samples of `bits` bits of `sample_format`;
    /// an explanation where libtiff reads no such pixels (GDAL then fails to
    /// read them, or reads 8-bit ones through its RGBA view, which no chunk
    /// here serves).
    pub(super) fn new(
        tag: u64,
        photometric: Option<u64>,
        samples: usize,
        bits: Option<u64>,
        sample_format: u64,
    ) -> std::result::Result<SgiLog, String> {
        let stored = match (tag, photometric) {
            (SGILOG, Some(PHOTOMETRIC_LOGLUV)) => Stored::Luv32,
            (SGILOG24, Some(PHOTOMETRIC_LOGLUV)) => Stored::Luv24,
            (SGILOG, Some(PHOTOMETRIC_LOGL)) => Stored::L16,
            (_, photometric) => {
                return Err(format!(
                    "photometric {photometric:?}: libtiff decodes SGILOG data of photometric \
                     32845 (LogLuv) or 32844 (LogL, SGILOG only)"
                ))
            }
        };
        // libtiff's guess: 32-bit floats, 16-bit integers (signed,
        // unsigned or void), or 32-bit integers of one LogLuv sample.
        let pixels = match (bits, sample_format, samples, stored) {
            (Some(32), 3, 3, Stored::Luv32 | Stored::Luv24) | (Some(32), 3, 1, Stored::L16) => {
                Pixels::Float
            }
            (Some(16), 1 | 2 | 4, 3, Stored::Luv32 | Stored::Luv24)
            | (Some(16), 1 | 2 | 4, 1, Stored::L16) => Pixels::Int16,
            (Some(32), 1 | 2 | 4, 1, Stored::Luv32 | Stored::Luv24) => Pixels::Raw,
            (Some(8), ..) => {
                return Err(
                    "8-bit samples: libtiff decodes them to display RGB, which GDAL reads \
                     through its RGBA view only"
                        .into(),
                )
            }
            _ => {
                return Err(format!(
                    "{samples} sample(s) of {bits:?} bits of SampleFormat {sample_format}: \
                     libtiff reads 3 (LogLuv) or 1 (LogL) samples of 16-bit integers or \
                     32-bit floats, or 1 LogLuv sample of 32-bit integers"
                ))
            }
        };
        Ok(SgiLog { stored, pixels })
    }

    /// Bytes one decoded pixel takes.
    fn pixel_bytes(&self) -> usize {
        match self.pixels {
            Pixels::Float => 4 * self.stored.samples(),
            Pixels::Int16 => 2 * self.stored.samples(),
            Pixels::Raw => 4,
        }
    }

    /// Bytes of `rows` decoded rows of `width` pixels, `None` on overflow.
    pub(super) fn decoded_len(&self, width: usize, rows: usize) -> Option<usize> {
        width.checked_mul(self.pixel_bytes())?.checked_mul(rows)
    }

    /// Decodes `rows` rows of `width` pixels from `input` onto `out`, each
    /// sample in the byte order `big_endian` says. Like libtiff, fails on a
    /// row the data runs out in; data left after the last row is ignored.
    pub(super) fn decode(
        &self,
        input: &[u8],
        width: usize,
        rows: usize,
        big_endian: bool,
        out: &mut Vec<u8>,
    ) -> std::result::Result<(), Short> {
        let mut words = vec![0u32; width];
        let mut pos = 0;
        for row in 0..rows {
            let decoded = match self.stored {
                Stored::Luv32 => rle_row(input, &mut pos, &mut words, 4),
                Stored::L16 => rle_row(input, &mut pos, &mut words, 2),
                Stored::Luv24 => packed24_row(input, &mut pos, &mut words),
            };
            decoded.map_err(|pixels| Short { row, pixels })?;
            for &word in &words {
                self.put(word, big_endian, out);
            }
        }
        Ok(())
    }

    /// Appends the decoded samples of the stored `word` to `out`.
    fn put(&self, word: u32, big_endian: bool, out: &mut Vec<u8>) {
        let samples = self.stored.samples();
        match self.pixels {
            Pixels::Raw => push(out, word.to_be_bytes(), word.to_le_bytes(), big_endian),
            Pixels::Float => {
                let xyz = match self.stored {
                    Stored::Luv32 => luv32_to_xyz(word),
                    Stored::Luv24 => luv24_to_xyz(word),
                    Stored::L16 => [l16_to_y(word as u16 as i16) as f32, 0.0, 0.0],
                };
                for value in &xyz[..samples] {
                    push(out, value.to_be_bytes(), value.to_le_bytes(), big_endian);
                }
            }
            Pixels::Int16 => {
                let luv = match self.stored {
                    Stored::Luv32 => luv32_to_luv48(word),
                    Stored::Luv24 => luv24_to_luv48(word),
                    Stored::L16 => [word as u16 as i16, 0, 0],
                };
                for value in &luv[..samples] {
                    push(out, value.to_be_bytes(), value.to_le_bytes(), big_endian);
                }
            }
        }
    }
}

impl Stored {
    /// Samples a pixel decodes to (a raw word aside): 1 for LogL, 3 for
    /// LogLuv.
    fn samples(self) -> usize {
        match self {
            Stored::L16 => 1,
            Stored::Luv32 | Stored::Luv24 => 3,
        }
    }
}

/// Appends a sample's bytes in the order `big_endian` says.
fn push<const N: usize>(out: &mut Vec<u8>, be: [u8; N], le: [u8; N], big_endian: bool) {
    out.extend(if big_endian { be } else { le });
}

/// Decodes one row of `words.len()` words of `planes` run-length coded
/// byte planes from `input` at `*pos`, as libtiff does (a literal run
/// reaching past the row leaves its other bytes to the next plane; a run
/// reaching past it is cut). `Err` holds the pixels of a plane left
/// undecoded when the data ends.
fn rle_row(
    input: &[u8],
    pos: &mut usize,
    words: &mut [u32],
    planes: u32,
) -> std::result::Result<(), usize> {
    words.fill(0);
    let n = words.len();
    for plane in (0..planes).rev() {
        let shift = 8 * plane;
        let mut i = 0;
        while i < n && *pos < input.len() {
            let head = usize::from(input[*pos]);
            if head >= 128 {
                let Some(&byte) = input.get(*pos + 1) else {
                    break;
                };
                *pos += 2;
                let end = n.min(i + head - 126);
                for word in &mut words[i..end] {
                    *word |= u32::from(byte) << shift;
                }
                i = end;
            } else {
                *pos += 1;
                let count = head.min(n - i).min(input.len() - *pos);
                for (word, &byte) in words[i..i + count].iter_mut().zip(&input[*pos..]) {
                    *word |= u32::from(byte) << shift;
                }
                i += count;
                *pos += count;
            }
        }
        if i != n {
            return Err(n - i);
        }
    }
    Ok(())
}

/// Reads one row of `words.len()` 24-bit words, three bytes each, from
/// `input` at `*pos`. `Err` holds the words left unread when the data ends.
fn packed24_row(
    input: &[u8],
    pos: &mut usize,
    words: &mut [u32],
) -> std::result::Result<(), usize> {
    let available = (input.len() - *pos) / 3;
    let n = words.len().min(available);
    for (word, bytes) in words.iter_mut().zip(input[*pos..].chunks_exact(3)) {
        *word = u32::from(bytes[0]) << 16 | u32::from(bytes[1]) << 8 | u32::from(bytes[2]);
    }
    *pos += 3 * n;
    match words.len() - n {
        0 => Ok(()),
        short => Err(short),
    }
}

/// libtiff's scale of the 8-bit u' and v' of 32-bit LogLuv.
const UV_SCALE: f64 = 410.0;
/// (u', v') of the neutral (equal energy) white.
const NEUTRAL: (f64, f64) = (0.210526316, 0.473684211);

/// Luminance of a 16-bit LogL word: 2^((Le + 0.5) / 256 - 64), signed by
/// the top bit; 0 for Le 0. Computed as libtiff does, with `exp`.
fn l16_to_y(p16: i16) -> f64 {
    let le = i32::from(p16) & 0x7fff;
    if le == 0 {
        return 0.0;
    }
    let ln2 = std::f64::consts::LN_2;
    let y = (ln2 / 256.0 * (f64::from(le) + 0.5) - ln2 * 64.0).exp();
    if p16 < 0 {
        -y
    } else {
        y
    }
}

/// Luminance of the 10 bits of a 24-bit LogLuv word: 2^((Le + 0.5) / 64 -
/// 12); 0 for Le 0.
fn l10_to_y(p10: u32) -> f64 {
    if p10 == 0 {
        return 0.0;
    }
    let ln2 = std::f64::consts::LN_2;
    (ln2 / 64.0 * (f64::from(p10) + 0.5) - ln2 * 12.0).exp()
}

/// CIE XYZ of luminance `y` and chromaticity (u', v'), in libtiff's order
/// of operations; black for a luminance of 0 or less.
fn xyz(y: f64, (u, v): (f64, f64)) -> [f32; 3] {
    if y <= 0.0 {
        return [0.0; 3];
    }
    let s = 1.0 / (6.0 * u - 16.0 * v + 12.0);
    let x = 9.0 * u * s;
    let yc = 4.0 * v * s;
    [
        (x / yc * y) as f32,
        y as f32,
        ((1.0 - x - yc) / yc * y) as f32,
    ]
}

/// (u', v') of the 8-bit codes of a 32-bit LogLuv word.
fn uv32(word: u32) -> (f64, f64) {
    let code = |shift: u32| 1.0 / UV_SCALE * (f64::from(word >> shift & 0xff) + 0.5);
    (code(8), code(0))
}

/// CIE XYZ of a 32-bit LogLuv word.
fn luv32_to_xyz(word: u32) -> [f32; 3] {
    xyz(l16_to_y((word >> 16) as u16 as i16), uv32(word))
}

/// CIE XYZ of a 24-bit LogLuv word.
fn luv24_to_xyz(word: u32) -> [f32; 3] {
    let y = l10_to_y(word >> 14 & 0x3ff);
    xyz(y, uv_decode(word & 0x3fff).unwrap_or(NEUTRAL))
}

/// u' or v' scaled by 32768 and truncated, as 16-bit LogLuv holds it.
fn scaled(uv: f64) -> i16 {
    (uv * 32768.0) as i16
}

/// The 16-bit (L, u, v) of a 32-bit LogLuv word: its luminance word and
/// the centres of its (u', v') cells, scaled.
fn luv32_to_luv48(word: u32) -> [i16; 3] {
    let (u, v) = uv32(word);
    [(word >> 16) as u16 as i16, scaled(u), scaled(v)]
}

/// The 16-bit (L, u, v) of a 24-bit LogLuv word. The luminance is libtiff's
/// `(word >> 12 & 0xffd) + 13314`: four times Le plus 13314, plus bit 12 of
/// the chromaticity index, which its mask lets through.
fn luv24_to_luv48(word: u32) -> [i16; 3] {
    let (u, v) = uv_decode(word & 0x3fff).unwrap_or(NEUTRAL);
    [((word >> 12 & 0xffd) + 13314) as i16, scaled(u), scaled(v)]
}

/// Side of a (u', v') cell of 24-bit LogLuv, as libtiff holds it (a float).
const UV_SQSIZ: f32 = 0.0035_f64 as f32;
/// v' of the first row of cells.
const UV_VSTART: f32 = 0.01694_f64 as f32;

/// The rows of the (u', v') grid of 24-bit LogLuv, lowest v' first: the u'
/// of each row's first cell and its number of cells. Greg Ward Larson's
/// table of 1997 (libtiff's `uvcode.h`, whose floats are these decimals
/// rounded from double).
#[rustfmt::skip]
const UV_ROWS: [(f64, u16); 163] = [
    (0.247663, 4), (0.243779, 6), (0.241684, 7), (0.237874, 9), (0.235906, 10), (0.232153, 12),
    (0.228352, 14), (0.226259, 15), (0.222371, 17), (0.220410, 18), (0.214710, 21),
    (0.212714, 22), (0.210721, 23), (0.204976, 26), (0.202986, 27), (0.199245, 29),
    (0.195525, 31), (0.193560, 32), (0.189878, 34), (0.186216, 36), (0.186216, 36),
    (0.182592, 38), (0.179003, 40), (0.175466, 42), (0.172001, 44), (0.172001, 44),
    (0.168612, 46), (0.168612, 46), (0.163575, 49), (0.158642, 52), (0.158642, 52),
    (0.158642, 52), (0.153815, 55), (0.153815, 55), (0.149097, 58), (0.149097, 58),
    (0.142746, 62), (0.142746, 62), (0.142746, 62), (0.138270, 65), (0.138270, 65),
    (0.138270, 65), (0.132166, 69), (0.132166, 69), (0.126204, 73), (0.126204, 73),
    (0.126204, 73), (0.120381, 77), (0.120381, 77), (0.120381, 77), (0.120381, 77),
    (0.112962, 82), (0.112962, 82), (0.112962, 82), (0.107450, 86), (0.107450, 86),
    (0.107450, 86), (0.107450, 86), (0.100343, 91), (0.100343, 91), (0.100343, 91),
    (0.095126, 95), (0.095126, 95), (0.095126, 95), (0.095126, 95), (0.088276, 100),
    (0.088276, 100), (0.088276, 100), (0.088276, 100), (0.081523, 105), (0.081523, 105),
    (0.081523, 105), (0.081523, 105), (0.074861, 110), (0.074861, 110), (0.074861, 110),
    (0.074861, 110), (0.068290, 115), (0.068290, 115), (0.068290, 115), (0.068290, 115),
    (0.063573, 119), (0.063573, 119), (0.063573, 119), (0.063573, 119), (0.057219, 124),
    (0.057219, 124), (0.057219, 124), (0.057219, 124), (0.050985, 129), (0.050985, 129),
    (0.050985, 129), (0.050985, 129), (0.050985, 129), (0.044859, 134), (0.044859, 134),
    (0.044859, 134), (0.044859, 134), (0.040571, 138), (0.040571, 138), (0.040571, 138),
    (0.040571, 138), (0.036339, 142), (0.036339, 142), (0.036339, 142), (0.036339, 142),
    (0.032139, 146), (0.032139, 146), (0.032139, 146), (0.032139, 146), (0.027947, 150),
    (0.027947, 150), (0.027947, 150), (0.023739, 154), (0.023739, 154), (0.023739, 154),
    (0.023739, 154), (0.019504, 158), (0.019504, 158), (0.019504, 158), (0.016976, 161),
    (0.016976, 161), (0.016976, 161), (0.016976, 161), (0.012639, 165), (0.012639, 165),
    (0.012639, 165), (0.009991, 168), (0.009991, 168), (0.009991, 168), (0.009016, 170),
    (0.009016, 170), (0.009016, 170), (0.006217, 173), (0.006217, 173), (0.005097, 175),
    (0.005097, 175), (0.005097, 175), (0.003909, 177), (0.003909, 177), (0.002340, 177),
    (0.002389, 170), (0.001068, 164), (0.001653, 157), (0.000717, 150), (0.001614, 143),
    (0.000270, 136), (0.000484, 129), (0.001103, 123), (0.001242, 115), (0.001188, 109),
    (0.001011, 103), (0.000709, 97), (0.000301, 89), (0.002416, 82), (0.003251, 76),
    (0.003246, 69), (0.004141, 62), (0.005963, 55), (0.008839, 47), (0.010490, 40),
    (0.016994, 31), (0.023659, 21),
];

/// The first index of each row of [`UV_ROWS`], and past the last one the
/// number of cells.
const UV_FIRST: [u16; 164] = {
    let mut first = [0u16; 164];
    let mut row = 0;
    while row < UV_ROWS.len() {
        first[row + 1] = first[row] + UV_ROWS[row].1;
        row += 1;
    }
    first
};

/// The (u', v') at the centre of cell `index` of the grid; `None` past its
/// last cell (libtiff then takes the neutral white).
fn uv_decode(index: u32) -> Option<(f64, f64)> {
    let index = u16::try_from(index).ok()?;
    if index >= UV_FIRST[UV_ROWS.len()] {
        return None;
    }
    // The last row starting at or before the index.
    let row = UV_FIRST[1..=UV_ROWS.len()].partition_point(|&first| first <= index);
    let column = index - UV_FIRST[row];
    let u_start = f64::from(UV_ROWS[row].0 as f32);
    let u = u_start + (f64::from(column) + 0.5) * f64::from(UV_SQSIZ);
    let v = f64::from(UV_VSTART) + (row as f64 + 0.5) * f64::from(UV_SQSIZ);
    Some((u, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_length_rows_decode_as_libtiff_reads_them() {
        // Two planes of four words: a run of 3 then a literal of 1; a
        // literal of 2, a nul literal, then a run of 2.
        let data = [129, 0xAB, 1, 0xCD, 2, 1, 2, 0, 128, 9, 77];
        let mut words = [0; 4];
        let mut pos = 0;
        rle_row(&data, &mut pos, &mut words, 2).unwrap();
        assert_eq!(words, [0xAB01, 0xAB02, 0xAB09, 0xCD09]);
        assert_eq!(pos, 10, "the byte after the row is left");
        // A literal reaching past a plane leaves its other bytes to the
        // next plane; a run reaching past it is cut.
        let data = [3, 1, 2, 3, 255, 7];
        let mut words = [0; 2];
        let mut pos = 0;
        rle_row(&data, &mut pos, &mut words, 2).unwrap();
        // (here its third byte, 3, heads the low plane: a literal of 255, 7).
        assert_eq!((words, pos), ([0x01FF, 0x0207], 6));
        let mut pos = 4;
        rle_row(&data, &mut pos, &mut words, 1).unwrap();
        assert_eq!((words, pos), ([7, 7], 6));
        // Data ending in a plane: the pixels left are counted; a run
        // header without its byte ends it too.
        for (data, short) in [(&[2, 1][..], 1), (&[130][..], 2), (&[1, 5, 200][..], 1)] {
            let mut pos = 0;
            assert_eq!(
                rle_row(data, &mut pos, &mut [0; 2], 1),
                Err(short),
                "{data:?}"
            );
        }
        assert_eq!(rle_row(&[1, 5, 1, 6], &mut 0, &mut [0; 2], 2), Err(2));
    }

    #[test]
    fn packed_rows_take_three_bytes_a_word() {
        let mut words = [0; 2];
        let mut pos = 1;
        packed24_row(&[9, 1, 2, 3, 4, 5, 6, 7], &mut pos, &mut words).unwrap();
        assert_eq!((words, pos), ([0x010203, 0x040506], 7));
        assert_eq!(packed24_row(&[1, 2, 3, 4, 5], &mut 0, &mut words), Err(1));
    }

    #[test]
    fn the_uv_grid_holds_libtiffs_cells() {
        assert_eq!(UV_FIRST[UV_ROWS.len()], 16289);
        let half = 0.5 * f64::from(UV_SQSIZ);
        let (u, v) = uv_decode(0).unwrap();
        assert_eq!(u, f64::from(0.247663_f64 as f32) + half);
        assert_eq!(v, f64::from(UV_VSTART) + half);
        // The first cell of row 1, and the last cell of the grid.
        let (u, v) = uv_decode(4).unwrap();
        assert_eq!(u, f64::from(0.243779_f64 as f32) + half);
        assert_eq!(v, f64::from(UV_VSTART) + 3.0 * half);
        let (u, _) = uv_decode(16288).unwrap();
        assert_eq!(u, f64::from(0.023659_f64 as f32) + 41.0 * half);
        assert_eq!(uv_decode(16289), None);
        assert_eq!(uv_decode(0x3fff), None);
    }

    #[test]
    fn words_convert_as_libtiff_converts_them() {
        // Le 64 * 256: luminance 2^(0.5 / 256), signed by the top bit.
        let y = 2f64.powf(0.5 / 256.0);
        assert!((l16_to_y(64 * 256) - y).abs() < 1e-12);
        assert_eq!(l16_to_y(i16::MIN), 0.0);
        assert!((l16_to_y(-(64 * 256)) + y).abs() < 1e-12);
        assert!((l10_to_y(12 * 64) - 2f64.powf(0.5 / 64.0)).abs() < 1e-12);
        // Negative luminance and Le 0 are black.
        assert_eq!(luv32_to_xyz(0x8000_4060), [0.0; 3]);
        assert_eq!(luv24_to_xyz(5000), [0.0; 3]);
        // The neutral u', v' codes give X = Y = Z (about).
        let [x, y, z] = luv32_to_xyz(0x4000_56C2);
        assert!(
            (x / y - 1.0).abs() < 0.01 && (z / y - 1.0).abs() < 0.01,
            "{x} {y} {z}"
        );
        let luv = luv32_to_luv48(0x4000_56C2);
        assert_eq!(luv, [0x4000, scaled(86.5 / 410.0), scaled(194.5 / 410.0)]);
        // 24-bit: four times Le plus 13314, plus bit 12 of the index;
        // indexes past the grid are neutral.
        let word = 0x200 << 14 | 0x1000;
        assert_eq!(luv24_to_luv48(word)[0], 0x800 + 1 + 13314);
        assert_eq!(
            luv24_to_luv48(0x200 << 14 | 0x3fff)[1..],
            [scaled(NEUTRAL.0), scaled(NEUTRAL.1)]
        );
    }

    #[test]
    fn only_what_libtiff_decodes_is_accepted() {
        let new = |tag, photometric, samples, bits, format| {
            SgiLog::new(tag, Some(photometric), samples, Some(bits), format)
        };
        let pixels = |s: std::result::Result<SgiLog, String>| s.unwrap().pixels;
        assert_eq!(pixels(new(SGILOG, 32845, 3, 16, 2)), Pixels::Int16);
        assert_eq!(pixels(new(SGILOG24, 32845, 3, 32, 3)), Pixels::Float);
        assert_eq!(pixels(new(SGILOG24, 32845, 1, 32, 1)), Pixels::Raw);
        assert_eq!(pixels(new(SGILOG, 32844, 1, 16, 1)), Pixels::Int16);
        assert_eq!(pixels(new(SGILOG, 32844, 1, 32, 3)), Pixels::Float);
        for (tag, photometric, samples, bits, format) in [
            (SGILOG24, 32844, 1, 16, 2),
            (SGILOG, 1, 3, 16, 2),
            (SGILOG, 32845, 3, 8, 1),
            (SGILOG, 32845, 1, 32, 3),
            (SGILOG, 32844, 1, 32, 1),
            (SGILOG, 32845, 4, 16, 2),
            (SGILOG, 32845, 3, 32, 2),
        ] {
            let made = new(tag, photometric, samples, bits, format);
            assert!(
                made.is_err(),
                "{tag} {photometric} {samples} {bits} {format}"
            );
        }
        assert!(SgiLog::new(SGILOG, None, 3, Some(16), 2).is_err());
    }

    #[test]
    fn strips_decode_row_by_row_in_either_byte_order() {
        // Two rows of one LogL word each: 0x4001 then 0x8002.
        let decoder = SgiLog::new(SGILOG, Some(32844), 1, Some(16), 2).unwrap();
        let data = [1, 0x40, 1, 0x01, 1, 0x80, 1, 0x02, 99];
        let mut out = Vec::new();
        decoder.decode(&data, 1, 2, true, &mut out).unwrap();
        assert_eq!(out, [0x40, 0x01, 0x80, 0x02]);
        out.clear();
        decoder.decode(&data, 1, 2, false, &mut out).unwrap();
        assert_eq!(out, [0x01, 0x40, 0x02, 0x80]);
        out.clear();
        assert_eq!(
            decoder.decode(&data[..6], 1, 2, false, &mut out),
            Err(Short { row: 1, pixels: 1 })
        );
        assert_eq!(decoder.decoded_len(usize::MAX, 2), None);
    }
}
