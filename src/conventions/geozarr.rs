//! GeoZarr georeferencing as chunkref writes it: the `zarr_conventions`
//! list, and [`Georef`], a full-resolution image's transform and CRS
//! written as `proj:` / `spatial:` attributes per level. Every builder
//! makes one (from GeoTIFF keys, GeoJP2, NITF corners, GRIB grids, DTED
//! origins); the read side reads the attributes back.

use serde_json::{json, Map, Value};

/// `zarr_conventions` entries written by chunkref (multiscales, proj:, spatial:).
pub fn conventions(with_geo: bool) -> Value {
    let mut list = vec![json!({
        "uuid": "d35379db-88df-4056-af3a-620245f8e347",
        "schema_url": "https://raw.githubusercontent.com/zarr-conventions/multiscales/refs/tags/v1/schema.json",
        "spec_url": "https://github.com/zarr-conventions/multiscales/blob/v1/README.md",
        "name": "multiscales",
        "description": "Multiscale layout of zarr datasets"
    })];
    if with_geo {
        list.push(json!({
            "uuid": "f17cb550-5864-4468-aeb7-f3180cfb622f",
            "schema_url": "https://raw.githubusercontent.com/zarr-experimental/geo-proj/refs/tags/v1/schema.json",
            "spec_url": "https://github.com/zarr-experimental/geo-proj/blob/v1/README.md",
            "name": "proj:",
            "description": "Coordinate reference system information for geospatial data"
        }));
        list.push(json!({
            "uuid": "689b58e2-cf7b-45e0-9fff-9cfc0883d6b4",
            "schema_url": "https://raw.githubusercontent.com/zarr-conventions/spatial/refs/tags/v1/schema.json",
            "spec_url": "https://github.com/zarr-conventions/spatial/blob/v1/README.md",
            "name": "spatial:",
            "description": "Spatial coordinate information"
        }));
    }
    Value::Array(list)
}

/// Georeferencing of the full-resolution image.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Georef {
    /// Affine transform `[a, b, c, d, e, f]` of pixel corners (x = a*col + b*row + c).
    pub transform: Option<[f64; 6]>,
    /// `EPSG:nnnn` when the GeoKeys name an EPSG CRS.
    pub crs_code: Option<String>,
    /// WKT2 of a CRS without an EPSG code (written when `crs_code` is None).
    pub crs_wkt2: Option<String>,
    /// What the source says its pixels are (GeoTIFF's GTRasterTypeGeoKey),
    /// written as `spatial:registration` and shown as GDAL's `AREA_OR_POINT`.
    pub registration: Registration,
}

/// Whether a source's coordinates name pixel areas or pixel centres.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Registration {
    /// The source does not say (no `spatial:registration` is written).
    #[default]
    Unstated,
    /// PixelIsArea: `spatial:registration` "pixel".
    Area,
    /// PixelIsPoint: `spatial:registration` "node", the transform written
    /// for pixel centres.
    Point,
}

impl Georef {
    /// True when there is anything to write.
    pub fn is_some(&self) -> bool {
        self.transform.is_some() || self.crs_code.is_some() || self.crs_wkt2.is_some()
    }

    /// `proj:` / `spatial:` attributes for a level of `shape` = [height, width]
    /// whose pixels are `scale` = [sx, sy] times those of the full image.
    pub fn attributes(&self, shape: [u64; 2], scale: [f64; 2]) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(code) = &self.crs_code {
            m.insert("proj:code".into(), json!(code));
        } else if let Some(wkt) = &self.crs_wkt2 {
            m.insert("proj:wkt2".into(), json!(wkt));
        }
        if let Some(t) = self.level_transform(scale) {
            m.insert("spatial:dimensions".into(), json!(["y", "x"]));
            // Pixel centres for a PixelIsPoint source (the reader shifts
            // them back to corners, as GDAL reports them).
            let written = match self.registration {
                Registration::Point => [
                    t[0],
                    t[1],
                    t[2] + 0.5 * t[0] + 0.5 * t[1],
                    t[3],
                    t[4],
                    t[5] + 0.5 * t[3] + 0.5 * t[4],
                ],
                _ => t,
            };
            m.insert("spatial:transform".into(), json!(written));
            m.insert("spatial:shape".into(), json!(shape));
            match self.registration {
                Registration::Area => {
                    m.insert("spatial:registration".into(), json!("pixel"));
                }
                Registration::Point => {
                    m.insert("spatial:registration".into(), json!("node"));
                }
                Registration::Unstated => {}
            }
            let corners = [
                (0.0, 0.0),
                (shape[1] as f64, 0.0),
                (0.0, shape[0] as f64),
                (shape[1] as f64, shape[0] as f64),
            ];
            let xs: Vec<f64> = corners
                .iter()
                .map(|(c, r)| t[0] * c + t[1] * r + t[2])
                .collect();
            let ys: Vec<f64> = corners
                .iter()
                .map(|(c, r)| t[3] * c + t[4] * r + t[5])
                .collect();
            let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = |v: &[f64]| v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            m.insert(
                "spatial:bbox".into(),
                json!([min(&xs), min(&ys), max(&xs), max(&ys)]),
            );
        }
        m
    }

    /// `proj:` / `spatial:` attributes of a level of `shape` in a pyramid
    /// whose full-resolution image has `base` (both [height, width]).
    pub fn level_attributes(&self, base: [u64; 2], shape: [u64; 2]) -> Map<String, Value> {
        let scale = [
            base[1] as f64 / shape[1].max(1) as f64,
            base[0] as f64 / shape[0].max(1) as f64,
        ];
        self.attributes(shape, scale)
    }

    /// Root group attributes of a pyramid whose full-resolution image has
    /// `base` = [height, width]: its `proj:` / `spatial:` attributes and the
    /// `zarr_conventions` list.
    pub fn root_attributes(&self, base: [u64; 2]) -> Map<String, Value> {
        let mut attrs = self.attributes(base, [1.0, 1.0]);
        attrs.insert("zarr_conventions".into(), conventions(self.is_some()));
        attrs
    }

    /// The transform of a level whose pixels are `scale` times larger.
    pub fn level_transform(&self, scale: [f64; 2]) -> Option<[f64; 6]> {
        self.transform.map(|t| {
            [
                t[0] * scale[0],
                t[1] * scale[1],
                t[2],
                t[3] * scale[0],
                t[4] * scale[1],
                t[5],
            ]
        })
    }
}
