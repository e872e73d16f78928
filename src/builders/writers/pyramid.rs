//! Writing Kerchunk JSON v1 indexes in the layout osml-imagery-io writes: a
//! root group with GeoZarr `multiscales`, level groups `0`, `1`, ... each
//! holding array `data` with axes (bands, y, x), and optionally a `mask`.
//!
//! Every index builder (TIFF, JPEG 2000, NITF, ...) describes its levels
//! with [`Level`] and [`Array`] and lets [`Pyramid::into_built`] lay them out.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::builders::writers::built::Built;
use crate::builders::writers::built::Ref;

/// One array of a level: its Zarr v2 metadata and chunk references.
#[derive(Debug, Clone)]
pub struct Array {
    /// `[bands, height, width]`.
    pub shape: [u64; 3],
    /// `[bands per chunk, chunk height, chunk width]`.
    pub chunks: [u64; 3],
    /// Zarr v2 dtype (`|u1`, `<u2`, ...).
    pub dtype: String,
    /// The format codec's configuration (with its `id`), put in `filters`.
    pub codec: Value,
    /// `fill_value` (null when the source has none).
    pub fill: Value,
    /// Array attributes besides `_ARRAY_DIMENSIONS` (colour interpretation,
    /// CF band attributes).
    pub attrs: Map<String, Value>,
    /// The chunks' references.
    pub refs: Vec<Ref>,
}

/// One resolution level: its `data` array, an optional `mask`, and the
/// attributes of its group.
#[derive(Debug, Clone)]
pub struct Level {
    /// The pixels.
    pub data: Array,
    /// The level's mask (one band of bytes, non-zero = valid).
    pub mask: Option<Array>,
    /// Attributes of the level group (georeferencing); `spatial:shape` and
    /// `spatial:transform` are repeated in the `multiscales` layout entry.
    pub attrs: Map<String, Value>,
}

/// A whole index: its source, root attributes and levels.
#[derive(Debug, Clone)]
pub struct Pyramid {
    /// The root attribute `source`: the source file's URL (or a list of them).
    pub source: Value,
    /// Root group attributes besides `multiscales` and `source`.
    pub attrs: Map<String, Value>,
    /// Levels, full resolution first.
    pub levels: Vec<Level>,
}

impl Pyramid {
    /// The index with this pyramid at its root.
    pub fn into_built(self) -> Built {
        let mut built = Built::default();
        self.write(&mut built, "");
        built
    }

    /// Writes the pyramid's documents and references into `out` as group
    /// `group` (`""` = root).
    pub fn write(self, out: &mut Built, group: &str) {
        let prefix = if group.is_empty() {
            String::new()
        } else {
            format!("{group}/")
        };
        let mut layout = Vec::new();
        let meta = |out: &mut Built, key: String, v: Value| {
            out.metadata.insert(key, v);
        };
        let mut previous: Option<[u64; 3]> = None;
        for (n, level) in self.levels.into_iter().enumerate() {
            let name = n.to_string();
            let to = level.data.shape;
            let relative = match previous.replace(to) {
                None => [1.0, 1.0],
                Some(from) => [from[1] as f64 / to[1] as f64, from[2] as f64 / to[2] as f64],
            };
            let mut entry =
                json!({"asset": name, "transform": {"scale": relative, "translation": [0.0, 0.0]}});
            if n > 0 {
                entry["derived_from"] = json!((n - 1).to_string());
            }
            for key in ["spatial:shape", "spatial:transform"] {
                if let Some(v) = level.attrs.get(key) {
                    entry[key] = v.clone();
                }
            }
            layout.push(entry);
            meta(
                out,
                format!("{prefix}{name}/.zgroup"),
                json!({"zarr_format": 2}),
            );
            meta(
                out,
                format!("{prefix}{name}/.zattrs"),
                Value::Object(level.attrs),
            );
            Self::write_array(out, &format!("{prefix}{name}/data"), level.data);
            if let Some(mask) = level.mask {
                Self::write_array(out, &format!("{prefix}{name}/mask"), mask);
            }
        }
        let mut root = self.attrs;
        root.insert("source".into(), self.source);
        root.insert("multiscales".into(), json!({"layout": layout}));
        meta(out, format!("{prefix}.zgroup"), json!({"zarr_format": 2}));
        meta(out, format!("{prefix}.zattrs"), Value::Object(root));
    }

    fn write_array(out: &mut Built, path: &str, a: Array) {
        let zarray = json!({
            "zarr_format": 2, "shape": a.shape, "chunks": a.chunks, "dtype": a.dtype,
            "fill_value": a.fill, "order": "C", "compressor": null, "filters": [a.codec],
            "dimension_separator": "."});
        out.metadata.insert(format!("{path}/.zarray"), zarray);
        let mut zattrs = a.attrs;
        zattrs.insert("_ARRAY_DIMENSIONS".into(), json!(["bands", "y", "x"]));
        out.metadata
            .insert(format!("{path}/.zattrs"), Value::Object(zattrs));
        out.arrays.insert(path.to_string(), a.refs);
    }
}

impl Ref {
    /// A reference to one byte range.
    pub fn single(index: [u64; 3], url: impl Into<Arc<str>>, offset: u64, length: u64) -> Ref {
        Ref {
            index,
            url: url.into(),
            ranges: vec![(offset, length)],
        }
    }

    /// The ranges as one `(offset, length)` when they are back to back.
    pub fn merged(&self) -> Option<(u64, u64)> {
        let ranges = &self.ranges;
        let contiguous = ranges.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0);
        match ranges.as_slice() {
            [(offset, _), ..] if contiguous => Some((*offset, ranges.iter().map(|r| r.1).sum())),
            _ => None,
        }
    }

    /// `[url, offset, length]`, or `[url, [[offset, length], ...]]` when the
    /// ranges are not back to back.
    pub(crate) fn to_json(&self) -> Value {
        match self.merged() {
            Some((offset, length)) => json!([&*self.url, offset, length]),
            None => json!([
                &*self.url,
                self.ranges.iter().map(|r| [r.0, r.1]).collect::<Vec<_>>()
            ]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(refs: Vec<Ref>) -> Array {
        Array {
            shape: [1, 4, 4],
            chunks: [1, 4, 4],
            dtype: "|u1".into(),
            codec: json!({"id": "x"}),
            fill: Value::Null,
            attrs: Map::new(),
            refs,
        }
    }

    fn reference(index: [u64; 3], ranges: Vec<(u64, u64)>) -> Ref {
        Ref {
            index,
            url: "/f".into(),
            ranges,
        }
    }

    #[test]
    fn ranges_merge_or_become_multi_range() {
        let p = Pyramid {
            source: json!("/f"),
            attrs: Map::new(),
            levels: vec![Level {
                data: array(vec![
                    reference([0, 0, 0], vec![(10, 5), (15, 5)]),
                    reference([0, 0, 1], vec![(30, 5), (10, 2)]),
                ]),
                mask: None,
                attrs: Map::new(),
            }],
        };
        let doc = p.into_built().to_kerchunk();
        assert_eq!(doc["refs"]["0/data/0.0.0"], json!(["/f", 10, 10]));
        assert_eq!(
            doc["refs"]["0/data/0.0.1"],
            json!(["/f", [[30, 5], [10, 2]]])
        );
        let root: Value = serde_json::from_str(doc["refs"][".zattrs"].as_str().unwrap()).unwrap();
        assert_eq!(root["multiscales"]["layout"][0]["asset"], "0");
    }
}
