//! Several indexes made one, each moved under a group of its own (its
//! documents' keys and its arrays' paths prefixed, its files joined into
//! one file table): a mosaic's scenes (`scenes/<i>`), the stacks of a STAC
//! search on different grids (`<asset keys>`).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::base::error::{Error, Result};
use crate::index::refs::FileTable;
use crate::index::{Index, Store};

/// One index of `parts` (`(group, index)`: `index` moved under `group`),
/// named `source`; `root` holds the root group's attributes. The groups
/// between the root and each part's get a `.zgroup`.
pub fn nest(source: &str, parts: &[(String, &Index)], root: Map<String, Value>) -> Result<Index> {
    let mut docs: HashMap<String, Value> = HashMap::new();
    let zgroup = serde_json::json!({"zarr_format": 2});
    docs.insert(".zgroup".into(), zgroup.clone());
    docs.insert(".zattrs".into(), Value::Object(root));
    for (prefix, index) in parts {
        let mut dir = String::new();
        for step in prefix.split('/') {
            dir = if dir.is_empty() {
                step.into()
            } else {
                format!("{dir}/{step}")
            };
            docs.insert(format!("{dir}/.zgroup"), zgroup.clone());
        }
        for (key, doc) in &index.metadata {
            if !key.ends_with(".zmetadata") {
                docs.insert(format!("{prefix}/{key}"), doc.clone());
            }
        }
    }
    let store = Store::from_documents(docs)?;
    let mut files = FileTable::default();
    let mut attributes: Vec<Map<String, Value>> = Vec::new();
    let mut rows = store.empty_rows();
    for (prefix, index) in parts {
        let ids: Vec<u32> = index.files.urls().iter().map(|u| files.intern(u)).collect();
        for (old, &new) in ids.iter().enumerate() {
            if let Some(a) = index.file_attributes.get(old).filter(|a| !a.is_empty()) {
                if attributes.len() <= new as usize {
                    attributes.resize_with(new as usize + 1, Map::new);
                }
                attributes[new as usize] = a.clone();
            }
        }
        for array in &index.arrays {
            let path = format!("{prefix}/{}", array.meta.path);
            let path = path.trim_end_matches('/');
            let Ok(a) = store
                .metas()
                .binary_search_by(|m| m.path.as_str().cmp(path))
            else {
                return Err(Error::MalformedIndex {
                    index: source.to_string(),
                    reason: format!("array '{path}' of {} was lost", index.source),
                });
            };
            rows[a].extend(
                array
                    .refs
                    .table()?
                    .iter()
                    .map(|(pos, r)| (pos, r.to_raw().map_file(|f| ids[f as usize]))),
            );
        }
    }
    let mut index = store.into_index(source, files, rows);
    if !attributes.is_empty() {
        attributes.resize_with(index.files.urls().len(), Map::new);
        index.file_attributes = attributes;
    }
    Ok(index)
}
