//! Streaming reader of Kerchunk JSON references (spec v0 and v1, plus the
//! multi-range extension `[url, [[offset, length], ...]]`).
//!
//! Values are decoded straight into [`RawRef`]s with URLs interned in a
//! [`FileTable`]; no `serde_json::Value` is built for the (possibly millions
//! of) chunk entries.

use std::borrow::Cow;
use std::fmt;

use base64::Engine;
use bytes::Bytes;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::json_dialect;
use crate::base::error::{Error, Result};
use crate::index::refs::{FileTable, RawRef};

/// The parsed content of a Kerchunk JSON document; keys without escapes
/// are borrowed from its text.
#[derive(Debug, Default)]
pub struct KerchunkDoc<'a> {
    /// `version` (None for spec v0, the bare refs object).
    pub version: Option<u64>,
    /// `templates`: name -> value.
    pub templates: Vec<(String, String)>,
    /// `gen` entries, unexpanded.
    pub gen: Vec<Value>,
    /// Every `refs` entry in document order.
    pub entries: Vec<(Cow<'a, str>, RawRef)>,
    /// URLs of the references (raw, templates not yet applied).
    pub files: FileTable,
}

/// Parses a Kerchunk JSON document; `index` names it in error messages.
///
/// Python's `NaN` and trailing commas are read too ([`json_dialect`]).
pub fn parse<'a>(index: &str, bytes: &'a [u8]) -> Result<KerchunkDoc<'a>> {
    // As json_dialect::parse, but keys of rewritten text are copied out of it.
    let doc = parse_strict(bytes)
        .or_else(|e| match json_dialect::strict(bytes) {
            Cow::Owned(rewritten) => parse_strict(&rewritten).map(KerchunkDoc::into_owned),
            Cow::Borrowed(_) => Err(e),
        })
        .map_err(|e| Error::MalformedIndex {
            index: index.to_string(),
            reason: e.to_string(),
        })?;
    if doc.version.is_some_and(|v| v > 1) {
        return Err(Error::unsupported(format!(
            "Kerchunk reference spec version {} in {index} (versions 0 and 1 are supported)",
            doc.version.unwrap_or_default()
        )));
    }
    Ok(doc)
}

/// Parses strict JSON text.
fn parse_strict(bytes: &[u8]) -> serde_json::Result<KerchunkDoc<'_>> {
    let mut doc = KerchunkDoc::default();
    // About one entry per 64 bytes of text (a reference to a file with a
    // short path); serde_json cannot say how many a map holds.
    doc.entries.reserve((bytes.len() / 64).min(1 << 16));
    let mut de = serde_json::Deserializer::from_slice(bytes);
    TopSeed { doc: &mut doc }.deserialize(&mut de)?;
    de.end()?;
    Ok(doc)
}

impl KerchunkDoc<'_> {
    /// The document with every key owned.
    fn into_owned(self) -> KerchunkDoc<'static> {
        KerchunkDoc {
            version: self.version,
            templates: self.templates,
            gen: self.gen,
            entries: self
                .entries
                .into_iter()
                .map(|(k, r)| (Cow::Owned(k.into_owned()), r))
                .collect(),
            files: self.files,
        }
    }
}

impl<'de> KerchunkDoc<'de> {
    /// Reads the value of reference `key` from `map` and records it.
    fn read_entry<A: MapAccess<'de>>(
        &mut self,
        key: Cow<'de, str>,
        map: &mut A,
    ) -> Result<(), A::Error> {
        let value = map.next_value_seed(RefSeed {
            key: &key,
            files: &mut self.files,
        })?;
        self.entries.push((key, value));
        Ok(())
    }
}

struct TopSeed<'a, 'de> {
    doc: &'a mut KerchunkDoc<'de>,
}

impl<'de> DeserializeSeed<'de> for TopSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kerchunk reference object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut saw_refs = false;
        while let Some(Text(key)) = map.next_key()? {
            match key.as_ref() {
                "version" => {
                    self.doc.version = Some(map.next_value::<u64>()?);
                }
                "templates" => {
                    let t: serde_json::Map<String, Value> = map.next_value()?;
                    self.doc.templates = t
                        .into_iter()
                        .map(|(k, v)| match v {
                            Value::String(s) => Ok((k, s)),
                            other => Ok((k, other.to_string())),
                        })
                        .collect::<Result<_, A::Error>>()?;
                }
                "gen" => {
                    self.doc.gen = map.next_value()?;
                }
                "refs" if !saw_refs => {
                    saw_refs = true;
                    map.next_value_seed(RefsSeed { doc: self.doc })?;
                }
                _ => self.doc.read_entry(key, &mut map)?,
            }
        }
        Ok(())
    }
}

struct RefsSeed<'a, 'de> {
    doc: &'a mut KerchunkDoc<'de>,
}

impl<'de> DeserializeSeed<'de> for RefsSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RefsSeed<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the 'refs' object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if let Some(n) = map.size_hint() {
            self.doc.entries.reserve(n);
        }
        while let Some(Text(key)) = map.next_key()? {
            self.doc.read_entry(key, &mut map)?;
        }
        Ok(())
    }
}

/// Decodes one reference value.
struct RefSeed<'a> {
    key: &'a str,
    files: &'a mut FileTable,
}

impl<'de> DeserializeSeed<'de> for RefSeed<'_> {
    type Value = RawRef;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawRef, D::Error> {
        d.deserialize_any(self)
    }
}

impl RefSeed<'_> {
    fn fail<E: de::Error>(&self, what: impl fmt::Display) -> E {
        E::custom(format!("reference '{}': {what}", self.key))
    }
}

impl<'de> Visitor<'de> for RefSeed<'_> {
    type Value = RawRef;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "reference '{}' as a string, [url], [url, offset, length] or [url, [[offset, length], ...]]",
            self.key
        )
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<RawRef, E> {
        match s.strip_prefix("base64:") {
            Some(b64) => base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map(|v| RawRef::Inline(Bytes::from(v)))
                .map_err(|e| self.fail(format!("bad base64: {e}"))),
            None => Ok(RawRef::Inline(Bytes::copy_from_slice(s.as_bytes()))),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawRef, A::Error> {
        // Some writers embed metadata documents as JSON objects, not strings.
        let v = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(RawRef::Inline(Bytes::from(v.to_string())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawRef, A::Error> {
        let Text(url) = seq
            .next_element()?
            .ok_or_else(|| self.fail("empty list (expected a URL first)"))?;
        let file = self.files.intern(&url);
        let second: Option<OffsetOrRanges> = seq.next_element()?;
        let r = match second {
            None => RawRef::Whole(file),
            Some(OffsetOrRanges::Offset(offset)) => {
                let length: u64 = seq
                    .next_element()?
                    .ok_or_else(|| self.fail("[url, offset] without a length"))?;
                RawRef::Range(file, offset, length)
            }
            Some(OffsetOrRanges::Ranges(ranges)) => {
                if ranges.is_empty() {
                    return Err(self.fail("multi-range reference with no ranges"));
                }
                RawRef::Multi(file, ranges)
            }
        };
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(self.fail("too many elements in the reference list"));
        }
        Ok(r)
    }
}

/// A string borrowed from the document where it has no escapes (keys and
/// URLs: no copy for each of the many references).
struct Text<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text<'de>, D::Error> {
        d.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Borrowed(s)))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
        Ok(Text(Cow::Owned(s.to_string())))
    }
}

/// The second element of a reference list: an offset, or a list of
/// `[offset, length]` ranges.
enum OffsetOrRanges {
    Offset(u64),
    Ranges(Vec<(u64, u64)>),
}

impl<'de> Deserialize<'de> for OffsetOrRanges {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<OffsetOrRanges, D::Error> {
        d.deserialize_any(OffsetOrRangesVisitor)
    }
}

struct OffsetOrRangesVisitor;

impl<'de> Visitor<'de> for OffsetOrRangesVisitor {
    type Value = OffsetOrRanges;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an offset (a whole number) or a list of [offset, length] ranges")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<OffsetOrRanges, E> {
        Ok(OffsetOrRanges::Offset(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OffsetOrRanges, A::Error> {
        let mut ranges = Vec::new();
        while let Some(range) = seq.next_element::<(u64, u64)>()? {
            ranges.push(range);
        }
        Ok(OffsetOrRanges::Ranges(ranges))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_value_form_v1() {
        let doc = br#"{"version": 1, "templates": {"base": "/d/"},
          "refs": {".zgroup": "{\"zarr_format\": 2}", "a/0.0": "base64:AAEC",
                   "a/0.1": ["{{base}}f.bin"], "a/1.0": ["{{base}}f.bin", 10, 20],
                   "a/1.1": ["g.bin", [[1, 2], [5, 6]]], "m/.zattrs": {"x": 1}}}"#;
        let d = parse("t.json", doc).unwrap();
        assert_eq!(d.version, Some(1));
        assert_eq!(d.templates, vec![("base".to_string(), "/d/".to_string())]);
        let get = |k: &str| {
            d.entries
                .iter()
                .find(|(key, _)| key == k)
                .unwrap()
                .1
                .clone()
        };
        assert_eq!(get("a/0.0"), RawRef::Inline(Bytes::from_static(&[0, 1, 2])));
        assert_eq!(get("a/0.1"), RawRef::Whole(0));
        assert_eq!(get("a/1.0"), RawRef::Range(0, 10, 20));
        assert_eq!(get("a/1.1"), RawRef::Multi(1, vec![(1, 2), (5, 6)]));
        assert_eq!(
            get("m/.zattrs"),
            RawRef::Inline(Bytes::from_static(br#"{"x":1}"#))
        );
        assert_eq!(
            d.files.urls(),
            &["{{base}}f.bin".to_string(), "g.bin".to_string()]
        );
    }

    #[test]
    fn escaped_keys_and_urls_read_as_plain_ones() {
        let plain = parse(
            "t",
            br#"{"version": 1, "refs": {"a/0": ["/d/f.bin", 1, 2]}}"#,
        )
        .unwrap();
        let escaped = parse(
            "t",
            br#"{"version": 1, "refs": {"a\/0": ["\/d\/f.bin", 1, 2], "a/1": ["/d/f.bin", 3, 4]}}"#,
        )
        .unwrap();
        assert_eq!(plain.entries[0], escaped.entries[0]);
        assert_eq!(escaped.entries[1].1, RawRef::Range(0, 3, 4));
        assert_eq!(escaped.files.urls(), ["/d/f.bin"]);
    }

    #[test]
    fn python_json_reads_as_strict_json() {
        let strict = parse("t", br#"{"version": 1, "refs": {"a/0": ["f", 1, 2]}}"#).unwrap();
        let python = parse(
            "t",
            b"{\"version\": 1, \"refs\": {\"a/0\": [\"f\", 1, 2], }, }",
        )
        .unwrap();
        assert_eq!(strict.entries, python.entries);
    }

    #[test]
    fn reads_v0() {
        let d = parse("t", br#"{".zgroup": "{}", "x/0": ["f", 0, 4]}"#).unwrap();
        assert_eq!(d.version, None);
        assert_eq!(d.entries.len(), 2);
    }

    #[test]
    fn errors_name_the_key() {
        for bad in [
            &br#"{"version": 1, "refs": {"a/0": ["f", 1]}}"#[..],
            br#"{"version": 1, "refs": {"a/0": []}}"#,
            br#"{"version": 1, "refs": {"a/0": ["f", -1, 2]}}"#,
            br#"{"version": 1, "refs": {"a/0": ["f", 1, 2, 3]}}"#,
            br#"{"version": 1, "refs": {"a/0": "base64:!!"}}"#,
            br#"{"version": 1, "refs": {"a/0": 5}}"#,
        ] {
            let e = parse("t.json", bad).unwrap_err().to_string();
            assert!(e.contains("t.json"), "{e}");
            assert!(e.contains("a/0") || e.contains("line"), "{e}");
        }
        assert!(parse("t", b"{\"version\": 1, \"refs\": {").is_err());
        assert!(parse("t", b"[1,2]").is_err());
    }
}
