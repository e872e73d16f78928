//! CF and GDAL attribute conventions: the `grid_mapping` variable
//! (`crs_wkt`, `spatial_ref`, `GeoTransform`, CF grid-mapping parameters)
//! and GDAL's Zarr `_CRS` attribute.

use serde_json::{Map, Value};

use crate::conventions::attributes::SourceDriver;
use crate::index::{Array, Index};

/// The attributes of the `grid_mapping` variable of `array`: the variable
/// its `grid_mapping` attribute names (CF's `"name"` or `"name: x y"` form;
/// the name may be a CF 1.8 absolute or relative path such as `/crs`),
/// else a `spatial_ref` variable, looked up beside the array and then in its
/// parent groups. The variable may be one the driver does not serve: GDAL
/// writes the grid mapping of NetCDF-3 files as a text (`char`) variable.
/// An array of a netCDF file has no `spatial_ref` fallback: GDAL's netCDF
/// driver (3.6, 3.10, 3.13) reads a grid mapping only through
/// `grid_mapping`, not through a `coordinates: spatial_ref` reference.
pub fn grid_mapping<'a>(index: &'a Index, array: &Array) -> Option<&'a Map<String, Value>> {
    let named = array
        .meta
        .attributes
        .get("grid_mapping")
        .and_then(Value::as_str)
        .and_then(|g| g.split([':', ' ']).find(|s| !s.is_empty()));
    let name = match (named, SourceDriver::of(&array.meta)) {
        (Some(name), _) => name,
        (None, Some(SourceDriver::NetCdf)) => return None,
        (None, _) => "spatial_ref",
    };
    super::cf_variable(index, array, name)
        .map(|a| &a.meta.attributes)
        .or_else(|| super::skipped_cf_variable_attributes(index, array, name))
}

/// The `GeoTransform` attribute (GDAL order, six numbers separated by spaces).
pub fn geotransform(gm: &Map<String, Value>) -> Option<[f64; 6]> {
    let text = gm.get("GeoTransform")?.as_str()?;
    let v: Vec<f64> = text
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    v.try_into().ok()
}

/// The CRS of a grid-mapping variable: `crs_wkt`, `spatial_ref`, else the
/// one the CF grid-mapping parameters make (a PROJ string, or for a
/// geostationary view, the WKT GDAL's netCDF driver makes), else its
/// `srid` (`urn:ogc:def:crs:EPSG::6931`, `EPSG:3413`). `units` is
/// the `units` attribute the x and y coordinate variables share, if any:
/// as in GDAL's netCDF driver, `km` or `US_survey_foot` make the linear
/// unit of a projection from parameters (the geotransform stays in those
/// units), anything else leaves metres.
pub fn crs(gm: &Map<String, Value>, units: Option<&str>) -> Option<String> {
    ["crs_wkt", "spatial_ref"]
        .iter()
        .find_map(|k| gm.get(*k).and_then(Value::as_str))
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
        .or_else(|| geostationary_wkt(gm))
        .or_else(|| cf_to_proj(gm, proj_units(units)))
        .or_else(|| gm.get("srid").and_then(Value::as_str).map(str::to_string))
}

/// The CRS of a variable without `grid_mapping` from its own `crs`
/// attribute, as GDAL 3.6's netCDF driver reads it: text holding a PROJ
/// string (`+proj=`), a WKT1 (`GEOGCS`, `PROJCS`) or an `EPSG:` code.
/// (GDAL 3.6 reads no `proj4`, `proj4text` or `proj4_params` attribute
/// of a grid-mapping variable, nor does chunkref.)
pub fn variable_crs(attrs: &Map<String, Value>) -> Option<String> {
    if attrs.contains_key("grid_mapping") {
        return None;
    }
    let text = attrs.get("crs")?.as_str()?;
    ["+proj=", "GEOGCS", "PROJCS", "EPSG:"]
        .iter()
        .any(|k| text.contains(k))
        .then(|| text.to_string())
}

/// The PROJ `+units` of coordinate `units` GDAL's netCDF driver knows
/// (`m`, `km`, `US_survey_foot` / `US_survey_feet`, without case); metres
/// for any other.
fn proj_units(units: Option<&str>) -> &'static str {
    let is = |u: &str| units.is_some_and(|v| v.eq_ignore_ascii_case(u));
    if is("km") {
        "km"
    } else if is("US_survey_foot") || is("US_survey_feet") {
        "us-ft"
    } else {
        "m"
    }
}

/// The CRS GDAL's netCDF driver makes of a `geostationary` grid mapping
/// with the ellipsoid's axes: a WKT1 geostationary projection on a datum
/// named `unnamed` (ellipsoid `Spheroid` from `semi_major_axis` and
/// `inverse_flattening` or `semi_minor_axis`), carrying a sweep along x
/// (GOES-R ABI) in a `PROJ4` extension, as GDAL writes it. PROJ finds such
/// a CRS equal only to one of that datum name (and extension), which a
/// PROJ string cannot make. `None` for other mappings, or without the
/// ellipsoid's axes (then the PROJ string of [`cf_to_proj`] serves).
fn geostationary_wkt(gm: &Map<String, Value>) -> Option<String> {
    let num = |k: &str| gm.get(k).and_then(Value::as_f64);
    if gm.get("grid_mapping_name")?.as_str()? != "geostationary" {
        return None;
    }
    let sweep_x = gm
        .get("sweep_angle_axis")
        .and_then(Value::as_str)
        .is_some_and(|axis| axis.eq_ignore_ascii_case("x"));
    let a = num("semi_major_axis")?;
    let rf = match (num("inverse_flattening"), num("semi_minor_axis")) {
        (Some(rf), _) => rf,
        (None, Some(b)) if a != b => a / (a - b),
        (None, Some(_)) => 0.0,
        (None, None) => return None,
    };
    let param = |k: &str| num(k).unwrap_or(0.0);
    let height = num("perspective_point_height")?;
    let wkt = |extension: &str| {
        format!(
        "PROJCS[\"unnamed\",GEOGCS[\"unknown\",DATUM[\"unnamed\",SPHEROID[\"Spheroid\",{a},{rf}]],\
         PRIMEM[\"Greenwich\",0],UNIT[\"degree\",0.0174532925199433,AUTHORITY[\"EPSG\",\"9122\"]]],\
         PROJECTION[\"Geostationary_Satellite\"],PARAMETER[\"central_meridian\",{lon}],\
         PARAMETER[\"satellite_height\",{h}],PARAMETER[\"false_easting\",{fe}],\
         PARAMETER[\"false_northing\",{fn_}],UNIT[\"metre\",1,AUTHORITY[\"EPSG\",\"9001\"]],\
         AXIS[\"Easting\",EAST],AXIS[\"Northing\",NORTH]{extension}]",
        lon = param("longitude_of_projection_origin"),
        h = height,
        fe = param("false_easting"),
        fn_ = param("false_northing"),
        )
    };
    if !sweep_x {
        return Some(wkt(""));
    }
    // GDAL appends the sweep axis to OSR's PROJ string of the CRS.
    let proj = crate::base::gdal::geo::proj4_of_wkt(&wkt(""))?;
    Some(wkt(&format!(",EXTENSION[\"PROJ4\",\"{proj} +sweep=x\"]")))
}

/// GDAL's Zarr `_CRS` attribute: `{"url": ..., "wkt": ..., "projjson": {...}}`,
/// read in that order as GDAL's Zarr driver does (the authority URL gives
/// the full definition).
pub fn gdal_crs(attrs: &Map<String, Value>) -> Option<String> {
    let c = attrs.get("_CRS")?.as_object()?;
    crs_choice(
        c.get("url").and_then(Value::as_str),
        c.get("wkt").and_then(Value::as_str),
        c.get("projjson"),
    )
}

/// The first of an authority code or URL, a WKT, a PROJJSON object.
pub fn crs_choice(
    code: Option<&str>,
    wkt: Option<&str>,
    projjson: Option<&Value>,
) -> Option<String> {
    code.or(wkt)
        .map(str::to_string)
        .or_else(|| projjson.filter(|p| p.is_object()).map(Value::to_string))
}

/// (CF attribute, PROJ parameter) pairs of one projection.
type Parameters = &'static [(&'static str, &'static str)];

/// CF grid-mapping names and the PROJ projection each maps to, with the
/// (CF attribute, PROJ parameter) pairs they use.
const PROJECTIONS: &[(&str, &str, Parameters)] = &[
    ("latitude_longitude", "longlat", &[]),
    (
        "transverse_mercator",
        "tmerc",
        &[
            ("latitude_of_projection_origin", "lat_0"),
            ("longitude_of_central_meridian", "lon_0"),
            ("scale_factor_at_central_meridian", "k"),
        ],
    ),
    (
        "polar_stereographic",
        "stere",
        &[
            ("latitude_of_projection_origin", "lat_0"),
            ("straight_vertical_longitude_from_pole", "lon_0"),
            ("standard_parallel", "lat_ts"),
            ("scale_factor_at_projection_origin", "k"),
        ],
    ),
    (
        "lambert_conformal_conic",
        "lcc",
        &[
            ("latitude_of_projection_origin", "lat_0"),
            ("longitude_of_central_meridian", "lon_0"),
        ],
    ),
    (
        "albers_conical_equal_area",
        "aea",
        &[
            ("latitude_of_projection_origin", "lat_0"),
            ("longitude_of_central_meridian", "lon_0"),
        ],
    ),
    (
        "mercator",
        "merc",
        &[
            ("longitude_of_projection_origin", "lon_0"),
            ("standard_parallel", "lat_ts"),
            ("scale_factor_at_projection_origin", "k"),
        ],
    ),
    (
        "lambert_azimuthal_equal_area",
        "laea",
        &[
            ("latitude_of_projection_origin", "lat_0"),
            ("longitude_of_projection_origin", "lon_0"),
        ],
    ),
    (
        "geostationary",
        "geos",
        &[
            ("longitude_of_projection_origin", "lon_0"),
            ("perspective_point_height", "h"),
        ],
    ),
];

/// A PROJ string for the CF grid-mapping parameters of `gm`
/// (`grid_mapping_name` among [`PROJECTIONS`]; the ellipsoid from
/// `semi_major_axis` with `inverse_flattening` or `semi_minor_axis`, or
/// `earth_radius`, WGS 84 when absent), a projection's linear unit the
/// PROJ `units` given.
pub fn cf_to_proj(gm: &Map<String, Value>, units: &str) -> Option<String> {
    let name = gm.get("grid_mapping_name")?.as_str()?;
    let (_, proj, params) = PROJECTIONS.iter().find(|(n, _, _)| *n == name)?;
    let num = |k: &str| gm.get(k).and_then(Value::as_f64);
    let mut s = format!("+proj={proj}");
    for (cf, p) in *params {
        if let Some(v) = num(cf) {
            s.push_str(&format!(" +{p}={v}"));
        }
    }
    if matches!(*proj, "lcc" | "aea") {
        let sp: Vec<f64> = match gm.get("standard_parallel") {
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_f64).collect(),
            Some(v) => v.as_f64().into_iter().collect(),
            None => Vec::new(),
        };
        for (i, v) in sp.iter().take(2).enumerate() {
            s.push_str(&format!(" +lat_{}={v}", i + 1));
        }
    }
    if let Some(axis) = gm
        .get("sweep_angle_axis")
        .and_then(Value::as_str)
        .filter(|_| *proj == "geos")
    {
        s.push_str(&format!(" +sweep={axis}"));
    }
    for (cf, p) in [("false_easting", "x_0"), ("false_northing", "y_0")] {
        if let Some(v) = num(cf) {
            s.push_str(&format!(" +{p}={v}"));
        }
    }
    match (
        num("semi_major_axis"),
        num("inverse_flattening"),
        num("semi_minor_axis"),
        num("earth_radius"),
    ) {
        (Some(a), Some(rf), _, _) if rf > 0.0 => s.push_str(&format!(" +a={a} +rf={rf}")),
        (Some(a), _, Some(b), _) => s.push_str(&format!(" +a={a} +b={b}")),
        (Some(a), _, None, _) => s.push_str(&format!(" +R={a}")),
        (None, _, _, Some(r)) => s.push_str(&format!(" +R={r}")),
        _ => s.push_str(" +datum=WGS84"),
    }
    if *proj != "longlat" {
        s.push_str(&format!(" +units={units}"));
    }
    s.push_str(" +no_defs");
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn geotransform_string() {
        let gm = attrs(r#"{"GeoTransform": "300000.0 10.0 0.0 5000040.0 0.0 -10.0"}"#);
        assert_eq!(
            geotransform(&gm),
            Some([300000.0, 10.0, 0.0, 5000040.0, 0.0, -10.0])
        );
        assert_eq!(geotransform(&attrs(r#"{"GeoTransform": "1 2 3"}"#)), None);
    }

    #[test]
    fn cf_parameters_to_proj() {
        let gm = attrs(
            r#"{"grid_mapping_name": "transverse_mercator", "latitude_of_projection_origin": 0.0,
                "longitude_of_central_meridian": 9.0, "false_easting": 500000.0, "false_northing": 0.0,
                "scale_factor_at_central_meridian": 0.9996, "semi_major_axis": 6378137.0,
                "inverse_flattening": 298.257223563}"#,
        );
        assert_eq!(
            cf_to_proj(&gm, "m").unwrap(),
            "+proj=tmerc +lat_0=0 +lon_0=9 +k=0.9996 +x_0=500000 +y_0=0 +a=6378137 +rf=298.257223563 +units=m +no_defs"
        );
        let lcc = attrs(
            r#"{"grid_mapping_name": "lambert_conformal_conic", "standard_parallel": [33, 45],
                "longitude_of_central_meridian": -96, "latitude_of_projection_origin": 23}"#,
        );
        assert_eq!(
            cf_to_proj(&lcc, "m").unwrap(),
            "+proj=lcc +lat_0=23 +lon_0=-96 +lat_1=33 +lat_2=45 +datum=WGS84 +units=m +no_defs"
        );
        assert!(crs(&lcc, Some("KM"))
            .unwrap()
            .ends_with("+units=km +no_defs"));
        assert!(crs(&lcc, Some("US_survey_feet"))
            .unwrap()
            .contains("+units=us-ft"));
        assert!(crs(&lcc, Some("degrees")).unwrap().contains("+units=m"));
        assert_eq!(
            cf_to_proj(&attrs(r#"{"grid_mapping_name": "healpix"}"#), "m"),
            None
        );
        let goes = attrs(
            r#"{"grid_mapping_name": "geostationary", "longitude_of_projection_origin": -75.0,
                "perspective_point_height": 35786023.0, "sweep_angle_axis": "x",
                "semi_major_axis": 6378137.0, "semi_minor_axis": 6356752.31414}"#,
        );
        assert_eq!(
            cf_to_proj(&goes, "m").unwrap(),
            "+proj=geos +lon_0=-75 +h=35786023 +sweep=x +a=6378137 +b=6356752.31414 +units=m +no_defs"
        );
    }

    /// A NetCDF4 layout as kerchunk writes it: `crs` at the root, a
    /// variable in group `forecast` naming it by CF 1.8 path or bare name.
    #[test]
    fn grid_mapping_of_a_group_variable_by_path_or_name() {
        let arr = |shape: &str, attrs: &str| {
            (
                format!(
                    r#"{{"shape": {shape}, "chunks": {shape}, "dtype": "<i4", "fill_value": 0,
                        "compressor": null, "filters": null, "zarr_format": 2}}"#
                ),
                attrs.to_string(),
            )
        };
        for (reference, found) in [
            ("/crs", true),
            ("../crs", true),
            ("crs", true),
            ("/x/crs", false),
        ] {
            let (crs, crs_attrs) = arr("[]", r#"{"grid_mapping_name": "latitude_longitude"}"#);
            let (gust, gust_attrs) =
                arr("[2, 2]", &format!(r#"{{"grid_mapping": "{reference}"}}"#));
            let doc = serde_json::json!({
                ".zgroup": r#"{"zarr_format": 2}"#, "forecast/.zgroup": r#"{"zarr_format": 2}"#,
                "crs/.zarray": crs, "crs/.zattrs": crs_attrs,
                "forecast/gust/.zarray": gust, "forecast/gust/.zattrs": gust_attrs});
            let index =
                Index::from_kerchunk_json("t.json", doc.to_string().as_bytes(), &[]).unwrap();
            let gm = grid_mapping(&index, index.array("forecast/gust").unwrap());
            assert_eq!(
                gm.and_then(|g| g.get("grid_mapping_name")).is_some(),
                found,
                "{reference}"
            );
        }
    }

    #[test]
    #[cfg_attr(not(feature = "gdal"), ignore = "needs GDAL\'s OSR")]
    fn geostationary_is_gdal_s_wkt() {
        let goes = attrs(
            r#"{"grid_mapping_name": "geostationary", "longitude_of_projection_origin": -75.0,
                "perspective_point_height": 35786023.0, "sweep_angle_axis": "x",
                "semi_major_axis": 6378137.0, "semi_minor_axis": 6356752.31414}"#,
        );
        let wkt = crs(&goes, None).unwrap();
        assert!(wkt.starts_with(
            "PROJCS[\"unnamed\",GEOGCS[\"unknown\",DATUM[\"unnamed\",SPHEROID[\"Spheroid\",6378137,298.25"
        ));
        assert!(wkt.contains(
            "PARAMETER[\"central_meridian\",-75],PARAMETER[\"satellite_height\",35786023]"
        ));
        assert!(wkt.ends_with(
            "EXTENSION[\"PROJ4\",\"+proj=geos +lon_0=-75 +h=35786023 +x_0=0 +y_0=0 +ellps=GRS80 +units=m +no_defs +sweep=x\"]]"
        ));
        let mut sweep_y = goes.clone();
        sweep_y.insert("sweep_angle_axis".into(), "y".into());
        let wkt = crs(&sweep_y, None).unwrap();
        assert!(wkt.starts_with("PROJCS[") && !wkt.contains("EXTENSION"));
        let mut no_axes = goes;
        no_axes.remove("semi_major_axis");
        assert!(crs(&no_axes, None).unwrap().starts_with("+proj=geos"));
    }

    #[test]
    fn crs_of_a_variable_or_an_srid() {
        let utm = "+proj=utm +zone=33 +datum=WGS84";
        let own = attrs(&format!(r#"{{"crs": "{utm}"}}"#));
        assert_eq!(variable_crs(&own).as_deref(), Some(utm));
        let mapped = attrs(&format!(r#"{{"crs": "{utm}", "grid_mapping": "crs"}}"#));
        assert_eq!(variable_crs(&mapped), None);
        assert_eq!(variable_crs(&attrs(r#"{"crs": "utm"}"#)), None);
        let srid = attrs(r#"{"srid": "urn:ogc:def:crs:EPSG::6931"}"#);
        assert_eq!(
            crs(&srid, None).as_deref(),
            Some("urn:ogc:def:crs:EPSG::6931")
        );
    }

    #[test]
    fn crs_precedence() {
        let gm = attrs(r#"{"spatial_ref": "WKT-B", "crs_wkt": "WKT-A"}"#);
        assert_eq!(crs(&gm, None).as_deref(), Some("WKT-A"));
        let gdal =
            attrs(r#"{"_CRS": {"wkt": "W", "url": "http://www.opengis.net/def/crs/EPSG/0/4326"}}"#);
        assert_eq!(
            gdal_crs(&gdal).as_deref(),
            Some("http://www.opengis.net/def/crs/EPSG/0/4326")
        );
    }
}
