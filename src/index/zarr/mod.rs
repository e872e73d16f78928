//! Zarr array metadata (v2 `.zarray` and v3 `zarr.json`), reduced to what
//! reading chunks needs: shape, chunk shape, element type, fill value,
//! memory layout of a decoded chunk, chunk key encoding and codec chain.

pub mod chunk_key;

use serde_json::{Map, Value};

use crate::base::dtype::{ByteOrder, DataType, ScalarKind};
use crate::base::error::{Error, Result};
use crate::codec::config::Config;
use crate::codec::registry;
use crate::codec::{Codec, CodecChain};
use crate::conventions::attributes::SourceDriver;
use chunk_key::ChunkKeyEncoding;

/// Most dimensions chunkref accepts for one array.
pub const MAX_DIMS: usize = 32;

/// Everything needed to locate, decode and place the chunks of one array.
#[derive(Debug)]
pub struct ArrayMeta {
    /// Path of the array inside the store (`""` for a root array).
    pub path: String,
    /// Zarr format, 2 or 3.
    pub zarr_format: u8,
    /// Array shape in elements.
    pub shape: Vec<u64>,
    /// Chunk shape in elements.
    pub chunks: Vec<u64>,
    /// Element type of a decoded chunk (byte order as stored), as served:
    /// [`DataType::served`] of [`ArrayMeta::stored_dtype`].
    pub dtype: DataType,
    /// Element type the codecs decode to, as the metadata declares it
    /// (float16 chunks are widened to the served float32 after decoding).
    pub stored_dtype: DataType,
    /// Fill value in native byte order, `None` when the metadata says null.
    pub fill: Option<Vec<u8>>,
    /// The fill value as written in the metadata (for nodata reporting).
    pub fill_json: Value,
    /// For each logical axis, its element stride inside a decoded chunk.
    pub chunk_strides: Vec<u64>,
    /// How chunk keys are spelled (use [`ArrayMeta::chunk_key`] and
    /// [`ArrayMeta::parse_chunk_key`], which know [`ArrayMeta::stored_axes`]).
    pub key_encoding: ChunkKeyEncoding,
    /// For each logical axis, the axis of the metadata document and chunk
    /// keys it is; `None` when they are the same. Set for arrays served
    /// with their samples first ([`samples_last`]).
    pub stored_axes: Option<Vec<usize>>,
    /// Leading axes of extent 1 that [`ArrayMeta::reshape_to_row`] put in
    /// front of a 0-D or 1-D array; the metadata document and chunk keys
    /// do not have them.
    pub added_axes: usize,
    /// Codecs in decode order.
    pub codecs: CodecChain,
    /// Dimension names (`_ARRAY_DIMENSIONS` in v2, `dimension_names` in v3).
    pub dimension_names: Option<Vec<String>>,
    /// User attributes (`.zattrs` in v2, `attributes` in v3).
    pub attributes: Map<String, Value>,
}

/// A Zarr v2 `|S1` array of 2 or more dimensions (netCDF's `NC_CHAR`
/// text, as kerchunk and `chunkref index` write it) served as the bytes it
/// holds, as GDAL's netCDF driver shows a character variable (a Byte
/// raster): its type, and its fill value (Zarr's base64 text of the byte)
/// as a number.
fn text_as_bytes(fill: Option<&Value>) -> (DataType, Value) {
    use base64::Engine;
    let byte = DataType {
        kind: ScalarKind::UInt,
        size: 1,
        order: ByteOrder::NotApplicable,
    };
    let fill = match fill {
        Some(Value::String(text)) => base64::engine::general_purpose::STANDARD
            .decode(text)
            .ok()
            .and_then(|bytes| match bytes[..] {
                [b] => Some(Value::from(b)),
                _ => None,
            })
            .unwrap_or(Value::Null),
        Some(Value::Number(n)) => Value::Number(n.clone()),
        _ => Value::Null,
    };
    (byte, fill)
}

impl ArrayMeta {
    /// Parses a Zarr v2 `.zarray` document with its optional `.zattrs`.
    pub fn from_v2(path: &str, zarray: &Value, zattrs: Option<&Value>) -> Result<ArrayMeta> {
        let bad = |reason: String| Error::InvalidMetadata {
            array: path.to_string(),
            reason,
        };
        let obj = zarray
            .as_object()
            .ok_or_else(|| bad(".zarray is not a JSON object".into()))?;
        let shape = u64_list(obj.get("shape"), "shape").map_err(bad)?;
        let chunks = u64_list(obj.get("chunks"), "chunks").map_err(bad)?;
        let dtype_str = obj.get("dtype").and_then(Value::as_str).ok_or_else(|| {
            bad("missing or non-string 'dtype' (structured dtypes are not supported)".into())
        })?;
        let (dtype, fill_json) = match dtype_str.trim_start_matches('|') {
            // Text of 2 or more dimensions, as GDAL lists character
            // variables; shorter text (a name, a grid mapping) is no raster.
            "S1" if shape.len() >= 2 => text_as_bytes(obj.get("fill_value")),
            _ => (
                DataType::from_v2(dtype_str)?,
                obj.get("fill_value").cloned().unwrap_or(Value::Null),
            ),
        };
        let order = match obj.get("order").and_then(Value::as_str).unwrap_or("C") {
            "C" => Layout::C,
            "F" => Layout::F,
            other => return Err(bad(format!("order '{other}' is neither C nor F"))),
        };
        let separator = match obj.get("dimension_separator").and_then(Value::as_str) {
            None | Some(".") => '.',
            Some("/") => '/',
            Some(other) => return Err(bad(format!("dimension_separator '{other}'"))),
        };
        let mut codecs: Vec<Box<dyn Codec>> = Vec::new();
        if let Some(filters) = obj.get("filters").filter(|f| !f.is_null()) {
            let list = filters
                .as_array()
                .ok_or_else(|| bad("'filters' is not a list".into()))?;
            for f in list {
                codecs.push(v2_codec(path, f)?);
            }
        }
        if let Some(comp) = obj.get("compressor").filter(|c| !c.is_null()) {
            codecs.push(v2_codec(path, comp)?);
        }
        let attributes = zattrs
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let dimension_names = attributes.get("_ARRAY_DIMENSIONS").and_then(string_list);
        ArrayMeta::assemble(Parts {
            path,
            zarr_format: 2,
            shape,
            chunks,
            dtype,
            fill_json,
            layout: order,
            key_encoding: ChunkKeyEncoding::v2(separator),
            codecs,
            dimension_names,
            attributes,
        })
    }

    /// Parses a Zarr v3 `zarr.json` document of node type `array`.
    pub fn from_v3(path: &str, doc: &Value) -> Result<ArrayMeta> {
        let bad = |reason: String| Error::InvalidMetadata {
            array: path.to_string(),
            reason,
        };
        let obj = doc
            .as_object()
            .ok_or_else(|| bad("zarr.json is not a JSON object".into()))?;
        let shape = u64_list(obj.get("shape"), "shape").map_err(bad)?;
        let grid = obj
            .get("chunk_grid")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("missing 'chunk_grid'".into()))?;
        match grid.get("name").and_then(Value::as_str) {
            Some("regular") => {}
            other => {
                return Err(Error::unsupported(format!(
                    "chunk grid {other:?} in array '{path}' (only 'regular')"
                )))
            }
        }
        let chunks = u64_list(
            grid.get("configuration").and_then(|c| c.get("chunk_shape")),
            "chunk_grid.configuration.chunk_shape",
        )
        .map_err(bad)?;
        let key_encoding = ChunkKeyEncoding::from_v3(obj.get("chunk_key_encoding")).map_err(bad)?;
        let codec_list = obj
            .get("codecs")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("missing 'codecs' list".into()))?;
        let mut byte_order = ByteOrder::NotApplicable;
        let mut layout = Layout::C;
        let mut codecs: Vec<Box<dyn Codec>> = Vec::new();
        for c in codec_list {
            let (name, config) = v3_codec_parts(c).map_err(bad)?;
            match name {
                "bytes" | "endian" => {
                    byte_order = match config.get("endian").and_then(Value::as_str) {
                        Some("big") => ByteOrder::Big,
                        _ => ByteOrder::Little,
                    }
                }
                "transpose" => {
                    let order = config
                        .get("order")
                        .ok_or_else(|| bad("transpose codec without 'order'".into()))?;
                    layout = Layout::Permuted(transpose_order(order, shape.len()).map_err(bad)?);
                }
                "sharding_indexed" => {
                    return Err(Error::unsupported(format!(
                        "sharding_indexed codec in array '{path}'"
                    )))
                }
                _ => codecs.push(registry::build(name, &config)?),
            }
        }
        let dtype_name = obj
            .get("data_type")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("missing 'data_type'".into()))?;
        let dtype = DataType::from_v3(dtype_name, byte_order)?;
        let fill_json = obj.get("fill_value").cloned().unwrap_or(Value::Null);
        let attributes = obj
            .get("attributes")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let dimension_names = obj
            .get("dimension_names")
            .and_then(string_list)
            .or_else(|| attributes.get("_ARRAY_DIMENSIONS").and_then(string_list));
        ArrayMeta::assemble(Parts {
            path,
            zarr_format: 3,
            shape,
            chunks,
            dtype,
            fill_json,
            layout,
            key_encoding,
            codecs,
            dimension_names,
            attributes,
        })
    }

    fn assemble(p: Parts<'_>) -> Result<ArrayMeta> {
        let bad = |reason: String| Error::InvalidMetadata {
            array: p.path.to_string(),
            reason,
        };
        // GDAL's HDF5 and netCDF drivers serve float16 as Float32 in every
        // version (3.13 too), its Zarr and GTiff drivers as Float16 where
        // GDAL has that type.
        let served = match SourceDriver::in_attributes(&p.attributes) {
            Some(_) => p.dtype.widened(),
            None => p.dtype.served(),
        };
        if p.shape.len() != p.chunks.len() {
            return Err(bad(format!(
                "shape has {} dimensions but chunks has {}",
                p.shape.len(),
                p.chunks.len()
            )));
        }
        if p.shape.len() > MAX_DIMS {
            return Err(bad(format!(
                "{} dimensions (at most {MAX_DIMS})",
                p.shape.len()
            )));
        }
        if p.chunks.contains(&0) {
            return Err(bad(format!("chunk shape {:?} has a zero extent", p.chunks)));
        }
        if let Some(names) = &p.dimension_names {
            if names.len() != p.shape.len() {
                return Err(bad(format!(
                    "{} dimension names for {} dimensions",
                    names.len(),
                    p.shape.len()
                )));
            }
        }
        p.chunks
            .iter()
            .try_fold(1u64, |acc, &c| acc.checked_mul(c))
            .and_then(|n| n.checked_mul(served.size as u64))
            .filter(|&n| n <= MAX_CHUNK_BYTES)
            .ok_or_else(|| Error::Limits {
                what: format!(
                    "chunk shape {:?} of array '{}' exceeds {} bytes decoded",
                    p.chunks, p.path, MAX_CHUNK_BYTES
                ),
            })?;
        // Chunks are numbered by their row-major rank, a u64.
        p.shape
            .iter()
            .zip(&p.chunks)
            .try_fold(1u64, |acc, (&s, &c)| acc.checked_mul(s.div_ceil(c)))
            .ok_or_else(|| Error::Limits {
                what: format!(
                    "array '{}' of shape {:?} in chunks of {:?} has more than 2^64 chunks",
                    p.path, p.shape, p.chunks
                ),
            })?;
        let chunk_strides = p.layout.strides(&p.chunks).map_err(bad)?;
        let fill = if p.fill_json.is_null() {
            None
        } else {
            Some(served.fill_bytes(&p.fill_json)?)
        };
        let mut meta = ArrayMeta {
            path: p.path.to_string(),
            zarr_format: p.zarr_format,
            shape: p.shape,
            chunks: p.chunks,
            dtype: served,
            stored_dtype: p.dtype,
            fill,
            fill_json: p.fill_json,
            chunk_strides,
            key_encoding: p.key_encoding,
            stored_axes: None,
            added_axes: 0,
            codecs: CodecChain::from_encode_order(p.codecs),
            dimension_names: p.dimension_names,
            attributes: p.attributes,
        };
        if let Some(order) = samples_last(&meta) {
            meta.permute(order);
        }
        Ok(meta)
    }

    /// Serves the stored axes in `order` (logical axis i is stored axis
    /// `order[i]`): shape, chunks, strides and names follow; chunk keys
    /// keep their stored spelling. Chunk ranks are unchanged only when the
    /// moved axes have one chunk each, which [`samples_last`] checks.
    fn permute(&mut self, order: Vec<usize>) {
        let pick = |v: &[u64]| order.iter().map(|&a| v[a]).collect::<Vec<u64>>();
        self.shape = pick(&self.shape);
        self.chunks = pick(&self.chunks);
        self.chunk_strides = pick(&self.chunk_strides);
        if let Some(names) = self.dimension_names.as_mut() {
            *names = order.iter().map(|&a| names[a].clone()).collect();
        }
        self.stored_axes = Some(order);
    }

    /// `logical` (one value per logical axis: a chunk index, a chunk
    /// shape) in the order of the stored axes, without the axes
    /// [`ArrayMeta::reshape_to_row`] added.
    pub fn stored_order(&self, logical: &[u64]) -> Vec<u64> {
        let logical = &logical[self.added_axes.min(logical.len())..];
        match &self.stored_axes {
            None => logical.to_vec(),
            Some(order) => {
                let mut stored = vec![0; logical.len()];
                for (&axis, &v) in order.iter().zip(logical) {
                    stored[axis] = v;
                }
                stored
            }
        }
    }

    /// The key suffix (after the array path) of the chunk at logical grid
    /// index `idx`, as the store spells it.
    pub fn chunk_key(&self, idx: &[u64]) -> String {
        self.key_encoding.format(&self.stored_order(idx))
    }

    /// The logical grid index of a chunk key suffix, `None` if `rest` is no
    /// chunk key of this array.
    pub fn parse_chunk_key(&self, rest: &str) -> Option<Vec<u64>> {
        let mut idx = [0; MAX_DIMS];
        let n = self.chunk_index(rest, &mut idx)?;
        Some(idx[..n].to_vec())
    }

    /// The row-major rank in `grid` (this array's chunk grid) of the chunk
    /// whose key suffix is `rest`: [`ArrayMeta::parse_chunk_key`] without
    /// allocating, for the many keys of an index.
    pub fn chunk_position(&self, rest: &str, grid: &[u64]) -> Option<u64> {
        let mut idx = [0; MAX_DIMS];
        let n = self.chunk_index(rest, &mut idx)?;
        crate::index::refs::position(&idx[..n], grid)
    }

    /// Fills `idx` with the logical grid index of key suffix `rest`;
    /// returns its number of dimensions.
    fn chunk_index(&self, rest: &str, idx: &mut [u64; MAX_DIMS]) -> Option<usize> {
        let n = self.shape.len();
        let stored_n = n.checked_sub(self.added_axes)?;
        let mut stored = [0; MAX_DIMS];
        self.key_encoding
            .parse_into(rest, stored.get_mut(..stored_n)?)?;
        let logical = idx.get_mut(self.added_axes..n)?;
        match &self.stored_axes {
            None => logical.copy_from_slice(&stored[..stored_n]),
            Some(order) => {
                for (l, &a) in logical.iter_mut().zip(order) {
                    *l = *stored.get(a)?;
                }
            }
        }
        idx[..self.added_axes].fill(0);
        Some(n)
    }

    /// A 1-D array seen as one row ([1, n]), a 0-D one as one pixel
    /// ([1, 1]), so it opens as a raster. Chunk ranks, and so the chunk
    /// table, are unchanged (chunk j of the row is chunk j), and so are
    /// chunk keys and what codecs see ([`ArrayMeta::added_axes`]).
    pub fn reshape_to_row(&mut self) {
        const NAMES: [&str; 2] = ["row", "column"];
        let missing = 2usize.saturating_sub(self.shape.len());
        for name in NAMES[..missing].iter().rev() {
            let stride = match (self.chunks.first(), self.chunk_strides.first()) {
                (Some(c), Some(s)) => c * s,
                _ => 1,
            };
            self.shape.insert(0, 1);
            self.chunks.insert(0, 1);
            self.chunk_strides.insert(0, stride);
            if let Some(names) = self.dimension_names.as_mut() {
                names.insert(0, name.to_string());
            }
        }
        self.added_axes += missing;
    }

    /// Serves the colour components of a (bands, y, x) array as stored
    /// when its codecs convert them (8-bit CMYK and CIELab TIFF tiles
    /// indexed as the RGBA GDAL shows): as many bands as stored components,
    /// each chunk holding them all, without the colour interpretations
    /// recorded for the converted bands. Returns whether anything changed.
    pub fn serve_stored_color(&mut self) -> bool {
        let whole_pixels = self.shape.len() == 3
            && self.chunks[0] == self.shape[0]
            && self.stored_axes.is_none()
            && self.added_axes == 0
            && self.chunk_strides == [self.chunks[1] * self.chunks[2], self.chunks[2], 1];
        if !whole_pixels {
            return false;
        }
        let Some(samples) = self.codecs.serve_stored_color() else {
            return false;
        };
        self.shape[0] = samples;
        self.chunks[0] = samples;
        self.attributes
            .remove(crate::conventions::attributes::COLOR_ATTRIBUTE);
        true
    }

    /// Number of chunks along each axis.
    pub fn grid_shape(&self) -> Vec<u64> {
        self.shape
            .iter()
            .zip(&self.chunks)
            .map(|(s, c)| s.div_ceil(*c))
            .collect()
    }

    /// Bytes of one fully decoded chunk (checked against limits at parse time).
    pub fn chunk_bytes(&self) -> usize {
        self.chunks.iter().product::<u64>() as usize * self.dtype.size
    }
}

/// tifffile's name of the sample axis of a pixel-interleaved image.
const SAMPLE_AXIS: &str = "S";

/// The axis order serving a pixel-interleaved TIFF image as bands: tifffile
/// (and so kerchunk's `tiff_to_zarr`) stores it as (y, x, sample), named
/// `["Y", "X", "S"]` (`Y1`, `X1` for its reduced levels), while the raster
/// view reads bands from the leading axes. Only when every chunk holds all
/// the samples (as tifffile writes it), so chunk ranks are the same in
/// either order; other arrays keep their axes.
fn samples_last(meta: &ArrayMeta) -> Option<Vec<usize>> {
    let names = meta.dimension_names.as_ref()?;
    let tifffile_name = |name: &str, axis: char| {
        name.strip_prefix(axis)
            .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()))
    };
    let sample_last = meta.shape.len() == 3
        && names[2] == SAMPLE_AXIS
        && tifffile_name(&names[0], 'Y')
        && tifffile_name(&names[1], 'X')
        && meta.chunks[2] >= meta.shape[2];
    sample_last.then(|| vec![2, 0, 1])
}

/// Largest decoded chunk chunkref accepts (1 GiB).
pub const MAX_CHUNK_BYTES: u64 = 1 << 30;

struct Parts<'a> {
    path: &'a str,
    zarr_format: u8,
    shape: Vec<u64>,
    chunks: Vec<u64>,
    dtype: DataType,
    fill_json: Value,
    layout: Layout,
    key_encoding: ChunkKeyEncoding,
    codecs: Vec<Box<dyn Codec>>,
    dimension_names: Option<Vec<String>>,
    attributes: Map<String, Value>,
}

/// How the elements of a decoded chunk are laid out in memory.
enum Layout {
    /// Row-major.
    C,
    /// Column-major.
    F,
    /// Stored axes are the logical axes in this order (v3 `transpose`).
    Permuted(Vec<usize>),
}

impl Layout {
    /// Element stride of each logical axis within a decoded chunk.
    fn strides(&self, chunks: &[u64]) -> Result<Vec<u64>, String> {
        let n = chunks.len();
        let stored_order: Vec<usize> = match self {
            Layout::C => (0..n).collect(),
            Layout::F => (0..n).rev().collect(),
            Layout::Permuted(p) => p.clone(),
        };
        let mut strides = vec![0u64; n];
        let mut acc = 1u64;
        for &axis in stored_order.iter().rev() {
            strides[axis] = acc;
            acc = acc.checked_mul(chunks[axis]).ok_or("chunk too large")?;
        }
        Ok(strides)
    }
}

fn transpose_order(v: &Value, ndim: usize) -> Result<Vec<usize>, String> {
    let order: Vec<usize> = match v {
        Value::String(s) if s == "C" => (0..ndim).collect(),
        Value::String(s) if s == "F" => (0..ndim).rev().collect(),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_u64().map(|u| u as usize))
            .collect::<Option<Vec<_>>>()
            .ok_or("transpose order must list axis numbers")?,
        _ => return Err("transpose order must be a list".into()),
    };
    let mut seen = vec![false; ndim];
    if order.len() != ndim
        || order
            .iter()
            .any(|&a| a >= ndim || std::mem::replace(&mut seen[a], true))
    {
        return Err(format!(
            "transpose order {order:?} is not a permutation of {ndim} axes"
        ));
    }
    Ok(order)
}

pub(crate) fn u64_list(v: Option<&Value>, field: &str) -> Result<Vec<u64>, String> {
    v.and_then(Value::as_array)
        .and_then(|items| items.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
        .ok_or_else(|| format!("'{field}' must be a list of non-negative integers"))
}

fn string_list(v: &Value) -> Option<Vec<String>> {
    v.as_array()?
        .iter()
        .map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// Builds a codec from a v2 `{"id": ..., ...}` object.
fn v2_codec(path: &str, v: &Value) -> Result<Box<dyn Codec>> {
    let obj = v.as_object().ok_or_else(|| Error::InvalidMetadata {
        array: path.to_string(),
        reason: format!("codec {v} is not an object"),
    })?;
    let id = obj
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidMetadata {
            array: path.to_string(),
            reason: format!("codec {v} has no 'id'"),
        })?;
    registry::build(id, obj)
}

/// Splits a v3 codec entry into its name and configuration.
fn v3_codec_parts(v: &Value) -> Result<(&str, Config), String> {
    match v {
        Value::String(name) => Ok((name, Config::new())),
        Value::Object(obj) => {
            let name = obj
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("codec {v} has no 'name'"))?;
            let config = obj
                .get("configuration")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            Ok((name, config))
        }
        _ => Err(format!("codec {v} is neither a name nor an object")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_vector_reshapes_to_one_row() {
        let z = json!({"shape": [70], "chunks": [32], "dtype": "<f8", "fill_value": null,
            "order": "C", "compressor": null, "filters": null, "zarr_format": 2});
        let attrs = json!({"_ARRAY_DIMENSIONS": ["x"]});
        let mut m = ArrayMeta::from_v2("x", &z, Some(&attrs)).unwrap();
        m.reshape_to_row();
        assert_eq!(
            (m.shape.clone(), m.chunks.clone()),
            (vec![1, 70], vec![1, 32])
        );
        assert_eq!(m.chunk_strides, vec![32, 1]);
        assert_eq!(m.grid_shape(), vec![1, 3]);
        assert_eq!(m.dimension_names, Some(vec!["row".into(), "x".into()]));
        // Keys and codecs still see the stored array.
        assert_eq!(m.chunk_key(&[0, 2]), "2");
        assert_eq!(m.parse_chunk_key("2"), Some(vec![0, 2]));
        assert_eq!(m.chunk_position("2", &m.grid_shape()), Some(2));
        assert_eq!(m.chunk_position("3", &m.grid_shape()), None);
        assert_eq!(m.stored_order(&m.chunks), vec![32]);
        m.reshape_to_row(); // 2-D arrays stay as they are
        assert_eq!((m.shape.clone(), m.added_axes), (vec![1, 70], 1));
    }

    #[test]
    fn converted_colour_is_served_as_stored_on_request() {
        let codec = json!({"id": "tiff-tile", "samples_per_pixel": 3, "photometric": 8,
            "color_to_rgba": "cielab", "tile_width": 8, "tile_height": 4});
        let z = json!({"shape": [4, 10, 20], "chunks": [4, 4, 8], "dtype": "|u1",
            "fill_value": null, "compressor": null, "filters": [codec], "zarr_format": 2});
        let attrs = json!({"_ARRAY_DIMENSIONS": ["bands", "y", "x"],
            "chunkref:color_interpretation": ["Red", "Green", "Blue", "Alpha"]});
        let mut m = ArrayMeta::from_v2("x", &z, Some(&attrs)).unwrap();
        assert!(m.serve_stored_color());
        assert_eq!(
            (m.shape.as_slice(), m.chunks.as_slice()),
            (&[3, 10, 20][..], &[3, 4, 8][..])
        );
        assert_eq!(m.chunk_strides, [32, 8, 1]);
        assert!(!m.attributes.contains_key("chunkref:color_interpretation"));
        assert_eq!(m.chunk_bytes(), 96);
        // Nothing more to serve as stored, and arrays without conversion stay.
        assert!(!m.serve_stored_color());
        let plain = json!({"shape": [4, 10, 20], "chunks": [4, 4, 8], "dtype": "|u1",
            "fill_value": null, "compressor": null, "filters": null, "zarr_format": 2});
        assert!(!ArrayMeta::from_v2("x", &plain, None)
            .unwrap()
            .serve_stored_color());
    }

    #[test]
    fn a_scalar_reshapes_to_one_pixel() {
        let z = json!({"shape": [], "chunks": [], "dtype": ">u1", "fill_value": null,
            "order": "C", "compressor": null, "filters": [], "zarr_format": 2});
        let attrs = json!({"_ARRAY_DIMENSIONS": []});
        let mut m = ArrayMeta::from_v2("x", &z, Some(&attrs)).unwrap();
        m.reshape_to_row();
        assert_eq!(
            (m.shape.clone(), m.chunks.clone()),
            (vec![1, 1], vec![1, 1])
        );
        assert_eq!(
            (m.chunk_strides.clone(), m.grid_shape()),
            (vec![1, 1], vec![1, 1])
        );
        assert_eq!(m.dimension_names, Some(vec!["row".into(), "column".into()]));
        assert_eq!(m.chunk_key(&[0, 0]), "0");
        assert_eq!(m.parse_chunk_key("0"), Some(vec![0, 0]));
        assert_eq!((m.stored_order(&m.chunks), m.chunk_bytes()), (vec![], 1));
    }

    #[test]
    fn chunk_positions_are_the_ranks_of_parsed_keys() {
        let z = json!({"shape": [3, 100, 75], "chunks": [1, 32, 32], "dtype": "<u2",
            "fill_value": 0, "order": "C", "compressor": null, "filters": null,
            "zarr_format": 2, "dimension_separator": "/"});
        let m = ArrayMeta::from_v2("a", &z, None).unwrap();
        let grid = m.grid_shape();
        for key in [
            "0/0/0",
            "2/3/2",
            "1/0/2",
            "2/4/0",
            "2/3",
            "2/3/2/0",
            "x/0/0",
            "",
            "0//0",
            "+1/0/0",
            "0.0.0",
            "99999999999999999999/0/0",
        ] {
            let want = m
                .parse_chunk_key(key)
                .and_then(|idx| crate::index::refs::position(&idx, &grid));
            assert_eq!(m.chunk_position(key, &grid), want, "{key}");
        }
        assert_eq!(m.chunk_position("2/3/2", &grid), Some(2 * 12 + 3 * 3 + 2));
    }

    #[test]
    fn v2_c_and_f_strides() {
        let mut z = json!({"shape": [3, 100, 75], "chunks": [3, 32, 32], "dtype": "<u2",
            "fill_value": 7, "order": "C", "compressor": null, "filters": null, "zarr_format": 2});
        let m = ArrayMeta::from_v2("a", &z, None).unwrap();
        assert_eq!(m.chunk_strides, vec![1024, 32, 1]);
        assert_eq!(m.grid_shape(), vec![1, 4, 3]);
        assert_eq!(m.fill.as_deref(), Some(&7u16.to_ne_bytes()[..]));
        z["order"] = json!("F");
        let m = ArrayMeta::from_v2("a", &z, None).unwrap();
        assert_eq!(m.chunk_strides, vec![1, 3, 96]);
    }

    #[test]
    fn v3_transpose_and_endianness() {
        let z = json!({"zarr_format": 3, "node_type": "array", "shape": [10, 20],
            "data_type": "int16", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 4]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
                       {"name": "bytes", "configuration": {"endian": "big"}}],
            "fill_value": 0});
        let m = ArrayMeta::from_v3("b", &z).unwrap();
        assert_eq!(m.dtype.order, ByteOrder::Big);
        assert_eq!(m.chunk_strides, vec![1, 5]);
    }

    #[test]
    fn tifffile_samples_last_are_served_first() {
        let z = json!({"shape": [200, 300, 3], "chunks": [256, 256, 3], "dtype": "|u1",
            "fill_value": 0, "order": "C", "compressor": null, "filters": null,
            "zarr_format": 2});
        let attrs = json!({"_ARRAY_DIMENSIONS": ["Y1", "X1", "S"]});
        let m = ArrayMeta::from_v2("1", &z, Some(&attrs)).unwrap();
        assert_eq!(m.shape, vec![3, 200, 300]);
        assert_eq!(m.chunks, vec![3, 256, 256]);
        assert_eq!(m.chunk_strides, vec![1, 768, 3]);
        assert_eq!(m.grid_shape(), vec![1, 1, 2]);
        assert_eq!(
            m.dimension_names,
            Some(vec!["S".into(), "Y1".into(), "X1".into()])
        );
        assert_eq!(m.chunk_key(&[0, 0, 1]), "0.1.0");
        assert_eq!(m.parse_chunk_key("0.1.0"), Some(vec![0, 0, 1]));
        assert_eq!(m.chunk_position("0.1.0", &m.grid_shape()), Some(1));
        assert_eq!(m.stored_order(&m.chunks), vec![256, 256, 3]);
        // Other names, or samples split over chunks, keep the stored axes.
        for (names, chunks) in [(["y", "x", "band"], 3), (["Y", "X", "S"], 2)] {
            let mut z = z.clone();
            z["chunks"] = json!([256, 256, chunks]);
            let attrs = json!({ "_ARRAY_DIMENSIONS": names });
            let m = ArrayMeta::from_v2("a", &z, Some(&attrs)).unwrap();
            assert_eq!((m.shape, m.stored_axes), (vec![200, 300, 3], None));
        }
    }

    #[test]
    fn rejects_inconsistent_and_hostile() {
        let z = json!({"shape": [10], "chunks": [5, 5], "dtype": "<u2", "fill_value": 0});
        assert!(ArrayMeta::from_v2("a", &z, None).is_err());
        let z = json!({"shape": [1u64 << 40, 1u64 << 40], "chunks": [1u64 << 20, 1u64 << 20], "dtype": "<u2", "fill_value": 0});
        assert!(matches!(
            ArrayMeta::from_v2("a", &z, None),
            Err(Error::Limits { .. })
        ));
        // More chunks than a u64 counts (GDAL's fixture: 4e9 x 4e9 x 4).
        let z = json!({"shape": [4_000_000_000u64, 4_000_000_000u64, 4], "chunks": [1, 1, 1],
            "dtype": ">u1", "fill_value": null});
        let e = ArrayMeta::from_v2("x", &z, None).unwrap_err();
        assert!(e.to_string().contains("more than 2^64 chunks"), "{e}");
    }
}
