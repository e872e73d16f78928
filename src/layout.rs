//! The osml-imagery-io index layout shared by the index builders
//! ([`crate::tiff`], [`crate::dted`]): a root group with GeoZarr
//! `multiscales`, level groups `0`, `1`, ... each holding array `data` with
//! axes (bands, y, x) and a format codec in `filters`.

use serde_json::{json, Map, Value};

use crate::tiff::geo;

/// Kerchunk `refs` being built.
pub type Refs = Map<String, Value>;

/// Stores the metadata document `doc` under `key` (as JSON text, the way
/// Kerchunk stores metadata).
pub fn put(refs: &mut Refs, key: String, doc: &Value) {
    refs.insert(key, Value::String(doc.to_string()));
}

/// Geometry and codec of one (bands, y, x) array.
pub struct ArrayDoc<'a> {
    /// Shape [bands, height, width].
    pub shape: [u64; 3],
    /// Chunk shape [bands, height, width].
    pub chunks: [u64; 3],
    /// Zarr v2 dtype, e.g. `<i2`.
    pub dtype: &'a str,
    /// `fill_value` (null for none).
    pub fill: &'a Value,
    /// The format codec's configuration, with its `id`.
    pub codec: &'a Value,
}

/// Writes `.zarray` and `.zattrs` of the array at `prefix`.
pub fn put_array(refs: &mut Refs, prefix: &str, a: &ArrayDoc<'_>) {
    let zarray = json!({
        "zarr_format": 2, "shape": a.shape, "chunks": a.chunks, "dtype": a.dtype,
        "fill_value": a.fill, "order": "C", "compressor": null, "filters": [a.codec],
        "dimension_separator": "."});
    put(refs, format!("{prefix}/.zarray"), &zarray);
    let zattrs = json!({"_ARRAY_DIMENSIONS": ["bands", "y", "x"]});
    put(refs, format!("{prefix}/.zattrs"), &zattrs);
}

/// Writes the group of level `level` (with its `proj:`/`spatial:` attributes
/// `geo_attrs`) and returns its `multiscales.layout` entry; `relative` is
/// the scale of its pixels relative to the previous level's.
pub fn put_level(
    refs: &mut Refs,
    level: usize,
    relative: [f64; 2],
    geo_attrs: Map<String, Value>,
) -> Value {
    let name = level.to_string();
    let mut entry =
        json!({"asset": name, "transform": {"scale": relative, "translation": [0.0, 0.0]}});
    if level > 0 {
        entry["derived_from"] = json!((level - 1).to_string());
    }
    for key in ["spatial:shape", "spatial:transform"] {
        if let Some(v) = geo_attrs.get(key) {
            entry[key] = v.clone();
        }
    }
    put(refs, format!("{name}/.zgroup"), &json!({"zarr_format": 2}));
    put(refs, format!("{name}/.zattrs"), &Value::Object(geo_attrs));
    entry
}

/// Writes the root group: `geo_attrs` of the full-resolution level,
/// `source`, `zarr_conventions` and the `multiscales` `layout`.
pub fn put_root(
    refs: &mut Refs,
    mut geo_attrs: Map<String, Value>,
    source: Value,
    layout: Vec<Value>,
) {
    let with_geo = geo_attrs
        .keys()
        .any(|k| k.starts_with("proj:") || k.starts_with("spatial:"));
    geo_attrs.insert("source".into(), source);
    geo_attrs.insert("zarr_conventions".into(), geo::conventions(with_geo));
    geo_attrs.insert("multiscales".into(), json!({"layout": layout}));
    put(refs, ".zgroup".into(), &json!({"zarr_format": 2}));
    put(refs, ".zattrs".into(), &Value::Object(geo_attrs));
}
