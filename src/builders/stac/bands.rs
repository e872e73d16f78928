//! The assets of one item on one grid joined as the bands of one index:
//! the first asset's bands, then the second's, ..., each band described by
//! its asset key and its STAC band fields (nodata, scale, offset, unit as
//! the driver's band attributes; every field as band metadata).

use serde_json::{json, Map, Value};

use super::item::Asset;
use crate::builders::writers::built::Built;
use crate::conventions::attributes::{
    BANDS_ATTRIBUTE, COLOR_ATTRIBUTE, METADATA_ITEMS_ATTRIBUTE, SOURCE_ATTRIBUTE,
};
use crate::index::split_key;

/// Band metadata item naming the asset a band comes from.
pub const ASSET_ITEM: &str = "STAC_ASSET";

/// The metadata of `built` as one text, without the root `source` and,
/// unless `band_lists`, without the arrays' per-band lists: assets of equal
/// signatures without band lists are on one grid and can be joined; steps
/// of equal signatures with them can be stacked.
pub fn signature(built: &Built, band_lists: bool) -> String {
    let mut docs = built.metadata.clone();
    for (key, doc) in docs.iter_mut() {
        let Some(attrs) = doc.as_object_mut() else {
            continue;
        };
        match split_key(key) {
            ("", ".zattrs") => {
                attrs.remove(SOURCE_ATTRIBUTE);
            }
            (_, ".zattrs") if !band_lists => {
                attrs.remove(COLOR_ATTRIBUTE);
                attrs.remove(BANDS_ATTRIBUTE);
            }
            _ => {}
        }
    }
    serde_json::to_string(&docs).unwrap_or_default()
}

/// Joins the indexes of `assets` (all with one [`signature`] without band
/// lists) as the bands of one index, in order.
pub fn join(assets: &[(&Asset, &Built)]) -> Result<Built, String> {
    let Some((_, first)) = assets.first() else {
        return Err("no asset to join".into());
    };
    let mut joined = Built {
        metadata: first.metadata.clone(),
        ..Built::default()
    };
    let paths: Vec<String> = first
        .metadata
        .keys()
        .filter_map(|k| match split_key(k) {
            (dir, ".zarray") => Some(dir.to_string()),
            _ => None,
        })
        .collect();
    for path in &paths {
        let zarray = &first.metadata[&format!("{path}/.zarray")];
        let dim = |field: &str| -> Option<u64> { zarray.get(field)?.as_array()?.first()?.as_u64() };
        let rank = zarray
            .get("shape")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let (Some(bands), Some(per_chunk), 3) = (dim("shape"), dim("chunks"), rank) else {
            return Err(format!("array '{path}' is not (bands, y, x)"));
        };
        if per_chunk == 0 || bands % per_chunk != 0 {
            return Err(format!(
                "array '{path}' has {bands} bands in chunks of {per_chunk}: its bands cannot be \
                 joined with another asset's"
            ));
        }
        let mut zarray = zarray.clone();
        zarray["shape"][0] = json!(bands * assets.len() as u64);
        joined.metadata.insert(format!("{path}/.zarray"), zarray);
        let mut colors = Vec::new();
        let mut described = Vec::new();
        let mut refs = Vec::new();
        for (k, (asset, built)) in assets.iter().enumerate() {
            let attrs = built.metadata.get(&format!("{path}/.zattrs"));
            let list = |name: &str| attrs.and_then(|a| a.get(name)?.as_array().cloned());
            colors.extend(list(COLOR_ATTRIBUTE).unwrap_or_default());
            let own = list(BANDS_ATTRIBUTE).unwrap_or_default();
            for b in 0..bands as usize {
                let mut entry = own
                    .get(b)
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                entry.extend(describe(asset, b, bands as usize));
                described.push(Value::Object(entry));
            }
            let shift = k as u64 * (bands / per_chunk);
            refs.extend(built.arrays.get(path).into_iter().flatten().map(|r| {
                let mut r = r.clone();
                r.index[0] += shift;
                r
            }));
        }
        let attrs = joined
            .metadata
            .entry(format!("{path}/.zattrs"))
            .or_insert_with(|| json!({}));
        if let Some(attrs) = attrs.as_object_mut() {
            if colors.len() == described.len() {
                attrs.insert(COLOR_ATTRIBUTE.into(), Value::Array(colors));
            }
            attrs.insert(BANDS_ATTRIBUTE.into(), Value::Array(described));
        }
        joined.arrays.insert(path.clone(), refs);
    }
    Ok(joined)
}

/// The band attributes of band `b` of `bands` of `asset`: its name
/// (`long_name`, the band's description), nodata, scale, offset and unit
/// from its STAC fields, and every field as band metadata.
fn describe(asset: &Asset, b: usize, bands: usize) -> Map<String, Value> {
    let stac = asset.bands.get(b).cloned().unwrap_or_default();
    let name = match (bands, stac.get("name").and_then(Value::as_str)) {
        (1, _) => asset.key.clone(),
        (_, Some(n)) => format!("{}:{n}", asset.key),
        (_, None) => format!("{}:{}", asset.key, b + 1),
    };
    let mut items = Map::new();
    items.insert(ASSET_ITEM.into(), json!(asset.key));
    for (k, v) in &stac {
        let text = match v {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        items.insert(k.clone(), Value::String(text));
    }
    let mut attrs = Map::new();
    attrs.insert("long_name".into(), json!(name));
    for (from, to) in [
        ("nodata", "_FillValue"),
        ("raster:scale", "scale_factor"),
        ("raster:offset", "add_offset"),
        ("unit", "units"),
    ] {
        if let Some(v) = stac.get(from).filter(|v| !v.is_null()) {
            attrs.insert(to.into(), v.clone());
        }
    }
    attrs.insert(METADATA_ITEMS_ATTRIBUTE.into(), Value::Object(items));
    attrs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::writers::built::Ref;

    fn built(url: &str) -> Built {
        let mut b = Built::default();
        b.metadata.insert(".zattrs".into(), json!({"source": url}));
        b.metadata.insert(
            "0/data/.zarray".into(),
            json!({"shape": [1, 4, 6], "chunks": [1, 2, 3], "dtype": "<u2", "fill_value": 0}),
        );
        b.metadata.insert(
            "0/data/.zattrs".into(),
            json!({"_ARRAY_DIMENSIONS": ["bands", "y", "x"], COLOR_ATTRIBUTE: ["Gray"]}),
        );
        b.arrays
            .insert("0/data".into(), vec![Ref::single([0, 1, 1], url, 10, 5)]);
        b
    }

    fn asset(key: &str, bands: Vec<Value>) -> Asset {
        Asset {
            key: key.into(),
            href: format!("/d/{key}.tif"),
            bands: bands
                .into_iter()
                .map(|b| b.as_object().cloned().unwrap())
                .collect(),
        }
    }

    #[test]
    fn assets_become_bands_in_order() {
        let (a, b) = (built("/d/red.tif"), built("/d/nir.tif"));
        assert_eq!(signature(&a, false), signature(&b, false));
        let red = asset("red", vec![json!({"nodata": 0, "eo:common_name": "red"})]);
        let nir = asset("nir", vec![json!({"raster:scale": 0.5})]);
        let j = join(&[(&red, &a), (&nir, &b)]).unwrap();
        assert_eq!(j.metadata["0/data/.zarray"]["shape"], json!([2, 4, 6]));
        let refs = &j.arrays["0/data"];
        assert_eq!((refs[1].index, &*refs[1].url), ([1, 1, 1], "/d/nir.tif"));
        let attrs = &j.metadata["0/data/.zattrs"];
        assert_eq!(attrs[COLOR_ATTRIBUTE], json!(["Gray", "Gray"]));
        let bands = &attrs[BANDS_ATTRIBUTE];
        assert_eq!(bands[0]["long_name"], json!("red"));
        assert_eq!(bands[0]["_FillValue"], json!(0));
        assert_eq!(
            bands[0][METADATA_ITEMS_ATTRIBUTE]["eo:common_name"],
            json!("red")
        );
        assert_eq!(bands[1]["scale_factor"], json!(0.5));
        assert_eq!(bands[1][METADATA_ITEMS_ATTRIBUTE][ASSET_ITEM], json!("nir"));
    }
}
