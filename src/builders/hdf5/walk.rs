//! The groups and datasets of an HDF5 file, by path, in the order GDAL's
//! drivers meet them. libhdf5's object walk (`H5Ovisit`) shows each object
//! once, however many hard links lead to it; GDAL's HDF5 driver walks the
//! links and lists a dataset under every path that reaches it (a group
//! linked from two places shows its datasets twice). When some object has
//! more than one link, the links are walked the same way here.

use std::ffi::{c_char, c_void, CStr};

use hdf5_metno_sys::h5::{haddr_t, H5_index_t, H5_iter_order_t};
use hdf5_metno_sys::h5g::{H5G_info_t, H5Gget_info_by_name};
use hdf5_metno_sys::h5i::hid_t;
use hdf5_metno_sys::h5l::H5Lget_name_by_idx;
use hdf5_metno_sys::h5o::{
    H5O_info1_t, H5O_type_t, H5Oget_info_by_name2, H5Ovisit2, H5O_INFO_BASIC,
};
use hdf5_metno_sys::h5p::H5P_DEFAULT;

use super::compat::is_hard_link;
use super::handle::{c_name, check};
use crate::base::error::Result;

/// Most paths listed: a file whose links make more (a lattice of groups
/// linked from many places) is refused rather than walked for ever.
const MAX_PATHS: usize = 1 << 20;

/// One object met by the walk.
struct Met {
    /// Path relative to the root (`.` for the root).
    name: String,
    kind: H5O_type_t,
    /// Hard links to it.
    links: u32,
}

/// Every group and dataset of `file` by path relative to the root (`.`
/// for the root), each group's links in `by` order, a group's members
/// right after it: each object once, or (`every_path`) once per path of
/// hard links that reaches it, as GDAL's HDF5 driver lists them.
pub(super) fn objects(
    file: hid_t,
    by: H5_index_t,
    every_path: bool,
) -> Result<Vec<(String, H5O_type_t)>> {
    let once = visit(file, by)?;
    if !every_path || once.iter().all(|m| m.links <= 1) {
        return Ok(once.into_iter().map(|m| (m.name, m.kind)).collect());
    }
    let mut found = Vec::new();
    let root = info(file, ".")?;
    found.push((".".to_string(), root.type_));
    links(file, by, ".", &mut vec![root.addr], &mut found)?;
    Ok(found)
}

/// `H5Ovisit`: each object once.
fn visit(file: hid_t, by: H5_index_t) -> Result<Vec<Met>> {
    extern "C" fn collect(
        _: hid_t,
        name: *const c_char,
        info: *const H5O_info1_t,
        data: *mut c_void,
    ) -> i32 {
        // SAFETY: libhdf5 passes a NUL-terminated name, the object's info
        // and our Vec.
        unsafe {
            let found = &mut *data.cast::<Vec<Met>>();
            found.push(Met {
                name: CStr::from_ptr(name).to_string_lossy().into_owned(),
                kind: (*info).type_,
                links: (*info).rc,
            });
        }
        0
    }
    let mut found: Vec<Met> = Vec::new();
    // SAFETY: `collect` matches H5O_iterate1_t and only pushes to `found`.
    check(
        unsafe {
            H5Ovisit2(
                file,
                by,
                H5_iter_order_t::H5_ITER_INC,
                Some(collect),
                (&mut found as *mut Vec<Met>).cast(),
                H5O_INFO_BASIC,
            )
        },
        || "cannot walk the groups and datasets".into(),
    )?;
    Ok(found)
}

/// The basic information of the object at `path`.
fn info(file: hid_t, path: &str) -> Result<H5O_info1_t> {
    let c = c_name(path)?;
    let mut info = H5O_info1_t::default();
    // SAFETY: valid file id, NUL-terminated path, room for the info.
    check(
        unsafe { H5Oget_info_by_name2(file, c.as_ptr(), &mut info, H5O_INFO_BASIC, H5P_DEFAULT) },
        || format!("cannot read what '{path}' is"),
    )?;
    Ok(info)
}

/// The path of `name` inside the group at `group` (`.` for the root).
fn join(group: &str, name: &str) -> String {
    match group {
        "." => name.to_string(),
        _ => format!("{group}/{name}"),
    }
}

/// Appends what the hard links of the group at `group` reach, in `by`
/// order, recursing into groups that are not among `ancestors` (the
/// addresses of the groups above, which would loop).
fn links(
    file: hid_t,
    by: H5_index_t,
    group: &str,
    ancestors: &mut Vec<haddr_t>,
    found: &mut Vec<(String, H5O_type_t)>,
) -> Result<()> {
    let c_group = c_name(group)?;
    let mut ginfo = H5G_info_t::default();
    // SAFETY: valid file id, NUL-terminated path, room for the info.
    check(
        unsafe { H5Gget_info_by_name(file, c_group.as_ptr(), &mut ginfo, H5P_DEFAULT) },
        || format!("cannot list group '{group}'"),
    )?;
    for n in 0..ginfo.nlinks {
        let name = link_name(file, &c_group, by, n, group)?;
        let path = join(group, &name);
        if !is_hard_link(file, &c_name(&path)?) {
            continue;
        }
        let info = info(file, &path)?;
        if found.len() >= MAX_PATHS {
            return Err(crate::base::error::Error::Limits {
                what: format!("more than {MAX_PATHS} paths of hard links lead to its objects"),
            });
        }
        found.push((path.clone(), info.type_));
        if info.type_ == H5O_type_t::H5O_TYPE_GROUP && !ancestors.contains(&info.addr) {
            ancestors.push(info.addr);
            links(file, by, &path, ancestors, found)?;
            ancestors.pop();
        }
    }
    Ok(())
}

/// The name of link `n` (in `by` order) of the group at `group`.
fn link_name(file: hid_t, c_group: &CStr, by: H5_index_t, n: u64, group: &str) -> Result<String> {
    let what = || format!("cannot read the name of link {n} of group '{group}'");
    // SAFETY: valid ids and NUL-terminated group path; a NULL buffer asks
    // for the length, then a buffer of that length plus the NUL is filled.
    unsafe {
        let len = check(
            H5Lget_name_by_idx(
                file,
                c_group.as_ptr(),
                by,
                H5_iter_order_t::H5_ITER_INC,
                n,
                std::ptr::null_mut(),
                0,
                H5P_DEFAULT,
            ) as i64,
            what,
        )?;
        let mut buf = vec![0u8; len as usize + 1];
        check(
            H5Lget_name_by_idx(
                file,
                c_group.as_ptr(),
                by,
                H5_iter_order_t::H5_ITER_INC,
                n,
                buf.as_mut_ptr().cast(),
                buf.len(),
                H5P_DEFAULT,
            ) as i64,
            what,
        )?;
        buf.truncate(len as usize);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }
}
