//! Icechunk repositories as chunk indexes.
//!
//! An Icechunk repository (format spec 1 or 2, as icechunk 1.x and 2.x
//! write it) is a directory or object-store prefix holding `snapshots/`,
//! `manifests/` and `chunks/`, plus the repository info file `repo` (spec 2)
//! or `refs/branch.NAME/ref.json` / `refs/tag.NAME/ref.json` (spec 1). A
//! snapshot lists every group and array with its Zarr v3 `zarr.json`; its
//! manifests give each chunk as inline bytes, a range of a native chunk
//! object (`chunks/ID`) or a virtual reference (a range of a file anywhere,
//! `vcc://CONTAINER/path` resolved through the repository's virtual chunk
//! containers). Those become the same [`Index`] a Kerchunk store does.
//!
//! The binary files are read with the `icechunk-format` crate (the
//! reference implementation's own format types); fetching goes through the
//! [`Opener`] every index uses, so local paths and GDAL's `/vsis3/`,
//! `/vsicurl/`… prefixes work alike.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use icechunk_format::format_constants::{
    parse_file_header, CompressionAlgorithmBin, FileTypeBin, SpecVersionBin,
    ICECHUNK_FILE_HEADER_LEN,
};
use icechunk_format::manifest::{ChunkPayload, Manifest};
use icechunk_format::repo_info::RepoInfo;
use icechunk_format::snapshot::{NodeData, Snapshot};
use icechunk_format::{serializers, ManifestId, SnapshotId};
use serde_json::Value;

use crate::base::error::{Error, Result};
use crate::index::refs::{position, FileTable, RawRef};
use crate::index::{Index, Store, MAX_DOCUMENT_BYTES};
use crate::io::index_file::Opener;

/// The repository info file of spec 2 repositories.
const REPO_INFO: &str = "repo";
/// The main branch's reference of spec 1 repositories.
const V1_MAIN_REF: &str = "refs/branch.main/ref.json";
/// The branch read when no version is chosen.
const DEFAULT_BRANCH: &str = "main";
/// Manifests fetched at once.
const MANIFEST_FETCHES: usize = 8;

/// Which version of a repository to read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum Version {
    /// The tip of the `main` branch.
    #[default]
    Main,
    /// The tip of a branch.
    Branch(String),
    /// A tag.
    Tag(String),
    /// A snapshot by its id (base32, as icechunk prints it).
    Snapshot(String),
}

impl Version {
    /// The version the open options `BRANCH`, `TAG` or `SNAPSHOT` choose
    /// (at most one of them), else [`Version::Main`].
    pub fn from_options(options: &[(String, String)]) -> Result<Version> {
        let mut chosen = Vec::new();
        for (k, v) in options {
            let v = v.trim().to_string();
            match k.to_ascii_uppercase().as_str() {
                "BRANCH" => chosen.push(Version::Branch(v)),
                "TAG" => chosen.push(Version::Tag(v)),
                "SNAPSHOT" => chosen.push(Version::Snapshot(v)),
                _ => {}
            }
        }
        match chosen.len() {
            0 => Ok(Version::Main),
            1 => Ok(chosen.remove(0)),
            _ => Err(Error::Usage {
                what: "give at most one of the open options BRANCH, TAG and SNAPSHOT".into(),
            }),
        }
    }

    fn describe(&self) -> String {
        match self {
            Version::Main => format!("branch '{DEFAULT_BRANCH}'"),
            Version::Branch(b) => format!("branch '{b}'"),
            Version::Tag(t) => format!("tag '{t}'"),
            Version::Snapshot(s) => format!("snapshot {s}"),
        }
    }
}

/// True when the directory `dir` holds an Icechunk repository (`exists`
/// tells whether a path exists).
pub fn is_repository(dir: &str, exists: impl Fn(&str) -> bool) -> bool {
    let dir = dir.trim_end_matches('/');
    exists(&format!("{dir}/{REPO_INFO}")) || exists(&format!("{dir}/{V1_MAIN_REF}"))
}

/// Reads `version` of the repository at `dir` (known as `name` in
/// messages) as an index: every array of the snapshot with every chunk its
/// manifests list. `open` opens its files, `exists` tells whether one is
/// there.
pub fn read(
    name: &str,
    dir: &str,
    version: &Version,
    open: &Opener<'_>,
    exists: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Index> {
    // icechunk-format panics on some malformed files (a node of an unknown
    // kind): those become errors naming the repository.
    crate::base::error::contain_panics(name, "Icechunk repository", || {
        read_version(name, dir, version, open, exists)
    })
}

fn read_version(
    name: &str,
    dir: &str,
    version: &Version,
    open: &Opener<'_>,
    exists: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Index> {
    let repo = Repository {
        name,
        dir: dir.trim_end_matches('/'),
        open,
        exists,
    };
    let (snapshot_id, info) = repo.resolve(version)?;
    let snapshot = repo.snapshot(&snapshot_id)?;
    let containers = info
        .as_ref()
        .map(containers)
        .transpose()?
        .unwrap_or_default();

    let mut docs = HashMap::new();
    for node in snapshot.iter() {
        let node = node.map_err(|e| repo.malformed(format!("snapshot {snapshot_id}: {e}")))?;
        let key = metadata_key(&node.path.to_string());
        let doc: Value = serde_json::from_slice(&node.user_data)
            .map_err(|e| repo.malformed(format!("'{key}' is not valid JSON: {e}")))?;
        docs.insert(key, doc);
    }
    let store = Store::from_documents(docs)?;

    // The arrays served, each with its node id and manifests.
    let mut arrays = Vec::new();
    for node in snapshot.iter() {
        let node = node.map_err(|e| repo.malformed(format!("snapshot {snapshot_id}: {e}")))?;
        let NodeData::Array { manifests, .. } = node.node_data else {
            continue;
        };
        let path = node.path.to_string();
        let path = path.trim_start_matches('/');
        // An array left out (see Index::skipped) needs no manifest.
        if let Ok(a) = store
            .metas()
            .binary_search_by(|m| m.path.as_str().cmp(path))
        {
            let ids: Vec<ManifestId> = manifests.into_iter().map(|m| m.object_id).collect();
            arrays.push((a, node.id, ids));
        }
    }
    let mut wanted: Vec<ManifestId> = arrays.iter().flat_map(|(_, _, ids)| ids.clone()).collect();
    wanted.sort();
    wanted.dedup();
    let manifests = repo.manifests(&wanted)?;

    let mut files = FileTable::default();
    let mut rows = store.empty_rows();
    for (a, node, ids) in arrays {
        let grid = &store.grids()[a];
        let path = &store.metas()[a].path;
        for id in ids {
            let bad = |e: String| repo.malformed(format!("manifest {id}: {e}"));
            let chunks = Arc::clone(&manifests[&id])
                .iter(node.clone())
                .map_err(|e| bad(e.to_string()))?;
            for chunk in chunks {
                let (coord, payload) = chunk.map_err(|e| bad(e.to_string()))?;
                let idx: Vec<u64> = coord.0.iter().map(|&i| u64::from(i)).collect();
                let pos = (idx.len() == grid.len())
                    .then(|| position(&idx, grid))
                    .flatten()
                    .ok_or_else(|| {
                        bad(format!(
                            "array '{path}' has a chunk {idx:?} outside its grid {grid:?}"
                        ))
                    })?;
                let raw = repo.reference(payload, &containers, &mut files)?;
                rows[a].push((pos, raw));
            }
        }
    }
    Ok(store.into_index(name, files, rows))
}

/// A repository being read.
struct Repository<'a, 'o> {
    name: &'a str,
    dir: &'a str,
    open: &'a Opener<'o>,
    exists: &'a (dyn Fn(&str) -> bool + Sync),
}

impl Repository<'_, '_> {
    fn malformed(&self, reason: String) -> Error {
        Error::MalformedIndex {
            index: self.name.to_string(),
            reason: format!("Icechunk repository: {reason}"),
        }
    }

    fn read(&self, rel: &str) -> Result<bytes::Bytes> {
        (self.open)(&format!("{}/{rel}", self.dir))?.read_all(MAX_DOCUMENT_BYTES)
    }

    /// The snapshot `version` names, and the repository info (spec 2).
    fn resolve(&self, version: &Version) -> Result<(SnapshotId, Option<RepoInfo>)> {
        // Spec 2 has the repository info file; spec 1 refs/ files.
        let info = if (self.exists)(&format!("{}/{REPO_INFO}", self.dir)) {
            let bytes = self.read(REPO_INFO)?;
            Some(
                self.decode(REPO_INFO, FileTypeBin::RepoInfo, &bytes, |v, b| {
                    serializers::deserialize_repo_info(v, b)
                })?,
            )
        } else {
            None
        };
        let not_found = |e: String| Error::Usage {
            what: format!(
                "{} of Icechunk repository {} not found: {e}",
                version.describe(),
                self.name
            ),
        };
        let id = match (version, &info) {
            (Version::Snapshot(id), _) => SnapshotId::try_from(id.as_str())
                .map_err(|e| not_found(format!("'{id}' is not a snapshot id ({e})")))?,
            (Version::Main | Version::Branch(_), Some(info)) => {
                let b = branch_name(version);
                info.resolve_branch(b)
                    .map_err(|e| not_found(e.to_string()))?
            }
            (Version::Tag(t), Some(info)) => {
                info.resolve_tag(t).map_err(|e| not_found(e.to_string()))?
            }
            (Version::Main | Version::Branch(_), None) => self
                .v1_ref(&format!("refs/branch.{}/ref.json", branch_name(version)))
                .map_err(|e| not_found(e.to_string()))?,
            (Version::Tag(t), None) => self
                .v1_ref(&format!("refs/tag.{t}/ref.json"))
                .map_err(|e| not_found(e.to_string()))?,
        };
        Ok((id, info))
    }

    /// The snapshot a spec 1 `ref.json` names.
    fn v1_ref(&self, rel: &str) -> Result<SnapshotId> {
        let bytes = self.read(rel)?;
        let doc: Value = serde_json::from_slice(&bytes)
            .map_err(|e| self.malformed(format!("{rel} is not valid JSON: {e}")))?;
        let id = doc
            .get("snapshot")
            .and_then(Value::as_str)
            .ok_or_else(|| self.malformed(format!("{rel} has no \"snapshot\" id")))?;
        SnapshotId::try_from(id)
            .map_err(|e| self.malformed(format!("{rel}: '{id}' is not a snapshot id ({e})")))
    }

    fn snapshot(&self, id: &SnapshotId) -> Result<Snapshot> {
        let rel = format!("snapshots/{id}");
        let bytes = self.read(&rel)?;
        self.decode(&rel, FileTypeBin::Snapshot, &bytes, |v, b| {
            serializers::deserialize_snapshot(v, b)
        })
    }

    /// The manifests `ids`, fetched [`MANIFEST_FETCHES`] at a time (each
    /// one request, so a remote repository opens in a few round trips).
    fn manifests(&self, ids: &[ManifestId]) -> Result<HashMap<ManifestId, Arc<Manifest>>> {
        let next = AtomicUsize::new(0);
        let fetched = Mutex::new(HashMap::new());
        let failure = Mutex::new(None);
        std::thread::scope(|scope| {
            for _ in 0..MANIFEST_FETCHES.min(ids.len()) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(id) = ids.get(i) else { break };
                    match self.manifest(id) {
                        Ok(m) => {
                            lock(&fetched).insert(id.clone(), Arc::new(m));
                        }
                        Err(e) => {
                            lock(&failure).get_or_insert(e);
                            next.store(ids.len(), Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        match failure.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some(e) => Err(e),
            None => Ok(fetched.into_inner().unwrap_or_else(PoisonError::into_inner)),
        }
    }

    fn manifest(&self, id: &ManifestId) -> Result<Manifest> {
        let rel = format!("manifests/{id}");
        let bytes = self.read(&rel)?;
        self.decode(&rel, FileTypeBin::Manifest, &bytes, |v, b| {
            serializers::deserialize_manifest(v, b)
        })
    }

    /// Checks the file header of `bytes` (file `rel`), decompresses the
    /// body and deserializes it with `parse`.
    fn decode<T, E: std::fmt::Display>(
        &self,
        rel: &str,
        kind: FileTypeBin,
        bytes: &[u8],
        parse: impl FnOnce(SpecVersionBin, Vec<u8>) -> std::result::Result<T, E>,
    ) -> Result<T> {
        let header = parse_file_header(bytes).map_err(|e| self.malformed(format!("{rel}: {e}")))?;
        if header.file_type != kind {
            return Err(self.malformed(format!(
                "{rel} is a {:?} file, expected {kind:?}",
                header.file_type
            )));
        }
        let body = &bytes[ICECHUNK_FILE_HEADER_LEN..];
        let body = match header.compression {
            CompressionAlgorithmBin::None => body.to_vec(),
            CompressionAlgorithmBin::Zstd => {
                decompress(body).map_err(|e| self.malformed(format!("{rel}: zstd body: {e}")))?
            }
        };
        crate::base::error::contain_panics(self.name, rel, || {
            parse(header.spec_version, body).map_err(|e| self.malformed(format!("{rel}: {e}")))
        })
    }

    /// The reference a manifest's payload stands for.
    fn reference(
        &self,
        payload: ChunkPayload,
        containers: &HashMap<String, String>,
        files: &mut FileTable,
    ) -> Result<RawRef> {
        Ok(match payload {
            ChunkPayload::Inline(bytes) => RawRef::Inline(bytes),
            ChunkPayload::Ref(c) => {
                let file = files.intern(&format!("{}/chunks/{}", self.dir, c.id));
                RawRef::Range(file, c.offset, c.length)
            }
            ChunkPayload::Virtual(v) => {
                let url = match v.location.parse_vcc() {
                    None => v.location.url().to_string(),
                    Some((name, rel)) => {
                        let prefix = containers.get(name).ok_or_else(|| {
                            self.malformed(format!(
                                "virtual chunk location '{}' names container '{name}', which the repository configuration does not define",
                                v.location.url()
                            ))
                        })?;
                        format!("{prefix}{rel}")
                    }
                };
                RawRef::Range(files.intern(&url), v.offset, v.length)
            }
            other => {
                return Err(self.malformed(format!(
                    "a chunk payload of a kind this driver does not know ({other:?})"
                )))
            }
        })
    }
}

/// Locks `m`, whatever a panicking holder left in it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The branch a branch version names.
fn branch_name(version: &Version) -> &str {
    match version {
        Version::Branch(b) => b,
        _ => DEFAULT_BRANCH,
    }
}

/// The store key of a node's `zarr.json` (`/` is the root group).
fn metadata_key(node_path: &str) -> String {
    match node_path.trim_matches('/') {
        "" => "zarr.json".to_string(),
        p => format!("{p}/zarr.json"),
    }
}

/// Largest decompressed metadata file accepted.
const MAX_DECOMPRESSED: u64 = 4 << 30;

/// Decompresses one zstd frame, refusing more than [`MAX_DECOMPRESSED`].
fn decompress(frame: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    zstd::stream::read::Decoder::new(frame)?
        .take(MAX_DECOMPRESSED + 1)
        .read_to_end(&mut out)?;
    if out.len() as u64 > MAX_DECOMPRESSED {
        return Err(std::io::Error::other(format!(
            "decompresses to more than {MAX_DECOMPRESSED} bytes"
        )));
    }
    Ok(out)
}

/// Most nodes of a repository configuration read: a flexbuffer may refer
/// to one vector many times, so a few bytes can stand for an exponential
/// tree (the icechunk fuzz target found one that took seconds).
const MAX_CONFIG_NODES: usize = 100_000;

/// Deepest nesting of a repository configuration read.
const MAX_CONFIG_DEPTH: usize = 64;

/// Whether the flexbuffer `bytes` unfolds into at most
/// [`MAX_CONFIG_NODES`] nodes nested at most [`MAX_CONFIG_DEPTH`] deep
/// (buffers the reader cannot even start are left to the parser to
/// refuse).
fn config_within_limits(bytes: &[u8]) -> bool {
    fn walk(node: flexbuffers::Reader<&[u8]>, left: &mut usize, depth: usize) -> bool {
        if *left == 0 || depth > MAX_CONFIG_DEPTH {
            return false;
        }
        *left -= 1;
        if !node.flexbuffer_type().is_vector() {
            return true;
        }
        node.get_vector().map_or(true, |items| {
            items.iter().all(|item| walk(item, left, depth + 1))
        })
    }
    flexbuffers::Reader::get_root(bytes)
        .map_or(true, |root| walk(root, &mut { MAX_CONFIG_NODES }, 0))
}

/// The URL prefix of each named virtual chunk container of the repository
/// configuration held in the repository info (spec 2).
fn containers(info: &RepoInfo) -> Result<HashMap<String, String>> {
    if let Ok(Some(bytes)) = info.config_bytes_raw() {
        if !config_within_limits(&bytes) {
            return Err(Error::Limits {
                what: format!(
                    "the repository configuration unfolds into more than {MAX_CONFIG_NODES} \
                     values or {MAX_CONFIG_DEPTH} levels"
                ),
            });
        }
    }
    let config: Option<Value> = info.config().unwrap_or(None);
    let mut out = HashMap::new();
    let Some(Value::Object(all)) = config
        .as_ref()
        .and_then(|c| c.get("virtual_chunk_containers"))
    else {
        return Ok(out);
    };
    for (key, c) in all {
        let Some(prefix) = c.get("url_prefix").and_then(Value::as_str) else {
            continue;
        };
        let name = c.get("name").and_then(Value::as_str).unwrap_or(key);
        out.insert(name.to_string(), prefix.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_options() {
        let o = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        assert_eq!(Version::from_options(&[]).unwrap(), Version::Main);
        assert_eq!(
            Version::from_options(&o("tag", " v1 ")).unwrap(),
            Version::Tag("v1".into())
        );
        let mut both = o("BRANCH", "dev");
        both.extend(o("SNAPSHOT", "X"));
        assert!(Version::from_options(&both).is_err());
    }

    #[test]
    fn metadata_keys() {
        assert_eq!(metadata_key("/"), "zarr.json");
        assert_eq!(metadata_key("/a/b"), "a/b/zarr.json");
    }

    #[test]
    fn garbage_is_an_error_naming_the_file() {
        let open = |p: &str| -> Result<Arc<dyn crate::io::index_file::IndexFile>> {
            Ok(Arc::new(crate::io::index_file::InMemory::new(
                p,
                b"ICE junk".to_vec(),
            )))
        };
        for (spec2, file) in [(true, "repo:"), (false, "refs/branch.main/ref.json")] {
            let exists = |p: &str| spec2 || !p.ends_with("/repo");
            let e = read("r", "/r", &Version::Main, &open, &exists)
                .unwrap_err()
                .to_string();
            assert!(e.contains("Icechunk repository") && e.contains(file), "{e}");
        }
    }
}
