//! Recently opened local index files, kept for the next open of the same
//! file: a tile server, or a GDAL client that opens the dataset for every
//! request, pays the parse once instead of on every open.
//!
//! An entry is valid while the file keeps its size, inode and modification
//! time, and is reused only with the same open options. File times tick in
//! steps of a few milliseconds, so a file modified less than
//! [`SETTLE`] ago is read every time. Only regular local files up to
//! [`MAX_FILE_BYTES`] are kept, at most [`ENTRIES`] of them, least recently
//! used dropped first; `CHUNKREF_INDEX_CACHE=NO` turns it off.

use std::collections::VecDeque;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::error::Result;
use crate::index::Index;
use crate::process::PerProcess;

/// Most indexes kept.
pub const ENTRIES: usize = 8;

/// Largest index file kept (64 MiB): bigger ones hold too much memory.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// How long a file must stay unmodified before its index is kept.
pub const SETTLE: Duration = Duration::from_secs(2);

/// What makes a kept index the one an open asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    /// The file's path as opened.
    path: String,
    /// Its size, inode and modification time when it was read.
    len: u64,
    inode: u64,
    modified: SystemTime,
    /// The open options that shaped the index (templates, time steps...).
    options: String,
}

/// Kept indexes, most recently used last.
type Entries = Mutex<VecDeque<(Key, Arc<Index>)>>;

/// The kept indexes (a forked child starts with none, see [`PerProcess`]).
fn entries() -> &'static Entries {
    static ENTRIES: PerProcess<Entries> = PerProcess::new(Default::default);
    ENTRIES.get()
}

/// The index of the local file `path` opened with `options` (any text that
/// differs when the options do): the kept one if the file is unchanged,
/// else `load()`'s, kept for next time. Files that are not regular local
/// files (directories, `/vsi...` paths) are always loaded.
pub fn get_or_load(
    path: &str,
    options: String,
    load: impl FnOnce() -> Result<Index>,
) -> Result<Arc<Index>> {
    let key = std::fs::metadata(path)
        .ok()
        .filter(|m| m.is_file() && m.len() <= MAX_FILE_BYTES)
        .and_then(|m| {
            let modified = m.modified().ok()?;
            let age = SystemTime::now().duration_since(modified).ok()?;
            (age >= SETTLE).then(|| Key {
                path: path.to_string(),
                len: m.len(),
                inode: m.ino(),
                modified,
                options,
            })
        });
    let Some(key) = key else {
        return load().map(Arc::new);
    };
    {
        let mut kept = entries().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = kept.iter().position(|(k, _)| *k == key) {
            let entry = kept.remove(at).expect("position is in range");
            let index = Arc::clone(&entry.1);
            kept.push_back(entry);
            return Ok(index);
        }
    }
    let index = Arc::new(load()?);
    let mut kept = entries().lock().unwrap_or_else(|p| p.into_inner());
    kept.retain(|(k, _)| k.path != key.path || k.options != key.options);
    if kept.len() >= ENTRIES {
        kept.pop_front();
    }
    kept.push_back((key, Arc::clone(&index)));
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(fill: u32) -> String {
        let zarray = serde_json::json!({"shape": [4], "chunks": [2], "dtype": "|u1",
            "fill_value": fill, "compressor": null, "filters": null, "order": "C",
            "zarr_format": 2});
        serde_json::json!({"version": 1, "refs": {"a/.zarray": zarray.to_string()}}).to_string()
    }

    #[test]
    fn reuses_an_unchanged_file_and_rereads_a_changed_one() {
        let dir = std::env::temp_dir().join(format!("chunkref-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("i.json");
        let path = file.to_str().unwrap();
        std::fs::write(&file, doc(1)).unwrap();
        let settled = |f: &std::fs::File| {
            f.set_modified(SystemTime::now() - 2 * SETTLE).unwrap();
        };
        settled(&std::fs::File::options().write(true).open(&file).unwrap());
        let load =
            || Index::from_kerchunk_json(path, std::fs::read(&file).unwrap().as_slice(), &[]);
        let first = get_or_load(path, "a".into(), load).unwrap();
        let again = get_or_load(path, "a".into(), || panic!("the kept index is reused")).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        // Other options: another index.
        let other = get_or_load(path, "b".into(), load).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        // A changed file (another size) is read again, and kept only once
        // it has settled.
        std::fs::write(&file, doc(100)).unwrap();
        let changed = get_or_load(path, "b".into(), load).unwrap();
        assert!(!Arc::ptr_eq(&other, &changed));
        assert_eq!(changed.arrays[0].meta.fill, Some(vec![100]));
        let fresh = get_or_load(path, "b".into(), load).unwrap();
        assert!(
            !Arc::ptr_eq(&changed, &fresh),
            "a file just written is read again"
        );
        // Directories and failures are not kept.
        assert!(get_or_load(dir.to_str().unwrap(), "a".into(), load).is_ok());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
