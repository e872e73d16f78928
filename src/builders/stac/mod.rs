//! STAC in (docs/stac.md): the items of a STAC API search, an ItemCollection
//! or item file, a static catalogue or collection (its links walked), or a
//! STAC-GeoParquet table, made into the list of assets `chunkref index
//! --stac` indexes ([`read`]); the assets of an item on one grid joined as
//! bands ([`bands`]); the items grouped by grid into arrays ([`grids`]).
//!
//! Every walk is bounded ([`Limits`]) and every href checked against the
//! hosts the user allows ([`Hosts`]), so a hostile catalogue gets an error,
//! not an endless run or a read of files it should not reach.

pub mod bands;
mod catalog;
mod geoparquet;
pub mod grids;
pub mod item;
mod search;

use std::collections::HashSet;

use serde_json::Value;

use crate::base::error::{Error, Result};
use crate::io::documents::{self, Request};
use crate::io::resolve::{self, Base, Location, Scheme};
use item::{HrefRule, Item};

/// The search of a STAC API (`--bbox`, `--datetime`, `--collections`,
/// `--filter`), passed through as the API's query parameters.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// `minx,miny,maxx,maxy`.
    pub bbox: Option<String>,
    /// An RFC 3339 datetime or interval (`2021-01-01/2021-12-31`).
    pub datetime: Option<String>,
    /// Collection ids, comma separated.
    pub collections: Option<String>,
    /// A CQL2 filter: text, or JSON when it starts with `{`.
    pub filter: Option<String>,
}

impl Query {
    /// True when no search parameter was given.
    pub fn is_empty(&self) -> bool {
        self.bbox.is_none()
            && self.datetime.is_none()
            && self.collections.is_none()
            && self.filter.is_none()
    }
}

/// Bounds on what a catalogue can make the command read.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most search pages followed (`--max-pages`).
    pub pages: usize,
    /// Most documents (catalogues, collections, item files) read in a walk.
    pub documents: usize,
    /// Deepest link walked from the catalogue given.
    pub depth: usize,
    /// Most items taken (`--max-items`).
    pub items: usize,
    /// Largest document read, in bytes.
    pub document_bytes: u64,
    /// Largest STAC-GeoParquet file read, in bytes.
    pub table_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            pages: 1000,
            documents: 10_000,
            depth: 32,
            items: 1_000_000,
            document_bytes: 64 << 20,
            table_bytes: 1 << 30,
        }
    }
}

/// Where links and hrefs may point: the host of the catalogue given (or
/// local files, for a local one), and the hosts `--allow-host` names (`*`:
/// any).
#[derive(Debug, Clone)]
pub struct Hosts {
    /// The catalogue's store and host; `None` when it is a local file.
    home: Option<(Scheme, String)>,
    /// Other hosts (buckets) allowed.
    allowed: Vec<String>,
}

impl Hosts {
    /// The hosts a catalogue at `source` may point to, with `allowed`.
    pub fn new(source: &str, allowed: Vec<String>) -> Result<Hosts> {
        let home = match crate::io::source::locate(source)? {
            Location::Local(_) => None,
            Location::Object(o) => Some((o.scheme, o.authority)),
        };
        Ok(Hosts { home, allowed })
    }
}

impl HrefRule for Hosts {
    fn check(&self, href: &Location) -> std::result::Result<(), String> {
        if self.allowed.iter().any(|a| a == "*") {
            return Ok(());
        }
        match (href, &self.home) {
            (Location::Local(_), None) => Ok(()),
            (Location::Local(p), Some(_)) => Err(format!(
                "the local path {} is refused in a remote catalogue",
                p.display()
            )),
            (Location::Object(o), home) => {
                let same = home
                    .as_ref()
                    .is_some_and(|(s, a)| (*s, a.as_str()) == (o.scheme, o.authority.as_str()));
                if same || self.allowed.contains(&o.authority) {
                    return Ok(());
                }
                Err(format!(
                    "{} is on another host than the catalogue: pass --allow-host {} to read it",
                    o, o.authority
                ))
            }
        }
    }
}

/// What a catalogue gave: its items (in the order met, each id once), and
/// the items that could not be taken, with the reason.
#[derive(Debug, Default)]
pub struct Found {
    /// Items with every selected asset.
    pub items: Vec<Item>,
    /// `(item id or document, reason)` of items left out.
    pub failures: Vec<(String, String)>,
    /// Ids met so far.
    seen: HashSet<String>,
}

impl Found {
    /// Takes the item `doc` read from a document at `base`.
    fn take(
        &mut self,
        doc: &Value,
        base: &Base,
        keys: &[String],
        hosts: &Hosts,
        limits: &Limits,
    ) -> Result<()> {
        let id = doc.get("id").and_then(Value::as_str).unwrap_or("(no id)");
        if !self.seen.insert(id.to_string()) {
            return Ok(());
        }
        if self.seen.len() > limits.items {
            return Err(Error::Limits {
                what: format!(
                    "more than {} items (raise --max-items to take more)",
                    limits.items
                ),
            });
        }
        match Item::from_json(doc, base, keys, hosts) {
            Ok(item) => self.items.push(item),
            Err(e) => self.failures.push((id.to_string(), e)),
        }
        Ok(())
    }
}

/// The items of the STAC source `source` with the assets `keys`: a STAC API
/// (its `.../search` URL or its landing page: searched with `query`, its
/// pages followed), a STAC-GeoParquet file (`.parquet`), or a JSON
/// document: an item, an ItemCollection, a catalogue or collection (its
/// `child` and `item` links walked).
pub fn read(
    source: &str,
    keys: &[String],
    query: &Query,
    limits: &Limits,
    hosts: &Hosts,
) -> Result<Found> {
    let mut found = Found::default();
    let lower = source.to_ascii_lowercase();
    let path = lower.split(['?', '#']).next().unwrap_or_default();
    let is_api = path.ends_with("/search") && is_http(source);
    let is_table = path.ends_with(".parquet") || path.ends_with(".geoparquet");
    if is_api {
        search::search(source, query, keys, limits, hosts, &mut found)?;
    } else if is_table {
        if !query.is_empty() {
            return Err(Error::Usage {
                what: format!(
                    "{source}: --bbox, --datetime, --collections and --filter search a STAC \
                     API, not a STAC-GeoParquet table"
                ),
            });
        }
        geoparquet::read(source, keys, limits, hosts, &mut found)?;
    } else if let Some(api) =
        catalog::walk(source, keys, limits, hosts, !query.is_empty(), &mut found)?
    {
        search::search(&api, query, keys, limits, hosts, &mut found)?;
    }
    Ok(found)
}

/// True when `name` is an HTTP(S) URL.
fn is_http(name: &str) -> bool {
    matches!(
        crate::io::source::locate(name),
        Ok(Location::Object(o)) if matches!(o.scheme, Scheme::Http | Scheme::Https)
    )
}

/// The JSON document `request` names, at most `limits.document_bytes`
/// long; invalid JSON is an error naming it.
fn read_json(request: &Request, limits: &Limits) -> Result<Value> {
    let bytes = documents::read(request, limits.document_bytes)?;
    serde_json::from_slice(&bytes).map_err(|e| Error::MalformedSource {
        path: request.url.clone(),
        reason: format!("not a JSON document: {e}"),
    })
}

/// What the relative links and hrefs of the document at `name` join.
fn base_of(name: &str) -> Result<Base> {
    Ok(resolve::index_source(name)?.base)
}

/// The link `href` of the document at `base`, resolved and checked
/// against `hosts`; `what` names it in errors.
fn follow(href: &str, base: &Base, hosts: &Hosts, what: &str) -> Result<String> {
    let at = item::resolve_href(href, base)?;
    hosts.check(&at).map_err(|reason| Error::Refused {
        what: format!("{what} {href}: {reason}"),
    })?;
    Ok(at.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(name: &str) -> Location {
        crate::io::source::locate(name).unwrap()
    }

    #[test]
    fn hrefs_stay_on_the_catalogue_host_unless_allowed() {
        let remote = Hosts::new("https://a.example/stac/search", Vec::new()).unwrap();
        assert!(remote.check(&at("https://a.example/x.tif")).is_ok());
        let other = remote.check(&at("https://b.example/x.tif")).unwrap_err();
        assert!(other.contains("--allow-host b.example"), "{other}");
        assert!(remote.check(&at("/etc/passwd")).is_err());
        let allowed = Hosts::new("https://a.example/s", vec!["b.example".into()]).unwrap();
        assert!(allowed.check(&at("https://b.example/x.tif")).is_ok());
        let local = Hosts::new("items.json", Vec::new()).unwrap();
        assert!(local.check(&at("/data/x.tif")).is_ok());
        assert!(local.check(&at("s3://bucket/x.tif")).is_err());
        let any = Hosts::new("items.json", vec!["*".into()]).unwrap();
        assert!(any.check(&at("s3://bucket/x.tif")).is_ok());
    }
}
