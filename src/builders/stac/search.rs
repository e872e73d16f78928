//! A STAC API item search: the first page asked with POST and the query as
//! JSON (GET and query parameters when the API does not take POST), then
//! every `next` link (GET, or POST with the link's body), at most
//! [`Limits::pages`] pages, a page asked twice being a loop.

use std::collections::HashSet;

use serde_json::Value;

use super::{base_of, follow, read_json, Found, Hosts, Limits, Query};
use crate::base::error::{Error, Result};
use crate::io::documents::{self, Request};

/// Items asked for per page.
const PAGE_SIZE: usize = 250;

/// Takes the items the search `url` with `query` finds into `found`: the
/// first page asked with POST and a JSON body, as most APIs prefer, or,
/// when the API answers 405 (POST not allowed), with GET.
pub(super) fn search(
    url: &str,
    query: &Query,
    keys: &[String],
    limits: &Limits,
    hosts: &Hosts,
    found: &mut Found,
) -> Result<()> {
    let body = body_of(query)?;
    let first = Request {
        url: url.to_string(),
        body: Some(body.clone()),
    };
    match pages(url, first, keys, limits, hosts, found) {
        Err(e) if documents::method_not_allowed(&e) => {
            let params: Vec<(&str, String)> = body
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| match (k.as_str(), v) {
                    (_, Value::String(s)) => (k.as_str(), s.clone()),
                    ("bbox" | "collections", Value::Array(l)) => {
                        let text = |v: &Value| v.as_str().map_or(v.to_string(), str::to_string);
                        (k.as_str(), l.iter().map(text).collect::<Vec<_>>().join(","))
                    }
                    _ => (k.as_str(), v.to_string()),
                })
                .collect();
            let get = Request {
                url: documents::with_query(url, &params)?,
                body: None,
            };
            pages(url, get, keys, limits, hosts, found)
        }
        done => done,
    }
}

/// The JSON body of the search `query` (STAC API item search).
fn body_of(query: &Query) -> Result<Value> {
    let mut body = serde_json::Map::new();
    body.insert("limit".into(), Value::from(PAGE_SIZE));
    if let Some(bbox) = &query.bbox {
        let numbers: Option<Vec<f64>> = bbox.split(',').map(|v| v.trim().parse().ok()).collect();
        match numbers {
            Some(n) if n.len() == 4 || n.len() == 6 => body.insert("bbox".into(), n.into()),
            _ => {
                return Err(Error::Usage {
                    what: format!("--bbox {bbox}: expected minx,miny,maxx,maxy"),
                })
            }
        };
    }
    if let Some(datetime) = &query.datetime {
        body.insert("datetime".into(), Value::from(datetime.as_str()));
    }
    if let Some(ids) = &query.collections {
        let ids: Vec<&str> = ids.split(',').map(str::trim).collect();
        body.insert("collections".into(), ids.into());
    }
    if let Some(filter) = &query.filter {
        let (lang, value) = match filter.trim_start().starts_with('{') {
            true => (
                "cql2-json",
                serde_json::from_str(filter).map_err(|e| Error::Usage {
                    what: format!("--filter: not CQL2 JSON: {e}"),
                })?,
            ),
            false => ("cql2-text", Value::from(filter.as_str())),
        };
        body.insert("filter".into(), value);
        body.insert("filter-lang".into(), Value::from(lang));
    }
    Ok(Value::Object(body))
}

/// Takes the items of the pages of the search `url` from its page
/// `request` on, following `next` links.
fn pages(
    url: &str,
    mut request: Request,
    keys: &[String],
    limits: &Limits,
    hosts: &Hosts,
    found: &mut Found,
) -> Result<()> {
    let mut asked = HashSet::new();
    for page in 1.. {
        if page > limits.pages {
            return Err(Error::Limits {
                what: format!(
                    "the search {url} has more than {} pages (raise --max-pages, or narrow \
                     the search)",
                    limits.pages
                ),
            });
        }
        if !asked.insert(format!("{} {:?}", request.url, request.body)) {
            return Err(Error::MalformedSource {
                path: url.to_string(),
                reason: format!(
                    "page {page}'s next link asks again for {}: the pages loop",
                    request.url
                ),
            });
        }
        let doc = read_json(&request, limits)?;
        let base = base_of(&request.url)?;
        let features = doc
            .get("features")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::MalformedSource {
                path: request.url.clone(),
                reason: "a search page without a 'features' list".into(),
            })?;
        for feature in features {
            found.take(feature, &base, keys, hosts, limits)?;
        }
        match next_link(&doc, &base, hosts, &request)? {
            Some(next) => request = next,
            None => return Ok(()),
        }
    }
    Ok(())
}

/// The request the page `doc`'s `next` link makes, checked against `hosts`.
fn next_link(
    doc: &Value,
    base: &crate::io::resolve::Base,
    hosts: &Hosts,
    page: &Request,
) -> Result<Option<Request>> {
    let links = doc.get("links").and_then(Value::as_array);
    let Some(link) = links
        .into_iter()
        .flatten()
        .find(|l| l.get("rel").and_then(Value::as_str) == Some("next"))
    else {
        return Ok(None);
    };
    let href = link
        .get("href")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::MalformedSource {
            path: page.url.clone(),
            reason: "a next link without a text 'href'".into(),
        })?;
    let what = format!("the next link of {}", page.url);
    let url = follow(href, base, hosts, &what)?;
    let post = link
        .get("method")
        .and_then(Value::as_str)
        .is_some_and(|m| m.eq_ignore_ascii_case("POST"));
    let body = match (post, link.get("body")) {
        (false, _) => None,
        (true, Some(body)) if link.get("merge").and_then(Value::as_bool) == Some(true) => {
            let mut merged = page
                .body
                .clone()
                .unwrap_or_else(|| Value::Object(Default::default()));
            if let (Some(m), Some(b)) = (merged.as_object_mut(), body.as_object()) {
                m.extend(b.clone());
            }
            Some(merged)
        }
        (true, body) => Some(body.cloned().unwrap_or(Value::Object(Default::default()))),
    };
    Ok(Some(Request { url, body }))
}
