//! Which PAM sidecars lie next to a local index, known without probing for
//! them at every open.
//!
//! When an index has no `.aux.xml`, GDAL's PAM looks for it and then for
//! four spellings of an Imagine `.aux` file: five failed opens per dataset
//! open, a tenth of what a tile server spends opening an index per request.
//! A directory whose modification time has not changed holds the same names
//! (creating, removing or renaming a file changes it), so the sidecars found
//! are kept per index with the directory's identity and time, and one
//! `stat` of the directory stands for the probes on later opens. GDAL is
//! then given the names found as its sibling list, and looks only for
//! those.
//!
//! Directory times tick in steps of a few milliseconds: a directory
//! modified less than [`SETTLE`] ago is probed every time.

use std::collections::VecDeque;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::SystemTime;

use crate::base::process::PerProcess;
use crate::read::index_cache::{ENTRIES, SETTLE};

/// A directory as seen at one time: device, inode and modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirState {
    device: u64,
    inode: u64,
    modified: SystemTime,
}

impl DirState {
    /// The state of `dir`, if it is a directory modified at least
    /// [`SETTLE`] ago.
    fn settled(dir: &Path) -> Option<DirState> {
        let meta = std::fs::metadata(dir).ok().filter(|m| m.is_dir())?;
        let modified = meta.modified().ok()?;
        let age = SystemTime::now().duration_since(modified).ok()?;
        (age >= SETTLE).then_some(DirState {
            device: meta.dev(),
            inode: meta.ino(),
            modified,
        })
    }
}

/// Sidecars found per index path, most recently used last.
type Found = Mutex<VecDeque<(String, DirState, Vec<String>)>>;

fn found() -> &'static Found {
    static FOUND: PerProcess<Found> = PerProcess::new(Default::default);
    FOUND.get()
}

/// The names GDAL's PAM looks for next to `index` (a file name): its
/// `.aux.xml`, then an Imagine `.aux` in place of the extension or after
/// it, in lower and upper case.
fn candidates(index: &str) -> Vec<String> {
    let stem = Path::new(index)
        .file_stem()
        .map_or_else(|| index.to_string(), |s| s.to_string_lossy().into_owned());
    vec![
        format!("{index}.aux.xml"),
        format!("{stem}.aux"),
        format!("{stem}.AUX"),
        format!("{index}.aux"),
        format!("{index}.AUX"),
    ]
}

/// The file names of the PAM sidecars next to the local file `index`, or
/// `None` when they must be probed for (not a local file in a directory,
/// or a directory modified less than [`SETTLE`] ago).
pub fn sidecars(index: &str) -> Option<Vec<String>> {
    let path = Path::new(index);
    let name = path.file_name()?.to_str()?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let state = DirState::settled(dir)?;
    {
        let mut kept = found().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = kept.iter().position(|(i, _, _)| i == index) {
            let entry = kept.remove(at).expect("position is in range");
            if entry.1 == state {
                let names = entry.2.clone();
                kept.push_back(entry);
                return Some(names);
            }
        }
    }
    let names: Vec<String> = candidates(name)
        .into_iter()
        .filter(|c| dir.join(c).exists())
        .collect();
    // Kept only if the directory did not change while it was looked at.
    if DirState::settled(dir) == Some(state) {
        let mut kept = found().lock().unwrap_or_else(|p| p.into_inner());
        kept.retain(|(i, _, _)| i != index);
        if kept.len() >= ENTRIES {
            kept.pop_front();
        }
        kept.push_back((index.to_string(), state, names.clone()));
    }
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settle(dir: &Path) {
        let old = SystemTime::now() - 2 * SETTLE;
        std::fs::File::open(dir).unwrap().set_modified(old).unwrap();
    }

    #[test]
    fn sees_sidecars_come_and_go() {
        let dir = std::env::temp_dir().join(format!("chunkref-sidecars-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let index = dir.join("i.json");
        std::fs::write(&index, "{}").unwrap();
        let index = index.to_str().unwrap();
        // A directory just written to is probed, and what is there found.
        std::fs::write(dir.join("i.aux"), "").unwrap();
        assert_eq!(sidecars(index), None);
        settle(&dir);
        assert_eq!(sidecars(index), Some(vec!["i.aux".to_string()]));
        assert_eq!(sidecars(index), Some(vec!["i.aux".to_string()]));
        // A sidecar written later changes the directory: found.
        std::fs::write(dir.join("i.json.aux.xml"), "<PAMDataset/>").unwrap();
        settle(&dir);
        assert_eq!(
            sidecars(index),
            Some(vec!["i.json.aux.xml".to_string(), "i.aux".to_string()])
        );
        std::fs::remove_file(dir.join("i.aux")).unwrap();
        settle(&dir);
        assert_eq!(sidecars(index), Some(vec!["i.json.aux.xml".to_string()]));
        // Not a file in a directory: probed by GDAL.
        assert_eq!(sidecars("/vsicurl/http://x/i.json"), None);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn names_what_gdal_looks_for() {
        assert_eq!(
            candidates("a.b.json"),
            [
                "a.b.json.aux.xml",
                "a.b.aux",
                "a.b.AUX",
                "a.b.json.aux",
                "a.b.json.AUX"
            ]
        );
        assert_eq!(candidates("noext")[1], "noext.aux");
    }
}
