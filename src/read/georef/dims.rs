//! The non-spatial dimensions of a raster (its bands' axes) as GDAL's
//! netCDF driver shows them, and the datetimes of CF time coordinates.
//!
//! When one of them has a 1-D coordinate array (the netCDF / xarray
//! layout), every band carries `NETCDF_VARNAME` and, per dimension,
//! `NETCDF_DIM_<name>`: the coordinate value printed as GDAL 3.6 prints it
//! (`%.16g` for doubles, `%.8g` for floats, integers as integers), or the
//! 1-based index for a dimension without a coordinate array. The dataset
//! carries `NETCDF_DIM_EXTRA={<name>,...}` (every such dimension, slowest
//! first), `NETCDF_DIM_<name>_DEF={<length>,<netCDF type>}`,
//! `NETCDF_DIM_<name>_VALUES={<v>,...}` and the coordinate arrays'
//! attributes as `<name>#<attribute>` (`time#units`, `time#calendar`),
//! as it also shows every variable's (`sst#units`, `x#standard_name`) and
//! the root group's (`NC_GLOBAL#title`), values printed as it prints them
//! (numbers `%.16g`, lists `{a,b}`).
//!
//! A coordinate whose `units` are `"<unit> since <reference>"` in a
//! calendar [`TimeAxis`] knows also gives each band `DIM_<name>_ISO`, its
//! value as an ISO 8601 datetime (as cftime decodes it); other coordinates
//! and values that do not decode keep the raw value only.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::base::cf_time::TimeAxis;
use crate::base::dtype::ScalarKind;
use crate::base::printf;
use crate::index::zarr::ArrayMeta;

/// A 1-D coordinate array of a non-spatial dimension, as metadata shows it.
#[derive(Debug)]
pub struct Coordinate {
    /// Each value as GDAL's netCDF driver prints it.
    texts: Vec<String>,
    /// Each value as an ISO 8601 datetime (empty: not a CF time coordinate).
    datetimes: Vec<Option<String>>,
    /// The netCDF type code of the array's element type (`NC_DOUBLE` = 6 ...).
    nc_type: Option<u8>,
    /// The array's attributes (`_ARRAY_DIMENSIONS` left out).
    attributes: Map<String, Value>,
}

impl Coordinate {
    /// The coordinate array `meta` holding `values`.
    pub fn new(meta: &ArrayMeta, values: &[f64]) -> Coordinate {
        let kind = meta.dtype.kind;
        let text = |v: f64| match (kind, meta.dtype.size) {
            (ScalarKind::Float, 8) => printf::g(v, 16),
            (ScalarKind::Float, _) => printf::g(v, 8),
            // Integers (exact: 64-bit ones up to 2^53).
            _ => format!("{}", v as i128),
        };
        let attr = |k: &str| meta.attributes.get(k).and_then(Value::as_str);
        let axis = attr("units").and_then(|u| TimeAxis::new(u, attr("calendar")));
        let datetimes = match axis {
            Some(axis) => values.iter().map(|&v| axis.iso(v)).collect(),
            None => Vec::new(),
        };
        let nc_type = match (kind, meta.dtype.size) {
            (ScalarKind::Int, 1) => Some(1),
            (ScalarKind::Int, 2) => Some(3),
            (ScalarKind::Int, 4) => Some(4),
            (ScalarKind::Float, 4) => Some(5),
            (ScalarKind::Float, 8) => Some(6),
            (ScalarKind::UInt, 1) => Some(7),
            (ScalarKind::UInt, 2) => Some(8),
            (ScalarKind::UInt, 4) => Some(9),
            (ScalarKind::Int, 8) => Some(10),
            (ScalarKind::UInt, 8) => Some(11),
            _ => None,
        };
        let mut attributes = meta.attributes.clone();
        attributes.remove("_ARRAY_DIMENSIONS");
        Coordinate {
            texts: values.iter().map(|&v| text(v)).collect(),
            datetimes,
            nc_type,
            attributes,
        }
    }
}

/// A non-spatial dimension of a raster.
#[derive(Debug, Clone)]
pub struct Dimension {
    /// Its name.
    pub name: String,
    /// Its length.
    pub len: u64,
    /// Its coordinate array, if it has one that could be read.
    pub coordinate: Option<Arc<Coordinate>>,
}

/// Whether GDAL's netCDF view applies: some dimension has a coordinate.
fn netcdf_like(dims: &[Dimension]) -> bool {
    dims.iter().any(|d| d.coordinate.is_some())
}

/// The dataset items of `dims` (the raster's non-spatial dimensions,
/// slowest first): `NETCDF_DIM_EXTRA`, `NETCDF_DIM_<name>_DEF`,
/// `NETCDF_DIM_<name>_VALUES` and `<name>#<attribute>`, with the
/// attributes of `variables` (name, attributes) as `<name>#<attribute>`
/// and `globals` as `NC_GLOBAL#<attribute>`; none unless some dimension
/// has a coordinate array.
pub fn dataset_metadata(
    dims: &[Dimension],
    variables: &[(String, Map<String, Value>)],
    globals: &Map<String, Value>,
) -> Map<String, Value> {
    let mut items = Map::new();
    if !netcdf_like(dims) {
        return items;
    }
    let shown = |(k, _): &(&String, &Value)| k.as_str() != "_ARRAY_DIMENSIONS";
    for (k, v) in globals.iter().filter(shown) {
        items.insert(format!("NC_GLOBAL#{k}"), attribute_text(v).into());
    }
    for (name, attrs) in variables {
        for (k, v) in attrs.iter().filter(shown) {
            items.insert(format!("{name}#{k}"), attribute_text(v).into());
        }
    }
    let names: Vec<&str> = dims.iter().map(|d| d.name.as_str()).collect();
    items.insert(
        "NETCDF_DIM_EXTRA".into(),
        format!("{{{}}}", names.join(",")).into(),
    );
    for d in dims {
        let Some(c) = &d.coordinate else { continue };
        if let Some(t) = c.nc_type {
            items.insert(
                format!("NETCDF_DIM_{}_DEF", d.name),
                format!("{{{},{t}}}", d.len).into(),
            );
        }
        items.insert(
            format!("NETCDF_DIM_{}_VALUES", d.name),
            format!("{{{}}}", c.texts.join(",")).into(),
        );
        for (k, v) in &c.attributes {
            items.insert(format!("{}#{k}", d.name), attribute_text(v).into());
        }
    }
    items
}

/// An attribute value as GDAL's netCDF driver prints it: text as it is,
/// integers as integers, other numbers `%.16g`, lists `{a,b}`.
pub fn attribute_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_i64() || n.is_u64() => n.to_string(),
        Value::Number(n) => n
            .as_f64()
            .map_or_else(|| n.to_string(), |f| printf::g(f, 16)),
        Value::Bool(b) => u8::from(*b).to_string(),
        Value::Array(items) => {
            let texts: Vec<String> = items.iter().map(attribute_text).collect();
            format!("{{{}}}", texts.join(","))
        }
        other => other.to_string(),
    }
}

/// The items of the band at `indices` along `dims` of the array named
/// `variable`: `NETCDF_VARNAME`, `NETCDF_DIM_<name>` and `DIM_<name>_ISO`;
/// none unless some dimension has a coordinate array.
pub fn band_items(variable: &str, dims: &[Dimension], indices: &[u64]) -> Vec<String> {
    if !netcdf_like(dims) {
        return Vec::new();
    }
    let mut items = vec![format!("NETCDF_VARNAME={variable}")];
    for (d, &i) in dims.iter().zip(indices) {
        let coordinate = d.coordinate.as_deref();
        let value = match coordinate.and_then(|c| c.texts.get(i as usize)) {
            Some(text) => text.clone(),
            None => (i + 1).to_string(),
        };
        items.push(format!("NETCDF_DIM_{}={value}", d.name));
        let datetime = coordinate.and_then(|c| c.datetimes.get(i as usize)?.as_deref());
        if let Some(iso) = datetime {
            items.push(format!("DIM_{}_ISO={iso}", d.name));
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn coordinate(dtype: &str, attrs: Value, values: &[f64]) -> Arc<Coordinate> {
        let zarray = json!({
            "zarr_format": 2, "shape": [values.len()], "chunks": [values.len()],
            "dtype": dtype, "compressor": null, "fill_value": null, "filters": null,
            "order": "C"
        });
        let meta = ArrayMeta::from_v2("time", &zarray, Some(&attrs)).unwrap();
        Arc::new(Coordinate::new(&meta, values))
    }

    #[test]
    fn shows_dimensions_as_gdal_netcdf_with_iso_times() {
        let time = coordinate(
            "<f8",
            json!({"_ARRAY_DIMENSIONS": ["time"], "units": "days since 2000-01-01",
                   "calendar": "360_day"}),
            &[0.1 + 0.2, 59.0],
        );
        let level = coordinate("<f4", json!({"units": "hPa"}), &[f64::from(0.1f32), 500.5]);
        let dims = [
            Dimension {
                name: "time".into(),
                len: 2,
                coordinate: Some(time),
            },
            Dimension {
                name: "level".into(),
                len: 2,
                coordinate: Some(level),
            },
            Dimension {
                name: "member".into(),
                len: 3,
                coordinate: None,
            },
        ];
        assert_eq!(
            band_items("t2m", &dims, &[1, 0, 2]),
            [
                "NETCDF_VARNAME=t2m",
                "NETCDF_DIM_time=59",
                "DIM_time_ISO=2000-02-30T00:00:00",
                "NETCDF_DIM_level=0.1",
                "NETCDF_DIM_member=3",
            ]
        );
        let ds = dataset_metadata(&dims, &[], &Map::new());
        let get = |k: &str| ds.get(k).and_then(Value::as_str).unwrap();
        assert_eq!(get("NETCDF_DIM_EXTRA"), "{time,level,member}");
        assert_eq!(get("NETCDF_DIM_time_DEF"), "{2,6}");
        assert_eq!(get("NETCDF_DIM_time_VALUES"), "{0.3,59}");
        assert_eq!(get("NETCDF_DIM_level_DEF"), "{2,5}");
        assert_eq!(get("NETCDF_DIM_level_VALUES"), "{0.1,500.5}");
        assert_eq!(get("time#calendar"), "360_day");
        assert_eq!(get("level#units"), "hPa");
        assert!(!ds.contains_key("time#_ARRAY_DIMENSIONS"));
        assert!(!ds.contains_key("NETCDF_DIM_member_DEF"));
    }

    #[test]
    fn attributes_print_as_gdal_netcdf_prints_them() {
        let text = |v: Value| attribute_text(&v);
        assert_eq!(text(json!("K")), "K");
        assert_eq!(text(json!(-999)), "-999");
        assert_eq!(text(json!(-999.0)), "-999");
        assert_eq!(text(json!(0.1 + 0.2)), "0.3");
        assert_eq!(text(json!([0.0, 4000.0])), "{0,4000}");
        assert_eq!(text(json!(true)), "1");
        let globals: Map<String, Value> = [("title".to_string(), json!("t"))].into_iter().collect();
        let vars = vec![("sst".to_string(), globals.clone())];
        let dims = [Dimension {
            name: "time".into(),
            len: 1,
            coordinate: Some(coordinate("<f8", json!({}), &[0.0])),
        }];
        let items = dataset_metadata(&dims, &vars, &globals);
        assert_eq!(items["NC_GLOBAL#title"], "t");
        assert_eq!(items["sst#title"], "t");
    }

    #[test]
    fn unsupported_units_keep_raw_values_and_no_coordinate_shows_nothing() {
        let step = coordinate("<i4", json!({"units": "weeks since 2000-01-01"}), &[-3.0]);
        let dims = [Dimension {
            name: "step".into(),
            len: 1,
            coordinate: Some(step),
        }];
        assert_eq!(
            band_items("v", &dims, &[0]),
            ["NETCDF_VARNAME=v", "NETCDF_DIM_step=-3"]
        );
        let bare = [Dimension {
            name: "band".into(),
            len: 3,
            coordinate: None,
        }];
        assert!(band_items("v", &bare, &[0]).is_empty());
        assert!(dataset_metadata(&bare, &[], &Map::new()).is_empty());
    }
}
