//! The RPCCoefficientTag (50844) as the items of GDAL's `RPC` metadata
//! domain, formatted as GDAL's GTiff driver formats them (`%.15g`,
//! coefficient lists separated by single spaces).

use serde_json::{Map, Value};

use crate::base::printf;
use crate::formats::tiff::ifd::Ifd;

/// RPCCoefficientTag.
pub const RPC_COEFFICIENTS: u16 = 50844;

/// The scalars of the tag, in its order.
const SCALARS: [&str; 12] = [
    "ERR_BIAS",
    "ERR_RAND",
    "LINE_OFF",
    "SAMP_OFF",
    "LAT_OFF",
    "LONG_OFF",
    "HEIGHT_OFF",
    "LINE_SCALE",
    "SAMP_SCALE",
    "LAT_SCALE",
    "LONG_SCALE",
    "HEIGHT_SCALE",
];

/// The four lists of 20 coefficients that follow them.
const LISTS: [&str; 4] = [
    "LINE_NUM_COEFF",
    "LINE_DEN_COEFF",
    "SAMP_NUM_COEFF",
    "SAMP_DEN_COEFF",
];

/// The `RPC` domain items of `ifd`'s RPCCoefficientTag, as a JSON object
/// of strings; None without the tag or when it does not hold the 92 values
/// GDAL requires.
pub fn attribute(ifd: &Ifd) -> Option<Value> {
    let values = ifd.floats(RPC_COEFFICIENTS)?;
    if values.len() != SCALARS.len() + 20 * LISTS.len() {
        return None;
    }
    let mut items = Map::new();
    for (name, &v) in SCALARS.iter().zip(&values) {
        items.insert((*name).into(), Value::String(printf::g(v, 15)));
    }
    for (name, list) in LISTS.iter().zip(values[SCALARS.len()..].chunks(20)) {
        let text: Vec<String> = list.iter().map(|&v| printf::g(v, 15)).collect();
        items.insert((*name).into(), Value::String(text.join(" ")));
    }
    Some(Value::Object(items))
}
