//! A read-only HDF5 virtual file driver (VFD) over a chunkref
//! [`Source`]: libhdf5 reads local files and objects in remote storage
//! (`s3://`, `https://`, `/vsis3/` ...) through the source's ranged reads,
//! with its retries, credentials and endpoint settings.
//!
//! libhdf5 asks for many small metadata reads; they are served from the
//! source's head (read when it was opened) or from aligned blocks of
//! [`BLOCK_BYTES`] kept in a small cache, so a file whose metadata sits
//! together costs a few requests. In [`Reader::recording`] the driver does
//! not read raw data at all: it notes where libhdf5 would read it, which is
//! how `H5Dread_chunk` tells where a chunk is (see `storage.rs`).
//!
//! The driver's class and file structures are declared here as libhdf5
//! 1.10 (`H5FDpublic.h`) or 1.14 and 2.x (`H5FDdevelop.h`, `cfg(hdf5_1_14)`)
//! declares them, build.rs choosing by the headers libhdf5 is built with
//! and vfd_layout.c checking them: the binding crate's declarations follow
//! another release. A file is opened with [`Reader::fapl`], a file
//! access property list holding a reference to the reader (copied and freed
//! by libhdf5 through the class's `fapl_copy` / `fapl_free`). Every libhdf5
//! call, and so every callback here, runs under `hdf5_metno_sys::LOCK`.

use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use hdf5_metno_sys::h5::{haddr_t, herr_t, hsize_t, HADDR_UNDEF};
use hdf5_metno_sys::h5fd::H5FDregister;
use hdf5_metno_sys::h5i::hid_t;
use hdf5_metno_sys::h5p::{H5Pcreate, H5Pget_driver_info, H5Pset_driver, H5P_CLS_FILE_ACCESS};

use super::handle::{failure, Handle};
use crate::base::error::{Error, Result};
use crate::io::source::Source;

/// Bytes of one cached block; blocks start at multiples of it.
const BLOCK_BYTES: u64 = 64 << 10;

/// Blocks kept (4 MiB); the least recently used goes first.
const KEPT_BLOCKS: usize = 64;

/// Reads larger than this go straight to the source, bypassing the cache.
const DIRECT_BYTES: u64 = 1 << 20;

/// The driver's name, as libhdf5 reports it.
const NAME: &std::ffi::CStr = c"chunkref";

/// `H5F_ACC_RDWR`: the flag of a file opened for writing.
const ACC_RDWR: c_uint = 0x0001;

/// `H5F_CLOSE_WEAK`, the close degree of the POSIX driver.
const CLOSE_WEAK: c_int = 1;

/// `H5FD_MEM_SUPER`, `H5FD_MEM_DRAW`: the kinds of file memory.
const MEM_SUPER: c_int = 1;
const MEM_DRAW: c_int = 3;

/// `H5FD_FEAT_ACCUMULATE_METADATA`: libhdf5 may merge adjacent metadata
/// reads (raw data reads are never merged, so recording sees each one).
const FEAT_ACCUMULATE_METADATA: c_ulong = 0x0002 | 0x0004;

/// The largest address (that of the POSIX driver).
const MAX_ADDR: haddr_t = (1 << 63) - 1;

/// `H5FD_t` of libhdf5 1.10, 1.14 and 2.x: the part of an open file libhdf5 reads
/// and fills in; the driver allocates it as the head of its own state.
#[repr(C)]
#[allow(dead_code)] // the fields are read and written by libhdf5, not by Rust
struct H5fd {
    driver_id: hid_t,
    cls: *const Class,
    fileno: c_ulong,
    access_flags: c_uint,
    feature_flags: c_ulong,
    maxaddr: haddr_t,
    base_addr: haddr_t,
    threshold: hsize_t,
    alignment: hsize_t,
    paged_aggr: u8,
}

/// `H5FD_class_t` of libhdf5 1.10, or 1.14 and 2.x (memory kinds `H5FD_mem_t` and
/// the close degree as C `int`s, `hbool_t` as a byte). libhdf5 copies it
/// when the driver is registered and reads every field.
#[repr(C)]
#[allow(dead_code)] // the fields are read by libhdf5, not by Rust
struct Class {
    #[cfg(hdf5_1_14)]
    version: c_uint,
    #[cfg(hdf5_1_14)]
    value: c_int,
    name: *const c_char,
    maxaddr: haddr_t,
    fc_degree: c_int,
    terminate: Option<unsafe extern "C" fn() -> herr_t>,
    sb_size: Option<unsafe extern "C" fn(*mut H5fd) -> hsize_t>,
    sb_encode: Option<unsafe extern "C" fn(*mut H5fd, *mut c_char, *mut u8) -> herr_t>,
    sb_decode: Option<unsafe extern "C" fn(*mut H5fd, *const c_char, *const u8) -> herr_t>,
    fapl_size: usize,
    fapl_get: Option<unsafe extern "C" fn(*mut H5fd) -> *mut c_void>,
    fapl_copy: Option<unsafe extern "C" fn(*const c_void) -> *mut c_void>,
    fapl_free: Option<unsafe extern "C" fn(*mut c_void) -> herr_t>,
    dxpl_size: usize,
    dxpl_copy: Option<unsafe extern "C" fn(*const c_void) -> *mut c_void>,
    dxpl_free: Option<unsafe extern "C" fn(*mut c_void) -> herr_t>,
    open: Option<unsafe extern "C" fn(*const c_char, c_uint, hid_t, haddr_t) -> *mut H5fd>,
    close: Option<unsafe extern "C" fn(*mut H5fd) -> herr_t>,
    cmp: Option<unsafe extern "C" fn(*const H5fd, *const H5fd) -> c_int>,
    query: Option<unsafe extern "C" fn(*const H5fd, *mut c_ulong) -> herr_t>,
    get_type_map: Option<unsafe extern "C" fn(*const H5fd, *mut c_int) -> herr_t>,
    alloc: Option<unsafe extern "C" fn(*mut H5fd, c_int, hid_t, hsize_t) -> haddr_t>,
    free: Option<unsafe extern "C" fn(*mut H5fd, c_int, hid_t, haddr_t, hsize_t) -> herr_t>,
    get_eoa: Option<unsafe extern "C" fn(*const H5fd, c_int) -> haddr_t>,
    set_eoa: Option<unsafe extern "C" fn(*mut H5fd, c_int, haddr_t) -> herr_t>,
    get_eof: Option<unsafe extern "C" fn(*const H5fd, c_int) -> haddr_t>,
    get_handle: Option<unsafe extern "C" fn(*mut H5fd, hid_t, *mut *mut c_void) -> herr_t>,
    read: Option<
        unsafe extern "C" fn(*mut H5fd, c_int, hid_t, haddr_t, usize, *mut c_void) -> herr_t,
    >,
    write: Option<
        unsafe extern "C" fn(*mut H5fd, c_int, hid_t, haddr_t, usize, *const c_void) -> herr_t,
    >,
    /// Vector and selection I/O (1.14): unset, libhdf5 falls back to `read`.
    #[cfg(hdf5_1_14)]
    vector_and_selection_io: [Option<unsafe extern "C" fn()>; 4],
    flush: Option<unsafe extern "C" fn(*mut H5fd, hid_t, u8) -> herr_t>,
    truncate: Option<unsafe extern "C" fn(*mut H5fd, hid_t, u8) -> herr_t>,
    lock: Option<unsafe extern "C" fn(*mut H5fd, u8) -> herr_t>,
    unlock: Option<unsafe extern "C" fn(*mut H5fd) -> herr_t>,
    /// `del` and `ctl` (1.14): unset (no file is deleted; no operation is
    /// known to this driver).
    #[cfg(hdf5_1_14)]
    del_and_ctl: [Option<unsafe extern "C" fn()>; 2],
    fl_map: [c_int; 7],
}

/// `H5FD_CLASS_VERSION` of libhdf5 1.14 and 2.x.
#[cfg(hdf5_1_14)]
const CLASS_VERSION: c_uint = 1;

/// The driver's `H5FD_class_value_t` (1.14): one of those libhdf5 leaves
/// to drivers of its users (256 to 511).
#[cfg(hdf5_1_14)]
const CLASS_VALUE: c_int = 0x1C4;

/// Sizes and offsets vfd_layout.c checks libhdf5's headers against at
/// build time: `H5FD_class_t`'s size and the offsets of `open`, `read`
/// and `fl_map`.
#[cfg(not(hdf5_1_14))]
const CLASS_LAYOUT: [usize; 4] = [280, 112, 200, 248];
#[cfg(hdf5_1_14)]
const CLASS_LAYOUT: [usize; 4] = [336, 120, 208, 304];

// The numbers vfd_layout.c checks libhdf5's headers against at build time.
const _: () = {
    assert!(std::mem::size_of::<H5fd>() == 80);
    assert!(std::mem::offset_of!(H5fd, maxaddr) == 40);
    assert!(std::mem::offset_of!(H5fd, paged_aggr) == 72);
    assert!(std::mem::size_of::<Class>() == CLASS_LAYOUT[0]);
    assert!(std::mem::offset_of!(Class, open) == CLASS_LAYOUT[1]);
    assert!(std::mem::offset_of!(Class, read) == CLASS_LAYOUT[2]);
    assert!(std::mem::offset_of!(Class, fl_map) == CLASS_LAYOUT[3]);
};

/// An open file: libhdf5's part first (libhdf5 holds a pointer to it),
/// then the driver's.
#[repr(C)]
struct OpenFile {
    #[allow(dead_code)] // read and written by libhdf5
    public: H5fd,
    reader: Arc<Reader>,
    /// The end of the address space libhdf5 has set.
    eoa: haddr_t,
}

/// A source read by libhdf5 through this driver.
pub(crate) struct Reader {
    source: Source,
    /// Blocks read before: (block number, bytes), most recent last.
    blocks: Mutex<VecDeque<(u64, Vec<u8>)>>,
    /// While recording: the raw data reads asked for, (address, size).
    recorded: Mutex<Option<Vec<(u64, u64)>>>,
    /// The first read that failed (libhdf5 only learns that one did).
    failed: Mutex<Option<Error>>,
}

/// Locks `m`, a poisoned lock being as good (its data stays consistent:
/// every update is one assignment or push).
fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Reader {
    /// Opens `name` (a local path or a URL) for libhdf5: its head is read.
    #[cfg(test)]
    pub(crate) fn open(name: &str) -> Result<Arc<Reader>> {
        Ok(Reader::over(Source::open(name, "NetCDF4 / HDF5 file")?))
    }

    /// A reader for libhdf5 over `source`, already open (its head read).
    pub(crate) fn over(source: Source) -> Arc<Reader> {
        Arc::new(Reader {
            source,
            blocks: Mutex::default(),
            recorded: Mutex::default(),
            failed: Mutex::default(),
        })
    }

    /// The source read.
    pub(crate) fn source(&self) -> &Source {
        &self.source
    }

    /// A file access property list opening files through this driver over
    /// this reader. The caller holds `hdf5_metno_sys::LOCK`.
    pub(crate) fn fapl(self: &Arc<Self>) -> Result<Handle> {
        let driver = driver()?;
        let what = || "cannot make a file access property list".to_string();
        // SAFETY: the class id is libhdf5's; the property list is owned by
        // a Handle.
        let fapl = Handle::new(unsafe { H5Pcreate(*H5P_CLS_FILE_ACCESS) }, what)?;
        let info: *const Arc<Reader> = self;
        // SAFETY: libhdf5 copies `info` with `fapl_copy` (a new reference)
        // before this returns; it frees its copy with `fapl_free`.
        super::handle::check(
            unsafe { H5Pset_driver(fapl.id(), driver, info.cast()) },
            || "cannot select the chunkref file driver".into(),
        )?;
        Ok(fapl)
    }

    /// Runs `run` with raw data reads recorded, not performed (their
    /// buffers are left untouched): its result and the reads asked for,
    /// (address in the file, size), in order.
    pub(crate) fn recording<T>(&self, run: impl FnOnce() -> T) -> (T, Vec<(u64, u64)>) {
        *locked(&self.recorded) = Some(Vec::new());
        let out = run();
        let reads = locked(&self.recorded).take().unwrap_or_default();
        (out, reads)
    }

    /// The first read that failed, if one did (taken: asked once).
    pub(crate) fn take_failure(&self) -> Option<Error> {
        locked(&self.failed).take()
    }

    /// Fills `out` with the bytes at `addr`; bytes past the end of the file
    /// read as zeros (as the POSIX driver reads them).
    fn read_into(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        let end = addr.saturating_add(out.len() as u64).min(self.source.len());
        let present = end.saturating_sub(addr) as usize;
        let (data, past_end) = out.split_at_mut(present);
        past_end.fill(0);
        if data.is_empty() {
            return Ok(());
        }
        if end <= self.source.head_len() || data.len() as u64 > DIRECT_BYTES {
            data.copy_from_slice(&self.source.read(addr, data.len() as u64)?);
            return Ok(());
        }
        let (first, last) = (addr / BLOCK_BYTES, (end - 1) / BLOCK_BYTES);
        let mut blocks = locked(&self.blocks);
        let missing: Vec<u64> = (first..=last)
            .filter(|b| !blocks.iter().any(|(n, _)| n == b))
            .collect();
        if let (Some(&from), Some(&to)) = (missing.first(), missing.last()) {
            // One request for the missing blocks (and any kept between).
            let start = from * BLOCK_BYTES;
            let stop = ((to + 1) * BLOCK_BYTES).min(self.source.len());
            let bytes = self.span(start, stop)?;
            for (i, block) in bytes.chunks(BLOCK_BYTES as usize).enumerate() {
                let n = from + i as u64;
                blocks.retain(|(kept, _)| *kept != n);
                blocks.push_back((n, block.to_vec()));
            }
        }
        let mut at = addr;
        let mut done = 0;
        while done < data.len() {
            // Most recently used last: each block read is moved to the back.
            let n = at / BLOCK_BYTES;
            let i = blocks
                .iter()
                .position(|(kept, _)| *kept == n)
                .ok_or_else(|| self.source.malformed(format!("block {n} was not read")))?;
            let Some(entry) = blocks.remove(i) else {
                break;
            };
            let within = (at - n * BLOCK_BYTES) as usize;
            let take = (data.len() - done).min(entry.1.len().saturating_sub(within));
            if take == 0 {
                return Err(self.source.malformed(format!("block {n} is short")));
            }
            data[done..done + take].copy_from_slice(&entry.1[within..within + take]);
            blocks.push_back(entry);
            done += take;
            at += take as u64;
        }
        while blocks.len() > KEPT_BLOCKS {
            blocks.pop_front();
        }
        Ok(())
    }

    /// Bytes `start..stop` of the source in one request at most: the part
    /// within the head is not fetched again.
    fn span(&self, start: u64, stop: u64) -> Result<Vec<u8>> {
        let head = self.source.head_len().clamp(start, stop);
        let mut bytes = self.source.read(start, head - start)?;
        if stop > head {
            bytes.extend(self.source.read(head, stop - head)?);
        }
        Ok(bytes)
    }

    /// Serves libhdf5's read of `size` bytes of kind `kind` at `addr`.
    fn serve(&self, kind: c_int, addr: u64, buf: &mut [u8]) -> Result<()> {
        if kind == MEM_DRAW {
            if let Some(reads) = locked(&self.recorded).as_mut() {
                reads.push((addr, buf.len() as u64));
                return Ok(());
            }
        }
        self.read_into(addr, buf)
    }

    /// Notes `e` as the failure to report, unless one is noted already.
    fn fail(&self, e: Error) {
        locked(&self.failed).get_or_insert(e);
    }
}

/// The driver's id, registered with libhdf5 on first use (the caller
/// holds `hdf5_metno_sys::LOCK`).
fn driver() -> Result<hid_t> {
    static DRIVER: OnceLock<hid_t> = OnceLock::new();
    let id = *DRIVER.get_or_init(|| {
        let class = class();
        // SAFETY: libhdf5 copies the class; its name is a static string.
        unsafe { H5FDregister((&class as *const Class).cast()) }
    });
    if id < 0 {
        return Err(failure(
            "cannot register the chunkref HDF5 file driver".into(),
        ));
    }
    Ok(id)
}

/// The driver's class: read-only, one open file per reader.
fn class() -> Class {
    Class {
        #[cfg(hdf5_1_14)]
        version: CLASS_VERSION,
        #[cfg(hdf5_1_14)]
        value: CLASS_VALUE,
        name: NAME.as_ptr(),
        maxaddr: MAX_ADDR,
        fc_degree: CLOSE_WEAK,
        terminate: None,
        sb_size: None,
        sb_encode: None,
        sb_decode: None,
        fapl_size: std::mem::size_of::<Arc<Reader>>(),
        fapl_get: Some(fapl_get),
        fapl_copy: Some(fapl_copy),
        fapl_free: Some(fapl_free),
        dxpl_size: 0,
        dxpl_copy: None,
        dxpl_free: None,
        open: Some(open),
        close: Some(close),
        cmp: Some(cmp),
        query: Some(query),
        get_type_map: None,
        alloc: None,
        free: None,
        get_eoa: Some(get_eoa),
        set_eoa: Some(set_eoa),
        get_eof: Some(get_eof),
        get_handle: None,
        read: Some(read),
        write: Some(write),
        #[cfg(hdf5_1_14)]
        vector_and_selection_io: [None; 4],
        flush: None,
        truncate: None,
        lock: Some(lock),
        unlock: Some(unlock),
        #[cfg(hdf5_1_14)]
        del_and_ctl: [None; 2],
        // H5FD_FLMAP_DICHOTOMY: metadata and raw data.
        fl_map: [
            MEM_SUPER, MEM_SUPER, MEM_SUPER, MEM_DRAW, MEM_DRAW, MEM_SUPER, MEM_SUPER,
        ],
    }
}

/// `value` of `run`, or `failed` when it panics (no panic crosses into C).
fn guarded<T>(failed: T, run: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(run)).unwrap_or(failed)
}

/// A new reference to `reader`, boxed for libhdf5 (freed by [`fapl_free`]).
fn boxed(reader: &Arc<Reader>) -> *mut c_void {
    Box::into_raw(Box::new(Arc::clone(reader))).cast()
}

/// The reader of `file`.
///
/// # Safety
/// `file` is an [`OpenFile`] made by [`open`] and not yet closed.
unsafe fn reader_of<'a>(file: *const H5fd) -> &'a Arc<Reader> {
    // SAFETY: as the caller promises.
    unsafe { &(*file.cast::<OpenFile>()).reader }
}

/// `fapl_get`: the driver information of an open file.
unsafe extern "C" fn fapl_get(file: *mut H5fd) -> *mut c_void {
    // SAFETY: libhdf5 passes a file this driver opened.
    guarded(std::ptr::null_mut(), || boxed(unsafe { reader_of(file) }))
}

/// `fapl_copy`: a new reference to the reader of `info`.
unsafe extern "C" fn fapl_copy(info: *const c_void) -> *mut c_void {
    // SAFETY: libhdf5 passes driver information this driver made (or the
    // `Arc<Reader>` given to H5Pset_driver).
    guarded(std::ptr::null_mut(), || {
        boxed(unsafe { &*info.cast::<Arc<Reader>>() })
    })
}

/// `fapl_free`: drops a reference made by [`boxed`].
unsafe extern "C" fn fapl_free(info: *mut c_void) -> herr_t {
    guarded(-1, || {
        // SAFETY: `info` came from `boxed` and is freed once.
        drop(unsafe { Box::from_raw(info.cast::<Arc<Reader>>()) });
        0
    })
}

/// `open`: a file over the reader of the property list (read-only).
unsafe extern "C" fn open(_: *const c_char, flags: c_uint, fapl: hid_t, _: haddr_t) -> *mut H5fd {
    guarded(std::ptr::null_mut(), || {
        if flags & ACC_RDWR != 0 {
            return std::ptr::null_mut();
        }
        // SAFETY: the property list selects this driver, so its driver
        // information is an `Arc<Reader>` made by `boxed`.
        let info = unsafe { H5Pget_driver_info(fapl) }.cast::<Arc<Reader>>();
        if info.is_null() {
            return std::ptr::null_mut();
        }
        let file = OpenFile {
            // SAFETY: all-zero is a valid H5fd (null pointer, zero numbers);
            // libhdf5 fills it in.
            public: unsafe { std::mem::zeroed() },
            // SAFETY: checked non-null above.
            reader: Arc::clone(unsafe { &*info }),
            eoa: 0,
        };
        Box::into_raw(Box::new(file)).cast()
    })
}

/// `close`: frees the file.
unsafe extern "C" fn close(file: *mut H5fd) -> herr_t {
    guarded(-1, || {
        // SAFETY: `file` came from `open` and is closed once.
        drop(unsafe { Box::from_raw(file.cast::<OpenFile>()) });
        0
    })
}

/// `cmp`: files are the same when their readers are.
unsafe extern "C" fn cmp(a: *const H5fd, b: *const H5fd) -> c_int {
    // SAFETY: libhdf5 passes two files this driver opened.
    let (a, b) = unsafe { (Arc::as_ptr(reader_of(a)), Arc::as_ptr(reader_of(b))) };
    a.cmp(&b) as c_int
}

/// `query`: merged metadata reads only.
unsafe extern "C" fn query(_: *const H5fd, flags: *mut c_ulong) -> herr_t {
    if !flags.is_null() {
        // SAFETY: libhdf5 passes a place for the flags.
        unsafe { *flags = FEAT_ACCUMULATE_METADATA };
    }
    0
}

/// `get_eoa`: the end of the address space libhdf5 set.
unsafe extern "C" fn get_eoa(file: *const H5fd, _: c_int) -> haddr_t {
    // SAFETY: `file` is an OpenFile of this driver.
    unsafe { (*file.cast::<OpenFile>()).eoa }
}

/// `set_eoa`: notes the end of the address space.
unsafe extern "C" fn set_eoa(file: *mut H5fd, _: c_int, addr: haddr_t) -> herr_t {
    // SAFETY: `file` is an OpenFile of this driver.
    unsafe { (*file.cast::<OpenFile>()).eoa = addr };
    0
}

/// `get_eof`: the size of the source.
unsafe extern "C" fn get_eof(file: *const H5fd, _: c_int) -> haddr_t {
    // SAFETY: libhdf5 passes a file this driver opened.
    guarded(HADDR_UNDEF, || unsafe { reader_of(file) }.source.len())
}

/// `read`: `size` bytes at `addr` into `buffer` (recorded, not read,
/// for raw data while recording); a failure is kept for the caller.
unsafe extern "C" fn read(
    file: *mut H5fd,
    kind: c_int,
    _: hid_t,
    addr: haddr_t,
    size: usize,
    buffer: *mut c_void,
) -> herr_t {
    if size == 0 {
        return 0;
    }
    if buffer.is_null() {
        return -1;
    }
    guarded(-1, || {
        // SAFETY: `file` is an OpenFile of this driver; libhdf5 passes a
        // buffer of `size` bytes (checked non-null and non-empty above).
        let (reader, buf) = unsafe {
            (
                reader_of(file),
                std::slice::from_raw_parts_mut(buffer.cast::<u8>(), size),
            )
        };
        match reader.serve(kind, addr, buf) {
            Ok(()) => 0,
            Err(e) => {
                reader.fail(e);
                -1
            }
        }
    })
}

/// `write`: refused (the driver is read-only).
unsafe extern "C" fn write(
    _: *mut H5fd,
    _: c_int,
    _: hid_t,
    _: haddr_t,
    _: usize,
    _: *const c_void,
) -> herr_t {
    -1
}

/// `lock`: nothing to lock (files are only read).
unsafe extern "C" fn lock(_: *mut H5fd, _: u8) -> herr_t {
    0
}

/// `unlock`: nothing was locked.
unsafe extern "C" fn unlock(_: *mut H5fd) -> herr_t {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `len` bytes, each its offset's low bits mixed.
    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i ^ (i >> 8) ^ (i >> 16)) as u8).collect()
    }

    #[test]
    fn reads_equal_the_file_in_and_across_blocks_and_past_its_end() {
        let dir = std::env::temp_dir().join(format!("chunkref-vfd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bytes.bin");
        let bytes = pattern(3 << 20);
        std::fs::write(&path, &bytes).unwrap();
        let reader = Reader::open(path.to_str().unwrap()).unwrap();
        let len = bytes.len() as u64;
        let block = BLOCK_BYTES;
        let cases = [
            (0, 8),                         // in the head
            (100, 20_000),                  // head and block 0
            (block - 3, 10),                // across blocks 0 and 1
            (5 * block + 7, 3 * block),     // several blocks at once
            (6 * block, 40),                // a block kept from before
            (2 * block + 1, (1 << 20) + 9), // direct
            (len - 5, 5),                   // the last bytes
        ];
        for (addr, size) in cases {
            let mut out = vec![0xAA; size as usize];
            reader.serve(MEM_SUPER, addr, &mut out).unwrap();
            let want = &bytes[addr as usize..(addr + size) as usize];
            assert!(out == want, "{addr} + {size}");
        }
        let mut past = vec![0xAA; 16];
        reader.serve(MEM_SUPER, len - 6, &mut past).unwrap();
        assert_eq!(past[..6], bytes[bytes.len() - 6..]);
        assert_eq!(past[6..], [0; 10]);
        assert!(locked(&reader.blocks).len() <= KEPT_BLOCKS);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn raw_reads_are_recorded_not_read_while_recording() {
        let dir = std::env::temp_dir().join(format!("chunkref-vfd-rec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bytes.bin");
        std::fs::write(&path, pattern(1000)).unwrap();
        let reader = Reader::open(path.to_str().unwrap()).unwrap();
        let mut raw = vec![7u8; 10];
        let mut meta = vec![7u8; 10];
        let ((), reads) = reader.recording(|| {
            reader.serve(MEM_DRAW, 300, &mut raw).unwrap();
            reader.serve(MEM_SUPER, 300, &mut meta).unwrap();
        });
        assert_eq!(reads, vec![(300, 10)]);
        assert_eq!(raw, vec![7u8; 10]);
        assert_eq!(meta, pattern(1000)[300..310]);
        // Outside recording, raw data is read.
        reader.serve(MEM_DRAW, 300, &mut raw).unwrap();
        assert_eq!(raw, meta);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
