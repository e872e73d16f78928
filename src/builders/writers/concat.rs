//! Several files' Kerchunk stores made one, concatenated along one
//! dimension (as kerchunk's `MultiZarrToZarr` does for NetCDF4 archives of
//! one file per day): `chunkref index a.nc b.nc ... -o all.json`.
//!
//! Every file must hold the same arrays with the same metadata. An array
//! with the dimension grows along it: its chunk keys move by the chunks of
//! the files before, so every file but the last must fill whole chunks
//! along it, except a 1-D array (the dimension's coordinate variable,
//! such as `time`, often one partial chunk per file), whose values are
//! read, joined and written inline, uncompressed, as MultiZarrToZarr does.
//! An array without the dimension (coordinates such as lat / lon, grid
//! mappings) is taken from the first file. Group documents are the first
//! file's.

use serde_json::{Map, Value};

use crate::base::error::{Error, Result};

/// One file's store: its name (for messages) and its Kerchunk JSON v1
/// document.
pub type Store = (String, Value);

/// Reads the whole of array `path` of store `i` (its decoded bytes, in its
/// dtype's byte order).
pub type ReadArray<'a> = dyn Fn(usize, &str) -> Result<Vec<u8>> + 'a;

/// Largest 1-D array joined by value (its bytes written inline).
const MAX_INLINE_BYTES: u64 = 16 << 20;

/// The stores concatenated along `dim` (`None`: the first dimension of the
/// first array of two or more dimensions); `read` gives the values of 1-D
/// arrays along `dim` that do not fill whole chunks.
pub fn concat(stores: &[Store], dim: Option<&str>, read: &ReadArray<'_>) -> Result<Value> {
    let bad = |source: &str, reason: String| Error::MalformedSource {
        path: source.to_string(),
        reason,
    };
    let Some((first_name, first)) = stores.first() else {
        return Err(Error::Usage {
            what: "no store to concatenate".into(),
        });
    };
    let refs = |(name, doc): &Store| -> Result<Map<String, Value>> {
        doc.get("refs")
            .and_then(Value::as_object)
            .cloned()
            .ok_or_else(|| bad(name, "no 'refs' in its index".into()))
    };
    let all: Vec<Map<String, Value>> = stores.iter().map(refs).collect::<Result<_>>()?;
    let arrays = arrays_of(first_name, &all[0])?;
    let dim = match dim {
        Some(d) => d.to_string(),
        None => arrays
            .iter()
            .find(|a| a.dims.len() >= 2)
            .map(|a| a.dims[0].clone())
            .ok_or_else(|| bad(first_name, "no array of two or more dimensions".into()))?,
    };
    for ((name, _), refs) in stores.iter().zip(&all).skip(1) {
        let theirs = arrays_of(name, refs)?;
        let paths = |list: &[Array]| list.iter().map(|a| a.path.clone()).collect::<Vec<_>>();
        if paths(&theirs) != paths(&arrays) {
            return Err(bad(
                name,
                format!(
                    "its arrays {:?} are not {first_name}'s {:?}",
                    paths(&theirs),
                    paths(&arrays)
                ),
            ));
        }
    }
    if !arrays.iter().any(|a| a.dims.contains(&dim)) {
        return Err(bad(
            first_name,
            format!("no array has the dimension '{dim}'"),
        ));
    }
    let mut out = Map::new();
    // Documents other than the arrays' (groups, global attributes): the first file's.
    for (key, value) in &all[0] {
        if is_document(key) && !arrays.iter().any(|a| a.owns_document(key)) {
            out.insert(key.clone(), value.clone());
        }
    }
    for array in &arrays {
        let Some(axis) = array.dims.iter().position(|d| *d == dim) else {
            // Not along the dimension: the first file's, which every file must match.
            for ((name, _), refs) in stores.iter().zip(&all).skip(1) {
                if let Some(key) = array.differing_document(&all[0], refs, None) {
                    return Err(bad(name, format!("'{key}' differs from {first_name}'s")));
                }
            }
            for (key, value) in &all[0] {
                if array.owns(key) {
                    out.insert(key.clone(), value.clone());
                }
            }
            continue;
        };
        let chunk = array.chunks[axis];
        let lengths = all
            .iter()
            .map(|refs| shape_of(refs, array).map(|s| s[axis]))
            .collect::<Result<Vec<u64>>>()?;
        let whole = lengths[..lengths.len() - 1]
            .iter()
            .all(|&n| chunk > 0 && n % chunk == 0);
        if !whole && array.chunks.len() == 1 {
            let (zarray, value) = joined_by_value(stores, &all[0], array, &lengths, read)?;
            out.insert(array.zarray_key(), zarray);
            out.insert(array.chunk_key(&[0]), value);
            if let Some(attrs) = all[0].get(&array.zattrs_key()) {
                out.insert(array.zattrs_key(), attrs.clone());
            }
            continue;
        }
        let mut shift = 0u64;
        let mut length = 0u64;
        for (i, ((name, _), refs)) in stores.iter().zip(&all).enumerate() {
            if let Some(key) = array.differing_document(&all[0], refs, Some(axis)) {
                return Err(bad(name, format!("'{key}' differs from {first_name}'s")));
            }
            let here = shape_of(refs, array)?[axis];
            if i + 1 < stores.len() && (chunk == 0 || here % chunk != 0) {
                return Err(bad(
                    name,
                    format!(
                        "array '{}' has {here} steps along '{dim}', not a multiple of its \
                         chunk length {chunk}: only the last file may end inside a chunk",
                        array.path
                    ),
                ));
            }
            for (key, value) in refs {
                if let Some(mut idx) = array.chunk_index(key) {
                    idx[axis] += shift;
                    out.insert(array.chunk_key(&idx), value.clone());
                }
            }
            shift += here.div_ceil(chunk.max(1));
            length += here;
        }
        let mut zarray = all[0][&array.zarray_key()].clone();
        let mut doc: Value = parse_document(first_name, &zarray)?;
        doc["shape"][axis] = Value::from(length);
        zarray = Value::String(doc.to_string());
        out.insert(array.zarray_key(), zarray);
        if let Some(attrs) = all[0].get(&array.zattrs_key()) {
            out.insert(array.zattrs_key(), attrs.clone());
        }
    }
    let mut doc = serde_json::json!({"version": 1, "refs": out});
    if let Some(templates) = first.get("templates") {
        doc["templates"] = templates.clone();
    }
    Ok(doc)
}

/// A 1-D `array` of every store joined by value: its new `.zarray` (one
/// uncompressed chunk) and that chunk, inline.
fn joined_by_value(
    stores: &[Store],
    first: &Map<String, Value>,
    array: &Array,
    lengths: &[u64],
    read: &ReadArray<'_>,
) -> Result<(Value, Value)> {
    let source = &stores[0].0;
    let mut doc = parse_document(source, &first[&array.zarray_key()])?;
    let size = doc["dtype"]
        .as_str()
        .and_then(|d| d.get(2..)?.parse::<u64>().ok())
        .filter(|&s| s > 0)
        .ok_or_else(|| Error::unsupported(format!("joining array '{}' by value", array.path)))?;
    let total: u64 = lengths.iter().sum();
    if total.saturating_mul(size) > MAX_INLINE_BYTES {
        return Err(Error::Limits {
            what: format!(
                "array '{}' of {total} values does not fill whole chunks in every file;                  joining it by value would inline more than {MAX_INLINE_BYTES} bytes",
                array.path
            ),
        });
    }
    let mut bytes = Vec::new();
    for (i, &n) in lengths.iter().enumerate() {
        let values = read(i, &array.path)?;
        let want = (n * size) as usize;
        let got = values.get(..want).ok_or_else(|| Error::MalformedSource {
            path: stores[i].0.clone(),
            reason: format!(
                "array '{}' decoded to {} bytes, {want} expected",
                array.path,
                values.len()
            ),
        })?;
        bytes.extend_from_slice(got);
    }
    doc["shape"] = Value::from(vec![total]);
    doc["chunks"] = Value::from(vec![total.max(1)]);
    doc["compressor"] = Value::Null;
    doc["filters"] = Value::Null;
    use base64::Engine;
    let inline = format!(
        "base64:{}",
        base64::engine::general_purpose::STANDARD.encode(&bytes)
    );
    Ok((Value::String(doc.to_string()), Value::String(inline)))
}

/// Whether store key `key` names a Zarr metadata document.
fn is_document(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    matches!(name, ".zgroup" | ".zarray" | ".zattrs" | ".zmetadata")
}

/// A metadata document as stored in Kerchunk `refs`: JSON text (or, as
/// some writers leave it, JSON itself).
fn parse_document(source: &str, value: &Value) -> Result<Value> {
    match value {
        Value::String(text) => serde_json::from_str(text).map_err(|e| Error::MalformedSource {
            path: source.to_string(),
            reason: format!("a metadata document is not JSON: {e}"),
        }),
        other => Ok(other.clone()),
    }
}

/// What concatenation needs of one array.
#[derive(Debug)]
struct Array {
    /// Its path (`""` at the root).
    path: String,
    /// `_ARRAY_DIMENSIONS`.
    dims: Vec<String>,
    /// Chunk shape.
    chunks: Vec<u64>,
    /// The chunk key separator.
    separator: char,
}

/// The Zarr v2 arrays of one store's `refs`.
fn arrays_of(source: &str, refs: &Map<String, Value>) -> Result<Vec<Array>> {
    let mut arrays = Vec::new();
    for (key, value) in refs {
        let Some(path) = key.strip_suffix(".zarray") else {
            continue;
        };
        let path = path.trim_end_matches('/').to_string();
        let zarray = parse_document(source, value)?;
        let attrs_key = if path.is_empty() {
            ".zattrs".to_string()
        } else {
            format!("{path}/.zattrs")
        };
        let attrs = refs
            .get(&attrs_key)
            .map(|v| parse_document(source, v))
            .transpose()?
            .unwrap_or(Value::Null);
        let list =
            |v: &Value| -> Option<Vec<u64>> { v.as_array()?.iter().map(Value::as_u64).collect() };
        let chunks = list(&zarray["chunks"]).ok_or_else(|| Error::MalformedSource {
            path: source.to_string(),
            reason: format!("array '{path}' has no chunk shape"),
        })?;
        let dims: Vec<String> = attrs["_ARRAY_DIMENSIONS"]
            .as_array()
            .map(|d| {
                d.iter()
                    .filter_map(|n| n.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let separator = match zarray["dimension_separator"].as_str() {
            Some("/") => '/',
            _ => '.',
        };
        arrays.push(Array {
            path,
            dims,
            chunks,
            separator,
        });
    }
    Ok(arrays)
}

/// The shape of `array` in another store's `refs`.
fn shape_of(refs: &Map<String, Value>, array: &Array) -> Result<Vec<u64>> {
    let doc = refs
        .get(&array.zarray_key())
        .map(|v| parse_document(&array.path, v))
        .transpose()?
        .unwrap_or(Value::Null);
    doc["shape"]
        .as_array()
        .and_then(|s| s.iter().map(Value::as_u64).collect())
        .ok_or_else(|| Error::MalformedSource {
            path: array.path.clone(),
            reason: "no shape".into(),
        })
}

impl Array {
    fn prefix(&self) -> String {
        if self.path.is_empty() {
            String::new()
        } else {
            format!("{}/", self.path)
        }
    }

    fn zarray_key(&self) -> String {
        format!("{}.zarray", self.prefix())
    }

    fn zattrs_key(&self) -> String {
        format!("{}.zattrs", self.prefix())
    }

    fn owns_document(&self, key: &str) -> bool {
        key == self.zarray_key() || key == self.zattrs_key()
    }

    /// Whether `key` is one of this array's documents or chunks.
    fn owns(&self, key: &str) -> bool {
        self.owns_document(key) || self.chunk_index(key).is_some()
    }

    /// The chunk index of key `key`, when it is one of this array's chunks.
    fn chunk_index(&self, key: &str) -> Option<Vec<u64>> {
        let rest = key.strip_prefix(&self.prefix())?;
        let idx: Vec<u64> = rest
            .split(self.separator)
            .map(|p| p.parse().ok())
            .collect::<Option<_>>()?;
        (idx.len() == self.chunks.len().max(1)).then_some(idx)
    }

    fn chunk_key(&self, idx: &[u64]) -> String {
        let sep = self.separator.to_string();
        let parts: Vec<String> = idx.iter().map(u64::to_string).collect();
        format!("{}{}", self.prefix(), parts.join(&sep))
    }

    /// The first of this array's documents that differs between two
    /// stores, the length along `axis` (when given) aside.
    fn differing_document(
        &self,
        a: &Map<String, Value>,
        b: &Map<String, Value>,
        axis: Option<usize>,
    ) -> Option<String> {
        for key in [self.zarray_key(), self.zattrs_key()] {
            let doc = |refs: &Map<String, Value>| {
                let mut d = refs.get(&key).and_then(|v| parse_document("", v).ok());
                if let (Some(axis), Some(d)) = (axis, d.as_mut()) {
                    if let Some(s) = d.get_mut("shape").and_then(|s| s.get_mut(axis)) {
                        *s = Value::Null;
                    }
                }
                d
            };
            if doc(a) != doc(b) {
                return Some(key);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn day(n: u64, url: &str) -> Store {
        let zarray = |shape: Vec<u64>, chunks: Vec<u64>| {
            json!({"shape": shape, "chunks": chunks, "dtype": "<i2", "compressor": null,
                   "filters": null, "fill_value": 0, "order": "C", "zarr_format": 2})
            .to_string()
        };
        let mut refs = json!({
            ".zgroup": "{\"zarr_format\": 2}",
            ".zattrs": format!("{{\"history\": \"day {url}\"}}"),
            "temp/.zarray": zarray(vec![n, 4, 6], vec![1, 4, 6]),
            "temp/.zattrs": "{\"_ARRAY_DIMENSIONS\": [\"time\", \"lat\", \"lon\"]}",
            "lat/.zarray": zarray(vec![4], vec![4]),
            "lat/.zattrs": "{\"_ARRAY_DIMENSIONS\": [\"lat\"]}",
            "lat/0": [url, 10, 8],
            "time/.zarray": zarray(vec![n], vec![1]),
            "time/.zattrs": "{\"_ARRAY_DIMENSIONS\": [\"time\"], \"units\": \"days since 2020-01-01\"}",
        });
        for t in 0..n {
            refs[format!("temp/{t}.0.0")] = json!([url, 100 + t, 50]);
            refs[format!("time/{t}")] = json!(format!("base64:{t}"));
        }
        (url.to_string(), json!({"version": 1, "refs": refs}))
    }

    fn no_reads(_: usize, _: &str) -> Result<Vec<u8>> {
        panic!("nothing is read when whole chunks line up")
    }

    #[test]
    fn joins_partial_coordinate_chunks_by_value() {
        let partial = |n: u64, url: &str| {
            let mut store = day(n, url);
            let z = json!({"shape": [n], "chunks": [512], "dtype": "<i2", "compressor": {"id": "zlib"},
                           "filters": null, "fill_value": 0, "order": "C", "zarr_format": 2});
            store.1["refs"]["time/.zarray"] = json!(z.to_string());
            store
        };
        let values = |i: usize, path: &str| -> Result<Vec<u8>> {
            assert_eq!(path, "time");
            Ok([[i as u8, 0], [i as u8 + 10, 0]]
                .concat()
                .into_iter()
                .chain([0; 1020])
                .collect())
        };
        let doc = concat(&[partial(2, "a.nc"), partial(1, "b.nc")], None, &values).unwrap();
        let refs = &doc["refs"];
        let z: Value = serde_json::from_str(refs["time/.zarray"].as_str().unwrap()).unwrap();
        assert_eq!(
            (
                z["shape"].clone(),
                z["chunks"].clone(),
                z["compressor"].clone()
            ),
            (json!([3]), json!([3]), Value::Null)
        );
        use base64::Engine;
        let inline = refs["time/0"]
            .as_str()
            .unwrap()
            .strip_prefix("base64:")
            .unwrap();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(inline)
            .unwrap();
        assert_eq!(bytes, [0, 0, 10, 0, 1, 0]);
    }

    #[test]
    fn concatenates_along_time_moving_chunk_keys() {
        let doc = concat(&[day(2, "a.nc"), day(1, "b.nc")], None, &no_reads).unwrap();
        let refs = doc["refs"].as_object().unwrap();
        let shape: Value = serde_json::from_str(refs["temp/.zarray"].as_str().unwrap()).unwrap();
        assert_eq!(shape["shape"], json!([3, 4, 6]));
        assert_eq!(refs["temp/2.0.0"], json!(["b.nc", 100, 50]));
        assert_eq!(refs["temp/1.0.0"], json!(["a.nc", 101, 50]));
        assert_eq!(refs["time/2"], json!("base64:0"));
        assert_eq!(
            refs["lat/0"],
            json!(["a.nc", 10, 8]),
            "the first file's coordinates"
        );
        assert!(refs[".zattrs"].as_str().unwrap().contains("a.nc"));
    }

    #[test]
    fn refuses_files_that_do_not_line_up() {
        let mut other = day(1, "b.nc");
        other.1["refs"]["time/.zattrs"] =
            json!("{\"_ARRAY_DIMENSIONS\": [\"time\"], \"units\": \"days since 2021-01-01\"}");
        let e = concat(&[day(1, "a.nc"), other], None, &no_reads)
            .unwrap_err()
            .to_string();
        assert!(e.contains("b.nc") && e.contains("time/.zattrs"), "{e}");
        let e = concat(&[day(1, "a.nc"), day(1, "b.nc")], Some("depth"), &no_reads).unwrap_err();
        assert!(
            e.to_string().contains("no array has the dimension 'depth'"),
            "{e}"
        );
    }
}
