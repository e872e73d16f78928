//! The few libgdal functions the Rust core calls: configuration options
//! (`CPLGetConfigOption`, which also consults the environment) and whole-file
//! reads through GDAL's virtual file systems (`VSIIngestFile`), used for the
//! index document so `/vsimem/`, `/vsis3/`, `/vsicurl/` ... indexes open with
//! GDAL's own credentials and caching.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};

use crate::error::{Error, Result};

type CplErrorHandler = unsafe extern "C" fn(c_int, c_int, *const c_char);

extern "C" {
    fn CPLGetConfigOption(key: *const c_char, default: *const c_char) -> *const c_char;
    fn VSIIngestFile(
        fp: *mut c_void,
        filename: *const c_char,
        out: *mut *mut u8,
        size: *mut u64,
        max_size: i64,
    ) -> c_int;
    fn VSIFree(p: *mut c_void);
    fn VSIIsLocal(path: *const c_char) -> bool;
    fn CPLQuietErrorHandler(class: c_int, code: c_int, msg: *const c_char);
    fn CPLPushErrorHandler(handler: CplErrorHandler);
    fn CPLPopErrorHandler();
    fn CPLErrorReset();
    fn CPLGetLastErrorMsg() -> *const c_char;
}

#[cfg(test)]
extern "C" {
    fn CPLSetConfigOption(key: *const c_char, value: *const c_char);
}

fn c_string(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::Usage {
        what: format!("{what} '{}' contains a NUL byte", s.replace('\0', "\\0")),
    })
}

/// The value of GDAL configuration option `key` (set with `--config`,
/// `CPLSetConfigOption` or, as GDAL does, taken from the environment).
/// Empty values count as unset.
pub fn config_option(key: &str) -> Option<String> {
    let key = CString::new(key).ok()?;
    // SAFETY: both arguments are valid C strings (default NULL); the result is
    // copied before any other GDAL call can invalidate it.
    let p = unsafe { CPLGetConfigOption(key.as_ptr(), std::ptr::null()) };
    if p.is_null() {
        return None;
    }
    let v = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
    (!v.is_empty()).then_some(v)
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

/// Sets (or with `None` clears) a GDAL configuration option, for tests.
#[cfg(test)]
pub fn set_config_option(key: &str, value: Option<&str>) {
    let key = CString::new(key).unwrap();
    let value = value.map(|v| CString::new(v).unwrap());
    unsafe {
        CPLSetConfigOption(
            key.as_ptr(),
            value.as_ref().map_or(std::ptr::null(), |v| v.as_ptr()),
        )
    };
}

/// Reads the whole of `vsi_path` (any path GDAL can open: local, `/vsimem/`,
/// `/vsis3/`, `/vsicurl/`, ...), at most `max_bytes` bytes. GDAL's own error
/// message becomes the reason of the returned error instead of being printed.
pub fn read_vsi_file(vsi_path: &str, max_bytes: u64) -> Result<Vec<u8>> {
    let name = c_string(vsi_path, "index path")?;
    let mut data: *mut u8 = std::ptr::null_mut();
    let mut size: u64 = 0;
    // SAFETY: valid C string and out-pointers; the quiet handler is popped
    // on the same thread before returning; the buffer is freed with VSIFree.
    let (ok, message) = unsafe {
        CPLErrorReset();
        CPLPushErrorHandler(CPLQuietErrorHandler);
        let ok = VSIIngestFile(
            std::ptr::null_mut(),
            name.as_ptr(),
            &mut data,
            &mut size,
            i64::try_from(max_bytes).unwrap_or(i64::MAX),
        );
        let msg = CPLGetLastErrorMsg();
        let message = if msg.is_null() {
            String::new()
        } else {
            CStr::from_ptr(msg).to_string_lossy().into_owned()
        };
        CPLPopErrorHandler();
        CPLErrorReset();
        (ok != 0, message)
    };
    if !ok || data.is_null() {
        if !data.is_null() {
            unsafe { VSIFree(data.cast()) };
        }
        let reason = if message.is_empty() {
            "no such file, or GDAL cannot read it".to_string()
        } else {
            message
        };
        return Err(Error::Io {
            url: vsi_path.to_string(),
            range: String::new(),
            reason,
        });
    }
    let bytes =
        usize::try_from(size).map(|n| unsafe { std::slice::from_raw_parts(data, n) }.to_vec());
    unsafe { VSIFree(data.cast()) };
    bytes.map_err(|_| Error::Limits {
        what: format!("index {vsi_path} is {size} bytes"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_options_shadow_the_environment() {
        let key = "CHUNKREF_TEST_PRECEDENCE";
        std::env::set_var(key, "from-env");
        assert_eq!(config_option(key).as_deref(), Some("from-env"));
        set_config_option(key, Some("from-config"));
        assert_eq!(config_option(key).as_deref(), Some("from-config"));
        set_config_option(key, None);
        std::env::remove_var(key);
        assert_eq!(config_option(key), None);
    }

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
        let got = read_vsi_file(f.to_str().unwrap(), 1 << 20).unwrap();
        assert_eq!(got, b"{\"refs\": {}}");
        let e = read_vsi_file(dir.join("nope.json").to_str().unwrap(), 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope.json"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
