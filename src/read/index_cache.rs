//! Recently opened local index files, kept for the next open of the same
//! file: a tile server, or a GDAL client that opens the dataset for every
//! request, pays the parse once instead of on every open ([`INDEXES`]; the
//! FFI keeps the opened datasets the same way).
//!
//! An entry is valid while the file keeps its device, inode, size and
//! modification time, and is reused only with the same open options. File times tick in
//! steps of a few milliseconds, so a file modified less than
//! [`SETTLE`] ago is read every time. Only regular local files up to
//! [`MAX_FILE_BYTES`] are kept, at most [`ENTRIES`] of them, least recently
//! used dropped first; `CHUNKREF_INDEX_CACHE=NO` turns it off.

use std::collections::VecDeque;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use crate::base::error::Result;
use crate::base::process::PerProcess;
use crate::index::Index;

/// Most values a cache keeps.
pub const ENTRIES: usize = 8;

/// Largest index file kept (64 MiB): bigger ones hold too much memory.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// How long a file must stay unmodified before what was read from it is kept.
pub const SETTLE: Duration = Duration::from_secs(2);

/// What makes a kept value the one an open asks for: the file as it was
/// when the value was read from it, and `K`, what else shaped the value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key<K> {
    /// The file's path as opened.
    path: String,
    /// Its device, inode, size and modification time when it was read.
    device: u64,
    inode: u64,
    len: u64,
    modified: SystemTime,
    /// The open options (and settings) that shaped the value.
    options: K,
}

/// Kept values, most recently used last.
type Entries<K, T> = Mutex<VecDeque<(Key<K>, Arc<T>)>>;

/// Values read from local files, kept per process (a forked child starts
/// with none, see [`PerProcess`]).
pub struct FileCache<K: 'static, T: 'static> {
    entries: PerProcess<Entries<K, T>>,
}

impl<K: PartialEq + Send, T: Send + Sync> Default for FileCache<K, T> {
    fn default() -> Self {
        FileCache::new()
    }
}

// Kept values are handed to any thread of the process.
impl<K: PartialEq + Send, T: Send + Sync> FileCache<K, T> {
    /// An empty cache.
    pub const fn new() -> FileCache<K, T> {
        FileCache {
            entries: PerProcess::new(Default::default),
        }
    }

    /// The value read from the local file `path` with `options`: the kept
    /// one if the file is unchanged, else `load()`'s, kept for next time if
    /// `keep` says so. Files that are not regular local files (directories,
    /// `/vsi...` paths), are too large or were modified less than
    /// [`SETTLE`] ago are always loaded.
    pub fn get_or_load(
        &'static self,
        path: &str,
        options: K,
        load: impl FnOnce() -> Result<T>,
        keep: impl FnOnce(&T) -> bool,
    ) -> Result<Arc<T>> {
        let key = std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file() && m.len() <= MAX_FILE_BYTES)
            .and_then(|m| {
                let modified = m.modified().ok()?;
                let age = SystemTime::now().duration_since(modified).ok()?;
                (age >= SETTLE).then(|| Key {
                    path: path.to_string(),
                    device: m.dev(),
                    inode: m.ino(),
                    len: m.len(),
                    modified,
                    options,
                })
            });
        let Some(key) = key else {
            return load().map(Arc::new);
        };
        let entries = self.entries.get();
        {
            let mut kept = entries.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(at) = kept.iter().position(|(k, _)| *k == key) {
                let entry = kept.remove(at).expect("position is in range");
                let value = Arc::clone(&entry.1);
                kept.push_back(entry);
                return Ok(value);
            }
        }
        let value = Arc::new(load()?);
        if !keep(&value) {
            return Ok(value);
        }
        let mut kept = entries.lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|(k, _)| k.path != key.path || k.options != key.options);
        if kept.len() >= ENTRIES {
            kept.pop_front();
        }
        kept.push_back((key, Arc::clone(&value)));
        Ok(value)
    }
}

/// Parsed index files, by the open options that shaped them.
pub static INDEXES: FileCache<String, Index> = FileCache::new();

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
        let first = INDEXES
            .get_or_load(path, "a".into(), load, |_| true)
            .unwrap();
        let again = INDEXES
            .get_or_load(
                path,
                "a".into(),
                || panic!("the kept index is reused"),
                |_| true,
            )
            .unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        // A value its loader says not to keep is loaded at every open.
        let unkept = INDEXES
            .get_or_load(path, "c".into(), load, |_| false)
            .unwrap();
        let again_unkept = INDEXES
            .get_or_load(path, "c".into(), load, |_| false)
            .unwrap();
        assert!(!Arc::ptr_eq(&unkept, &again_unkept));
        // Other options: another index.
        let other = INDEXES
            .get_or_load(path, "b".into(), load, |_| true)
            .unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        // A changed file (another size) is read again, and kept only once
        // it has settled.
        std::fs::write(&file, doc(100)).unwrap();
        let changed = INDEXES
            .get_or_load(path, "b".into(), load, |_| true)
            .unwrap();
        assert!(!Arc::ptr_eq(&other, &changed));
        assert_eq!(changed.arrays[0].meta.fill, Some(vec![100]));
        let fresh = INDEXES
            .get_or_load(path, "b".into(), load, |_| true)
            .unwrap();
        assert!(
            !Arc::ptr_eq(&changed, &fresh),
            "a file just written is read again"
        );
        // Directories and failures are not kept.
        assert!(INDEXES
            .get_or_load(dir.to_str().unwrap(), "a".into(), load, |_| true)
            .is_ok());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
