//! Expansion of Kerchunk v1 `gen` entries into ordinary references.

use serde_json::Value;

use crate::base::error::{Error, Result};
use crate::index::template::{render, TemplateValue, Vars};

/// Most references one index may generate through `gen` (guards hostile
/// input), unless the caller sets a lower limit.
pub const MAX_GENERATED: u64 = 50_000_000;

/// Most bytes of keys and URLs one index may generate through `gen`, as
/// estimated from each entry's first reference (a short document must not
/// make the reader hold gigabytes of generated text).
pub const MAX_GENERATED_BYTES: u64 = 2 << 30;

/// One generated reference: key, URL and optional (offset, length).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// The chunk key.
    pub key: String,
    /// The URL, templates already applied.
    pub url: String,
    /// Offset and length, or `None` for a whole-file reference.
    pub range: Option<(u64, u64)>,
}

/// Expands every `gen` entry, calling `emit` for each reference in order
/// (the cartesian product of the dimensions, last dimension fastest).
/// With `keep_templates`, the URLs keep their `{{name}}` placeholders of
/// `templates` (the gen dimensions are filled in). More than `limit`
/// references in one entry, or more than [`MAX_GENERATED_BYTES`] of keys
/// and URLs in all, is an error before they are made.
pub fn expand(
    index: &str,
    gens: &[Value],
    templates: &Vars,
    keep_templates: bool,
    limit: u64,
    mut emit: impl FnMut(Generated),
) -> Result<()> {
    let mut bytes = 0u64;
    let bad = |reason: String| Error::MalformedIndex {
        index: index.to_string(),
        reason,
    };
    for (n, g) in gens.iter().enumerate() {
        let field = |name: &str| -> Result<Option<&str>> {
            match g.get(name) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(other) => Err(bad(format!(
                    "gen[{n}].{name} must be a string, got {other}"
                ))),
            }
        };
        let key = field("key")?.ok_or_else(|| bad(format!("gen[{n}] has no 'key'")))?;
        let url = field("url")?.ok_or_else(|| bad(format!("gen[{n}] has no 'url'")))?;
        let offset = field("offset")?;
        let length = field("length")?;
        let dims = dimensions(g.get("dimensions")).map_err(|e| bad(format!("gen[{n}]: {e}")))?;
        let total = dims
            .iter()
            .try_fold(1u64, |acc, (_, vals)| acc.checked_mul(vals.len() as u64))
            .filter(|t| *t <= limit.min(MAX_GENERATED))
            .ok_or_else(|| Error::Limits {
                what: format!(
                    "gen[{n}] of {index} would generate more than {} references",
                    limit.min(MAX_GENERATED)
                ),
            })?;
        let mut vars = templates.clone();
        let mut url_vars: Option<Vars> = keep_templates.then(|| {
            templates
                .keys()
                .map(|k| (k.clone(), TemplateValue::Str(format!("{{{{{k}}}}}"))))
                .collect()
        });
        let mut counters = vec![0usize; dims.len()];
        for _ in 0..total {
            for (d, (name, vals)) in dims.iter().enumerate() {
                vars.insert(name.clone(), vals[counters[d]].clone());
                if let Some(u) = url_vars.as_mut() {
                    u.insert(name.clone(), vals[counters[d]].clone());
                }
            }
            let r = |t: &str| render(t, &vars).map_err(|e| bad(format!("gen[{n}]: {e}")));
            let number = |t: &str, what: &str| -> Result<u64> {
                let s = r(t)?;
                s.trim().parse().map_err(|_| {
                    bad(format!(
                        "gen[{n}]: {what} '{s}' is not a non-negative integer"
                    ))
                })
            };
            let range = match (offset, length) {
                (Some(o), Some(l)) => Some((number(o, "offset")?, number(l, "length")?)),
                _ => None,
            };
            let made = Generated {
                key: r(key)?,
                url: match &url_vars {
                    Some(u) => render(url, u).map_err(|e| bad(format!("gen[{n}]: {e}")))?,
                    None => r(url)?,
                },
                range,
            };
            if counters.iter().all(|&c| c == 0) {
                let each = (made.key.len() + made.url.len()) as u64 + 64;
                bytes = bytes.saturating_add(each.saturating_mul(total));
                if bytes > MAX_GENERATED_BYTES {
                    return Err(Error::Limits {
                        what: format!(
                            "gen[{n}] of {index} would generate about {bytes} bytes of keys and \
                             URLs (at most {MAX_GENERATED_BYTES})"
                        ),
                    });
                }
            }
            emit(made);
            for d in (0..dims.len()).rev() {
                counters[d] += 1;
                if counters[d] < dims[d].1.len() {
                    break;
                }
                counters[d] = 0;
            }
        }
    }
    Ok(())
}

type Dimension = (String, Vec<TemplateValue>);

fn dimensions(v: Option<&Value>) -> Result<Vec<Dimension>, String> {
    let Some(obj) = v.and_then(Value::as_object) else {
        return Err("'dimensions' must be an object".into());
    };
    obj.iter()
        .map(|(name, spec)| Ok((name.clone(), dimension_values(name, spec)?)))
        .collect()
}

fn dimension_values(name: &str, spec: &Value) -> Result<Vec<TemplateValue>, String> {
    match spec {
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::Number(n) => n
                    .as_i64()
                    .map(TemplateValue::Int)
                    .ok_or_else(|| format!("dimension '{name}': {n} is not an integer")),
                Value::String(s) => Ok(TemplateValue::Str(s.clone())),
                other => Err(format!("dimension '{name}': unsupported value {other}")),
            })
            .collect(),
        Value::Object(o) => {
            let get = |k: &str, default: Option<i64>| {
                o.get(k)
                    .map(|v| {
                        v.as_i64()
                            .ok_or_else(|| format!("dimension '{name}': '{k}' is not an integer"))
                    })
                    .unwrap_or_else(|| {
                        default.ok_or_else(|| format!("dimension '{name}' has no '{k}'"))
                    })
            };
            let (start, stop, step) = (
                get("start", Some(0))?,
                get("stop", None)?,
                get("step", Some(1))?,
            );
            if step <= 0 {
                return Err(format!("dimension '{name}': step must be positive"));
            }
            let count = if stop > start {
                (stop - start - 1) / step + 1
            } else {
                0
            };
            if count as u64 > MAX_GENERATED {
                return Err(format!("dimension '{name}' has {count} values"));
            }
            Ok((0..count)
                .map(|k| TemplateValue::Int(start + k * step))
                .collect())
        }
        other => Err(format!(
            "dimension '{name}': expected a list or a range object, got {other}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expands_spec_example() {
        let gens = vec![json!({"key": "gen_key{{i}}", "url": "http://{{u}}_{{i}}",
            "offset": "{{(i + 1) * 1000}}", "length": "1000",
            "dimensions": {"u": ["a", "b"], "i": {"stop": 3}}})];
        let mut out = Vec::new();
        expand("idx", &gens, &Vars::new(), false, MAX_GENERATED, |g| {
            out.push(g)
        })
        .unwrap();
        assert_eq!(out.len(), 6);
        assert_eq!(
            out[0],
            Generated {
                key: "gen_key0".into(),
                url: "http://a_0".into(),
                range: Some((1000, 1000))
            }
        );
        assert_eq!(
            out[5],
            Generated {
                key: "gen_key2".into(),
                url: "http://b_2".into(),
                range: Some((3000, 1000))
            }
        );
    }

    #[test]
    fn keeps_template_placeholders_in_urls() {
        let gens = vec![json!({"key": "k{{i}}", "url": "{{ base }}f{{i}}.bin",
            "offset": "{{i * 10}}", "length": "10", "dimensions": {"i": [1]}})];
        let vars: Vars = [("base".to_string(), TemplateValue::Str("/d/".into()))].into();
        let mut out = Vec::new();
        expand("idx", &gens, &vars, true, MAX_GENERATED, |g| out.push(g)).unwrap();
        expand("idx", &gens, &vars, false, MAX_GENERATED, |g| out.push(g)).unwrap();
        let urls: Vec<_> = out.iter().map(|g| g.url.as_str()).collect();
        assert_eq!(urls, ["{{base}}f1.bin", "/d/f1.bin"]);
        assert!(out
            .iter()
            .all(|g| g.key == "k1" && g.range == Some((10, 10))));
    }

    #[test]
    fn refuses_hostile_sizes() {
        let gens = vec![json!({"key": "k{{i}}{{j}}", "url": "u",
            "dimensions": {"i": {"stop": 100000}, "j": {"stop": 100000}}})];
        assert!(matches!(
            expand("idx", &gens, &Vars::new(), false, MAX_GENERATED, |_| {}),
            Err(Error::Limits { .. })
        ));
        // Within the count, but gigabytes of long URLs.
        let long = "u".repeat(2000);
        let gens = vec![json!({"key": "k{{i}}", "url": format!("{long}{{{{i}}}}"),
            "dimensions": {"i": {"stop": 2_000_000}}})];
        let e = expand("idx", &gens, &Vars::new(), false, MAX_GENERATED, |_| {}).unwrap_err();
        assert!(e.to_string().contains("bytes of keys and URLs"), "{e}");
        // A caller's lower limit.
        let gens = vec![json!({"key": "k{{i}}", "url": "u", "dimensions": {"i": {"stop": 11}}})];
        assert!(expand("idx", &gens, &Vars::new(), false, 10, |_| {}).is_err());
        assert!(expand("idx", &gens, &Vars::new(), false, 11, |_| {}).is_ok());
    }
}
