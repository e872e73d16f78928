//! Band attributes from the GDAL_METADATA TIFF tag (42112): GDAL stores
//! band scale, offset, unit type and description there as
//! `<Item name="SCALE" sample="0" role="scale">0.5</Item>`.

use serde_json::{json, Map, Value};

use crate::conventions::attributes::BANDS_ATTRIBUTE;

/// One `<Item>` of the XML: (name, sample, role, text).
type Item = (String, Option<u64>, Option<String>, String);

/// CF attributes (`scale_factor`, `add_offset`, `units`, `long_name`) for an
/// array of `samples` bands: values every band shares on the array; values
/// that differ between bands (or that only some bands have) per band, in
/// [`BANDS_ATTRIBUTE`].
pub fn band_attributes(xml: &str, samples: u64) -> Map<String, Value> {
    let items = items(xml);
    let mut out = Map::new();
    let mut per_band = vec![Map::new(); samples as usize];
    for (role, key, numeric) in [
        ("scale", "scale_factor", true),
        ("offset", "add_offset", true),
        ("unittype", "units", false),
        ("description", "long_name", false),
    ] {
        let values: Vec<Option<Value>> = (0..samples)
            .map(|s| {
                let item = items
                    .iter()
                    .find(|(_, sample, r, _)| *sample == Some(s) && r.as_deref() == Some(role))?;
                let v = item.3.trim();
                if numeric {
                    v.parse::<f64>().ok().map(|n| json!(n))
                } else {
                    (!v.is_empty()).then(|| json!(v))
                }
            })
            .collect();
        match values.first() {
            Some(Some(first)) if values.iter().all(|v| v.as_ref() == Some(first)) => {
                out.insert(key.to_string(), first.clone());
            }
            _ => {
                for (band, v) in per_band.iter_mut().zip(values) {
                    if let Some(v) = v {
                        band.insert(key.to_string(), v);
                    }
                }
            }
        }
    }
    if per_band.iter().any(|b| !b.is_empty()) {
        out.insert(BANDS_ATTRIBUTE.to_string(), json!(per_band));
    }
    out
}

/// The `COLORINTERP` item of each of `samples` bands (GDAL records a band's
/// colour interpretation there when it differs from the Photometric one).
pub fn color_interpretations(xml: &str, samples: u64) -> Vec<Option<String>> {
    let items = items(xml);
    (0..samples)
        .map(|s| {
            items
                .iter()
                .find(|(_, sample, role, _)| {
                    *sample == Some(s) && role.as_deref() == Some("colorinterp")
                })
                .map(|i| i.3.trim().to_string())
        })
        .collect()
}

/// The text of each dataset item (an item without a `sample`) named in
/// `names`, in the order of `names`.
pub fn dataset_items(xml: &str, names: &[&str]) -> Vec<String> {
    let items = items(xml);
    names
        .iter()
        .filter_map(|name| {
            items
                .iter()
                .find(|(n, sample, _, _)| n == name && sample.is_none())
                .map(|i| i.3.trim().to_string())
        })
        .collect()
}

fn items(xml: &str) -> Vec<Item> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find("<Item") {
        rest = &rest[start + 5..];
        let Some(head_end) = rest.find('>') else {
            break;
        };
        let head = &rest[..head_end];
        let body = &rest[head_end + 1..];
        let Some(end) = body.find("</Item>") else {
            break;
        };
        let attr = |name: &str| {
            let pat = format!("{name}=\"");
            let i = head.find(&pat)? + pat.len();
            let j = head[i..].find('"')?;
            Some(unescape(&head[i..i + j]))
        };
        out.push((
            attr("name").unwrap_or_default(),
            attr("sample").and_then(|s| s.parse().ok()),
            attr("role"),
            unescape(&body[..end]),
        ));
        rest = &body[end..];
    }
    out
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_values_on_the_array_others_per_band() {
        let xml = r#"<GDALMetadata>
  <Item name="OFFSET" sample="0" role="offset">10</Item>
  <Item name="SCALE" sample="0" role="scale">0.5</Item>
  <Item name="OFFSET" sample="1" role="offset">10</Item>
  <Item name="SCALE" sample="1" role="scale">0.25</Item>
  <Item name="UNITTYPE" sample="0" role="unittype">m &amp; s</Item>
  <Item name="UNITTYPE" sample="1" role="unittype">m &amp; s</Item>
</GDALMetadata>"#;
        let a = band_attributes(xml, 2);
        assert_eq!(a.get("add_offset"), Some(&json!(10.0)));
        assert_eq!(a.get("scale_factor"), None);
        assert_eq!(a.get("units"), Some(&json!("m & s")));
        assert_eq!(
            a.get(BANDS_ATTRIBUTE),
            Some(&json!([{"scale_factor": 0.5}, {"scale_factor": 0.25}]))
        );
        let only_second = r#"<Item name="DESCRIPTION" sample="1" role="description">b</Item>"#;
        assert_eq!(
            band_attributes(only_second, 2).get(BANDS_ATTRIBUTE),
            Some(&json!([{}, {"long_name": "b"}]))
        );
        assert_eq!(
            band_attributes(xml, 1).get("scale_factor"),
            Some(&json!(0.5))
        );
        let ci = r#"<Item name="COLORINTERP" sample="1" role="colorinterp">Undefined</Item>"#;
        assert_eq!(
            color_interpretations(ci, 2),
            vec![None, Some("Undefined".to_string())]
        );
    }
}
