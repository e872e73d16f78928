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
