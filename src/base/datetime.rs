//! ISO 8601 datetimes out of the forms sources record them in: a date in
//! a file name, TIFF `DateTime` (`YYYY:MM:DD HH:MM:SS`), GDAL metadata items
//! (ISO 8601 or the TIFF form), NITF `IDATIM` (`CCYYMMDDhhmmss`, NITF 2.0
//! `DDHHMMSSZMONYY`). Time steps of a stack take their datetime from them.

/// GDAL metadata items that may hold an image's datetime, most specific
/// first (`TIFFTAG_DATETIME` is the TIFF DateTime tag as GDAL names it).
pub const METADATA_ITEMS: [&str; 4] = [
    "ACQUISITIONDATETIME",
    "ACQUISITION_DATETIME",
    "DATETIME",
    "TIFFTAG_DATETIME",
];

/// The months as NITF 2.0 `IDATIM` writes them.
const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];

/// A datetime written as `YYYY?MM?DD` (separators `-`, `:` or `/`, or none)
/// optionally followed by `T`, a space or `_` and `hh:mm:ss` (colons
/// optional), fractional seconds and a zone (`Z`, `+hh:mm`), as ISO 8601
/// `YYYY-MM-DD[Thh:mm:ss[.f][zone]]`; `None` when it is not one.
pub fn parse(text: &str) -> Option<String> {
    let b = text.trim().as_bytes();
    let num = |at: usize, n: usize| -> Option<u32> {
        let s = b.get(at..at + n)?;
        s.iter()
            .all(u8::is_ascii_digit)
            .then(|| std::str::from_utf8(s).ok()?.parse().ok())?
    };
    let year = num(0, 4)?;
    let sep = b
        .get(4)
        .copied()
        .filter(|c| matches!(c, b'-' | b':' | b'/'));
    let at = 4 + usize::from(sep.is_some());
    let month = num(at, 2)?;
    let at = at + 2 + usize::from(sep.is_some());
    if sep.is_some() && b.get(at - 1).copied() != sep {
        return None;
    }
    let day = num(at, 2)?;
    let mut at = at + 2;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut out = format!("{year:04}-{month:02}-{day:02}");
    if at == b.len() {
        return Some(out);
    }
    if !matches!(b[at], b'T' | b' ' | b'_') && !b[at].is_ascii_digit() {
        return None;
    }
    if !b[at].is_ascii_digit() {
        at += 1;
    }
    let mut fields = [0u32; 3];
    for (i, field) in fields.iter_mut().enumerate() {
        if i > 0 && b.get(at) == Some(&b':') {
            at += 1;
        }
        *field = num(at, 2)?;
        at += 2;
    }
    let [h, m, s] = fields;
    if h > 23 || m > 59 || s > 60 {
        return None;
    }
    out += &format!("T{h:02}:{m:02}:{s:02}");
    let rest = std::str::from_utf8(&b[at..]).ok()?;
    let (fraction, zone) = match rest.strip_prefix('.') {
        Some(r) => {
            let digits = r.bytes().take_while(u8::is_ascii_digit).count();
            (&rest[..=digits], &r[digits..])
        }
        None => ("", rest),
    };
    let zone_ok = zone.is_empty()
        || zone == "Z"
        || (zone.len() == 6
            && matches!(zone.as_bytes()[0], b'+' | b'-')
            && zone.as_bytes()[3] == b':');
    zone_ok.then(|| out + fraction + zone)
}

/// A NITF `IDATIM`: `CCYYMMDDhhmmss` (NITF 2.1, NSIF; unknown time digits
/// as `-` give the date alone) or, with `version_20`, `DDHHMMSSZMONYY`.
pub fn nitf_idatim(text: &str, version_20: bool) -> Option<String> {
    let t = text.trim();
    if !t.is_ascii() {
        return None;
    }
    if version_20 && t.len() == 14 && t.as_bytes()[8] == b'Z' {
        let month = MONTHS.iter().position(|m| *m == &t[9..12])? + 1;
        let yy: u32 = t[12..14].parse().ok()?;
        // NITF 2.0 predates 2000 mostly; two-digit years pivot at 70.
        let year = if yy < 70 { 2000 + yy } else { 1900 + yy };
        return parse(&format!("{year}{month:02}{}T{}", &t[..2], &t[2..8]));
    }
    if t.len() != 14 {
        return None;
    }
    if t[8..].contains('-') {
        return parse(&t[..8]);
    }
    parse(t)
}

/// The first date (`YYYYMMDD` or `YYYY-MM-DD`, optionally followed by a
/// time `THHMMSS`, `_HHMMSS` or `THH:MM:SS`) in a file name, as ISO 8601.
pub fn datetime_in_name(name: &str) -> Option<String> {
    let stem = std::path::Path::new(name).file_name()?.to_str()?;
    let b = stem.as_bytes();
    let digits = |at: usize, n: usize| -> Option<u32> {
        let s = b.get(at..at + n)?;
        s.iter()
            .all(u8::is_ascii_digit)
            .then(|| std::str::from_utf8(s).ok()?.parse().ok())?
    };
    // (value, next position) of `n` digits at `at`, after an optional `sep`.
    let field = |at: usize, sep: Option<u8>, n: usize| -> Option<(u32, usize)> {
        let at = if sep.is_some() && b.get(at) == sep.as_ref() {
            at + 1
        } else {
            at
        };
        digits(at, n).map(|v| (v, at + n))
    };
    for start in 0..b.len() {
        if start > 0 && b[start - 1].is_ascii_digit() {
            continue;
        }
        let Some(year) = digits(start, 4) else {
            continue;
        };
        let sep = (b.get(start + 4) == Some(&b'-')).then_some(b'-');
        let Some((month, at)) = field(start + 4, sep, 2) else {
            continue;
        };
        let Some((day, at)) = field(at, sep, 2) else {
            continue;
        };
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || b.get(at).is_some_and(u8::is_ascii_digit)
        {
            continue;
        }
        let date = format!("{year:04}-{month:02}-{day:02}");
        let time = matches!(b.get(at), Some(b'T' | b'_')).then(|| {
            let colon = (b.get(at + 3) == Some(&b':')).then_some(b':');
            let (h, next) = field(at + 1, None, 2)?;
            let (m, next) = field(next, colon, 2)?;
            let (s, _) = field(next, colon, 2)?;
            (h < 24 && m < 60 && s < 61).then(|| format!("T{h:02}:{m:02}:{s:02}"))
        });
        return Some(date + &time.flatten().unwrap_or_default());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_datetimes_in_names() {
        assert_eq!(
            datetime_in_name("/x/20210102-sst.tif").as_deref(),
            Some("2021-01-02")
        );
        assert_eq!(
            datetime_in_name("sst_2021-01-02T10:20:30.tif").as_deref(),
            Some("2021-01-02T10:20:30")
        );
        assert_eq!(
            datetime_in_name("S2_20210102_101530_x.tif").as_deref(),
            Some("2021-01-02T10:15:30")
        );
        assert_eq!(datetime_in_name("v3_123456789.tif"), None);
        assert_eq!(datetime_in_name("/2021-01-02/a.tif"), None);
    }

    #[test]
    fn parses_metadata_datetimes() {
        let cases = [
            ("2021:03:04 05:06:07", Some("2021-03-04T05:06:07")),
            ("2021-03-04T05:06:07Z", Some("2021-03-04T05:06:07Z")),
            (
                "2021-03-04T05:06:07.250+02:00",
                Some("2021-03-04T05:06:07.250+02:00"),
            ),
            ("2021/03/04 05:06:07", Some("2021-03-04T05:06:07")),
            ("20210304050607", Some("2021-03-04T05:06:07")),
            (" 2021-03-04 ", Some("2021-03-04")),
            ("2021-13-04", None),
            ("2021-03-04T25:00:00", None),
            ("2021-03:04", None),
            ("yesterday", None),
            ("2021-03-04T05:06:07 UTC", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text).as_deref(), want, "{text}");
        }
    }

    #[test]
    fn parses_nitf_idatim() {
        assert_eq!(
            nitf_idatim("20210304050607", false).as_deref(),
            Some("2021-03-04T05:06:07")
        );
        assert_eq!(
            nitf_idatim("20210304------", false).as_deref(),
            Some("2021-03-04")
        );
        assert_eq!(
            nitf_idatim("04050607ZMAR21", true).as_deref(),
            Some("2021-03-04T05:06:07")
        );
        assert_eq!(
            nitf_idatim("04050607ZMAR97", true).as_deref(),
            Some("1997-03-04T05:06:07")
        );
        assert_eq!(nitf_idatim("              ", false), None);
        // Bytes that are not ASCII are no date, and never split a character.
        assert_eq!(nitf_idatim("GRIB j\u{fffd}w j ", false), None);
        assert_eq!(nitf_idatim("0405060\u{fffd}MAR97", true), None);
    }
}
