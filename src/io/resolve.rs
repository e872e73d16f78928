//! Turning reference URLs into locations a fetcher can read.
//!
//! Accepted forms: absolute and relative paths, `file://`, `s3://`, `gs://`,
//! `az://`, `abfs[s]://`, `http[s]://`, and GDAL's spellings `/vsis3/`,
//! `/vsigs/`, `/vsiaz/`, `/vsicurl/`. Relative names are joined to the
//! index's [`Base`]; `.` and `..` are resolved lexically and may not climb
//! above the root of a bucket or host.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use crate::base::error::{Error, Result};
use crate::base::gdal::NETWORK_VSI;

/// Object stores chunkref reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// `s3://bucket/key`
    S3,
    /// `gs://bucket/key`
    Gs,
    /// `az://container/key` (account from `AZURE_STORAGE_ACCOUNT`)
    Az,
    /// `abfs://container@account.dfs.core.windows.net/key`
    Abfs,
    /// `abfss://...` (as `abfs`, TLS)
    Abfss,
    /// `http://host[:port]/path`
    Http,
    /// `https://host[:port]/path`
    Https,
}

impl Scheme {
    fn parse(s: &str) -> Option<Scheme> {
        Some(match s.to_ascii_lowercase().as_str() {
            "s3" => Scheme::S3,
            "gs" | "gcs" => Scheme::Gs,
            "az" | "azure" => Scheme::Az,
            "abfs" => Scheme::Abfs,
            "abfss" => Scheme::Abfss,
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            _ => return None,
        })
    }

    /// The URL scheme, without `://`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::S3 => "s3",
            Scheme::Gs => "gs",
            Scheme::Az => "az",
            Scheme::Abfs => "abfs",
            Scheme::Abfss => "abfss",
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    /// The GDAL virtual file system path of an object of this scheme.
    fn vsi_path(self, authority: &str, key: &str) -> String {
        match self {
            Scheme::S3 => format!("/vsis3/{authority}/{key}"),
            Scheme::Gs => format!("/vsigs/{authority}/{key}"),
            Scheme::Az => format!("/vsiaz/{authority}/{key}"),
            Scheme::Abfs | Scheme::Abfss => {
                let container = authority.split('@').next().unwrap_or(authority);
                format!("/vsiaz/{container}/{key}")
            }
            Scheme::Http | Scheme::Https => {
                format!("/vsicurl/{}://{authority}/{key}", self.as_str())
            }
        }
    }
}

/// An object in a remote store.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjectUrl {
    /// The store kind.
    pub scheme: Scheme,
    /// Bucket or container (`container@account...` for abfs), or
    /// `host[:port]` for HTTP.
    pub authority: String,
    /// The object key or URL path, without the leading `/`, `.`/`..` resolved.
    /// For HTTP it keeps its percent escapes and query.
    pub key: String,
}

impl fmt::Display for ObjectUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}://{}/{}",
            self.scheme.as_str(),
            self.authority,
            self.key
        )
    }
}

/// Where a file's bytes live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A file on the local file system (absolute path).
    Local(PathBuf),
    /// An object in a remote store.
    Object(ObjectUrl),
}

impl Location {
    /// The name GDAL opens this file by: the local path, or the object's
    /// `/vsis3/`, `/vsigs/`, `/vsiaz/` or `/vsicurl/` path.
    pub fn gdal_name(&self) -> String {
        match self {
            Location::Local(p) => p.display().to_string(),
            Location::Object(o) => o.scheme.vsi_path(&o.authority, &o.key),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Local(p) => write!(f, "{}", p.display()),
            Location::Object(o) => o.fmt(f),
        }
    }
}

/// What relative reference URLs are joined to: the index's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Base {
    /// A local directory.
    Dir(PathBuf),
    /// A "directory" of a remote store (key empty or ending in `/`).
    Url(ObjectUrl),
    /// An index in a GDAL-only file system (`/vsimem/`, `/vsizip/`,
    /// `/vsiswift/`, ...): relative references cannot be resolved.
    Opaque {
        /// The index name, for messages.
        index: String,
        /// Whether that file system is on the network (GDAL's `VSIIsLocal`).
        remote: bool,
    },
}

impl Base {
    /// True when the index came from a remote location.
    pub fn is_remote(&self) -> bool {
        match self {
            Base::Dir(_) => false,
            Base::Url(_) => true,
            Base::Opaque { remote, .. } => *remote,
        }
    }
}

/// Where an index is read from and what its relative references mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexSource {
    /// The path GDAL's virtual file systems read the index from.
    pub vsi_path: String,
    /// What relative references are joined to.
    pub base: Base,
}

/// Where the index named `name` lives (any form [`resolve`] accepts, plus
/// other GDAL virtual file system paths such as `/vsimem/`); relative local
/// names are taken from the current directory.
pub fn index_source(name: &str) -> Result<IndexSource> {
    if name.starts_with("/vsi") && gdal_spelling(name)?.is_none() {
        return Ok(IndexSource {
            vsi_path: name.to_string(),
            base: Base::Opaque {
                index: name.to_string(),
                remote: is_network_vsi(name),
            },
        });
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    Ok(match resolve(name, &Base::Dir(cwd))? {
        Location::Local(path) => IndexSource {
            vsi_path: path.display().to_string(),
            base: Base::Dir(
                path.canonicalize()
                    .unwrap_or(path)
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| PathBuf::from("/")),
            ),
        },
        Location::Object(o) => {
            // The "directory" holding the index (for a Kerchunk Parquet
            // store named with a trailing `/`, the one holding the store).
            let key = o.key.trim_end_matches('/');
            let dir = match key.rfind('/') {
                Some(i) => key[..=i].to_string(),
                None => String::new(),
            };
            IndexSource {
                vsi_path: o.scheme.vsi_path(&o.authority, &o.key),
                base: Base::Url(ObjectUrl { key: dir, ..o }),
            }
        }
    })
}

/// True when GDAL reads `name` over the network, also through an archive
/// (`/vsizip//vsicurl/...`).
fn is_network_vsi(name: &str) -> bool {
    !crate::io::vsi::vsi_is_local(name) || NETWORK_VSI.iter().any(|p| name.contains(p))
}

/// Resolves `url` against `base` (the index's directory).
pub fn resolve(url: &str, base: &Base) -> Result<Location> {
    let spelled = gdal_spelling(url)?;
    let url = spelled.as_deref().unwrap_or(url);
    if let Some(rest) = strip_scheme(url, "file") {
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        return Ok(Location::Local(normalize(Path::new(&percent_decode(
            rest,
        )?))));
    }
    if let Some((scheme, rest)) = url.split_once("://") {
        if is_scheme(scheme) {
            let kind = Scheme::parse(scheme).ok_or_else(|| {
                Error::unsupported(format!(
                    "URL scheme '{scheme}://' of '{url}' (supported: file, s3, gs, az, abfs, \
                     abfss, http, https, and GDAL's /vsis3/, /vsigs/, /vsiaz/, /vsicurl/)"
                ))
            })?;
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            if authority.is_empty() {
                return Err(Error::Usage {
                    what: format!("URL '{url}' has no bucket or host"),
                });
            }
            return Ok(Location::Object(ObjectUrl {
                scheme: kind,
                authority: authority.to_string(),
                key: join_key(url, "", path)?,
            }));
        }
    }
    if url.starts_with("/vsi") {
        return Err(Error::unsupported(format!(
            "GDAL virtual file system path '{url}' in a reference (supported: /vsis3/, \
             /vsigs/, /vsiaz/, /vsicurl/http[s]://)"
        )));
    }
    let p = Path::new(url);
    if p.is_absolute() {
        return Ok(Location::Local(normalize(p)));
    }
    match base {
        Base::Dir(dir) => Ok(Location::Local(normalize(&dir.join(p)))),
        Base::Url(dir) => Ok(Location::Object(ObjectUrl {
            key: join_key(url, &dir.key, url)?,
            ..dir.clone()
        })),
        Base::Opaque { index, .. } => Err(Error::unsupported(format!(
            "relative reference '{url}' in index {index}: chunkref cannot read files next to \
             an index in this file system; use absolute paths or URLs"
        ))),
    }
}

/// True when `url` names a file relative to the index, one [`resolve`]
/// joins to the index's [`Base`]: no scheme, not an absolute path (nor a
/// GDAL `/vsi...` one), not starting with a `{{template}}` (its value
/// decides).
pub fn is_relative(url: &str) -> bool {
    !url.starts_with('/')
        && !url.starts_with("{{")
        && !url.split_once("://").is_some_and(|(s, _)| is_scheme(s))
}

/// Rewrites GDAL's `/vsis3/`, `/vsigs/`, `/vsiaz/` and `/vsicurl/` paths as
/// URLs; `None` for any other name.
fn gdal_spelling(name: &str) -> Result<Option<String>> {
    for (prefix, scheme) in [("/vsis3/", "s3"), ("/vsigs/", "gs"), ("/vsiaz/", "az")] {
        if let Some(rest) = name.strip_prefix(prefix) {
            return Ok(Some(format!("{scheme}://{rest}")));
        }
    }
    if let Some(rest) = name.strip_prefix("/vsicurl/") {
        if strip_scheme(rest, "http").is_some() || strip_scheme(rest, "https").is_some() {
            return Ok(Some(rest.to_string()));
        }
        return Err(Error::unsupported(format!(
            "'{name}': /vsicurl/ must be followed by an http:// or https:// URL"
        )));
    }
    if name.starts_with("/vsicurl?") {
        return Err(Error::unsupported(format!(
            "'{name}': /vsicurl? with options; write /vsicurl/https://... or the URL itself"
        )));
    }
    Ok(None)
}

fn strip_scheme<'a>(url: &'a str, scheme: &str) -> Option<&'a str> {
    let (s, rest) = url.split_once("://")?;
    s.eq_ignore_ascii_case(scheme).then_some(rest)
}

fn is_scheme(s: &str) -> bool {
    s.len() > 1
        && s.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
}

/// Joins `rel` to the key directory `dir` and resolves `.` and `..`; a `..`
/// above the root of the bucket or host is refused (`url` names the reference).
fn join_key(url: &str, dir: &str, rel: &str) -> Result<String> {
    let (path, query) = match rel.find(['?', '#']) {
        Some(i) => rel.split_at(i),
        None => (rel, ""),
    };
    let mut parts: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    let segments: Vec<&str> = path.split('/').collect();
    for (i, seg) in segments.iter().enumerate() {
        match *seg {
            "." => {}
            "" if i + 1 < segments.len() => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(Error::Usage {
                        what: format!(
                            "reference '{url}' climbs above the root of its bucket or host \
                             with '..'"
                        ),
                    });
                }
            }
            s => parts.push(s),
        }
    }
    Ok(parts.join("/") + query)
}

/// Removes `.` and resolves `..` lexically (object_store refuses both).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Decodes `%XX` escapes of a `file://` URL path.
fn percent_decode(s: &str) -> Result<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| {
                    Error::unsupported(format!("bad percent escape in URL path '{s}'"))
                })?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| Error::unsupported(format!("URL path '{s}' is not UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(s: &str) -> Location {
        let (scheme, rest) = s.split_once("://").unwrap();
        let (authority, key) = rest.split_once('/').unwrap();
        Location::Object(ObjectUrl {
            scheme: Scheme::parse(scheme).unwrap(),
            authority: authority.into(),
            key: key.into(),
        })
    }

    #[test]
    fn resolves_local_forms() {
        let base = Base::Dir("/idx/dir".into());
        for (url, want) in [
            ("/a/b.tif", "/a/b.tif"),
            ("file:///a/b%20c.tif", "/a/b c.tif"),
            ("file://localhost/a/./b.tif", "/a/b.tif"),
            ("sub/x.bin", "/idx/dir/sub/x.bin"),
            ("../x.bin", "/idx/x.bin"),
        ] {
            assert_eq!(
                resolve(url, &base).unwrap(),
                Location::Local(want.into()),
                "{url}"
            );
        }
    }

    #[test]
    fn resolves_remote_forms_and_gdal_spellings() {
        let base = Base::Dir("/idx".into());
        for (url, want) in [
            ("s3://bucket/a/b.tif", "s3://bucket/a/b.tif"),
            ("/vsis3/bucket/a/b.tif", "s3://bucket/a/b.tif"),
            ("gs://b/k", "gs://b/k"),
            ("/vsigs/b/k", "gs://b/k"),
            ("az://c/k", "az://c/k"),
            ("/vsiaz/c/k", "az://c/k"),
            (
                "abfs://c@acct.dfs.core.windows.net/k",
                "abfs://c@acct.dfs.core.windows.net/k",
            ),
            (
                "https://h.example:8443/d/x.tif",
                "https://h.example:8443/d/x.tif",
            ),
            (
                "/vsicurl/http://127.0.0.1:9/d/./x.tif",
                "http://127.0.0.1:9/d/x.tif",
            ),
            (
                "http://h/d/e/../x.tif?sig=a/../b",
                "http://h/d/x.tif?sig=a/../b",
            ),
        ] {
            assert_eq!(resolve(url, &base).unwrap(), object(want), "{url}");
        }
    }

    #[test]
    fn relative_references_join_a_remote_base() {
        let base = Base::Url(ObjectUrl {
            scheme: Scheme::S3,
            authority: "bkt".into(),
            key: "dir/sub/".into(),
        });
        assert_eq!(
            resolve("x.tif", &base).unwrap(),
            object("s3://bkt/dir/sub/x.tif")
        );
        assert_eq!(
            resolve("../../x.tif", &base).unwrap(),
            object("s3://bkt/x.tif")
        );
        let e = resolve("../../../x.tif", &base).unwrap_err().to_string();
        assert!(
            e.contains("climbs above") && e.contains("../../../x.tif"),
            "{e}"
        );
        assert_eq!(
            resolve("/abs/x", &base).unwrap(),
            Location::Local("/abs/x".into())
        );
        let e = resolve("s3://bkt/../x", &base).unwrap_err().to_string();
        assert!(e.contains("climbs above"), "{e}");
    }

    #[test]
    fn refuses_unknown_forms_by_name() {
        let base = Base::Opaque {
            index: "/vsimem/i.json".into(),
            remote: false,
        };
        for (url, needle) in [
            ("ftp://h/x", "ftp://"),
            ("memory://x", "memory://"),
            ("/vsizip/a.zip/x", "/vsizip/"),
            ("/vsicurl/ftp://h/x", "/vsicurl/"),
            ("rel/x.bin", "/vsimem/i.json"),
            ("s3:///k", "no bucket"),
        ] {
            let e = resolve(url, &base).unwrap_err().to_string();
            assert!(e.contains(needle), "{url}: {e}");
        }
    }

    #[test]
    fn index_sources() {
        let s = index_source("/vsis3/bkt/dir/i.json").unwrap();
        assert_eq!(s.vsi_path, "/vsis3/bkt/dir/i.json");
        assert!(s.base.is_remote());
        assert_eq!(resolve("x", &s.base).unwrap(), object("s3://bkt/dir/x"));
        let s = index_source("s3://bkt/i.json").unwrap();
        assert_eq!(s.vsi_path, "/vsis3/bkt/i.json");
        assert_eq!(resolve("x", &s.base).unwrap(), object("s3://bkt/x"));
        let s = index_source("https://h:1/a/i.json").unwrap();
        assert_eq!(s.vsi_path, "/vsicurl/https://h:1/a/i.json");
        assert_eq!(resolve("x", &s.base).unwrap(), object("https://h:1/a/x"));
        let s = index_source("/vsimem/d/i.json").unwrap();
        assert_eq!(s.vsi_path, "/vsimem/d/i.json");
        assert!(!s.base.is_remote());
        for remote in [
            "/vsicurl_streaming/http://h/i.json",
            "/vsizip//vsis3/b/a.zip/i.json",
        ] {
            let s = index_source(remote).unwrap();
            assert_eq!(s.vsi_path, remote);
            assert!(s.base.is_remote(), "{remote}");
        }
        assert!(!index_source("/vsizip//tmp/a.zip/i.json")
            .unwrap()
            .base
            .is_remote());
        let s = index_source("/data/d/i.json").unwrap();
        assert_eq!(s.base, Base::Dir("/data/d".into()));
        // A Kerchunk Parquet store named with a trailing slash: its parent,
        // as for the same name without one.
        for name in ["s3://bkt/a/store/", "s3://bkt/a/store"] {
            let s = index_source(name).unwrap();
            let joined = resolve("store/x/0.bin", &s.base).unwrap();
            assert_eq!(joined, object("s3://bkt/a/store/x/0.bin"), "{name}");
        }
    }

    #[test]
    fn relative_urls() {
        for url in ["0.bin", "../x/0.bin", "x/{{v}}.bin", "./a", "file:x"] {
            assert!(is_relative(url), "{url}");
        }
        for url in [
            "/abs",
            "/vsis3/b/k",
            "s3://b/k",
            "https://h/k",
            "file:///a",
            "{{base}}/k",
        ] {
            assert!(!is_relative(url), "{url}");
        }
    }
}
