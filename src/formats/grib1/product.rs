//! Section 1, the product definition (PDS): who made the field, which
//! parameter at which level, its times as degrib computes them, and the
//! decimal scale factor of its values.

use super::{malformed, Refusal};
use crate::base::cf_time::gregorian_days;
use crate::formats::grib2::sections::{be_signed, be_u64};

/// Seconds of the time units of GRIB1 table 4 degrib converts (minute,
/// hour, day; 3, 6 and 12 hours at 10, 11, 12; second at 254); others
/// (months, years, ...) it leaves at the reference time.
fn unit_seconds(unit: u8) -> Option<i64> {
    match unit {
        0 => Some(60),
        1 => Some(3600),
        2 => Some(86_400),
        10 => Some(10_800),
        11 => Some(21_600),
        12 => Some(43_200),
        254 => Some(1),
        _ => None,
    }
}

/// What chunkref reads of a PDS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Product {
    /// Parameter table version (octet 4).
    pub table_version: u8,
    /// Originating centre (octet 5).
    pub centre: u8,
    /// Generating process (octet 6).
    pub process: u8,
    /// Grid identification (octet 7: 255 when a GDS defines the grid).
    pub grid_id: u8,
    /// Parameter number (octet 9, code table 2).
    pub parameter: u8,
    /// Level type (octet 10, code table 3).
    pub level_type: u8,
    /// Level value (octets 11-12).
    pub level: u16,
    /// Time range indicator (octet 21, code table 5).
    pub time_range: u8,
    /// Sub-centre (octet 26).
    pub subcentre: u8,
    /// Decimal scale factor D (octets 27-28): values are divided by 10^D.
    pub decimal_scale: i32,
    /// Reference time, seconds since 1970.
    pub reference_time: i64,
    /// Valid time, seconds since 1970, as degrib derives it from P1, P2
    /// and the time range indicator.
    pub valid_time: i64,
}

impl Product {
    /// Reads the PDS `pds` (at least 28 bytes, as the section walk checks).
    pub fn parse(pds: &[u8]) -> Result<Product, Refusal> {
        if pds.len() < 28 {
            return malformed(format!(
                "the product definition section holds {} bytes, not 28",
                pds.len()
            ));
        }
        let century = i64::from(pds[24]);
        let year = match pds[12] {
            0 => century * 100,
            of_century => i64::from(of_century) + (century - 1) * 100,
        };
        let (month, day, hour, minute) = (pds[13], pds[14], pds[15], pds[16]);
        let reference_time = epoch_seconds(year, month, day, hour, minute).ok_or_else(|| {
            Refusal::Malformed(format!(
                "the reference time {year}-{month:02}-{day:02} {hour:02}:{minute:02} is not a date"
            ))
        })?;
        let (unit, p1, p2, time_range) = (pds[17], pds[18], pds[19], pds[20]);
        let after = |p: i64| unit_seconds(unit).map_or(reference_time, |s| reference_time + p * s);
        let valid_time = match time_range {
            2..=5 | 51 => after(i64::from(p2)),
            10 => after(i64::from(u16::from_be_bytes([p1, p2]))),
            _ => after(i64::from(p1)),
        };
        Ok(Product {
            table_version: pds[3],
            centre: pds[4],
            process: pds[5],
            grid_id: pds[6],
            parameter: pds[8],
            level_type: pds[9],
            level: be_u64(&pds[10..12]) as u16,
            time_range,
            subcentre: pds[25],
            decimal_scale: be_signed(&pds[26..28]) as i32,
            reference_time,
            valid_time,
        })
    }

    /// Seconds from the reference time to the valid time.
    pub fn forecast_seconds(&self) -> i64 {
        self.valid_time - self.reference_time
    }
}

/// Seconds since 1970 of a UTC date and time, `None` when it is not one.
fn epoch_seconds(year: i64, month: u8, day: u8, hour: u8, minute: u8) -> Option<i64> {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days_in_month = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let length = *days_in_month.get(usize::from(month).checked_sub(1)?)?;
    if day == 0 || day > length || hour > 23 || minute > 59 {
        return None;
    }
    let days = gregorian_days(year, u32::from(month), u32::from(day));
    Some(days * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A 28-byte PDS: ECMWF table 128 parameter `parameter`, 2024-02-29
    /// 06:00, hours `p1` / `p2` with time range `range`, decimal scale
    /// `d`, flags `flags` (GDS 0x80, BMS 0x40).
    pub(crate) fn pds(parameter: u8, p1: u8, p2: u8, range: u8, d: i16, flags: u8) -> Vec<u8> {
        let mut s = vec![
            0, 0, 28, 128, 98, 1, 255, flags, parameter, 100, 0x01, 0xF4, 24, 2, 29, 6, 0, 1, p1,
            p2, range, 0, 0, 0, 21, 0, 0, 0,
        ];
        let magnitude = d.unsigned_abs() | if d < 0 { 0x8000 } else { 0 };
        s[26..28].copy_from_slice(&magnitude.to_be_bytes());
        s
    }

    #[test]
    fn reads_times_as_degrib() {
        let p = Product::parse(&pds(167, 6, 0, 0, -2, 0x80)).unwrap();
        assert_eq!(p.reference_time, 1_709_186_400);
        assert_eq!(p.forecast_seconds(), 6 * 3600);
        assert_eq!((p.parameter, p.level_type, p.level), (167, 100, 500));
        assert_eq!(p.decimal_scale, -2);
        // An accumulation (time range 4): valid at P2.
        let p = Product::parse(&pds(228, 0, 12, 4, 0, 0x80)).unwrap();
        assert_eq!(p.forecast_seconds(), 12 * 3600);
        // Time range 10: P1 and P2 are one number.
        let p = Product::parse(&pds(167, 1, 2, 10, 0, 0x80)).unwrap();
        assert_eq!(p.forecast_seconds(), 258 * 3600);
        // A month unit: degrib leaves the valid time at the reference time.
        let mut monthly = pds(167, 1, 0, 0, 0, 0x80);
        monthly[17] = 3;
        assert_eq!(Product::parse(&monthly).unwrap().forecast_seconds(), 0);
        // Year of century 0 is the century's last year.
        let mut y2000 = pds(167, 0, 0, 0, 0, 0x80);
        (y2000[12], y2000[24]) = (0, 20);
        assert_eq!(Product::parse(&y2000).unwrap().reference_time, 951_804_000);
        let mut bad = pds(167, 0, 0, 0, 0, 0x80);
        bad[13] = 13;
        assert!(Product::parse(&bad).is_err());
        assert!(Product::parse(&bad[..20]).is_err());
    }
}
