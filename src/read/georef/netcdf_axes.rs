//! Which coordinate variables GDAL 3.6's netCDF driver takes for the x and
//! y axes of a variable (`SetProjectionFromVar`, `NCDFIsVarLongitude` and
//! its siblings), so that a grid is placed only where GDAL places it.
//!
//! The coordinate variable of the last dimension must be a longitude, a
//! projection x, or (axes swapped) a latitude or projection y coordinate,
//! or be named `lon` / `longitude`; that of the second last a latitude, a
//! projection y, or (swapped) a longitude or projection x, or be named
//! `lat` / `latitude`. A longitude has `units` `degrees_east`,
//! `degree_east` or `degrees_E`, `standard_name` or `long_name`
//! `longitude`, or `axis` `X`, and no `units` `m` or `1`; a projection x
//! has `standard_name` `projection_x_coordinate` or `axis` `X`, and no
//! `units` `1` (latitude and y alike). Names alone do not count otherwise:
//! a `(time, station)` variable, or `y`/`x` coordinates without these
//! attributes, is not placed. A variable with `res` and `transform`
//! attributes, or a file with a `GMT_version` global attribute, skips
//! these checks, as in GDAL.
//!
//! In a file whose `Conventions` start with `CF`, a variable whose
//! dimensions come as (longitude or x, latitude or y), told by the
//! dimensions' coordinate variables (else their names), has its axes
//! swapped: GDAL then serves its rows as stored (no bottom-up flip) and
//! moves no longitude.

use serde_json::{Map, Value};

use crate::index::{Array, Index};

/// One of GDAL's axis tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Axis {
    Longitude,
    Latitude,
    ProjectionX,
    ProjectionY,
}

impl Axis {
    /// The (attribute, value) pairs that make a variable this axis.
    fn marks(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Axis::Longitude => &[
                ("units", "degrees_east"),
                ("units", "degree_east"),
                ("units", "degrees_E"),
                ("standard_name", "longitude"),
                ("axis", "X"),
                ("long_name", "longitude"),
            ],
            Axis::Latitude => &[
                ("units", "degrees_north"),
                ("units", "degree_north"),
                ("units", "degrees_N"),
                ("standard_name", "latitude"),
                ("axis", "Y"),
                ("long_name", "latitude"),
            ],
            Axis::ProjectionX => &[("standard_name", "projection_x_coordinate"), ("axis", "X")],
            Axis::ProjectionY => &[("standard_name", "projection_y_coordinate"), ("axis", "Y")],
        }
    }

    /// `units` that unmake it (`m` or `1` for angles, `1` for projections).
    fn refused_units(self) -> &'static [&'static str] {
        match self {
            Axis::Longitude | Axis::Latitude => &["m", "1"],
            Axis::ProjectionX | Axis::ProjectionY => &["1"],
        }
    }

    /// The variable names that make it when no variable has that name.
    fn names(self) -> &'static [&'static str] {
        match self {
            Axis::Longitude => &["lon", "longitude"],
            Axis::Latitude => &["lat", "latitude"],
            Axis::ProjectionX => &["x", "xc"],
            Axis::ProjectionY => &["y", "yc"],
        }
    }

    /// Whether a variable with `attrs` is this axis (GDAL compares without
    /// case).
    fn of(self, attrs: &Map<String, Value>) -> bool {
        let text = |k: &str| attrs.get(k).map(attribute_text);
        let marked = self
            .marks()
            .iter()
            .any(|(k, v)| text(k).is_some_and(|t| t.eq_ignore_ascii_case(v)));
        marked
            && !text("units").is_some_and(|u| {
                self.refused_units()
                    .iter()
                    .any(|r| u.eq_ignore_ascii_case(r))
            })
    }
}

/// An attribute as text (numbers as GDAL prints them do not match any of
/// the values tested, so any text will do).
fn attribute_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The coordinate variable named `name` of `array` (beside it or in a
/// parent group), as GDAL's `NCDFResolveVar` finds it.
fn variable<'a>(index: &'a Index, array: &Array, name: &str) -> Option<&'a Array> {
    super::parents(&array.meta.path).find_map(|g| {
        let path = match g.is_empty() {
            true => name.to_string(),
            false => format!("{g}/{name}"),
        };
        index.array(&path)
    })
}

/// The names of `array`'s last two dimensions, `(y, x)`.
fn yx_names(array: &Array) -> Option<(&str, &str)> {
    let names = array.meta.dimension_names.as_ref()?;
    let n = names.len();
    (n >= 2).then(|| (names[n - 2].as_str(), names[n - 1].as_str()))
}

/// Whether GDAL's netCDF driver takes the coordinate variables of `array`'s
/// (y, x) dimensions for its georeferencing (see the module notes); both
/// must exist.
pub fn places(index: &Index, array: &Array) -> bool {
    let Some((y_name, x_name)) = yx_names(array) else {
        return false;
    };
    let (Some(y), Some(x)) = (
        variable(index, array, y_name),
        variable(index, array, x_name),
    ) else {
        return false;
    };
    if skips_name_checks(index, array) {
        return true;
    }
    let any = |v: &Array, axes: [Axis; 4]| axes.iter().any(|a| a.of(&v.meta.attributes));
    let named = |v: &Array, names: &[&str]| {
        v.meta.shape.len() == 1 && names.iter().any(|n| leaf(v).eq_ignore_ascii_case(n))
    };
    use Axis::*;
    let x_ok =
        any(x, [Longitude, ProjectionX, Latitude, ProjectionY]) || named(x, &["longitude", "lon"]);
    let y_ok =
        any(y, [Latitude, ProjectionY, Longitude, ProjectionX]) || named(y, &["latitude", "lat"]);
    x_ok && y_ok
}

/// The `units` the coordinate variables of `array`'s (y, x) dimensions
/// share (compared without case), if both have the same.
pub fn shared_units(index: &Index, array: &Array) -> Option<String> {
    let (y_name, x_name) = yx_names(array)?;
    let units = |name: &str| {
        let v = variable(index, array, name)?;
        Some(v.meta.attributes.get("units")?.as_str()?.to_string())
    };
    let (y, x) = (units(y_name)?, units(x_name)?);
    y.eq_ignore_ascii_case(&x).then_some(x)
}

/// The last component of an array's path.
fn leaf(array: &Array) -> &str {
    array.meta.path.rsplit('/').next().unwrap_or("")
}

/// GDAL's exceptions to the axis checks: `res` and `transform` attributes
/// on the variable, a `GMT_version` global attribute.
fn skips_name_checks(index: &Index, array: &Array) -> bool {
    let a = &array.meta.attributes;
    (a.contains_key("res") && a.contains_key("transform"))
        || index
            .groups
            .get("")
            .is_some_and(|g| g.contains_key("GMT_version"))
}

/// Whether GDAL's netCDF driver swaps the axes of `array` (see the module
/// notes): the file's `Conventions` start with `CF`, its second last
/// dimension is a longitude or x, its last a latitude or y.
pub fn swapped(index: &Index, array: &Array) -> bool {
    let cf = index
        .groups
        .get("")
        .and_then(|g| g.get("Conventions"))
        .and_then(Value::as_str)
        .is_some_and(|c| c.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("CF")));
    let Some((y_name, x_name)) = yx_names(array) else {
        return false;
    };
    // A dimension is told by its variable's attributes, by its name when
    // it has no variable.
    let is = |name: &str, axes: [Axis; 2]| match variable(index, array, name) {
        Some(v) => axes.iter().any(|a| a.of(&v.meta.attributes)),
        None => axes
            .iter()
            .any(|a| a.names().iter().any(|n| n.eq_ignore_ascii_case(name))),
    };
    use Axis::*;
    cf && is(y_name, [Longitude, ProjectionX]) && is(x_name, [Latitude, ProjectionY])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn axis_tests_follow_gdal() {
        use Axis::*;
        assert!(Longitude.of(&attrs(r#"{"units": "Degrees_East"}"#)));
        assert!(Longitude.of(&attrs(r#"{"axis": "X"}"#)));
        assert!(!Longitude.of(&attrs(r#"{"axis": "X", "units": "m"}"#)));
        assert!(ProjectionX.of(&attrs(r#"{"axis": "X", "units": "m"}"#)));
        assert!(!ProjectionX.of(&attrs(r#"{"units": "m"}"#)));
        assert!(ProjectionY.of(&attrs(
            r#"{"standard_name": "projection_y_coordinate", "units": "km"}"#
        )));
        assert!(!Latitude.of(&attrs(r#"{"units": "days since 2000-01-01"}"#)));
        assert!(Latitude.of(&attrs(r#"{"long_name": "latitude"}"#)));
    }
}
