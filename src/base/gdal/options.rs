//! GDAL's configuration options (`CPLGetConfigOption`, which also consults
//! the environment) and the size of its block cache.

#![allow(unsafe_code)]

use std::ffi::{CStr, CString};

// GDAL's C API as `gdal-sys` generates it from the headers (bindgen), so a
// signature that changes is a compile error here, not a crash.
#[cfg(test)]
use gdal_sys::CPLSetConfigOption;
use gdal_sys::{CPLGetConfigOption, GDALGetCacheMax64};

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
