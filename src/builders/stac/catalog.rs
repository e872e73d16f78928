//! STAC JSON documents read from files or URLs: an item, an
//! ItemCollection (GeoJSON FeatureCollection), or a catalogue or
//! collection whose `child` and `item` links are walked, breadth first,
//! each document once, no deeper than [`Limits::depth`] and no more than
//! [`Limits::documents`] of them.

use std::collections::{HashSet, VecDeque};

use serde_json::Value;

use super::{base_of, follow, read_json, Found, Hosts, Limits};
use crate::base::error::{Error, Result};
use crate::io::documents::Request;

/// Takes the items of the document `source` and of the documents it links
/// to into `found`.
pub(super) fn walk(
    source: &str,
    keys: &[String],
    limits: &Limits,
    hosts: &Hosts,
    found: &mut Found,
) -> Result<()> {
    let mut queue = VecDeque::from([(source.to_string(), 0usize)]);
    let mut seen = HashSet::from([source.to_string()]);
    while let Some((name, depth)) = queue.pop_front() {
        let request = Request {
            url: name.clone(),
            body: None,
        };
        let doc = read_json(&request, limits)?;
        let base = base_of(&name)?;
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
    Ok(())
}
