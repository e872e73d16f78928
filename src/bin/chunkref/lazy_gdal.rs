//! libgdal loaded by the `chunkref` command when it first calls GDAL, not
//! at start.
//!
//! The library's builders call a few GDAL functions (EPSG axis order, GCP
//! fits, the CRS of GeoKeys without an EPSG code, GRIB tables, warnings),
//! and most indexing runs call none: linked as usual, libgdal and the
//! hundred libraries behind it were loaded and relocated at every start
//! (a `chunkref --help` took 48-52 ms of CPU and 2,020 page faults; 8-10
//! ms and 710 without them). Here,
//! in the command only (the driver links libgdal as before), each GDAL
//! function the library imports is defined: on first use it loads libgdal
//! by its soname (`CHUNKREF_GDAL_SONAME`, from build.rs) and calls GDAL's
//! own. Each definition's type is checked against gdal-sys's declaration,
//! and lazy_gdal.map keeps them out of the command's dynamic symbols, so
//! that libgdal's calls of its own functions stay its own.

#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::OnceLock;

use gdal_sys::{
    vsi_l_offset, CPLErr, CPLErrorHandler, CPLErrorNum, GByte, GDALDatasetH, GIntBig,
    OGRCoordinateTransformationH, OGRErr, OGRSpatialReferenceH, OSRAxisMappingStrategy,
    VSIStatBufL, GDAL_GCP, VSILFILE,
};

extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
}

/// `RTLD_NOW | RTLD_GLOBAL` (glibc's values).
const LOAD_MODE: c_int = 0x2 | 0x100;

/// The soname of the libgdal the command was built against.
const SONAME: &CStr = {
    let name = concat!(env!("CHUNKREF_GDAL_SONAME"), "\0");
    match CStr::from_bytes_with_nul(name.as_bytes()) {
        Ok(name) => name,
        Err(_) => panic!("CHUNKREF_GDAL_SONAME holds a NUL"),
    }
};

/// GDAL's function `name`, libgdal loaded on first use. A libgdal that
/// cannot be loaded, or lacks the function, ends the command with a
/// message (there is no error to return through a C signature).
fn gdal_function(name: &str) -> usize {
    static GDAL: OnceLock<usize> = OnceLock::new();
    let fail = |what: String| -> ! {
        // SAFETY: dlerror's message (or NULL) is read at once, on this thread.
        let reason = unsafe {
            let e = dlerror();
            if e.is_null() {
                String::new()
            } else {
                CStr::from_ptr(e).to_string_lossy().into_owned()
            }
        };
        eprintln!("chunkref: {what}: {reason}");
        std::process::exit(1)
    };
    let handle = *GDAL.get_or_init(|| {
        // SAFETY: a NUL-terminated name; libgdal's initialisers run as at
        // any load.
        let handle = unsafe { dlopen(SONAME.as_ptr(), LOAD_MODE) };
        if handle.is_null() {
            fail(format!("cannot load {}", SONAME.to_string_lossy()));
        }
        handle as usize
    });
    let missing = || format!("{} has no {name}", SONAME.to_string_lossy());
    let Ok(c_name) = std::ffi::CString::new(name) else {
        fail(missing())
    };
    // SAFETY: a handle dlopen returned, never closed; a NUL-terminated name.
    let function = unsafe { dlsym(handle as *mut c_void, c_name.as_ptr()) };
    if function.is_null() {
        fail(missing());
    }
    function as usize
}

/// Defines each GDAL function `name(args) -> ret` as one that calls
/// GDAL's own, found on first use; `gdal_sys::name` must have its type.
macro_rules! lazily {
    ($($(#[$when:meta])* $name:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*) => {$(
        $(#[$when])*
        #[no_mangle]
        unsafe extern "C" fn $name($($arg: $ty),*) $(-> $ret)? {
            type Function = unsafe extern "C" fn($($ty),*) $(-> $ret)?;
            // The type gdal-sys declares (this very definition, once linked).
            const _: Function = gdal_sys::$name;
            static REAL: OnceLock<usize> = OnceLock::new();
            let real = *REAL.get_or_init(|| gdal_function(stringify!($name)));
            // SAFETY: GDAL's function of this name, of the type gdal-sys
            // declares for it; the caller keeps GDAL's contract.
            unsafe { std::mem::transmute::<usize, Function>(real)($($arg),*) }
        }
    )*};
}

lazily! {
    CPLFindFile(class: *const c_char, basename: *const c_char) -> *const c_char;
    CPLGetConfigOption(key: *const c_char, default: *const c_char) -> *const c_char;
    CPLPopErrorHandler();
    CPLPushErrorHandler(handler: CPLErrorHandler);
    CPLQuietErrorHandler(class: CPLErr::Type, number: CPLErrorNum, message: *const c_char);
    #[cfg(not(gdal_close_error))]
    GDALClose(dataset: GDALDatasetH);
    // GDAL 3.7 made GDALClose return an error.
    #[cfg(gdal_close_error)]
    GDALClose(dataset: GDALDatasetH) -> CPLErr::Type;
    GDALGCPsToGeoTransform(
        count: c_int,
        gcps: *const GDAL_GCP,
        transform: *mut f64,
        approx: c_int
    ) -> c_int;
    GDALGetCacheMax64() -> GIntBig;
    GDALGetSpatialRef(dataset: GDALDatasetH) -> OGRSpatialReferenceH;
    GDALOpenEx(
        name: *const c_char,
        flags: c_uint,
        drivers: *const *const c_char,
        options: *const *const c_char,
        siblings: *const *const c_char
    ) -> GDALDatasetH;
    OCTDestroyCoordinateTransformation(transformation: OGRCoordinateTransformationH);
    OCTNewCoordinateTransformation(
        source: OGRSpatialReferenceH,
        target: OGRSpatialReferenceH
    ) -> OGRCoordinateTransformationH;
    OCTTransform(
        transformation: OGRCoordinateTransformationH,
        count: c_int,
        x: *mut f64,
        y: *mut f64,
        z: *mut f64
    ) -> c_int;
    OSRCloneGeogCS(srs: OGRSpatialReferenceH) -> OGRSpatialReferenceH;
    OSRDestroySpatialReference(srs: OGRSpatialReferenceH);
    OSREPSGTreatsAsLatLong(srs: OGRSpatialReferenceH) -> c_int;
    OSREPSGTreatsAsNorthingEasting(srs: OGRSpatialReferenceH) -> c_int;
    OSRExportToProj4(srs: OGRSpatialReferenceH, proj4: *mut *mut c_char) -> OGRErr::Type;
    OSRExportToWktEx(
        srs: OGRSpatialReferenceH,
        wkt: *mut *mut c_char,
        options: *const *const c_char
    ) -> OGRErr::Type;
    OSRImportFromEPSG(srs: OGRSpatialReferenceH, code: c_int) -> OGRErr::Type;
    OSRImportFromWkt(srs: OGRSpatialReferenceH, wkt: *mut *mut c_char) -> OGRErr::Type;
    OSRImportFromXML(srs: OGRSpatialReferenceH, xml: *const c_char) -> OGRErr::Type;
    OSRNewSpatialReference(definition: *const c_char) -> OGRSpatialReferenceH;
    OSRSetAxisMappingStrategy(srs: OGRSpatialReferenceH, strategy: OSRAxisMappingStrategy::Type);
    OSRSetGeogCS(
        srs: OGRSpatialReferenceH,
        geog: *const c_char,
        datum: *const c_char,
        ellipsoid: *const c_char,
        semi_major: f64,
        inv_flattening: f64,
        pm: *const c_char,
        pm_offset: f64,
        units: *const c_char,
        to_radians: f64
    ) -> OGRErr::Type;
    OSRSetLCC(
        srs: OGRSpatialReferenceH,
        p1: f64,
        p2: f64,
        lat: f64,
        lon: f64,
        easting: f64,
        northing: f64
    ) -> OGRErr::Type;
    OSRSetMercator2SP(
        srs: OGRSpatialReferenceH,
        p1: f64,
        lat: f64,
        lon: f64,
        easting: f64,
        northing: f64
    ) -> OGRErr::Type;
    OSRSetPS(
        srs: OGRSpatialReferenceH,
        lat: f64,
        lon: f64,
        scale: f64,
        easting: f64,
        northing: f64
    ) -> OGRErr::Type;
    OSRSetWellKnownGeogCS(srs: OGRSpatialReferenceH, name: *const c_char) -> OGRErr::Type;
    VSIFCloseL(file: *mut VSILFILE) -> c_int;
    VSIFileFromMemBuffer(
        name: *const c_char,
        data: *mut GByte,
        length: vsi_l_offset,
        owned: c_int
    ) -> *mut VSILFILE;
    VSIFree(memory: *mut c_void);
    VSIIsLocal(path: *const c_char) -> bool;
    VSIStatExL(name: *const c_char, stat: *mut VSIStatBufL, flags: c_int) -> c_int;
    VSIUnlink(name: *const c_char) -> c_int;
}

/// `GDALRegister_GTiff` (gdal_frmts.h, which gdal-sys does not bind: the
/// library declares it by hand).
#[no_mangle]
unsafe extern "C" fn GDALRegister_GTiff() {
    static REAL: OnceLock<usize> = OnceLock::new();
    let real = *REAL.get_or_init(|| gdal_function("GDALRegister_GTiff"));
    // SAFETY: GDAL's function of this name, which takes nothing.
    unsafe { std::mem::transmute::<usize, unsafe extern "C" fn()>(real)() }
}

/// `CPLError`, variadic in C: the library's one call passes a `"%s"`
/// format and one string, which this definition takes and passes on.
#[no_mangle]
unsafe extern "C" fn CPLError(
    class: CPLErr::Type,
    number: CPLErrorNum,
    format: *const c_char,
    text: *const c_char,
) {
    type Function = unsafe extern "C" fn(CPLErr::Type, CPLErrorNum, *const c_char, ...);
    const _: Function = gdal_sys::CPLError;
    static REAL: OnceLock<usize> = OnceLock::new();
    let real = *REAL.get_or_init(|| gdal_function("CPLError"));
    // SAFETY: GDAL's CPLError, called with the format and its one argument.
    unsafe { std::mem::transmute::<usize, Function>(real)(class, number, format, text) }
}
