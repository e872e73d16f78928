//! What a message holds (sections 1 and 4): the parameter, the level, the
//! reference time and the forecast time, as GDAL's GRIB driver reports
//! them per band (`GRIB_REF_TIME`, `GRIB_VALID_TIME`,
//! `GRIB_FORECAST_SECONDS`, in seconds since 1970).

use super::sections::{be_signed, be_u64, field, template};
use crate::base::cf_time::{gregorian_days, TimeAxis};

/// Product definition templates read, all beginning with template 4.0's
/// layout: the instantaneous ones (4.0 analysis or forecast, 4.1 ensemble
/// member, 4.2 derived ensemble forecast, 4.5 probability forecast) and
/// those over a time interval (see [`Interval`]).
const TEMPLATES: &[u16] = &[0, 1, 2, 5, 8, 9, 12];

/// Where a template over a time interval (4.8 statistically processed,
/// 4.9 probability in a time interval, 4.12 derived ensemble forecast
/// over a time interval) records the interval: its valid time is the end
/// of the overall interval, as GDAL's GRIB driver says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    /// Offset in section 4 of the end of the overall time interval
    /// (year, month, day, hour, minute, second).
    pub end_at: usize,
    /// Offset in section 4 of the first time range's unit (code table
    /// 4.4), its length (4 bytes) following.
    pub range_unit_at: usize,
}

impl Interval {
    /// The interval layout of product definition template `template`,
    /// `None` for an instantaneous one.
    pub fn of(template: u16) -> Option<Interval> {
        let (end_at, range_unit_at) = match template {
            8 => (34, 48),
            9 => (47, 61),
            12 => (36, 50),
            _ => return None,
        };
        Some(Interval {
            end_at,
            range_unit_at,
        })
    }
}

/// The product of one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Product {
    /// Discipline (section 0), parameter category and number (section 4).
    pub parameter: (u8, u8, u8),
    /// Type of the first fixed surface (code table 4.5).
    pub level_type: u8,
    /// Value of the first fixed surface (scaled value / 10^scale factor);
    /// `None` when missing.
    pub level_value: Option<f64>,
    /// Product definition template number.
    pub template: u16,
    /// Reference time, seconds since 1970-01-01T00:00:00Z.
    pub reference_time: i64,
    /// Valid time, seconds since 1970-01-01T00:00:00Z.
    pub valid_time: i64,
    /// The forecast time in seconds (for templates over a time interval
    /// the start of the interval, as GDAL's `GRIB_FORECAST_SECONDS` says).
    pub forecast_seconds: i64,
}

impl Product {
    /// Reads the product of a message of `discipline` from its sections 1 and 4.
    pub fn parse(discipline: u8, s1: &[u8], s4: &[u8]) -> Result<Product, String> {
        let reference_time = timestamp(field(s1, 1, 12, 7)?);
        let number = template(s4, 4)?;
        if !TEMPLATES.contains(&number) {
            return Err(format!(
                "product definition template 4.{number} is not supported \
                 (4.0, 4.1, 4.2, 4.5, 4.8, 4.9 and 4.12 are)"
            ));
        }
        let head = field(s4, 4, 9, 25)?;
        let step = unit_seconds(head[8])?;
        let forecast = be_signed(&head[9..13]);
        let valid_time = match Interval::of(number) {
            Some(interval) => timestamp(field(s4, 4, interval.end_at, 7)?),
            None => reference_time + forecast * step,
        };
        let scale = head[14];
        let value = be_u64(&head[15..19]);
        let level_value = (scale != 0xff && value != 0xffff_ffff)
            .then(|| be_signed(&head[15..19]) as f64 / 10f64.powi(i32::from(scale as i8)));
        Ok(Product {
            parameter: (discipline, head[0], head[1]),
            level_type: head[13],
            level_value,
            template: number,
            reference_time,
            valid_time,
            forecast_seconds: forecast * step,
        })
    }

    /// ISO 8601 text of a time in seconds since 1970.
    pub fn iso(seconds: i64) -> String {
        TimeAxis::new("seconds since 1970-01-01", Some("proleptic_gregorian"))
            .and_then(|axis| axis.iso(seconds as f64))
            .unwrap_or_default()
    }
}

/// Seconds since 1970 of a GRIB date: year (2 bytes), month, day, hour,
/// minute, second.
fn timestamp(b: &[u8]) -> i64 {
    let days = gregorian_days(be_u64(&b[..2]) as i64, u32::from(b[2]), u32::from(b[3]));
    days * 86_400 + i64::from(b[4]) * 3600 + i64::from(b[5]) * 60 + i64::from(b[6])
}

/// Seconds in a unit of time range (code table 4.4).
fn unit_seconds(unit: u8) -> Result<i64, String> {
    Ok(match unit {
        0 => 60,
        1 => 3600,
        2 => 86_400,
        10 => 3 * 3600,
        11 => 6 * 3600,
        12 => 12 * 3600,
        13 => 1,
        other => {
            return Err(format!(
                "forecast time unit {other} (code table 4.4) is not supported"
            ))
        }
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Section 1 with reference time 2024-02-29T06:30:00.
    pub(crate) fn identification() -> Vec<u8> {
        let mut s = vec![0u8; 21];
        s[..4].copy_from_slice(&21u32.to_be_bytes());
        s[4] = 1;
        s[12..19].copy_from_slice(&[0x07, 0xe8, 2, 29, 6, 30, 0]);
        s
    }

    /// Section 4, template 4.0: parameter 0-2, forecast `hours` hours,
    /// level type 103 at 2 m.
    pub(crate) fn product_section(hours: u32) -> Vec<u8> {
        let mut s = vec![0u8; 34];
        s[..4].copy_from_slice(&34u32.to_be_bytes());
        s[4] = 4;
        s[9] = 0;
        s[10] = 2;
        s[17] = 1;
        s[18..22].copy_from_slice(&hours.to_be_bytes());
        s[22] = 103;
        s[23] = 0;
        s[24..28].copy_from_slice(&2u32.to_be_bytes());
        s
    }

    #[test]
    fn times_and_levels() {
        let p = Product::parse(0, &identification(), &product_section(30)).unwrap();
        assert_eq!(Product::iso(p.reference_time), "2024-02-29T06:30:00");
        assert_eq!(Product::iso(p.valid_time), "2024-03-01T12:30:00");
        assert_eq!(p.forecast_seconds, 30 * 3600);
        assert_eq!(
            (p.parameter, p.level_type, p.level_value),
            ((0, 0, 2), 103, Some(2.0))
        );
        let mut minutes = product_section(30);
        minutes[17] = 0;
        let p = Product::parse(0, &identification(), &minutes).unwrap();
        assert_eq!(p.forecast_seconds, 1800);
        minutes[17] = 4;
        assert!(Product::parse(0, &identification(), &minutes)
            .unwrap_err()
            .contains("unit 4"));
        minutes[7..9].copy_from_slice(&40u16.to_be_bytes());
        assert!(Product::parse(0, &identification(), &minutes)
            .unwrap_err()
            .contains("4.40"));
        assert!(Product::parse(0, &identification()[..15], &product_section(1)).is_err());
    }

    #[test]
    fn intervals_end_at_their_valid_time() {
        // Templates 4.9 and 4.12: the end of the interval where each keeps it.
        for (number, len) in [(9u16, 71usize), (12, 60)] {
            let mut s = product_section(6);
            s.resize(len, 0);
            s[..4].copy_from_slice(&(len as u32).to_be_bytes());
            s[7..9].copy_from_slice(&number.to_be_bytes());
            let at = Interval::of(number).unwrap().end_at;
            s[at..at + 7].copy_from_slice(&[0x07, 0xe8, 3, 1, 0, 0, 0]);
            let p = Product::parse(0, &identification(), &s).unwrap();
            assert_eq!(Product::iso(p.valid_time), "2024-03-01T00:00:00");
            assert_eq!(p.forecast_seconds, 6 * 3600);
            assert!(Product::parse(0, &identification(), &s[..at + 3]).is_err());
        }
        assert_eq!(Interval::of(5), None);
    }
}
