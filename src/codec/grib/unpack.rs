//! Data representation templates (section 5) and the values they pack
//! (section 7): 5.0 simple packing, 5.2 / 5.3 complex packing (with
//! spatial differencing), 5.4 IEEE floating point, 5.40 JPEG 2000, 5.41
//! PNG.
//!
//! Values are computed as GDAL's GRIB driver (g2clib) computes them, in
//! single precision: `(X * 2^E + R) * 10^-D` (PNG: `R * 10^-D + (2^E *
//! 10^-D) * X`), `10^-D` by repeated squaring in double precision, then
//! rounded to single.

use std::io::Cursor;

use crate::formats::grib2::sections::{be_signed, be_u64, field, template};
use crate::formats::j2k::codestream::MainHeader;

/// Reads unsigned integers of up to 32 bits, most significant bit first,
/// past whose end every read fails.
pub(super) struct Bits<'a> {
    bytes: &'a [u8],
    at: u64,
}

impl<'a> Bits<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Bits<'a> {
        Bits { bytes, at: 0 }
    }

    pub(super) fn read(&mut self, width: u32) -> Result<u64, String> {
        let end = self.at + u64::from(width);
        if width > 32 || end > self.bytes.len() as u64 * 8 {
            return Err("section 7 ends before the values it should hold".into());
        }
        // The five bytes from the one holding the first bit hold them all.
        let first = (self.at / 8) as usize;
        let window = (0..5).fold(0u64, |w, i| {
            w << 8 | u64::from(self.bytes.get(first + i).copied().unwrap_or(0))
        });
        let shift = 40 - (self.at % 8) - u64::from(width);
        self.at = end;
        Ok(window >> shift & ((1u64 << width) - 1))
    }

    /// `n` values of `width` bits, then on to the next byte.
    fn read_aligned(&mut self, n: usize, width: u32) -> Result<Vec<u64>, String> {
        if self.at + n as u64 * u64::from(width) > self.bytes.len() as u64 * 8 {
            return Err("section 7 ends before the group descriptors it should hold".into());
        }
        let values = (0..n).map(|_| self.read(width)).collect();
        self.at = self.at.div_ceil(8) * 8;
        values
    }
}

/// Simple packing parameters, common to templates 5.0, 5.2, 5.3, 5.40, 5.41.
#[derive(Debug, Clone, Copy)]
struct Scaling {
    reference: f32,
    binary: f32,
    decimal: f32,
    bits: u8,
}

impl Scaling {
    fn parse(s5: &[u8]) -> Result<Scaling, String> {
        let b = field(s5, 5, 11, 10)?;
        let bits = b[8];
        if bits > 32 {
            return Err(format!("{bits} bits per value (at most 32 are read)"));
        }
        Ok(Scaling {
            reference: f32::from_bits(be_u64(&b[..4]) as u32),
            binary: 2f64.powi(be_signed(&b[4..6]) as i32) as f32,
            decimal: inverse_power_of_ten(be_signed(&b[6..8])) as f32,
            bits,
        })
    }

    fn value(&self, x: i64) -> f32 {
        (x as f32 * self.binary + self.reference) * self.decimal
    }

    /// PNG packing's values: g2clib's `pngunpack` scales the reference and
    /// the step first, `R * 10^-D + (2^E * 10^-D) * X`.
    fn png_value(&self, x: i64) -> f32 {
        self.reference * self.decimal + self.binary * self.decimal * x as f32
    }

    /// The field of a template that packs no bits: every value the reference.
    fn constant(&self, n: usize) -> Vec<f32> {
        vec![self.reference * self.decimal; n]
    }
}

/// `10^-d` by g2clib's `int_power`: repeated squaring of `0.1` (or `10`).
fn inverse_power_of_ten(d: i64) -> f64 {
    let (mut x, mut n) = if d >= 0 { (0.1f64, d) } else { (10.0, -d) };
    let mut value = 1.0;
    while n > 0 {
        if n & 1 == 1 {
            value *= x;
        }
        n >>= 1;
        if n > 0 {
            x *= x;
        }
    }
    value
}

/// The `n` values a message packs, in stored order (missing points of a
/// bitmap left out; complex packing's missing values as its template
/// declares them).
pub(super) fn unpack(s5: &[u8], s7: &[u8], n: usize) -> Result<Vec<f32>, String> {
    let data = &s7[5..];
    match template(s5, 5)? {
        0 => simple(s5, data, n),
        2 => complex(s5, data, n, false),
        3 => complex(s5, data, n, true),
        4 => ieee(s5, data, n),
        40 => jpeg2000(s5, data, n),
        41 => png(s5, data, n),
        other => Err(format!(
            "data representation template 5.{other} is not supported (5.0, 5.2, 5.3, 5.4, 5.40 and 5.41 are)"
        )),
    }
}

/// The missing values of complex packing, as the template records them.
fn missing_values(s5: &[u8]) -> Result<(f32, f32), String> {
    let b = field(s5, 5, 20, 11)?;
    let value = |v: &[u8]| match b[0] {
        0 => f32::from_bits(be_u64(v) as u32),
        _ => be_u64(v) as f32,
    };
    Ok((value(&b[3..7]), value(&b[7..11])))
}

/// The missing values complex packing declares (template 5.2 or 5.3,
/// missing value management of code table 5.5): the primary for
/// management 1, primary and secondary for 2, none otherwise.
pub(crate) fn declared_missing_values(s5: &[u8]) -> Vec<f32> {
    let management = match (template(s5, 5), s5.get(22)) {
        (Ok(2 | 3), Some(&m)) => m,
        _ => return Vec::new(),
    };
    match (missing_values(s5), management) {
        (Ok((primary, _)), 1) => vec![primary],
        (Ok((primary, secondary)), 2) => vec![primary, secondary],
        _ => Vec::new(),
    }
}

/// The primary missing value of complex packing with missing value
/// management, which GDAL reports as the band's nodata.
pub(crate) fn declared_missing(s5: &[u8]) -> Option<f32> {
    declared_missing_values(s5).first().copied()
}

/// Template 5.0: `n` values of `bits` bits.
fn simple(s5: &[u8], data: &[u8], n: usize) -> Result<Vec<f32>, String> {
    let scaling = Scaling::parse(s5)?;
    if scaling.bits == 0 {
        return Ok(scaling.constant(n));
    }
    let mut bits = Bits::new(data);
    (0..n)
        .map(|_| Ok(scaling.value(bits.read(u32::from(scaling.bits))? as i64)))
        .collect()
}

/// Template 5.4: `n` IEEE values of 32 or 64 bits (the latter rounded to 32).
fn ieee(s5: &[u8], data: &[u8], n: usize) -> Result<Vec<f32>, String> {
    let size = match field(s5, 5, 11, 1)?[0] {
        1 => 4,
        2 => 8,
        other => {
            return Err(format!(
                "IEEE precision {other} (code table 5.7) is not supported"
            ))
        }
    };
    let bytes = data
        .get(..n * size)
        .ok_or("section 7 ends before the values it should hold")?;
    Ok(bytes
        .chunks_exact(size)
        .map(|v| match size {
            4 => f32::from_bits(be_u64(v) as u32),
            _ => f64::from_bits(be_u64(v)) as f32,
        })
        .collect())
}

/// The groups of complex packing: reference, width and length of each.
struct Groups {
    refs: Vec<u64>,
    widths: Vec<u64>,
    lengths: Vec<u64>,
}

/// Templates 5.2 and 5.3 (`spatial`): groups of values, each a reference
/// plus values of its own width; 5.3 then undoes first- or second-order
/// differences.
fn complex(s5: &[u8], data: &[u8], n: usize, spatial: bool) -> Result<Vec<f32>, String> {
    let scaling = Scaling::parse(s5)?;
    let t = field(s5, 5, 21, if spatial { 28 } else { 26 })?;
    let management = t[1];
    if management > 2 {
        return Err(format!(
            "missing value management {management} (code table 5.5) is not supported"
        ));
    }
    let (primary, secondary) = missing_values(s5)?;
    let groups = be_u64(&t[10..14]) as usize;
    let mut bits = Bits::new(data);
    let mut first = Vec::new();
    let mut min_difference = 0i64;
    if spatial {
        let order = t[26];
        let width = u32::from(t[27]) * 8;
        if !(1..=2).contains(&order) || !(8..=32).contains(&width) {
            return Err(format!(
                "spatial differencing of order {order} with {} octets per descriptor is not supported",
                t[27]
            ));
        }
        for _ in 0..order {
            first.push(bits.read(width)? as i64);
        }
        let negative = bits.read(1)? == 1;
        let magnitude = bits.read(width - 1)? as i64;
        min_difference = if negative { -magnitude } else { magnitude };
    }
    if groups == 0 || groups > n.max(1) {
        return Err(format!("{groups} groups for {n} values"));
    }
    if t[15] > 32 || t[25] > 32 {
        return Err(format!(
            "group widths of {} bits and lengths of {} bits (at most 32 are read)",
            t[15], t[25]
        ));
    }
    let g = Groups {
        refs: bits.read_aligned(groups, u32::from(scaling.bits))?,
        widths: bits.read_aligned(groups, u32::from(t[15]))?,
        lengths: bits.read_aligned(groups, u32::from(t[25]))?,
    };
    let width_ref = u64::from(t[14]);
    let (length_ref, increment, last) = (be_u64(&t[16..20]), u64::from(t[20]), be_u64(&t[21..25]));
    let lengths: Vec<u64> = g
        .lengths
        .iter()
        .enumerate()
        .map(|(i, &l)| {
            if i + 1 == groups {
                last
            } else {
                length_ref + l * increment
            }
        })
        .collect();
    let total = lengths.iter().fold(0u64, |sum, &l| sum.saturating_add(l));
    if total != n as u64 {
        return Err(format!(
            "the group lengths add up to {total} values, not {n}"
        ));
    }
    // Per value: Some(integer) or the missing value it stands for.
    let mut ints: Vec<Result<i64, f32>> = Vec::with_capacity(n);
    let group_missing = (1u64 << scaling.bits) - 1;
    for ((&reference, &width), &length) in g.refs.iter().zip(&g.widths).zip(&lengths) {
        let width = width + width_ref;
        if width > 32 {
            return Err(format!(
                "a group of values {width} bits wide (at most 32 are read)"
            ));
        }
        let value_missing = (1u64 << width) - 1;
        for _ in 0..length {
            let v = if width == 0 {
                0
            } else {
                bits.read(width as u32)?
            };
            let (marker, missing1) = if width == 0 {
                (reference, group_missing)
            } else {
                (v, value_missing)
            };
            ints.push(match management {
                1 | 2 if marker == missing1 => Err(primary),
                2 if marker == missing1.wrapping_sub(1) => Err(secondary),
                _ => Ok((reference + v) as i64),
            });
        }
    }
    if spatial {
        undo_differences(&mut ints, &first, min_difference);
    }
    Ok(ints
        .into_iter()
        .map(|v| v.map_or_else(|missing| missing, |x| scaling.value(x)))
        .collect())
}

/// Rebuilds the values of spatial differencing of order `first.len()`
/// (1 or 2) over the values that are not missing, as g2clib does.
fn undo_differences(ints: &mut [Result<i64, f32>], first: &[i64], min_difference: i64) {
    let mut present: Vec<&mut i64> = ints.iter_mut().filter_map(|v| v.as_mut().ok()).collect();
    for (slot, &value) in present.iter_mut().zip(first) {
        **slot = value;
    }
    for k in first.len()..present.len() {
        let d = present[k].wrapping_add(min_difference);
        *present[k] = if first.len() == 1 {
            d.wrapping_add(*present[k - 1])
        } else {
            d.wrapping_add(present[k - 1].wrapping_mul(2))
                .wrapping_sub(*present[k - 2])
        };
    }
}

/// Template 5.40: the integers as one JPEG 2000 codestream, one tile.
fn jpeg2000(s5: &[u8], data: &[u8], n: usize) -> Result<Vec<f32>, String> {
    let scaling = Scaling::parse(s5)?;
    if scaling.bits == 0 {
        return Ok(scaling.constant(n));
    }
    let header = MainHeader::parse(data).map_err(|e| format!("JPEG 2000 codestream: {e:?}"))?;
    let siz = &header.siz;
    let (w, h) = (
        u64::from(siz.width - siz.x_offset),
        u64::from(siz.height - siz.y_offset),
    );
    if w * h != n as u64 || siz.components.len() != 1 || siz.tile_grid() != (1, 1) {
        return Err(format!(
            "the JPEG 2000 codestream is {w} x {h} pixels of {} components in {:?} tiles, not one tile of {n} values",
            siz.components.len(),
            siz.tile_grid()
        ));
    }
    let planes = crate::codec::jpeg2000::openjpeg::decode_tile(data, 0, 0)?;
    let plane = planes
        .first()
        .filter(|p| p.data.len() == n)
        .ok_or("OpenJPEG decoded a tile of another size")?;
    Ok(plane
        .data
        .iter()
        .map(|&x| scaling.value(i64::from(x)))
        .collect())
}

/// Template 5.41: the integers as the samples of one PNG image, of 1 to
/// 32 bits per pixel.
fn png(s5: &[u8], data: &[u8], n: usize) -> Result<Vec<f32>, String> {
    let scaling = Scaling::parse(s5)?;
    if scaling.bits == 0 {
        return Ok(scaling.constant(n));
    }
    let limits = png::Limits {
        bytes: n.saturating_mul(4).saturating_add(1 << 16),
    };
    let mut decoder = png::Decoder::new_with_limits(Cursor::new(data), limits);
    decoder.set_transformations(png::Transformations::IDENTITY);
    let mut reader = decoder.read_info().map_err(|e| format!("PNG: {e}"))?;
    let info = reader.info();
    let (w, h) = (info.width as usize, info.height as usize);
    let pixel_bits = info.bits_per_pixel() as u32;
    if w * h != n || pixel_bits > 32 {
        return Err(format!(
            "the PNG image is {w} x {h} pixels of {pixel_bits} bits, not {n} values of at most 32 bits"
        ));
    }
    let size = reader.output_buffer_size().ok_or("PNG: image too large")?;
    let mut buf = vec![0; size];
    let frame = reader
        .next_frame(&mut buf)
        .map_err(|e| format!("PNG: {e}"))?;
    let mut out = Vec::with_capacity(n);
    for row in buf.chunks(frame.line_size).take(h) {
        let mut bits = Bits::new(row);
        for _ in 0..w {
            out.push(scaling.png_value(bits.read(pixel_bits)? as i64));
        }
    }
    Ok(out)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Section 5 of template `number` with reference `r`, scale factors
    /// `e` and `d`, `bits` per value, and `extra` template bytes.
    pub(in crate::codec) fn section5(
        number: u16,
        n: u32,
        r: f32,
        e: i16,
        d: i16,
        bits: u8,
        extra: &[u8],
    ) -> Vec<u8> {
        let signed = |v: i16| {
            let m = v.unsigned_abs();
            (if v < 0 { m | 0x8000 } else { m }).to_be_bytes()
        };
        let mut s = vec![0, 0, 0, 0, 5];
        s.extend_from_slice(&n.to_be_bytes());
        s.extend_from_slice(&number.to_be_bytes());
        s.extend_from_slice(&r.to_bits().to_be_bytes());
        s.extend_from_slice(&signed(e));
        s.extend_from_slice(&signed(d));
        s.push(bits);
        s.push(0);
        s.extend_from_slice(extra);
        let len = s.len() as u32;
        s[..4].copy_from_slice(&len.to_be_bytes());
        s
    }

    fn section7(data: &[u8]) -> Vec<u8> {
        let mut s = ((data.len() + 5) as u32).to_be_bytes().to_vec();
        s.push(7);
        s.extend_from_slice(data);
        s
    }

    #[test]
    fn simple_packing_scales_as_g2clib() {
        let s5 = section5(0, 4, 1.5, -1, 1, 4, &[]);
        let out = unpack(&s5, &section7(&[0x01, 0xf3]), 4).unwrap();
        // 4-bit values 0, 1, 15, 3: (X * 2^-1 + 1.5) * 10^-1 in single precision.
        let tenth = 0.1f64 as f32;
        assert_eq!(
            out,
            [0.0f32, 1.0, 15.0, 3.0].map(|x| (x * 0.5 + 1.5) * tenth)
        );
        assert!(unpack(&s5, &section7(&[0x01]), 4)
            .unwrap_err()
            .contains("ends before"));
        let constant = section5(0, 3, 2.0, 0, 0, 0, &[]);
        assert_eq!(unpack(&constant, &section7(&[]), 3).unwrap(), [2.0; 3]);
        assert_eq!(inverse_power_of_ten(2), 0.1 * 0.1);
        assert_eq!(inverse_power_of_ten(-3), 1000.0);
    }

    #[test]
    fn ieee_values() {
        let s5 = section5(4, 2, 0.0, 0, 0, 0, &[]);
        let mut s5 = s5[..11].to_vec();
        s5.push(1);
        let data: Vec<u8> = [1.25f32, -3.0]
            .iter()
            .flat_map(|v| v.to_bits().to_be_bytes())
            .collect();
        assert_eq!(unpack(&s5, &section7(&data), 2).unwrap(), [1.25, -3.0]);
        assert!(unpack(&s5, &section7(&data[..7]), 2).is_err());
        s5[11] = 3;
        assert!(unpack(&s5, &section7(&data), 2)
            .unwrap_err()
            .contains("precision 3"));
    }

    /// Template 5.2/5.3 bytes after the simple packing part.
    pub(in crate::codec) fn complex_extra(
        management: u8,
        primary: f32,
        groups: u32,
        lengths: (u32, u32),
        spatial: Option<(u8, u8)>,
    ) -> Vec<u8> {
        let mut t = vec![1, management];
        t.extend_from_slice(&primary.to_bits().to_be_bytes());
        t.extend_from_slice(&[0xff; 4]);
        t.extend_from_slice(&groups.to_be_bytes());
        t.push(0); // width reference
        t.push(8); // bits per width
        t.extend_from_slice(&lengths.0.to_be_bytes()); // length reference
        t.push(1); // length increment
        t.extend_from_slice(&lengths.1.to_be_bytes()); // last length
        t.push(8); // bits per length
        if let Some((order, octets)) = spatial {
            t.extend_from_slice(&[order, octets]);
        }
        t
    }

    #[test]
    fn complex_packing_with_missing_values() {
        // Group 1: reference 5, width 2, 3 values (1, 3 = missing, 0);
        // group 2: reference 255 (missing), width 0, 2 values.
        let s5 = section5(
            2,
            5,
            0.0,
            0,
            0,
            8,
            &complex_extra(1, -999.0, 2, (3, 2), None),
        );
        let data = [5, 255, 2, 0, 0, 0, 0b0111_0000];
        let out = unpack(&s5, &section7(&data), 5).unwrap();
        assert_eq!(out, [6.0, -999.0, 5.0, -999.0, -999.0]);
        assert_eq!(declared_missing(&s5), Some(-999.0));
        assert!(unpack(&s5, &section7(&data), 6)
            .unwrap_err()
            .contains("add up to 5"));
        assert!(unpack(&s5, &section7(&data[..6]), 5).is_err());
    }

    #[test]
    fn spatial_differencing_is_undone() {
        // Second order, first values 10 and 12, minimum difference -1; one
        // group of 5 values (placeholders 0, 0, then 1, 2, 1), reference 0, width 2.
        let s5 = section5(
            3,
            5,
            0.0,
            0,
            0,
            8,
            &complex_extra(0, 0.0, 1, (0, 5), Some((2, 1))),
        );
        let data = [10, 12, 0x81, 0, 2, 0, 0b0000_0110, 0b0100_0000];
        let out = unpack(&s5, &section7(&data), 5).unwrap();
        // 10, 12, 12*2-10+1-1 = 14, 14*2-12+2-1 = 17, 17*2-14+1-1 = 20
        assert_eq!(out, [10.0, 12.0, 14.0, 17.0, 20.0]);
        assert_eq!(declared_missing(&s5), None);
    }

    #[test]
    fn unknown_templates_are_named() {
        let s5 = section5(42, 1, 0.0, 0, 0, 8, &[]);
        assert!(unpack(&s5, &section7(&[0]), 1)
            .unwrap_err()
            .contains("5.42"));
    }
}
