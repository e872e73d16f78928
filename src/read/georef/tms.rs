//! GeoZarr 0.4 `multiscales.tile_matrix_set`: an inline OGC TileMatrixSet
//! (v2) or a well-known identifier, giving each level's cell size, origin
//! and CRS.

use serde_json::Value;

/// What a tile matrix says about one level.
#[derive(Debug, Clone, PartialEq)]
pub struct TileLevel {
    /// GDAL geotransform of the level's array.
    pub transform: Option<[f64; 6]>,
    /// CRS definition of the set.
    pub crs: Option<String>,
}

/// Well-known sets: id, CRS, origin (x, y), cell size of matrix `0`
/// (each following matrix halves it).
const WELL_KNOWN: &[(&str, &str, [f64; 2], f64)] = &[
    (
        "WebMercatorQuad",
        "EPSG:3857",
        [-20037508.3427892, 20037508.3427892],
        156543.03392804097,
    ),
    ("WorldCRS84Quad", "OGC:CRS84", [-180.0, 90.0], 0.703125),
];

/// The tile matrix ids of an inline set, in the order listed.
pub fn matrix_ids(multiscales: &Value) -> Option<Vec<String>> {
    let tms = multiscales.get("tile_matrix_set")?;
    match tms {
        Value::Object(_) => tms
            .get("tileMatrices")?
            .as_array()?
            .iter()
            .map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
            .collect(),
        _ => None,
    }
}

/// The tile matrix of level `asset` in `multiscales.tile_matrix_set`.
pub fn level(multiscales: &Value, asset: &str, warnings: &mut Vec<String>) -> Option<TileLevel> {
    let tms = multiscales.get("tile_matrix_set")?;
    if let Some(id) = tms.as_str() {
        let Some((_, crs, origin, cell0)) = WELL_KNOWN.iter().find(|w| w.0 == id) else {
            let w = format!(
                "tile matrix set '{id}' is not one chunkref knows ({}); levels are not georeferenced from it",
                WELL_KNOWN.iter().map(|w| w.0).collect::<Vec<_>>().join(", ")
            );
            if !warnings.contains(&w) {
                warnings.push(w);
            }
            return None;
        };
        let zoom: i32 = asset.parse().ok()?;
        let cell = cell0 / 2f64.powi(zoom);
        let (dx, dy) = limits_offset(multiscales, asset);
        return Some(TileLevel {
            transform: Some(north_up(*origin, cell, dx * 256.0, dy * 256.0)),
            crs: Some(crs.to_string()),
        });
    }
    let crs = ["crs", "supportedCRS"]
        .iter()
        .find_map(|k| match tms.get(*k)? {
            Value::String(s) => Some(s.clone()),
            Value::Object(o) => o.get("uri").and_then(Value::as_str).map(str::to_string),
            _ => None,
        });
    let m = tms
        .get("tileMatrices")?
        .as_array()?
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(asset))?;
    let top_left = m
        .get("cornerOfOrigin")
        .and_then(Value::as_str)
        .is_none_or(|c| c == "topLeft");
    let transform = (|| {
        let cell = m.get("cellSize")?.as_f64()?;
        let p = m.get("pointOfOrigin")?.as_array()?;
        let (a, b) = (p.first()?.as_f64()?, p.get(1)?.as_f64()?);
        let northing_first = tms
            .get("orderedAxes")
            .and_then(|o| o.get(0))
            .and_then(Value::as_str)
            .is_some_and(|s| {
                let s = s.to_ascii_lowercase();
                s.starts_with('n') || s.starts_with("lat") || s == "y"
            });
        let origin = if northing_first { [b, a] } else { [a, b] };
        let (dx, dy) = limits_offset(multiscales, asset);
        let tw = m.get("tileWidth").and_then(Value::as_f64).unwrap_or(0.0);
        let th = m.get("tileHeight").and_then(Value::as_f64).unwrap_or(0.0);
        top_left.then(|| north_up(origin, cell, dx * tw, dy * th))
    })();
    Some(TileLevel { transform, crs })
}

/// (first column, first row) of `tile_matrix_limits` for `asset` (a map by
/// id, or a list of objects naming `tileMatrix`), else (0, 0).
fn limits_offset(multiscales: &Value, asset: &str) -> (f64, f64) {
    let limits = multiscales.get("tile_matrix_limits");
    let l = match limits {
        Some(Value::Object(map)) => map.get(asset),
        Some(Value::Array(list)) => list
            .iter()
            .find(|l| l.get("tileMatrix").and_then(Value::as_str) == Some(asset)),
        _ => None,
    };
    let get = |k: &str| {
        l.and_then(|l| l.get(k))
            .and_then(Value::as_f64)
            .unwrap_or(0.0)
    };
    (get("minTileCol"), get("minTileRow"))
}

/// A north-up transform with square cells, offset by `cols`/`rows` pixels.
fn north_up(origin: [f64; 2], cell: f64, cols: f64, rows: f64) -> [f64; 6] {
    [
        origin[0] + cols * cell,
        cell,
        0.0,
        origin[1] - rows * cell,
        0.0,
        -cell,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inline_matrix() {
        let ms = json!({"tile_matrix_set": {"id": "UTM", "crs": "EPSG:32633", "orderedAxes": ["E", "N"],
            "tileMatrices": [{"id": "0", "cellSize": 10.0, "pointOfOrigin": [299960.0, 9000000.0],
                              "tileWidth": 1024, "tileHeight": 1024},
                             {"id": "1", "cellSize": 20.0, "pointOfOrigin": [299960.0, 9000000.0],
                              "tileWidth": 512, "tileHeight": 512}]},
            "tile_matrix_limits": {"1": {"minTileCol": 1, "minTileRow": 2}}});
        let mut w = Vec::new();
        assert_eq!(
            level(&ms, "0", &mut w).unwrap(),
            TileLevel {
                transform: Some([299960.0, 10.0, 0.0, 9000000.0, 0.0, -10.0]),
                crs: Some("EPSG:32633".into())
            }
        );
        assert_eq!(
            level(&ms, "1", &mut w).unwrap().transform,
            Some([
                299960.0 + 512.0 * 20.0,
                20.0,
                0.0,
                9000000.0 - 1024.0 * 20.0,
                0.0,
                -20.0
            ])
        );
        assert_eq!(matrix_ids(&ms).unwrap(), vec!["0", "1"]);
    }

    #[test]
    fn well_known() {
        let ms = json!({"tile_matrix_set": "WebMercatorQuad"});
        let mut w = Vec::new();
        let t = level(&ms, "2", &mut w).unwrap().transform.unwrap();
        assert!((t[1] - 39135.75848201024).abs() < 1e-6);
        assert!(level(&json!({"tile_matrix_set": "Foo"}), "0", &mut w).is_none());
        assert!(level(&json!({"tile_matrix_set": "Foo"}), "1", &mut w).is_none());
        assert_eq!(w.len(), 1);
    }
}
