//! What differs between the libhdf5 versions the builder builds against
//! (1.10; 1.14 or 2.x: `cfg(hdf5_1_14)`; 2.x: `cfg(hdf5_2)` as well; both
//! set by build.rs from the headers): the names the 1.12 API changed and
//! the calls 2.0 changed. Its file driver structures differ too: vfd.rs
//! declares both.

use hdf5_metno_sys::h5::{herr_t, hsize_t};
use hdf5_metno_sys::h5i::hid_t;
use hdf5_metno_sys::h5p::H5P_DEFAULT;
use hdf5_metno_sys::h5r::H5R_type_t;

/// Frees the variable-length data libhdf5 allocated for a read
/// (`H5Dvlen_reclaim`, `H5Treclaim` from 1.12: same arguments).
#[cfg(not(hdf5_1_14))]
pub(crate) use hdf5_metno_sys::h5d::H5Dvlen_reclaim as vlen_reclaim;
#[cfg(hdf5_1_14)]
pub(crate) use hdf5_metno_sys::h5t::H5Treclaim as vlen_reclaim;

/// The type of object references (`hobj_ref_t`): `H5R_OBJECT`, renamed
/// `H5R_OBJECT1` in 1.12.
#[cfg(not(hdf5_1_14))]
pub(crate) const OBJECT_REFERENCE: H5R_type_t = H5R_type_t::H5R_OBJECT;
#[cfg(hdf5_1_14)]
pub(crate) const OBJECT_REFERENCE: H5R_type_t = H5R_type_t::H5R_OBJECT1;

/// Reads the stored (still filtered) bytes of the chunk of dataset `dset`
/// whose first element is at `offset` into `buf`, and its filter mask into
/// `mask`: `H5Dread_chunk` before 2.0.
///
/// # Safety
/// `dset` is an open chunked dataset, `offset` has one entry per dimension
/// of it, and `buf` holds at least the chunk's stored size.
#[cfg(not(hdf5_2))]
pub(crate) unsafe fn read_chunk(
    dset: hid_t,
    offset: &[hsize_t],
    mask: &mut u32,
    buf: &mut [u8],
) -> herr_t {
    // SAFETY: the caller's promise.
    unsafe {
        hdf5_metno_sys::h5d::H5Dread_chunk(
            dset,
            H5P_DEFAULT,
            offset.as_ptr(),
            mask,
            buf.as_mut_ptr().cast(),
        )
    }
}

/// Reads the stored (still filtered) bytes of the chunk of dataset `dset`
/// whose first element is at `offset` into `buf`, and its filter mask into
/// `mask`: `H5Dread_chunk2` from 2.0, which is also told the size of `buf`
/// (and reads nothing when the chunk is larger).
///
/// # Safety
/// `dset` is an open chunked dataset and `offset` has one entry per
/// dimension of it.
#[cfg(hdf5_2)]
pub(crate) unsafe fn read_chunk(
    dset: hid_t,
    offset: &[hsize_t],
    mask: &mut u32,
    buf: &mut [u8],
) -> herr_t {
    let mut size = buf.len();
    // SAFETY: the caller's promise; libhdf5 writes at most `size` bytes.
    unsafe {
        hdf5_metno_sys::h5d::H5Dread_chunk2(
            dset,
            H5P_DEFAULT,
            offset.as_ptr(),
            mask,
            buf.as_mut_ptr().cast(),
            &mut size,
        )
    }
}

/// True when `name` (a path from `loc`) is a hard link, not a soft or
/// external one (which GDAL's HDF5 driver does not follow):
/// `H5Lget_info` with `H5L_info_t` before 1.12.
#[cfg(not(hdf5_1_14))]
pub(crate) fn is_hard_link(loc: hid_t, name: &std::ffi::CStr) -> bool {
    use hdf5_metno_sys::h5l::{H5L_info1_t, H5L_type_t, H5Lget_info1};
    let mut info = H5L_info1_t::default();
    // SAFETY: valid id, NUL-terminated path, room for the info.
    let status = unsafe { H5Lget_info1(loc, name.as_ptr(), &mut info, H5P_DEFAULT) };
    status >= 0 && info.type_ == H5L_type_t::H5L_TYPE_HARD
}

/// True when `name` (a path from `loc`) is a hard link, not a soft or
/// external one (which GDAL's HDF5 driver does not follow):
/// `H5Lget_info2` with `H5L_info2_t` from 1.12.
#[cfg(hdf5_1_14)]
pub(crate) fn is_hard_link(loc: hid_t, name: &std::ffi::CStr) -> bool {
    use hdf5_metno_sys::h5l::{H5L_info2_t, H5L_type_t, H5Lget_info2};
    let mut info = H5L_info2_t::default();
    // SAFETY: valid id, NUL-terminated path, room for the info.
    let status = unsafe { H5Lget_info2(loc, name.as_ptr(), &mut info, H5P_DEFAULT) };
    status >= 0 && info.type_ == H5L_type_t::H5L_TYPE_HARD
}
