//! GDAL's portability layer as the engine uses it: configuration options
//! (`CPLGetConfigOption`, which also consults the environment), data files
//! (`CPLFindFile`), warnings (`CPLError`) and the size of the block cache.

#![allow(unsafe_code)]

use std::ffi::{c_int, CStr, CString};
use std::path::PathBuf;

use crate::base::error::CplCode;

// GDAL's C API as `gdal-sys` generates it from the headers (bindgen), so a
// signature that changes is a compile error here, not a crash.
#[cfg(test)]
use gdal_sys::CPLSetConfigOption;
use gdal_sys::{CPLErr::CE_Warning, CPLError, CPLFindFile, CPLGetConfigOption, GDALGetCacheMax64};

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

/// The size of GDAL's block cache in bytes (`GDAL_CACHEMAX`).
pub fn cache_max() -> usize {
    // SAFETY: no arguments; reads GDAL's setting.
    usize::try_from(unsafe { GDALGetCacheMax64() }).unwrap_or(0)
}

/// Bytes of fetched chunks kept for a second read nearby when
/// `CHUNKREF_FETCH_CACHE` is not set: a quarter of GDAL's block cache,
/// which holds the decoded blocks of the same reads.
pub fn fetch_cache_default() -> usize {
    cache_max() / 4
}

/// Where GDAL finds its data file `name` (`CPLFindFile("gdal", name)`:
/// `GDAL_DATA`, then the directory GDAL was installed with).
pub fn find_data_file(name: &str) -> Option<PathBuf> {
    let class = CString::new("gdal").ok()?;
    let name = CString::new(name).ok()?;
    // SAFETY: both arguments are NUL-terminated strings that outlive the
    // call; GDAL returns NULL or a NUL-terminated path, copied at once.
    let found = unsafe {
        let p = CPLFindFile(class.as_ptr(), name.as_ptr());
        (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
    }?;
    Some(PathBuf::from(found))
}

/// Raises `message` as a GDAL warning (`CE_Warning`, `CPLE_AppDefined`) on
/// the calling thread.
pub fn raise_warning(message: &str) {
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // SAFETY: a "%s" format with one NUL-terminated string argument.
    unsafe {
        CPLError(
            CE_Warning,
            CplCode::AppDefined as c_int,
            c"%s".as_ptr(),
            text.as_ptr(),
        )
    }
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
}
