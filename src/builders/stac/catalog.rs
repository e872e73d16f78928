//! STAC JSON documents read from files or URLs: an item, an
//! ItemCollection (GeoJSON FeatureCollection), or a catalogue or
//! collection whose `child` and `item` links are walked, breadth first,
//! each document once, no deeper than [`Limits::depth`] and no more than
//! [`Limits::documents`] of them. A STAC API's landing page is not walked:
//! its `search` link is what is searched.

use std::collections::{HashSet, VecDeque};

use serde_json::Value;

use super::{base_of, follow, read_json, Found, Hosts, Limits};
use crate::base::error::{Error, Result};
use crate::io::documents::Request;

/// Conformance class of STAC API item search.
const ITEM_SEARCH: &str = "/item-search";

/// Takes the items of the document `source` and of the documents it links
/// to into `found`; when `source` is a STAC API's landing page, returns its
/// search URL instead. `searching` (a search was asked for) is refused for
/// anything but a landing page.
pub(super) fn walk(
    source: &str,
    keys: &[String],
    limits: &Limits,
    hosts: &Hosts,
    searching: bool,
    found: &mut Found,
) -> Result<Option<String>> {
    let mut queue = VecDeque::from([(source.to_string(), 0usize)]);
    let mut seen = HashSet::from([source.to_string()]);
    while let Some((name, depth)) = queue.pop_front() {
        let request = Request {
            url: name.clone(),
            body: None,
        };
        let doc = read_json(&request, limits)?;
        let base = base_of(&name)?;
        if depth == 0 {
            if let Some(search) = search_link(&doc) {
                let what = format!("the search link of {name}");
                return follow(search, &base, hosts, &what).map(Some);
            }
            if searching {
                return Err(Error::Usage {
                    what: format!(
                        "{source}: --bbox, --datetime, --collections and --filter search a \
                         STAC API; give its landing page or .../search URL"
                    ),
                });
            }
        }
        let kind = doc.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "Feature" => found.take(&doc, &base, keys, hosts, limits)?,
            "FeatureCollection" => {
                let features = doc.get("features").and_then(Value::as_array);
                for feature in features.into_iter().flatten() {
                    found.take(feature, &base, keys, hosts, limits)?;
                }
            }
            "Catalog" | "Collection" => {
                let links = doc.get("links").and_then(Value::as_array);
                for link in links.into_iter().flatten() {
                    let rel = link.get("rel").and_then(Value::as_str);
                    let Some(href) = link.get("href").and_then(Value::as_str) else {
                        continue;
                    };
                    if !matches!(rel, Some("child" | "item")) {
                        continue;
                    }
                    let what = format!("the {} link of {name}", rel.unwrap_or_default());
                    let next = follow(href, &base, hosts, &what)?;
                    if !seen.insert(next.clone()) {
                        continue;
                    }
                    if depth + 1 > limits.depth {
                        return Err(Error::Limits {
                            what: format!(
                                "{name} links deeper than {} levels (to {next})",
                                limits.depth
                            ),
                        });
                    }
                    if seen.len() > limits.documents {
                        return Err(Error::Limits {
                            what: format!(
                                "the catalogue {source} links more than {} documents",
                                limits.documents
                            ),
                        });
                    }
                    queue.push_back((next, depth + 1));
                }
            }
            other => {
                return Err(Error::MalformedSource {
                    path: name,
                    reason: format!(
                        "a STAC document of type '{other}' (expected Feature, \
                         FeatureCollection, Catalog or Collection)"
                    ),
                })
            }
        }
    }
    Ok(None)
}

/// The `search` link of a STAC API landing page (a catalogue conforming
/// to item search), if `doc` is one.
fn search_link(doc: &Value) -> Option<&str> {
    let conforms = doc.get("conformsTo")?.as_array()?;
    if !conforms
        .iter()
        .any(|c| c.as_str().is_some_and(|c| c.ends_with(ITEM_SEARCH)))
    {
        return None;
    }
    let links = doc.get("links")?.as_array()?;
    links
        .iter()
        .find(|l| l.get("rel").and_then(Value::as_str) == Some("search"))?
        .get("href")?
        .as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hosts(source: &str) -> Hosts {
        Hosts::new(source, Vec::new()).unwrap()
    }

    /// Catalogue `i` of a chain linking to `i + 1` and back to the first.
    fn chain(dir: &std::path::Path, n: usize) -> String {
        for i in 0..n {
            let doc = json!({"type": "Catalog", "id": format!("c{i}"), "links": [
                {"rel": "child", "href": format!("c{}.json", i + 1)},
                {"rel": "child", "href": "c0.json"}]});
            std::fs::write(dir.join(format!("c{i}.json")), doc.to_string()).unwrap();
        }
        let item = json!({"type": "Feature", "id": "x", "properties": {"datetime": null},
            "assets": {"a": {"href": "x.tif"}}});
        std::fs::write(dir.join(format!("c{n}.json")), item.to_string()).unwrap();
        dir.join("c0.json").to_string_lossy().into_owned()
    }

    #[test]
    fn walks_are_bounded_and_cycles_walked_once() {
        let dir = std::env::temp_dir().join(format!("chunkref-stac-walk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let root = chain(&dir, 5);
        let mut found = Found::default();
        let keys = ["a".to_string()];
        walk(
            &root,
            &keys,
            &Limits::default(),
            &hosts(&root),
            false,
            &mut found,
        )
        .unwrap();
        assert_eq!(found.items.len(), 1);
        assert_eq!(
            found.items[0].assets[0].href,
            dir.join("x.tif").to_string_lossy()
        );
        let shallow = Limits {
            depth: 3,
            ..Limits::default()
        };
        let e = walk(
            &root,
            &keys,
            &shallow,
            &hosts(&root),
            false,
            &mut Found::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("deeper than 3 levels"), "{e}");
        let few = Limits {
            documents: 2,
            ..Limits::default()
        };
        let e = walk(
            &root,
            &keys,
            &few,
            &hosts(&root),
            false,
            &mut Found::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("more than 2 documents"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
