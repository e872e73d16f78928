//! Building a mosaic store out of the indexes of several scenes: each
//! scene's documents and references move under group `scenes/<i>`, and the
//! root group gets the [`Description`] placing them in the union.

use serde_json::{json, Value};

use crate::base::error::{Error, Result};
use crate::builders::writers::nest::nest;
use crate::conventions::attributes::MOSAIC_ATTRIBUTE;
use crate::index::Index;
use crate::io::config::Settings;
use crate::io::resolve::Base;
use crate::read::georef::orientation::YOrder;
use crate::read::mosaic::grid::{self, Footprint};
use crate::read::mosaic::Description;
use crate::read::mosaic::SceneEntry;
use crate::read::raster::Dataset;

/// The group holding the scenes, one child group per scene.
pub const SCENES_GROUP: &str = "scenes";

/// A scene as the mosaic sees it: its dataset and its name for messages.
struct View {
    dataset: Dataset,
    name: String,
}

/// The mosaic, named `source`, of `scenes` in order (later over earlier).
/// Each scene must be one raster with a geotransform; all must share the
/// first scene's CRS, pixel size, band count and data type, and lie a whole
/// number of pixels from it. Errors name the scene at fault.
pub fn mosaic(source: &str, scenes: Vec<Index>, settings: &Settings) -> Result<Index> {
    let bad = |reason: String| Error::MalformedIndex {
        index: source.to_string(),
        reason,
    };
    let cwd = Base::Dir(std::env::current_dir().unwrap_or_else(|_| "/".into()));
    let mut views = Vec::with_capacity(scenes.len());
    for index in scenes {
        let name = scene_name(&index);
        let dataset = Dataset::from_index(
            std::sync::Arc::new(index),
            &cwd,
            settings,
            None,
            YOrder::Stored,
        )?;
        views.push(View { dataset, name });
    }
    let first = views
        .first()
        .ok_or_else(|| bad("no scene to mosaic".into()))?;
    let mut footprints = Vec::with_capacity(views.len());
    for v in &views {
        let ds = &v.dataset;
        let Some(level) = ds.levels.first() else {
            return Err(bad(format!(
                "{} holds {} rasters (subdatasets), not one: a mosaic scene must be one raster",
                v.name,
                ds.subdatasets.len()
            )));
        };
        let transform = ds.georef[0].transform.ok_or_else(|| {
            bad(format!(
                "{} has no geotransform: a mosaic scene must be georeferenced",
                v.name
            ))
        })?;
        let (crs, crs0) = (&ds.georef[0].crs, &first.dataset.georef[0].crs);
        if crs != crs0 {
            return Err(bad(format!(
                "{} is in CRS {}, {} in {}: a mosaic needs one CRS",
                v.name,
                crs.as_deref().unwrap_or("(none)"),
                first.name,
                crs0.as_deref().unwrap_or("(none)")
            )));
        }
        let (meta, meta0) = (ds.level_meta(0)?, first.dataset.level_meta(0)?);
        let base = &first.dataset.levels[0];
        if level.bands != base.bands || meta.dtype != meta0.dtype {
            return Err(bad(format!(
                "{} has {} bands of {:?}{}, {} has {} of {:?}{}: a mosaic needs one band \
                 count and data type",
                v.name,
                level.bands,
                meta.dtype.kind,
                meta.dtype.size * 8,
                first.name,
                base.bands,
                meta0.dtype.kind,
                meta0.dtype.size * 8
            )));
        }
        footprints.push(Footprint {
            transform,
            width: level.width,
            height: level.height,
        });
    }
    let union = grid::union(&footprints).map_err(|m| {
        bad(format!(
            "{} is not on the grid of {}: {}",
            views[m.scene].name, first.name, m.reason
        ))
    })?;

    let mut entries = Vec::with_capacity(views.len());
    for (i, (v, place)) in views.iter().zip(&union.scenes).enumerate() {
        let prefix = format!("{SCENES_GROUP}/{i}");
        let levels = v.dataset.levels.iter().map(|l| {
            let path = &v.dataset.index.arrays[l.array].meta.path;
            format!("{prefix}/{path}").trim_end_matches('/').to_string()
        });
        entries.push(SceneEntry {
            source: Some(v.name.clone()),
            offset: [place.row, place.col],
            shape: [place.height, place.width],
            levels: levels.collect(),
        });
    }
    let t = union.transform;
    let description = Description {
        shape: [union.height, union.width],
        transform: [t[1], t[2], t[0], t[4], t[5], t[3]],
        scenes: entries,
    };
    let sources: Vec<&str> = views.iter().map(|v| v.name.as_str()).collect();
    let root = json!({"source": sources, MOSAIC_ATTRIBUTE: description});
    let parts: Vec<(String, &Index)> = views
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("{SCENES_GROUP}/{i}"), &*v.dataset.index))
        .collect();
    nest(
        source,
        &parts,
        root.as_object().cloned().unwrap_or_default(),
    )
}

/// What a scene's index calls its source: its root `source` attribute,
/// else where the index came from.
fn scene_name(index: &Index) -> String {
    index
        .groups
        .get("")
        .and_then(|g| g.get("source"))
        .and_then(Value::as_str)
        .unwrap_or(&index.source)
        .to_string()
}
