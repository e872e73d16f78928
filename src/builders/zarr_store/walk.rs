//! Listing the files of a Zarr store directory: every file's store key
//! (its `/`-separated path below the store) and size, directories walked in
//! parallel.

use std::fs::DirEntry;
use std::path::Path;

use rayon::prelude::*;

use crate::base::error::{Error, Result};
use crate::io::resolve::{Location, ObjectUrl};

/// The metadata document names of Zarr v2 and v3.
pub(crate) const METADATA_NAMES: [&str; 5] =
    [".zgroup", ".zarray", ".zattrs", ".zmetadata", "zarr.json"];

/// One file of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoreFile {
    /// Its store key, e.g. `grp/elev/0.1`.
    pub(crate) key: String,
    /// Its length in bytes.
    pub(crate) size: u64,
}

/// Where a store lives: a local directory, or a "directory" of an object
/// store (`s3://bucket/store.zarr`, `/vsis3/...`, `gs://`, `az://`).
#[derive(Debug)]
pub(crate) struct Root {
    /// The store's path or URL, as given, without a trailing `/`.
    name: String,
    /// The store's URL when it is remote.
    remote: Option<ObjectUrl>,
}

impl Root {
    /// The store named `name` (a local directory or a URL).
    pub(crate) fn of(name: &str) -> Result<Root> {
        let name = name.trim_end_matches('/');
        let remote = match crate::io::source::locate(name)? {
            Location::Object(url) => Some(url),
            Location::Local(_) => None,
        };
        Ok(Root {
            name: name.to_string(),
            remote,
        })
    }

    /// The path or URL of the store's file `key`.
    pub(crate) fn name_of(&self, key: &str) -> String {
        format!("{}/{key}", self.name)
    }

    /// `len` bytes at `offset` of the store's file `key`.
    pub(crate) fn read(&self, key: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
        crate::io::source::read_range(&self.name_of(key), offset, len)
    }

    /// Every file of the store (hidden names other than Zarr metadata
    /// names skipped; locally, symbolic links to directories not
    /// followed), in no particular order: a remote store is listed from
    /// its object store, names and sizes in one paginated listing.
    pub(crate) fn list(&self) -> Result<Vec<StoreFile>> {
        let Some(url) = &self.remote else {
            return list_dir(Path::new(&self.name), "");
        };
        let prefix = format!("{}/", url.key.trim_end_matches('/'));
        Ok(crate::io::source::list(url)?
            .into_iter()
            .filter_map(|(key, size)| {
                let key = key.strip_prefix(&prefix)?.to_string();
                key.split('/')
                    .all(is_store_name)
                    .then_some(StoreFile { key, size })
            })
            .collect())
    }
}

/// The files below `dir`, whose store key prefix is `prefix` (`""` or
/// ending in `/`).
fn list_dir(dir: &Path, prefix: &str) -> Result<Vec<StoreFile>> {
    let io = |path: &Path, e: std::io::Error| Error::Io {
        url: path.display().to_string(),
        range: String::new(),
        reason: e.to_string(),
    };
    let entries: Vec<DirEntry> = std::fs::read_dir(dir)
        .map_err(|e| io(dir, e))?
        .collect::<std::io::Result<_>>()
        .map_err(|e| io(dir, e))?;
    let (dirs, files): (Vec<_>, Vec<_>) = entries
        .into_iter()
        .filter(|e| is_store_name(&e.file_name().to_string_lossy()))
        .partition(|e| e.file_type().is_ok_and(|t| t.is_dir()));
    let mut found: Vec<StoreFile> = files
        .par_iter()
        .filter_map(|e| {
            let key = format!("{prefix}{}", e.file_name().to_string_lossy());
            // Follows a symbolic link to a file; skips dangling links and
            // links to directories.
            match std::fs::metadata(e.path()) {
                Ok(m) if m.is_file() => Some(Ok(StoreFile { key, size: m.len() })),
                Ok(_) => None,
                Err(err) => Some(Err(io(&e.path(), err))),
            }
        })
        .collect::<Result<_>>()?;
    let nested: Vec<Vec<StoreFile>> = dirs
        .par_iter()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            list_dir(&e.path(), &format!("{prefix}{name}/"))
        })
        .collect::<Result<_>>()?;
    found.extend(nested.into_iter().flatten());
    Ok(found)
}

/// True for names that can be part of a store key: not hidden, or a Zarr
/// metadata document.
fn is_store_name(name: &str) -> bool {
    !name.starts_with('.') || METADATA_NAMES.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keys_and_sizes_skipping_hidden_names() {
        let root = std::env::temp_dir().join(format!("chunkref-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (path, len) in [
            (".zgroup", 2),
            ("a/.zarray", 3),
            ("a/0/1", 5),
            ("a/.DS_Store", 1),
            (".git/HEAD", 1),
        ] {
            let file = root.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, vec![0u8; len]).unwrap();
        }
        let mut files = Root::of(&root.to_string_lossy()).unwrap().list().unwrap();
        files.sort_by(|a, b| a.key.cmp(&b.key));
        let got: Vec<(&str, u64)> = files.iter().map(|f| (f.key.as_str(), f.size)).collect();
        assert_eq!(got, [(".zgroup", 2), ("a/.zarray", 3), ("a/0/1", 5)]);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
