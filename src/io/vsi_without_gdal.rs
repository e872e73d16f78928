//! [`super::vsi`] for a build without GDAL (no `gdal` feature): an index
//! named by a URL or a GDAL network path (`s3://`, `https://`,
//! `/vsis3/`, `/vsicurl/` ...) is read by range through [`crate::io::fetch`]
//! (object_store) with the settings of the environment (or those
//! [`crate::base::gdal::cpl::with_config_options`] sets), as chunks are;
//! GDAL's other virtual file systems (`/vsimem/`, `/vsizip/` ...) are
//! refused with a message saying why; local index files open without GDAL
//! (`crate::io::index_file::LocalFile`).

use std::path::Path;

use bytes::Bytes;

use crate::base::error::{Error, Result};
use crate::base::gdal::NETWORK_VSI;
use crate::io::config::Settings;
use crate::io::fetch::{Fetcher, Source, Want};
use crate::io::resolve::{resolve, Base, Location};

/// Bytes read with the size of an index object, in its first request.
const HEAD_BYTES: u64 = 64 << 10;

/// False for the paths of GDAL's network file systems (`/vsicurl/`,
/// `/vsis3/`, ...; not their `_streaming` variants), as GDAL's `VSIIsLocal`
/// answers.
pub fn vsi_is_local(path: &str) -> bool {
    !NETWORK_VSI.iter().any(|fs| {
        path.strip_prefix(fs)
            .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// Whether `path` exists: a local file, or an object a URL or GDAL network
/// path names (one ranged request).
pub fn vsi_exists(path: &str) -> bool {
    match remote(path) {
        Some(Ok(loc)) => VsiFile::at(path, &loc).is_ok(),
        Some(Err(_)) => false,
        None => !path.starts_with("/vsi") && Path::new(path).exists(),
    }
}

/// The object `path` names when it is a URL or a GDAL network path.
fn remote(path: &str) -> Option<Result<Location>> {
    let url_like = path.contains("://") || !vsi_is_local(path);
    url_like.then(|| resolve(path, &Base::Dir("/".into())))
}

/// An index object read by range over the network without GDAL.
#[derive(Debug)]
pub struct VsiFile {
    name: String,
    source: Source,
    fetcher: Fetcher,
    size: u64,
    head: Bytes,
}

impl VsiFile {
    /// Opens the object `vsi_path` names (reading its first bytes and its
    /// size); refuses GDAL virtual file systems that are not network ones.
    pub fn open(vsi_path: &str) -> Result<VsiFile> {
        match remote(vsi_path) {
            Some(loc) => VsiFile::at(vsi_path, &loc?),
            None => Err(Error::Usage {
                what: format!(
                    "index '{vsi_path}' is read through GDAL's virtual file systems, and this \
                     chunkref was built without the `gdal` feature: open a local copy or a \
                     URL, or use a build with GDAL"
                ),
            }),
        }
    }

    fn at(name: &str, loc: &Location) -> Result<VsiFile> {
        let settings = Settings::from_gdal()?;
        let source = Source::open(loc, &settings)?;
        let fetcher = Fetcher::new(&settings);
        let (head, size) = fetcher.fetch_head(&source, HEAD_BYTES)?;
        Ok(VsiFile {
            name: name.to_string(),
            source,
            fetcher,
            size,
            head,
        })
    }

    /// Where the file is (for messages).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Exactly `len` bytes from `offset`.
    pub fn read_exact_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        let end = offset.saturating_add(len as u64);
        if end <= self.head.len() as u64 {
            return Ok(self.head.slice(offset as usize..end as usize));
        }
        self.fetcher
            .fetch_one(&self.source, Want::Range(offset, len as u64))
    }
}
