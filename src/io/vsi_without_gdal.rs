//! [`super::vsi`] for a build without GDAL (no `gdal` feature): no GDAL
//! virtual file system can be opened, so an index named by a `/vsi...`
//! path or a URL is refused with a message saying why; local index files
//! open without GDAL (`crate::io::index_file::LocalFile`).

use std::convert::Infallible;
use std::path::Path;

use bytes::Bytes;

use crate::base::error::{Error, Result};
use crate::base::gdal::NETWORK_VSI;

/// False for the paths of GDAL's network file systems (`/vsicurl/`,
/// `/vsis3/`, ...; not their `_streaming` variants), as GDAL's `VSIIsLocal`
/// answers.
pub fn vsi_is_local(path: &str) -> bool {
    !NETWORK_VSI.iter().any(|fs| {
        path.strip_prefix(fs)
            .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// Whether the local file `path` exists (a `/vsi...` path never does here).
pub fn vsi_exists(path: &str) -> bool {
    !path.starts_with("/vsi") && Path::new(path).exists()
}

/// A file read through GDAL's virtual file systems: none can be opened in
/// this build.
#[derive(Debug)]
pub struct VsiFile {
    never: Infallible,
}

impl VsiFile {
    /// Refuses `vsi_path`: reading it needs GDAL.
    pub fn open(vsi_path: &str) -> Result<VsiFile> {
        Err(Error::Usage {
            what: format!(
                "index '{vsi_path}' is read through GDAL's virtual file systems, and this \
                 chunkref was built without the `gdal` feature: open a local copy, or use a \
                 build with GDAL"
            ),
        })
    }

    /// Where the file is (for messages).
    pub fn name(&self) -> &str {
        match self.never {}
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        match self.never {}
    }

    /// Exactly `len` bytes from `offset`.
    pub fn read_exact_at(&self, _offset: u64, _len: usize) -> Result<Bytes> {
        match self.never {}
    }
}
