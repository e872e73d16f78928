//! GRIB edition 1 messages, as the codec decodes them: grid point data in
//! simple packing, with or without a bitmap, unpacked in double precision
//! as degrib unpacks them (`ReadGrib1Sect4`): value = (R + X * 2^E) /
//! 10^D, R the IBM float reference value, then GDAL's unit conversion.
//! Spherical harmonics and complex (second-order) packing are refused.

use super::unpack::Bits;
use crate::formats::grib1::grid::Grid;
use crate::formats::grib1::product::Product;
use crate::formats::grib1::sections::{ibm_float, Layout};
use crate::formats::grib1::Refusal;
use crate::formats::grib2::sections::{be_signed, be_u64};
use crate::formats::grib2::units::Conversion;

/// BDS flags (octet 4, high nibble): spherical harmonic coefficients;
/// complex or second-order packing.
const HARMONICS: u8 = 0x80;
const COMPLEX: u8 = 0x40;
/// Bytes of the BDS before its packed values.
pub(crate) const BDS_HEAD: u64 = 11;

/// The missing value degrib gives points a bitmap leaves out when it can
/// (`UNDEFINED_PRIM`), and the one it starts from (`UNDEFINED`).
const UNDEFINED_PRIM: f64 = 9999.0;
const UNDEFINED: f64 = 9.999e20;

/// One GRIB1 message, its sections found, its headers and bitmap read.
#[derive(Debug)]
pub(crate) struct Message<'a> {
    /// The grid definition.
    pub(crate) grid: Grid,
    /// The points the bitmap marks present (`None`: no bitmap, all).
    pub(crate) present: Option<Vec<bool>>,
    /// How the values are packed.
    pub(crate) packing: Packing,
    /// The binary data section's bytes.
    bds: &'a [u8],
}

impl<'a> Message<'a> {
    /// Finds the sections of the whole message `bytes` and reads its
    /// headers and bitmap, refusing what the codec does not decode.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Message<'a>, Refusal> {
        let read = |at: u64, len: u64| {
            bytes
                .get(at as usize..(at + len) as usize)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| {
                    Refusal::Malformed(format!("bytes {at}..{} are past the chunk end", at + len))
                })
        };
        let layout = Layout::walk(bytes, bytes.len() as u64, read)?;
        if layout.total_len != bytes.len() as u64 {
            return Err(Refusal::Malformed(format!(
                "the message declares {} bytes but the chunk holds {}",
                layout.total_len,
                bytes.len()
            )));
        }
        let slice = |(at, len): (u64, u64)| &bytes[at as usize..(at + len) as usize];
        let product = Product::parse(slice(layout.pds))?;
        let grid = Grid::parse(gds(&layout, &product).map(slice)?, &product)?;
        let present = layout
            .bms
            .map(|bms| bitmap(slice(bms), grid.shape.points()))
            .transpose()?;
        let bds = slice(layout.bds);
        let packing = Packing::parse(bds, product.decimal_scale)?;
        Ok(Message {
            grid,
            present,
            packing,
            bds,
        })
    }

    /// The present points' values in stored order, unpacked and converted
    /// by `conversion`.
    pub(crate) fn values(&self, conversion: Conversion) -> Result<Vec<f64>, Refusal> {
        let count = self.present.as_ref().map_or(self.grid.shape.points(), |p| {
            p.iter().filter(|&&b| b).count()
        });
        self.packing.values(self.bds, count, conversion)
    }
}

/// The GDS span of a message, refused when absent (a predefined grid).
pub(crate) fn gds(layout: &Layout, product: &Product) -> Result<(u64, u64), Refusal> {
    layout.gds.ok_or_else(|| {
        Refusal::Unsupported(format!(
            "predefined grids (catalogued grid {}, no grid definition section) are not \
             supported (GDAL's GRIB driver does not read them either)",
            product.grid_id
        ))
    })
}

/// The points the bitmap section `bms` marks present, for a grid of
/// `points` points (predefined bitmaps refused).
pub(crate) fn bitmap(bms: &[u8], points: usize) -> Result<Vec<bool>, Refusal> {
    let unused = u64::from(bms[3]);
    let predefined = be_u64(&bms[4..6]);
    if predefined != 0 {
        return Err(Refusal::Unsupported(format!(
            "predefined bitmaps (bitmap {predefined}) are not supported (GDAL's GRIB driver does \
             not read them either)"
        )));
    }
    if points as u64 + unused + 48 != bms.len() as u64 * 8 {
        return Err(Refusal::Malformed(format!(
            "the bitmap section of {} bytes ({unused} bits unused) does not hold the grid's \
             {points} points",
            bms.len()
        )));
    }
    let bits = &bms[6..];
    Ok((0..points)
        .map(|k| bits[k / 8] >> (7 - k % 8) & 1 == 1)
        .collect())
}

/// Simple packing's numbers (BDS octets 4 to 11) and the decimal scale
/// factor (from the PDS).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Packing {
    /// Binary scale factor E.
    binary: i32,
    /// Reference value R.
    reference: f64,
    /// Bits per value.
    bits: u8,
    /// Decimal scale factor D.
    decimal: i32,
}

impl Packing {
    /// Reads the head of the BDS `bds` (at least [`BDS_HEAD`] bytes), refusing what
    /// is not simple packing of grid point values.
    pub(crate) fn parse(bds: &[u8], decimal: i32) -> Result<Packing, Refusal> {
        let flags = bds[3];
        if flags & HARMONICS != 0 {
            return Err(Refusal::Unsupported(
                "spherical harmonic coefficients are not supported".into(),
            ));
        }
        if flags & COMPLEX != 0 {
            return Err(Refusal::Unsupported(
                "complex (second-order) packing is not supported (GDAL's GRIB driver does not \
                 read it either)"
                    .into(),
            ));
        }
        let bits = bds[10];
        if bits > 32 {
            return Err(Refusal::Malformed(format!(
                "{bits} bits per value (at most 32)"
            )));
        }
        Ok(Packing {
            binary: be_signed(&bds[4..6]) as i32,
            reference: ibm_float(be_u64(&bds[6..10]) as u32),
            bits,
            decimal,
        })
    }

    /// Refuses a BDS of `bds_len` bytes too short for `count` values.
    pub(crate) fn check_len(&self, count: usize, bds_len: u64) -> Result<(), Refusal> {
        let needed = count as u64 * u64::from(self.bits);
        let held = bds_len.saturating_sub(BDS_HEAD) * 8;
        if needed > held {
            return Err(Refusal::Malformed(format!(
                "the binary data section holds {} bytes of values, {count} values of {} bits \
                 need {}",
                held / 8,
                self.bits,
                needed.div_ceil(8)
            )));
        }
        Ok(())
    }

    /// The scale factors 2^E and 10^D, as degrib computes them.
    fn scales(&self) -> (f64, f64) {
        (
            2f64.powf(f64::from(self.binary)),
            10f64.powf(f64::from(self.decimal)),
        )
    }

    /// The `count` values of the BDS `bds` (the present points, in
    /// stored order), unpacked and converted by `conversion` as degrib
    /// does.
    pub(crate) fn values(
        &self,
        bds: &[u8],
        count: usize,
        conversion: Conversion,
    ) -> Result<Vec<f64>, Refusal> {
        self.check_len(count, bds.len() as u64)?;
        let (two_e, ten_d) = self.scales();
        if self.bits == 0 {
            return Ok(vec![
                conversion.apply(self.reference * two_e / ten_d);
                count
            ]);
        }
        let mut bits = Bits::new(&bds[BDS_HEAD as usize..]);
        (0..count)
            .map(|_| {
                let x = bits
                    .read(u32::from(self.bits))
                    .map_err(Refusal::Malformed)?;
                Ok(conversion.apply((self.reference + x as f64 * two_e) / ten_d))
            })
            .collect()
    }

    /// The value degrib gives points a bitmap leaves out (and GDAL
    /// reports as nodata): 9999 when the field's values all lie on one
    /// side of it, else the largest value plus one when 9.999e20 lies in
    /// the values' range, else 9.999e20. `values` gives the field's
    /// present values, converted by `conversion`; it is called only when
    /// the header's bounds cannot decide.
    pub(crate) fn bitmap_missing(
        &self,
        conversion: Conversion,
        values: impl FnOnce() -> Result<Vec<f64>, Refusal>,
    ) -> Result<f64, Refusal> {
        let (two_e, ten_d) = self.scales();
        let min = conversion.apply(self.reference * two_e / ten_d);
        let largest = ((1u64 << self.bits) - 1) as f64;
        let bound = match self.bits {
            0 => min,
            _ => conversion
                .apply((self.reference + largest * two_e) / ten_d)
                .max(min),
        };
        if bound < UNDEFINED_PRIM || min > UNDEFINED_PRIM {
            return Ok(UNDEFINED_PRIM);
        }
        let max = match self.bits {
            0 => min,
            _ => values()?.into_iter().fold(min, f64::max),
        };
        Ok(if max < UNDEFINED_PRIM || min > UNDEFINED_PRIM {
            UNDEFINED_PRIM
        } else if max >= UNDEFINED && min <= UNDEFINED {
            max + 1.0
        } else {
            UNDEFINED
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::formats::grib1::grid::tests::latlon_gds;
    use crate::formats::grib1::product::tests::pds;

    /// A message of a 3 x 2 grid (scanning mode `scan`), ECMWF temperature
    /// (130), decimal scale `d`, 8-bit values `packed` (the present ones)
    /// with binary scale `e` and IBM reference `reference` (its bits), and
    /// a bitmap of the six points when `bitmap` is given.
    pub(crate) fn message(
        scan: u8,
        (reference, e, d): (u32, i16, i16),
        packed: &[u8],
        bitmap: Option<u8>,
    ) -> Vec<u8> {
        let flags = 0x80 | if bitmap.is_some() { 0x40 } else { 0 };
        let mut body = pds(130, 0, 0, 0, d, flags);
        body.extend(latlon_gds(
            (3, 2),
            [(1000, 0), (0, 2000)],
            (1000, 1000),
            scan,
        ));
        if let Some(bits) = bitmap {
            // 6 points, 10 bits unused: 8 bytes.
            body.extend_from_slice(&[0, 0, 8, 10, 0, 0, bits, 0]);
        }
        let len = 11 + packed.len();
        let e = e.unsigned_abs() | if e < 0 { 0x8000 } else { 0 };
        body.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
        body.push(0);
        body.extend_from_slice(&e.to_be_bytes());
        body.extend_from_slice(&reference.to_be_bytes());
        body.push(8);
        body.extend_from_slice(packed);
        let mut m = b"GRIB".to_vec();
        m.extend_from_slice(&((8 + body.len() + 4) as u32).to_be_bytes()[1..]);
        m.push(1);
        m.extend(body);
        m.extend_from_slice(b"7777");
        m
    }

    /// IBM float 1.0.
    pub(crate) const ONE: u32 = 0x4110_0000;

    #[test]
    fn unpacks_as_degrib() {
        // (1 + x * 2^-1) / 10^-1: x = 0..5 gives 10, 15, ... 35.
        let m = message(0, (ONE, -1, -1), &[0, 1, 2, 3, 4, 5], None);
        let parsed = Message::parse(&m).unwrap();
        assert_eq!(parsed.present, None);
        assert_eq!(
            parsed.values(Conversion::None).unwrap(),
            [10.0, 15.0, 20.0, 25.0, 30.0, 35.0]
        );
        let celsius = parsed.values(Conversion::KelvinToCelsius).unwrap();
        assert_eq!(celsius[0], 10.0 - 273.15);
        // Bitmap 101101: four values.
        let m = message(0, (ONE, 0, 0), &[7, 8, 9, 10], Some(0b1011_0100));
        let parsed = Message::parse(&m).unwrap();
        assert_eq!(
            parsed.present,
            Some(vec![true, false, true, true, false, true])
        );
        assert_eq!(
            parsed.values(Conversion::None).unwrap(),
            [8.0, 9.0, 10.0, 11.0]
        );
    }

    #[test]
    fn gives_bitmap_points_degribs_missing_value() {
        let packing = |reference: f64, bits: u8| Packing {
            binary: 0,
            reference,
            bits,
            decimal: 0,
        };
        let never = || -> Result<Vec<f64>, Refusal> { panic!("the bounds decide") };
        // All values below 9999, or above it.
        assert_eq!(
            packing(1.0, 8).bitmap_missing(Conversion::None, never),
            Ok(9999.0)
        );
        assert_eq!(
            packing(1e4, 8).bitmap_missing(Conversion::None, never),
            Ok(9999.0)
        );
        // 9999 within the range: the values decide.
        let p = packing(9990.0, 8);
        assert_eq!(
            p.bitmap_missing(Conversion::None, || Ok(vec![9995.0])),
            Ok(9999.0)
        );
        assert_eq!(
            p.bitmap_missing(Conversion::None, || Ok(vec![10_100.0])),
            Ok(UNDEFINED)
        );
        let big = packing(0.0, 32);
        assert_eq!(
            big.bitmap_missing(Conversion::None, || Ok(vec![1e4, 2e21])),
            Ok(2e21 + 1.0)
        );
    }

    #[test]
    fn refuses_other_packings_and_bad_sections() {
        let m = message(0, (ONE, 0, 0), &[0, 1, 2, 3, 4, 5], None);
        let bds = m.len() - 4 - 17;
        for (flag, what) in [(0x80, "spherical harmonic"), (0x40, "second-order")] {
            let mut other = m.clone();
            other[bds + 3] = flag;
            let e = Message::parse(&other).unwrap_err();
            assert!(
                matches!(&e, Refusal::Unsupported(t) if t.contains(what)),
                "{e:?}"
            );
        }
        let mut wide = m.clone();
        wide[bds + 10] = 33;
        assert!(Message::parse(&wide)
            .unwrap_err()
            .text()
            .contains("33 bits"));
        let short = message(0, (ONE, 0, 0), &[0, 1, 2], None);
        let e = Message::parse(&short).unwrap().values(Conversion::None);
        assert!(e.unwrap_err().text().contains("6 values of 8 bits"));
        let mut predefined = message(0, (ONE, 0, 0), &[1; 4], Some(0xB4));
        let bms = 8 + 28 + 32;
        predefined[bms + 5] = 7;
        assert!(Message::parse(&predefined)
            .unwrap_err()
            .text()
            .contains("bitmap 7"));
    }
}
