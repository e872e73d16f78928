//! What the engine asks of libgdal outside the driver: configuration
//! options, data files, warnings and the block cache size ([`cpl`]),
//! geodesy through OSR ([`geo`]), and what differs between the GDAL
//! versions it builds against ([`compat`]).
//!
//! Built without the `gdal` feature, [`cpl`] and [`geo`] are twins of the
//! same interface that need no libgdal (`cpl_without_gdal.rs`,
//! `geo_without_gdal.rs`): options come from the environment, data files
//! from `GDAL_DATA`, warnings go to standard error, and what truly needs
//! GDAL (OSR) warns that it does and gives nothing.

pub mod compat;
#[cfg_attr(not(feature = "gdal"), path = "cpl_without_gdal.rs")]
pub mod cpl;
pub mod crs_params;
#[cfg_attr(not(feature = "gdal"), path = "geo_without_gdal.rs")]
pub mod geo;

/// GDAL's network file systems (prefixes also match `_streaming` variants).
pub const NETWORK_VSI: [&str; 9] = [
    "/vsicurl",
    "/vsis3",
    "/vsigs",
    "/vsiaz",
    "/vsiadls",
    "/vsioss",
    "/vsiswift",
    "/vsiwebhdfs",
    "/vsihdfs",
];

#[cfg(test)]
mod tests {
    use super::geo;

    #[test]
    /// Both twins: GDAL's fit, and the one of the build without GDAL.
    fn fits_corners_as_gdal_does() {
        // Not an upright rectangle of ground coordinates: the least squares.
        let gt = geo::fit_geotransform(&[
            ((0.5, 0.5), (10.5, 19.5)),
            ((9.5, 0.5), (19.5, 19.5)),
            ((9.5, 4.5), (19.5, 15.5)),
            ((0.5, 4.5), (10.5, 15.5)),
        ])
        .unwrap();
        let want = [10.0, 1.0, 0.0, 20.0, 0.0, -1.0];
        assert!(
            gt.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-9),
            "{gt:?}"
        );
        // A quadrilateral no affine transform fits.
        assert!(geo::fit_geotransform(&[
            ((0.5, 0.5), (0.0, 10.0)),
            ((9.5, 0.5), (10.0, 10.0)),
            ((9.5, 4.5), (30.0, 0.0)),
            ((0.5, 4.5), (0.0, 0.0)),
        ])
        .is_none());
        // Two points, and degenerate sets.
        assert_eq!(
            geo::fit_geotransform(&[((0.0, 0.0), (100.0, 50.0)), ((10.0, 5.0), (120.0, 40.0))]),
            Some([100.0, 2.0, 0.0, 50.0, 0.0, -2.0])
        );
        assert!(geo::fit_geotransform(&[((0.0, 0.0), (1.0, 1.0))]).is_none());
        assert!(geo::fit_geotransform(&[((0.0, 0.0), (1.0, 1.0)); 3]).is_none());
    }
}
