//! Index files read through GDAL's virtual file systems ([`VsiFile`]), so
//! `/vsimem/`, `/vsis3/`, `/vsicurl/` ... indexes open with GDAL's own
//! credentials and caching and tables are read by range, and GDAL's view of
//! which paths are local and which exist.

#![allow(unsafe_code)]

use std::ffi::{c_int, CStr, CString};
use std::sync::Mutex;

use bytes::Bytes;

use crate::base::error::{Error, Result};

use gdal_sys::{
    CPLErrorReset, CPLGetLastErrorMsg, CPLPopErrorHandler, CPLPushErrorHandler,
    CPLQuietErrorHandler, VSIFCloseL, VSIFOpenExL, VSIFReadL, VSIFSeekL, VSIFTellL, VSIIsLocal,
    VSIStatBufL, VSIStatExL, VSILFILE,
};

fn c_string(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::Usage {
        what: format!("{what} '{}' contains a NUL byte", s.replace('\0', "\\0")),
    })
}

/// GDAL's `VSIIsLocal`: false for paths of network file systems GDAL 3.6
/// knows as such (`/vsicurl/`, `/vsis3/`, ...; not the `_streaming` ones).
pub fn vsi_is_local(path: &str) -> bool {
    let Ok(p) = CString::new(path) else {
        return false;
    };
    // SAFETY: a valid C string; the call only inspects the name.
    unsafe { VSIIsLocal(p.as_ptr()) }
}

/// Whether `path` exists for GDAL (`VSIStatExL` with `VSI_STAT_EXISTS_FLAG`).
pub fn vsi_exists(path: &str) -> bool {
    /// `VSI_STAT_EXISTS_FLAG` of cpl_vsi.h.
    const EXISTS: c_int = 0x1;
    let Ok(p) = CString::new(path) else {
        return false;
    };
    // gdal-sys declares `VSIStatBufL` (a `struct stat64`) as an opaque,
    // zero-sized type, so GDAL gets room of its own: 256 bytes, 8-aligned,
    // above the 144 bytes of glibc's x86_64 `struct stat64` (and any other
    // Linux target's). A zero-sized buffer let GDAL write over the stack
    // whenever the path existed.
    let mut buf = std::mem::MaybeUninit::<[u64; 32]>::zeroed();
    // SAFETY: a valid C string and a writable buffer larger than the
    // structure GDAL fills.
    unsafe { VSIStatExL(p.as_ptr(), buf.as_mut_ptr().cast::<VSIStatBufL>(), EXISTS) == 0 }
}

/// Runs `f` with GDAL's errors silenced, returning its result and the
/// last error message GDAL set meanwhile (empty if none).
fn quietly<T>(f: impl FnOnce() -> T) -> (T, String) {
    // SAFETY: the quiet handler is pushed and popped on this thread; the
    // message is copied before the error state is reset.
    unsafe {
        CPLErrorReset();
        CPLPushErrorHandler(Some(CPLQuietErrorHandler));
        let out = f();
        let msg = CPLGetLastErrorMsg();
        let message = if msg.is_null() {
            String::new()
        } else {
            CStr::from_ptr(msg).to_string_lossy().into_owned()
        };
        CPLPopErrorHandler();
        CPLErrorReset();
        (out, message)
    }
}

/// A file opened through GDAL's virtual file systems, read by range: GDAL's
/// `/vsicurl/`-family handles turn each read into HTTP range requests (with
/// their own read-ahead and cache), so a table on object storage is queried
/// without being downloaded.
#[derive(Debug)]
pub struct VsiFile {
    name: String,
    handle: Mutex<Handle>,
    size: u64,
}

/// A `VSILFILE*`, used by one thread at a time behind the mutex.
#[derive(Debug)]
struct Handle(*mut VSILFILE);

// SAFETY: a VSILFILE may move between threads; the mutex serialises its use.
unsafe impl Send for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle came from VSIFOpenExL and is closed once.
        unsafe { VSIFCloseL(self.0) };
    }
}

const SEEK_SET: c_int = 0;
const SEEK_END: c_int = 2;

impl VsiFile {
    /// Opens `vsi_path` for reading.
    pub fn open(vsi_path: &str) -> Result<VsiFile> {
        let name = c_string(vsi_path, "index path")?;
        let io = |reason: String| Error::Io {
            url: vsi_path.to_string(),
            range: String::new(),
            reason: if reason.is_empty() {
                "no such file, or GDAL cannot read it".to_string()
            } else {
                reason
            },
        };
        // SAFETY: valid C strings; the handle is owned by `Handle`.
        let (fp, message) = quietly(|| unsafe { VSIFOpenExL(name.as_ptr(), c"rb".as_ptr(), 1) });
        if fp.is_null() {
            return Err(io(message));
        }
        let handle = Handle(fp);
        // SAFETY: a live handle.
        let size = unsafe { (VSIFSeekL(handle.0, 0, SEEK_END) == 0).then(|| VSIFTellL(handle.0)) };
        let size = size.ok_or_else(|| io("cannot find its size".into()))?;
        Ok(VsiFile {
            name: vsi_path.to_string(),
            handle: Mutex::new(handle),
            size,
        })
    }
}

impl VsiFile {
    /// Where the file is (for messages).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Exactly `len` bytes from `offset` (the file holds them: see
    /// [`crate::io::index_file::IndexFile::available`]).
    pub fn read_exact_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        let mut buf = vec![0u8; len];
        let handle = self.handle.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: a live handle used under its mutex; `buf` holds `len` bytes.
        let (read, message) = quietly(|| unsafe {
            if VSIFSeekL(handle.0, offset, SEEK_SET) != 0 {
                0
            } else {
                VSIFReadL(buf.as_mut_ptr().cast(), 1, len, handle.0)
            }
        });
        if read != len {
            return Err(Error::Io {
                url: self.name.clone(),
                range: format!("bytes {offset}-{}", offset + len as u64),
                reason: if message.is_empty() {
                    format!("read {read} of {len} bytes")
                } else {
                    message
                },
            });
        }
        Ok(Bytes::from(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::index_file::IndexFile;

    #[test]
    fn tells_network_paths() {
        assert!(vsi_is_local("/vsimem/x.json") && vsi_is_local("/tmp/x.json"));
        for remote in ["/vsicurl/http://h/x", "/vsis3/b/x"] {
            assert!(!vsi_is_local(remote), "{remote}");
        }
    }

    #[test]
    fn reads_local_files_and_names_missing_ones() {
        let dir = std::env::temp_dir().join(format!("chunkref-gdal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("i.json");
        std::fs::write(&f, b"{\"refs\": {}}").unwrap();
        let file = VsiFile::open(f.to_str().unwrap()).unwrap();
        assert_eq!(file.size(), 12);
        assert_eq!(&file.read_all(1 << 20).unwrap()[..], b"{\"refs\": {}}");
        assert_eq!(&file.read_at(2, 4).unwrap()[..], b"refs");
        assert!(file.read_all(5).is_err());
        let e = VsiFile::open(dir.join("nope.json").to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope.json"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
