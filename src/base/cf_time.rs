//! CF time coordinates as ISO 8601 datetimes: values of a coordinate whose
//! `units` are `"<unit> since <reference>"`, in one of the CF calendars,
//! decoded as cftime (1.6) decodes them, so that a band's datetime is the
//! one xarray and netCDF4-python show.
//!
//! - Units: microseconds, milliseconds, seconds, minutes, hours, days and
//!   cftime's abbreviations (`ms`, `s`, `min`, `h`, `d`, ...), `months`
//!   (30 days) in the `360_day` calendar, `common_years` (365 days) in
//!   `noleap` / `365_day`. A value becomes whole microseconds as cftime
//!   rounds it (nearest, ties to even, in x87 extended precision, with
//!   cftime's snap of a microsecond off a whole second for coarser units).
//! - Reference: `Y-M-D[<sep>h:m[:s[.f]]][[<sep>]zone]` (one or two digit
//!   fields, signed years, zone `Z`, `+hh`, `+hhmm`, `+hh:mm` subtracted);
//!   text after it is ignored, as cftime does.
//! - Calendars: `standard` / `gregorian` (Julian before 1582-10-15,
//!   Gregorian from then on, the ten days between them do not exist),
//!   `proleptic_gregorian`, `julian`, `noleap` / `365_day`,
//!   `all_leap` / `366_day`, `360_day`; no `calendar` attribute is
//!   `standard`. `standard` and `julian` have no year 0 (1 BC is year -1),
//!   the others do, as in CF 1.9 and cftime.
//!
//! Anything else (another unit or calendar, a reference that does not
//! parse or is not a date of its calendar, a value that is not finite or
//! beyond 64-bit microseconds) decodes to `None`, never an error.

/// Microseconds in a day.
const DAY_US: i128 = 86_400_000_000;

/// Days from 1970-01-01 (Gregorian) to 0000-03-01 of the Julian calendar's
/// March-based count, so that Julian and Gregorian day numbers are one scale.
const JULIAN_OFFSET: i64 = -719_470;

/// Days from 1970-01-01 to 0000-03-01 in the proleptic Gregorian calendar.
const GREGORIAN_OFFSET: i64 = -719_468;

/// The largest reference year accepted (keeps day arithmetic in range).
const MAX_YEAR: i64 = 1_000_000;

/// A CF calendar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Calendar {
    /// `standard`, `gregorian`: Julian up to 1582-10-04, Gregorian from 1582-10-15.
    Standard,
    /// `proleptic_gregorian`: Gregorian rules for every year.
    ProlepticGregorian,
    /// `julian`: a leap year every four years.
    Julian,
    /// `noleap`, `365_day`.
    NoLeap,
    /// `all_leap`, `366_day`.
    AllLeap,
    /// `360_day`: twelve months of 30 days.
    Day360,
}

impl Calendar {
    /// The calendar a CF `calendar` attribute names (case-insensitive);
    /// `None` for calendars not handled here.
    pub fn from_name(name: &str) -> Option<Calendar> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "standard" | "gregorian" => Calendar::Standard,
            "proleptic_gregorian" => Calendar::ProlepticGregorian,
            "julian" => Calendar::Julian,
            "noleap" | "365_day" => Calendar::NoLeap,
            "all_leap" | "366_day" => Calendar::AllLeap,
            "360_day" => Calendar::Day360,
            _ => return None,
        })
    }

    /// Whether year 0 exists (else 1 BC is written -1).
    fn has_year_zero(self) -> bool {
        !matches!(self, Calendar::Standard | Calendar::Julian)
    }

    /// Days of month `m` (1-12) of the astronomical year `y`.
    fn month_days(self, y: i64, m: u32) -> u32 {
        const DAYS: [u32; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        let leap = match self {
            Calendar::Day360 => return 30,
            Calendar::NoLeap => false,
            Calendar::AllLeap => true,
            Calendar::Julian => y.rem_euclid(4) == 0,
            Calendar::ProlepticGregorian => gregorian_leap(y),
            Calendar::Standard if y > 1582 => gregorian_leap(y),
            Calendar::Standard => y.rem_euclid(4) == 0,
        };
        DAYS[m as usize - 1] + u32::from(m == 2 && leap)
    }

    /// Whether `y-m-d` (astronomical year) is a date of this calendar.
    fn is_date(self, y: i64, m: u32, d: u32) -> bool {
        let gap = self == Calendar::Standard && (y, m) == (1582, 10) && (5..15).contains(&d);
        (1..=12).contains(&m) && d >= 1 && d <= self.month_days(y, m) && !gap
    }

    /// Day number of `y-m-d` (astronomical year; 0 = 1970-01-01 for the
    /// real-world calendars, a continuous count in the others).
    fn day_number(self, y: i64, m: u32, d: u32) -> i64 {
        match self {
            Calendar::ProlepticGregorian => gregorian_days(y, m, d),
            Calendar::Julian => julian_days(y, m, d),
            Calendar::Standard if (y, m, d) >= (1582, 10, 15) => gregorian_days(y, m, d),
            Calendar::Standard => julian_days(y, m, d),
            Calendar::NoLeap | Calendar::AllLeap | Calendar::Day360 => {
                let before: i64 = (1..m).map(|k| i64::from(self.month_days(y, k))).sum();
                y * self.fixed_year_len() + before + i64::from(d) - 1
            }
        }
    }

    /// Days in every year of a calendar without leap years.
    fn fixed_year_len(self) -> i64 {
        match self {
            Calendar::Day360 => 360,
            Calendar::AllLeap => 366,
            _ => 365,
        }
    }

    /// The date (astronomical year, month, day) of day number `n`.
    fn date(self, n: i64) -> (i64, u32, u32) {
        let in_year = |y: i64, mut left: i64| {
            let mut m = 1;
            while left >= i64::from(self.month_days(y, m)) {
                left -= i64::from(self.month_days(y, m));
                m += 1;
            }
            (y, m, left as u32 + 1)
        };
        match self {
            Calendar::NoLeap | Calendar::AllLeap | Calendar::Day360 => {
                let len = self.fixed_year_len();
                in_year(n.div_euclid(len), n.rem_euclid(len))
            }
            Calendar::ProlepticGregorian => gregorian_date(n),
            Calendar::Julian => julian_date(n),
            Calendar::Standard if n >= gregorian_days(1582, 10, 15) => gregorian_date(n),
            Calendar::Standard => julian_date(n),
        }
    }
}

/// Gregorian leap year rule.
fn gregorian_leap(y: i64) -> bool {
    y.rem_euclid(4) == 0 && (y.rem_euclid(100) != 0 || y.rem_euclid(400) == 0)
}

/// Day of a March-based year (March 1 = 0) of month `m`, day `d`.
fn march_day(m: u32, d: u32) -> i64 {
    let mp = i64::from(if m > 2 { m - 3 } else { m + 9 });
    (153 * mp + 2) / 5 + i64::from(d) - 1
}

/// (month, day) of day `doy` of a March-based year.
fn march_date(doy: i64) -> (u32, u32) {
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (m as u32, d as u32)
}

/// Proleptic Gregorian day number (0 = 1970-01-01).
pub(crate) fn gregorian_days(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + march_day(m, d) + GREGORIAN_OFFSET
}

/// The proleptic Gregorian date of day number `n`.
fn gregorian_date(n: i64) -> (i64, u32, u32) {
    let z = n - GREGORIAN_OFFSET;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let (m, d) = march_date(doy);
    let y = era * 400 + yoe + i64::from(m <= 2);
    (y, m, d)
}

/// Julian day number on the Gregorian scale (0 = Gregorian 1970-01-01).
fn julian_days(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(4);
    let yoe = y - era * 4;
    era * 1461 + yoe * 365 + march_day(m, d) + JULIAN_OFFSET
}

/// The Julian date of day number `n`.
fn julian_date(n: i64) -> (i64, u32, u32) {
    let z = n - JULIAN_OFFSET;
    let era = z.div_euclid(1461);
    let doe = z - era * 1461;
    let yoe = (doe / 365).min(3);
    let (m, d) = march_date(doe - 365 * yoe);
    (era * 4 + yoe + i64::from(m <= 2), m, d)
}

/// A CF time axis: how its values map to datetimes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeAxis {
    calendar: Calendar,
    /// Microseconds per unit.
    unit_us: i128,
    /// Whether the unit is milli- or microseconds (cftime does not snap those).
    fine_unit: bool,
    /// The reference datetime, in microseconds of the calendar's day numbers.
    origin_us: i128,
}

impl TimeAxis {
    /// The axis of CF `units` (`"<unit> since <reference>"`) and `calendar`
    /// (`None`: `standard`); `None` when either is not supported.
    pub fn new(units: &str, calendar: Option<&str>) -> Option<TimeAxis> {
        let calendar = match calendar {
            Some(name) => Calendar::from_name(name)?,
            None => Calendar::Standard,
        };
        let (unit, rest) = units.trim().split_once(char::is_whitespace)?;
        let (since, reference) = rest.trim_start().split_once(char::is_whitespace)?;
        if !since.eq_ignore_ascii_case("since") {
            return None;
        }
        let unit = unit.to_ascii_lowercase();
        let reference = reference.trim();
        let (unit_us, fine_unit) = unit_microseconds(&unit, calendar)?;
        let origin_us = reference_microseconds(reference, calendar)?;
        Some(TimeAxis {
            calendar,
            unit_us,
            fine_unit,
            origin_us,
        })
    }

    /// The coordinate value of ISO 8601 datetime `text` on this axis (the
    /// inverse of [`TimeAxis::iso`]); `None` when it does not parse.
    pub fn value(&self, text: &str) -> Option<f64> {
        let us = reference_microseconds(text.trim(), self.calendar)? - self.origin_us;
        Some(us as f64 / self.unit_us as f64)
    }

    /// The datetime of coordinate value `value` as ISO 8601
    /// (`YYYY-MM-DDThh:mm:ss[.ffffff]`, years before 1 as cftime writes
    /// them, `-0044-03-15T...`); `None` when it is out of range.
    pub fn iso(&self, value: f64) -> Option<String> {
        let offset = scaled_microseconds(value, self.unit_us, self.fine_unit)?;
        let total = self.origin_us + offset;
        let day = i64::try_from(total.div_euclid(DAY_US)).ok()?;
        let in_day = total.rem_euclid(DAY_US) as i64;
        let (y, m, d) = self.calendar.date(day);
        let year = if self.calendar.has_year_zero() || y > 0 {
            y
        } else {
            y - 1
        };
        let (s, us) = (in_day / 1_000_000, in_day % 1_000_000);
        let mut out = if year < 0 {
            format!("{year:05}-{m:02}-{d:02}")
        } else {
            format!("{year:04}-{m:02}-{d:02}")
        };
        out += &format!("T{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
        if us != 0 {
            out += &format!(".{us:06}");
        }
        Some(out)
    }
}

/// Microseconds per `unit` in `calendar`, and whether the unit is
/// milli- or microseconds (cftime's names and abbreviations).
fn unit_microseconds(unit: &str, calendar: Calendar) -> Option<(i128, bool)> {
    let day = DAY_US;
    Some(match unit {
        "microseconds" | "microsecond" | "microsec" | "microsecs" => (1, true),
        "milliseconds" | "millisecond" | "millisec" | "millisecs" | "msec" | "msecs" | "ms" => {
            (1000, true)
        }
        "seconds" | "second" | "sec" | "secs" | "s" => (1_000_000, false),
        "minutes" | "minute" | "min" | "mins" => (60_000_000, false),
        "hours" | "hour" | "hr" | "hrs" | "h" => (3_600_000_000, false),
        "days" | "day" | "d" => (day, false),
        "months" | "month" if calendar == Calendar::Day360 => (30 * day, false),
        "common_years" | "common_year" if calendar == Calendar::NoLeap => (365 * day, false),
        _ => return None,
    })
}

/// A CF reference datetime in microseconds of `calendar`'s day numbers
/// (its zone subtracted), as cftime parses it: `None` when it is not a
/// date of the calendar.
fn reference_microseconds(text: &str, calendar: Calendar) -> Option<i128> {
    let mut p = Cursor {
        b: text.as_bytes(),
        at: 0,
    };
    let sign = p.sign();
    let year = sign * i64::try_from(p.number(1, 18)?).ok()?;
    p.expect(b'-')?;
    let month = p.number(1, 2)? as u32;
    p.expect(b'-')?;
    let day = p.number(1, 2)? as u32;
    // Optional time: any one separator, h:m, then optional :s and .fraction.
    let mut time = [0u64; 3];
    let mut micro = 0i128;
    let mut t = p.clone();
    t.at += 1;
    if let (Some(h), Some(_), Some(mi)) = (t.number(1, 2), t.expect(b':'), t.number(1, 2)) {
        time = [h, mi, 0];
        p = t.clone();
        if let (Some(_), Some(s)) = (t.expect(b':'), t.number(1, 2)) {
            time[2] = s;
            p = t.clone();
            let digits_from = t.at + 1;
            if t.expect(b'.').is_some() && t.number(1, usize::MAX).is_some() {
                let fraction: f64 = format!("0.{}", &text[digits_from..t.at]).parse().ok()?;
                micro = (fraction * 1e6) as i128;
                p = t;
            }
        }
    }
    let zone_minutes = p.zone().unwrap_or(0);
    let [h, mi, s] = time;
    if year.abs() > MAX_YEAR || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    if year == 0 && !calendar.has_year_zero() {
        return None;
    }
    let astronomical = if year < 0 && !calendar.has_year_zero() {
        year + 1
    } else {
        year
    };
    if !calendar.is_date(astronomical, month, day) {
        return None;
    }
    let days = i128::from(calendar.day_number(astronomical, month, day));
    let seconds = i128::from(h * 3600 + mi * 60 + s) - 60 * i128::from(zone_minutes);
    Some(days * DAY_US + seconds * 1_000_000 + micro)
}

/// A position in the reference datetime text.
#[derive(Clone)]
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    /// `-1` after a `-`, else `1` (after an optional `+`).
    fn sign(&mut self) -> i64 {
        match self.b.get(self.at) {
            Some(b'-') => {
                self.at += 1;
                -1
            }
            Some(b'+') => {
                self.at += 1;
                1
            }
            _ => 1,
        }
    }

    /// Steps over `c`.
    fn expect(&mut self, c: u8) -> Option<()> {
        (self.b.get(self.at) == Some(&c)).then(|| self.at += 1)
    }

    /// `min..=max` digits (as many as there are), as a number.
    fn number(&mut self, min: usize, max: usize) -> Option<u64> {
        let n = self.b[self.at.min(self.b.len())..]
            .iter()
            .take(max)
            .take_while(|c| c.is_ascii_digit())
            .count();
        if n < min {
            return None;
        }
        let digits = &self.b[self.at..self.at + n];
        self.at += n;
        digits.iter().try_fold(0u64, |v, &c| {
            v.checked_mul(10)?.checked_add(u64::from(c - b'0'))
        })
    }

    /// A zone after at most one separator: `Z`, `+hh`, `+hhmm`, `+hh:mm`,
    /// in minutes east of UTC.
    fn zone(&self) -> Option<i64> {
        [self.at, self.at + 1].into_iter().find_map(|at| {
            let mut z = Cursor { b: self.b, at };
            if z.expect(b'Z').is_some() {
                return Some(0);
            }
            let sign = match z.b.get(z.at) {
                Some(b'+' | b'-') => z.sign(),
                _ => return None,
            };
            let hours = z.number(2, 2)? as i64;
            let mut m = z.clone();
            let minutes = match (m.expect(b':'), m.number(2, 2)) {
                (Some(_), Some(v)) => v as i64,
                _ => z.number(2, 2).unwrap_or(0) as i64,
            };
            Some(sign * (hours * 60 + minutes))
        })
    }
}

/// `value` units of `unit_us` microseconds as whole microseconds, rounded
/// as cftime rounds: the product in x87 extended precision (64-bit
/// significand, ties to even), then to the nearest integer (ties to even);
/// for units of a second or more a result one microsecond off a whole
/// second is floored (above) or ceiled (below) instead. `None` for values
/// that are not finite or beyond 64-bit microseconds.
fn scaled_microseconds(value: f64, unit_us: i128, fine_unit: bool) -> Option<i128> {
    if !value.is_finite() {
        return None;
    }
    if value == 0.0 {
        return Some(0);
    }
    let bits = value.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let fraction = (bits & ((1 << 52) - 1)) as i128;
    let (mantissa, exp) = if exponent == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), exponent - 1075)
    };
    // The exact product mantissa * unit_us * 2^exp, rounded to 64 bits.
    let (mut product, mut exp) = (mantissa * unit_us, exp);
    let excess = (128 - product.leading_zeros() as i32 - 64).max(0);
    if excess > 0 {
        product = shift_right_even(product, excess as u32);
        exp += excess;
    }
    let negative = value < 0.0;
    if exp >= 0 {
        let whole = product.checked_shl(exp as u32)?;
        if exp > 64 || whole > i64::MAX as i128 {
            return None;
        }
        return Some(if negative { -whole } else { whole });
    }
    let shift = (-exp) as u32;
    if shift >= 127 {
        return Some(0);
    }
    let floor_abs = product >> shift;
    if floor_abs > i64::MAX as i128 {
        return None;
    }
    let exact = floor_abs << shift == product;
    let nearest = shift_right_even(product, shift);
    // floor and ceil of the signed value.
    let (floor, ceil, rint) = if negative {
        (-(floor_abs + i128::from(!exact)), -floor_abs, -nearest)
    } else {
        (floor_abs, floor_abs + i128::from(!exact), nearest)
    };
    if fine_unit {
        return Some(rint);
    }
    Some(match rint.rem_euclid(1_000_000) {
        1 => floor,
        999_999 => ceil,
        _ => rint,
    })
}

/// `v >> shift` (v >= 0) rounded to nearest, ties to even.
fn shift_right_even(v: i128, shift: u32) -> i128 {
    if shift == 0 {
        return v;
    }
    if shift >= 127 {
        return 0;
    }
    let kept = v >> shift;
    let rest = v - (kept << shift);
    let half = 1i128 << (shift - 1);
    if rest > half || (rest == half && kept & 1 == 1) {
        kept + 1
    } else {
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_datetimes_invert_iso() {
        let axis = TimeAxis::new("seconds since 1970-01-01 00:00:00", None).unwrap();
        assert_eq!(axis.value("2021-01-02"), Some(1_609_545_600.0));
        assert_eq!(axis.value("2021-01-02T06:00:00Z"), Some(1_609_567_200.0));
        assert_eq!(
            axis.iso(1_609_567_200.0).as_deref(),
            Some("2021-01-02T06:00:00")
        );
        assert_eq!(axis.value("the third day"), None);
    }

    fn iso(units: &str, calendar: Option<&str>, v: f64) -> Option<String> {
        TimeAxis::new(units, calendar)?.iso(v)
    }

    #[test]
    fn decodes_real_world_calendars() {
        let days = "days since 2000-01-01";
        assert_eq!(iso(days, None, 0.0).unwrap(), "2000-01-01T00:00:00");
        assert_eq!(
            iso(days, Some("standard"), 59.5).unwrap(),
            "2000-02-29T12:00:00"
        );
        assert_eq!(
            iso(days, Some("GREGORIAN"), 366.0).unwrap(),
            "2001-01-01T00:00:00"
        );
        assert_eq!(
            iso("hours since 1990-01-01 12:00:00", Some("gregorian"), 36.0).unwrap(),
            "1990-01-03T00:00:00"
        );
        assert_eq!(
            iso(
                "seconds since 1970-01-01 00:00:00",
                Some("proleptic_gregorian"),
                1e9
            )
            .unwrap(),
            "2001-09-09T01:46:40"
        );
        assert_eq!(
            iso("seconds since 1970-01-01", None, 86400.5).unwrap(),
            "1970-01-02T00:00:00.500000"
        );
        assert_eq!(
            iso("seconds since 1970-01-01", None, -1.0).unwrap(),
            "1969-12-31T23:59:59"
        );
        assert_eq!(
            iso("days since 1900-1-1", Some("proleptic_gregorian"), 59.0).unwrap(),
            "1900-03-01T00:00:00"
        );
    }

    #[test]
    fn mixed_calendar_skips_the_gregorian_gap() {
        let u = "days since 1582-10-04";
        assert_eq!(iso(u, None, 1.0).unwrap(), "1582-10-15T00:00:00");
        assert_eq!(iso(u, None, -1.0).unwrap(), "1582-10-03T00:00:00");
        // Julian leap day in 1500, not a proleptic Gregorian one.
        assert_eq!(
            iso("days since 1500-02-28", Some("standard"), 1.0).unwrap(),
            "1500-02-29T00:00:00"
        );
        assert_eq!(
            iso("days since 1500-02-28", Some("proleptic_gregorian"), 1.0).unwrap(),
            "1500-03-01T00:00:00"
        );
        assert_eq!(
            iso("days since 1582-10-10", None, 0.0),
            None,
            "date in the gap"
        );
        assert_eq!(iso("days since 0-01-01", None, 0.0), None, "no year 0");
    }

    #[test]
    fn julian_calendar_and_years_before_one() {
        assert_eq!(
            iso("days since 1900-02-28", Some("julian"), 1.0).unwrap(),
            "1900-02-29T00:00:00"
        );
        assert_eq!(
            iso("days since 1-01-01", Some("julian"), -1.0).unwrap(),
            "-0001-12-31T00:00:00"
        );
        assert_eq!(
            iso("days since 1-01-01", Some("proleptic_gregorian"), -1.0).unwrap(),
            "0000-12-31T00:00:00"
        );
        assert_eq!(
            iso("days since -100-01-01", None, 1.0).unwrap(),
            "-0100-01-02T00:00:00"
        );
        // Every day of 4000 years round-trips through its day number.
        for c in [
            Calendar::Julian,
            Calendar::ProlepticGregorian,
            Calendar::Standard,
        ] {
            for n in (-800_000..700_000).step_by(97) {
                let (y, m, d) = c.date(n);
                assert!(c.is_date(y, m, d), "{c:?} {n}");
                assert_eq!(c.day_number(y, m, d), n, "{c:?} {y}-{m}-{d}");
            }
        }
    }

    #[test]
    fn decodes_idealised_calendars() {
        let u = "days since 2000-01-01";
        assert_eq!(iso(u, Some("noleap"), 59.0).unwrap(), "2000-03-01T00:00:00");
        assert_eq!(
            iso(u, Some("365_day"), 365.0).unwrap(),
            "2001-01-01T00:00:00"
        );
        assert_eq!(
            iso(u, Some("all_leap"), 59.0).unwrap(),
            "2000-02-29T00:00:00"
        );
        assert_eq!(
            iso(u, Some("366_day"), 366.0).unwrap(),
            "2001-01-01T00:00:00"
        );
        assert_eq!(
            iso("days since 2001-01-01", Some("all_leap"), 59.0).unwrap(),
            "2001-02-29T00:00:00"
        );
        assert_eq!(
            iso(u, Some("360_day"), 59.0).unwrap(),
            "2000-02-30T00:00:00"
        );
        assert_eq!(
            iso(u, Some("360_day"), 360.0).unwrap(),
            "2001-01-01T00:00:00"
        );
        assert_eq!(
            iso(u, Some("360_day"), -1.0).unwrap(),
            "1999-12-30T00:00:00"
        );
        assert_eq!(
            iso("months since 2000-01-01", Some("360_day"), 13.0).unwrap(),
            "2001-02-01T00:00:00"
        );
        assert_eq!(
            iso("common_years since 2000-01-01", Some("noleap"), 2.0).unwrap(),
            "2002-01-01T00:00:00"
        );
        assert_eq!(iso("days since 2000-02-29", Some("noleap"), 0.0), None);
        assert_eq!(iso("days since 2000-01-31", Some("360_day"), 0.0), None);
        assert_eq!(iso("months since 2000-01-01", Some("noleap"), 1.0), None);
        for c in [Calendar::NoLeap, Calendar::AllLeap, Calendar::Day360] {
            for n in (-100_000..100_000).step_by(7) {
                let (y, m, d) = c.date(n);
                assert_eq!(c.day_number(y, m, d), n, "{c:?}");
            }
        }
    }

    #[test]
    fn parses_reference_forms_as_cftime() {
        let at = |units: &str| iso(units, None, 0.0);
        assert_eq!(
            at("days since 1970-1-1 6:30").unwrap(),
            "1970-01-01T06:30:00"
        );
        assert_eq!(
            at("days since 1970-1-1 6:30 +02:00").unwrap(),
            "1970-01-01T04:30:00"
        );
        assert_eq!(
            at("days since 1970-01-01T06:00:00-0130").unwrap(),
            "1970-01-01T07:30:00"
        );
        assert_eq!(
            at("days since 1970-01-01T00:00:00Z").unwrap(),
            "1970-01-01T00:00:00"
        );
        assert_eq!(
            at("days since 1990-11-25 12:00 UTC").unwrap(),
            "1990-11-25T12:00:00"
        );
        assert_eq!(
            at("days since 2000-01-01 00:00:00.5").unwrap(),
            "2000-01-01T00:00:00.500000"
        );
        assert_eq!(
            at("DAYS  SINCE  2000-01-01").unwrap(),
            "2000-01-01T00:00:00"
        );
        assert_eq!(at("ms since 2000-01-01").unwrap(), "2000-01-01T00:00:00");
        for bad in [
            "days since 20000101",
            "days after 2000-01-01",
            "weeks since 2000-01-01",
            "days since 2000-13-01",
            "days since 2000-01-01 24:00",
            "days",
            "",
        ] {
            assert_eq!(at(bad), None, "{bad}");
        }
        assert_eq!(TimeAxis::new("days since 2000-01-01", Some("tai")), None);
        assert_eq!(TimeAxis::new("days since 2000-01-01", Some("none")), None);
    }

    #[test]
    fn rounds_to_microseconds_as_cftime() {
        let s = |v: f64| iso("seconds since 1970-01-01", None, v).unwrap();
        // rint would give 1 microsecond; cftime floors what is 1 us past a second.
        assert_eq!(s(0.6e-6), "1970-01-01T00:00:00");
        assert_eq!(s(1.1e-6), "1970-01-01T00:00:00.000001");
        assert_eq!(s(1.5e-6), "1970-01-01T00:00:00.000002");
        assert_eq!(s(2.5e-6), "1970-01-01T00:00:00.000003");
        assert_eq!(s(-1.2e-6), "1969-12-31T23:59:59.999999");
        assert_eq!(s(-0.9e-6), "1970-01-01T00:00:00");
        assert_eq!(s(1.0 / 3.0), "1970-01-01T00:00:00.333333");
        let us = |v: f64| iso("microseconds since 1970-01-01", None, v).unwrap();
        assert_eq!(us(0.6), "1970-01-01T00:00:00.000001");
        assert_eq!(us(2.5), "1970-01-01T00:00:00.000002");
        assert_eq!(iso("days since 2000-01-01", None, f64::NAN), None);
        assert_eq!(iso("days since 2000-01-01", None, 1e300), None);
        assert_eq!(
            iso("days since 2000-01-01", None, 9.969209968386869e36),
            None
        );
    }
}
