//! HDF5 attributes as JSON values (numbers, strings and arrays of them),
//! and the dimension scales a dataset's `DIMENSION_LIST` attaches.

use std::ffi::{c_char, c_void, CStr};

use super::compat::{vlen_reclaim, OBJECT_REFERENCE};
use hdf5_metno_sys::h5::{H5_index_t, H5_iter_order_t};
use hdf5_metno_sys::h5a::{
    H5A_info_t, H5Aexists, H5Aget_space, H5Aget_type, H5Aiterate2, H5Aopen, H5Aread,
};
use hdf5_metno_sys::h5i::{hid_t, H5Iget_name};
use hdf5_metno_sys::h5p::H5P_DEFAULT;
use hdf5_metno_sys::h5r::{hobj_ref_t, H5Rdereference2};
use hdf5_metno_sys::h5s::{H5S_class_t, H5Sget_simple_extent_npoints, H5Sget_simple_extent_type};
use hdf5_metno_sys::h5t::{
    hvl_t, H5T_class_t, H5T_sign_t, H5Tcopy, H5Tget_class, H5Tget_cset, H5Tget_sign, H5Tget_size,
    H5Tis_variable_str, H5Tset_cset, H5Tset_size, H5Tvlen_create, H5T_C_S1, H5T_NATIVE_DOUBLE,
    H5T_NATIVE_LLONG, H5T_NATIVE_ULLONG, H5T_STD_REF_OBJ, H5T_VARIABLE,
};
use serde_json::{json, Value};

use super::handle::{c_name, check, failure, Handle};
use crate::base::error::{Error, Result};

/// The most bytes of one attribute's values read (netCDF attributes are
/// at most a few kB; dense HDF5 attribute storage allows any size).
const MAX_ATTRIBUTE_BYTES: usize = 64 << 20;

/// The names of the attributes of object `obj`, in creation order when
/// the file tracks it, else by name.
pub(crate) fn names(obj: hid_t) -> Result<Vec<String>> {
    unsafe extern "C" fn collect(
        _: hid_t,
        name: *const c_char,
        _: *const H5A_info_t,
        data: *mut c_void,
    ) -> i32 {
        // SAFETY: libhdf5 passes a NUL-terminated name and our Vec.
        let names = unsafe { &mut *data.cast::<Vec<String>>() };
        names.push(
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned(),
        );
        0
    }
    for index in [H5_index_t::H5_INDEX_CRT_ORDER, H5_index_t::H5_INDEX_NAME] {
        let mut names: Vec<String> = Vec::new();
        // SAFETY: `collect` matches H5A_operator2_t and only pushes to `names`.
        let status = unsafe {
            H5Aiterate2(
                obj,
                index,
                H5_iter_order_t::H5_ITER_INC,
                std::ptr::null_mut(),
                Some(collect),
                (&mut names as *mut Vec<String>).cast(),
            )
        };
        if status >= 0 {
            return Ok(names);
        }
    }
    Err(failure("cannot list attributes".into()))
}

/// Whether object `obj` has attribute `name`.
pub(crate) fn exists(obj: hid_t, name: &str) -> Result<bool> {
    let c = c_name(name)?;
    // SAFETY: valid object id and NUL-terminated name.
    let found = check(unsafe { H5Aexists(obj, c.as_ptr()) }, || {
        format!("cannot look up attribute '{name}'")
    })?;
    Ok(found > 0)
}

/// An open attribute with its datatype and dataspace.
struct Attribute {
    attr: Handle,
    datatype: Handle,
    space: Handle,
    name: String,
}

impl Attribute {
    fn open(obj: hid_t, name: &str) -> Result<Attribute> {
        let c = c_name(name)?;
        let what = || format!("cannot open attribute '{name}'");
        // SAFETY: valid ids; each returned id is owned by a Handle.
        let attr = Handle::new(unsafe { H5Aopen(obj, c.as_ptr(), H5P_DEFAULT) }, what)?;
        let datatype = Handle::new(unsafe { H5Aget_type(attr.id()) }, what)?;
        let space = Handle::new(unsafe { H5Aget_space(attr.id()) }, what)?;
        Ok(Attribute {
            attr,
            datatype,
            space,
            name: name.to_string(),
        })
    }

    /// The number of elements; `None` for a null dataspace (no value).
    fn count(&self) -> Result<Option<usize>> {
        // SAFETY: valid dataspace and datatype ids.
        let (class, points, size) = unsafe {
            (
                H5Sget_simple_extent_type(self.space.id()),
                H5Sget_simple_extent_npoints(self.space.id()),
                H5Tget_size(self.datatype.id()),
            )
        };
        if class == H5S_class_t::H5S_NULL {
            return Ok(None);
        }
        let n = usize::try_from(points).unwrap_or(0);
        if n.saturating_mul(size.max(8)) > MAX_ATTRIBUTE_BYTES {
            return Err(Error::Limits {
                what: format!(
                    "attribute '{}' holds {n} values of {size} bytes (at most {MAX_ATTRIBUTE_BYTES} \
                     bytes are read)",
                    self.name
                ),
            });
        }
        Ok(Some(n))
    }

    /// Reads every element as `memory_type` into `buf`.
    fn read_into<T>(&self, memory_type: hid_t, buf: &mut [T]) -> Result<()> {
        // SAFETY: `buf` holds count() elements of the memory type's size.
        check(
            unsafe { H5Aread(self.attr.id(), memory_type, buf.as_mut_ptr().cast()) },
            || format!("cannot read attribute '{}'", self.name),
        )?;
        Ok(())
    }

    /// The numbers, converted by libhdf5 to `T` (i64, u64 or f64).
    fn numbers<T: Default + Clone>(&self, memory_type: hid_t, n: usize) -> Result<Vec<T>> {
        let mut values = vec![T::default(); n];
        self.read_into(memory_type, &mut values)?;
        Ok(values)
    }

    /// The strings (fixed or variable length).
    fn strings(&self, n: usize) -> Result<Vec<String>> {
        // SAFETY: valid datatype id.
        if unsafe { H5Tis_variable_str(self.datatype.id()) } > 0 {
            return self.variable_strings(n);
        }
        // SAFETY: as above.
        let size = unsafe { H5Tget_size(self.datatype.id()) };
        let mut raw = vec![0u8; n * size];
        self.read_into(self.datatype.id(), &mut raw)?;
        Ok(raw
            .chunks(size.max(1))
            .map(|s| {
                let end = s.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                String::from_utf8_lossy(&s[..end]).into_owned()
            })
            .collect())
    }

    fn variable_strings(&self, n: usize) -> Result<Vec<String>> {
        let what = || format!("cannot read attribute '{}'", self.name);
        // SAFETY: a copy of the C string type, owned by a Handle.
        let memory = Handle::new(unsafe { H5Tcopy(*H5T_C_S1) }, what)?;
        // SAFETY: valid datatype ids.
        unsafe {
            check(H5Tset_size(memory.id(), H5T_VARIABLE), what)?;
            check(
                H5Tset_cset(memory.id(), H5Tget_cset(self.datatype.id()) as _),
                what,
            )?;
        }
        let mut pointers: Vec<*mut c_char> = vec![std::ptr::null_mut(); n];
        self.read_into(memory.id(), &mut pointers)?;
        let strings = pointers
            .iter()
            .map(|&p| {
                if p.is_null() {
                    String::new()
                } else {
                    // SAFETY: libhdf5 wrote NUL-terminated strings.
                    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
                }
            })
            .collect();
        // SAFETY: frees what H5Aread allocated for `pointers`.
        unsafe {
            vlen_reclaim(
                memory.id(),
                self.space.id(),
                H5P_DEFAULT,
                pointers.as_mut_ptr().cast(),
            )
        };
        Ok(strings)
    }
}

/// The value of attribute `name` of object `obj` as kerchunk writes it:
/// one element as a scalar, several as an array, a null dataspace as
/// `""`; `None` for datatypes other than numbers and strings.
pub(crate) fn value(obj: hid_t, name: &str) -> Result<Option<Value>> {
    let attribute = Attribute::open(obj, name)?;
    let Some(n) = attribute.count()? else {
        return Ok(Some(json!("")));
    };
    let t = attribute.datatype.id();
    // SAFETY: valid datatype id; the native types exist once the library is open.
    let (class, size, sign) = unsafe { (H5Tget_class(t), H5Tget_size(t), H5Tget_sign(t)) };
    let values: Vec<Value> = match class {
        H5T_class_t::H5T_INTEGER if sign == H5T_sign_t::H5T_SGN_NONE && size == 8 => attribute
            .numbers::<u64>(*H5T_NATIVE_ULLONG, n)?
            .into_iter()
            .map(Value::from)
            .collect(),
        H5T_class_t::H5T_INTEGER => attribute
            .numbers::<i64>(*H5T_NATIVE_LLONG, n)?
            .into_iter()
            .map(Value::from)
            .collect(),
        H5T_class_t::H5T_FLOAT => attribute
            .numbers::<f64>(*H5T_NATIVE_DOUBLE, n)?
            .into_iter()
            .map(|v| json!(v))
            .collect(),
        H5T_class_t::H5T_STRING => {
            let fixed = unsafe { H5Tis_variable_str(t) } <= 0;
            let strings = attribute.strings(n)?;
            // kerchunk writes an empty fixed-length scalar string as " ".
            if fixed && n == 1 && strings[0].is_empty() {
                vec![json!(" ")]
            } else {
                strings.into_iter().map(Value::from).collect()
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(match <[Value; 1]>::try_from(values) {
        Ok([one]) => one,
        Err(many) => Value::Array(many),
    }))
}

/// The first element of numeric attribute `name` converted by libhdf5 to
/// datatype `to` (a dataset's), as raw bytes; `None` when it has none.
pub(crate) fn first_as(obj: hid_t, name: &str, to: hid_t) -> Result<Option<Vec<u8>>> {
    let attribute = Attribute::open(obj, name)?;
    let n = attribute.count()?.unwrap_or(0);
    let t = attribute.datatype.id();
    // SAFETY: valid datatype ids.
    let (class, size) = unsafe { (H5Tget_class(t), H5Tget_size(to)) };
    if n == 0 || !matches!(class, H5T_class_t::H5T_INTEGER | H5T_class_t::H5T_FLOAT) {
        return Ok(None);
    }
    let mut raw = vec![0u8; n * size];
    attribute.read_into(to, &mut raw)?;
    raw.truncate(size);
    Ok(Some(raw))
}

/// Per dimension of dataset `obj`, the paths of the dimension scales its
/// `DIMENSION_LIST` attribute attaches (empty without the attribute).
pub(crate) fn dimension_scales(obj: hid_t, rank: usize) -> Result<Vec<Vec<String>>> {
    if rank == 0 || !exists(obj, "DIMENSION_LIST")? {
        return Ok(vec![Vec::new(); rank]);
    }
    let attribute = Attribute::open(obj, "DIMENSION_LIST")?;
    let what = || "cannot read attribute 'DIMENSION_LIST'".to_string();
    // SAFETY: a new vlen type, owned by a Handle.
    let memory = Handle::new(unsafe { H5Tvlen_create(*H5T_STD_REF_OBJ) }, what)?;
    let n = attribute.count()?.unwrap_or(0);
    let mut lists = vec![
        hvl_t {
            len: 0,
            p: std::ptr::null_mut()
        };
        n
    ];
    attribute.read_into(memory.id(), &mut lists)?;
    let names = lists
        .iter()
        .map(|list| {
            let refs: &[hobj_ref_t] = if list.p.is_null() {
                &[]
            } else {
                // SAFETY: libhdf5 allocated `len` object references at `p`.
                unsafe { std::slice::from_raw_parts(list.p.cast(), list.len) }
            };
            refs.iter().map(|r| referenced_name(obj, r)).collect()
        })
        .collect::<Result<Vec<Vec<String>>>>();
    // SAFETY: frees what H5Aread allocated for `lists`.
    unsafe {
        vlen_reclaim(
            memory.id(),
            attribute.space.id(),
            H5P_DEFAULT,
            lists.as_mut_ptr().cast(),
        )
    };
    let mut names = names?;
    names.resize(rank, Vec::new());
    Ok(names)
}

/// The path of the object `reference` (from `obj`'s file) points at.
fn referenced_name(obj: hid_t, reference: &hobj_ref_t) -> Result<String> {
    let what = || "cannot follow a DIMENSION_LIST reference".to_string();
    // SAFETY: a valid object reference; the opened object is owned by a Handle.
    let target = Handle::new(
        unsafe {
            H5Rdereference2(
                obj,
                H5P_DEFAULT,
                OBJECT_REFERENCE,
                (reference as *const hobj_ref_t).cast(),
            )
        },
        what,
    )?;
    object_name(target.id())
}

/// The path of open object `obj`, e.g. `/grp/lat`.
pub(crate) fn object_name(obj: hid_t) -> Result<String> {
    let what = || "cannot name an object".to_string();
    // SAFETY: a null buffer asks for the length only.
    let len = check(
        unsafe { H5Iget_name(obj, std::ptr::null_mut(), 0) } as i64,
        what,
    )? as usize;
    let mut buf = vec![0u8; len + 1];
    // SAFETY: `buf` holds len + 1 bytes.
    check(
        unsafe { H5Iget_name(obj, buf.as_mut_ptr().cast(), buf.len()) } as i64,
        what,
    )?;
    buf.truncate(len);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}
