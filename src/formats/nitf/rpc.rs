//! Rational polynomial coefficients of the RPC00B extension (STDI-0002)
//! as the items of GDAL's `RPC` metadata domain, formatted as GDAL's NITF
//! driver formats them (`%.16g`, coefficient lists space-separated with a
//! trailing space, MIN/MAX_LONG/LAT from the offsets and scales as the
//! GDAL built against does: [`crate::base::gdal::compat::RPC_EXTENT_SCALES`]).

use crate::base::gdal::compat::RPC_EXTENT_SCALES;
use crate::base::printf;
use serde_json::{Map, Value};

/// Tag of the extension read.
const RPC00B: &[u8; 6] = b"RPC00B";
/// Width of each scalar field of RPC00B after SUCCESS, in order.
const SCALARS: [(&str, usize); 12] = [
    ("ERR_BIAS", 7),
    ("ERR_RAND", 7),
    ("LINE_OFF", 6),
    ("SAMP_OFF", 5),
    ("LAT_OFF", 8),
    ("LONG_OFF", 9),
    ("HEIGHT_OFF", 5),
    ("LINE_SCALE", 6),
    ("SAMP_SCALE", 5),
    ("LAT_SCALE", 8),
    ("LONG_SCALE", 9),
    ("HEIGHT_SCALE", 5),
];
/// The four coefficient lists, 20 fields of 12 characters each.
const COEFFICIENTS: [&str; 4] = [
    "LINE_NUM_COEFF",
    "LINE_DEN_COEFF",
    "SAMP_NUM_COEFF",
    "SAMP_DEN_COEFF",
];

/// The `RPC` domain items of the first RPC00B extension in `tres` (tag,
/// 5-digit length, data, ...), as a JSON object of strings; None when there
/// is none, it is malformed, or its SUCCESS flag is 0 (GDAL shows none).
pub fn attribute(tres: &[u8]) -> Option<Value> {
    let data = super::tre::find(tres, RPC00B)?;
    if data.first() != Some(&b'1') {
        return None;
    }
    let mut at = 1;
    let mut field = |len: usize| -> Option<f64> {
        let text = std::str::from_utf8(data.get(at..at + len)?).ok()?;
        at += len;
        text.trim().parse().ok()
    };
    let mut items = Map::new();
    let mut scalars = std::collections::HashMap::new();
    for (name, len) in SCALARS {
        let v = field(len)?;
        scalars.insert(name, v);
        items.insert(name.into(), Value::String(printf::g(v, 16)));
    }
    for name in COEFFICIENTS {
        let mut list = String::new();
        for _ in 0..20 {
            list.push_str(&printf::g(field(12)?, 16));
            list.push(' ');
        }
        items.insert(name.into(), Value::String(list));
    }
    for (min, max, off, scale) in [
        ("MIN_LONG", "MAX_LONG", "LONG_OFF", "LONG_SCALE"),
        ("MIN_LAT", "MAX_LAT", "LAT_OFF", "LAT_SCALE"),
    ] {
        let (o, s) = (scalars[off], scalars[scale] * RPC_EXTENT_SCALES);
        items.insert(min.into(), Value::String(printf::g(o - s, 16)));
        items.insert(max.into(), Value::String(printf::g(o + s, 16)));
    }
    Some(Value::Object(items))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tre() -> Vec<u8> {
        let mut data =
            b"10000.500000.2500010000150+45.1230+010.4560+025000010000150+00.0500+000.0700+0500"
                .to_vec();
        for i in 0..80 {
            data.extend(format!("+{}.000000E-{}", i % 9 + 1, i % 7 + 1).as_bytes());
        }
        let mut out = b"OTHER 00003abc".to_vec();
        out.extend(format!("RPC00B{:05}", data.len()).as_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn reads_rpc00b() {
        let v = attribute(&tre()).unwrap();
        assert_eq!(v["LINE_OFF"], "100");
        assert_eq!(v["LONG_SCALE"], "0.07000000000000001");
        assert_eq!(
            v["MIN_LAT"],
            printf::g(45.123 - 0.05 * RPC_EXTENT_SCALES, 16)
        );
        let coeffs = v["LINE_NUM_COEFF"].as_str().unwrap();
        assert!(coeffs.starts_with("0.1 0.02 0.003 "), "{coeffs}");
        assert_eq!(coeffs.split(' ').count(), 21);
    }

    #[test]
    fn unsuccessful_or_cut_short_gives_none() {
        let mut t = tre();
        let at = t.len() - 1041;
        t[at] = b'0';
        assert!(attribute(&t).is_none());
        let t = tre();
        assert!(attribute(&t[..t.len() - 5]).is_none());
        assert!(attribute(b"RPC00A00001x").is_none());
    }
}
