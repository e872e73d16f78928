//! MGRS grid references (`zzBJKeeeeennnnn`, ICORDS U) as WGS 84 UTM
//! coordinates, the way the GeoTrans code GDAL's NITF driver carries
//! converts them: the 100 km square letters of the zone's set (the "AA"
//! lettering of WGS 84), the northing cycle of 2000 km resolved with the
//! latitude band's minimum northing.

/// 100 km.
const ONE_HUNDRED_KM: f64 = 100_000.0;
/// The row letters repeat every 2000 km.
const TWO_THOUSAND_KM: f64 = 2_000_000.0;

/// Minimum northing (m) of the latitude bands C to X (I and O skipped).
const BAND_MIN_NORTHING: [(char, f64); 20] = [
    ('C', 1_100_000.0),
    ('D', 2_000_000.0),
    ('E', 2_800_000.0),
    ('F', 3_700_000.0),
    ('G', 4_600_000.0),
    ('H', 5_500_000.0),
    ('J', 6_400_000.0),
    ('K', 7_300_000.0),
    ('L', 8_200_000.0),
    ('M', 9_100_000.0),
    ('N', 0.0),
    ('P', 800_000.0),
    ('Q', 1_700_000.0),
    ('R', 2_600_000.0),
    ('S', 3_500_000.0),
    ('T', 4_400_000.0),
    ('U', 5_300_000.0),
    ('V', 6_200_000.0),
    ('W', 7_000_000.0),
    ('X', 7_900_000.0),
];

/// A UTM position: zone, northern hemisphere, easting, northing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Utm {
    /// Zone, 1 to 60.
    pub zone: u32,
    /// True north of the equator (bands N to X).
    pub north: bool,
    /// Easting (m).
    pub easting: f64,
    /// Northing (m).
    pub northing: f64,
}

/// Converts a 15-character MGRS reference with 1 m precision.
pub fn to_utm(text: &str) -> Option<Utm> {
    let b = text.as_bytes();
    if b.len() != 15 || !text.is_ascii() {
        return None;
    }
    let zone: u32 = text[0..2].parse().ok().filter(|z| (1..=60).contains(z))?;
    let upper = |i: usize| b[i].to_ascii_uppercase() as char;
    let (band, column, row) = (upper(2), upper(3), upper(4));
    let min_northing = BAND_MIN_NORTHING.iter().find(|(c, _)| *c == band)?.1;
    let easting: f64 = text[5..10].parse().ok()?;
    let northing: f64 = text[10..15].parse().ok()?;
    // Letters counted from A over the whole alphabet, as GeoTrans does.
    let index = |c: char| f64::from(c as u8 - b'A');
    let set = match zone % 6 {
        0 => 6,
        s => s,
    };
    let (first_column, last_column) = match set {
        1 | 4 => ('A', 'H'),
        2 | 5 => ('J', 'R'),
        _ => ('S', 'Z'),
    };
    // Even sets start their rows 500 km later (F at the equator).
    let false_northing = if set % 2 == 0 { 1_500_000.0 } else { 0.0 };
    if !(first_column..=last_column).contains(&column)
        || !('A'..='V').contains(&row)
        || matches!(column, 'I' | 'O')
        || matches!(row, 'I' | 'O')
    {
        return None;
    }
    let mut grid_easting = (index(column) - index(first_column) + 1.0) * ONE_HUNDRED_KM;
    if first_column == 'J' && column > 'O' {
        grid_easting -= ONE_HUNDRED_KM;
    }
    let mut grid_northing = index(row) * ONE_HUNDRED_KM + false_northing;
    if row > 'O' {
        grid_northing -= ONE_HUNDRED_KM;
    }
    if row > 'I' {
        grid_northing -= ONE_HUNDRED_KM;
    }
    if grid_northing >= TWO_THOUSAND_KM {
        grid_northing -= TWO_THOUSAND_KM;
    }
    let scaled_min = min_northing % TWO_THOUSAND_KM;
    grid_northing -= scaled_min;
    if grid_northing < 0.0 {
        grid_northing += TWO_THOUSAND_KM;
    }
    Some(Utm {
        zone,
        north: band >= 'N',
        easting: grid_easting + easting,
        northing: min_northing + grid_northing + northing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn northern_and_southern_references() {
        // 33T WK: zone 33 (set 3, columns from S), 500 km E, 4900 km N.
        let u = to_utm("33TWK0000599995").unwrap();
        assert_eq!((u.zone, u.north), (33, true));
        assert_eq!((u.easting, u.northing), (500_005.0, 4_999_995.0));
        // 18S UJ: zone 18 (set 6, rows offset by 500 km), around 38.9N 77W.
        let u = to_utm("18SUJ2348306479").unwrap();
        assert_eq!((u.easting, u.northing), (323_483.0, 4_306_479.0));
        // 56H LH: Sydney, southern hemisphere.
        let u = to_utm("56HLH1234567890").unwrap();
        assert_eq!((u.zone, u.north), (56, false));
        assert_eq!((u.easting, u.northing), (312_345.0, 6_267_890.0));
    }

    #[test]
    fn malformed_references() {
        for bad in [
            "33TWK00005",
            "61TWK0000599995",
            "33IWK0000599995",
            "33TAK0000599995",
            "33TWW0000599995",
            "33TWK00005999x5",
        ] {
            assert!(to_utm(bad).is_none(), "{bad}");
        }
    }
}
