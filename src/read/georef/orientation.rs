//! The order GDAL 3.6's drivers serve a grid in, when it is not the stored
//! one, and the longitude ranges they move grids to:
//!
//! - netCDF: rows whose y coordinate increases (south-up grids) are served
//!   bottom-up, north-up with a negative y pixel size ([`north_up`]); the
//!   open option [`Y_ORDER_OPTION`]`=STORED` keeps the stored order (GDAL's
//!   netCDF driver has no such option). Longitudes whose first pixel centre
//!   is east of 180 degrees are moved by -360 degrees ([`netcdf_longitudes`],
//!   the driver's `GDAL_NETCDF_CENTERLONG_180`, default on).
//! - GRIB: a global latitude/longitude grid from 0 to 360 degrees is served
//!   from -180 degrees, its columns rolled at the antimeridian
//!   ([`grib_longitudes`], the driver's `GRIB_ADJUST_LONGITUDE_RANGE`,
//!   default on).

use crate::base::error::{Error, Result};
use crate::formats::grib_grid::{grib_rule, GribLongitudes};
use crate::read::axes::AxisMap;

/// The open option choosing the row order of south-up grids.
pub const Y_ORDER_OPTION: &str = "Y_ORDER";

/// The row order a south-up grid is served in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum YOrder {
    /// North-up, as GDAL's netCDF driver serves it (the default).
    #[default]
    NorthUp,
    /// The stored order, with a positive y pixel size.
    Stored,
}

impl YOrder {
    /// The [`Y_ORDER_OPTION`] of open options (`NORTH_UP` or `STORED`).
    pub fn from_options(options: &[(String, String)]) -> Result<YOrder> {
        let Some((_, value)) = options
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(Y_ORDER_OPTION))
        else {
            return Ok(YOrder::default());
        };
        match value.to_ascii_uppercase().as_str() {
            "NORTH_UP" => Ok(YOrder::NorthUp),
            "STORED" => Ok(YOrder::Stored),
            _ => Err(Error::Usage {
                what: format!("{Y_ORDER_OPTION}={value}: expected NORTH_UP or STORED"),
            }),
        }
    }
}

/// Whether a GDAL configuration option that defaults to on is on.
fn config_on(name: &str) -> bool {
    !crate::base::gdal::cpl::config_option(name).is_some_and(|v| {
        matches!(
            v.to_ascii_uppercase().as_str(),
            "NO" | "OFF" | "FALSE" | "0"
        )
    })
}

/// The served view of a grid with geotransform `gt` and `height` rows whose
/// y coordinate increases: its rows reversed, its transform north-up.
/// `None` when the grid is north-up already, rotated, or `order` keeps it.
pub fn north_up(gt: [f64; 6], height: u64, order: YOrder) -> Option<(AxisMap, [f64; 6])> {
    if order == YOrder::Stored || gt[5] <= 0.0 || gt[2] != 0.0 || gt[4] != 0.0 {
        return None;
    }
    let axes = AxisMap {
        rows_reversed: true,
        columns_rolled: 0,
    };
    let top = gt[3] + height as f64 * gt[5];
    Some((axes, [gt[0], gt[1], gt[2], top, gt[4], -gt[5]]))
}

/// GDAL's netCDF driver on longitudes: a grid whose first pixel centre is
/// east of 180 degrees moves by -360 degrees (no pixel moves), unless
/// `GDAL_NETCDF_CENTERLONG_180=NO`.
pub fn netcdf_longitudes(gt: [f64; 6]) -> [f64; 6] {
    let first = gt[0] + gt[1] / 2.0;
    if gt[1] > 0.0 && first > 180.0 && config_on("GDAL_NETCDF_CENTERLONG_180") {
        return [gt[0] - 360.0, gt[1], gt[2], gt[3], gt[4], gt[5]];
    }
    gt
}

/// `GDAL_NETCDF_CENTERLONG_180` and `GRIB_ADJUST_LONGITUDE_RANGE`, which
/// change what an open serves (so a kept dataset is shared only under the
/// same values).
pub fn longitude_options() -> (bool, bool) {
    (
        config_on("GDAL_NETCDF_CENTERLONG_180"),
        grib_adjusts_longitudes(),
    )
}

/// Whether `GRIB_ADJUST_LONGITUDE_RANGE` is on (its default).
pub fn grib_adjusts_longitudes() -> bool {
    config_on("GRIB_ADJUST_LONGITUDE_RANGE")
}

/// The served view of a grid placed by 1-D coordinate arrays, geotransform
/// `gt`, `(height, width)` pixels: a GRIB grid's longitudes as GDAL's GRIB
/// driver serves them, else (`longitude`: the x coordinate is a longitude)
/// as GDAL's netCDF driver does; then south-up rows served north-up unless
/// `order` keeps them.
pub fn from_coordinates(
    gt: [f64; 6],
    (height, width): (u64, u64),
    longitude: bool,
    grib: bool,
    order: YOrder,
) -> (AxisMap, [f64; 6]) {
    let (mut axes, mut gt) = match (grib, longitude) {
        (true, _) => grib_longitudes(gt, width).unwrap_or((AxisMap::default(), gt)),
        (false, true) => (AxisMap::default(), netcdf_longitudes(gt)),
        (false, false) => (AxisMap::default(), gt),
    };
    if let Some((flip, north)) = north_up(gt, height, order) {
        axes.rows_reversed = flip.rows_reversed;
        gt = north;
    }
    (axes, gt)
}

/// The served view of a GRIB grid with geotransform `gt` (in 0..360
/// degrees) and `width` columns, as GDAL's GRIB driver serves it; `None`
/// when it is served as stored (or `GRIB_ADJUST_LONGITUDE_RANGE=NO`).
pub fn grib_longitudes(gt: [f64; 6], width: u64) -> Option<(AxisMap, [f64; 6])> {
    if gt[1] <= 0.0 || gt[2] != 0.0 || !grib_adjusts_longitudes() {
        return None;
    }
    let first = gt[0] + gt[1] / 2.0;
    let last = first + (width.saturating_sub(1)) as f64 * gt[1];
    match grib_rule(first, last, gt[1], width) {
        GribLongitudes::Kept => None,
        GribLongitudes::Shifted(x) => Some((
            AxisMap::default(),
            [x - gt[1] / 2.0, gt[1], gt[2], gt[3], gt[4], gt[5]],
        )),
        GribLongitudes::Split(column) => Some(split(gt, column)),
    }
}

/// The served view of a grid with geotransform `gt` whose stored column
/// `column` GDAL's GRIB driver serves first, at -180 degrees.
pub fn split(gt: [f64; 6], column: u64) -> (AxisMap, [f64; 6]) {
    let axes = AxisMap {
        rows_reversed: false,
        columns_rolled: column,
    };
    (
        axes,
        [-180.0 - gt[1] / 2.0, gt[1], gt[2], gt[3], gt[4], gt[5]],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn south_up_grids_turn_north_up_unless_kept() {
        let gt = [-20.125, 0.25, 0.0, 9.75, 0.0, 0.5];
        let (axes, north) = north_up(gt, 23, YOrder::NorthUp).unwrap();
        assert!(axes.rows_reversed && axes.columns_rolled == 0);
        assert_eq!(north, [-20.125, 0.25, 0.0, 21.25, 0.0, -0.5]);
        assert_eq!(north_up(gt, 23, YOrder::Stored), None);
        assert_eq!(north_up(north, 23, YOrder::NorthUp), None);
    }

    #[test]
    fn netcdf_moves_grids_whose_first_centre_is_east_of_180() {
        let gt = |x0: f64, dx: f64| [x0, dx, 0.0, 50.0, 0.0, -1.0];
        assert_eq!(netcdf_longitudes(gt(200.0, 1.0))[0], -160.0);
        assert!((netcdf_longitudes(gt(179.9, 0.4))[0] + 180.1).abs() < 1e-9);
        assert_eq!(netcdf_longitudes(gt(179.85, 0.3))[0], 179.85);
        assert_eq!(netcdf_longitudes(gt(0.0, 1.0))[0], 0.0);
    }

    #[test]
    fn grib_splits_global_grids_and_shifts_eastern_ones() {
        // Centres 5, 15, ..., 355: stored column 18 (185) is served first.
        assert_eq!(grib_rule(5.0, 355.0, 10.0, 36), GribLongitudes::Split(18));
        assert_eq!(grib_rule(0.0, 350.0, 10.0, 36), GribLongitudes::Split(18));
        // Regional east of 180: shifted; west of 180: kept.
        assert_eq!(
            grib_rule(200.0, 300.0, 1.0, 101),
            GribLongitudes::Shifted(-160.0)
        );
        assert_eq!(grib_rule(10.0, 100.0, 1.0, 91), GribLongitudes::Kept);
        // Wider than 360 degrees: kept.
        assert_eq!(grib_rule(0.0, 360.0, 1.0, 361), GribLongitudes::Kept);
        let (axes, gt) = split([0.0, 10.0, 0.0, 45.0, 0.0, -10.0], 18);
        assert_eq!((axes.columns_rolled, gt[0]), (18, -185.0));
    }

    #[test]
    fn y_order_option() {
        let opt = |v: &str| vec![("y_order".to_string(), v.to_string())];
        assert_eq!(YOrder::from_options(&[]).unwrap(), YOrder::NorthUp);
        assert_eq!(
            YOrder::from_options(&opt("stored")).unwrap(),
            YOrder::Stored
        );
        assert_eq!(
            YOrder::from_options(&opt("NORTH_UP")).unwrap(),
            YOrder::NorthUp
        );
        assert!(YOrder::from_options(&opt("UP")).is_err());
    }
}
