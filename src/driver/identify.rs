//! Cheap, honest recognition of chunk indexes from a name and first bytes.
//!
//! Claims: the `CHUNKREF:` prefix; a `.parquet` / `.parq` file (first bytes
//! `PAR1`) or directory (Kerchunk Parquet, no first bytes); a local directory
//! of any name whose `.zmetadata` holds `record_size` (Kerchunk Parquet, as
//! GDAL's Zarr driver recognises it; a plain consolidated Zarr store has no
//! such key and is left to that driver); a directory holding an Icechunk
//! repository (`repo`, or `refs/branch.main/ref.json`); a FlatGeobuf file
//! whose header holds a reference table's document;
//! a JSON object whose first key is a
//! Kerchunk v1 key (`version` followed by `refs`/`templates`/`gen`, or one
//! of those first); a v0 bare refs object whose first key is a Zarr
//! metadata key (`.zgroup`, `a/b/.zarray`, `zarr.json`, ...), or a chunk key
//! (`a/0.1`, `a/c/0/1`, `0`) whose value is a reference list (`["url", ...`),
//! as current kerchunk writes v0 stores.
//! Never claims GeoJSON, STAC items or a plain `.zarray` document, whose
//! first keys are ordinary field names.

use crate::read::raster::PREFIX;

/// The first key of a reference table's metadata document.
const TABLE_KEY: &[u8] = b"\"chunkref_table\"";
const V1_KEYS: [&str; 3] = ["refs", "templates", "gen"];
const ZARR_KEYS: [&str; 5] = [".zgroup", ".zattrs", ".zarray", ".zmetadata", "zarr.json"];

/// True when `name`/`header` look like something the driver opens.
/// `is_directory` says GDAL found a directory at `name`: only then are the
/// files of a Kerchunk Parquet store or an Icechunk repository looked for.
/// An object that could not be read (no header, not a directory) is left to
/// GDAL's own error, with no request or warning added, unless its name is
/// one of ours (`.parq`, `.parquet`).
pub fn identify(name: &str, header: &[u8], is_directory: bool) -> bool {
    if name
        .get(..PREFIX.len())
        .is_some_and(|h| h.eq_ignore_ascii_case(PREFIX))
    {
        return true;
    }
    if header.is_empty() {
        // A Kerchunk Parquet directory or an Icechunk repository (a
        // directory has no header bytes). A `.parq`/`.parquet` name is
        // claimed by its name alone (an HTTP server lists no directories);
        // anything else is looked into only when it is a directory.
        let dir = name.trim_end_matches('/');
        return is_parquet_name(dir)
            || (is_directory
                && (has_record_size(dir)
                    || crate::index::readers::icechunk::is_repository(
                        name,
                        crate::io::vsi::vsi_exists,
                    )));
    }
    if header.starts_with(crate::index::readers::parquet_read::MAGIC) {
        return is_parquet_name(name.trim_end_matches('/'));
    }
    if header.starts_with(crate::index::fgb::MAGIC) {
        // A FlatGeobuf reference table: its header holds the document.
        return header.windows(TABLE_KEY.len()).any(|w| w == TABLE_KEY);
    }
    let mut s = Scanner { b: header, i: 0 };
    s.skip_bom_and_ws();
    if !s.eat(b'{') {
        return false;
    }
    let Some(first) = s.key() else { return false };
    if V1_KEYS.contains(&first.as_str()) {
        return true;
    }
    if first == "version" {
        // `"version": 0|1, "<next key>"` where the next key is a v1 key.
        s.skip_ws();
        let start = s.i;
        while s.i < s.b.len() && s.b[s.i].is_ascii_digit() {
            s.i += 1;
        }
        if s.i == start {
            return false;
        }
        s.skip_ws();
        return s.eat(b',') && s.key().is_some_and(|k| V1_KEYS.contains(&k.as_str()));
    }
    let last = first.rsplit('/').next().unwrap_or(&first);
    if ZARR_KEYS.contains(&last) {
        return true;
    }
    // A chunk key whose value is a reference: `["url"` (kerchunk's v0).
    is_chunk_key(&first) && s.eat(b'[') && s.eat(b'"')
}

/// `0`, `a/0.1.2`, `a/0/1/2`, `a/c/0/1`, `a/c.0.1`: a Zarr chunk key (its
/// last segment a chunk index).
fn is_chunk_key(key: &str) -> bool {
    let last = key.rsplit('/').next().unwrap_or(key);
    let index = last.strip_prefix("c.").unwrap_or(last);
    !index.is_empty()
        && index
            .split('.')
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// A Parquet file is claimed by its `.parquet` / `.parq` extension (GDAL
/// 3.6 has no Parquet driver; other Parquet files fail at open with a message
/// saying the `chunkref` metadata entry is missing).
fn is_parquet_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".parquet") || lower.ends_with(".parq")
}

/// Bytes read from each end of `.zmetadata` when looking for `record_size`
/// (kerchunk and GDAL write it after the metadata documents, others first).
const ZMETADATA_PROBE: usize = 4096;

/// True when `dir` is a local directory whose `.zmetadata` names
/// `record_size` near its start or end.
fn has_record_size(dir: &str) -> bool {
    use crate::io::index_file::IndexFile;
    let path = format!(
        "{dir}/{}",
        crate::index::readers::kerchunk_parquet::ZMETADATA
    );
    if !crate::io::vsi::vsi_is_local(&path) {
        return false;
    }
    let Ok(file) = crate::io::vsi::VsiFile::open(&path) else {
        return false;
    };
    let tail = file.size().saturating_sub(ZMETADATA_PROBE as u64);
    let key = b"\"record_size\"";
    [0, tail].iter().any(|&at| {
        file.read_at(at, ZMETADATA_PROBE)
            .is_ok_and(|b| b.windows(key.len()).any(|w| w == key))
    })
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn skip_bom_and_ws(&mut self) {
        if self.b.starts_with(&[0xEF, 0xBB, 0xBF]) {
            self.i = 3;
        }
        self.skip_ws();
    }

    fn skip_ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// Reads `"key"` and the following `:`; escapes are kept verbatim.
    fn key(&mut self) -> Option<String> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.i;
        while self.i < self.b.len() && self.b[self.i] != b'"' {
            if self.b[self.i] == b'\\' {
                self.i += 1;
            }
            self.i += 1;
        }
        let key = std::str::from_utf8(self.b.get(start..self.i)?)
            .ok()?
            .to_string();
        self.i += 1;
        self.eat(b':').then_some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::identify;

    #[test]
    fn claims_kerchunk_only() {
        let yes: [&[u8]; 10] = [
            br#"{"version": 1, "refs": {}}"#,
            br#"{"version":1,"templates":{"a":"b"},"refs":{}}"#,
            br#"{"refs": {".zgroup": "{}"}}"#,
            b"\xEF\xBB\xBF{ \".zgroup\": \"{}\" }",
            br#"{"0/data/.zarray": "{}"}"#,
            br#"{"zarr.json": "{}"}"#,
            // kerchunk's v0 stores may start with a chunk key.
            br#"{"lat/0": ["data.nc", 3264, 720], "lat/.zarray": "{}"}"#,
            br#"{"sst/0.0.0": ["s3://b/f.nc", 1, 2]}"#,
            br#"{"a/c/0/1": ["f"]}"#,
            br#"{ "0" : [ "f", 0, 8 ] }"#,
        ];
        for h in yes {
            assert!(
                identify("x.json", h, false),
                "{}",
                String::from_utf8_lossy(h)
            );
        }
        let no: [&[u8]; 10] = [
            br#"{"type": "FeatureCollection", "features": []}"#,
            br#"{"stac_version": "1.0.0", "type": "Feature"}"#,
            br#"{"chunks": [10], "compressor": null, "dtype": "<f8"}"#,
            br#"{"version": "1.0", "name": "x"}"#,
            br#"{"zarr_format": 2}"#,
            b"[1, 2]",
            b"\x89PNG",
            // Digit keys whose values are not references.
            br#"{"2020": [1, 2]}"#,
            br#"{"a/0.1": "base64:AAAA"}"#,
            br#"{"1.x": ["f"]}"#,
        ];
        for h in no {
            assert!(
                !identify("x.json", h, false),
                "{}",
                String::from_utf8_lossy(h)
            );
        }
        assert!(identify("chunkref:/anything", b"", false));
        assert!(identify("refs.parquet", b"PAR1\x15\x04", false));
        assert!(!identify("data.bin", b"PAR1\x15\x04", false));
        assert!(identify("refs.parq/", b"", true));
        assert!(!identify("refs.json", b"", true));
        // A Kerchunk Parquet store by its name alone (over HTTP GDAL sees no
        // directory); an object that could not be read and is not a
        // directory is not looked into.
        assert!(identify("refs.parq", b"", false));
        assert!(!identify("image.ntf", b"", false));
    }
}
