//! The JSON that Python and GDAL write, read as strict JSON.
//!
//! - Bare `NaN`, `Infinity` and `-Infinity` (Python's `json` module writes
//!   them for non-finite floats; VirtualiZarr puts `"_FillValue": NaN` on
//!   float coordinates) become the strings `"NaN"`, `"Infinity"` and
//!   `"-Infinity"`: the spelling Zarr v2 uses for non-finite fill values,
//!   which every reader of metadata here understands (fill values, CF
//!   `_FillValue` / `missing_value`, nodata).
//! - A comma before `}` or `]`, which GDAL's JSON reader accepts (GDAL's own
//!   kerchunk fixtures have one), is dropped.
//!
//! Anything else stays invalid and is reported by the JSON parser. Text
//! that needs no change is returned as it is, without a copy.

use std::borrow::Cow;

/// The non-finite literals Python writes, longest first.
const LITERALS: [&[u8]; 3] = [b"-Infinity", b"Infinity", b"NaN"];

/// Parses `bytes` with `parse` as they are, and only if that fails (text
/// that is not strict JSON) the [`strict`] rewrite of them: strict text,
/// the usual case, is scanned once.
pub fn parse<T>(
    bytes: &[u8],
    parse: impl Fn(&[u8]) -> serde_json::Result<T>,
) -> serde_json::Result<T> {
    parse(bytes).or_else(|e| match strict(bytes) {
        Cow::Owned(rewritten) => parse(&rewritten),
        Cow::Borrowed(_) => Err(e),
    })
}

/// `bytes` as strict JSON (see the module documentation).
pub fn strict(bytes: &[u8]) -> Cow<'_, [u8]> {
    match first_change(bytes) {
        None => Cow::Borrowed(bytes),
        Some(at) => {
            let mut out = Vec::with_capacity(bytes.len() + 16);
            out.extend_from_slice(&bytes[..at]);
            rewrite(&bytes[at..], &mut out);
            Cow::Owned(out)
        }
    }
}

/// What the scanner meets outside strings at `bytes[i]`.
enum Token {
    /// A non-finite literal of this many bytes.
    Literal(&'static [u8]),
    /// A comma followed (after white space) by `}` or `]`.
    TrailingComma,
    /// Anything else.
    Other,
}

fn token(bytes: &[u8], i: usize) -> Token {
    match bytes[i] {
        b'N' | b'I' | b'-' => LITERALS
            .iter()
            .find(|l| bytes[i..].starts_with(l))
            .map_or(Token::Other, |l| Token::Literal(l)),
        b',' => {
            let next = bytes[i + 1..].iter().find(|b| !b.is_ascii_whitespace());
            if matches!(next, Some(b'}' | b']')) {
                Token::TrailingComma
            } else {
                Token::Other
            }
        }
        _ => Token::Other,
    }
}

/// Walks `bytes` outside strings, calling `visit(i, token)` for every
/// literal or trailing comma; `visit` returns how many bytes to skip.
fn walk(bytes: &[u8], mut visit: impl FnMut(usize, Token) -> Option<usize>) {
    let (mut i, mut in_string) = (0, false);
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        match token(bytes, i) {
            Token::Other => i += 1,
            t => match visit(i, t) {
                Some(skip) => i += skip,
                None => return,
            },
        }
    }
}

/// Where the first change is needed, if any.
fn first_change(bytes: &[u8]) -> Option<usize> {
    let mut found = None;
    walk(bytes, |i, _| {
        found = Some(i);
        None
    });
    found
}

/// Appends `bytes`, rewritten, to `out`.
fn rewrite(bytes: &[u8], out: &mut Vec<u8>) {
    let mut copied = 0;
    walk(bytes, |i, t| {
        out.extend_from_slice(&bytes[copied..i]);
        let skip = match t {
            Token::Literal(l) => {
                out.push(b'"');
                out.extend_from_slice(l);
                out.push(b'"');
                l.len()
            }
            _ => 1,
        };
        copied = i + skip;
        Some(skip)
    });
    out.extend_from_slice(&bytes[copied..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict_str(s: &str) -> String {
        String::from_utf8(strict(s.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn python_literals_and_trailing_commas_become_strict_json() {
        let python = r#"{"_FillValue": NaN, "max": Infinity, "min": -Infinity, "a": [1, 2, ], }"#;
        let fixed = strict_str(python);
        assert_eq!(
            fixed,
            r#"{"_FillValue": "NaN", "max": "Infinity", "min": "-Infinity", "a": [1, 2 ] }"#
        );
        let v: serde_json::Value = serde_json::from_str(&fixed).unwrap();
        assert_eq!(v["min"], "-Infinity");
        // Arrays of them, nested, without spaces.
        assert_eq!(
            strict_str("[NaN,-Infinity,[Infinity,],]"),
            r#"["NaN","-Infinity",["Infinity"]]"#
        );
    }

    #[test]
    fn strings_and_strict_json_are_left_alone() {
        for s in [
            r#"{"name": "NaN, Infinity, ]", "esc": "a\"NaN,]", "n": -1.5e3, "x": [1, 2]}"#,
            r#"{".zarray": "{\"fill_value\": \"NaN\", \"x\": [1,]}"}"#,
            "",
            "[]",
        ] {
            assert!(matches!(strict(s.as_bytes()), Cow::Borrowed(_)), "{s}");
        }
    }

    #[test]
    fn broken_text_stays_broken_and_never_panics() {
        for s in [
            "{\"a\": NaNa}",
            "[1,",
            ",",
            "\"unterminated",
            "-",
            "{\"a\":\\",
            "N",
            "-Inf",
        ] {
            let _ = strict(s.as_bytes());
        }
        assert!(serde_json::from_slice::<serde_json::Value>(&strict(b"{\"a\": Nope}")).is_err());
    }

    #[test]
    fn parse_rewrites_only_what_fails() {
        let value = |s: &str| {
            parse(s.as_bytes(), |b| {
                serde_json::from_slice::<serde_json::Value>(b)
            })
        };
        assert_eq!(
            value(r#"{"a": [1, 2]}"#).unwrap(),
            serde_json::json!({"a": [1, 2]})
        );
        assert_eq!(
            value(r#"{"a": NaN, "b": [1, ],}"#).unwrap(),
            serde_json::json!({"a": "NaN", "b": [1]})
        );
        let e = value(r#"{"a": Nope}"#).unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
    }
}
