//! Chunk key encodings: how a chunk's grid index is spelled in a store key.

use serde_json::Value;

/// The spelling of chunk keys of one array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkKeyEncoding {
    /// `Some("c")` for the v3 default encoding, `None` for v2 style keys.
    pub prefix: Option<&'static str>,
    /// Separator between indices (`.` or `/`).
    pub separator: char,
}

impl ChunkKeyEncoding {
    /// The v2 encoding with the given `dimension_separator`.
    pub fn v2(separator: char) -> ChunkKeyEncoding {
        ChunkKeyEncoding {
            prefix: None,
            separator,
        }
    }

    /// Parses a v3 `chunk_key_encoding` object (default: `default` with `/`).
    pub fn from_v3(v: Option<&Value>) -> Result<ChunkKeyEncoding, String> {
        let Some(v) = v else {
            return Ok(ChunkKeyEncoding {
                prefix: Some("c"),
                separator: '/',
            });
        };
        let name = v.get("name").and_then(Value::as_str).unwrap_or("default");
        let sep = v
            .get("configuration")
            .and_then(|c| c.get("separator"))
            .and_then(Value::as_str);
        let (prefix, default_sep) = match name {
            "default" => (Some("c"), '/'),
            "v2" => (None, '.'),
            other => return Err(format!("chunk_key_encoding '{other}'")),
        };
        let separator = match sep {
            None => default_sep,
            Some(".") => '.',
            Some("/") => '/',
            Some(other) => return Err(format!("chunk key separator '{other}'")),
        };
        Ok(ChunkKeyEncoding { prefix, separator })
    }

    /// Parses the part of a key after the array path into a grid index of
    /// `ndim` dimensions, or `None` when it is not a chunk key of this array.
    pub fn parse(&self, rest: &str, ndim: usize) -> Option<Vec<u64>> {
        let mut idx = vec![0; ndim];
        self.parse_into(rest, &mut idx)?;
        Some(idx)
    }

    /// [`Self::parse`] into `idx` (as many dimensions as its length),
    /// without allocating: `None` when `rest` is not a chunk key of them.
    pub fn parse_into(&self, rest: &str, idx: &mut [u64]) -> Option<()> {
        let body = match self.prefix {
            Some(p) => {
                let after = rest.strip_prefix(p)?;
                if idx.is_empty() {
                    return after.is_empty().then_some(());
                }
                after.strip_prefix(self.separator)?
            }
            None if idx.is_empty() => return (rest == "0").then_some(()),
            None => rest,
        };
        // One pass over the bytes (every reference's key goes through here
        // at open): digits accumulate, a separator starts the next index.
        let separator = u8::try_from(self.separator).ok()?;
        let mut bytes = body.bytes();
        let last = idx.len() - 1;
        for (d, i) in idx.iter_mut().enumerate() {
            let mut value: u64 = 0;
            let mut digits = 0;
            loop {
                match bytes.next() {
                    Some(b) if b.is_ascii_digit() => {
                        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
                        digits += 1;
                    }
                    Some(b) if b == separator && d < last => break,
                    None if d == last => break,
                    _ => return None,
                }
            }
            if digits == 0 {
                return None;
            }
            *i = value;
        }
        Some(())
    }

    /// Spells the key suffix of a grid index (inverse of [`Self::parse`]).
    pub fn format(&self, idx: &[u64]) -> String {
        let sep = self.separator.to_string();
        let body = idx
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(&sep);
        match (self.prefix, idx.is_empty()) {
            (Some(p), true) => p.to_string(),
            (Some(p), false) => format!("{p}{sep}{body}"),
            (None, true) => "0".to_string(),
            (None, false) => body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let encs = [
            ChunkKeyEncoding::v2('.'),
            ChunkKeyEncoding::v2('/'),
            ChunkKeyEncoding::from_v3(None).unwrap(),
            ChunkKeyEncoding::from_v3(Some(&serde_json::json!({"name": "default",
                "configuration": {"separator": "."}})))
            .unwrap(),
        ];
        for e in &encs {
            for idx in [vec![], vec![3], vec![0, 12, 7]] {
                let s = e.format(&idx);
                assert_eq!(e.parse(&s, idx.len()), Some(idx.clone()), "{e:?} {s}");
            }
        }
        assert_eq!(encs[2].format(&[1, 2]), "c/1/2");
        assert_eq!(encs[0].parse("1.x", 2), None);
        assert_eq!(encs[0].parse("1.2.3", 2), None);
        assert_eq!(encs[0].parse("+1.2", 2), None);
        assert_eq!(encs[0].parse("1..2", 3), None);
        assert_eq!(encs[0].parse("1.2.", 3), None);
        assert_eq!(encs[0].parse("1.2", 3), None);
        assert_eq!(encs[0].parse("01.2", 2), Some(vec![1, 2]));
        assert_eq!(encs[0].parse("18446744073709551616", 1), None, "past u64");
        assert_eq!(
            encs[0].parse("18446744073709551615", 1),
            Some(vec![u64::MAX])
        );
        assert_eq!(encs[1].parse("1.2", 2), None);
    }
}
