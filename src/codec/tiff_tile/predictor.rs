//! Undoing the TIFF `Predictor` (tag 317) the way libtiff does.
//!
//! Both predictors work row by row, with a distance of one pixel (the samples
//! per pixel of the tile):
//! - 2, horizontal differencing: every sample is stored as the wrapping
//!   difference to the same sample of the previous pixel, as an integer of
//!   the sample's size in the file's byte order.
//! - 3, floating point (libtiff's `fpAcc`): the bytes of a row are split
//!   into byte planes, most significant byte first whatever the file's byte
//!   order, and then differenced byte by byte.

use super::layout::Layout;

/// A TIFF `Predictor` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Predictor {
    /// 1: no prediction.
    None,
    /// 2: horizontal differencing of integers.
    Horizontal,
    /// 3: horizontal differencing of byte planes.
    FloatingPoint,
}

impl Predictor {
    /// The predictor for tag value `tag` (checked to be 1, 2 or 3).
    pub(super) fn from_tag(tag: u64) -> Predictor {
        match tag {
            2 => Predictor::Horizontal,
            3 => Predictor::FloatingPoint,
            _ => Predictor::None,
        }
    }

    /// Undoes the prediction in place on a full, pixel-interleaved tile.
    pub(super) fn undo(
        self,
        data: &mut [u8],
        layout: &Layout,
        big_endian: bool,
    ) -> Result<(), String> {
        let row_bytes = layout.row_bytes();
        if row_bytes == 0 {
            return Ok(());
        }
        let stride = layout.samples;
        let size = layout.sample_size;
        match self {
            Predictor::None => {}
            Predictor::Horizontal => {
                if !matches!(size, 1 | 2 | 4 | 8) {
                    return Err(format!(
                        "predictor 2 needs 8, 16, 32 or 64-bit samples, not {} bits",
                        8 * size
                    ));
                }
                for row in data.chunks_exact_mut(row_bytes) {
                    horizontal_row(row, stride, size, big_endian);
                }
            }
            Predictor::FloatingPoint => {
                let mut planes = vec![0; row_bytes];
                for row in data.chunks_exact_mut(row_bytes) {
                    floating_point_row(row, &mut planes, stride, size, big_endian);
                }
            }
        }
        Ok(())
    }
}

/// Wrapping running sums of the bytes of `row` at distance `stride`
/// (`row[i] += row[i - stride]`, in order). The common distances keep the
/// sums in registers instead of reloading what was just stored.
fn accumulate_bytes(row: &mut [u8], stride: usize) {
    fn sums<const N: usize>(row: &mut [u8]) {
        let mut acc = [0u8; N];
        let mut pixels = row.chunks_exact_mut(N);
        for px in &mut pixels {
            for (a, b) in acc.iter_mut().zip(px.iter_mut()) {
                *a = a.wrapping_add(*b);
                *b = *a;
            }
        }
        for (a, b) in acc.iter_mut().zip(pixels.into_remainder()) {
            *b = a.wrapping_add(*b);
        }
    }
    match stride {
        1 => sums::<1>(row),
        2 => sums::<2>(row),
        3 => sums::<3>(row),
        4 => sums::<4>(row),
        _ => {
            for i in stride..row.len() {
                row[i] = row[i].wrapping_add(row[i - stride]);
            }
        }
    }
}

/// An unsigned integer sample of a predicted row.
trait Word: Copy + Default {
    /// Bytes per sample.
    const SIZE: usize;
    /// The sample in `bytes` (exactly [`Word::SIZE`] of them).
    fn load<const BIG: bool>(bytes: &[u8]) -> Self;
    /// Writes the sample to `bytes` (exactly [`Word::SIZE`] of them).
    fn store<const BIG: bool>(self, bytes: &mut [u8]);
    /// Wrapping sum.
    fn plus(self, other: Self) -> Self;
}

macro_rules! word {
    ($t:ty) => {
        impl Word for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn load<const BIG: bool>(bytes: &[u8]) -> Self {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b.copy_from_slice(bytes);
                if BIG {
                    <$t>::from_be_bytes(b)
                } else {
                    <$t>::from_le_bytes(b)
                }
            }
            fn store<const BIG: bool>(self, bytes: &mut [u8]) {
                bytes.copy_from_slice(&if BIG {
                    self.to_be_bytes()
                } else {
                    self.to_le_bytes()
                });
            }
            fn plus(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
        }
    };
}
word!(u16);
word!(u32);
word!(u64);

/// Wrapping running sums of the `W` samples of `row` at distance `N`
/// samples, the sums kept in registers (`N` a common samples per pixel).
fn word_sums<W: Word, const N: usize, const BIG: bool>(row: &mut [u8]) {
    let mut acc = [W::default(); N];
    let mut pixels = row.chunks_exact_mut(N * W::SIZE);
    for px in &mut pixels {
        for (a, sample) in acc.iter_mut().zip(px.chunks_exact_mut(W::SIZE)) {
            *a = a.plus(W::load::<BIG>(sample));
            a.store::<BIG>(sample);
        }
    }
    let rest = pixels.into_remainder();
    for (a, sample) in acc.iter_mut().zip(rest.chunks_exact_mut(W::SIZE)) {
        a.plus(W::load::<BIG>(sample)).store::<BIG>(sample);
    }
}

/// Wrapping running sums of the `W` samples of `row` at distance `stride`
/// samples, in byte order `BIG`.
fn accumulate_words<W: Word, const BIG: bool>(row: &mut [u8], stride: usize) {
    match stride {
        1 => word_sums::<W, 1, BIG>(row),
        2 => word_sums::<W, 2, BIG>(row),
        3 => word_sums::<W, 3, BIG>(row),
        4 => word_sums::<W, 4, BIG>(row),
        _ => {
            let distance = stride * W::SIZE;
            for at in (distance..row.len().saturating_sub(W::SIZE - 1)).step_by(W::SIZE) {
                let previous = W::load::<BIG>(&row[at - distance..at - distance + W::SIZE]);
                let current = W::load::<BIG>(&row[at..at + W::SIZE]);
                current
                    .plus(previous)
                    .store::<BIG>(&mut row[at..at + W::SIZE]);
            }
        }
    }
}

/// Undoes horizontal differencing on one row of `size`-byte samples
/// (1, 2, 4 or 8; other sizes are left as they are).
pub(in crate::codec) fn horizontal_row(
    row: &mut [u8],
    stride: usize,
    size: usize,
    big_endian: bool,
) {
    match (size, big_endian) {
        (1, _) => accumulate_bytes(row, stride),
        (2, false) => accumulate_words::<u16, false>(row, stride),
        (2, true) => accumulate_words::<u16, true>(row, stride),
        (4, false) => accumulate_words::<u32, false>(row, stride),
        (4, true) => accumulate_words::<u32, true>(row, stride),
        (8, false) => accumulate_words::<u64, false>(row, stride),
        (8, true) => accumulate_words::<u64, true>(row, stride),
        _ => {}
    }
}

/// Undoes the floating point predictor on one row: cumulative byte sums,
/// then byte planes (most significant first) back into `size`-byte samples
/// in the requested byte order. `planes` is scratch space of the row's size.
pub(in crate::codec) fn floating_point_row(
    row: &mut [u8],
    planes: &mut [u8],
    stride: usize,
    size: usize,
    big_endian: bool,
) {
    accumulate_bytes(row, stride);
    planes.copy_from_slice(row);
    let count = row.len() / size;
    for (plane, bytes) in planes.chunks_exact(count).enumerate() {
        let at = if big_endian { plane } else { size - 1 - plane };
        for (sample, &byte) in bytes.iter().enumerate() {
            row[sample * size + at] = byte;
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    //! Round trips against forward predictors written after libtiff's
    //! `horDiff*` and `fpDiff`.

    use super::*;

    /// Reads a `bytes.len()`-byte unsigned integer.
    fn load(bytes: &[u8], big_endian: bool) -> u64 {
        let fold = |acc: u64, &byte: &u8| acc << 8 | u64::from(byte);
        if big_endian {
            bytes.iter().fold(0, fold)
        } else {
            bytes.iter().rev().fold(0, fold)
        }
    }

    /// Writes the low `bytes.len()` bytes of `value`.
    fn store(mut value: u64, bytes: &mut [u8], big_endian: bool) {
        let mut put = |byte: &mut u8| {
            *byte = value as u8;
            value >>= 8;
        };
        if big_endian {
            bytes.iter_mut().rev().for_each(&mut put);
        } else {
            bytes.iter_mut().for_each(&mut put);
        }
    }

    /// Applies horizontal differencing (the encoder side) to a tile.
    pub(in super::super) fn difference(data: &mut [u8], layout: &Layout, big_endian: bool) {
        let size = layout.sample_size;
        let distance = layout.samples * size;
        for row in data.chunks_exact_mut(layout.row_bytes()) {
            for at in (distance..row.len()).step_by(size).rev() {
                let previous = load(&row[at - distance..at - distance + size], big_endian);
                let current = load(&row[at..at + size], big_endian);
                store(
                    current.wrapping_sub(previous),
                    &mut row[at..at + size],
                    big_endian,
                );
            }
        }
    }

    /// Applies the floating point predictor (the encoder side) to a tile.
    pub(in super::super) fn difference_fp(data: &mut [u8], layout: &Layout, big_endian: bool) {
        let size = layout.sample_size;
        let stride = layout.samples;
        for row in data.chunks_exact_mut(layout.row_bytes()) {
            let count = row.len() / size;
            let original = row.to_vec();
            for sample in 0..count {
                for plane in 0..size {
                    let at = if big_endian { plane } else { size - 1 - plane };
                    row[plane * count + sample] = original[sample * size + at];
                }
            }
            for i in (stride..row.len()).rev() {
                row[i] = row[i].wrapping_sub(row[i - stride]);
            }
        }
    }

    fn layout(width: usize, height: usize, samples: usize, sample_size: usize) -> Layout {
        Layout {
            width,
            height,
            samples,
            sample_size,
            bits: 8 * sample_size,
        }
    }

    /// Pseudo-random bytes, so differences wrap in every byte.
    fn noise(len: usize) -> Vec<u8> {
        let mut state = 0x2545_f491_u32;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                state as u8
            })
            .collect()
    }

    #[test]
    fn horizontal_round_trips_every_size_and_order() {
        for size in [1, 2, 4, 8] {
            for samples in [1, 2, 3, 4, 5] {
                for big_endian in [false, true] {
                    let layout = layout(5, 3, samples, size);
                    let original = noise(layout.chunk_len().unwrap());
                    let mut data = original.clone();
                    difference(&mut data, &layout, big_endian);
                    assert_ne!(data, original);
                    Predictor::Horizontal
                        .undo(&mut data, &layout, big_endian)
                        .unwrap();
                    assert_eq!(
                        data, original,
                        "size {size} samples {samples} be {big_endian}"
                    );
                }
            }
        }
    }

    #[test]
    fn horizontal_matches_hand_computed_values() {
        // Little-endian u16 row [1000, +5, -10] -> [1000, 1005, 995];
        // big-endian [0xFFFF, +2] wraps to [0xFFFF, 1].
        let mut le = [0xe8, 0x03, 0x05, 0x00, 0xf6, 0xff];
        Predictor::Horizontal
            .undo(&mut le, &layout(3, 1, 1, 2), false)
            .unwrap();
        assert_eq!(le, [0xe8, 0x03, 0xed, 0x03, 0xe3, 0x03]);
        let mut be = [0xff, 0xff, 0x00, 0x02];
        Predictor::Horizontal
            .undo(&mut be, &layout(2, 1, 1, 2), true)
            .unwrap();
        assert_eq!(be, [0xff, 0xff, 0x00, 0x01]);
    }

    #[test]
    fn floating_point_round_trips_floats() {
        let values32: Vec<f32> = (0..36).map(|i| (i as f32 - 7.5) * 1.37e3).collect();
        let values64: Vec<f64> = (0..36).map(|i| (i as f64 - 7.5) * -3.1e-7).collect();
        for big_endian in [false, true] {
            let cases: [(Vec<u8>, usize); 2] = [
                (
                    values32
                        .iter()
                        .flat_map(|v| {
                            if big_endian {
                                v.to_be_bytes()
                            } else {
                                v.to_le_bytes()
                            }
                        })
                        .collect(),
                    4,
                ),
                (
                    values64
                        .iter()
                        .flat_map(|v| {
                            if big_endian {
                                v.to_be_bytes()
                            } else {
                                v.to_le_bytes()
                            }
                        })
                        .collect(),
                    8,
                ),
            ];
            for (original, size) in cases {
                for samples in [1, 2] {
                    let layout = layout(18 / samples, 2, samples, size);
                    let mut data = original.clone();
                    difference_fp(&mut data, &layout, big_endian);
                    Predictor::FloatingPoint
                        .undo(&mut data, &layout, big_endian)
                        .unwrap();
                    assert_eq!(
                        data, original,
                        "size {size} samples {samples} be {big_endian}"
                    );
                }
            }
        }
    }

    #[test]
    fn floating_point_reads_msb_first_planes() {
        // Two little-endian f32 samples 1.0 (3f800000) and 2.0 (40000000):
        // planes [3f 40] [80 00] [00 00] [00 00], differenced byte-wise.
        let mut row = [0x3f, 0x01, 0x40, 0x80, 0, 0, 0, 0];
        Predictor::FloatingPoint
            .undo(&mut row, &layout(2, 1, 1, 4), false)
            .unwrap();
        let expected: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(row.to_vec(), expected);
    }

    #[test]
    fn floating_point_reads_half_floats() {
        // Little-endian f16 samples 1.0 (3c00) and -2.5 (c100): planes
        // [3c c1] [00 00], differenced byte-wise along the row: [3c 85 3f 00].
        let mut row = [0x3c, 0x85, 0x3f, 0x00];
        Predictor::FloatingPoint
            .undo(&mut row, &layout(2, 1, 1, 2), false)
            .unwrap();
        assert_eq!(row, [0x00, 0x3c, 0x00, 0xc1]);
        let mut row = [0x3c, 0x85, 0x3f, 0x00];
        Predictor::FloatingPoint
            .undo(&mut row, &layout(2, 1, 1, 2), true)
            .unwrap();
        assert_eq!(row, [0x3c, 0x00, 0xc1, 0x00]);
    }

    #[test]
    fn horizontal_rejects_complex_samples() {
        let mut data = vec![0; 32];
        let err = Predictor::Horizontal
            .undo(&mut data, &layout(2, 1, 1, 16), false)
            .unwrap_err();
        assert!(err.contains("128 bits"), "{err}");
    }
}
