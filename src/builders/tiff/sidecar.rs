//! The files GDAL's GTiff driver reads beside a local TIFF: external
//! overviews (`NAME.ovr`) and an external mask (`NAME.msk`). Both are TIFFs
//! themselves, so their IFDs index like the source's own: levels and masks
//! whose chunks are referenced in the sidecar file (URL: the source's URL
//! with the sidecar's extension).
//!
//! As GDAL does, the `.ovr` file serves only a source without overviews of
//! its own (its first IFD is the first overview, its reduced IFDs the next
//! ones), and the `.msk` file only a source without a mask of its own. A
//! sidecar the index cannot use is left out, saying why; it never costs
//! the source.

use std::path::Path;

use super::{images, Image, Images};
use crate::base::error::Result;
use crate::formats::tiff::ifd;
use crate::io::source::Source;

/// The metadata item of a `.msk` file holding GDAL's mask flags of band N.
const MASK_FLAGS_ITEM: &str = "INTERNAL_MASK_FLAGS_";

/// GDAL's `GMF_PER_DATASET`: one mask shared by every band.
const PER_DATASET: &str = "2";

/// Adds to `levels` and `masks` (the source's own, `levels` not empty) the
/// images of the sidecars GDAL would read beside the local file `path`,
/// referenced from `url`.
pub(crate) fn add(
    path: &str,
    url: &str,
    nodata: Option<f64>,
    levels: &mut Vec<Image>,
    masks: &mut Vec<Image>,
) {
    if levels.len() == 1 {
        if let Some((file, file_url)) = find(path, url, "ovr") {
            match overviews(&file, &file_url, &levels[0], nodata) {
                Ok(found) => {
                    levels.extend(found.levels);
                    masks.extend(found.masks);
                }
                Err(e) => eprintln!("chunkref: {path}: external overviews {file} left out: {e}"),
            }
        }
    }
    let base = &levels[0];
    if !masks
        .iter()
        .any(|m| (m.width, m.height) == (base.width, base.height))
    {
        if let Some((file, file_url)) = find(path, url, "msk") {
            match mask(&file, &file_url, base) {
                Ok(found) => masks.extend(found),
                Err(e) => eprintln!("chunkref: {path}: external mask {file} left out: {e}"),
            }
        }
    }
}

/// The sidecar with extension `ext` (lower case, else upper case, as GDAL
/// looks for it) next to the local file `path`: its path and URL.
fn find(path: &str, url: &str, ext: &str) -> Option<(String, String)> {
    [ext.to_ascii_lowercase(), ext.to_ascii_uppercase()]
        .into_iter()
        .find_map(|e| {
            let file = format!("{path}.{e}");
            Path::new(&file)
                .is_file()
                .then(|| (file, format!("{url}.{e}")))
        })
}

/// The levels (and their masks) of the external overview file `file`,
/// which must have the bands and data type of the source's image `base`.
fn overviews(file: &str, url: &str, base: &Image, nodata: Option<f64>) -> Result<Images> {
    let src = Source::open(file, "TIFF")?;
    let tiff = ifd::read(&src)?;
    let found = images(&src, &tiff, url, nodata)?;
    if let Some(level) = found
        .levels
        .iter()
        .find(|l| l.samples != base.samples || l.dtype != base.dtype)
    {
        return Err(src.malformed(format!(
            "an overview of {} bands of {} where the image has {} bands of {}",
            level.samples, level.dtype, base.samples, base.dtype
        )));
    }
    Ok(found)
}

/// The masks of the external mask file `file`: its first IFD (the mask of
/// the source's image `base`) and its reduced ones (the masks of
/// overviews). Only a mask of one band that GDAL's metadata in it says is
/// shared by every band (`INTERNAL_MASK_FLAGS_N` = 2, GDAL's
/// `GMF_PER_DATASET`) can be an index level's mask.
fn mask(file: &str, url: &str, base: &Image) -> Result<Vec<Image>> {
    let src = Source::open(file, "TIFF")?;
    let tiff = ifd::read(&src)?;
    let xml = tiff.ifds[0]
        .ascii(crate::formats::tiff::tags::GDAL_METADATA)
        .unwrap_or_default();
    let names: Vec<String> = (1..=base.samples)
        .map(|b| format!("{MASK_FLAGS_ITEM}{b}"))
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let flags = crate::formats::tiff::gdal_metadata::dataset_items(xml, &names);
    if flags.len() != names.len() || flags.iter().any(|f| f != PER_DATASET) {
        return Err(src.malformed(format!(
            "its mask flags {flags:?} are not GDAL's per-dataset flag ({PER_DATASET}) for each \
             of the {} bands",
            base.samples
        )));
    }
    let found = images(&src, &tiff, url, None)?;
    let first = &found.levels[0];
    if first.samples != 1
        || !first.dtype.ends_with("u1")
        || (first.width, first.height) != (base.width, base.height)
    {
        return Err(src.malformed(format!(
            "a mask of {} bands of {}, {}x{}, for an image of {}x{}",
            first.samples, first.dtype, first.width, first.height, base.width, base.height
        )));
    }
    Ok(found.levels)
}
