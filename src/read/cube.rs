//! The multidimensional view of a store, as GDAL's multidimensional API
//! shows it: groups, arrays with their dimensions as the store declares
//! them, indexing variables (the coordinate arrays the store holds; `x` and
//! `y` computed from a transform where it holds none; `time` from a time
//! stack's step datetimes) and attributes. Reads go through
//! [`crate::read::hyperslab`].

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::base::cf_time::TimeAxis;
use crate::base::dtype::{ByteOrder, DataType, ScalarKind};
use crate::conventions::attributes::NETCDF_DEFAULT_FILL_ATTRIBUTE;
use crate::conventions::attributes::{SourceDriver, DATETIME_ATTRIBUTE};
use crate::index::table::is_time_stack;
use crate::read::georef::band;
use crate::read::raster::Dataset;

/// The units of the `time` variable made for a time stack.
pub const STACK_TIME_UNITS: &str = "seconds since 1970-01-01 00:00:00";

/// Attributes the view leaves out of an array's: what GDAL shows through
/// other calls (nodata, unit, scale, offset), the dimension names, and
/// chunkref's own bookkeeping (`chunkref:*`).
const HIDDEN_ARRAY_ATTRIBUTES: [&str; 5] = [
    "_ARRAY_DIMENSIONS",
    "_FillValue",
    "units",
    "scale_factor",
    "add_offset",
];

/// Attributes the view leaves out of a group's (netCDF-4's hidden ones,
/// which GDAL's netCDF driver does not list, and the Zarr format's).
const HIDDEN_GROUP_ATTRIBUTES: [&str; 2] = ["_NCProperties", "zarr_conventions"];

/// One group: its path (`""` is the root) and attributes.
#[derive(Debug, Clone)]
pub struct Group {
    /// Path inside the store, `""` for the root.
    pub path: String,
    /// Attributes shown.
    pub attributes: Map<String, Value>,
}

/// What a dimension is along, as GDAL's `GDALDimension::GetType` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DimKind {
    /// Unknown.
    Other,
    /// Easting (projected, or computed from a transform).
    HorizontalX,
    /// Northing (projected, or computed from a transform).
    HorizontalY,
    /// Longitude.
    Longitude,
    /// Latitude.
    Latitude,
    /// Time.
    Temporal,
}

impl DimKind {
    /// GDAL's type and direction names (`""` when unknown): a direction
    /// for longitude and latitude only, as GDAL's netCDF driver gives.
    pub fn gdal_names(self) -> (&'static str, &'static str) {
        match self {
            DimKind::Other => ("", ""),
            DimKind::HorizontalX => ("HORIZONTAL_X", ""),
            DimKind::HorizontalY => ("HORIZONTAL_Y", ""),
            DimKind::Longitude => ("HORIZONTAL_X", "EAST"),
            DimKind::Latitude => ("HORIZONTAL_Y", "NORTH"),
            DimKind::Temporal => ("TEMPORAL", ""),
        }
    }
}

/// One dimension.
#[derive(Debug, Clone)]
pub struct Dim {
    /// The group it belongs to; for a dimension an array alone has, the
    /// array's path (its size differs from the group's of that name), or
    /// `""` (the array names no dimensions).
    pub scope: String,
    /// Whether the group lists it (false for an array's own dimension).
    pub listed: bool,
    /// Name.
    pub name: String,
    /// Size.
    pub size: u64,
    /// What it is along.
    pub kind: DimKind,
    /// Its indexing variable: an index into [`Cube::arrays`].
    pub indexing: Option<usize>,
}

/// Where an array's elements come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A stored array: an index into the store's arrays.
    Stored(usize),
    /// Values computed at open (float64), such as `x`/`y` from a transform.
    Values(Vec<f64>),
}

/// One array of the view.
#[derive(Debug, Clone)]
pub struct CubeArray {
    /// The group path (or, for an indexing variable made for an array's
    /// own dimension, that array's path).
    pub scope: String,
    /// Whether its group lists it.
    pub listed: bool,
    /// Name.
    pub name: String,
    /// Its dimensions: indices into [`Cube::dims`], slowest first.
    pub dims: Vec<usize>,
    /// Block size: the index's chunk shape.
    pub block: Vec<u64>,
    /// Element type (float64 for computed values).
    pub dtype: DataType,
    /// Nodata.
    pub nodata: Option<f64>,
    /// Scale (`scale_factor`).
    pub scale: Option<f64>,
    /// Offset (`add_offset`).
    pub offset: Option<f64>,
    /// Unit.
    pub unit: String,
    /// CRS definition for `SetFromUserInput`, and the dimensions (x, y) it
    /// places, as positions in `dims`.
    pub crs: Option<(String, [usize; 2])>,
    /// Attributes shown.
    pub attributes: Map<String, Value>,
    /// Where its elements come from.
    pub source: Source,
}

/// The whole view of a store.
#[derive(Debug, Clone, Default)]
pub struct Cube {
    /// Every group, parents before children.
    pub groups: Vec<Group>,
    /// Every dimension.
    pub dims: Vec<Dim>,
    /// Every array.
    pub arrays: Vec<CubeArray>,
    /// Non-fatal problems found (raised as warnings).
    pub warnings: Vec<String>,
}

/// The group path of a store path.
fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The last part of a store path.
fn leaf(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or_default()
}

/// What a dimension is along, from its indexing variable's `axis` and
/// `standard_name`, and in stores indexed from NetCDF files (`netcdf`) its
/// units too, longitude and latitude with a direction: as GDAL's netCDF
/// driver and its Zarr driver tell them.
fn kind_of(variable: &CubeArray, netcdf: bool) -> DimKind {
    let text = |k: &str| {
        variable
            .attributes
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let (axis, standard) = (text("axis").to_ascii_uppercase(), text("standard_name"));
    // GDAL's netCDF driver also goes by units; its Zarr driver does not.
    let units = if netcdf { variable.unit.as_str() } else { "" };
    let lon = standard == "longitude" || units.starts_with("degrees_east");
    let lat = standard == "latitude" || units.starts_with("degrees_north");
    match () {
        _ if lon && netcdf => DimKind::Longitude,
        _ if lat && netcdf => DimKind::Latitude,
        _ if lon || axis == "X" || standard == "projection_x_coordinate" => DimKind::HorizontalX,
        _ if lat || axis == "Y" || standard == "projection_y_coordinate" => DimKind::HorizontalY,
        _ if axis == "T" || standard == "time" || units.contains(" since ") => DimKind::Temporal,
        _ => DimKind::Other,
    }
}

impl Cube {
    /// The view of the store `ds` opened with [`Dataset::open_store`].
    pub fn of(ds: &Dataset) -> Cube {
        let index = &ds.index;
        let mut cube = Cube::default();
        // Groups: those with attributes and every parent of an array.
        let mut paths: BTreeSet<String> = index.groups.keys().cloned().collect();
        paths.insert(String::new());
        for a in &index.arrays {
            let mut g = parent(&a.meta.path);
            loop {
                paths.insert(g.to_string());
                if g.is_empty() {
                    break;
                }
                g = parent(g);
            }
        }
        cube.groups = paths
            .into_iter()
            .map(|path| {
                let mut attributes = index.groups.get(&path).cloned().unwrap_or_default();
                attributes.retain(|k, _| {
                    !k.starts_with("chunkref:") && !HIDDEN_GROUP_ATTRIBUTES.contains(&k.as_str())
                });
                Group { path, attributes }
            })
            .collect();
        // The stored arrays, then the indexing variables their dimensions
        // find among them.
        for a in ds.array_order() {
            let meta = &index.arrays[a].meta;
            let added = meta.added_axes;
            let info = band::info(meta, 0);
            // netCDF's default fill is the raster view's nodata (as GDAL's
            // netCDF raster driver gives it), no nodata of the array.
            let nodata = info
                .nodata
                .filter(|_| !meta.attributes.contains_key(NETCDF_DEFAULT_FILL_ATTRIBUTE));
            let mut attributes = meta.attributes.clone();
            attributes.retain(|k, _| {
                !k.starts_with("chunkref:") && !HIDDEN_ARRAY_ATTRIBUTES.contains(&k.as_str())
            });
            let name = match leaf(&meta.path) {
                "" => "array".to_string(),
                n => n.to_string(),
            };
            cube.arrays.push(CubeArray {
                scope: parent(&meta.path).to_string(),
                listed: true,
                name,
                dims: Vec::new(),
                block: meta.chunks[added..].to_vec(),
                dtype: DataType {
                    kind: band::served_kind(meta),
                    ..meta.dtype
                },
                nodata,
                scale: info.scale,
                offset: info.offset,
                unit: info.unit,
                crs: None,
                attributes,
                source: Source::Stored(a),
            });
        }
        for c in 0..cube.arrays.len() {
            if let Source::Stored(a) = cube.arrays[c].source {
                cube.add_dims(ds, c, a);
            }
        }
        cube
    }

    /// The stored 1-D array named `name` of `size` elements in group
    /// `group`, as an index into [`Cube::arrays`].
    fn variable(&self, group: &str, name: &str, size: u64, ds: &Dataset) -> Option<usize> {
        self.arrays.iter().position(|c| {
            let Source::Stored(s) = c.source else {
                return false;
            };
            let meta = &ds.index.arrays[s].meta;
            c.scope == group
                && c.name == name
                && meta.shape.len() - meta.added_axes == 1
                && meta.shape.last() == Some(&size)
        })
    }

    /// The dimension `name` of `size` elements of array `a` (of
    /// [`Cube::arrays`]) in its group: found there or in a parent holding
    /// its indexing variable, else made in its group (or for the array
    /// alone, when the group has one of that name and another size); a
    /// `name` with slashes is a path from the root.
    fn dim_for(&mut self, ds: &Dataset, a: usize, name: &str, size: u64) -> usize {
        // A name with slashes is the path of the dimension (as HDF5
        // dimension scales of sub-groups are recorded).
        let (group, name) = match name.rsplit_once('/') {
            Some((g, n)) => (g.trim_start_matches('/').to_string(), n),
            None => (self.arrays[a].scope.clone(), name),
        };
        let mut g = group.as_str();
        let (scope, indexing) = loop {
            if let Some(v) = self.variable(g, name, size, ds) {
                break (g.to_string(), Some(v));
            }
            if g.is_empty() {
                break (group.clone(), None);
            }
            g = parent(g);
        };
        let same = |d: &Dim| d.listed && d.scope == scope && d.name == name;
        if let Some(d) = self.dims.iter().position(|d| same(d) && d.size == size) {
            return d;
        }
        let own = self.dims.iter().any(same);
        let scope = match own {
            true => {
                let array = &self.arrays[a];
                match array.scope.as_str() {
                    "" => array.name.clone(),
                    s => format!("{s}/{}", array.name),
                }
            }
            false => scope,
        };
        let netcdf = ds
            .index
            .groups
            .get("")
            .and_then(SourceDriver::in_attributes)
            == Some(SourceDriver::NetCdf);
        let kind = indexing.map_or(DimKind::Other, |v| kind_of(&self.arrays[v], netcdf));
        self.dims.push(Dim {
            scope,
            listed: !own,
            name: name.to_string(),
            size,
            kind,
            indexing: indexing.filter(|_| !own),
        });
        self.dims.len() - 1
    }

    /// The dimensions of an array that names none: `dim0`, `dim1`, ... of
    /// that array alone, in no group (as GDAL's Zarr driver shows them).
    fn anonymous_dims(&mut self, shape: &[u64]) -> Vec<usize> {
        shape
            .iter()
            .enumerate()
            .map(|(d, &size)| {
                self.dims.push(Dim {
                    scope: String::new(),
                    listed: false,
                    name: format!("dim{d}"),
                    size,
                    kind: DimKind::Other,
                    indexing: None,
                });
                self.dims.len() - 1
            })
            .collect()
    }

    /// Gives array `c` (stored array `a`) its dimensions, CRS and the
    /// indexing variables computed for it (x/y from its transform, time
    /// from its steps).
    fn add_dims(&mut self, ds: &Dataset, c: usize, a: usize) {
        let meta = &ds.index.arrays[a].meta;
        let added = meta.added_axes;
        let shape = meta.shape[added..].to_vec();
        let dims: Vec<usize> = match &meta.dimension_names {
            Some(names) => names[added..]
                .iter()
                .zip(&shape)
                .map(|(name, &size)| self.dim_for(ds, c, name, size))
                .collect(),
            None => self.anonymous_dims(&shape),
        };
        self.arrays[c].dims = dims.clone();
        let rank = dims.len();
        if rank >= 2 {
            let mut warnings = Vec::new();
            let geo = ds.stored_georef(a, &mut warnings);
            self.warnings.extend(warnings);
            if let Some(crs) = geo.crs.clone() {
                self.arrays[c].crs = Some((crs, [rank - 1, rank - 2]));
            }
            if let Some(gt) = geo.transform.filter(|gt| gt[2] == 0.0 && gt[4] == 0.0) {
                let (dx, dy) = (dims[rank - 1], dims[rank - 2]);
                let roll = geo.axes.columns_rolled;
                let (w, h) = (shape[rank - 1], shape[rank - 2]);
                self.computed(dx, DimKind::HorizontalX, || {
                    (0..w)
                        .map(|c| {
                            let served = (c + w - roll % w.max(1)) % w.max(1);
                            gt[0] + (served as f64 + 0.5) * gt[1]
                        })
                        .collect()
                });
                self.computed(dy, DimKind::HorizontalY, || {
                    (0..h)
                        .map(|r| {
                            let served = if geo.axes.rows_reversed { h - 1 - r } else { r };
                            gt[3] + (served as f64 + 0.5) * gt[5]
                        })
                        .collect()
                });
            }
        }
        if is_time_stack(meta) {
            self.stack_time(ds, a, dims[0]);
        }
    }

    /// Makes the indexing variable of dimension `d` from `values` when it
    /// has none, and marks the dimension `kind`.
    fn computed(&mut self, d: usize, kind: DimKind, values: impl FnOnce() -> Vec<f64>) {
        if self.dims[d].indexing.is_some() {
            return;
        }
        self.dims[d].kind = kind;
        let dim = &self.dims[d];
        let values = values();
        self.arrays.push(CubeArray {
            scope: dim.scope.clone(),
            listed: dim.listed,
            name: dim.name.clone(),
            dims: vec![d],
            block: vec![dim.size],
            dtype: DataType {
                kind: ScalarKind::Float,
                size: 8,
                order: ByteOrder::Little,
            },
            nodata: None,
            scale: None,
            offset: None,
            unit: String::new(),
            crs: None,
            attributes: Map::new(),
            source: Source::Values(values),
        });
        self.dims[d].indexing = Some(self.arrays.len() - 1);
    }

    /// The `time` variable of a time stack's array `a` (dimension `d`),
    /// from its steps' datetimes, in [`STACK_TIME_UNITS`]; left out, with a
    /// warning naming the array and the step, when one does not parse.
    fn stack_time(&mut self, ds: &Dataset, a: usize, d: usize) {
        if self.dims[d].indexing.is_some() {
            return;
        }
        let meta = &ds.index.arrays[a].meta;
        let Some(Value::Array(steps)) = meta.attributes.get(DATETIME_ATTRIBUTE) else {
            return;
        };
        let Some(axis) = TimeAxis::new(STACK_TIME_UNITS, None) else {
            return;
        };
        let mut values = Vec::with_capacity(steps.len());
        for (i, step) in steps.iter().enumerate() {
            match step.as_str().and_then(|t| axis.value(t)) {
                Some(v) => values.push(v),
                None => {
                    self.warnings.push(format!(
                        "array '{}': the datetime {step} of time step {i} does not parse as \
                         ISO 8601: its time dimension has no indexing variable",
                        meta.path
                    ));
                    return;
                }
            }
        }
        if values.len() as u64 != self.dims[d].size {
            return;
        }
        self.computed(d, DimKind::Temporal, || values);
        let time = self.arrays.len() - 1;
        let attributes = &mut self.arrays[time].attributes;
        attributes.insert("standard_name".into(), "time".into());
        attributes.insert("calendar".into(), "proleptic_gregorian".into());
        self.arrays[time].unit = STACK_TIME_UNITS.to_string();
    }
}
