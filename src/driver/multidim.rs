//! The C ABI of the multidimensional view (`CrCube` in `cpp_shim/chunkref.h`):
//! a store opened whole, described once as JSON (groups, dimensions,
//! arrays, attributes), and hyperslab reads of its arrays.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_void, CString};

use serde_json::{json, Value};

use crate::base::error::Error;
use crate::driver::ffi::{c_str, c_string, data_kind, guard, option_list, CrStatus};
use crate::index::refs::RawRef;
use crate::io::config::Settings;
use crate::read::cube::{Cube, Source};
use crate::read::hyperslab::{self, Slab, Target};
use crate::read::location_info;
use crate::read::raster::Dataset;

/// The opaque handle of a store opened for the multidimensional view.
pub struct CrCube {
    dataset: Dataset,
    cube: Cube,
    /// The description [`chunkref_cube_describe`] hands out.
    description: CString,
}

/// Mirrors `CrHyperslab` of chunkref.h.
#[repr(C)]
pub struct CrHyperslab {
    array: u32,
    rank: usize,
    start: *const u64,
    count: *const u64,
    step: *const i64,
    stride: *const isize,
    buffer: *mut c_void,
}

/// Mirrors `CrBlockInfo` of chunkref.h.
#[repr(C)]
pub struct CrBlockInfo {
    kind: i32,
    file: *const c_char,
    offset: u64,
    size: u64,
    data: *const u8,
    ranges: *const u64,
    range_count: usize,
    codecs: *const c_char,
}

/// The JSON description of `cube` (see chunkref.h).
fn describe(cube: &Cube) -> Value {
    let groups: Vec<Value> = cube
        .groups
        .iter()
        .map(|g| json!({"path": g.path, "attributes": g.attributes}))
        .collect();
    let dims: Vec<Value> = cube
        .dims
        .iter()
        .map(|d| {
            let (kind, direction) = d.kind.gdal_names();
            json!({
                "scope": d.scope, "listed": d.listed, "name": d.name, "size": d.size,
                "type": kind, "direction": direction, "indexing": d.indexing,
            })
        })
        .collect();
    let arrays: Vec<Value> = cube
        .arrays
        .iter()
        .map(|a| {
            json!({
                "scope": a.scope, "listed": a.listed, "name": a.name, "dims": a.dims,
                "block": a.block, "kind": data_kind(a.dtype.kind), "size": a.dtype.size,
                "nodata": a.nodata, "scale": a.scale, "offset": a.offset, "unit": a.unit,
                "crs": a.crs.as_ref().map(|c| &c.0), "xy": a.crs.as_ref().map(|c| c.1),
                "attributes": a.attributes,
            })
        })
        .collect();
    json!({"groups": groups, "dims": dims, "arrays": arrays, "warnings": cube.warnings})
}

/// See chunkref.h.
///
/// # Safety
/// Arguments as documented in chunkref.h.
#[no_mangle]
pub unsafe extern "C" fn chunkref_cube_open(
    name: *const c_char,
    options: *const *const c_char,
    status: *mut CrStatus,
) -> *mut CrCube {
    guard(status, std::ptr::null_mut(), || {
        let name = unsafe { c_str(name, "dataset name") }?;
        let opts = unsafe { option_list(options) }?;
        let settings = Settings::from_gdal()?;
        let dataset = Dataset::open_store(name, &opts, &settings)?;
        let mut cube = Cube::of(&dataset);
        cube.warnings.splice(0..0, dataset.warnings.iter().cloned());
        let description = c_string(&describe(&cube).to_string());
        Ok(Box::into_raw(Box::new(CrCube {
            dataset,
            cube,
            description,
        })))
    })
}

/// See chunkref.h.
///
/// # Safety
/// `cube` is NULL or a cube from `chunkref_cube_open` not yet closed.
#[no_mangle]
pub unsafe extern "C" fn chunkref_cube_close(cube: *mut CrCube) {
    if !cube.is_null() {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            drop(unsafe { Box::from_raw(cube) })
        }));
    }
}

/// See chunkref.h.
///
/// # Safety
/// `cube` is NULL or a live cube.
#[no_mangle]
pub unsafe extern "C" fn chunkref_cube_describe(cube: *const CrCube) -> *const c_char {
    match unsafe { cube.as_ref() } {
        Some(c) => c.description.as_ptr(),
        None => std::ptr::null(),
    }
}

/// See chunkref.h.
///
/// # Safety
/// `cube` is a live cube; `request` as documented in chunkref.h.
#[no_mangle]
pub unsafe extern "C" fn chunkref_cube_read(
    cube: *const CrCube,
    request: *const CrHyperslab,
    status: *mut CrStatus,
) -> i32 {
    guard(status, -1, || {
        let (Some(cube), Some(req)) = (unsafe { cube.as_ref() }, unsafe { request.as_ref() })
        else {
            return Err(Error::Usage {
                what: "NULL cube or read request".into(),
            });
        };
        let array = cube
            .cube
            .arrays
            .get(req.array as usize)
            .ok_or_else(|| Error::Usage {
                what: format!("array {} does not exist", req.array),
            })?;
        let rank = req.rank;
        if rank != array.dims.len() || req.buffer.is_null() {
            return Err(Error::Usage {
                what: format!(
                    "a read of array '{}' needs {} dimensions and a buffer",
                    array.name,
                    array.dims.len()
                ),
            });
        }
        let part = |p: *const u64| -> &[u64] {
            match rank {
                0 => &[],
                // SAFETY: the shim passes `rank` elements.
                _ => unsafe { std::slice::from_raw_parts(p, rank) },
            }
        };
        let (start, count) = (part(req.start), part(req.count));
        let (step, stride): (&[i64], &[isize]) = match rank {
            0 => (&[], &[]),
            // SAFETY: the shim passes `rank` elements.
            _ => unsafe {
                (
                    std::slice::from_raw_parts(req.step, rank),
                    std::slice::from_raw_parts(req.stride, rank),
                )
            },
        };
        let slab = Slab { start, count, step };
        let shape: Vec<u64> = array.dims.iter().map(|&d| cube.cube.dims[d].size).collect();
        slab.check(&shape, &array.name)?;
        // The bytes the strides reach, before and after the first element.
        let size = array.dtype.size as isize;
        let (mut low, mut high) = (0isize, size);
        for (&c, &s) in count.iter().zip(stride) {
            let reach = (c as isize - 1) * s;
            low += reach.min(0);
            high += reach.max(0);
        }
        // SAFETY: the shim's buffer holds every element the strides reach.
        let out = unsafe {
            std::slice::from_raw_parts_mut(
                req.buffer.cast::<u8>().offset(low),
                (high - low) as usize,
            )
        };
        let mut target = Target {
            out,
            origin: (-low) as usize,
            strides: stride,
        };
        match &array.source {
            Source::Stored(a) => hyperslab::read(&cube.dataset, *a, &slab, &mut target)?,
            Source::Values(v) => hyperslab::read_values(v, &array.name, &slab, &mut target)?,
        }
        Ok(0)
    })
}

/// See chunkref.h.
///
/// # Safety
/// `cube` is a live cube, `block` holds `rank` indices, `set` is callable
/// with `ctx`.
#[no_mangle]
pub unsafe extern "C" fn chunkref_cube_block_info(
    cube: *const CrCube,
    array: u32,
    block: *const u64,
    rank: usize,
    set: Option<unsafe extern "C" fn(*mut c_void, *const CrBlockInfo)>,
    ctx: *mut c_void,
    status: *mut CrStatus,
) -> i32 {
    guard(status, -1, || {
        let (Some(cube), Some(set)) = (unsafe { cube.as_ref() }, set) else {
            return Err(Error::Usage {
                what: "NULL cube or callback".into(),
            });
        };
        let Some(shown) = cube.cube.arrays.get(array as usize) else {
            return Err(Error::Usage {
                what: format!("array {array} does not exist"),
            });
        };
        let Source::Stored(a) = shown.source else {
            return Err(Error::Usage {
                what: format!(
                    "array '{}' is computed from the index's metadata: it has no stored chunks",
                    shown.name
                ),
            });
        };
        let block = match rank {
            0 => &[][..],
            // SAFETY: the shim passes `rank` indices.
            _ => unsafe { std::slice::from_raw_parts(block, rank) },
        };
        let found = location_info::chunk_at(&cube.dataset, a, block)?;
        let meta = &cube.dataset.index.arrays[a].meta;
        let codecs = c_string(&meta.codecs.names().join(","));
        let name = |f: u32| c_string(&cube.dataset.file_name(f).unwrap_or_default());
        let mut info = CrBlockInfo {
            kind: 0,
            file: std::ptr::null(),
            offset: 0,
            size: 0,
            data: std::ptr::null(),
            ranges: std::ptr::null(),
            range_count: 0,
            codecs: codecs.as_ptr(),
        };
        let file;
        let flat: Vec<u64>;
        match &found {
            None => {}
            Some(RawRef::Inline(bytes)) => {
                (info.kind, info.data, info.size) = (2, bytes.as_ptr(), bytes.len() as u64);
            }
            Some(RawRef::Whole(f)) => {
                file = name(*f);
                (info.kind, info.file) = (1, file.as_ptr());
            }
            Some(RawRef::Range(f, offset, length)) => {
                file = name(*f);
                (info.kind, info.file, info.offset, info.size) =
                    (1, file.as_ptr(), *offset, *length);
            }
            Some(RawRef::Multi(f, ranges)) => {
                file = name(*f);
                flat = ranges.iter().flat_map(|&(o, l)| [o, l]).collect();
                info.kind = 3;
                info.file = file.as_ptr();
                info.offset = ranges.first().map_or(0, |r| r.0);
                info.size = ranges.iter().map(|r| r.1).sum();
                (info.ranges, info.range_count) = (flat.as_ptr(), ranges.len());
            }
        }
        // SAFETY: `info` and what it points to live until `set` returns.
        unsafe { set(ctx, &info) };
        Ok(0)
    })
}
