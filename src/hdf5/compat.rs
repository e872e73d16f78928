//! What differs between the libhdf5 versions the builder builds against
//! (1.10, and 1.14 or 2.x: `cfg(hdf5_1_14)`, set by build.rs from the
//! headers): the names the 1.12 API changed. Its file driver structures
//! differ too: vfd.rs declares both.

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
