//! The C ABI used by the C++ shim (declared in `cpp_shim/chunkref.h`).
//!
//! Every export catches panics and reports failures through `CrStatus`, so
//! nothing unwinds into GDAL.

#![allow(unsafe_code)]

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::base::dtype::ScalarKind;
use crate::base::error::{panic_message, CplCode, Error, Result};
use crate::conventions::attributes::gcps;
use crate::io::config::Settings;
use crate::read::georef::band;
use crate::read::index_cache::FileCache;
use crate::read::raster::{Dataset, DatasetName};
use crate::read::sampled::Sampling;
use crate::read::window::{Spacing, Window};

/// Mirrors `CrStatus` of chunkref.h.
#[repr(C)]
pub struct CrStatus {
    code: i32,
    message: [c_char; 2048],
}

/// Mirrors `CrLevelInfo` of chunkref.h.
#[repr(C)]
pub struct CrLevelInfo {
    width: u64,
    height: u64,
    block_width: u64,
    block_height: u64,
    band_count: u64,
    data_kind: u32,
    data_size: u32,
    has_nodata: i32,
    nodata: f64,
    has_mask: i32,
    mask_block_width: u64,
    mask_block_height: u64,
}

/// Mirrors `CrGeoref` of chunkref.h.
#[repr(C)]
pub struct CrGeoref {
    has_transform: i32,
    transform: [f64; 6],
    crs: *const c_char,
}

/// Mirrors `CrBandInfo` of chunkref.h.
#[repr(C)]
pub struct CrBandInfo {
    has_scale: i32,
    scale: f64,
    has_offset: i32,
    offset: f64,
    color: u32,
    unit: *const c_char,
    description: *const c_char,
    has_nodata: i32,
    nodata: f64,
    has_nodata_int64: i32,
    nodata_int64: i64,
    has_nodata_uint64: i32,
    nodata_uint64: u64,
}

/// Mirrors `CrBlocksRequest` of chunkref.h.
#[repr(C)]
pub struct CrBlocksRequest {
    level: u32,
    count: usize,
    block_x: *const u64,
    block_y: *const u64,
    bands: *const u64,
    buffers: *const *mut c_void,
    buffer_bytes: usize,
}

/// Mirrors `CrOutput` of chunkref.h.
#[repr(C)]
pub struct CrOutput {
    band_count: usize,
    bands: *const u64,
    buffer: *mut c_void,
    buffer_bytes: usize,
    pixel_space: usize,
    line_space: usize,
    band_space: usize,
}

impl CrOutput {
    /// The bands, the buffer and its spacing.
    ///
    /// # Safety
    /// `bands` holds `band_count` elements and `buffer` `buffer_bytes`
    /// writable bytes, for as long as the returned slices are used.
    unsafe fn parts<'a>(&self, what: &str) -> Result<(&'a [u64], &'a mut [u8], Spacing)> {
        let bands =
            unsafe { band_list(self.bands, self.band_count, !self.buffer.is_null(), what) }?;
        // SAFETY: non-NULL (checked by band_list), `buffer_bytes` writable.
        let out =
            unsafe { std::slice::from_raw_parts_mut(self.buffer.cast::<u8>(), self.buffer_bytes) };
        let spacing = Spacing {
            pixel: self.pixel_space,
            line: self.line_space,
            band: self.band_space,
        };
        Ok((bands, out, spacing))
    }
}

/// Mirrors `CrWindowRequest` of chunkref.h.
#[repr(C)]
pub struct CrWindowRequest {
    level: u32,
    x: u64,
    y: u64,
    width: u64,
    height: u64,
    out: CrOutput,
}

/// Mirrors `CrReadAhead` of chunkref.h.
#[repr(C)]
pub struct CrReadAhead {
    level: u32,
    x: u64,
    y: u64,
    width: u64,
    height: u64,
    first: u64,
    count: u64,
    except: u64,
}

/// Mirrors `CrSampledRequest` of chunkref.h.
#[repr(C)]
pub struct CrSampledRequest {
    level: u32,
    x: f64,
    y: f64,
    width: f64,
    height: f64,
    buf_width: u64,
    buf_height: u64,
    out: CrOutput,
}

/// A NULL-terminated list of C strings that owns its strings.
struct CStringList {
    _owned: Vec<CString>,
    ptrs: Vec<*const c_char>,
}

// The pointers point into `_owned`, which moves with the list and is never mutated.
unsafe impl Send for CStringList {}
// SAFETY: read-only after construction.
unsafe impl Sync for CStringList {}

impl CStringList {
    fn new(items: Vec<String>) -> CStringList {
        let owned: Vec<CString> = items.into_iter().map(|s| c_string(&s)).collect();
        let mut ptrs: Vec<*const c_char> = owned.iter().map(|c| c.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        CStringList {
            _owned: owned,
            ptrs,
        }
    }
}

/// The opaque handle given to the shim: an opened dataset, shared by the
/// opens of an unchanged local index with the same name, options and
/// settings (see [`OPENED`]).
pub struct CrHandle(Arc<Opened>);

impl Drop for CrHandle {
    /// The dataset's guess (see [`Dataset::read_ahead`]) ends with it.
    fn drop(&mut self) {
        self.0
            .dataset
            .stop_read_ahead(self as *const CrHandle as usize);
    }
}

impl std::ops::Deref for CrHandle {
    type Target = Opened;

    fn deref(&self) -> &Opened {
        &self.0
    }
}

/// A dataset and what the shim asks of it, as C values made once.
pub struct Opened {
    dataset: Dataset,
    warnings: CStringList,
    metadata: Mutex<HashMap<(String, u32), Box<CStringList>>>,
    /// CRS definition of each level.
    crs: Vec<Option<CString>>,
    /// Ground control points (pixel, line, x, y, z) of level 0 and their
    /// CRS, if given.
    gcps: Option<(Vec<[f64; 5]>, Option<CString>)>,
    /// Each band asked for by (level, band): its description and its
    /// (unit, description) as C strings.
    bands: Mutex<HashMap<(u32, u64), Box<KeptBand>>>,
    /// The index file and the target array or group (empty) the name opened.
    names: CStringList,
    /// GDAL names of the files the index refers to, listed on first use.
    files: OnceLock<CStringList>,
}

/// What shapes an opened dataset besides its index file: the dataset name,
/// the open options, the working directory a relative name is read from,
/// the settings and GDAL's block cache size.
type OpenKey = (
    String,
    Vec<(String, String)>,
    PathBuf,
    Settings,
    usize,
    (bool, bool),
);

/// Datasets opened from local index files, for the next open of the same
/// one: a tile server opening the dataset per request reads the index,
/// chooses its raster and georeferences it once.
static OPENED: FileCache<OpenKey, Opened> = FileCache::new();

impl Opened {
    /// Opens `name` with the open options `opts`, reading with `settings`.
    fn open(name: &str, opts: &[(String, String)], settings: &Settings) -> Result<Opened> {
        let dataset = Dataset::open(name, opts, settings)?;
        let parsed = DatasetName::parse(name)?;
        let names = CStringList::new(vec![parsed.index, parsed.target.unwrap_or_default()]);
        let warnings = CStringList::new(dataset.warnings.clone());
        let crs = dataset
            .georef
            .iter()
            .map(|g| g.crs.as_deref().map(c_string))
            .collect();
        let gcps = dataset
            .level_meta(0)
            .ok()
            .and_then(|meta| gcps(&meta.attributes))
            .map(|(points, crs)| (points, crs.as_deref().map(c_string)));
        Ok(Opened {
            dataset,
            warnings,
            metadata: Mutex::new(HashMap::new()),
            crs,
            gcps,
            bands: Mutex::new(HashMap::new()),
            names,
            files: OnceLock::new(),
        })
    }

    /// The opened `name`: a kept one when its index is a local file that
    /// has not changed (unless `CHUNKREF_INDEX_CACHE=NO`), else a new one.
    fn shared(name: &str, opts: Vec<(String, String)>) -> Result<Arc<Opened>> {
        let settings = Settings::from_gdal()?;
        let index = DatasetName::parse(name)?.index;
        if !settings.index_cache {
            return Opened::open(name, &opts, &settings).map(Arc::new);
        }
        let cwd = match Path::new(&index).is_relative() {
            true => std::env::current_dir().unwrap_or_default(),
            false => PathBuf::new(),
        };
        let open = || Opened::open(name, &opts, &settings);
        let key = (
            name.to_string(),
            opts.clone(),
            cwd,
            settings.clone(),
            crate::base::gdal::cpl::cache_max(),
            crate::read::georef::orientation::longitude_options(),
        );
        OPENED.get_or_load(&index, key, open, |o| o.dataset.shareable())
    }
}

/// A band's description and its (unit, description) as C strings.
type KeptBand = (band::BandInfo, [CString; 2]);

/// `s` as a C string, NUL bytes made spaces.
pub(super) fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

fn write_status(status: *mut CrStatus, code: i32, message: &str) {
    if status.is_null() {
        return;
    }
    // SAFETY: the shim passes a valid, writable CrStatus.
    let st = unsafe { &mut *status };
    st.code = code;
    let bytes = message.as_bytes();
    let n = bytes.len().min(st.message.len() - 1);
    for (dst, &src) in st.message.iter_mut().zip(&bytes[..n]) {
        *dst = if src == 0 {
            b' ' as c_char
        } else {
            src as c_char
        };
    }
    st.message[n] = 0;
}

/// Runs `f`, turning errors and panics into `status` and `fallback`.
pub(super) fn guard<T>(status: *mut CrStatus, fallback: T, f: impl FnOnce() -> Result<T>) -> T {
    write_status(status, 0, "");
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            write_status(status, e.cpl_code() as i32, &e.to_string());
            fallback
        }
        Err(panic) => {
            let what = panic_message(&*panic).unwrap_or_else(|| "unknown panic".into());
            write_status(
                status,
                CplCode::AppDefined as i32,
                &format!("internal error in chunkref (please report): {what}"),
            );
            fallback
        }
    }
}

/// Reads a C string argument.
///
/// # Safety
/// `p` must be NULL or a valid NUL-terminated string.
pub(super) unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(Error::Usage {
            what: format!("{what} is NULL"),
        });
    }
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Error::Usage {
            what: format!("{what} is not UTF-8"),
        })
}

/// See chunkref.h.
///
/// # Safety
/// `name` is NULL or a C string; `header` points to `header_len` bytes or is NULL.
#[no_mangle]
pub unsafe extern "C" fn chunkref_identify(
    name: *const c_char,
    header: *const u8,
    header_len: usize,
    is_directory: i32,
) -> i32 {
    guard(std::ptr::null_mut(), 0, || {
        let name = if name.is_null() {
            ""
        } else {
            unsafe { CStr::from_ptr(name) }.to_str().unwrap_or("")
        };
        let header = if header.is_null() {
            &[][..]
        } else {
            unsafe { std::slice::from_raw_parts(header, header_len) }
        };
        Ok(crate::driver::identify::identify(name, header, is_directory != 0) as i32)
    })
}

/// The `CrDataKind` of an element kind.
pub(super) fn data_kind(kind: ScalarKind) -> u32 {
    match kind {
        ScalarKind::Bool => 0,
        ScalarKind::UInt => 1,
        ScalarKind::Int => 2,
        ScalarKind::Float => 3,
        ScalarKind::Complex => 4,
    }
}

/// The `KEY=VALUE` pairs of a NULL-terminated option list (NULL: none).
///
/// # Safety
/// `options` is NULL or a NULL-terminated list of C strings.
pub(super) unsafe fn option_list(options: *const *const c_char) -> Result<Vec<(String, String)>> {
    let mut opts = Vec::new();
    if options.is_null() {
        return Ok(opts);
    }
    for i in 0.. {
        let p = unsafe { *options.add(i) };
        if p.is_null() {
            break;
        }
        let kv = unsafe { c_str(p, "open option") }?;
        if let Some((k, v)) = kv.split_once('=') {
            opts.push((k.to_string(), v.to_string()));
        }
    }
    Ok(opts)
}

/// See chunkref.h.
///
/// # Safety
/// Arguments as documented in chunkref.h.
#[no_mangle]
pub unsafe extern "C" fn chunkref_open(
    name: *const c_char,
    options: *const *const c_char,
    status: *mut CrStatus,
) -> *mut CrHandle {
    guard(status, std::ptr::null_mut(), || {
        let name = unsafe { c_str(name, "dataset name") }?;
        let opts = unsafe { option_list(options) }?;
        Ok(Box::into_raw(Box::new(CrHandle(Opened::shared(
            name, opts,
        )?))))
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` is NULL or a handle from `chunkref_open` not yet closed.
#[no_mangle]
pub unsafe extern "C" fn chunkref_close(handle: *mut CrHandle) {
    if !handle.is_null() {
        let _ = catch_unwind(AssertUnwindSafe(|| drop(unsafe { Box::from_raw(handle) })));
    }
}

/// # Safety
/// `handle` must be a live handle.
unsafe fn handle_ref<'a>(handle: *const CrHandle) -> Result<&'a CrHandle> {
    if handle.is_null() {
        return Err(Error::Usage {
            what: "NULL handle".into(),
        });
    }
    Ok(unsafe { &*handle })
}

/// # Safety
/// `handle` must be a live handle.
unsafe fn dataset<'a>(handle: *const CrHandle) -> Result<&'a Dataset> {
    Ok(&unsafe { handle_ref(handle) }?.dataset)
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn chunkref_level_count(handle: *const CrHandle) -> u32 {
    guard(std::ptr::null_mut(), 0, || {
        Ok(unsafe { dataset(handle) }?.levels.len() as u32)
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle and `out` writable.
#[no_mangle]
pub unsafe extern "C" fn chunkref_level_info(
    handle: *const CrHandle,
    level: u32,
    out: *mut CrLevelInfo,
    status: *mut CrStatus,
) -> i32 {
    guard(status, -1, || {
        let ds = unsafe { dataset(handle) }?;
        let meta = ds.level_meta(level as usize)?;
        let l = &ds.levels[level as usize];
        let n = meta.chunks.len();
        let nodata = band::nodata(meta);
        let mask_block = l.mask.map_or([0, 0], |a| {
            let chunks = &ds.index.arrays[a].meta.chunks;
            [chunks[chunks.len() - 1], chunks[chunks.len() - 2]]
        });
        let info = CrLevelInfo {
            width: l.width,
            height: l.height,
            block_width: meta.chunks[n - 1],
            block_height: meta.chunks[n - 2],
            band_count: l.bands,
            data_kind: data_kind(band::served_kind(meta)),
            data_size: meta.dtype.size as u32,
            has_nodata: nodata.is_some() as i32,
            nodata: nodata.unwrap_or(0.0),
            has_mask: l.mask.is_some() as i32,
            mask_block_width: mask_block[0],
            mask_block_height: mask_block[1],
        };
        write_out(out, info)
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle and `out` writable.
#[no_mangle]
pub unsafe extern "C" fn chunkref_georef(
    handle: *const CrHandle,
    level: u32,
    out: *mut CrGeoref,
    status: *mut CrStatus,
) -> i32 {
    guard(status, -1, || {
        let h = unsafe { handle_ref(handle) }?;
        h.dataset.level_meta(level as usize)?;
        let g = &h.dataset.georef[level as usize];
        let crs = h.crs[level as usize]
            .as_ref()
            .map_or(std::ptr::null(), |c| c.as_ptr());
        let info = CrGeoref {
            has_transform: g.transform.is_some() as i32,
            transform: g.transform.unwrap_or([0.0, 1.0, 0.0, 0.0, 0.0, 1.0]),
            crs,
        };
        write_out(out, info)
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle; `out` NULL or writable for `cap` points
/// (5 doubles each); `crs` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn chunkref_gcps(
    handle: *const CrHandle,
    out: *mut f64,
    cap: usize,
    crs: *mut *const c_char,
    status: *mut CrStatus,
) -> i64 {
    guard(status, -1, || {
        let h = unsafe { handle_ref(handle) }?;
        let Some((points, definition)) = &h.gcps else {
            return Ok(0);
        };
        if !crs.is_null() {
            let definition = definition.as_ref().map_or(std::ptr::null(), |d| d.as_ptr());
            // SAFETY: checked non-NULL; the caller guarantees it is writable.
            unsafe { crs.write(definition) };
        }
        if !out.is_null() {
            for (i, p) in points.iter().take(cap).enumerate() {
                // SAFETY: i < cap; the caller guarantees 5 * cap doubles.
                unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), out.add(5 * i), 5) };
            }
        }
        Ok(points.len() as i64)
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle and `out` writable.
#[no_mangle]
pub unsafe extern "C" fn chunkref_band_info(
    handle: *const CrHandle,
    level: u32,
    band: u64,
    out: *mut CrBandInfo,
    status: *mut CrStatus,
) -> i32 {
    guard(status, -1, || {
        let h = unsafe { handle_ref(handle) }?;
        let mut bands = h.bands.lock().unwrap_or_else(|p| p.into_inner());
        let (b, text) = match bands.entry((level, band)) {
            Entry::Occupied(kept) => &**kept.into_mut(),
            Entry::Vacant(v) => {
                let b = h.dataset.band_info(level as usize, band)?;
                let text = [c_string(&b.unit), c_string(&b.description)];
                &**v.insert(Box::new((b, text)))
            }
        };
        let int64 = b.nodata_int.and_then(|v| i64::try_from(v).ok());
        let uint64 = b.nodata_int.and_then(|v| u64::try_from(v).ok());
        let info = CrBandInfo {
            has_scale: b.scale.is_some() as i32,
            scale: b.scale.unwrap_or(1.0),
            has_offset: b.offset.is_some() as i32,
            offset: b.offset.unwrap_or(0.0),
            color: b.color as u32,
            unit: text[0].as_ptr(),
            description: text[1].as_ptr(),
            has_nodata: b.nodata.is_some() as i32,
            nodata: b.nodata.unwrap_or(0.0),
            has_nodata_int64: int64.is_some() as i32,
            nodata_int64: int64.unwrap_or(0),
            has_nodata_uint64: uint64.is_some() as i32,
            nodata_uint64: uint64.unwrap_or(0),
        };
        write_out(out, info)
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle; `out` NULL or writable for `4 * cap` values.
#[no_mangle]
pub unsafe extern "C" fn chunkref_color_table(
    handle: *const CrHandle,
    level: u32,
    out: *mut i16,
    cap: usize,
    status: *mut CrStatus,
) -> i64 {
    guard(status, -1, || {
        let ds = unsafe { dataset(handle) }?;
        let table = band::color_table(ds.level_meta(level as usize)?).unwrap_or_default();
        if !out.is_null() {
            for (i, entry) in table.iter().take(cap).enumerate() {
                for (j, &c) in entry.iter().enumerate() {
                    unsafe { out.add(4 * i + j).write(c) };
                }
            }
        }
        Ok(table.len() as i64)
    })
}

/// Writes `value` to the shim's `out` pointer.
fn write_out<T>(out: *mut T, value: T) -> Result<i32> {
    if out.is_null() {
        return Err(Error::Usage {
            what: "NULL output pointer".into(),
        });
    }
    // SAFETY: the shim passes a valid, writable pointer.
    unsafe { out.write(value) };
    Ok(0)
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle; `domain` NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn chunkref_metadata(
    handle: *mut CrHandle,
    domain: *const c_char,
    band: u32,
) -> *const *const c_char {
    guard(std::ptr::null_mut(), std::ptr::null(), || {
        if handle.is_null() {
            return Ok(std::ptr::null());
        }
        let h = unsafe { &*handle };
        let domain = if domain.is_null() {
            String::new()
        } else {
            unsafe { c_str(domain, "metadata domain") }?.to_string()
        };
        let mut cache = h.metadata.lock().unwrap_or_else(|p| p.into_inner());
        let list = cache.entry((domain.clone(), band)).or_insert_with(|| {
            let b = (band > 0).then(|| band as u64 - 1);
            Box::new(CStringList::new(h.dataset.metadata(&domain, b)))
        });
        Ok(list.ptrs.as_ptr())
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn chunkref_names(handle: *const CrHandle) -> *const *const c_char {
    if handle.is_null() {
        return std::ptr::null();
    }
    unsafe { &*handle }.names.ptrs.as_ptr()
}

/// See chunkref.h.
///
/// # Safety
/// `index` is NULL or a C string; `add` is called with `ctx` and C strings
/// valid for the duration of the call.
#[no_mangle]
pub unsafe extern "C" fn chunkref_sidecars(
    index: *const c_char,
    add: Option<unsafe extern "C" fn(ctx: *mut c_void, name: *const c_char)>,
    ctx: *mut c_void,
) -> i32 {
    guard(std::ptr::null_mut(), 0, || {
        let (Some(add), false) = (add, index.is_null()) else {
            return Ok(0);
        };
        let Some(names) = crate::driver::sidecars::sidecars(unsafe { c_str(index, "index path") }?)
        else {
            return Ok(0);
        };
        for name in names {
            let name = c_string(&name);
            // SAFETY: the shim's callback copies the string before returning.
            unsafe { add(ctx, name.as_ptr()) };
        }
        Ok(1)
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn chunkref_files(handle: *const CrHandle) -> *const *const c_char {
    guard(std::ptr::null_mut(), std::ptr::null(), || {
        if handle.is_null() {
            return Ok(std::ptr::null());
        }
        let h = unsafe { &*handle };
        let files = h
            .files
            .get_or_init(|| CStringList::new(h.dataset.file_names()));
        Ok(files.ptrs.as_ptr())
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle; `add` is called with `ctx` and C strings
/// valid for the duration of the call.
#[no_mangle]
pub unsafe extern "C" fn chunkref_location_files(
    handle: *const CrHandle,
    level: u32,
    band: u64,
    x: u64,
    y: u64,
    add: Option<unsafe extern "C" fn(ctx: *mut c_void, name: *const c_char)>,
    ctx: *mut c_void,
    status: *mut CrStatus,
) -> i32 {
    guard(status, -1, || {
        let ds = unsafe { dataset(handle) }?;
        let add = add.ok_or_else(|| Error::Usage {
            what: "NULL callback".into(),
        })?;
        for name in crate::read::location_info::files_at(ds, level as usize, band, x, y)? {
            let name = c_string(&name);
            // SAFETY: the shim's callback copies the string before returning.
            unsafe { add(ctx, name.as_ptr()) };
        }
        Ok(0)
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn chunkref_warnings(handle: *mut CrHandle) -> *const *const c_char {
    if handle.is_null() {
        return std::ptr::null();
    }
    unsafe { &*handle }.warnings.ptrs.as_ptr()
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle; `out` writable for `cap` values.
#[no_mangle]
pub unsafe extern "C" fn chunkref_chunk_bands(
    handle: *const CrHandle,
    level: u32,
    band: u64,
    out: *mut u64,
    cap: usize,
    status: *mut CrStatus,
) -> i64 {
    guard(status, -1, || {
        let ds = unsafe { dataset(handle) }?;
        let bands = ds.bands_sharing_chunk(level as usize, band)?;
        for (i, b) in bands.iter().take(cap).enumerate() {
            unsafe { out.add(i).write(*b) };
        }
        Ok(bands.len() as i64)
    })
}

/// The request behind `request` (NULL is an error naming the `what` request).
///
/// # Safety
/// `request` is NULL or points to a valid request.
unsafe fn request_ref<'a, T>(request: *const T, what: &str) -> Result<&'a T> {
    // SAFETY: the caller guarantees the pointer is NULL or valid.
    unsafe { request.as_ref() }.ok_or_else(|| Error::Usage {
        what: format!("NULL {what} request"),
    })
}

/// The `count` band numbers at `bands` of a `what` request whose buffers
/// are present (`has_buffers`); an empty request is an error.
///
/// # Safety
/// `bands` is NULL or points to `count` band numbers.
unsafe fn band_list<'a>(
    bands: *const u64,
    count: usize,
    has_buffers: bool,
    what: &str,
) -> Result<&'a [u64]> {
    if count == 0 || bands.is_null() || !has_buffers {
        return Err(Error::Usage {
            what: format!("empty {what} request"),
        });
    }
    // SAFETY: checked non-NULL; the caller guarantees `count` elements.
    Ok(unsafe { std::slice::from_raw_parts(bands, count) })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle; `request` valid, with `count` entries in
/// each of its arrays and distinct buffers of `buffer_bytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn chunkref_read_blocks(
    handle: *const CrHandle,
    request: *const CrBlocksRequest,
    status: *mut CrStatus,
) -> i32 {
    guard(status, -1, || {
        let ds = unsafe { dataset(handle) }?;
        let r = unsafe { request_ref(request, "blocks") }?;
        let complete = !r.buffers.is_null() && !r.block_x.is_null() && !r.block_y.is_null();
        let bands = unsafe { band_list(r.bands, r.count, complete, "blocks") }?;
        // SAFETY: checked non-NULL; the caller guarantees `count` elements.
        let (xs, ys, ptrs) = unsafe {
            (
                std::slice::from_raw_parts(r.block_x, r.count),
                std::slice::from_raw_parts(r.block_y, r.count),
                std::slice::from_raw_parts(r.buffers, r.count),
            )
        };
        if ptrs.iter().any(|p| p.is_null()) {
            return Err(Error::Usage {
                what: "NULL block buffer".into(),
            });
        }
        let blocks: Vec<(u64, u64)> = xs.iter().copied().zip(ys.iter().copied()).collect();
        // SAFETY: distinct buffers of `buffer_bytes` bytes each (see above).
        let outs: Vec<&mut [u8]> = ptrs
            .iter()
            .map(|&p| unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), r.buffer_bytes) })
            .collect();
        ds.read_blocks(r.level as usize, &blocks, bands, outs)?;
        Ok(0)
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle; `request` valid, with `band_count` bands
/// and a buffer of `buffer_bytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn chunkref_read_window(
    handle: *const CrHandle,
    request: *const CrWindowRequest,
    status: *mut CrStatus,
) -> i32 {
    guard(status, -1, || {
        let ds = unsafe { dataset(handle) }?;
        let r = unsafe { request_ref(request, "window") }?;
        let (bands, out, spacing) = unsafe { r.out.parts("window") }?;
        let window = Window {
            x: r.x,
            y: r.y,
            width: r.width,
            height: r.height,
        };
        ds.read_window(r.level as usize, window, bands, out, spacing)?;
        Ok(0)
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn chunkref_read_ahead(
    handle: *const CrHandle,
    request: *const CrReadAhead,
    status: *mut CrStatus,
) -> i64 {
    guard(status, -1, || {
        let ds = unsafe { dataset(handle) }?;
        let r = unsafe { request_ref(request, "read-ahead") }?;
        let window = Window {
            x: r.x,
            y: r.y,
            width: r.width,
            height: r.height,
        };
        let bands = r.first..r.first.saturating_add(r.count);
        let count = ds.read_ahead(handle as usize, r.level as usize, window, bands, r.except)?;
        Ok(i64::try_from(count).unwrap_or(i64::MAX))
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn chunkref_read_ahead_stop(handle: *const CrHandle) {
    guard(std::ptr::null_mut(), (), || {
        unsafe { dataset(handle) }?.stop_read_ahead(handle as usize);
        Ok(())
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle; `request` valid, with `band_count` bands
/// and a buffer of `buffer_bytes` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn chunkref_read_sampled(
    handle: *const CrHandle,
    request: *const CrSampledRequest,
    status: *mut CrStatus,
) -> i32 {
    guard(status, -1, || {
        let ds = unsafe { dataset(handle) }?;
        let r = unsafe { request_ref(request, "sampled window") }?;
        let (bands, out, spacing) = unsafe { r.out.parts("sampled window") }?;
        let sampling = Sampling {
            x: r.x,
            y: r.y,
            width: r.width,
            height: r.height,
            buf_width: r.buf_width,
            buf_height: r.buf_height,
        };
        ds.read_sampled(r.level as usize, sampling, bands, out, spacing)?;
        Ok(0)
    })
}

/// See chunkref.h.
///
/// # Safety
/// `handle` must be a live handle; `buffer` writable for `buffer_bytes` bytes.
#[no_mangle]
pub unsafe extern "C" fn chunkref_read_mask_block(
    handle: *const CrHandle,
    level: u32,
    block_x: u64,
    block_y: u64,
    buffer: *mut c_void,
    buffer_bytes: usize,
    status: *mut CrStatus,
) -> i32 {
    guard(status, -1, || {
        let ds = unsafe { dataset(handle) }?;
        if buffer.is_null() {
            return Err(Error::Usage {
                what: "NULL mask block buffer".into(),
            });
        }
        let out = unsafe { std::slice::from_raw_parts_mut(buffer.cast::<u8>(), buffer_bytes) };
        ds.read_mask_block(level as usize, block_x, block_y, out)?;
        Ok(0)
    })
}

extern "C" {
    fn chunkref_shim_register();
}

/// GDAL's plugin entry point: registers the ChunkRef driver.
#[no_mangle]
pub extern "C" fn GDALRegister_ChunkRef() {
    // SAFETY: the shim's registration takes no arguments and guards itself.
    unsafe { chunkref_shim_register() }
}
