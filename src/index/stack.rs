//! Time stacks: indexes of several files on one grid made into one index
//! whose arrays gain a leading `time` axis (one chunk per step), and the
//! selection of a time range out of such an index at open time.
//!
//! Every array `(..., y, x)` of the steps becomes `(T, ..., y, x)` with
//! chunks `(1, ...)`, `_ARRAY_DIMENSIONS` `["time", ...]` and the attribute
//! `chunkref:datetime` (one ISO 8601 text or null per step); step `t`'s chunk
//! of rank `p` becomes rank `t * chunks_per_step + p`.

use serde_json::{json, Map, Value};

use super::table::TIME_DIMENSION;
use super::{split_key, Index, Store};
use crate::error::{Error, Result};
use crate::georef::band::COLOR_ATTRIBUTE;
use crate::refs::{ChunkRef, FileTable, RawRef};
use crate::zarr::ArrayMeta;

/// Array attribute listing each time step's datetime (text or null).
pub const DATETIME_ATTRIBUTE: &str = "chunkref:datetime";

/// One time step: the index of one file and its datetime, if known.
#[derive(Debug)]
pub struct Step {
    /// The file's index.
    pub index: Index,
    /// ISO 8601 datetime of the step.
    pub datetime: Option<String>,
}

/// Root attribute naming the indexed source(s), which differs between steps.
const SOURCE_ATTRIBUTE: &str = "source";

/// The metadata documents of a step that must agree across steps: every
/// document, the root `source` attribute left out.
fn comparable(index: &Index) -> Vec<(&String, Value)> {
    index
        .metadata
        .iter()
        .map(|(k, v)| {
            let mut v = v.clone();
            if k == ".zattrs" {
                if let Some(o) = v.as_object_mut() {
                    o.remove(SOURCE_ATTRIBUTE);
                }
            }
            (k, v)
        })
        .collect()
}

/// The first index (by position) not on the grid of the first one, and the
/// metadata document that differs; `None` when all can be stacked.
pub fn off_grid<'a>(indexes: impl IntoIterator<Item = &'a Index>) -> Option<(usize, String)> {
    let mut indexes = indexes.into_iter();
    let reference = comparable(indexes.next()?);
    indexes.enumerate().find_map(|(i, index)| {
        let docs = comparable(index);
        let differs = reference
            .iter()
            .zip(&docs)
            .find(|(a, b)| a != b)
            .map(|(a, _)| a.0.clone())
            .or_else(|| (reference.len() != docs.len()).then(|| "the set of documents".into()));
        differs.map(|key| (i + 1, key))
    })
}

/// Stacks `steps` (in order) into one index named `source`. Every step
/// must have the same arrays and metadata (shape, chunks, codec, georeferencing).
pub fn stack(source: &str, steps: Vec<Step>) -> Result<Index> {
    let bad = |reason: String| Error::MalformedIndex {
        index: source.to_string(),
        reason,
    };
    let first = steps
        .first()
        .ok_or_else(|| bad("no time step to stack".into()))?;
    if let Some((i, key)) = off_grid(steps.iter().map(|s| &s.index)) {
        return Err(bad(format!(
            "{} is not on the grid of {}: metadata '{key}' differs (a time stack needs files \
             with the same size, tiling, data type, compression and georeferencing)",
            steps[i].index.source, first.index.source
        )));
    }
    let times = steps.len() as u64;
    let datetimes: Vec<Value> = steps.iter().map(|s| json!(s.datetime)).collect();
    let mut docs = std::collections::HashMap::new();
    for (key, doc) in &first.index.metadata {
        let (dir, name) = split_key(key);
        let doc = match name {
            ".zarray" => {
                let mut d = doc.clone();
                prepend(&mut d, "shape", json!(times)).map_err(|e| bad(format!("{key}: {e}")))?;
                prepend(&mut d, "chunks", json!(1)).map_err(|e| bad(format!("{key}: {e}")))?;
                d
            }
            "zarr.json" if doc.get("node_type").and_then(Value::as_str) == Some("array") => {
                return Err(Error::unsupported(format!(
                    "time stacks of Zarr v3 arrays ('{key}' in {})",
                    first.index.source
                )))
            }
            ".zattrs"
                if first
                    .index
                    .metadata
                    .contains_key(&super::join_key(dir, ".zarray")) =>
            {
                let mut d = doc.as_object().cloned().unwrap_or_default();
                let ndim = first.index.array(dir).map_or(0, |a| a.meta.shape.len());
                let mut dims = d
                    .get("_ARRAY_DIMENSIONS")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_else(|| (0..ndim).map(|i| json!(format!("dim_{i}"))).collect());
                dims.insert(0, json!(TIME_DIMENSION));
                d.insert("_ARRAY_DIMENSIONS".into(), Value::Array(dims));
                // Per-band lists cover every band of every step.
                if let Some(Value::Array(list)) = d.get_mut(COLOR_ATTRIBUTE) {
                    *list = list
                        .iter()
                        .cycle()
                        .take(list.len() * steps.len())
                        .cloned()
                        .collect();
                }
                d.insert(DATETIME_ATTRIBUTE.into(), Value::Array(datetimes.clone()));
                Value::Object(d)
            }
            ".zattrs" if key == ".zattrs" => {
                let mut d = doc.as_object().cloned().unwrap_or_default();
                let sources: Vec<Value> = steps
                    .iter()
                    .map(|s| {
                        let root = s.index.metadata.get(".zattrs");
                        root.and_then(|r| r.get(SOURCE_ATTRIBUTE))
                            .cloned()
                            .unwrap_or(Value::Null)
                    })
                    .collect();
                d.insert(SOURCE_ATTRIBUTE.into(), Value::Array(sources));
                Value::Object(d)
            }
            _ => doc.clone(),
        };
        docs.insert(key.clone(), doc);
    }
    // Arrays without .zattrs still need the time dimension name.
    for a in &first.index.arrays {
        let key = super::join_key(&a.meta.path, ".zattrs");
        docs.entry(key).or_insert_with(|| {
            let mut dims = vec![json!(TIME_DIMENSION)];
            dims.extend((0..a.meta.shape.len()).map(|i| json!(format!("dim_{i}"))));
            json!({"_ARRAY_DIMENSIONS": dims, DATETIME_ATTRIBUTE: datetimes.clone()})
        });
    }
    let store = Store::from_documents(docs)?;
    let mut files = FileTable::default();
    let mut file_attributes = Vec::new();
    let mut rows = store.empty_rows();
    for (t, step) in steps.iter().enumerate() {
        let ids: Vec<u32> = step
            .index
            .files
            .urls()
            .iter()
            .map(|u| {
                let id = files.push(u);
                let mut attrs = Map::new();
                if let Some(d) = &step.datetime {
                    attrs.insert("datetime".into(), json!(d));
                }
                file_attributes.push(attrs);
                id
            })
            .collect();
        for (a, array) in step.index.arrays.iter().enumerate() {
            let per_step: u64 = array.meta.grid_shape().iter().product();
            for (pos, r) in array.refs.table()?.iter() {
                let pos = t as u64 * per_step + pos;
                rows[a].push((pos, raw(r, |f| ids[f as usize])));
            }
        }
    }
    let mut index = store.into_index(source, files, rows);
    index.file_attributes = file_attributes;
    Ok(index)
}

/// A stored reference as a new row, its file id mapped through `id`.
pub(crate) fn raw(r: ChunkRef<'_>, id: impl Fn(u32) -> u32) -> RawRef {
    match r {
        ChunkRef::Inline(b) => RawRef::Inline(b.clone()),
        ChunkRef::Whole { file } => RawRef::Whole(id(file)),
        ChunkRef::Range {
            file,
            offset,
            length,
        } => RawRef::Range(id(file), offset, length),
        ChunkRef::Multi { file, ranges } => RawRef::Multi(id(file), ranges.to_vec()),
    }
}

/// Puts `value` first in the list `doc[field]`.
fn prepend(doc: &mut Value, field: &str, value: Value) -> std::result::Result<(), String> {
    doc.get_mut(field)
        .and_then(Value::as_array_mut)
        .ok_or_else(|| format!("no '{field}' list"))?
        .insert(0, value);
    Ok(())
}

/// Open options choosing time steps: `TIME_STEP` (one step), `TIME_START`
/// and `TIME_END` (inclusive bounds); each a 0-based step number or an ISO
/// 8601 datetime (compared with the steps' `chunkref:datetime`, a date
/// taking in every time of that day).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TimeOptions {
    /// `TIME_STEP`.
    pub step: Option<String>,
    /// `TIME_START`.
    pub start: Option<String>,
    /// `TIME_END`.
    pub end: Option<String>,
}

impl TimeOptions {
    /// Picks the time options out of open options (names case-insensitive).
    pub fn from_options(options: &[(String, String)]) -> TimeOptions {
        let get = |name: &str| {
            options
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.trim().to_string())
        };
        TimeOptions {
            step: get("TIME_STEP"),
            start: get("TIME_START"),
            end: get("TIME_END"),
        }
    }

    /// True when no time option is set.
    pub fn is_empty(&self) -> bool {
        *self == TimeOptions::default()
    }
}

impl TimeOptions {
    /// The first and last step (inclusive) the options choose among the
    /// steps of the time-stack arrays of `metas` (`source` names the index).
    pub fn steps(&self, source: &str, metas: &[&ArrayMeta]) -> Result<(u64, u64)> {
        let usage = |what: String| Error::Usage { what };
        let Some(first) = metas.iter().find(|m| is_time_stack(m)) else {
            return Err(usage(format!(
                "TIME_STEP/TIME_START/TIME_END given, but no array of {source} has a time axis with one step per chunk"
            )));
        };
        let steps = first.shape[0];
        let datetimes: Vec<Option<&str>> = first
            .attributes
            .get(DATETIME_ATTRIBUTE)
            .and_then(Value::as_array)
            .map(|l| l.iter().map(Value::as_str).collect())
            .unwrap_or_default();
        // A step number, or the first (last) step whose datetime is not
        // before (after) `value`.
        let resolve = |name: &str, value: &str, from_end: bool| -> Result<u64> {
            if let Ok(n) = value.parse::<u64>() {
                return if n < steps {
                    Ok(n)
                } else {
                    Err(usage(format!(
                        "{name}={value} is outside the {steps} time steps (0 to {}) of {source}",
                        steps.saturating_sub(1)
                    )))
                };
            }
            let fits = |d: &&str| {
                if from_end {
                    *d <= value || d.starts_with(value)
                } else {
                    *d >= value
                }
            };
            let hit = if from_end {
                datetimes.iter().rposition(|d| d.as_ref().is_some_and(fits))
            } else {
                datetimes.iter().position(|d| d.as_ref().is_some_and(fits))
            };
            hit.map(|i| i as u64).ok_or_else(|| {
                usage(format!(
                    "{name}={value}: no time step of {source} has a datetime {} it (a value is a step number or an ISO 8601 datetime)",
                    if from_end { "at or before" } else { "at or after" }
                ))
            })
        };
        let (lo, hi) = match (&self.step, &self.start, &self.end) {
            (Some(s), None, None) => {
                let t = resolve("TIME_STEP", s, false)?;
                (t, t)
            }
            (None, start, end) => (
                start
                    .as_deref()
                    .map_or(Ok(0), |v| resolve("TIME_START", v, false))?,
                end.as_deref().map_or(Ok(steps.saturating_sub(1)), |v| {
                    resolve("TIME_END", v, true)
                })?,
            ),
            _ => {
                return Err(usage(
                    "TIME_STEP cannot be combined with TIME_START or TIME_END".into(),
                ))
            }
        };
        if lo > hi {
            return Err(usage(format!(
                "the time range chooses no step (first {lo}, last {hi}) of {source}"
            )));
        }
        Ok((lo, hi))
    }
}

/// Keeps the time steps `options` choose of every time-axis array of `index`.
pub fn select_time(mut index: Index, options: &TimeOptions) -> Result<Index> {
    let metas: Vec<&ArrayMeta> = index.arrays.iter().map(|a| &a.meta).collect();
    let (lo, hi) = options.steps(&index.source, &metas)?;
    for array in index.arrays.iter_mut().filter(|a| is_time_stack(&a.meta)) {
        let per_step: u64 = array.meta.grid_shape()[1..].iter().product();
        array.refs.keep_range(lo * per_step, (hi + 1) * per_step);
        let keep = |list: &mut Vec<Value>| {
            *list = list
                .iter()
                .skip(lo as usize)
                .take((hi - lo + 1) as usize)
                .cloned()
                .collect();
        };
        let bands: u64 = array.meta.shape[1..array.meta.shape.len() - 2]
            .iter()
            .product();
        let keep_bands = |list: &mut Vec<Value>| {
            let (from, n) = ((lo * bands) as usize, ((hi - lo + 1) * bands) as usize);
            *list = list.iter().skip(from).take(n).cloned().collect();
        };
        array.meta.shape[0] = hi - lo + 1;
        if let Some(Value::Array(list)) = array.meta.attributes.get_mut(DATETIME_ATTRIBUTE) {
            keep(list);
        }
        if let Some(Value::Array(list)) = array.meta.attributes.get_mut(COLOR_ATTRIBUTE) {
            keep_bands(list);
        }
        // Keep the metadata documents in step with the arrays.
        let path = &array.meta.path;
        if let Some(shape) = index
            .metadata
            .get_mut(&super::join_key(path, ".zarray"))
            .and_then(|d| d.get_mut("shape"))
            .and_then(Value::as_array_mut)
        {
            shape[0] = json!(hi - lo + 1);
        }
        if let Some(attrs) = index.metadata.get_mut(&super::join_key(path, ".zattrs")) {
            if let Some(Value::Array(list)) = attrs.get_mut(DATETIME_ATTRIBUTE) {
                keep(list);
            }
            if let Some(Value::Array(list)) = attrs.get_mut(COLOR_ATTRIBUTE) {
                keep_bands(list);
            }
        }
    }
    Ok(index)
}

/// True when the array's first axis is time with one step per chunk.
pub fn is_time_stack(meta: &ArrayMeta) -> bool {
    meta.shape.len() >= 3
        && meta.chunks[0] == 1
        && meta
            .dimension_names
            .as_ref()
            .and_then(|d| d.first())
            .is_some_and(|d| d == TIME_DIMENSION)
}

/// The first date (`YYYYMMDD` or `YYYY-MM-DD`, optionally followed by a
/// time `THHMMSS`, `_HHMMSS` or `THH:MM:SS`) in a file name, as ISO 8601.
pub fn datetime_in_name(name: &str) -> Option<String> {
    let stem = std::path::Path::new(name).file_name()?.to_str()?;
    let b = stem.as_bytes();
    let digits = |at: usize, n: usize| -> Option<u32> {
        let s = b.get(at..at + n)?;
        s.iter()
            .all(u8::is_ascii_digit)
            .then(|| std::str::from_utf8(s).ok()?.parse().ok())?
    };
    // (value, next position) of `n` digits at `at`, after an optional `sep`.
    let field = |at: usize, sep: Option<u8>, n: usize| -> Option<(u32, usize)> {
        let at = if sep.is_some() && b.get(at) == sep.as_ref() {
            at + 1
        } else {
            at
        };
        digits(at, n).map(|v| (v, at + n))
    };
    for start in 0..b.len() {
        if start > 0 && b[start - 1].is_ascii_digit() {
            continue;
        }
        let Some(year) = digits(start, 4) else {
            continue;
        };
        let sep = (b.get(start + 4) == Some(&b'-')).then_some(b'-');
        let Some((month, at)) = field(start + 4, sep, 2) else {
            continue;
        };
        let Some((day, at)) = field(at, sep, 2) else {
            continue;
        };
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || b.get(at).is_some_and(u8::is_ascii_digit)
        {
            continue;
        }
        let date = format!("{year:04}-{month:02}-{day:02}");
        let time = matches!(b.get(at), Some(b'T' | b'_')).then(|| {
            let colon = (b.get(at + 3) == Some(&b':')).then_some(b':');
            let (h, next) = field(at + 1, None, 2)?;
            let (m, next) = field(next, colon, 2)?;
            let (s, _) = field(next, colon, 2)?;
            (h < 24 && m < 60 && s < 61).then(|| format!("T{h:02}:{m:02}:{s:02}"))
        });
        return Some(date + &time.flatten().unwrap_or_default());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const ZARRAY: &str = r#"{\"shape\": [1, 4, 6], \"chunks\": [1, 2, 3], \"dtype\": \"|u1\", \"fill_value\": 0, \"compressor\": null, \"filters\": null, \"order\": \"C\", \"zarr_format\": 2}"#;

    fn step(file: &str, datetime: &str) -> Step {
        let doc = format!(
            r#"{{"version": 1, "refs": {{".zgroup": "{{\"zarr_format\": 2}}", ".zattrs": "{{\"source\": \"{file}\"}}",
              "a/.zarray": "{ZARRAY}", "a/.zattrs": "{{\"_ARRAY_DIMENSIONS\": [\"bands\", \"y\", \"x\"]}}",
              "a/0.0.0": ["{file}", 0, 10], "a/0.1.1": ["{file}", 10, 10]}}}}"#
        );
        Step {
            index: Index::from_kerchunk_json(file, doc.as_bytes(), &[]).unwrap(),
            datetime: Some(datetime.into()),
        }
    }

    #[test]
    fn stacks_steps_and_selects_ranges() {
        let index = stack("s.parquet", (0..3).map(step_of).collect()).unwrap();
        let a = index.array("a").unwrap();
        assert_eq!(a.meta.shape, vec![3, 1, 4, 6]);
        assert_eq!(a.refs.table().unwrap().len(), 6);
        // Step 2's chunk (0, 1, 1) has rank 2 * 4 + 3.
        let Some(ChunkRef::Range { file, .. }) = a.refs.table().unwrap().get(11) else {
            panic!()
        };
        assert_eq!(index.files.url(file), "/d/2.tif");
        assert_eq!(index.file_attributes[2]["datetime"], "2021-01-03");

        let pick = |step: Option<&str>, start: Option<&str>, end: Option<&str>| {
            let options = TimeOptions {
                step: step.map(Into::into),
                start: start.map(Into::into),
                end: end.map(Into::into),
            };
            let steps = (0..3).map(step_of).collect();
            select_time(stack("s", steps).unwrap(), &options)
        };
        let picked = pick(None, Some("2021-01-02"), None).unwrap();
        let a = picked.array("a").unwrap();
        assert_eq!(a.meta.shape[0], 2);
        let Some(ChunkRef::Range { file, .. }) = a.refs.table().unwrap().get(3) else {
            panic!()
        };
        assert_eq!(picked.files.url(file), "/d/1.tif");
        assert_eq!(
            a.meta.attributes[DATETIME_ATTRIBUTE],
            json!(["2021-01-02", "2021-01-03"])
        );
        assert_eq!(
            pick(Some("2"), None, None)
                .unwrap()
                .array("a")
                .unwrap()
                .meta
                .shape[0],
            1
        );
        assert_eq!(
            pick(None, Some("1"), Some("2021-01-02"))
                .unwrap()
                .array("a")
                .unwrap()
                .meta
                .shape[0],
            1
        );
        assert!(pick(Some("3"), None, None)
            .unwrap_err()
            .to_string()
            .contains("outside the 3 time steps"));
        assert!(pick(None, Some("2022-01-01"), None).is_err());
        assert!(pick(None, Some("2"), Some("1")).is_err());
    }

    fn step_of(i: usize) -> Step {
        step(&format!("/d/{i}.tif"), &format!("2021-01-0{}", i + 1))
    }

    #[test]
    fn refuses_steps_off_the_grid() {
        let mut other = step("/d/x.tif", "2021-01-01");
        other
            .index
            .metadata
            .insert("a/.zarray".into(), json!({"shape": [1, 4, 7]}));
        let e = stack("s", vec![step_of(0), other]).unwrap_err().to_string();
        assert!(
            e.contains("/d/x.tif is not on the grid of /d/0.tif: metadata 'a/.zarray'"),
            "{e}"
        );
    }

    #[test]
    fn finds_datetimes_in_names() {
        assert_eq!(
            datetime_in_name("/x/20210102-sst.tif").as_deref(),
            Some("2021-01-02")
        );
        assert_eq!(
            datetime_in_name("sst_2021-01-02T10:20:30.tif").as_deref(),
            Some("2021-01-02T10:20:30")
        );
        assert_eq!(
            datetime_in_name("S2_20210102_101530_x.tif").as_deref(),
            Some("2021-01-02T10:15:30")
        );
        assert_eq!(datetime_in_name("v3_123456789.tif"), None);
        assert_eq!(datetime_in_name("/2021-01-02/a.tif"), None);
    }
}
