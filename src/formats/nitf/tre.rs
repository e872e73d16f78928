//! Tagged record extensions (TREs) of an image subheader: finding one by
//! tag, and the two that carry image corners more precisely than IGEOLO,
//! read as GDAL's NITF driver reads them (nitfimage.c: NITFReadBLOCKA_GCPs,
//! NITFGetGCP, NITFReadGEOLOB).
//!
//! - BLOCKA (STDI-0002 appendix O), when its first instance covers every
//!   row of the image and names all four corners: WGS 84 degrees of the
//!   pixel centres, to 6 decimals or hundredths of arc seconds.
//! - GEOLOB (STDI-0002 appendix P, GeoSDE): an origin and the number of
//!   pixels per 360 degrees of longitude and latitude, corners at pixel
//!   edges.

/// The data of the first extension tagged `tag` in `tres` (tag, 5-digit
/// length, data, ...); None when there is none or a length before it is
/// not a number or runs past the end.
pub(crate) fn find<'a>(mut tres: &'a [u8], tag: &[u8; 6]) -> Option<&'a [u8]> {
    while tres.len() >= 11 {
        let len: usize = std::str::from_utf8(&tres[6..11])
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let data = tres.get(11..11 + len)?;
        if &tres[..6] == tag {
            return Some(data);
        }
        tres = &tres[11 + len..];
    }
    None
}

/// A point (x = longitude, y = latitude) in degrees.
pub(crate) type Point = (f64, f64);

/// Length of a BLOCKA extension.
const BLOCKA_LEN: usize = 123;
/// Length of a GEOLOB extension.
const GEOLOB_LEN: usize = 48;
/// Where BLOCKA's FRLC, LRLC, LRFC and FRFC locations start (21 characters
/// each): first row last column, last row last column, last row first
/// column, first row first column.
const BLOCKA_CORNERS: [usize; 4] = [34, 55, 76, 97];

/// The corners (first row first column, first row last column, last row
/// last column, last row first column: IGEOLO's order) of the pixel
/// centres of an image of `rows` rows, from the first BLOCKA extension in
/// `tres`; None when there is none, its length is not 123, a location is
/// blank or L_LINES is not `rows` (GDAL uses it only then).
pub(crate) fn blocka_corners(tres: &[u8], rows: u64) -> Option<[Point; 4]> {
    let data = find(tres, b"BLOCKA").filter(|d| d.len() == BLOCKA_LEN)?;
    if BLOCKA_CORNERS.iter().any(|&at| data[at] == b' ') {
        return None;
    }
    if u64::try_from(atoi(&data[7..12])) != Ok(rows) {
        return None;
    }
    let [frlc, lrlc, lrfc, frfc] = BLOCKA_CORNERS.map(|at| location(&data[at..at + 21]));
    Some([frfc, frlc, lrlc, lrfc])
}

/// A BLOCKA location: `Xddmmss.ssYdddmmss.ss` (X = N or S, Y = E or W) or
/// `±dd.dddddd±ddd.dddddd`, as GDAL reads it.
fn location(text: &[u8]) -> Point {
    let field = |r: std::ops::Range<usize>| atof(&text[r]);
    if matches!(text[0].to_ascii_uppercase(), b'N' | b'S') {
        let mut lat = field(1..3) + field(3..5) / 60.0 + field(5..10) / 3600.0;
        if text[0].eq_ignore_ascii_case(&b'S') {
            lat = -lat;
        }
        let mut lon = field(11..14) + field(14..16) / 60.0 + field(16..21) / 3600.0;
        if text[10].eq_ignore_ascii_case(&b'W') {
            lon = -lon;
        }
        (lon, lat)
    } else {
        (field(10..21), field(0..10))
    }
}

/// The corners, in IGEOLO's order, of the pixel edges of an image of
/// `rows` x `cols` pixels from its GEOLOB extension; None when there is
/// none, its length is not 48, or a pixel count per 360 degrees is 0.
pub(crate) fn geolob_corners(tres: &[u8], rows: u64, cols: u64) -> Option<[Point; 4]> {
    let data = find(tres, b"GEOLOB").filter(|d| d.len() == GEOLOB_LEN)?;
    let (arv, brv) = (atoi(&data[0..9]), atoi(&data[9..18]));
    if arv == 0 || brv == 0 {
        return None;
    }
    let (lso, pso) = (atof(&data[18..33]), atof(&data[33..48]));
    let right = lso + cols as f64 * (360.0 / arv as f64);
    let bottom = pso - rows as f64 * (360.0 / brv as f64);
    Some([(lso, pso), (right, pso), (right, bottom), (lso, bottom)])
}

/// C's `atof`: the longest leading number after blanks, 0 when there is
/// none.
fn atof(text: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(text);
    let text = text.trim_start();
    (1..=text.len())
        .rev()
        .filter(|&end| text.is_char_boundary(end))
        .find_map(|end| text[..end].parse::<f64>().ok())
        .unwrap_or(0.0)
}

/// C's `atoi`: the leading integer after blanks, 0 when there is none.
fn atoi(text: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(text);
    let text = text.trim_start();
    let sign = usize::from(text.starts_with(['+', '-']));
    let digits = text[sign..].bytes().take_while(u8::is_ascii_digit).count();
    text[..sign + digits].parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tre(tag: &str, data: &str) -> Vec<u8> {
        format!("OTHER 00003abc{tag}{:05}{data}", data.len()).into_bytes()
    }

    fn blocka(lines: &str, corners: [&str; 4]) -> String {
        let s = format!("0100000{lines}{}{}010.0", " ".repeat(22), corners.concat());
        assert_eq!(s.len(), BLOCKA_LEN);
        s
    }

    #[test]
    fn finds_the_first_extension_of_a_tag() {
        let t = tre("RPC00B", "xyz");
        assert_eq!(find(&t, b"RPC00B"), Some(&b"xyz"[..]));
        assert_eq!(find(&t, b"BLOCKA"), None);
        assert_eq!(find(b"RPC00B0000", b"RPC00B"), None);
        assert_eq!(find(b"RPC00B00009ab", b"RPC00B"), None);
    }

    #[test]
    fn blocka_corners_in_igeolo_order() {
        let data = blocka(
            "00050",
            [
                "+45.995000+010.995000",
                "+45.505000+010.995000",
                "+45.505000+010.005000",
                "N455942.00E0100018.00",
            ],
        );
        let c = blocka_corners(&tre("BLOCKA", &data), 50).unwrap();
        assert_eq!(c[1], (10.995, 45.995));
        assert_eq!(c[2], (10.995, 45.505));
        assert_eq!(c[3], (10.005, 45.505));
        assert!((c[0].0 - (10.0 + 18.0 / 3600.0)).abs() < 1e-12);
        assert!((c[0].1 - (45.0 + 59.0 / 60.0 + 42.0 / 3600.0)).abs() < 1e-12);
        // Other rows, a blank corner, another length: not used.
        assert!(blocka_corners(&tre("BLOCKA", &data), 49).is_none());
        let blank = data.replacen("+45.505000+010.005000", &" ".repeat(21), 1);
        assert!(blocka_corners(&tre("BLOCKA", &blank), 50).is_none());
        assert!(blocka_corners(&tre("BLOCKA", &data[1..]), 50).is_none());
    }

    #[test]
    fn south_west_dms_locations() {
        assert_eq!(location(b"S103000.00W0203000.00"), (-20.5, -10.5));
    }

    #[test]
    fn geolob_corners_at_pixel_edges() {
        let t = tre("GEOLOB", "000036000000072000-010.0000000000+046.0000000000");
        let c = geolob_corners(&t, 50, 100).unwrap();
        assert_eq!(
            c,
            [(-10.0, 46.0), (-9.0, 46.0), (-9.0, 45.75), (-10.0, 45.75)]
        );
        let zero = tre("GEOLOB", "000000000000072000-010.0000000000+046.0000000000");
        assert!(geolob_corners(&zero, 50, 100).is_none());
    }

    #[test]
    fn c_number_parsing() {
        assert_eq!(atof(b" +12.5xyz"), 12.5);
        assert_eq!(atof(b"abc"), 0.0);
        assert_eq!(atoi(b" 00123 "), 123);
        assert_eq!(atoi(b"-7x"), -7);
        assert_eq!(atoi(b""), 0);
    }
}
