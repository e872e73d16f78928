//! Owned libhdf5 identifiers and libhdf5's errors as chunkref's.

use std::ffi::{c_char, c_uint, c_void, CStr, CString};

use hdf5_metno_sys::h5::herr_t;
use hdf5_metno_sys::h5e::{
    H5E_error2_t, H5Eclear2, H5Eset_auto2, H5Ewalk2, H5E_DEFAULT, H5E_WALK_DOWNWARD,
};
use hdf5_metno_sys::h5i::{hid_t, H5Idec_ref};

use crate::base::error::{Error, Result};

/// An identifier libhdf5 handed out, released when dropped.
#[derive(Debug)]
pub(crate) struct Handle(hid_t);

impl Handle {
    /// Takes ownership of `id`; a negative id is libhdf5's failure,
    /// reported as `what` went wrong.
    pub(crate) fn new(id: hid_t, what: impl FnOnce() -> String) -> Result<Handle> {
        if id < 0 {
            Err(failure(what()))
        } else {
            Ok(Handle(id))
        }
    }

    /// The identifier, for calls into libhdf5.
    pub(crate) fn id(&self) -> hid_t {
        self.0
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the id is a valid identifier this handle owns.
        unsafe { H5Idec_ref(self.0) };
    }
}

/// `status` of a libhdf5 call, an error reported as `what` went wrong
/// when negative.
pub(crate) fn check<T: Into<i64> + Copy>(status: T, what: impl FnOnce() -> String) -> Result<T> {
    if status.into() < 0 {
        Err(failure(what()))
    } else {
        Ok(status)
    }
}

/// Stops libhdf5 printing its error stack on stderr: its failures become
/// chunkref errors (with libhdf5's innermost message) instead.
pub(crate) fn silence_library() {
    // SAFETY: H5E_DEFAULT is the default stack; no callback is installed.
    unsafe { H5Eset_auto2(H5E_DEFAULT, None, std::ptr::null_mut()) };
}

/// A `CString` of `name`; an error when it holds a NUL byte.
pub(crate) fn c_name(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| Error::unsupported(format!("name '{name}' holds a NUL byte")))
}

/// An error for `what` failed, with libhdf5's innermost message (the
/// error stack is cleared); [`in_file`] names the file.
pub(crate) fn failure(what: String) -> Error {
    let detail = innermost_message();
    malformed(if detail.is_empty() {
        what
    } else {
        format!("{what} (libhdf5: {detail})")
    })
}

/// An [`Error::MalformedSource`] for `reason`; [`in_file`] names the file.
pub(crate) fn malformed(reason: String) -> Error {
    Error::MalformedSource {
        path: String::new(),
        reason,
    }
}

/// The description of the deepest entry of libhdf5's error stack.
fn innermost_message() -> String {
    extern "C" fn take(_: c_uint, err: *const H5E_error2_t, data: *mut c_void) -> herr_t {
        // SAFETY: libhdf5 passes a valid entry and our String as `data`.
        unsafe {
            let out = &mut *data.cast::<String>();
            let desc: *const c_char = (*err).desc;
            if !desc.is_null() {
                *out = CStr::from_ptr(desc).to_string_lossy().into_owned();
            }
        }
        0
    }
    let mut message = String::new();
    // SAFETY: `take` matches H5E_walk2_t and only writes `message`.
    unsafe {
        H5Ewalk2(
            H5E_DEFAULT,
            H5E_WALK_DOWNWARD,
            Some(take),
            (&mut message as *mut String).cast(),
        );
        H5Eclear2(H5E_DEFAULT);
    }
    message
}

/// Fills in `path` on the [`Error::MalformedSource`] errors of this module.
pub(crate) fn in_file(e: Error, file: &str) -> Error {
    match e {
        Error::MalformedSource { path, reason } if path.is_empty() => Error::MalformedSource {
            path: file.to_string(),
            reason,
        },
        other => other,
    }
}
