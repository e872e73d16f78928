//! Turning reference URLs into locations a fetcher can read.
//!
//! Only local files are served in this build; other schemes are recognised
//! and refused with a message naming them, so remote stores plug in here
//! without touching the read path.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Where a file's bytes live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A file on the local file system (absolute path).
    Local(PathBuf),
}

/// Resolves `url` (absolute path, `file://` URL, or a path relative to the
/// index's directory `base_dir`).
pub fn resolve(url: &str, base_dir: &Path) -> Result<Location> {
    if let Some(rest) = url.strip_prefix("file://") {
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        return Ok(Location::Local(normalize(Path::new(&percent_decode(
            rest,
        )?))));
    }
    if let Some((scheme, _)) = url.split_once("://") {
        if scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        {
            return Err(Error::unsupported(format!(
                "URL scheme '{scheme}://' of '{url}' (this build reads local files only)"
            )));
        }
    }
    if url.starts_with("/vsi") {
        return Err(Error::unsupported(format!(
            "GDAL virtual file system path '{url}' (this build reads local files only)"
        )));
    }
    let p = Path::new(url);
    Ok(Location::Local(normalize(&if p.is_absolute() {
        p.to_path_buf()
    } else {
        base_dir.join(p)
    })))
}

/// Removes `.` and resolves `..` lexically (object_store refuses both).
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
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

    #[test]
    fn resolves_local_forms() {
        let base = Path::new("/idx/dir");
        assert_eq!(
            resolve("/a/b.tif", base).unwrap(),
            Location::Local("/a/b.tif".into())
        );
        assert_eq!(
            resolve("file:///a/b%20c.tif", base).unwrap(),
            Location::Local("/a/b c.tif".into())
        );
        assert_eq!(
            resolve("sub/x.bin", base).unwrap(),
            Location::Local("/idx/dir/sub/x.bin".into())
        );
        let e = resolve("s3://bucket/k", base).unwrap_err().to_string();
        assert!(e.contains("s3://"), "{e}");
    }
}
