//! Listing the files of a Zarr store directory: every file's store key
//! (its `/`-separated path below the store) and size, directories walked in
//! parallel.

use std::fs::DirEntry;
use std::path::Path;

use rayon::prelude::*;

use crate::error::{Error, Result};

/// The metadata document names of Zarr v2 and v3.
pub(super) const METADATA_NAMES: [&str; 5] =
    [".zgroup", ".zarray", ".zattrs", ".zmetadata", "zarr.json"];

/// One file of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StoreFile {
    /// Its store key, e.g. `grp/elev/0.1`.
    pub(super) key: String,
    /// Its length in bytes.
    pub(super) size: u64,
}

/// Every file below `root` (hidden names other than Zarr metadata names
/// skipped, symbolic links to directories not followed), in no particular
/// order.
pub(super) fn list(root: &Path) -> Result<Vec<StoreFile>> {
    list_dir(root, "")
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
        let mut files = list(&root).unwrap();
        files.sort_by(|a, b| a.key.cmp(&b.key));
        let got: Vec<(&str, u64)> = files.iter().map(|f| (f.key.as_str(), f.size)).collect();
        assert_eq!(got, [(".zgroup", 2), ("a/.zarray", 3), ("a/0/1", 5)]);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
