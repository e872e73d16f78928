//! Mosaics: several scenes on one grid (one CRS and pixel size, pixel
//! aligned) shown as one raster covering their union, later scenes over
//! earlier ones, gaps reading as nodata (or 0), as `gdalbuildvrt` makes them.
//!
//! Every scene stays its own pyramid in the store (group `scenes/<i>`),
//! with its own levels, georeferencing and chunk references; the root group
//! attribute [`MOSAIC_ATTRIBUTE`] ([`Description`]) places them in the
//! union. [`build`] writes such stores, [`levels`] opens them, [`read`]
//! reads their windows and blocks.
pub mod grid;
pub mod read;

use crate::read::axes::AxisMap;
use serde::{Deserialize, Serialize};

use crate::base::dtype::{fill_json, ScalarKind};
use crate::base::error::{Error, Result};
use crate::conventions::attributes::MOSAIC_ATTRIBUTE;
use crate::index::zarr::ArrayMeta;
use crate::index::Index;
use crate::read::assemble::Nodata;
use crate::read::chunk::Locations;
use crate::read::georef::{self, band, Georef, LevelRef};
use crate::read::level::{Level, Scene, Scenes};
use grid::Placement;

/// How the scenes of a store make one mosaic (the value of [`MOSAIC_ATTRIBUTE`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Description {
    /// Union size `[height, width]` in pixels.
    #[serde(rename = "spatial:shape")]
    pub shape: [u64; 2],
    /// Union georeferencing, GeoZarr (Affine) order `[dx, rx, x0, ry, dy, y0]`.
    #[serde(rename = "spatial:transform")]
    pub transform: [f64; 6],
    /// The scenes, in paste order (later over earlier).
    pub scenes: Vec<SceneEntry>,
}

/// One scene of a [`Description`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SceneEntry {
    /// The scene's source file (for messages; null when unknown).
    pub source: Option<String>,
    /// Row and column of the union where the scene's first pixel lies.
    pub offset: [u64; 2],
    /// Scene size `[height, width]` in pixels.
    #[serde(rename = "spatial:shape")]
    pub shape: [u64; 2],
    /// Paths of the scene's level arrays, full resolution first.
    pub levels: Vec<String>,
}

/// The mosaic description of `index`, if its root group has one.
pub fn description(index: &Index) -> Result<Option<Description>> {
    let Some(value) = index.groups.get("").and_then(|g| g.get(MOSAIC_ATTRIBUTE)) else {
        return Ok(None);
    };
    serde_json::from_value(value.clone())
        .map(Some)
        .map_err(|e| {
            bad(
                index,
                format!("root attribute '{MOSAIC_ATTRIBUTE}' is malformed: {e}"),
            )
        })
}

fn bad(index: &Index, reason: String) -> Error {
    Error::MalformedIndex {
        index: index.source.clone(),
        reason,
    }
}

/// A scene's nodata as a native-order element, when GDAL shows one.
fn nodata(meta: &ArrayMeta) -> Option<Nodata> {
    let value = band::nodata(meta)?;
    let bytes = meta.dtype.native().fill_bytes(&fill_json(value)).ok()?;
    Some(Nodata::new(bytes, meta.dtype.kind == ScalarKind::Float))
}

/// The levels and georeferencing of the mosaic `desc` describes in
/// `index`: the union at the scenes' resolution (its bands, type, block
/// size and nodata those of the first scene, its CRS the first scene's),
/// then the overviews every scene allows (see [`overview`]). Every scene
/// must have the first scene's bands and data type and lie inside the union.
pub fn levels(
    index: &Index,
    locations: &Locations,
    desc: &Description,
    warnings: &mut Vec<String>,
) -> Result<(Vec<Level>, Vec<Georef>)> {
    let base = full_resolution(index, desc)?;
    let array = &index.arrays[base.array];
    let first = georef::levels(
        index,
        locations,
        None,
        &[LevelRef {
            array,
            asset: None,
            entry: None,
        }],
        // Scenes are read in stored order.
        georef::orientation::YOrder::Stored,
        warnings,
    )
    .remove(0);
    let (crs, area_or_point) = (first.crs, first.area_or_point);
    let gt = georef::affine_to_gdal(desc.transform);
    let mut georefs = vec![Georef {
        transform: Some(gt),
        crs: crs.clone(),
        geolocation: None,
        area_or_point,
        axes: AxisMap::default(),
    }];
    let mut levels = vec![base];
    while let Some((level, f)) = overview(index, desc, &levels[0], levels.len()) {
        let f = f as f64;
        georefs.push(Georef {
            transform: Some([gt[0], gt[1] * f, 0.0, gt[3], 0.0, gt[5] * f]),
            crs: crs.clone(),
            geolocation: None,
            area_or_point,
            axes: AxisMap::default(),
        });
        levels.push(level);
    }
    Ok((levels, georefs))
}

/// The full-resolution level, every scene checked against the description
/// and the first scene.
fn full_resolution(index: &Index, desc: &Description) -> Result<Level> {
    let [height, width] = desc.shape;
    if desc.scenes.is_empty() {
        return Err(bad(index, "the mosaic lists no scene".into()));
    }
    let mut scenes: Vec<Scene> = Vec::with_capacity(desc.scenes.len());
    let mut bands = 0;
    for (i, entry) in desc.scenes.iter().enumerate() {
        let name = entry.source.as_deref().unwrap_or("?");
        let scene_bad = |what: String| bad(index, format!("mosaic scene {i} ({name}): {what}"));
        let path = entry
            .levels
            .first()
            .ok_or_else(|| scene_bad("lists no level array".into()))?;
        let array = index
            .array_index(path)
            .ok_or_else(|| scene_bad(format!("no array '{path}' in the store")))?;
        let meta = &index.arrays[array].meta;
        let n = meta.shape.len();
        if n < 2 || meta.shape[n - 2..] != entry.shape {
            return Err(scene_bad(format!(
                "array '{path}' has shape {:?}, the mosaic says {:?} pixels",
                meta.shape, entry.shape
            )));
        }
        let [row, col] = entry.offset;
        let fits =
            |at: u64, size: u64, limit: u64| at.checked_add(size).is_some_and(|e| e <= limit);
        if !fits(row, entry.shape[0], height) || !fits(col, entry.shape[1], width) {
            return Err(scene_bad(format!(
                "{:?} pixels at row {row}, column {col} do not fit the {width} x {height} union",
                entry.shape
            )));
        }
        let scene_bands: u64 = meta.shape[..n - 2].iter().product();
        if i == 0 {
            bands = scene_bands;
        } else {
            let m0 = &index.arrays[scenes[0].array].meta;
            if scene_bands != bands
                || meta.dtype.kind != m0.dtype.kind
                || meta.dtype.size != m0.dtype.size
            {
                return Err(scene_bad(format!(
                    "{scene_bands} bands of {:?}{} differ from the first scene's {bands} bands of {:?}{}",
                    meta.dtype.kind,
                    meta.dtype.size * 8,
                    m0.dtype.kind,
                    m0.dtype.size * 8
                )));
            }
        }
        scenes.push(Scene {
            array,
            place: Placement {
                row,
                col,
                height: entry.shape[0],
                width: entry.shape[1],
            },
            nodata: nodata(meta),
        });
    }
    let first = &index.arrays[scenes[0].array].meta;
    let gap = scenes[0]
        .nodata
        .as_ref()
        .map_or_else(|| vec![0; first.dtype.size], |n| n.value().to_vec());
    Ok(mosaic_level(scenes, width, height, bands, gap))
}

/// Overview `k` of the mosaic whose full-resolution level is `base`, and
/// its reduction factor `f`: when every scene has a level `k` with the
/// bands and type of its level 0, `f` times smaller (each side within one
/// pixel of level 0's divided by `f`, the same whole `f` for every scene)
/// and every scene's offset is a multiple of `f`. Its size is the union's
/// divided by `f`, rounded up; scenes lie at their offsets divided by `f`.
fn overview(index: &Index, desc: &Description, base: &Level, k: usize) -> Option<(Level, u64)> {
    let full = base.mosaic.as_ref()?;
    let mut factor = None;
    let mut scenes = Vec::with_capacity(full.scenes.len());
    for (entry, s0) in desc.scenes.iter().zip(&full.scenes) {
        let array = index.array_index(entry.levels.get(k)?)?;
        let (meta, m0) = (&index.arrays[array].meta, &index.arrays[s0.array].meta);
        let n = meta.shape.len();
        if n != m0.shape.len() || meta.shape[..n - 2] != m0.shape[..n - 2] || meta.dtype != m0.dtype
        {
            return None;
        }
        let (h, w) = (meta.shape[n - 2], meta.shape[n - 1]);
        let f = (s0.place.width as f64 / w.max(1) as f64).round() as u64;
        let fits = |full: u64, reduced: u64| full / f <= reduced && reduced <= full.div_ceil(f);
        if f < 2
            || *factor.get_or_insert(f) != f
            || !fits(s0.place.width, w)
            || !fits(s0.place.height, h)
            || s0.place.row % f != 0
            || s0.place.col % f != 0
        {
            return None;
        }
        scenes.push(Scene {
            array,
            place: Placement {
                row: s0.place.row / f,
                col: s0.place.col / f,
                height: h,
                width: w,
            },
            nodata: nodata(meta),
        });
    }
    let f = factor?;
    let (width, height) = (base.width.div_ceil(f), base.height.div_ceil(f));
    let level = mosaic_level(scenes, width, height, base.bands, full.gap.clone());
    Some((level, f))
}

/// A mosaic level of `scenes` (the first scene's array standing for its
/// metadata).
fn mosaic_level(scenes: Vec<Scene>, width: u64, height: u64, bands: u64, gap: Vec<u8>) -> Level {
    Level {
        array: scenes[0].array,
        width,
        height,
        bands,
        mask: None,
        asset: None,
        entry: None,
        axes: AxisMap::default(),
        mosaic: Some(Scenes {
            width,
            height,
            scenes,
            gap,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::config::Settings;
    use crate::io::resolve::Base;
    use serde_json::json;

    /// A store of two scenes with two levels each (scene 1's halves round
    /// down, as COG overviews do), placed by `offsets`.
    fn store(offsets: [[u64; 2]; 2], union: [u64; 2]) -> Index {
        let zarray = |h: u64, w: u64| {
            json!({"shape": [1, h, w], "chunks": [1, 32, 32], "dtype": "|u1", "fill_value": 0,
                   "compressor": null, "filters": null, "zarr_format": 2})
            .to_string()
        };
        let scene = |i: usize, shape: [u64; 2]| {
            json!({"source": format!("s{i}.tif"), "offset": offsets[i], "spatial:shape": shape,
                   "levels": [format!("scenes/{i}/0/data"), format!("scenes/{i}/1/data")]})
        };
        let desc = json!({"spatial:shape": union, "spatial:transform": [10, 0, 0, 0, -10, 0],
                          "scenes": [scene(0, [100, 150]), scene(1, [91, 121])]});
        let doc = json!({".zgroup": r#"{"zarr_format": 2}"#,
            ".zattrs": json!({MOSAIC_ATTRIBUTE: desc}).to_string(),
            "scenes/0/0/data/.zarray": zarray(100, 150), "scenes/0/1/data/.zarray": zarray(50, 75),
            "scenes/1/0/data/.zarray": zarray(91, 121), "scenes/1/1/data/.zarray": zarray(45, 60)});
        Index::from_kerchunk_json("m.json", doc.to_string().as_bytes(), &[]).unwrap()
    }

    fn open(index: &Index) -> Result<(Vec<Level>, Vec<Georef>)> {
        let settings = Settings::from_lookup(|_| None).unwrap();
        let locations = Locations::resolve(index, &Base::Dir("/".into()), &settings);
        let desc = description(index)?.expect("a mosaic");
        levels(index, &locations, &desc, &mut Vec::new())
    }

    #[test]
    fn overviews_need_one_factor_and_divisible_offsets() {
        let index = store([[0, 0], [50, 100]], [141, 221]);
        let (levels, georefs) = open(&index).unwrap();
        assert_eq!(levels.len(), 2);
        let o = &levels[1];
        assert_eq!((o.width, o.height), (111, 71));
        let places: Vec<Placement> = o
            .mosaic
            .as_ref()
            .unwrap()
            .scenes
            .iter()
            .map(|s| s.place)
            .collect();
        assert_eq!(
            (places[1].row, places[1].col, places[1].height),
            (25, 50, 45)
        );
        assert_eq!(
            georefs[1].transform,
            Some([0.0, 20.0, 0.0, 0.0, 0.0, -20.0])
        );
        // An odd offset leaves the mosaic without overviews.
        let index = store([[0, 0], [50, 101]], [141, 222]);
        assert_eq!(open(&index).unwrap().0.len(), 1);
    }

    #[test]
    fn scenes_outside_the_union_are_errors() {
        let e = open(&store([[0, 0], [51, 100]], [141, 221]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("mosaic scene 1 (s1.tif): [91, 121] pixels at row 51"),
            "{e}"
        );
    }
}
