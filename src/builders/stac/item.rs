//! One STAC item as an index needs it: its id, its datetime, and the
//! selected assets' hrefs (resolved as STAC says: relative to the document
//! the item was read from) and band metadata (`bands` of STAC 1.1,
//! `raster:bands` and `eo:bands` of the extensions).

use serde_json::{Map, Value};

use crate::io::resolve::{self, Base, Location};

/// An item, with the assets the user selected.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// The item's `id`.
    pub id: String,
    /// `properties.datetime`, else `properties.start_datetime` (ISO 8601).
    pub datetime: Option<String>,
    /// The selected assets, in the order they were asked for.
    pub assets: Vec<Asset>,
}

/// One asset of an item.
#[derive(Debug, Clone, PartialEq)]
pub struct Asset {
    /// The asset's key in the item's `assets`.
    pub key: String,
    /// Where its file is: a local path or a URL.
    pub href: String,
    /// Per band, the STAC fields describing it (1.1 names: `nodata`,
    /// `data_type`, `unit`, `eo:common_name`, `raster:scale`, ...).
    pub bands: Vec<Map<String, Value>>,
}

/// Where an item's hrefs may point.
pub trait HrefRule {
    /// `Err(reason)` when `href` (resolved) may not be read.
    fn check(&self, href: &Location) -> Result<(), String>;
}

impl Item {
    /// The item `doc` (a GeoJSON Feature), read from a document whose
    /// relative hrefs join `base`; `keys` are the assets to take, each of
    /// which it must have. Errors name the item and asset.
    pub fn from_json(
        doc: &Value,
        base: &Base,
        keys: &[String],
        rule: &dyn HrefRule,
    ) -> Result<Item, String> {
        let id = doc
            .get("id")
            .and_then(Value::as_str)
            .ok_or("an item without a text 'id'")?
            .to_string();
        let fail = |reason: String| format!("item '{id}': {reason}");
        let properties = doc.get("properties").and_then(Value::as_object);
        let text = |k: &str| properties?.get(k)?.as_str().map(str::to_string);
        let datetime = text("datetime").or_else(|| text("start_datetime"));
        let all = doc.get("assets").and_then(Value::as_object);
        let assets = keys
            .iter()
            .map(|key| {
                let asset = all
                    .and_then(|a| a.get(key))
                    .filter(|a| a.is_object())
                    .ok_or_else(|| fail(format!("no asset '{key}'")))?;
                let href = asset
                    .get("href")
                    .and_then(Value::as_str)
                    .ok_or_else(|| fail(format!("asset '{key}' has no text 'href'")))?;
                let at = resolve_href(href, base)
                    .map_err(|e| fail(format!("asset '{key}' ({href}): {e}")))?;
                rule.check(&at)
                    .map_err(|e| fail(format!("asset '{key}' ({href}): {e}")))?;
                Ok(Asset {
                    key: key.clone(),
                    href: at.to_string(),
                    bands: bands(asset),
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Item {
            id,
            datetime,
            assets,
        })
    }
}

/// Where `href`, met in a document at `base`, points: as a URL reference
/// is resolved (a path from the root, `/x`, stays on a remote document's
/// host), else as [`resolve::resolve`] resolves index references.
pub fn resolve_href(href: &str, base: &Base) -> crate::base::error::Result<Location> {
    match base {
        Base::Url(dir) if href.starts_with('/') && !href.starts_with("/vsi") => {
            let root = Base::Url(crate::io::resolve::ObjectUrl {
                key: String::new(),
                ..dir.clone()
            });
            resolve::resolve(href.trim_start_matches('/'), &root)
        }
        _ => resolve::resolve(href, base),
    }
}

/// The bands an asset describes, merged by position from `bands` (STAC
/// 1.1), `raster:bands` and `eo:bands`, named with STAC 1.1's field names.
fn bands(asset: &Value) -> Vec<Map<String, Value>> {
    let mut out: Vec<Map<String, Value>> = Vec::new();
    let mut merge = |list: &str, rename: &dyn Fn(&str) -> String| {
        let Some(list) = asset.get(list).and_then(Value::as_array) else {
            return;
        };
        for (i, band) in list.iter().enumerate() {
            let Some(band) = band.as_object() else {
                continue;
            };
            if out.len() <= i {
                out.resize_with(i + 1, Map::new);
            }
            for (k, v) in band {
                out[i].entry(rename(k)).or_insert_with(|| v.clone());
            }
        }
    };
    merge("bands", &|k| k.to_string());
    merge("raster:bands", &|k| match k {
        "nodata" | "data_type" | "unit" | "statistics" => k.to_string(),
        _ => format!("raster:{k}"),
    });
    merge("eo:bands", &|k| match k {
        "name" | "description" => k.to_string(),
        _ => format!("eo:{k}"),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Anywhere;
    impl HrefRule for Anywhere {
        fn check(&self, _: &Location) -> Result<(), String> {
            Ok(())
        }
    }

    fn base() -> Base {
        match resolve::index_source("https://h.example/cat/items/a.json")
            .unwrap()
            .base
        {
            b @ Base::Url(_) => b,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn relative_hrefs_join_the_document_and_bands_merge() {
        let doc = json!({"id": "a", "properties": {"start_datetime": "2021-01-01T00:00:00Z",
            "datetime": null},
            "assets": {"B04": {"href": "../data/a_B04.tif",
                "raster:bands": [{"nodata": 0, "scale": 0.0001, "data_type": "uint16"}],
                "eo:bands": [{"name": "B04", "common_name": "red"}]}}});
        let item = Item::from_json(&doc, &base(), &["B04".into()], &Anywhere).unwrap();
        assert_eq!(item.datetime.as_deref(), Some("2021-01-01T00:00:00Z"));
        let a = &item.assets[0];
        assert_eq!(a.href, "https://h.example/cat/data/a_B04.tif");
        assert_eq!(a.bands[0]["nodata"], json!(0));
        assert_eq!(a.bands[0]["raster:scale"], json!(0.0001));
        assert_eq!(a.bands[0]["eo:common_name"], json!("red"));
        assert_eq!(a.bands[0]["name"], json!("B04"));
    }

    #[test]
    fn paths_from_the_root_stay_on_the_host() {
        let at = resolve_href("/search?page=2", &base()).unwrap();
        assert_eq!(at.to_string(), "https://h.example/search?page=2");
    }

    #[test]
    fn a_missing_asset_names_the_item() {
        let doc = json!({"id": "x", "properties": {}, "assets": {}});
        let e = Item::from_json(&doc, &base(), &["red".into()], &Anywhere).unwrap_err();
        assert_eq!(e, "item 'x': no asset 'red'");
    }
}
