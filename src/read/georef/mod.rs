//! Georeferencing of the levels of a dataset: a GDAL geotransform and a CRS
//! definition (anything `OGRSpatialReference::SetFromUserInput` accepts),
//! read from the conventions an index may carry.
//!
//! Geotransform, first found wins (per level array):
//! 1. `spatial:transform` (Affine order, `spatial:registration` "node"
//!    shifted by half a pixel), else `spatial:bbox` over the array's shape;
//!    looked up on the `multiscales.layout` entry, the array, then its
//!    parent groups (overview levels do not inherit these from the
//!    multiscale group or above, which describe level 0);
//! 2. regular 1-D coordinate arrays named after the (y, x) dimensions
//!    ([`coords`]); irregular ones become GDAL's `GEOLOCATION` domain
//!    instead, when nothing below gives a transform;
//! 3. the CF `grid_mapping` variable's `GeoTransform` ([`cf`]: GDAL's
//!    netCDF driver takes it only when the coordinates give none), else
//!    the GeoTIFF tags a TIFF reader recorded as attributes ([`geotiff`]);
//! 4. the level's tile matrix of `multiscales.tile_matrix_set` ([`tms`]);
//! 5. for overview levels, the level it is `derived_from` (level 0 when not
//!    named) scaled by the layout entry's `transform.scale` and shifted by
//!    `transform.translation`, else by the ratio of the level sizes.
//!
//! CRS, first found wins: `proj:code`, `proj:wkt2`, `proj:projjson` (same
//! lookup as above, inherited from every parent group); GDAL's `_CRS`
//! attribute (`url`, `wkt`, `projjson`); the `grid_mapping` variable
//! (`crs_wkt`, `spatial_ref`, CF grid-mapping parameters); the EPSG code of
//! recorded GeoTIFF keys; the tile matrix set's `crs`.
//!
//! Rational polynomial coefficients travel as [`RPC_ATTRIBUTE`] on the
//! full-resolution array, served as GDAL's `RPC` metadata domain.

pub mod band;
pub mod cf;
pub mod coords;
pub mod dims;
pub mod geotiff;
pub mod netcdf_axes;
pub mod orientation;
pub mod tms;

use serde_json::{Map, Value};

use crate::conventions::attributes::SourceDriver;
use crate::conventions::attributes::ANTIMERIDIAN_COLUMN_ATTRIBUTE;
use crate::index::{Array, Index};
use crate::read::axes::AxisMap;
use crate::read::chunk::Locations;
use orientation::YOrder;

/// Georeferencing of one level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Georef {
    /// GDAL geotransform `[x0, dx, rx, y0, ry, dy]` of pixel corners.
    pub transform: Option<[f64; 6]>,
    /// CRS definition for `SetFromUserInput` (WKT, PROJJSON, `EPSG:n`, URL, PROJ string).
    pub crs: Option<String>,
    /// Paths of irregular 1-D coordinate arrays `[x, y]`, when they take
    /// the place of a transform (served as GDAL's `GEOLOCATION` domain).
    pub geolocation: Option<[String; 2]>,
    /// GDAL's `AREA_OR_POINT` (`Area` or `Point`), from an explicit
    /// `spatial:registration` (`pixel` or `node`) of the level.
    pub area_or_point: Option<&'static str>,
    /// How the served plane (the one `transform` places) maps to the
    /// stored one: see [`orientation`].
    pub axes: AxisMap,
}

impl Georef {
    /// True when neither a transform, geolocation arrays nor a CRS was found.
    pub fn is_empty(&self) -> bool {
        self.transform.is_none() && self.crs.is_none() && self.geolocation.is_none()
    }
}

/// GDAL's `GEOLOCATION` domain for coordinate arrays `[x, y]` of the index
/// read from `source`: each array opens as a one-row ChunkRef dataset
/// (`CHUNKREF:"source":path`), values at pixel centres, the CRS if known.
pub fn geolocation_items(source: &str, paths: &[String; 2], crs: Option<&str>) -> Vec<String> {
    let [x, y] = paths;
    let mut items = vec![
        format!("X_DATASET=CHUNKREF:\"{source}\":{x}"),
        "X_BAND=1".to_string(),
        format!("Y_DATASET=CHUNKREF:\"{source}\":{y}"),
        "Y_BAND=1".to_string(),
        "PIXEL_OFFSET=0".to_string(),
        "PIXEL_STEP=1".to_string(),
        "LINE_OFFSET=0".to_string(),
        "LINE_STEP=1".to_string(),
        "GEOREFERENCING_CONVENTION=PIXEL_CENTER".to_string(),
    ];
    if let Some(crs) = crs {
        items.push(format!("SRS={crs}"));
    }
    items
}

/// The multiscale group a dataset's levels come from.
#[derive(Debug, Clone, Copy)]
pub struct Pyramid<'a> {
    /// Group path (`""` for the root).
    pub group: &'a str,
    /// Its `multiscales` attribute.
    pub multiscales: &'a Value,
}

/// One level to georeference.
#[derive(Debug, Clone, Copy)]
pub struct LevelRef<'a> {
    /// The level's array.
    pub array: &'a Array,
    /// Asset name of the level in its pyramid (`r20m`, `1`), if any.
    pub asset: Option<&'a str>,
    /// The level's `multiscales.layout` entry, if any.
    pub entry: Option<&'a Map<String, Value>>,
}

/// Converts an Affine `[a, b, c, d, e, f]` to GDAL order `[c, a, b, f, d, e]`.
pub fn affine_to_gdal(t: [f64; 6]) -> [f64; 6] {
    [t[2], t[0], t[1], t[5], t[3], t[4]]
}

/// Shifts a transform of pixel centres (PixelIsPoint, "node") to pixel corners.
pub fn node_to_corner(gt: [f64; 6]) -> [f64; 6] {
    [
        gt[0] - 0.5 * gt[1] - 0.5 * gt[2],
        gt[1],
        gt[2],
        gt[3] - 0.5 * gt[4] - 0.5 * gt[5],
        gt[4],
        gt[5],
    ]
}

/// (height, width) of an array's last two axes.
pub fn yx_size(array: &Array) -> (u64, u64) {
    let s = &array.meta.shape;
    let n = s.len();
    (s[n.saturating_sub(2)], s[n.saturating_sub(1)])
}

/// Attribute maps searched in order, most specific first.
struct Scope<'a>(Vec<&'a Map<String, Value>>);

impl<'a> Scope<'a> {
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.0.iter().find_map(|m| m.get(key))
    }
}

/// Parent group paths of `path`, nearest first, ending with the root `""`.
fn parents(path: &str) -> impl Iterator<Item = &str> {
    let mut cur = Some(path);
    std::iter::from_fn(move || {
        let p = cur?;
        let parent = p.rfind('/').map_or("", |i| &p[..i]);
        cur = (!p.is_empty()).then_some(parent);
        cur
    })
}

/// The store paths a CF variable reference made from the array at
/// `array_path` may name, in the order to try them (CF 1.8 groups, section
/// 2.7): an absolute path (`/crs`) names one variable from the root; a
/// relative path (`../crs`, `sub/crs`) one from the array's group; a bare
/// name (`crs`) the variable of that name in the array's group or the
/// nearest parent group holding one. `None` for a path that climbs above
/// the root or names no variable.
fn cf_reference_paths(array_path: &str, reference: &str) -> Option<Vec<String>> {
    if !reference.contains('/') {
        return Some(
            parents(array_path)
                .map(|g| match g.is_empty() {
                    true => reference.to_string(),
                    false => format!("{g}/{reference}"),
                })
                .collect(),
        );
    }
    let (mut parts, rest): (Vec<&str>, &str) = match reference.strip_prefix('/') {
        Some(absolute) => (Vec::new(), absolute),
        None => (parents(array_path).next()?.split('/').collect(), reference),
    };
    parts.retain(|p| !p.is_empty());
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            name => parts.push(name),
        }
    }
    (!parts.is_empty() && !rest.ends_with('/')).then(|| vec![parts.join("/")])
}

/// The array a CF variable reference (a `grid_mapping` or `coordinates`
/// entry) made from `array` names; see [`cf_reference_paths`].
fn cf_variable<'a>(index: &'a Index, array: &Array, reference: &str) -> Option<&'a Array> {
    cf_reference_paths(&array.meta.path, reference)?
        .iter()
        .find_map(|path| index.array(path))
}

/// The attributes (`.zattrs`) of an array the driver leaves out
/// ([`Index::skipped`]) that a CF variable reference made from `array`
/// names; see [`cf_reference_paths`].
fn skipped_cf_variable_attributes<'a>(
    index: &'a Index,
    array: &Array,
    reference: &str,
) -> Option<&'a Map<String, Value>> {
    cf_reference_paths(&array.meta.path, reference)?
        .iter()
        .filter(|path| index.skipped.contains_key(path.as_str()))
        .find_map(|path| {
            let docs = &index.metadata;
            docs.get(&format!("{path}/.zattrs"))
                .and_then(Value::as_object)
                .or_else(|| {
                    docs.get(&format!("{path}/zarr.json"))?
                        .get("attributes")?
                        .as_object()
                })
        })
}

/// True when group `g` is `b` or one of its parents.
fn is_ancestor_or_self(g: &str, b: &str) -> bool {
    g.is_empty() || g == b || b.strip_prefix(g).is_some_and(|r| r.starts_with('/'))
}

/// The entry, the array and its groups; `below` stops before that group
/// (and its parents) when given.
fn scope<'a>(index: &'a Index, level: &LevelRef<'a>, below: Option<&str>) -> Scope<'a> {
    let mut maps: Vec<&Map<String, Value>> = level.entry.into_iter().collect();
    maps.push(&level.array.meta.attributes);
    for g in parents(&level.array.meta.path) {
        if below.is_some_and(|b| is_ancestor_or_self(g, b)) {
            break;
        }
        if let Some(attrs) = index.groups.get(g) {
            maps.push(attrs);
        }
    }
    Scope(maps)
}

fn f64_list(v: &Value) -> Option<Vec<f64>> {
    v.as_array()?.iter().map(Value::as_f64).collect()
}

/// Geotransform from `spatial:` attributes.
fn spatial_transform(scope: &Scope<'_>, (h, w): (u64, u64)) -> Option<[f64; 6]> {
    let node = scope.get("spatial:registration").and_then(Value::as_str) == Some("node");
    if let Some(t) = scope.get("spatial:transform").and_then(f64_list) {
        let t: [f64; 6] = t.try_into().ok()?;
        let gt = affine_to_gdal(t);
        return Some(if node { node_to_corner(gt) } else { gt });
    }
    let b = scope.get("spatial:bbox").and_then(f64_list)?;
    let [xmin, ymin, xmax, ymax]: [f64; 4] = b.try_into().ok()?;
    let (cols, rows) = if node {
        (w.saturating_sub(1) as f64, h.saturating_sub(1) as f64)
    } else {
        (w as f64, h as f64)
    };
    if cols <= 0.0 || rows <= 0.0 {
        return None;
    }
    let gt = [
        xmin,
        (xmax - xmin) / cols,
        0.0,
        ymax,
        0.0,
        -(ymax - ymin) / rows,
    ];
    Some(if node { node_to_corner(gt) } else { gt })
}

/// CRS from `proj:` attributes: `proj:code`, `proj:wkt2`, `proj:projjson`.
fn proj_crs(scope: &Scope<'_>) -> Option<String> {
    cf::crs_choice(
        scope.get("proj:code").and_then(Value::as_str),
        scope.get("proj:wkt2").and_then(Value::as_str),
        scope.get("proj:projjson"),
    )
}

/// Georeferences every level, south-up grids served in `y_order`;
/// `warnings` receives what could not be used.
pub fn levels(
    index: &Index,
    locations: &Locations,
    pyramid: Option<Pyramid<'_>>,
    levels: &[LevelRef<'_>],
    y_order: YOrder,
    warnings: &mut Vec<String>,
) -> Vec<Georef> {
    let point_geo_ignore = geotiff::point_geo_ignore();
    let mut out: Vec<Georef> = levels
        .iter()
        .enumerate()
        .map(|(i, level)| {
            let below = pyramid.filter(|_| i > 0).map(|p| p.group);
            let own = scope(index, level, below);
            let all = scope(index, level, None);
            let size = yx_size(level.array);
            let driver = SourceDriver::of(&level.array.meta);
            // GDAL's HDF5 driver reads no CF grid mapping.
            let gm = (driver != Some(SourceDriver::Hdf5))
                .then(|| cf::grid_mapping(index, level.array))
                .flatten();
            let tile = pyramid.and_then(|p| tms::level(p.multiscales, level.asset?, warnings));
            let tags = geotiff::from_attributes(|k| own.get(k), point_geo_ignore);
            let mut geolocation = None;
            let mut from_coordinates = false;
            // The units of the coordinates GDAL's netCDF driver places a
            // grid with (those of a CF projection).
            let units = coordinates_place(index, level.array, driver)
                .then(|| netcdf_axes::shared_units(index, level.array))
                .flatten();
            // GDAL's netCDF driver serves swapped axes as stored.
            let swapped =
                driver == Some(SourceDriver::NetCdf) && netcdf_axes::swapped(index, level.array);
            let transform = spatial_transform(&own, size)
                .or_else(|| {
                    if !coordinates_place(index, level.array, driver) {
                        return None;
                    }
                    match coords::grid(index, locations, level.array, warnings)? {
                        coords::Grid::Regular(gt) => {
                            from_coordinates = true;
                            Some(gt)
                        }
                        coords::Grid::Irregular(paths) => {
                            geolocation = Some(paths);
                            None
                        }
                    }
                })
                .or_else(|| gm.and_then(cf::geotransform))
                .or_else(|| tags.as_ref().and_then(|t| t.transform))
                .or_else(|| tile.as_ref().and_then(|t| t.transform));
            if transform.is_some() {
                geolocation = None;
            }
            let (axes, transform) = match transform {
                Some(gt) if from_coordinates => {
                    let order = match driver {
                        Some(SourceDriver::NetCdf) if swapped => YOrder::Stored,
                        Some(SourceDriver::NetCdf) => y_order,
                        _ if coords::y_is_cf_coordinate(index, level.array) => y_order,
                        _ => YOrder::Stored,
                    };
                    let (axes, gt) = orientation::from_coordinates(
                        gt,
                        size,
                        !swapped && coords::x_is_longitude(index, level.array),
                        is_grib(level.array),
                        order,
                    );
                    (axes, Some(gt))
                }
                Some(gt) => match antimeridian_column(level.array) {
                    Some(column) => {
                        let (axes, gt) = orientation::split(gt, column);
                        (axes, Some(gt))
                    }
                    None => (AxisMap::default(), Some(gt)),
                },
                // GDAL's netCDF driver serves a grid nothing places
                // bottom-up, as netCDF grids are by convention.
                None if driver == Some(SourceDriver::NetCdf)
                    && !swapped
                    && geolocation.is_none()
                    && y_order == YOrder::NorthUp =>
                {
                    let axes = AxisMap {
                        rows_reversed: true,
                        columns_rolled: 0,
                    };
                    (axes, None)
                }
                None => (AxisMap::default(), None),
            };
            let crs = proj_crs(&all)
                .or_else(|| cf::gdal_crs(&level.array.meta.attributes))
                .or_else(|| gm.and_then(|g| cf::crs(g, units.as_deref())))
                .or_else(|| {
                    (driver != Some(SourceDriver::Hdf5))
                        .then(|| cf::variable_crs(&level.array.meta.attributes))
                        .flatten()
                })
                .or_else(|| geotiff::from_attributes(|k| all.get(k), point_geo_ignore)?.crs)
                .or_else(|| tile.and_then(|t| t.crs));
            let area_or_point = match own.get("spatial:registration").and_then(Value::as_str) {
                Some("node") => Some("Point"),
                Some("pixel") => Some("Area"),
                _ => tags.and_then(|t| t.area_or_point),
            };
            Georef {
                transform,
                crs,
                geolocation,
                area_or_point,
                axes,
            }
        })
        .collect();
    derive_overviews(levels, &mut out);
    out
}

/// Whether 1-D coordinate arrays may place `array`, served by `driver`:
/// never by GDAL's HDF5 driver (dimension scales place nothing), only x
/// and y coordinates it recognises by GDAL's netCDF driver
/// ([`netcdf_axes::places`]).
fn coordinates_place(index: &Index, array: &Array, driver: Option<SourceDriver>) -> bool {
    match driver {
        Some(SourceDriver::Hdf5) => false,
        Some(SourceDriver::NetCdf) => netcdf_axes::places(index, array),
        None => true,
    }
}

/// Whether `array`'s chunks are whole GRIB messages (chunkref's `grib2`
/// codec, kerchunk's `grib`).
fn is_grib(array: &Array) -> bool {
    let names = array.meta.codecs.names();
    names.contains(&"grib") || names.contains(&"grib2")
}

/// The stored column GDAL's GRIB driver serves first, recorded by `chunkref
/// index` ([`ANTIMERIDIAN_COLUMN_ATTRIBUTE`]), when it is in
/// the array and `GRIB_ADJUST_LONGITUDE_RANGE` is not off.
fn antimeridian_column(array: &Array) -> Option<u64> {
    let column = array
        .meta
        .attributes
        .get(ANTIMERIDIAN_COLUMN_ATTRIBUTE)?
        .as_u64()?;
    (column < yx_size(array).1 && orientation::grib_adjusts_longitudes()).then_some(column)
}

/// Fills the transforms of overview levels from the level they derive from.
fn derive_overviews(levels: &[LevelRef<'_>], out: &mut [Georef]) {
    for i in 1..levels.len() {
        if out[i].transform.is_some() {
            continue;
        }
        // Walk derived_from to a level with a transform, composing scales.
        let mut scale = [1.0f64, 1.0];
        let mut shift = [0.0f64, 0.0];
        let mut cur = i;
        let mut found = None;
        for _ in 0..levels.len() {
            let entry = levels[cur].entry;
            let rel = entry.and_then(|e| e.get("transform"));
            let parent = entry
                .and_then(|e| e.get("derived_from"))
                .and_then(Value::as_str)
                .and_then(|d| levels.iter().position(|l| l.asset == Some(d)));
            let (Some(p), Some(rel)) = (parent, rel) else {
                break;
            };
            let s = rel.get("scale").and_then(f64_list).unwrap_or_default();
            let t = rel
                .get("translation")
                .and_then(f64_list)
                .unwrap_or_default();
            let n = s.len();
            if n >= 2 {
                scale = [scale[0] * s[n - 1], scale[1] * s[n - 2]];
            }
            let m = t.len();
            if m >= 2 {
                shift = [shift[0] + t[m - 1], shift[1] + t[m - 2]];
            }
            if let Some(gt) = out[p].transform {
                found = Some((gt, p));
                break;
            }
            cur = p;
        }
        let (gt, scale, from) = match found {
            Some((gt, p)) => (gt, scale, p),
            None => {
                // No usable chain: keep the extent of level 0.
                let Some(gt) = out[0].transform else { continue };
                let (h0, w0) = yx_size(levels[0].array);
                let (h, w) = yx_size(levels[i].array);
                shift = [0.0, 0.0];
                (gt, [w0 as f64 / w as f64, h0 as f64 / h as f64], 0)
            }
        };
        // The overview is stored as the level it derives from: served the
        // same way (a roll scaled to its width).
        let axes = out[from].axes;
        let (w_from, w) = (yx_size(levels[from].array).1, yx_size(levels[i].array).1);
        out[i].axes = AxisMap {
            rows_reversed: axes.rows_reversed,
            columns_rolled: (axes.columns_rolled * w).checked_div(w_from).unwrap_or(0),
        };
        out[i].transform = Some([
            gt[0] + shift[0],
            gt[1] * scale[0],
            gt[2] * scale[1],
            gt[3] + shift[1],
            gt[4] * scale[0],
            gt[5] * scale[1],
        ]);
    }
}

/// True when a level of `size` (height, width) with `gt` covers the extent
/// of the base level within one of the level's pixels, as GDAL assumes of
/// overviews.
pub fn same_extent(base: [f64; 6], base_size: (u64, u64), gt: [f64; 6], size: (u64, u64)) -> bool {
    let corner = |g: [f64; 6], (h, w): (u64, u64)| {
        let (c, r) = (w as f64, h as f64);
        [
            g[0],
            g[3],
            g[0] + c * g[1] + r * g[2],
            g[3] + c * g[4] + r * g[5],
        ]
    };
    let a = corner(base, base_size);
    let b = corner(gt, size);
    let tol_x = gt[1].abs() + gt[2].abs();
    let tol_y = gt[4].abs() + gt[5].abs();
    (a[0] - b[0]).abs() <= tol_x
        && (a[2] - b[2]).abs() <= tol_x
        && (a[1] - b[1]).abs() <= tol_y
        && (a[3] - b[3]).abs() <= tol_y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cf_references_absolute_relative_and_searched_upward() {
        let paths = |a: &str, r: &str| cf_reference_paths(a, r);
        assert_eq!(
            paths("forecast/gust", "crs").unwrap(),
            ["forecast/crs", "crs"]
        );
        assert_eq!(paths("gust", "crs").unwrap(), ["crs"]);
        assert_eq!(paths("forecast/gust", "/crs").unwrap(), ["crs"]);
        assert_eq!(paths("a/b/gust", "/a/crs").unwrap(), ["a/crs"]);
        assert_eq!(paths("a/b/gust", "../crs").unwrap(), ["a/crs"]);
        assert_eq!(paths("a/b/gust", "./m/crs").unwrap(), ["a/b/m/crs"]);
        assert_eq!(paths("gust", "../crs"), None, "above the root");
        assert_eq!(paths("gust", "/"), None);
        assert_eq!(paths("gust", "/grids/"), None);
    }

    #[test]
    fn affine_order_and_node_shift() {
        let gt = affine_to_gdal([10.0, 0.0, 500000.0, 0.0, -10.0, 5000000.0]);
        assert_eq!(gt, [500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0]);
        assert_eq!(
            node_to_corner(gt),
            [499995.0, 10.0, 0.0, 5000005.0, 0.0, -10.0]
        );
    }

    #[test]
    fn parent_groups() {
        assert_eq!(parents("a/b/c").collect::<Vec<_>>(), vec!["a/b", "a", ""]);
        assert_eq!(parents("c").collect::<Vec<_>>(), vec![""]);
    }

    #[test]
    fn extent_tolerates_one_level_pixel() {
        let base = [500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0];
        let r720 = [500000.0, 720.0, 0.0, 5000000.0, 0.0, -720.0];
        assert!(same_extent(base, (10980, 10980), r720, (153, 153)));
        let wrong = [500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0];
        assert!(!same_extent(base, (1094, 1094), wrong, (547, 547)));
    }

    /// A v2 index of a multiscale root with `layout` and three levels
    /// (`a` 100x60, `b` = a/2, `c` = b/3 with 34x20 pixels).
    fn pyramid(layout: &str, root_extra: &str) -> Index {
        let arr = |h: u32, w: u32| {
            serde_json::json!({"shape": [h, w], "chunks": [10, 10], "dtype": "|u1",
                "fill_value": 0, "compressor": null, "filters": null, "zarr_format": 2})
            .to_string()
        };
        let root = format!(r#"{{"multiscales": {{"layout": {layout}}} {root_extra}}}"#);
        let doc = serde_json::json!({
            ".zgroup": r#"{"zarr_format": 2}"#, ".zattrs": root,
            "a/.zarray": arr(60, 100), "b/.zarray": arr(30, 50), "c/.zarray": arr(10, 17)});
        Index::from_kerchunk_json("t.json", doc.to_string().as_bytes(), &[]).unwrap()
    }

    fn georef_levels(index: &Index) -> (Vec<Georef>, Vec<String>) {
        let ms = index.groups[""].get("multiscales").unwrap();
        let layout = ms["layout"].as_array().unwrap();
        let refs: Vec<LevelRef<'_>> = ["a", "b", "c"]
            .iter()
            .zip(layout)
            .map(|(p, e)| LevelRef {
                array: index.array(p).unwrap(),
                asset: e["asset"].as_str(),
                entry: e.as_object(),
            })
            .collect();
        let settings = crate::io::config::Settings::from_lookup(|_| None).unwrap();
        let base = crate::io::resolve::Base::Dir("/".into());
        let locations = Locations::resolve(index, &base, &settings);
        let pyramid = Pyramid {
            group: "",
            multiscales: ms,
        };
        let mut warnings = Vec::new();
        let g = levels(
            index,
            &locations,
            Some(pyramid),
            &refs,
            YOrder::default(),
            &mut warnings,
        );
        (g, warnings)
    }

    #[test]
    fn derived_from_chain_with_root_georeferencing() {
        let index = pyramid(
            r#"[{"asset": "a"},
                {"asset": "b", "derived_from": "a", "transform": {"scale": [2, 2], "translation": [0, 0]}},
                {"asset": "c", "derived_from": "b", "transform": {"scale": [3, 3]}}]"#,
            r#", "proj:code": "EPSG:32633", "spatial:transform": [10, 0, 500000, 0, -10, 5000000]"#,
        );
        let (g, w) = georef_levels(&index);
        assert!(w.is_empty(), "{w:?}");
        let gt = |px: f64| Some([500000.0, px, 0.0, 5000000.0, 0.0, -px]);
        assert_eq!(
            g.iter().map(|g| g.transform).collect::<Vec<_>>(),
            vec![gt(10.0), gt(20.0), gt(60.0)]
        );
        assert!(g.iter().all(|g| g.crs.as_deref() == Some("EPSG:32633")));
        // 17 pixels of 60 m cover level a's 1000 m within one pixel.
        assert!(same_extent(
            gt(10.0).unwrap(),
            (60, 100),
            g[2].transform.unwrap(),
            (10, 17)
        ));
    }

    #[test]
    fn layout_entry_overrides_and_node_registration() {
        let index = pyramid(
            r#"[{"asset": "a", "spatial:transform": [1, 0, 0, 0, -1, 60], "spatial:registration": "node"},
                {"asset": "b", "spatial:transform": [2, 0, 0, 0, -2, 60]},
                {"asset": "c"}]"#,
            r#", "spatial:transform": [10, 0, 500000, 0, -10, 5000000]"#,
        );
        let (g, _) = georef_levels(&index);
        assert_eq!(g[0].transform, Some([-0.5, 1.0, 0.0, 60.5, 0.0, -1.0]));
        assert_eq!(g[1].transform, Some([0.0, 2.0, 0.0, 60.0, 0.0, -2.0]));
        // No chain: level c keeps level a's extent.
        let c = g[2].transform.unwrap();
        assert_eq!((c[1], c[5]), (100.0 / 17.0, -6.0));
        assert_eq!(g[0].crs, None);
    }

    #[test]
    fn bbox_over_shape() {
        let attrs: Map<String, Value> = serde_json::from_str(
            r#"{"spatial:bbox": [0, 0, 100, 50], "spatial:registration": "node"}"#,
        )
        .unwrap();
        let s = Scope(vec![&attrs]);
        assert_eq!(
            spatial_transform(&s, (6, 11)),
            Some([-5.0, 10.0, 0.0, 55.0, 0.0, -10.0])
        );
    }
}
