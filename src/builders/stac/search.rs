//! A STAC API item search: the first page asked with GET and the query's
//! parameters, then every `next` link (GET, or POST with the link's body),
//! at most [`Limits::pages`] pages, a page asked twice being a loop.

use std::collections::HashSet;

use serde_json::Value;

use super::{base_of, follow, read_json, Found, Hosts, Limits, Query};
use crate::base::error::{Error, Result};
use crate::io::documents::{self, Request};

/// Items asked for per page.
const PAGE_SIZE: usize = 250;

/// Takes the items the search `url` with `query` finds into `found`.
pub(super) fn search(
    url: &str,
    query: &Query,
    keys: &[String],
    limits: &Limits,
    hosts: &Hosts,
    found: &mut Found,
) -> Result<()> {
    let mut params = vec![("limit", PAGE_SIZE.to_string())];
    let fields = [
        ("bbox", &query.bbox),
        ("datetime", &query.datetime),
        ("collections", &query.collections),
    ];
    params.extend(
        fields
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.clone()?))),
    );
    if let Some(filter) = &query.filter {
        let lang = match filter.trim_start().starts_with('{') {
            true => "cql2-json",
            false => "cql2-text",
        };
        params.push(("filter", filter.clone()));
        params.push(("filter-lang", lang.to_string()));
    }
    let mut request = Request {
        url: documents::with_query(url, &params)?,
        body: None,
    };
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
