//! Growing collections, the build side (docs/reference-table.md, "Growing
//! collections"): appending a stack's document to a collection's
//! (`--append`) and joining shards (`--merge-shards`). The parts list and
//! the names of parts are the index's (`crate::index::parts`).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::base::error::{Error, Result};
use crate::conventions::attributes::{
    BANDS_ATTRIBUTE, COLOR_ATTRIBUTE, DATETIME_ATTRIBUTE, SOURCE_ATTRIBUTE,
};
use crate::index::parts::{part_name, shard_name, PartsList, PARTS_FILE};
use crate::index::split_key;
use crate::index::table::{Rows, TableDoc};

/// Per-band lists of a stack's arrays: one entry per band of every step.
const PER_BAND: [&str; 2] = [COLOR_ATTRIBUTE, BANDS_ATTRIBUTE];

/// A part's document and the first time step its rows hold (`None`
/// without rows).
pub type Footer = (TableDoc, Option<u64>);

/// Shards joined into one collection: the parts list, and the part that
/// holds the collection's document (no rows) with that document.
#[derive(Debug)]
pub struct Joined {
    /// Every shard in order, then the document part.
    pub parts: PartsList,
    /// Name and document of the part holding the collection's document.
    pub document: (String, TableDoc),
}

/// Joins the shards of the collection directory `collection` (its file
/// names from `list`, each shard's document and first time step from
/// `read_footer`): every shard
/// `shard-I-of-N` for I in 0..N must be there, on one grid, its steps
/// numbered from where the shards before it end. No row is rewritten: the
/// shards wrote their rows numbered in the whole collection.
pub fn merge_shards(
    collection: &str,
    read_footer: &dyn Fn(&str) -> Result<Footer>,
    list: &dyn Fn() -> Result<Vec<String>>,
) -> Result<Joined> {
    let bad = |reason: String| Error::MalformedIndex {
        index: collection.to_string(),
        reason,
    };
    let names = list()?;
    if names.iter().any(|n| n == PARTS_FILE) {
        return Err(bad(format!(
            "it already has a {PARTS_FILE}: its shards were merged"
        )));
    }
    let count = names
        .iter()
        .find_map(|n| {
            let rest = n.strip_prefix("shard-")?.strip_suffix(".parquet")?;
            rest.split_once("-of-")?.1.parse::<usize>().ok()
        })
        .ok_or_else(|| bad("no shard-I-of-N.parquet part in it".into()))?;
    let shards: Vec<String> = (0..count).map(|i| shard_name(i, count)).collect();
    let missing: Vec<&String> = shards.iter().filter(|s| !names.contains(s)).collect();
    if !missing.is_empty() {
        return Err(bad(format!("shards missing: {missing:?}")));
    }
    let footers = shards
        .iter()
        .map(|s| read_footer(s))
        .collect::<Result<Vec<_>>>()?;
    let steps: Vec<u64> = footers
        .iter()
        .map(|(d, _)| next_numbers(collection, d).map(|(t, _)| u64::from(t)))
        .collect::<Result<_>>()?;
    let total: u64 = steps.iter().sum();
    let mut joined: Option<TableDoc> = None;
    for (i, (doc, first_row_step)) in footers.into_iter().enumerate() {
        let first = (i as u64) * total / count as u64;
        let done = joined
            .as_ref()
            .map_or(Ok((0, 0)), |j| next_numbers(collection, j))?;
        let numbered_from = first_row_step.unwrap_or(first);
        if u64::from(done.0) != first || u64::from(done.1) != first || numbered_from != first {
            return Err(bad(format!(
                "{} numbers its steps from {numbered_from}, but the shards before it hold {} \
                 steps (were all shards run over the same list of sources?)",
                shards[i], done.0
            )));
        }
        joined = Some(match joined {
            None => doc,
            Some(j) => append(collection, &j, &doc)?.doc,
        });
    }
    let document = part_name(count);
    let mut parts = shards;
    parts.push(document.clone());
    Ok(Joined {
        parts: PartsList {
            chunkref_parts: 1,
            parts,
        },
        document: (document, joined.ok_or_else(|| bad("no shard".into()))?),
    })
}

/// The collection once the stack `new` (steps and files numbered from 0)
/// is appended to the collection `old`: its document, and the time step
/// and file number the new rows start at.
#[derive(Debug)]
pub struct Appended {
    /// The whole collection's document.
    pub doc: TableDoc,
    /// Added to the new rows' `time`.
    pub first_step: u32,
    /// Added to the new rows' `file`.
    pub first_file: u32,
}

impl Appended {
    /// `rows` of the new stack renumbered into the collection.
    pub fn renumber(&self, rows: &Rows) -> Rows {
        let mut rows = rows.clone();
        rows.time.iter_mut().for_each(|t| *t += self.first_step);
        rows.file.iter_mut().for_each(|f| *f += self.first_file);
        rows
    }
}

/// The time step and file number the rows of a stack appended to the
/// collection `old` start at.
pub fn next_numbers(collection: &str, old: &TableDoc) -> Result<(u32, u32)> {
    let bad = |reason: &str| Error::MalformedIndex {
        index: collection.to_string(),
        reason: reason.to_string(),
    };
    let steps = old
        .arrays
        .first()
        .filter(|a| a.time_axis)
        .and_then(|a| old.metadata.get(&format!("{}/.zarray", a.path)))
        .and_then(|z| z.get("shape")?.get(0)?.as_u64())
        .ok_or_else(|| bad("not a time stack: only time stacks grow by appending"))?;
    let step = u32::try_from(steps).map_err(|_| bad("more than 2^32 time steps"))?;
    let file = u32::try_from(old.files.len()).map_err(|_| bad("more than 2^32 files"))?;
    Ok((step, file))
}

/// Appends the stack document `new` to the collection document `old`
/// (`collection` names it in messages): the two must describe the same
/// arrays on the same grid (every metadata document equal but for the
/// time axis's length, the step datetimes, per-step band lists and the
/// sources); the time axis grows, the lists and the file table are
/// concatenated.
pub fn append(collection: &str, old: &TableDoc, new: &TableDoc) -> Result<Appended> {
    let bad = |reason: String| Error::MalformedIndex {
        index: collection.to_string(),
        reason,
    };
    let same_arrays = old.arrays.len() == new.arrays.len()
        && old
            .arrays
            .iter()
            .zip(&new.arrays)
            .all(|(a, b)| a.path == b.path && a.time_axis && b.time_axis);
    if !same_arrays {
        let paths = |d: &TableDoc| d.arrays.iter().map(|a| a.path.clone()).collect::<Vec<_>>();
        return Err(bad(format!(
            "the new files' arrays {:?} differ from the collection's {:?} (a collection grows \
             by time steps of files on its grid, with the same overviews)",
            paths(new),
            paths(old)
        )));
    }
    let steps = |doc: &TableDoc| -> Option<u64> {
        let first = doc.arrays.first()?;
        doc.metadata
            .get(&format!("{}/.zarray", first.path))?
            .get("shape")?
            .get(0)?
            .as_u64()
    };
    let (Some(t_old), Some(t_new)) = (steps(old), steps(new)) else {
        return Err(bad("the collection is not a time stack".into()));
    };
    let keys = |doc: &TableDoc| doc.metadata.keys().cloned().collect::<Vec<_>>();
    if keys(old) != keys(new) || old.templates != new.templates {
        return Err(bad(
            "the new files' metadata documents differ from the collection's".into(),
        ));
    }
    let mut metadata = BTreeMap::new();
    for (key, a) in &old.metadata {
        let merged =
            merged_document(key, a, &new.metadata[key], t_old, t_new).ok_or_else(|| {
                bad(format!(
                    "the new files are not on the collection's grid: metadata '{key}' differs \
                     (a collection grows by files with the same size, tiling, data type, \
                     compression and georeferencing)"
                ))
            })?;
        metadata.insert(key.clone(), merged);
    }
    let mut inline = old.inline.clone();
    inline.extend(new.inline.clone());
    let count =
        |n: u64, what: &str| u32::try_from(n).map_err(|_| bad(format!("more than 2^32 {what}")));
    Ok(Appended {
        first_step: count(t_old, "time steps")?,
        first_file: count(old.files.len() as u64, "files")?,
        doc: TableDoc {
            chunkref_table: old.chunkref_table,
            arrays: old.arrays.clone(),
            files: old.files.iter().chain(&new.files).cloned().collect(),
            metadata,
            inline,
            templates: old.templates.clone(),
        },
    })
}

/// Document `key` of the collection after the append (`a` before, with
/// `t_a` steps; `b` the new stack's, with `t_b`), or `None` when `a` and
/// `b` differ in more than what grows.
fn merged_document(key: &str, a: &Value, b: &Value, t_a: u64, t_b: u64) -> Option<Value> {
    let (_, name) = split_key(key);
    let mut merged = a.clone();
    let (mut a, mut b) = (a.clone(), b.clone());
    match name {
        ".zarray" => {
            let shape = merged.get_mut("shape")?.as_array_mut()?;
            *shape.first_mut()? = Value::from(t_a + t_b);
            for doc in [&mut a, &mut b] {
                doc.get_mut("shape")?.as_array_mut()?.remove(0);
            }
        }
        ".zattrs" => {
            for field in [DATETIME_ATTRIBUTE, SOURCE_ATTRIBUTE] {
                let joined = joined_lists(a.get(field), b.get(field))?;
                if let Some(list) = joined {
                    merged[field] = list;
                }
            }
            for field in PER_BAND {
                if let (Some(Value::Array(la)), Some(Value::Array(lb))) =
                    (a.get(field), b.get(field))
                {
                    // One list per step, repeated: the same per-step list.
                    let per =
                        |l: &Vec<Value>, t: u64| Some(l.len() / usize::try_from(t).ok()?.max(1));
                    let (na, nb) = (per(la, t_a)?, per(lb, t_b)?);
                    if la[..na] != lb[..nb] {
                        return None;
                    }
                    let mut all = la.clone();
                    all.extend(lb.iter().cloned());
                    merged[field] = Value::Array(all);
                }
            }
            for doc in [&mut a, &mut b] {
                if let Some(o) = doc.as_object_mut() {
                    for field in [DATETIME_ATTRIBUTE, SOURCE_ATTRIBUTE]
                        .iter()
                        .chain(&PER_BAND)
                    {
                        o.remove(*field);
                    }
                }
            }
        }
        _ => {}
    }
    (a == b).then_some(merged)
}

/// `a` followed by `b` when both are lists, `Some(None)` when neither is
/// there, `None` when only one is or one is not a list.
fn joined_lists(a: Option<&Value>, b: Option<&Value>) -> Option<Option<Value>> {
    match (a, b) {
        (None, None) => Some(None),
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            Some(Some(Value::Array(a.iter().chain(b).cloned().collect())))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::table::{FileEntry, TableArray};
    use serde_json::json;

    fn stack(steps: u64, first: &str) -> TableDoc {
        let dates: Vec<Value> = (0..steps).map(|i| json!(format!("{first}-{i}"))).collect();
        TableDoc {
            chunkref_table: 1,
            arrays: vec![TableArray {
                path: "0/data".into(),
                time_axis: true,
                footprints: None,
            }],
            files: (0..steps)
                .map(|i| FileEntry {
                    path: format!("{first}{i}.tif"),
                    attributes: Default::default(),
                })
                .collect(),
            metadata: BTreeMap::from([
                (
                    ".zattrs".into(),
                    json!({"source": dates.clone(), "title": "x"}),
                ),
                (
                    "0/data/.zarray".into(),
                    json!({"shape": [steps, 1, 512, 512], "chunks": [1, 1, 256, 256]}),
                ),
                (
                    "0/data/.zattrs".into(),
                    json!({"chunkref:datetime": dates,
                           "chunkref:color_interpretation": vec![json!("Gray"); steps as usize]}),
                ),
            ]),
            inline: BTreeMap::new(),
            templates: BTreeMap::new(),
        }
    }

    #[test]
    fn appending_grows_time_and_concatenates_lists() {
        let done = append("c", &stack(3, "a"), &stack(2, "b")).unwrap();
        assert_eq!((done.first_step, done.first_file), (3, 3));
        let m = &done.doc.metadata;
        assert_eq!(m["0/data/.zarray"]["shape"], json!([5, 1, 512, 512]));
        assert_eq!(m["0/data/.zattrs"]["chunkref:datetime"][3], json!("b-0"));
        assert_eq!(
            m["0/data/.zattrs"]["chunkref:color_interpretation"]
                .as_array()
                .unwrap()
                .len(),
            5
        );
        assert_eq!(m[".zattrs"]["source"].as_array().unwrap().len(), 5);
        assert_eq!(done.doc.files[4].path, "b1.tif");
        let rows = Rows {
            time: vec![0, 1],
            file: vec![0, 1],
            ..Rows::default()
        };
        let renumbered = done.renumber(&rows);
        assert_eq!((renumbered.time, renumbered.file), (vec![3, 4], vec![3, 4]));
    }

    #[test]
    fn files_off_the_grid_are_refused_naming_the_document() {
        let mut other = stack(1, "b");
        other.metadata.get_mut("0/data/.zarray").unwrap()["chunks"] = json!([1, 1, 512, 512]);
        let e = append("c", &stack(2, "a"), &other).unwrap_err().to_string();
        assert!(e.contains("'0/data/.zarray' differs"), "{e}");
    }
}
