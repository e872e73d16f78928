//! The grouping rule: an item's assets on one grid (same size, tiling,
//! data type, compression, nodata and georeferencing) are joined as the
//! bands of one step ([`super::bands::join`]); steps of the same assets
//! whose joined indexes match make one time stack, in datetime order.
//! Assets or items on different grids make separate stacks (never a
//! resampling), named by their asset keys (`B02+B03+B04`), numbered
//! (`B11_2`) when the same assets lie on several grids.

use std::collections::HashMap;

use serde_json::json;

use super::bands::{join, signature};
use super::item::Item;
use crate::builders::writers::built::Built;
use crate::builders::writers::stacker::Step;
use crate::conventions::attributes::SOURCE_ATTRIBUTE;

/// The root attributes of `built` with `source` the item `id`.
fn root_attributes(built: &Built, id: &str) -> serde_json::Value {
    let mut root = built
        .metadata
        .get(".zattrs")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(r) = root.as_object_mut() {
        r.insert(SOURCE_ATTRIBUTE.into(), json!(id));
    }
    root
}

/// One time stack of the output: its name and its steps, in time order.
#[derive(Debug)]
pub struct Stack {
    /// The group the stack is written under when there are several.
    pub name: String,
    /// One step per item, named by the item id.
    pub steps: Vec<Step>,
}

/// The stacks `items` make, each item with the indexes of its assets (in
/// the item's asset order), in the order their first step was met. An
/// error names the item whose assets could not be joined.
pub fn group(items: Vec<(Item, Vec<Built>)>) -> Result<Vec<Stack>, String> {
    let mut stacks: Vec<(Vec<String>, Stack)> = Vec::new();
    let mut by_key: HashMap<(Vec<String>, String), usize> = HashMap::new();
    for (item, builts) in items {
        // The item's assets by grid, in order of first appearance.
        let mut classes: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, built) in builts.iter().enumerate() {
            let grid = signature(built, false);
            match classes.iter_mut().find(|(g, _)| *g == grid) {
                Some((_, members)) => members.push(i),
                None => classes.push((grid, vec![i])),
            }
        }
        for (_, members) in classes {
            let assets: Vec<_> = members
                .iter()
                .map(|&i| (&item.assets[i], &builts[i]))
                .collect();
            let mut built = join(&assets).map_err(|e| format!("item '{}': {e}", item.id))?;
            // A step's source is its item.
            built
                .metadata
                .insert(".zattrs".into(), root_attributes(&built, &item.id));
            let keys: Vec<String> = assets.iter().map(|(a, _)| a.key.clone()).collect();
            let key = (keys.clone(), signature(&built, true));
            let at = *by_key.entry(key).or_insert_with(|| {
                let same = stacks.iter().filter(|(k, _)| *k == keys).count();
                let mut name = keys.join("+").replace('/', "_");
                if same > 0 {
                    name = format!("{name}_{}", same + 1);
                }
                stacks.push((
                    keys.clone(),
                    Stack {
                        name,
                        steps: Vec::new(),
                    },
                ));
                stacks.len() - 1
            });
            stacks[at].1.steps.push(Step {
                name: item.id.clone(),
                built,
                datetime: item.datetime.clone(),
            });
        }
    }
    let mut stacks: Vec<Stack> = stacks.into_iter().map(|(_, s)| s).collect();
    for s in &mut stacks {
        s.steps
            .sort_by(|a, b| (&a.datetime, &a.name).cmp(&(&b.datetime, &b.name)));
    }
    Ok(stacks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::stac::item::Asset;
    use crate::builders::writers::built::Ref;

    /// The index of a one-band asset of `width` columns at `x0`.
    fn built(url: &str, width: u64, x0: f64) -> Built {
        let mut b = Built::default();
        b.metadata.insert(".zattrs".into(), json!({"source": url}));
        b.metadata.insert(
            "0/data/.zarray".into(),
            json!({"shape": [1, 4, width], "chunks": [1, 4, 4], "dtype": "<u2", "fill_value": 0}),
        );
        b.metadata.insert(
            "0/.zattrs".into(),
            json!({"spatial:transform": [10.0, 0.0, x0, 0.0, -10.0, 0.0]}),
        );
        b.arrays
            .insert("0/data".into(), vec![Ref::single([0, 0, 0], url, 0, 8)]);
        b
    }

    fn item(id: &str, when: &str, assets: &[(&str, u64, f64)]) -> (Item, Vec<Built>) {
        let list = assets
            .iter()
            .map(|(k, _, _)| Asset {
                key: k.to_string(),
                href: format!("/d/{id}_{k}.tif"),
                bands: Vec::new(),
            })
            .collect();
        let builts = assets
            .iter()
            .map(|(k, w, x0)| built(&format!("/d/{id}_{k}.tif"), *w, *x0))
            .collect();
        let item = Item {
            id: id.into(),
            datetime: Some(when.into()),
            assets: list,
        };
        (item, builts)
    }

    #[test]
    fn assets_on_one_grid_are_bands_other_grids_other_stacks() {
        let stacks = group(vec![
            item(
                "b",
                "2021-01-02",
                &[("red", 8, 0.0), ("nir", 8, 0.0), ("swir", 4, 0.0)],
            ),
            item(
                "a",
                "2021-01-01",
                &[("red", 8, 0.0), ("nir", 8, 0.0), ("swir", 4, 0.0)],
            ),
            item(
                "c",
                "2021-01-03",
                &[("red", 8, 500.0), ("nir", 8, 500.0), ("swir", 4, 500.0)],
            ),
        ])
        .unwrap();
        let names: Vec<&str> = stacks.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["red+nir", "swir", "red+nir_2", "swir_2"]);
        let steps: Vec<&str> = stacks[0].steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(steps, ["a", "b"]);
        let step = &stacks[0].steps[0].built;
        assert_eq!(step.metadata["0/data/.zarray"]["shape"], json!([2, 4, 8]));
        assert_eq!(step.metadata[".zattrs"][SOURCE_ATTRIBUTE], json!("a"));
        assert_eq!(stacks[2].steps.len(), 1);
    }
}
