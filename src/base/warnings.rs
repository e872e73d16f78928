//! Warnings: problems met while reading that do not fail the read (a
//! DTED checksum under `"bad_checksum": "warning"`, ...), raised as GDAL
//! warnings on the thread that asked for the read.
//!
//! A low-level module every layer may use (codecs, chunk reads, the C ABI),
//! so that raising a warning does not tie them to the FFI.

use crate::base::gdal::cpl::raise_warning;

thread_local! {
    /// Warnings held back on a worker thread by [`collect_warnings`].
    static HELD_WARNINGS: std::cell::RefCell<Option<Vec<String>>> = const {
        std::cell::RefCell::new(None)
    };
}

/// Runs `f`, holding back the warnings it raises through [`gdal_warning`]
/// on this thread, and returns them: GDAL error handlers are per thread, so
/// work done on a worker thread hands its warnings to the caller's thread.
pub fn collect_warnings<T>(f: impl FnOnce() -> T) -> (T, Vec<String>) {
    let outer = HELD_WARNINGS.with(|h| h.replace(Some(Vec::new())));
    let out = f();
    let held = HELD_WARNINGS.with(|h| h.replace(outer)).unwrap_or_default();
    (out, held)
}

/// Raises `message` as a GDAL warning (`CE_Warning`, `CPLE_AppDefined`) on
/// the calling thread (or holds it for [`collect_warnings`]): for problems
/// found while reading a block that do not fail it (e.g. a DTED checksum
/// under `"bad_checksum": "warning"`).
pub fn gdal_warning(message: &str) {
    let held = HELD_WARNINGS.with(|h| {
        h.borrow_mut()
            .as_mut()
            .map(|w| w.push(message.to_string()))
            .is_some()
    });
    if held {
        return;
    }
    raise_warning(&format!("ChunkRef: {message}"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_held_per_thread_and_nested_collections_restore() {
        let (((), inner), outer) = collect_warnings(|| {
            gdal_warning("first");
            let inner = collect_warnings(|| gdal_warning("inner"));
            gdal_warning("second");
            inner
        });
        assert_eq!(inner, vec!["inner".to_string()]);
        assert_eq!(outer, vec!["first".to_string(), "second".to_string()]);
        let (_, other_thread) = collect_warnings(|| {
            std::thread::spawn(|| collect_warnings(|| gdal_warning("x"))).join()
        });
        assert!(other_thread.is_empty());
    }
}
