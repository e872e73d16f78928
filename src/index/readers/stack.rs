//! Time stacks (made by [`crate::builders::writers::stacker`]): arrays with a leading `time`
//! axis, one chunk per step, and the selection of a time range out of such
//! an index at open time.

use serde_json::{json, Value};

use crate::base::error::{Error, Result};
use crate::conventions::attributes::COLOR_ATTRIBUTE;
use crate::conventions::attributes::DATETIME_ATTRIBUTE;
use crate::index::table::is_time_stack;
use crate::index::zarr::ArrayMeta;
use crate::index::Index;

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
            .get_mut(&crate::index::join_key(path, ".zarray"))
            .and_then(|d| d.get_mut("shape"))
            .and_then(Value::as_array_mut)
        {
            shape[0] = json!(hi - lo + 1);
        }
        if let Some(attrs) = index
            .metadata
            .get_mut(&crate::index::join_key(path, ".zattrs"))
        {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::writers::stacker::tests::step;
    use crate::builders::writers::stacker::{stack, Prepared};
    use crate::index::refs::ChunkRef;

    #[test]
    fn stacks_steps_and_selects_ranges() {
        let index = stack("s.parquet", (0..3).map(step_of)).unwrap();
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
            let steps = (0..3).map(step_of);
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

    fn step_of(i: usize) -> Prepared {
        step(&format!("/d/{i}.tif"), &format!("2021-01-0{}", i + 1))
            .prepare("s")
            .unwrap()
    }
}
