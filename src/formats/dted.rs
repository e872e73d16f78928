//! DTED headers (MIL-PRF-89020B): the 80-byte User Header Label (UHL), the
//! 648-byte Data Set Identification (DSI) and the 2700-byte Accuracy (ACC)
//! records, which precede the data records. Optional 80-byte `VOL` / `HDR`
//! tape labels before the UHL are skipped, as GDAL does.

use crate::base::error::Result;
use crate::io::source::Source;

/// Size of the UHL record (and of a `VOL` / `HDR` label).
pub const UHL_SIZE: u64 = 80;
/// Size of the DSI record.
pub const DSI_SIZE: u64 = 648;
/// Size of the ACC record.
pub const ACC_SIZE: u64 = 2700;
/// Bytes of a data record around its posts: sentinel, block count,
/// longitude and latitude counts (8) and the checksum (4).
pub const RECORD_OVERHEAD: u64 = 12;
/// First byte of every data record.
pub const RECORD_SENTINEL: u8 = 0xAA;
/// Most `VOL` / `HDR` labels skipped before the UHL.
const MAX_LABELS: u64 = 8;
/// Largest post or line count the format can write (4 decimal digits).
const MAX_COUNT: u64 = 9999;

/// What the headers of one DTED cell say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Longitude of the south-west post, in tenths of an arc second (east positive).
    pub lon_origin: i64,
    /// Latitude of the south-west post, in tenths of an arc second (north positive).
    pub lat_origin: i64,
    /// Spacing of longitude lines (columns), tenths of an arc second.
    pub lon_interval: u64,
    /// Spacing of posts along a line (rows), tenths of an arc second.
    pub lat_interval: u64,
    /// Longitude lines: one data record each (columns).
    pub num_lon_lines: u64,
    /// Posts per longitude line (rows).
    pub num_lat_points: u64,
    /// DTED level from the DSI series designator (`DTED0`, `DTED1`, `DTED2`),
    /// or `None` when the DSI does not say.
    pub level: Option<u8>,
    /// EPSG code of the horizontal datum (DSI bytes 145-149: `WGS72` is
    /// EPSG:4322, anything else WGS 84, EPSG:4326, as GDAL reads it).
    pub epsg: u32,
    /// Offset of the first data record.
    pub data_offset: u64,
}

impl Header {
    /// Bytes of one data record.
    pub fn record_size(&self) -> u64 {
        RECORD_OVERHEAD + 2 * self.num_lat_points
    }

    /// Bytes of the data section (every record).
    pub fn data_len(&self) -> u64 {
        self.num_lon_lines * self.record_size()
    }

    /// GDAL's geotransform of the cell: posts are points, so the origin is
    /// the north-west post shifted by half an interval (computed as GDAL's
    /// DTED driver does, degrees + minutes / 60 + seconds / 3600).
    pub fn geotransform(&self) -> [f64; 6] {
        let px = self.lon_interval as f64 / 36000.0;
        let py = self.lat_interval as f64 / 36000.0;
        let ulx = degrees(self.lon_origin) - 0.5 * px;
        let uly = degrees(self.lat_origin) - 0.5 * py + self.num_lat_points as f64 * py;
        [ulx, px, 0.0, uly, 0.0, -py]
    }

    /// A one-line description for messages.
    pub fn describe(&self) -> String {
        let level = self
            .level
            .map_or_else(|| "level ?".to_string(), |l| format!("level {l}"));
        format!(
            "{level}, {} x {} posts, intervals {}\" (lat) x {}\" (lon)",
            self.num_lon_lines,
            self.num_lat_points,
            self.lat_interval as f64 / 10.0,
            self.lon_interval as f64 / 10.0
        )
    }
}

/// Degrees of an angle in tenths of an arc second, as GDAL sums them.
fn degrees(tenths: i64) -> f64 {
    let a = tenths.unsigned_abs() / 10;
    let v = (a / 3600) as f64 + ((a / 60) % 60) as f64 / 60.0 + (a % 60) as f64 / 3600.0;
    if tenths < 0 {
        -v
    } else {
        v
    }
}

/// Reads and checks the headers of `src`, and that the file holds every data
/// record they announce.
pub fn read(src: &Source) -> Result<Header> {
    let mut offset = 0;
    let uhl = loop {
        let record = src.read(offset, UHL_SIZE).map_err(|_| {
            src.malformed(format!(
                "file of {} bytes is shorter than the DTED headers",
                src.len()
            ))
        })?;
        if (record.starts_with(b"VOL") || record.starts_with(b"HDR"))
            && offset < MAX_LABELS * UHL_SIZE
        {
            offset += UHL_SIZE;
            continue;
        }
        break record;
    };
    if !uhl.starts_with(b"UHL") {
        return Err(src.malformed(format!("no UHL record at offset {offset}")));
    }
    if uhl[4] == b' ' {
        return Err(crate::Error::unsupported(format!(
            "{}: DTED with a non-standard UHL layout (blank at byte 5)",
            src.path()
        )));
    }
    let dsi_offset = offset + UHL_SIZE;
    let acc_offset = dsi_offset + DSI_SIZE;
    let data_offset = acc_offset + ACC_SIZE;
    let dsi = src.read(dsi_offset, DSI_SIZE).map_err(|_| {
        src.malformed(format!(
            "file of {} bytes ends inside the DSI record at offset {dsi_offset}",
            src.len()
        ))
    })?;
    let acc = src.read(acc_offset, 3).map_err(|_| {
        src.malformed(format!(
            "file of {} bytes ends before the ACC record at offset {acc_offset}",
            src.len()
        ))
    })?;
    if !dsi.starts_with(b"DSI") || acc != b"ACC" {
        return Err(src.malformed(format!(
            "DSI record at offset {dsi_offset} or ACC record at offset {acc_offset} is missing"
        )));
    }
    let header = parse_uhl(&uhl, &dsi, data_offset).map_err(|e| src.malformed(e))?;
    let end = data_offset + header.data_len();
    if src.len() < end {
        return Err(src.malformed(format!(
            "truncated: {} data records of {} bytes need bytes {data_offset}..{end}, \
             the file has {} bytes",
            header.num_lon_lines,
            header.record_size(),
            src.len()
        )));
    }
    let first = src.read(data_offset, 1)?;
    if first[0] != RECORD_SENTINEL {
        return Err(src.malformed(format!(
            "data record 0 at offset {data_offset} starts with 0x{:02X}, not the sentinel 0xAA",
            first[0]
        )));
    }
    Ok(header)
}

/// Parses the UHL fields (1-based columns of the specification in comments).
fn parse_uhl(uhl: &[u8], dsi: &[u8], data_offset: u64) -> Result<Header, String> {
    let field = |start: usize, len: usize| -> &[u8] { &uhl[start - 1..start - 1 + len] };
    let number = |start: usize, len: usize, what: &str| -> Result<u64, String> {
        let text = std::str::from_utf8(field(start, len)).unwrap_or("?");
        text.trim().parse::<u64>().map_err(|_| {
            format!(
                "UHL {what} (bytes {start}-{}) is '{text}', not a number",
                start + len - 1
            )
        })
    };
    // 5-12 longitude of origin, 13-20 latitude of origin: DDDMMSSH.
    let (mut lon, lon_hemi) =
        angle(field(5, 8)).map_err(|e| format!("UHL longitude of origin: {e}"))?;
    let (mut lat, lat_hemi) =
        angle(field(13, 8)).map_err(|e| format!("UHL latitude of origin: {e}"))?;
    // MIL-D-89020 before Amendment 1 swapped the two; GDAL detects it by the
    // hemisphere letters.
    let swapped = matches!(lon_hemi, b'N' | b'S');
    if swapped {
        std::mem::swap(&mut lon, &mut lat);
    }
    let (lon_hemi, lat_hemi) = if swapped {
        (lat_hemi, lon_hemi)
    } else {
        (lon_hemi, lat_hemi)
    };
    if lon_hemi == b'W' {
        lon = -lon;
    }
    if lat_hemi == b'S' {
        lat = -lat;
    }
    let lon_interval = number(21, 4, "longitude interval")?;
    let lat_interval = number(25, 4, "latitude interval")?;
    let num_lon_lines = number(48, 4, "number of longitude lines")?;
    let num_lat_points = number(52, 4, "number of latitude points")?;
    if lon_interval == 0 || lat_interval == 0 {
        return Err(format!("UHL intervals {lat_interval} x {lon_interval} (tenths of arc seconds) must be positive"));
    }
    if !(2..=MAX_COUNT).contains(&num_lon_lines) || !(2..=MAX_COUNT).contains(&num_lat_points) {
        return Err(format!(
            "UHL announces {num_lon_lines} longitude lines of {num_lat_points} posts; each must be 2 to {MAX_COUNT}"
        ));
    }
    // DSI bytes 60-64: series designator, "DTED0" .. "DTED2".
    let level = dsi
        .get(59..64)
        .filter(|s| s.starts_with(b"DTED"))
        .and_then(|s| (s[4] as char).to_digit(10))
        .map(|d| d as u8);
    let epsg = if dsi.get(144..149) == Some(b"WGS72") {
        4322
    } else {
        4326
    };
    Ok(Header {
        lon_origin: lon,
        lat_origin: lat,
        lon_interval,
        lat_interval,
        num_lon_lines,
        num_lat_points,
        level,
        epsg,
        data_offset,
    })
}

/// `DDDMMSSH` -> (tenths of an arc second, hemisphere letter).
///
/// Some producers write a latitude with two degree digits, `DDMMSSH` and a
/// trailing blank (`380000N `). GDAL 3.6 reads that field by fixed columns
/// as 380 degrees; it is read here as the 38 degrees it says
/// (docs/real-files.md, DTED).
fn angle(text: &[u8]) -> Result<(i64, u8), String> {
    let show = String::from_utf8_lossy(text).into_owned();
    let short_form = text[7] == b' ' && matches!(text[6], b'N' | b'S' | b'E' | b'W');
    let (text, hemisphere) = if short_form {
        (&[b"0", &text[..6]].concat()[..], text[6])
    } else {
        (text, text[7])
    };
    let digits = |r: std::ops::Range<usize>| -> Result<i64, String> {
        std::str::from_utf8(&text[r])
            .ok()
            .map(str::trim)
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(|| format!("'{show}' is not DDDMMSSH"))
    };
    let (d, m, s) = (digits(0..3)?, digits(3..5)?, digits(5..7)?);
    if m >= 60 || s >= 60 || d > 180 {
        return Err(format!("'{show}' is out of range"));
    }
    Ok(((d * 3600 + m * 60 + s) * 10, hemisphere))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A UHL + DSI + ACC header block for a cell with the given origin
    /// (`DDDMMSSH`), intervals (tenths of seconds), counts and level.
    fn headers(
        lon: &str,
        lat: &str,
        intervals: (u64, u64),
        counts: (u64, u64),
        level: u8,
    ) -> Vec<u8> {
        let mut uhl = format!(
            "UHL1{lon}{lat}{:04}{:04}NA  U  {:12}{:04}{:04}0",
            intervals.0, intervals.1, "", counts.0, counts.1
        )
        .into_bytes();
        uhl.resize(UHL_SIZE as usize, b' ');
        let mut dsi = b"DSIU".to_vec();
        dsi.resize(DSI_SIZE as usize, b' ');
        dsi[59..64].copy_from_slice(format!("DTED{level}").as_bytes());
        let mut acc = b"ACC".to_vec();
        acc.resize(ACC_SIZE as usize, b' ');
        [uhl, dsi, acc].concat()
    }

    fn read_bytes(name: &str, bytes: &[u8]) -> Result<Header> {
        let path =
            std::env::temp_dir().join(format!("chunkref-dted-{}-{name}.dt1", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        let h = read(&Source::open(path.to_str().unwrap(), "DTED")?);
        std::fs::remove_file(&path).unwrap();
        h
    }

    fn with_data(mut bytes: Vec<u8>, records: usize, record_size: usize) -> Vec<u8> {
        for _ in 0..records {
            let mut r = vec![0; record_size];
            r[0] = RECORD_SENTINEL;
            bytes.extend(r);
        }
        bytes
    }

    #[test]
    fn parses_level_1_zone_2_cell() {
        let bytes = with_data(
            headers("0150000E", "0600000N", (60, 30), (601, 1201), 1),
            601,
            2414,
        );
        let h = read_bytes("zone2", &bytes).unwrap();
        assert_eq!(
            (h.lon_origin, h.lat_origin, h.lon_interval, h.lat_interval),
            (15 * 36000, 60 * 36000, 60, 30)
        );
        assert_eq!(
            (h.num_lon_lines, h.num_lat_points, h.level),
            (601, 1201, Some(1))
        );
        assert_eq!((h.record_size(), h.data_offset), (2414, 3428));
        let gt = h.geotransform();
        assert!((gt[0] - (15.0 - 30.0 / 36000.0)).abs() < 1e-12, "{gt:?}");
        assert!((gt[3] - (61.0 + 15.0 / 36000.0)).abs() < 1e-12, "{gt:?}");
        assert!((gt[1] - 60.0 / 36000.0).abs() < 1e-15 && gt[5] == -30.0 / 36000.0);
    }

    #[test]
    fn west_south_and_swapped_origins() {
        let bytes = with_data(
            headers("0753030W", "0120000S", (300, 300), (121, 121), 0),
            121,
            254,
        );
        let h = read_bytes("ws", &bytes).unwrap();
        assert_eq!(h.lon_origin, -(75 * 3600 + 30 * 60 + 30) * 10);
        assert_eq!(h.lat_origin, -12 * 36000);
        // Latitude written first (pre-Amendment 1 files): detected by the letters.
        let bytes = with_data(
            headers("0450000N", "0150000E", (300, 300), (121, 121), 0),
            121,
            254,
        );
        let h = read_bytes("swap", &bytes).unwrap();
        assert_eq!((h.lon_origin, h.lat_origin), (15 * 36000, 45 * 36000));
    }

    #[test]
    fn latitude_with_two_degree_digits_and_a_blank() {
        let bytes = with_data(
            headers("0770000W", "380000N ", (300, 300), (121, 121), 0),
            121,
            254,
        );
        let h = read_bytes("short", &bytes).unwrap();
        assert_eq!((h.lon_origin, h.lat_origin), (-77 * 36000, 38 * 36000));
        // The short form's digits are still checked.
        let err = angle(b"38x000N ").unwrap_err();
        assert!(err.contains("not DDDMMSSH"), "{err}");
    }

    #[test]
    fn skips_tape_labels() {
        let mut bytes = vec![b' '; 80];
        bytes[..3].copy_from_slice(b"HDR");
        bytes.extend(headers("0150000E", "0450000N", (300, 300), (121, 121), 0));
        let h = read_bytes("hdr", &with_data(bytes, 121, 254)).unwrap();
        assert_eq!(h.data_offset, 3508);
    }

    #[test]
    fn refuses_truncated_and_foreign_files() {
        let full = with_data(
            headers("0150000E", "0450000N", (300, 300), (121, 121), 0),
            121,
            254,
        );
        let err = read_bytes("trunc", &full[..full.len() - 10])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("truncated") && err.contains("121 data records of 254 bytes"),
            "{err}"
        );
        let err = read_bytes("short", &full[..500]).unwrap_err().to_string();
        assert!(err.contains("DSI"), "{err}");
        let err = read_bytes("gif", &[b'G'; 4000]).unwrap_err().to_string();
        assert!(err.contains("no UHL record"), "{err}");
        let mut bad = full.clone();
        bad[20..24].copy_from_slice(b"03x0");
        let err = read_bytes("num", &bad).unwrap_err().to_string();
        assert!(
            err.contains("longitude interval") && err.contains("03x0"),
            "{err}"
        );
        let mut bad = full;
        bad[3428] = 0;
        let err = read_bytes("sentinel", &bad).unwrap_err().to_string();
        assert!(err.contains("sentinel"), "{err}");
    }
}
