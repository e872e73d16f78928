//! `chunkref._chunkref`: the engine's raster view for Python, with no
//! libgdal in the process.
//!
//! The Python package (`python/chunkref/`) builds its API on this module:
//! [`open_raster`] opens a dataset name as the GDAL driver does, and
//! [`Raster`] answers what the driver's C ABI answers (levels, types,
//! georeferencing, band descriptions, metadata) and reads windows into
//! `bytearray`s the package views as numpy arrays. Every failure is a
//! Python exception; a panic becomes one too, never an abort.

use std::panic::{catch_unwind, AssertUnwindSafe};

use chunkref::base::dtype::ScalarKind;
use chunkref::base::error::panic_message;
use chunkref::base::gdal::cpl::with_config_options;
use chunkref::conventions::attributes::gcps;
use chunkref::io::config::Settings;
use chunkref::read::georef::band;
use chunkref::read::raster::Dataset;
use chunkref::read::window::{Spacing, Window};
use chunkref::Error;
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyDict};

create_exception!(
    chunkref,
    ChunkrefError,
    PyOSError,
    "A chunk index, a source file or a chunk could not be read."
);
create_exception!(
    chunkref,
    InvalidIndexError,
    ChunkrefError,
    "The index or a request is malformed (also a ValueError in the package)."
);

/// The Python exception for an engine error: malformed indexes, metadata
/// and requests are [`InvalidIndexError`], everything else (I/O, decoding,
/// unsupported structures) [`ChunkrefError`].
fn to_py(e: Error) -> PyErr {
    match e {
        Error::MalformedIndex { .. }
        | Error::InvalidMetadata { .. }
        | Error::CodecConfig { .. }
        | Error::UnknownCodec { .. }
        | Error::Usage { .. } => InvalidIndexError::new_err(e.to_string()),
        _ => ChunkrefError::new_err(e.to_string()),
    }
}

/// Runs `f`, turning engine errors and panics into Python exceptions.
fn guarded<T>(f: impl FnOnce() -> Result<T, Error>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_py(e)),
        Err(panic) => {
            let what = panic_message(&*panic).unwrap_or_else(|| "unknown panic".into());
            Err(ChunkrefError::new_err(format!(
                "internal error in chunkref (please report): {what}"
            )))
        }
    }
}

/// An opened raster: a chunk index (or one array or group of it) as the
/// GDAL driver shows it, level 0 the full resolution and the rest
/// overviews.
#[pyclass(frozen, module = "chunkref._chunkref")]
struct Raster {
    dataset: Dataset,
}

/// Opens `name` (an index path or URL, `CHUNKREF:"index":array` for one
/// array) with GDAL-style open options (`TEMPLATE_<name>`, `TIME_START`,
/// `Y_ORDER`, ...), reading with the settings in `config` (`AWS_*`,
/// `GDAL_HTTP_*`, `CHUNKREF_*`), then those in the environment.
#[pyfunction]
fn open_raster(
    py: Python<'_>,
    name: String,
    options: Vec<(String, String)>,
    config: Vec<(String, String)>,
) -> PyResult<Raster> {
    py.detach(|| {
        guarded(|| {
            with_config_options(&config, || {
                let settings = Settings::from_gdal()?;
                Ok(Raster {
                    dataset: Dataset::open(&name, &options, &settings)?,
                })
            })
        })
    })
}

/// A level's `(width, height, block_width, block_height, bands)`.
type LevelShape = (u64, u64, u64, u64, u64);

/// The numpy type string (`"<u2"`, `"<f4"`, `"|u1"`) of what a level serves.
fn numpy_type(meta: &chunkref::index::zarr::ArrayMeta) -> PyResult<String> {
    let size = meta.dtype.size;
    let kind = match meta.dtype.kind {
        ScalarKind::Bool => 'u',
        ScalarKind::UInt => 'u',
        ScalarKind::Int if band::is_unsigned(meta) => 'u',
        ScalarKind::Int => 'i',
        ScalarKind::Float => 'f',
        ScalarKind::Complex if size >= 8 => 'c',
        ScalarKind::Complex => {
            return Err(ChunkrefError::new_err(format!(
                "array '{}': complex integers of {size} bytes have no numpy type",
                meta.path
            )))
        }
    };
    let order = match size {
        1 => '|',
        _ if cfg!(target_endian = "little") => '<',
        _ => '>',
    };
    Ok(format!("{order}{kind}{size}"))
}

#[pymethods]
impl Raster {
    /// Each level as `(width, height, block_width, block_height, bands)`.
    fn levels(&self) -> PyResult<Vec<LevelShape>> {
        (0..self.dataset.levels.len())
            .map(|i| {
                let meta = self.dataset.level_meta(i).map_err(to_py)?;
                let l = &self.dataset.levels[i];
                let n = meta.chunks.len();
                Ok((
                    l.width,
                    l.height,
                    meta.chunks[n - 1],
                    meta.chunks[n - 2],
                    l.bands,
                ))
            })
            .collect()
    }

    /// The numpy type string of `level`'s elements.
    fn dtype(&self, level: usize) -> PyResult<String> {
        numpy_type(self.dataset.level_meta(level).map_err(to_py)?)
    }

    /// `(geotransform or None, CRS definition or None)` of `level`: the
    /// CRS as the index gives it (`EPSG:<code>` or WKT2).
    fn georef(&self, level: usize) -> PyResult<(Option<[f64; 6]>, Option<String>)> {
        self.dataset.level_meta(level).map_err(to_py)?;
        let g = &self.dataset.georef[level];
        Ok((g.transform, g.crs.clone()))
    }

    /// Ground control points of level 0 as `(pixel, line, x, y, z)` and
    /// their CRS, or None.
    fn gcps(&self) -> Option<(Vec<[f64; 5]>, Option<String>)> {
        let meta = self.dataset.level_meta(0).ok()?;
        gcps(&meta.attributes)
    }

    /// What GDAL shows of band `band` (0-based) of `level`: a dict of
    /// `nodata`, `nodata_int` (exact, for 64-bit integers), `scale`,
    /// `offset`, `unit`, `description` and `color` (GDAL's name).
    fn band_info<'py>(
        &self,
        py: Python<'py>,
        level: usize,
        band: u64,
    ) -> PyResult<Bound<'py, PyDict>> {
        let b = guarded(|| self.dataset.band_info(level, band))?;
        let d = PyDict::new(py);
        d.set_item("nodata", b.nodata)?;
        d.set_item("nodata_int", b.nodata_int)?;
        d.set_item("scale", b.scale)?;
        d.set_item("offset", b.offset)?;
        d.set_item("unit", b.unit)?;
        d.set_item("description", b.description)?;
        d.set_item("color", b.color.name())?;
        Ok(d)
    }

    /// The colour table of `level` as `(c1, c2, c3, c4)` entries, or None.
    fn color_table(&self, level: usize) -> PyResult<Option<Vec<[i16; 4]>>> {
        Ok(band::color_table(
            self.dataset.level_meta(level).map_err(to_py)?,
        ))
    }

    /// Metadata items (`KEY=VALUE`) of `domain` (`""`, `IMAGE_STRUCTURE`,
    /// `SUBDATASETS`, `RPC`, `GEOLOCATION`) for the dataset or a band.
    #[pyo3(signature = (domain, band=None))]
    fn metadata(&self, domain: &str, band: Option<u64>) -> PyResult<Vec<String>> {
        guarded(|| Ok(self.dataset.metadata(domain, band)))
    }

    /// The subdatasets, as `(name, description)`, when no raster was chosen.
    fn subdatasets(&self) -> Vec<(String, String)> {
        self.dataset
            .subdatasets
            .iter()
            .map(|s| (s.name.clone(), s.description.clone()))
            .collect()
    }

    /// Non-fatal problems found opening the index.
    fn warnings(&self) -> Vec<String> {
        self.dataset.warnings.clone()
    }

    /// The names of the files the index refers to.
    fn files(&self) -> Vec<String> {
        self.dataset.file_names()
    }

    /// Reads columns `x..x + width` of rows `y..y + height` of `bands`
    /// (0-based) of `level` into a new `bytearray`, band-sequential and
    /// in native byte order; the GIL is released while chunks are fetched
    /// and decoded.
    #[allow(clippy::too_many_arguments)]
    fn read<'py>(
        &self,
        py: Python<'py>,
        level: usize,
        x: u64,
        y: u64,
        width: u64,
        height: u64,
        bands: Vec<u64>,
    ) -> PyResult<Bound<'py, PyByteArray>> {
        let meta = self.dataset.level_meta(level).map_err(to_py)?;
        let l = &self.dataset.levels[level];
        if x.checked_add(width).is_none_or(|e| e > l.width)
            || y.checked_add(height).is_none_or(|e| e > l.height)
        {
            return Err(PyValueError::new_err(format!(
                "window (x={x}, y={y}, width={width}, height={height}) is outside \
                 level {level} ({} x {})",
                l.width, l.height
            )));
        }
        let size = meta.dtype.size;
        let pixels = usize::try_from(width.saturating_mul(height)).unwrap_or(usize::MAX);
        let bytes = pixels
            .checked_mul(size)
            .and_then(|b| b.checked_mul(bands.len()))
            .ok_or_else(|| PyValueError::new_err("the window is larger than memory"))?;
        let spacing = Spacing {
            pixel: size,
            line: size * width as usize,
            band: size * pixels,
        };
        let window = Window {
            x,
            y,
            width,
            height,
        };
        let out = uninitialized_bytearray(py, bytes)?;
        // SAFETY: the bytearray is new and only this function holds it, so
        // its `bytes` bytes may be written with the GIL released.
        let buf = unsafe {
            std::slice::from_raw_parts_mut(
                pyo3::ffi::PyByteArray_AsString(out.as_ptr()).cast::<u8>(),
                bytes,
            )
        };
        advise_huge_pages(buf);
        py.detach(|| {
            guarded(|| {
                if bytes > 0 {
                    self.dataset
                        .read_window(level, window, &bands, buf, spacing)?;
                }
                Ok(())
            })
        })?;
        Ok(out)
    }
}

/// A new `bytearray` of `len` bytes left as allocated: every byte is
/// written by the read that fills it (zeroing 60 MB first cost 10-15 ms of
/// a 100 ms read).
fn uninitialized_bytearray(py: Python<'_>, len: usize) -> PyResult<Bound<'_, PyByteArray>> {
    let len = isize::try_from(len)
        .map_err(|_| PyValueError::new_err("the window is larger than memory"))?;
    // SAFETY: a NULL source asks CPython for an uninitialized buffer of
    // `len` bytes; the owned reference (or the error set) is taken at once.
    let any = unsafe {
        Bound::from_owned_ptr_or_err(
            py,
            pyo3::ffi::PyByteArray_FromStringAndSize(std::ptr::null(), len),
        )
    }?;
    Ok(any.cast_into::<PyByteArray>()?)
}

/// Size of a transparent huge page on x86-64 (and most aarch64 kernels).
const HUGE_PAGE: usize = 2 << 20;

/// Asks the kernel to back the whole huge pages inside `buf` with huge
/// pages (where transparent huge pages are `madvise`, Debian's default):
/// a fresh 60 MB window is then faulted in 30 times instead of 15,000,
/// about 15 ms less. numpy does the same for its own large arrays. A
/// refusal (huge pages disabled) changes nothing, so it is not an error.
fn advise_huge_pages(buf: &mut [u8]) {
    let start = buf.as_mut_ptr() as usize;
    let first = start.next_multiple_of(HUGE_PAGE);
    let end = (start + buf.len()) / HUGE_PAGE * HUGE_PAGE;
    if end > first {
        // SAFETY: [first, end) lies inside `buf`, which this function
        // borrows mutably; MADV_HUGEPAGE changes how pages are backed, never
        // their contents.
        unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE) };
    }
}

/// The module `chunkref._chunkref`.
#[pymodule]
fn _chunkref(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open_raster, m)?)?;
    m.add_class::<Raster>()?;
    m.add("ChunkrefError", m.py().get_type::<ChunkrefError>())?;
    m.add("InvalidIndexError", m.py().get_type::<InvalidIndexError>())?;
    Ok(())
}
