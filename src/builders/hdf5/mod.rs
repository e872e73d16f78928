//! `chunkref index` for NetCDF4 / HDF5 files: the Kerchunk JSON v1 store
//! kerchunk's `SingleHdf5ToZarr` writes for a file (a `.zgroup` and
//! `.zattrs` per group, a `.zarray` and `.zattrs` per numeric dataset,
//! chunk references `[url, offset, length]`), the chunk ranges read from
//! the file's own chunk index through libhdf5. libhdf5 reads the file, local
//! or remote, through chunkref's own file driver ([`vfd`]).
//!
//! libhdf5 (Debian's serial build) is not thread-safe: every call here
//! holds the binding crate's library lock, and only the indexer calls it,
//! never the driver's read path. See docs/reference-table.md, "Indexing
//! NetCDF4 / HDF5", for what maps to what and what is refused.

mod attrs;
mod compat;
pub(crate) mod dtype;
pub mod filters;
mod handle;
pub(crate) mod storage;
mod vfd;
mod walk;

use std::ffi::{c_char, CStr};
use std::sync::Arc;

use base64::Engine;

use crate::conventions::attributes::{
    SourceDriver, GDAL_DRIVER_ATTRIBUTE, NETCDF_DEFAULT_FILL_ATTRIBUTE,
};
use hdf5_metno_sys::h5::{H5_index_t, H5open};
use hdf5_metno_sys::h5d::{
    H5D_fill_time_t, H5D_fill_value_t, H5D_layout_t, H5Dget_create_plist, H5Dget_space,
    H5Dget_type, H5Dopen2,
};
use hdf5_metno_sys::h5f::{H5Fget_create_plist, H5Fopen, H5F_ACC_RDONLY};
use hdf5_metno_sys::h5i::hid_t;
use hdf5_metno_sys::h5o::{H5O_type_t, H5Oopen};
use hdf5_metno_sys::h5p::{
    H5Pfill_value_defined, H5Pget_chunk, H5Pget_fill_time, H5Pget_fill_value, H5Pget_filter2,
    H5Pget_layout, H5Pget_nfilters, H5Pget_userblock, H5P_DEFAULT,
};
use hdf5_metno_sys::h5s::{H5S_class_t, H5Sget_simple_extent_dims, H5Sget_simple_extent_type};
use serde_json::{json, Map, Value};

use self::dtype::{Element, Kind};
use self::filters::Filter;
use self::handle::{c_name, check, in_file, malformed, Handle};
use self::storage::{Bytes, Storage};
use crate::base::error::{Error, Result};
use crate::conventions::attributes::VARIABLE_ORDER_ATTRIBUTE;
use crate::io::source::Source;

/// Attributes netCDF-4 and the HDF5 dimension-scale API keep for
/// themselves; kerchunk (after h5netcdf) leaves them out.
const HIDDEN_ATTRIBUTES: &[&str] = &[
    "REFERENCE_LIST",
    "CLASS",
    "DIMENSION_LIST",
    "NAME",
    "_Netcdf4Dimid",
    "_Netcdf4Coordinates",
    "_nc3_strict",
    "_NCProperties",
];

/// Names GDAL's netCDF driver claims HDF5 files by (its `IdentifyFormat`);
/// GDAL's HDF5 driver opens HDF5 files of any other name.
const NETCDF_EXTENSIONS: &[&str] = &["nc", "cdf", "nc2", "nc4", "nc3", "grd", "gmac"];

/// The Kerchunk JSON v1 document indexing the HDF5 file `source` (a local
/// file or a remote object, opened: its head already read), its chunks
/// referenced by `url`. Datasets chunkref cannot read as numbers (strings,
/// compound, ...) are left out with a warning on stderr; a filter without
/// a Zarr codec fails the whole index, and so does a file without a
/// dataset of 2 or more dimensions (GDAL shows no raster of it).
pub fn index_source(source: Source, url: &str) -> Result<Value> {
    let path = source.path().to_string();
    let path = path.as_str();
    let _library = hdf5_metno_sys::LOCK.lock();
    // SAFETY: initialises the library (idempotent).
    unsafe { H5open() };
    handle::silence_library();
    let reader = vfd::Reader::over(source);
    // A failed read is reported as itself (naming the URL and range), not
    // as what libhdf5 could not do for want of it.
    build(&reader, path, url).map_err(|e| in_file(reader.take_failure().unwrap_or(e), path))
}

fn build(reader: &Arc<vfd::Reader>, path: &str, url: &str) -> Result<Value> {
    refuse_netcdf3(reader.source())?;
    let c_path = c_name(path)?;
    let fapl = reader.fapl()?;
    // SAFETY: a NUL-terminated name and a valid property list; the file id
    // is owned by a Handle.
    let file = Handle::new(
        unsafe { H5Fopen(c_path.as_ptr(), H5F_ACC_RDONLY, fapl.id()) },
        || "libhdf5 cannot open it as an HDF5 file".into(),
    )?;
    let user_block = user_block(file.id())?;
    let driver = source_driver(path);
    let mut refs = Map::new();
    let mut datasets = Vec::new();
    let objects = listed_objects(file.id(), driver)?;
    for (name, kind) in &objects {
        let object = Object {
            file: file.id(),
            name,
            path,
            user_block,
            reader,
            driver,
        };
        match kind {
            H5O_type_t::H5O_TYPE_GROUP => object.group(&mut refs)?,
            H5O_type_t::H5O_TYPE_DATASET => match object.dataset(url, &mut refs)? {
                Outcome::Dimension => {}
                outcome => datasets.push((name.clone(), outcome)),
            },
            _ => {}
        }
    }
    if !datasets
        .iter()
        .any(|(_, outcome)| matches!(outcome, Outcome::Indexed(rank) if *rank >= 2))
    {
        return Err(no_raster(&datasets));
    }
    let rasters: Vec<&str> = datasets
        .iter()
        .filter(|(_, outcome)| matches!(outcome, Outcome::Indexed(rank) if *rank >= 2))
        .map(|(name, _)| name.as_str())
        .collect();
    let order = listing_order(&objects, &rasters, driver);
    record_listing(&mut refs, driver, &order);
    Ok(json!({"version": 1, "refs": refs}))
}

/// Every group and dataset of the file in the order GDAL's driver meets
/// them: the netCDF library's (creation order, where the file tracks it,
/// as netCDF-4 files do), else by name (GDAL's HDF5 driver).
fn listed_objects(file: hid_t, driver: SourceDriver) -> Result<Vec<(String, H5O_type_t)>> {
    if driver == SourceDriver::NetCdf {
        if let Ok(found) = walk::objects(file, H5_index_t::H5_INDEX_CRT_ORDER, false) {
            return Ok(found);
        }
    }
    walk::objects(
        file,
        H5_index_t::H5_INDEX_NAME,
        driver == SourceDriver::Hdf5,
    )
}

/// The datasets of `rasters` (2 or more dimensions) in the order GDAL
/// lists them as subdatasets: GDAL's HDF5 driver as it walks the file
/// (each group's members in turn, a subgroup's datasets where the subgroup
/// comes: the order of `objects`); its netCDF driver a group's variables
/// first, then each subgroup's, recursively.
fn listing_order<'a>(
    objects: &'a [(String, H5O_type_t)],
    rasters: &[&str],
    driver: SourceDriver,
) -> Vec<&'a str> {
    let wanted: std::collections::HashSet<&str> = rasters.iter().copied().collect();
    let walk: Vec<&str> = objects
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|n| wanted.contains(n))
        .collect();
    if driver == SourceDriver::Hdf5 {
        return walk;
    }
    let groups: Vec<&str> = objects
        .iter()
        .filter(|(name, kind)| *kind == H5O_type_t::H5O_TYPE_GROUP && name != ".")
        .map(|(name, _)| name.as_str())
        .collect();
    let mut out = Vec::with_capacity(walk.len());
    let mut pending = vec![""];
    while let Some(group) = pending.pop() {
        out.extend(walk.iter().filter(|d| parent(d) == group));
        // Subgroups in their order, the first on top of the stack.
        pending.extend(groups.iter().rev().filter(|g| parent(g) == group));
    }
    out
}

/// The group holding object `name` (`""` for the root).
fn parent(name: &str) -> &str {
    name.rsplit_once('/').map_or("", |(p, _)| p)
}

/// Records, in the root group's attributes, the GDAL driver that lists
/// the file's subdatasets and their order ([`GDAL_DRIVER_ATTRIBUTE`],
/// [`VARIABLE_ORDER_ATTRIBUTE`]).
fn record_listing(refs: &mut Map<String, Value>, driver: SourceDriver, order: &[&str]) {
    let mut root = refs
        .get(".zattrs")
        .and_then(Value::as_str)
        .and_then(|text| serde_json::from_str::<Map<String, Value>>(text).ok())
        .unwrap_or_default();
    root.insert(GDAL_DRIVER_ATTRIBUTE.into(), driver.name().into());
    root.insert(VARIABLE_ORDER_ATTRIBUTE.into(), json!(order));
    refs.insert(".zattrs".into(), Value::Object(root).to_string().into());
}

/// The GDAL driver that opens the file at `path` (a local path or URL),
/// by its name, as GDAL chooses between its netCDF and HDF5 drivers.
fn source_driver(path: &str) -> SourceDriver {
    let name = path.split(['?', '#']).next().unwrap_or_default();
    let name = name.rsplit(['/', '\\']).next().unwrap_or_default();
    match name.rsplit_once('.') {
        Some((_, ext))
            if NETCDF_EXTENSIONS
                .iter()
                .any(|e| e.eq_ignore_ascii_case(ext)) =>
        {
            SourceDriver::NetCdf
        }
        _ => SourceDriver::Hdf5,
    }
}

/// What became of one dataset of the file.
enum Outcome {
    /// Indexed, of this rank.
    Indexed(usize),
    /// Left out (not numbers, ...), with a warning.
    LeftOut,
    /// A netCDF dimension without a coordinate variable: nothing to index.
    Dimension,
}

/// The error for a file none of whose `datasets` is a raster: GDAL's
/// netCDF and HDF5 drivers show no raster of 1-D (or left out) datasets,
/// and a chunk index of it would open as nothing.
fn no_raster(datasets: &[(String, Outcome)]) -> Error {
    const SHOWN: usize = 4;
    let mut list: Vec<String> = datasets
        .iter()
        .take(SHOWN)
        .map(|(name, outcome)| match outcome {
            Outcome::Indexed(r) => format!("'/{name}' ({r}-D)"),
            _ => format!("'/{name}' (left out)"),
        })
        .collect();
    if datasets.len() > SHOWN {
        list.push(format!("and {} more", datasets.len() - SHOWN));
    }
    let found = match list.is_empty() {
        true => "it holds no dataset".to_string(),
        false => format!("its datasets are {}", list.join(", ")),
    };
    Error::unsupported(format!(
        "no dataset of 2 or more dimensions holding numbers, so no raster to index \
         (GDAL shows none either): {found}"
    ))
}

/// An error for a NetCDF-3 file (classic or 64-bit offset, `CDF` then
/// 1, 2 or 5), which has a `.nc` name but no HDF5 inside.
fn refuse_netcdf3(source: &Source) -> Result<()> {
    let head = source.read(0, source.len().min(4))?;
    match head[..] {
        [b'C', b'D', b'F', 1 | 2 | 5] => Err(Error::unsupported(format!(
            "{} is a NetCDF-3 file (classic or 64-bit offset format), not NetCDF4 / HDF5",
            source.path()
        ))),
        _ => Ok(()),
    }
}

/// The size of the user block of `file` (bytes before the superblock).
fn user_block(file: hid_t) -> Result<u64> {
    let what = || "cannot read the file creation properties".to_string();
    // SAFETY: valid file id; the property list is owned by a Handle.
    let fcpl = Handle::new(unsafe { H5Fget_create_plist(file) }, what)?;
    let mut size = 0;
    check(unsafe { H5Pget_userblock(fcpl.id(), &mut size) }, what)?;
    Ok(size)
}

/// A group or dataset of the file being indexed.
struct Object<'a> {
    file: hid_t,
    /// Path relative to the root, `.` for the root itself.
    name: &'a str,
    /// The source file, for warnings.
    path: &'a str,
    /// The size of the file's user block.
    user_block: u64,
    /// What libhdf5 reads the file through.
    reader: &'a vfd::Reader,
    /// The GDAL driver that opens the file.
    driver: SourceDriver,
}

impl Object<'_> {
    /// The Zarr key prefix of this object (`""` for the root, else `name/`).
    fn prefix(&self) -> String {
        match self.name {
            "." => String::new(),
            name => format!("{name}/"),
        }
    }

    /// Opens the object.
    fn open(&self) -> Result<Handle> {
        let c = c_name(self.name)?;
        // SAFETY: valid file id and NUL-terminated path; owned by a Handle.
        Handle::new(
            unsafe { H5Oopen(self.file, c.as_ptr(), H5P_DEFAULT) },
            || format!("cannot open '{}'", self.name),
        )
    }

    /// `.zgroup` and `.zattrs` of a group.
    fn group(&self, refs: &mut Map<String, Value>) -> Result<()> {
        let group = self.open()?;
        let attributes = visible_attributes(group.id())?;
        let prefix = self.prefix();
        refs.insert(
            format!("{prefix}.zgroup"),
            json!({"zarr_format": 2}).to_string().into(),
        );
        refs.insert(
            format!("{prefix}.zattrs"),
            Value::Object(attributes).to_string().into(),
        );
        Ok(())
    }

    /// `.zarray`, `.zattrs` and chunk references of a dataset; a warning
    /// and nothing when chunkref cannot read it as numbers.
    fn dataset(&self, url: &str, refs: &mut Map<String, Value>) -> Result<Outcome> {
        let c = c_name(self.name)?;
        let label = format!("/{}", self.name);
        let what = || format!("cannot open dataset '{label}'");
        // SAFETY: valid ids; each returned id is owned by a Handle.
        let dataset = Handle::new(
            unsafe { H5Dopen2(self.file, c.as_ptr(), H5P_DEFAULT) },
            what,
        )?;
        let file_type = Handle::new(unsafe { H5Dget_type(dataset.id()) }, what)?;
        let element = Element::of(file_type.id());
        let scalar = shape(dataset.id(), &label)?.is_some_and(|s| s.is_empty());
        if scalar && dtype::is_string(file_type.id()) {
            return self.text_variable(dataset.id(), refs);
        }
        let element = match element {
            // netCDF's characters (NC_CHAR), which GDAL's netCDF driver
            // lists; its HDF5 driver shows no string dataset.
            Ok(e) if e.kind == Kind::Char && self.driver == SourceDriver::Hdf5 => {
                return self.leave_out("it holds strings");
            }
            Ok(element) => element,
            Err(kind) => return self.leave_out(&format!("it holds {kind}")),
        };
        let Some(shape) = shape(dataset.id(), &label)? else {
            return self.leave_out("its dataspace is null (no elements)");
        };
        let dcpl = Handle::new(unsafe { H5Dget_create_plist(dataset.id()) }, what)?;
        let array = storage::Dataset {
            id: dataset.id(),
            name: &label,
            shape: &shape,
            item_size: element.size as u64,
            user_block: self.user_block,
            reader: self.reader,
            skip: None,
        };
        let Some((stored, filters)) = stored_as(&array, dcpl.id(), file_type.id())? else {
            return self.leave_out("its layout is virtual or unknown");
        };
        let names = attrs::names(dataset.id())?;
        let scale = is_dimension_scale(dataset.id(), &names)?;
        if scale && stored.refs.is_empty() {
            return Ok(Outcome::Dimension); // no coordinate variable
        }
        let Some(dimensions) = self.dimensions(dataset.id(), shape.len(), scale)? else {
            return self.leave_out("a dimension has several dimension scales attached");
        };
        let mut fill = fill_value(dataset.id(), dcpl.id(), file_type.id(), &element, &names)?;
        if shape.len() < 2 && fill.netcdf_variable {
            fill.zarr = Value::Null; // coordinates: kerchunk's store
        }
        let mut filters = filters;
        let mut zattrs = visible_attributes(dataset.id())?;
        zattrs.insert("_ARRAY_DIMENSIONS".into(), json!(dimensions));
        if shape.len() >= 2 {
            // Rasters only: coordinates carry no nodata.
            zattrs.insert(GDAL_DRIVER_ATTRIBUTE.into(), self.driver.name().into());
            match self.driver {
                SourceDriver::NetCdf if element.kind == Kind::Char => {}
                SourceDriver::NetCdf => {
                    let declared = Some(&fill.zarr).filter(|_| fill.declared);
                    // GDAL takes no default fill of 1-byte types for nodata.
                    let default = fill.netcdf.as_ref().filter(|_| element.size > 1);
                    let nodata = netcdf_nodata(&zattrs, declared, default);
                    if let Some(codec) = valid_range(&zattrs, nodata.as_ref(), &element) {
                        filters.insert(0, codec); // the last to decode
                    }
                    if !fill.declared {
                        let default = fill.netcdf.unwrap_or(Value::Null);
                        zattrs.insert(NETCDF_DEFAULT_FILL_ATTRIBUTE.into(), default);
                    }
                }
                // GDAL's HDF5 driver: nodata is `_FillValue` alone (which
                // kerchunk moves into the fill value, with the HDF5 fill).
                SourceDriver::Hdf5 if names.iter().any(|n| n == "_FillValue") => {
                    if let Some(declared) = attrs::value(dataset.id(), "_FillValue")? {
                        zattrs.insert("_FillValue".into(), declared);
                    }
                }
                SourceDriver::Hdf5 => {}
            }
        }
        let zarray = json!({
            "shape": shape,
            "chunks": stored.chunks,
            "dtype": element.zarr_dtype(),
            "fill_value": fill.zarr,
            "order": "C",
            "filters": if filters.is_empty() { Value::Null } else { Value::from(filters) },
            "compressor": null,
            "dimension_separator": ".",
            "zarr_format": 2,
        });
        let prefix = self.prefix();
        refs.insert(format!("{prefix}.zarray"), zarray.to_string().into());
        refs.insert(
            format!("{prefix}.zattrs"),
            Value::Object(zattrs).to_string().into(),
        );
        insert_chunks(refs, &prefix, url, stored);
        Ok(Outcome::Indexed(shape.len()))
    }

    /// A scalar text dataset (GDAL writes a netCDF grid mapping as one) as
    /// a `|S1` array of no chunks, for its attributes: the driver serves
    /// no text, but finds a grid mapping's CRS there (as for NetCDF-3's
    /// `NC_CHAR` variables).
    fn text_variable(&self, dataset: hid_t, refs: &mut Map<String, Value>) -> Result<Outcome> {
        let zarray = json!({
            "shape": [],
            "chunks": [],
            "dtype": "|S1",
            "fill_value": null,
            "order": "C",
            "filters": null,
            "compressor": null,
            "dimension_separator": ".",
            "zarr_format": 2,
        });
        let mut zattrs = visible_attributes(dataset)?;
        zattrs.insert("_ARRAY_DIMENSIONS".into(), json!([]));
        let prefix = self.prefix();
        refs.insert(format!("{prefix}.zarray"), zarray.to_string().into());
        refs.insert(
            format!("{prefix}.zattrs"),
            Value::Object(zattrs).to_string().into(),
        );
        Ok(Outcome::Indexed(0))
    }

    /// Warns that this dataset is left out of the index, and goes on.
    fn leave_out(&self, why: &str) -> Result<Outcome> {
        eprintln!(
            "chunkref: warning: {}: dataset '/{}' is left out: {why}",
            self.path, self.name
        );
        Ok(Outcome::LeftOut)
    }

    /// `_ARRAY_DIMENSIONS` as kerchunk names them: the attached dimension
    /// scale's path, the dataset's own for a dimension scale,
    /// `phony_dim_N` for an axis without one; `None` when an axis has
    /// several scales. `own` says the dataset is a dimension scale.
    fn dimensions(&self, dataset: hid_t, rank: usize, own: bool) -> Result<Option<Vec<String>>> {
        let scales = attrs::dimension_scales(dataset, rank)?;
        Ok(scales
            .into_iter()
            .enumerate()
            .map(|(axis, attached)| match attached.as_slice() {
                [one] => Some(one.trim_start_matches('/').to_string()),
                [] if own => Some(self.name.to_string()),
                [] => Some(format!("phony_dim_{axis}")),
                _ => None,
            })
            .collect())
    }
}

/// Where the dataset's bytes are, by its layout, and the codecs of its
/// filters (chunked layout only); `None` for a virtual layout.
fn stored_as(
    array: &storage::Dataset,
    dcpl: hid_t,
    file_type: hid_t,
) -> Result<Option<(Storage, Vec<Value>)>> {
    // SAFETY: valid property list id.
    Ok(Some(match unsafe { H5Pget_layout(dcpl) } {
        H5D_layout_t::H5D_CHUNKED => {
            let pipeline = pipeline(dcpl, array.name)?;
            let codecs = filters::codecs(array.name, &pipeline, array.item_size as usize)?;
            let chunks = chunk_shape(dcpl, array.shape.len(), array.name)?;
            let chunk_bytes = chunks
                .iter()
                .fold(array.item_size, |total, &n| total.saturating_mul(n));
            let array = storage::Dataset {
                skip: filters::skip(&pipeline, chunk_bytes),
                ..*array
            };
            let (stored, skipped) = array.chunked(&chunks)?;
            // Filters every chunk skipped read nothing back.
            let codecs = codecs
                .into_iter()
                .enumerate()
                .filter(|&(at, _)| skipped.checked_shr(at as u32).unwrap_or(0) & 1 == 0)
                .map(|(_, codec)| codec)
                .collect();
            (stored, codecs)
        }
        H5D_layout_t::H5D_CONTIGUOUS => (array.contiguous()?, Vec::new()),
        H5D_layout_t::H5D_COMPACT => (array.compact(file_type)?, Vec::new()),
        _ => return Ok(None),
    }))
}

/// The chunk references of `stored` under key prefix `prefix`.
fn insert_chunks(refs: &mut Map<String, Value>, prefix: &str, url: &str, stored: Storage) {
    for (position, bytes) in stored.refs {
        let value = match bytes {
            Bytes::Range { offset, length } => json!([url, offset, length]),
            Bytes::Inline(data) => json!(format!(
                "base64:{}",
                base64::engine::general_purpose::STANDARD.encode(data)
            )),
        };
        refs.insert(format!("{prefix}{}", storage::key(&position)), value);
    }
}

/// The attributes of `obj` kerchunk keeps, as JSON (hidden netCDF-4 and
/// dimension-scale attributes, `_FillValue` and values other than numbers
/// and strings left out).
fn visible_attributes(obj: hid_t) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    for name in attrs::names(obj)? {
        if HIDDEN_ATTRIBUTES.contains(&name.as_str()) || name == "_FillValue" {
            continue;
        }
        match attrs::value(obj, &name)? {
            Some(Value::String(s)) if s == "DIMENSION_SCALE" => {}
            Some(value) => {
                out.insert(name, value);
            }
            None => {}
        }
    }
    Ok(out)
}

/// Whether `dataset` is a dimension scale (`CLASS` is `DIMENSION_SCALE`).
fn is_dimension_scale(dataset: hid_t, names: &[String]) -> Result<bool> {
    if !names.iter().any(|n| n == "CLASS") {
        return Ok(false);
    }
    Ok(attrs::value(dataset, "CLASS")? == Some(json!("DIMENSION_SCALE")))
}

/// What a dataset says of fill values.
struct Fill {
    /// The Zarr fill value.
    zarr: Value,
    /// Whether it is the dataset's `_FillValue`.
    declared: bool,
    /// The fill value netCDF reports for the dataset without `_FillValue`
    /// (`nc_inq_var_fill`): its HDF5 fill value when user-defined (netCDF-4
    /// sets its type's default) and written (not `NC_NOFILL`).
    netcdf: Option<Value>,
    /// Whether the dataset is a netCDF-4 variable (has `_Netcdf4*`
    /// attributes).
    netcdf_variable: bool,
}

/// The fill values of a dataset. The Zarr one: `_FillValue` when the
/// dataset has one; for a numeric netCDF-4 variable without it, the HDF5
/// fill value netCDF gave it (its type's default fill, what netCDF and
/// GDAL read where no chunk was written; kerchunk gives none); none for
/// CF times and netCDF-4 variables written without fill (as kerchunk);
/// else the HDF5 fill value (zero when undefined).
fn fill_value(
    dataset: hid_t,
    dcpl: hid_t,
    file_type: hid_t,
    element: &Element,
    names: &[String],
) -> Result<Fill> {
    let netcdf_variable = names.iter().any(|n| n.contains("_Netcdf4"));
    if names.iter().any(|n| n == "_FillValue") {
        if let Some(bytes) = attrs::first_as(dataset, "_FillValue", file_type)? {
            return Ok(Fill {
                zarr: element.fill_value(&bytes),
                declared: true,
                netcdf: None,
                netcdf_variable,
            });
        }
    }
    let cf_time = names.iter().any(|n| n == "units")
        && attrs::value(dataset, "units")?
            .as_ref()
            .and_then(Value::as_str)
            .is_some_and(|u| u.contains("since"));
    let mut defined = H5D_fill_value_t::H5D_FILL_VALUE_UNDEFINED;
    let mut time = H5D_fill_time_t::H5D_FILL_TIME_IFSET;
    let mut bytes = vec![0u8; element.size];
    // SAFETY: valid ids; `bytes` holds one element of the file datatype.
    unsafe {
        check(H5Pfill_value_defined(dcpl, &mut defined), || {
            "cannot read the fill value".into()
        })?;
        if defined != H5D_fill_value_t::H5D_FILL_VALUE_UNDEFINED {
            check(
                H5Pget_fill_value(dcpl, file_type, bytes.as_mut_ptr().cast()),
                || "cannot read the fill value".into(),
            )?;
        }
        check(H5Pget_fill_time(dcpl, &mut time), || {
            "cannot read the fill time".into()
        })?;
    }
    let written = time != H5D_fill_time_t::H5D_FILL_TIME_NEVER;
    let netcdf = (defined == H5D_fill_value_t::H5D_FILL_VALUE_USER_DEFINED
        && written
        && element.kind != Kind::Char)
        .then(|| element.fill_value(&bytes));
    let zarr = match (netcdf_variable, cf_time) {
        (true, _) => netcdf.clone().unwrap_or(Value::Null),
        (false, true) => Value::Null,
        (false, false) => element.fill_value(&bytes),
    };
    Ok(Fill {
        zarr,
        declared: false,
        netcdf,
        netcdf_variable,
    })
}

/// The nodata GDAL's netCDF driver gives a variable of attributes
/// `zattrs`: its `declared` `_FillValue`, else `missing_value`, else the
/// netCDF `default` fill.
pub(crate) fn netcdf_nodata(
    zattrs: &Map<String, Value>,
    declared: Option<&Value>,
    default: Option<&Value>,
) -> Option<Value> {
    let missing = match zattrs.get("missing_value") {
        Some(Value::Array(list)) => list.first().filter(|v| v.is_number()),
        Some(v) if v.is_number() => Some(v),
        _ => None,
    };
    declared.or(missing).or(default).cloned()
}

/// The `valid_range` filter of a netCDF variable of attributes `zattrs`,
/// `element`s and nodata `nodata`, as GDAL's netCDF driver applies its
/// valid range: `valid_range` (two values), else `valid_min` and
/// `valid_max` together; values of `_Unsigned` variables, bounds and
/// nodata in the unsigned domain; a bound equal to nodata unchecked; and
/// for floats, NaN shown as a nodata that is a number. `None` without
/// nodata, or without a range (for integers) or a number nodata (floats).
pub(crate) fn valid_range(
    zattrs: &Map<String, Value>,
    nodata: Option<&Value>,
    element: &Element,
) -> Option<Value> {
    let size = element.size;
    let first = |key: &str| match zattrs.get(key)? {
        Value::Array(list) => list.first()?.as_f64(),
        v => v.as_f64(),
    };
    let range = match zattrs.get("valid_range") {
        Some(Value::Array(pair)) if pair.len() == 2 => pair[0].as_f64().zip(pair[1].as_f64()),
        _ => first("valid_min").zip(first("valid_max")),
    };
    let nan = element.kind == Kind::Float
        && nodata
            .and_then(crate::base::dtype::json_number)
            .is_some_and(|v| !v.is_nan());
    if range.is_none() && !nan {
        return None;
    }
    let (min, max) = range.unwrap_or((f64::NAN, f64::NAN));
    let unsigned = zattrs
        .get("_Unsigned")
        .and_then(Value::as_str)
        .is_some_and(|u| u.eq_ignore_ascii_case("true"));
    let domain = |v: f64| match unsigned && v < 0.0 {
        true => v + 2f64.powi(8 * size as i32),
        false => v,
    };
    let nodata = domain(crate::base::dtype::json_number(nodata?)?);
    let bound = |v: f64| Some(domain(v)).filter(|&b| b != nodata && !b.is_nan());
    let mut codec = json!({
        "id": crate::codec::valid_range::NAME,
        "nodata": crate::base::dtype::fill_json(nodata),
    });
    if let Some(min) = bound(min) {
        codec["min"] = json!(min);
    }
    if let Some(max) = bound(max) {
        codec["max"] = json!(max);
    }
    if unsigned {
        codec["unsigned"] = json!(true);
    }
    if nan {
        codec["nan"] = json!(true);
    }
    Some(codec)
}

/// The dataset's shape; `None` for a null dataspace.
fn shape(dataset: hid_t, name: &str) -> Result<Option<Vec<u64>>> {
    let what = || format!("cannot read the shape of dataset '{name}'");
    // SAFETY: valid ids; `dims` holds 32 entries, HDF5's maximum rank.
    let space = Handle::new(unsafe { H5Dget_space(dataset) }, what)?;
    if unsafe { H5Sget_simple_extent_type(space.id()) } == H5S_class_t::H5S_NULL {
        return Ok(None);
    }
    let mut dims = [0u64; 32];
    let rank = check(
        unsafe { H5Sget_simple_extent_dims(space.id(), dims.as_mut_ptr(), std::ptr::null_mut()) },
        what,
    )?;
    Ok(Some(dims[..rank as usize].to_vec()))
}

/// The chunk shape of a chunked dataset of rank `rank`.
fn chunk_shape(dcpl: hid_t, rank: usize, name: &str) -> Result<Vec<u64>> {
    let mut dims = [0u64; 32];
    // SAFETY: `dims` holds 32 entries, HDF5's maximum rank.
    let what = || format!("cannot read the chunk shape of dataset '{name}'");
    let got = check(unsafe { H5Pget_chunk(dcpl, 32, dims.as_mut_ptr()) }, what)? as usize;
    if got != rank || dims[..rank].contains(&0) {
        return Err(malformed(format!(
            "{}: {got}-D chunks {:?} for a {rank}-D shape",
            what(),
            &dims[..got.min(32)]
        )));
    }
    Ok(dims[..rank].to_vec())
}

/// The dataset's filter pipeline, in the order HDF5 applies it on write.
fn pipeline(dcpl: hid_t, name: &str) -> Result<Vec<Filter>> {
    let what = || format!("cannot read the filters of dataset '{name}'");
    // SAFETY: valid property list id.
    let n = check(unsafe { H5Pget_nfilters(dcpl) }, what)?;
    (0..n as u32)
        .map(|i| {
            let (mut flags, mut nvalues, mut config) = (0u32, 16usize, 0u32);
            let mut values = [0u32; 16];
            let mut label = [0 as c_char; 256];
            // SAFETY: the buffers hold the sizes passed.
            let id = check(
                unsafe {
                    H5Pget_filter2(
                        dcpl,
                        i,
                        &mut flags,
                        &mut nvalues,
                        values.as_mut_ptr(),
                        label.len(),
                        label.as_mut_ptr(),
                        &mut config,
                    )
                },
                what,
            )?;
            // SAFETY: libhdf5 NUL-terminates the name within the buffer.
            let name = unsafe { CStr::from_ptr(label.as_ptr()) };
            Ok(Filter {
                id,
                name: name.to_string_lossy().into_owned(),
                values: values[..nvalues.min(16)].to_vec(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subdatasets_in_each_drivers_order() {
        use H5O_type_t::{H5O_TYPE_DATASET as D, H5O_TYPE_GROUP as G};
        // A walk of the file: root, variable z, group g (its a, b), x, y.
        let objects: Vec<(String, H5O_type_t)> = [
            (".", G),
            ("z", D),
            ("g", G),
            ("g/a", D),
            ("g/b", D),
            ("x", D),
            ("y", D),
        ]
        .into_iter()
        .map(|(n, k)| (n.to_string(), k))
        .collect();
        let rasters = ["z", "g/a", "g/b", "y"];
        assert_eq!(
            listing_order(&objects, &rasters, SourceDriver::NetCdf),
            ["z", "y", "g/a", "g/b"]
        );
        assert_eq!(
            listing_order(&objects, &rasters, SourceDriver::Hdf5),
            ["z", "g/a", "g/b", "y"]
        );
    }
}
