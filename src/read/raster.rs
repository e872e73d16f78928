//! The GDAL view of an index: which array (or multiscale pyramid) is the
//! dataset, its overview levels, its bands, subdatasets and metadata, and
//! reading one block of several bands at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::base::dtype::ScalarKind;
use crate::base::error::{Error, Result};
use crate::conventions::attributes::SourceDriver;
use crate::conventions::attributes::DATETIME_ATTRIBUTE;
use crate::conventions::attributes::DEFAULT_RASTER;
use crate::conventions::attributes::METADATA_ITEMS_ATTRIBUTE;
use crate::conventions::attributes::NETCDF_DEFAULT_FILL_ATTRIBUTE;
use crate::conventions::attributes::SUBDATASET_DESCRIPTION;
use crate::conventions::attributes::VARIABLE_ORDER_ATTRIBUTE;
use crate::index::readers::icechunk;
use crate::index::readers::stack::TimeOptions;
use crate::index::zarr::ArrayMeta;
use crate::index::{Index, LoadOptions};
use crate::io::config::Settings;
use crate::io::index_file::{IndexFile, LocalFile};
use crate::io::resolve;
use crate::io::vsi::VsiFile;
use crate::read::axes::AxisMap;
use crate::read::block_windows::{self, BlockOut};
use crate::read::blocks::{self, BlockPlane};
use crate::read::chunk::Locations;
use crate::read::color_view;
use crate::read::georef::dims::{self, Coordinate, Dimension};
use crate::read::georef::orientation::YOrder;
use crate::read::georef::{self, band, Georef, LevelRef, Pyramid};
use crate::read::index_cache;
use crate::read::level::Level;
use crate::read::mosaic;
use crate::read::window::{self, Spacing, Window};

/// The connection prefix of the driver.
pub const PREFIX: &str = "CHUNKREF:";

/// Most bands one dataset may have.
pub const MAX_BANDS: u64 = 1 << 20;

/// An opened index file.
type IndexFileRef = Arc<dyn IndexFile>;

/// What a dataset name asks for.
#[derive(Debug, PartialEq, Eq)]
pub struct DatasetName {
    /// Path of the index file.
    pub index: String,
    /// Array or group path inside the store, if named.
    pub target: Option<String>,
}

impl DatasetName {
    /// Parses `index.json`, `CHUNKREF:index.json` or `CHUNKREF:"index.json":array/path`.
    pub fn parse(name: &str) -> Result<DatasetName> {
        let Some(rest) = strip_prefix_ci(name, PREFIX) else {
            return Ok(DatasetName {
                index: name.to_string(),
                target: None,
            });
        };
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').ok_or_else(|| Error::Usage {
                what: format!("unterminated quote in dataset name '{name}'"),
            })?;
            let index = quoted[..end].to_string();
            let after = &quoted[end + 1..];
            let target = match after.strip_prefix(':') {
                Some(t) if !t.is_empty() => Some(t.trim_matches('/').to_string()),
                Some(_) => None,
                None if after.is_empty() => None,
                None => {
                    return Err(Error::Usage {
                        what: format!("expected ':' after the quoted index path in '{name}'"),
                    })
                }
            };
            return Ok(DatasetName { index, target });
        }
        Ok(DatasetName {
            index: rest.to_string(),
            target: None,
        })
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// A level listed by a multiscale group, before its array is found.
#[derive(Debug, Clone)]
struct LevelSpec {
    asset: String,
    entry: Option<Map<String, Value>>,
}

/// What a multiscale group holds.
enum Multiscale {
    /// One raster array per level: (array, spec), finest first.
    Levels(Vec<(usize, LevelSpec)>),
    /// Level 0 holds several raster variables, each a pyramid of its own:
    /// the paths of those level-0 arrays.
    Variables(Vec<String>),
}

/// A subdataset entry: a name GDAL can open and a description.
#[derive(Debug, Clone)]
pub struct Subdataset {
    /// Full dataset name (`CHUNKREF:"index":path`).
    pub name: String,
    /// Human readable description.
    pub description: String,
}

/// An opened dataset: either a raster (with levels) or a list of subdatasets.
#[derive(Debug)]
pub struct Dataset {
    /// The index.
    pub index: Arc<Index>,
    locations: Locations,
    /// Level 0 is the full resolution, the rest are overviews.
    pub levels: Vec<Level>,
    /// Subdatasets (non-empty only when no raster was chosen).
    pub subdatasets: Vec<Subdataset>,
    /// What the index's relative references are joined to.
    base: resolve::Base,
    /// Coordinate arrays of non-spatial dimensions, by dimension name,
    /// read once (`NETCDF_DIM_*` metadata).
    coordinates: Mutex<HashMap<String, Option<Arc<Coordinate>>>>,
    /// Non-fatal problems to report as warnings.
    pub warnings: Vec<String>,
    /// Georeferencing of each level.
    pub georef: Vec<Georef>,
    /// The row order south-up grids are served in.
    y_order: YOrder,
}

impl Dataset {
    /// Opens a dataset name with open options (`TEMPLATE_<name>=<value>`,
    /// `TIME_STEP`, `TIME_START`, `TIME_END`, `Y_ORDER`, `RAW_COLOR`),
    /// reading with `settings`.
    pub fn open(name: &str, options: &[(String, String)], settings: &Settings) -> Result<Dataset> {
        let parsed = DatasetName::parse(name)?;
        let source = resolve::index_source(&parsed.index)?;
        let (how, open) = Dataset::loader(&source, options, settings)?;
        let load = || Index::load(&parsed.index, &source.vsi_path, &how, &open);
        // Stored colour components: an index of this open's own (the
        // arrays' metadata changed), never shared.
        let raw_color = color_view::raw_color(options)?;
        let fresh = || -> Result<Index> {
            let mut own = load()?;
            if raw_color {
                color_view::serve_stored(&mut own);
            }
            Ok(own)
        };
        let mut index = if settings.index_cache && !raw_color {
            let options = format!("{}\n{how:?}", parsed.index);
            index_cache::INDEXES.get_or_load(&source.vsi_path, options, load, |_| true)?
        } else {
            Arc::new(fresh()?)
        };
        // A 1-D array opens as one row, a 0-D one as one pixel, in an index
        // of its own: the target (a coordinate array a GEOLOCATION domain
        // names, any array named), or with no target a store's only array
        // (as GDAL's Zarr driver shows such a store).
        let row_array = |index: &Index| {
            let a = match parsed.target.as_deref() {
                Some(t) => index.array_index(t)?,
                None if index.arrays.len() == 1 && index.skipped.is_empty() => 0,
                None => return None,
            };
            (index.arrays[a].meta.shape.len() < 2).then_some(a)
        };
        if row_array(&index).is_some() {
            let mut own = fresh()?;
            if let Some(a) = row_array(&own) {
                own.arrays[a].meta.reshape_to_row();
            }
            index = Arc::new(own);
        }
        let y_order = YOrder::from_options(options)?;
        Dataset::from_index(
            index,
            &source.base,
            settings,
            parsed.target.as_deref(),
            y_order,
        )
    }

    /// How an index named by `source` is loaded with open options
    /// `options`: its load options (templates, time steps, version) and
    /// the opener of its files.
    fn loader(
        source: &resolve::IndexSource,
        options: &[(String, String)],
        settings: &Settings,
    ) -> Result<(LoadOptions, impl Fn(&str) -> Result<IndexFileRef>)> {
        let how = LoadOptions {
            overrides: options
                .iter()
                .filter_map(|(k, v)| {
                    strip_prefix_ci(k, "TEMPLATE_").map(|t| (t.to_string(), v.clone()))
                })
                .collect(),
            time: TimeOptions::from_options(options),
            eager_rows: settings.table_eager_rows,
            version: icechunk::Version::from_options(options)?,
            ..LoadOptions::default()
        };
        // A local index is read straight from disk: GDAL's file layer adds
        // nothing to it, and opening through it took 15 us of an open.
        let local = matches!(source.base, resolve::Base::Dir(_));
        let open = move |path: &str| -> Result<IndexFileRef> {
            if local {
                Ok(Arc::new(LocalFile::open(path)?))
            } else {
                Ok(Arc::new(VsiFile::open(path)?))
            }
        };
        Ok((how, open))
    }

    /// Opens the whole store a dataset name's index holds, for the
    /// multidimensional view: every array kept (0-D and 1-D ones reshaped
    /// to one row, so that window reads serve them), no raster chosen.
    /// Open options as for [`Dataset::open`].
    pub fn open_store(
        name: &str,
        options: &[(String, String)],
        settings: &Settings,
    ) -> Result<Dataset> {
        let parsed = DatasetName::parse(name)?;
        let source = resolve::index_source(&parsed.index)?;
        let (how, open) = Dataset::loader(&source, options, settings)?;
        let mut index = Index::load(&parsed.index, &source.vsi_path, &how, &open)?;
        for array in &mut index.arrays {
            array.meta.reshape_to_row();
        }
        let index = Arc::new(index);
        Ok(Dataset {
            warnings: index.warnings.clone(),
            locations: Locations::resolve(&index, &source.base, settings),
            index,
            levels: Vec::new(),
            subdatasets: Vec::new(),
            base: source.base.clone(),
            coordinates: Mutex::default(),
            georef: Vec::new(),
            y_order: YOrder::Stored,
        })
    }

    /// The store's arrays (indices into the index's) in the order GDAL's
    /// driver of their source lists them, when `chunkref index` recorded
    /// it; else by path.
    pub fn array_order(&self) -> Vec<usize> {
        let listing = Listing::of(&self.index);
        let mut arrays: Vec<usize> = (0..self.index.arrays.len()).collect();
        arrays.sort_by_key(|&a| listing.rank(&self.index.arrays[a].meta.path));
        arrays
    }

    /// The georeferencing of array `array` (of 2 or more dimensions) as
    /// stored: rows in stored order; `warnings` receives what could not be
    /// used.
    pub fn stored_georef(&self, array: usize, warnings: &mut Vec<String>) -> Georef {
        let level = LevelRef {
            array: &self.index.arrays[array],
            asset: None,
            entry: None,
        };
        let mut geo = georef::levels(
            &self.index,
            &self.locations,
            None,
            &[level],
            YOrder::Stored,
            warnings,
        );
        geo.pop().unwrap_or_default()
    }

    /// Reads `window` of the leading-axis indices `bands` of array `array`
    /// as stored (no axis map) into `out` at `spacing`, as native-order
    /// elements, through the same batched window read as the raster view.
    pub fn read_stored(
        &self,
        array: usize,
        window: Window,
        bands: &[Vec<u64>],
        out: &mut [u8],
        spacing: Spacing,
    ) -> Result<()> {
        let array = self.index.arrays.get(array).ok_or_else(|| Error::Usage {
            what: format!("array {array} does not exist in {}", self.index.source),
        })?;
        // The stored plane as it is: the identity axis map.
        self.read_served(array, AxisMap::default(), window, bands, out, spacing)
    }

    /// The dataset an index read from `base` shows: the raster `target`
    /// names (an array or multiscale group), else the mosaic, pyramid or
    /// single raster of the store, else its subdatasets; south-up grids
    /// served in `y_order`.
    pub fn from_index(
        index: Arc<Index>,
        base: &resolve::Base,
        settings: &Settings,
        target: Option<&str>,
        y_order: YOrder,
    ) -> Result<Dataset> {
        let locations = Locations::resolve(&index, base, settings);
        let mut ds = Dataset {
            warnings: index.warnings.clone(),
            index,
            locations,
            levels: Vec::new(),
            subdatasets: Vec::new(),
            base: base.clone(),
            coordinates: Mutex::default(),
            georef: Vec::new(),
            y_order,
        };
        ds.choose(target)?;
        Ok(ds)
    }

    /// Whether later opens may share this dataset: it keeps no decoded
    /// pixels (a mosaic's chunk cache belongs to one open, so that a scene
    /// rewritten between opens is read again).
    pub fn shareable(&self) -> bool {
        !self.locations.keeps_decoded()
    }

    /// The GDAL names (local paths, `/vsis3/...`, `/vsicurl/...`) of the
    /// files the index refers to, in index order; URLs that do not resolve
    /// are left out.
    pub fn file_names(&self) -> Vec<String> {
        (0..self.index.files.urls().len() as u32)
            .filter_map(|f| self.file_name(f))
            .collect()
    }

    /// The GDAL name of file `file` of the index (see
    /// [`Dataset::file_names`]); `None` when its URL does not resolve.
    pub fn file_name(&self, file: u32) -> Option<String> {
        resolve::resolve(self.index.files.url(file), &self.base)
            .ok()
            .map(|loc| loc.gdal_name())
    }

    /// Picks the raster (pyramid or array) or lists subdatasets.
    fn choose(&mut self, target: Option<&str>) -> Result<()> {
        let index = Arc::clone(&self.index);
        if let Some(t) = target {
            if let Some(ms) = multiscale(&index, t, None)? {
                return self.use_multiscale(t, ms);
            }
            // The array of a pyramid level: from level 0, the variable's
            // pyramid; from another level, that array alone (with its
            // layout entry's georeferencing).
            let member = pyramid_member(&index, t);
            if let Some(m) = member.as_ref().filter(|m| m.first) {
                if let Some(ms) = multiscale(&index, m.group, Some(m.variable))? {
                    return self.use_multiscale(m.group, ms);
                }
            }
            return match index.array_index(t) {
                Some(a) if index.arrays[a].meta.shape.len() >= 2 => {
                    self.set_levels(vec![(a, member.map(|m| m.spec))], None)
                }
                Some(_) => Err(Error::Usage {
                    what: format!(
                        "array '{t}' in {} has fewer than 2 dimensions",
                        index.source
                    ),
                }),
                None => Err(match index.skipped.get(t) {
                    Some(reason) => Error::unsupported(format!(
                        "array '{t}' of {} cannot be read: {reason}",
                        index.source
                    )),
                    None => Error::Usage {
                        what: format!("no array or multiscale group '{t}' in {}", index.source),
                    },
                }),
            };
        }
        if let Some(desc) = mosaic::description(&index)? {
            (self.levels, self.georef) =
                mosaic::levels(&index, &self.locations, &desc, &mut self.warnings)?;
            // Scene chunks straddle the mosaic's blocks: keep them decoded,
            // enough for the chunks under four rows of blocks (GDAL reads a
            // row of blocks at a time; scenes overlap). A larger cache only
            // holds memory that fresh pages must then be found for.
            let wanted = self.levels.first().map_or(0, |l| {
                let meta = &index.arrays[l.array].meta;
                let rows = meta.chunks[meta.chunks.len() - 2];
                [l.width, rows, l.bands, meta.dtype.size as u64]
                    .into_iter()
                    .fold(4u64, u64::saturating_mul)
            });
            self.locations
                .keep_decoded(usize::try_from(wanted).unwrap_or(usize::MAX));
            return Ok(());
        }
        if let Some(ms) = multiscale(&index, "", None)? {
            return self.use_multiscale("", ms);
        }
        let mut candidates: Vec<Subdataset> = Vec::new();
        let mut single = None;
        let pyramids: Vec<&String> = index
            .groups
            .iter()
            .filter(|(g, attrs)| !g.is_empty() && attrs.contains_key("multiscales"))
            .map(|(g, _)| g)
            .collect();
        for g in &pyramids {
            let description = index
                .groups
                .get(g.as_str())
                .and_then(|attrs| attrs.get(SUBDATASET_DESCRIPTION))
                .and_then(Value::as_str)
                .map_or_else(|| format!("multiscale group {g}"), str::to_string);
            candidates.push(self.subdataset(g, &description));
        }
        let listing = Listing::of(&index);
        for i in self.array_order() {
            let m = &index.arrays[i].meta;
            let in_pyramid = pyramids
                .iter()
                .any(|g| m.path.starts_with(&format!("{g}/")));
            if m.shape.len() < 2 || in_pyramid {
                continue;
            }
            single = Some(i);
            candidates.push(self.subdataset(&m.path, &listing.describe(&index, m)));
        }
        match (candidates.len(), single) {
            (0, _) => Err(Error::MalformedIndex {
                index: index.source.clone(),
                reason: "no array with 2 or more dimensions".into(),
            }),
            (1, Some(a)) => self.set_levels(vec![(a, None)], None),
            _ => {
                let default = index
                    .groups
                    .get("")
                    .and_then(|attrs| attrs.get(DEFAULT_RASTER))
                    .and_then(Value::as_str)
                    .filter(|d| {
                        candidates
                            .iter()
                            .any(|c| c.name == self.subdataset(d, "").name)
                    })
                    .map(str::to_string);
                if let Some(d) = default {
                    self.choose(Some(&d))?;
                }
                self.subdatasets = candidates;
                Ok(())
            }
        }
    }

    fn subdataset(&self, path: &str, description: &str) -> Subdataset {
        Subdataset {
            name: format!("{PREFIX}\"{}\":{path}", self.index.source),
            description: description.to_string(),
        }
    }

    /// Uses the levels of the multiscale group `group`, or lists its variables.
    fn use_multiscale(&mut self, group: &str, ms: Multiscale) -> Result<()> {
        match ms {
            Multiscale::Levels(levels) => {
                let levels = levels.into_iter().map(|(a, s)| (a, Some(s))).collect();
                self.set_levels(levels, Some(group))
            }
            Multiscale::Variables(paths) => {
                self.subdatasets = paths
                    .iter()
                    .map(|p| self.subdataset(p, &format!("multiscale variable {p}")))
                    .collect();
                Ok(())
            }
        }
    }

    /// Sets the levels (arrays with their multiscale specs) and georeferences
    /// them; `pyramid` is the multiscale group they come from.
    fn set_levels(
        &mut self,
        arrays: Vec<(usize, Option<LevelSpec>)>,
        pyramid: Option<&str>,
    ) -> Result<()> {
        let index = Arc::clone(&self.index);
        let mut levels: Vec<Level> = Vec::new();
        for (a, spec) in arrays {
            let m = &index.arrays[a].meta;
            let n = m.shape.len();
            // An array of an HDF5 file without rows or columns is a raster
            // of that size, as GDAL's HDF5 driver opens one; GDAL's Zarr
            // driver refuses empty arrays, and so does ChunkRef elsewhere
            // (and everywhere for arrays without bands).
            let empty = if SourceDriver::of(m) == Some(SourceDriver::Hdf5) {
                m.shape[..n - 2].contains(&0)
            } else {
                m.shape.contains(&0)
            };
            if empty {
                return Err(Error::MalformedIndex {
                    index: index.source.clone(),
                    reason: format!(
                        "array '{}' is empty (shape {:?}): a raster needs one pixel or more",
                        m.path, m.shape
                    ),
                });
            }
            let bands = m.shape[..n - 2]
                .iter()
                .try_fold(1u64, |acc, &d| acc.checked_mul(d))
                .filter(|&b| b <= MAX_BANDS)
                .ok_or_else(|| Error::Limits {
                    what: format!("array '{}' would have more than {MAX_BANDS} bands", m.path),
                })?;
            let level = Level {
                array: a,
                width: m.shape[n - 1],
                height: m.shape[n - 2],
                bands,
                mask: mask_array(&index, m),
                asset: spec.as_ref().map(|s| s.asset.clone()),
                entry: spec.and_then(|s| s.entry),
                mosaic: None,
                axes: AxisMap::default(),
            };
            if let Some(base) = levels.first() {
                let bm = &index.arrays[base.array].meta;
                if level.bands != base.bands
                    || m.dtype.kind != bm.dtype.kind
                    || m.dtype.size != bm.dtype.size
                {
                    self.warnings.push(format!(
                        "level '{}' is ignored: its bands or data type differ from level '{}'",
                        m.path, bm.path
                    ));
                    continue;
                }
            }
            levels.push(level);
        }
        let refs: Vec<LevelRef<'_>> = levels
            .iter()
            .map(|l| LevelRef {
                array: &index.arrays[l.array],
                asset: l.asset.as_deref(),
                entry: l.entry.as_ref(),
            })
            .collect();
        let pyramid = pyramid.and_then(|g| {
            Some(Pyramid {
                group: g,
                multiscales: index.groups.get(g)?.get("multiscales")?,
            })
        });
        let geo = georef::levels(
            &index,
            &self.locations,
            pyramid,
            &refs,
            self.y_order,
            &mut self.warnings,
        );
        drop(refs);
        // GDAL takes overviews to cover the extent of the dataset.
        let (base_gt, base_size) = (geo[0].transform, (levels[0].height, levels[0].width));
        let base_path = index.arrays[levels[0].array].meta.path.clone();
        let mut kept = Vec::with_capacity(levels.len());
        for (i, (l, g)) in levels.into_iter().zip(geo).enumerate() {
            if let (Some(b), Some(t), true) = (base_gt, g.transform, i > 0) {
                if !georef::same_extent(b, base_size, t, (l.height, l.width)) {
                    self.warnings.push(format!(
                        "level '{}' is ignored: its georeferencing {t:?} does not cover the extent of level '{base_path}' ({b:?}, {} x {} pixels)",
                        index.arrays[l.array].meta.path, base_size.1, base_size.0
                    ));
                    continue;
                }
            }
            kept.push((Level { axes: g.axes, ..l }, g));
        }
        (self.levels, self.georef) = kept.into_iter().unzip();
        // kerchunk's own GRIB stores record no shape of the earth, on which
        // the CRS of GDAL's GRIB driver depends: said, not left silent.
        if let (Some(l), Some(g)) = (self.levels.first(), self.georef.first()) {
            let meta = &index.arrays[l.array].meta;
            if g.crs.is_none()
                && meta
                    .codecs
                    .names()
                    .contains(&crate::codec::grib::KERCHUNK_NAME)
            {
                self.warnings.push(format!(
                    "array '{}' holds GRIB messages referenced by kerchunk (codec grib), \
                     whose attributes record no shape of the earth: no CRS, where GDAL's \
                     GRIB driver gives one (`chunkref index` of the GRIB file records it)",
                    meta.path
                ));
            }
        }
        if self.levels.iter().any(|l| !l.axes.is_identity()) {
            // Served blocks straddle stored chunks: keep the chunks under
            // four rows of blocks decoded, as for mosaics.
            let l = &self.levels[0];
            let meta = &index.arrays[l.array].meta;
            let n = meta.chunks.len();
            let wanted = [
                meta.chunks[n - 1],
                meta.chunks[n - 2],
                l.bands,
                meta.dtype.size as u64,
            ]
            .into_iter()
            .fold(
                4 * l.width.div_ceil(meta.chunks[n - 1]),
                u64::saturating_mul,
            );
            self.locations
                .keep_decoded(usize::try_from(wanted).unwrap_or(usize::MAX));
        }
        Ok(())
    }

    /// What GDAL shows of band `band` (0-based) of `level`.
    pub fn band_info(&self, level: usize, band: u64) -> Result<band::BandInfo> {
        Ok(band::info(self.level_meta(level)?, band))
    }

    /// The array metadata of a level.
    pub fn level_meta(&self, level: usize) -> Result<&ArrayMeta> {
        let l = self.levels.get(level).ok_or_else(|| Error::Usage {
            what: format!(
                "level {level} does not exist ({} levels)",
                self.levels.len()
            ),
        })?;
        Ok(&self.index.arrays[l.array].meta)
    }

    /// Splits a band number (0-based) into indices along the leading axes.
    pub(crate) fn band_indices(meta: &ArrayMeta, band: u64) -> Vec<u64> {
        let n = meta.shape.len();
        let mut idx = vec![0u64; n - 2];
        let mut rest = band;
        for d in (0..n - 2).rev() {
            idx[d] = rest % meta.shape[d];
            rest /= meta.shape[d];
        }
        idx
    }

    /// The bands (0-based, ascending) whose pixels live in the same chunks as `band`.
    pub fn bands_sharing_chunk(&self, level: usize, band: u64) -> Result<Vec<u64>> {
        let meta = self.level_meta(level)?;
        let bands = self.levels[level].bands;
        if band >= bands {
            return Err(Error::Usage {
                what: format!("band {} does not exist ({bands} bands)", band + 1),
            });
        }
        // The chunk covers, along each leading axis d, indices
        // [chunk_d * c_d, min((chunk_d + 1) * c_d, shape_d)); enumerate that
        // box in C order and ravel each index back to a band number.
        let lead = meta.shape.len() - 2;
        let mine = Dataset::band_indices(meta, band);
        let lo: Vec<u64> = (0..lead)
            .map(|d| mine[d] / meta.chunks[d] * meta.chunks[d])
            .collect();
        let hi: Vec<u64> = (0..lead)
            .map(|d| (lo[d] + meta.chunks[d]).min(meta.shape[d]))
            .collect();
        let mut idx = lo.clone();
        let mut out = Vec::new();
        loop {
            out.push(
                idx.iter()
                    .zip(&meta.shape)
                    .fold(0, |acc, (i, s)| acc * s + i),
            );
            let Some(d) = (0..lead).rev().find(|&d| idx[d] + 1 < hi[d]) else {
                break;
            };
            idx[d] += 1;
            idx[d + 1..].copy_from_slice(&lo[d + 1..]);
        }
        Ok(out)
    }

    /// Reads many block planes of `level` at once: plane `i` is block
    /// (`blocks[i].0`, `blocks[i].1`) of band `bands[i]` (0-based), written
    /// to `outputs[i]`, a native-order block buffer of `block_width *
    /// block_height` elements. Every chunk is fetched and decoded once, all
    /// together (see [`blocks`]); on error the buffers must be discarded.
    pub fn read_blocks(
        &self,
        level: usize,
        blocks: &[(u64, u64)],
        bands: &[u64],
        outputs: Vec<&mut [u8]>,
    ) -> Result<()> {
        let meta = self.level_meta(level)?;
        let count = self.levels[level].bands;
        if blocks.len() != bands.len() || bands.len() != outputs.len() {
            return Err(Error::Usage {
                what: "one block and one output buffer per band is required".into(),
            });
        }
        if let Some(b) = bands.iter().find(|&&b| b >= count) {
            return Err(Error::Usage {
                what: format!("band {} does not exist ({count} bands)", b + 1),
            });
        }
        let l = &self.levels[level];
        if l.mosaic.is_some() || !l.axes.is_identity() {
            // Blocks that straddle chunks (a mosaic's scenes, a remapped
            // plane) are read through windows.
            let n = meta.chunks.len();
            let block = (meta.chunks[n - 1], meta.chunks[n - 2]);
            let outs = outputs
                .into_iter()
                .enumerate()
                .map(|(i, out)| BlockOut {
                    x: blocks[i].0,
                    y: blocks[i].1,
                    band: bands[i],
                    out,
                })
                .collect();
            if let Some(scenes) = &l.mosaic {
                return scenes.read_blocks(&self.index, &self.locations, block, outs);
            }
            let fill = meta
                .fill
                .clone()
                .unwrap_or_else(|| vec![0; meta.dtype.size]);
            return block_windows::read(
                (l.width, l.height),
                block,
                &fill,
                outs,
                &mut |w, b, o, s| self.read_window(level, w, b, o, s),
            );
        }
        let mut planes: Vec<BlockPlane<'_>> = outputs
            .into_iter()
            .enumerate()
            .map(|(i, out)| BlockPlane {
                x: blocks[i].0,
                y: blocks[i].1,
                lead: Dataset::band_indices(meta, bands[i]),
                out,
            })
            .collect();
        let array = &self.index.arrays[self.levels[level].array];
        blocks::read(&self.index, &self.locations, array, &mut planes)
    }

    /// Reads `window` of `bands` (0-based, any order, repeats allowed) of
    /// `level` into `out` at `spacing`, as native-order elements: all the
    /// chunks it needs are fetched together and decoded in parallel (see
    /// [`window`]).
    pub fn read_window(
        &self,
        level: usize,
        window: Window,
        bands: &[u64],
        out: &mut [u8],
        spacing: Spacing,
    ) -> Result<()> {
        let meta = self.level_meta(level)?;
        let count = self.levels[level].bands;
        if let Some(b) = bands.iter().find(|&&b| b >= count) {
            return Err(Error::Usage {
                what: format!("band {} does not exist ({count} bands)", b + 1),
            });
        }
        if let Some(scenes) = &self.levels[level].mosaic {
            return scenes.read_window(&self.index, &self.locations, window, bands, out, spacing);
        }
        let band_idx: Vec<Vec<u64>> = bands
            .iter()
            .map(|&b| Dataset::band_indices(meta, b))
            .collect();
        let l = &self.levels[level];
        self.read_served(
            &self.index.arrays[l.array],
            l.axes,
            window,
            &band_idx,
            out,
            spacing,
        )
    }

    /// Starts fetching the chunks under `window` of `bands` (0-based) of
    /// `level`, those of band `except` left out, ahead of the reads a
    /// client walking the bands one by one is expected to make next (see
    /// [`crate::read::read_ahead`]); replaces the previous read ahead. Mosaic
    /// levels and levels served through an axis map are not read ahead.
    /// The guess belongs to `owner`, the GDAL dataset making it (datasets
    /// on one index share this one). Returns how many chunks are fetched
    /// ahead.
    pub fn read_ahead(
        &self,
        owner: usize,
        level: usize,
        window: Window,
        bands: std::ops::Range<u64>,
        except: u64,
    ) -> Result<usize> {
        let meta = self.level_meta(level)?;
        let l = &self.levels[level];
        if l.mosaic.is_some() || !l.axes.is_identity() {
            return Ok(0);
        }
        let n = meta.shape.len();
        window::check_window(window, meta.shape[n - 1], meta.shape[n - 2], &meta.path)?;
        let (ch, cw) = (meta.chunks[n - 2], meta.chunks[n - 1]);
        let rows = window.y / ch..=(window.y + window.height - 1) / ch;
        let cols = window.x / cw..=(window.x + window.width - 1) / cw;
        let chunks_of = |band: u64| -> Vec<Vec<u64>> {
            let lead: Vec<u64> = Dataset::band_indices(meta, band)
                .iter()
                .zip(&meta.chunks)
                .map(|(i, c)| i / c)
                .collect();
            rows.clone()
                .flat_map(|cy| cols.clone().map(move |cx| (cy, cx)))
                .map(|(cy, cx)| lead.iter().copied().chain([cy, cx]).collect())
                .collect()
        };
        let mut seen: std::collections::HashSet<Vec<u64>> = chunks_of(except).into_iter().collect();
        let mut idxs: Vec<Vec<u64>> = Vec::new();
        for band in bands.start..bands.end.min(l.bands) {
            for idx in chunks_of(band) {
                if seen.insert(idx.clone()) {
                    idxs.push(idx);
                }
            }
        }
        Ok(self
            .locations
            .read_ahead(owner, &self.index.arrays[l.array], &idxs))
    }

    /// Stops `owner`'s read ahead (see [`Dataset::read_ahead`]): the guess
    /// was wrong, or the GDAL dataset is closed.
    pub fn stop_read_ahead(&self, owner: usize) {
        self.locations.stop_read_ahead(owner);
    }

    /// Reads the served `window` of the bands at leading-axis indices
    /// `bands` of `array`, whose plane `axes` maps to the stored one, into
    /// `out` at `spacing`.
    fn read_served(
        &self,
        array: &crate::index::Array,
        axes: AxisMap,
        window: Window,
        bands: &[Vec<u64>],
        out: &mut [u8],
        spacing: Spacing,
    ) -> Result<()> {
        if axes.is_identity() {
            return window::read(
                &self.index,
                &self.locations,
                array,
                window,
                bands,
                out,
                spacing,
                window::BATCH_BYTES,
            );
        }
        let meta = &array.meta;
        let n = meta.shape.len();
        let (height, width) = (meta.shape[n - 2], meta.shape[n - 1]);
        window::check_window(window, width, height, &meta.path)?;
        window::check_buffer(window, bands.len(), meta.dtype.size, spacing, out.len())?;
        let layers: Vec<window::Layer<'_>> = axes
            .parts(window, width, height)
            .into_iter()
            .map(|part| window::Layer {
                array,
                window: part.stored,
                bands,
                at: part.at,
                nodata: None,
                rows_reversed: axes.rows_reversed,
            })
            .collect();
        window::read_layers(
            &self.index,
            &self.locations,
            &layers,
            out,
            spacing,
            window::BATCH_BYTES,
        )
    }

    /// Reads block (`block_x`, `block_y`) of the mask of `level` into `out`
    /// (one byte per pixel of a mask chunk): 255 where valid, 0 elsewhere.
    pub fn read_mask_block(
        &self,
        level: usize,
        block_x: u64,
        block_y: u64,
        out: &mut [u8],
    ) -> Result<()> {
        self.level_meta(level)?;
        let array = self.levels[level].mask.ok_or_else(|| Error::Usage {
            what: format!("level {level} has no mask"),
        })?;
        let array = &self.index.arrays[array];
        let lead = vec![0; array.meta.shape.len() - 2];
        let axes = self.levels[level].axes;
        if axes.is_identity() {
            let plane = BlockPlane {
                x: block_x,
                y: block_y,
                lead,
                out: &mut *out,
            };
            blocks::read(&self.index, &self.locations, array, &mut [plane])?;
        } else {
            let m = &array.meta;
            let n = m.chunks.len();
            let (bw, bh) = (m.chunks[n - 1], m.chunks[n - 2]);
            let (x, y) = (block_x.saturating_mul(bw), block_y.saturating_mul(bh));
            let window = Window {
                x,
                y,
                width: bw.min(m.shape[n - 1].saturating_sub(x)),
                height: bh.min(m.shape[n - 2].saturating_sub(y)),
            };
            let spacing = Spacing::packed(1, bw as usize, bh as usize);
            self.read_served(array, axes, window, &[lead], out, spacing)?;
        }
        for v in out.iter_mut() {
            *v = if *v == 0 { 0 } else { 255 };
        }
        Ok(())
    }

    /// The coordinate of dimension `name` (of `len` elements) of level 0's
    /// array, if it has one (read once).
    fn coordinate(&self, name: &str, len: u64) -> Option<Arc<Coordinate>> {
        let mut known = self.coordinates.lock().unwrap_or_else(|p| p.into_inner());
        let coordinate = known.entry(name.to_string()).or_insert_with(|| {
            let array = &self.index.arrays[self.levels.first()?.array];
            let (coord, values) = georef::coords::dimension_coordinate(
                &self.index,
                &self.locations,
                array,
                name,
                len,
            )?;
            Some(Arc::new(Coordinate::new(&coord.meta, &values)))
        });
        coordinate.clone()
    }

    /// The non-spatial dimensions of level 0's array `meta`, slowest first,
    /// with their coordinates; empty when the array does not name them.
    fn dimensions(&self, meta: &ArrayMeta) -> Vec<Dimension> {
        let Some(names) = &meta.dimension_names else {
            return Vec::new();
        };
        let n = meta.shape.len().saturating_sub(2);
        names
            .iter()
            .zip(&meta.shape)
            .take(n)
            .map(|(name, &len)| Dimension {
                name: name.clone(),
                len,
                coordinate: self.coordinate(name, len),
            })
            .collect()
    }

    /// Every variable of the group holding `meta` (arrays the driver leaves
    /// out included) with its attributes, `meta`'s own with its fill value
    /// as `_FillValue` (kerchunk moves that attribute into the metadata),
    /// for GDAL's netCDF view of the dataset.
    fn group_variables(&self, meta: &ArrayMeta) -> Vec<(String, Map<String, Value>)> {
        let group = |path: &str| path.rsplit_once('/').map_or("", |(g, _)| g).to_string();
        let mine = group(&meta.path);
        let name = |path: &str| path.rsplit('/').next().unwrap_or_default().to_string();
        let served = self.index.arrays.iter().map(|a| {
            let mut attrs = a.meta.attributes.clone();
            // (A netCDF default fill is no attribute of the variable.)
            let default = attrs.contains_key(NETCDF_DEFAULT_FILL_ATTRIBUTE);
            attrs.retain(|k, _| !k.starts_with("chunkref:"));
            if a.meta.path == meta.path && !attrs.contains_key("_FillValue") && !default {
                if let Some(fill) = band::nodata(meta).and_then(serde_json::Number::from_f64) {
                    attrs.insert("_FillValue".into(), Value::Number(fill));
                }
            }
            (a.meta.path.clone(), attrs)
        });
        let skipped = self.index.skipped.keys().map(|path| {
            let key = |doc: &str| match path.as_str() {
                "" => doc.to_string(),
                p => format!("{p}/{doc}"),
            };
            let docs = &self.index.metadata;
            let attrs = docs
                .get(&key(".zattrs"))
                .and_then(Value::as_object)
                .or_else(|| docs.get(&key("zarr.json"))?.get("attributes")?.as_object())
                .cloned()
                .unwrap_or_default();
            (path.clone(), attrs)
        });
        served
            .chain(skipped)
            .filter(|(path, _)| group(path) == mine)
            .map(|(path, attrs)| (name(&path), attrs))
            .collect()
    }

    /// Metadata items (`KEY=VALUE`) of a domain: `""` (default), `IMAGE_STRUCTURE`,
    /// `SUBDATASETS`, `RPC` or `GEOLOCATION`, for the dataset (`band` = None)
    /// or a band of level 0.
    pub fn metadata(&self, domain: &str, band: Option<u64>) -> Vec<String> {
        if domain.eq_ignore_ascii_case("SUBDATASETS") && band.is_none() {
            return self
                .subdatasets
                .iter()
                .enumerate()
                .flat_map(|(i, s)| {
                    [
                        format!("SUBDATASET_{}_NAME={}", i + 1, s.name),
                        format!("SUBDATASET_{}_DESC={}", i + 1, s.description),
                    ]
                })
                .collect();
        }
        let Ok(meta) = self.level_meta(0) else {
            return Vec::new();
        };
        match (domain.to_ascii_uppercase().as_str(), band) {
            ("", None) => {
                let mut items = attribute_items(&meta.attributes);
                items.extend(attribute_items(&dims::dataset_metadata(
                    &self.dimensions(meta),
                    &self.group_variables(meta),
                    self.index.groups.get("").unwrap_or(&Map::new()),
                )));
                if let Some(aop) = self.georef.first().and_then(|g| g.area_or_point) {
                    items.retain(|i| !i.starts_with("AREA_OR_POINT="));
                    items.push(format!("AREA_OR_POINT={aop}"));
                }
                items
            }
            ("", Some(b)) => {
                let names = meta.dimension_names.clone().unwrap_or_default();
                let indices = Dataset::band_indices(meta, b);
                let mut items: Vec<String> = indices
                    .iter()
                    .enumerate()
                    .map(|(d, i)| {
                        let name = names.get(d).cloned().unwrap_or_else(|| format!("dim{d}"));
                        format!("DIM_{name}_INDEX={i}")
                    })
                    .collect();
                // The coordinate values, as GDAL's netCDF driver shows them.
                let variable = meta.path.rsplit('/').next().unwrap_or_default();
                items.extend(dims::band_items(variable, &self.dimensions(meta), &indices));
                let datetime = meta
                    .attributes
                    .get(DATETIME_ATTRIBUTE)
                    .and_then(|l| l.get(*indices.first()? as usize)?.as_str());
                if let Some(d) = datetime {
                    items.push(format!("DATETIME={d}"));
                }
                let attrs = band::attributes(meta, b);
                let cf: Map<String, Value> = band::METADATA_ATTRIBUTES
                    .iter()
                    .filter_map(|k| Some((k.to_string(), attrs.get(*k)?.clone())))
                    .collect();
                items.extend(attribute_items(&cf));
                if let Some(Value::Object(own)) = attrs.get(METADATA_ITEMS_ATTRIBUTE) {
                    items.extend(attribute_items(own));
                }
                items
            }
            ("IMAGE_STRUCTURE", None) => {
                let mut items = Vec::new();
                if !meta.codecs.is_empty() {
                    items.push(format!("COMPRESSION={}", meta.codecs.compression()));
                }
                let n = meta.chunks.len();
                let per_chunk: u64 = meta.chunks[..n - 2].iter().product();
                if self.levels[0].bands > 1 {
                    let interleave = if per_chunk > 1 { "PIXEL" } else { "BAND" };
                    items.push(format!("INTERLEAVE={interleave}"));
                }
                items
            }
            ("GEOLOCATION", None) => self
                .georef
                .first()
                .and_then(|g| Some((g.geolocation.as_ref()?, g.crs.as_deref())))
                .map(|(paths, crs)| georef::geolocation_items(&self.index.source, paths, crs))
                .unwrap_or_default(),
            ("RPC", None) => meta
                .attributes
                .get(crate::conventions::attributes::RPC_ATTRIBUTE)
                .and_then(Value::as_object)
                .map(attribute_items)
                .unwrap_or_default(),
            ("IMAGE_STRUCTURE", Some(_)) => {
                let mut items = Vec::new();
                if let Some(bits) = meta.codecs.stored_bits() {
                    items.push(format!("NBITS={bits}"));
                }
                if !crate::base::gdal::compat::INT8_BANDS
                    && meta.dtype.kind == ScalarKind::Int
                    && meta.dtype.size == 1
                    && !band::is_unsigned(meta)
                {
                    items.push("PIXELTYPE=SIGNEDBYTE".to_string());
                }
                items
            }
            _ => Vec::new(),
        }
    }
}

/// The levels a `multiscales` attribute lists: the GeoZarr `layout`, the
/// older `[{"datasets": [{"path": ...}]}]` form, or a GeoZarr 0.4
/// `tile_matrix_set` (inline: its matrix ids; well-known id: the group's
/// children named by zoom numbers). `None` when it is none of these.
fn level_specs(index: &Index, group: &str, ms: &Value) -> Option<Vec<LevelSpec>> {
    let spec = |asset: &str, entry: Option<&Value>| LevelSpec {
        asset: asset.trim_matches('/').to_string(),
        entry: entry.and_then(Value::as_object).cloned(),
    };
    if let Some(layout) = ms.get("layout").and_then(Value::as_array) {
        return layout
            .iter()
            .map(|l| Some(spec(l.get("asset")?.as_str()?, Some(l))))
            .collect();
    }
    if let Some(datasets) = ms
        .as_array()
        .and_then(|l| l.first())
        .and_then(|m| m.get("datasets"))
        .and_then(Value::as_array)
    {
        return datasets
            .iter()
            .map(|d| Some(spec(d.get("path")?.as_str()?, None)))
            .collect();
    }
    if let Some(ids) = georef::tms::matrix_ids(ms) {
        return Some(ids.iter().map(|id| spec(id, None)).collect());
    }
    ms.get("tile_matrix_set")?.as_str()?;
    let prefix = if group.is_empty() {
        String::new()
    } else {
        format!("{group}/")
    };
    let mut zooms: Vec<u32> = index
        .groups
        .keys()
        .map(String::as_str)
        .chain(index.arrays.iter().map(|a| a.meta.path.as_str()))
        .filter_map(|p| p.strip_prefix(&prefix)?.split('/').next()?.parse().ok())
        .collect();
    zooms.sort_unstable_by(|a, b| b.cmp(a));
    zooms.dedup();
    Some(zooms.iter().map(|z| spec(&z.to_string(), None)).collect())
}

/// The levels of the multiscale group at `group`, if it is one; with
/// `variable`, the pyramid of that variable of the level groups.
fn multiscale(index: &Index, group: &str, variable: Option<&str>) -> Result<Option<Multiscale>> {
    let Some(ms) = index.groups.get(group).and_then(|a| a.get("multiscales")) else {
        return Ok(None);
    };
    let bad = |reason: String| Error::InvalidMetadata {
        array: if group.is_empty() {
            "/".to_string()
        } else {
            group.to_string()
        },
        reason,
    };
    let Some(specs) = level_specs(index, group, ms) else {
        if ms.get("layout").is_some() || ms.get("tile_matrix_set").is_some() {
            return Err(bad(
                "multiscales lists a level without a string 'asset' (or tile matrix 'id')".into(),
            ));
        }
        return Ok(None);
    };
    if specs.is_empty() {
        return Err(bad("multiscales lists no levels".into()));
    }
    let join = |asset: &str| {
        if group.is_empty() {
            asset.to_string()
        } else {
            format!("{group}/{asset}")
        }
    };
    let mut levels = Vec::new();
    for (i, spec) in specs.into_iter().enumerate() {
        let path = join(&spec.asset);
        let found = match variable {
            Some(v) => index.array_index(&format!("{path}/{v}")),
            None => level_array(index, &path),
        };
        match found {
            Some(a) => levels.push((a, spec)),
            // A variable may be absent from coarser levels.
            None if variable.is_some() && i > 0 => {}
            None if i == 0 && variable.is_none() => {
                let vars = raster_children(index, &path);
                if vars.len() > 1 {
                    let paths = vars.iter().map(|&a| index.arrays[a].meta.path.clone());
                    return Ok(Some(Multiscale::Variables(paths.collect())));
                }
                return Err(bad(format!(
                    "multiscales level '{}' has no raster array{}",
                    spec.asset,
                    left_out_under(index, &path)
                )));
            }
            None => {
                return Err(bad(format!(
                    "multiscales level '{}' has no raster array{}{}",
                    spec.asset,
                    variable.map_or(String::new(), |v| format!(" '{v}'")),
                    left_out_under(index, &path)
                )))
            }
        }
    }
    if ms.get("tile_matrix_set").is_some() {
        // Tile matrix sets list levels coarse to fine or fine to coarse.
        levels.sort_by_key(|(a, _)| std::cmp::Reverse(index.arrays[*a].meta.shape.last().copied()));
    }
    Ok(Some(Multiscale::Levels(levels)))
}

/// An array `<multiscale group>/<level asset>/<variable>` of a pyramid level.
struct PyramidMember<'a> {
    /// The multiscale group.
    group: &'a str,
    /// The variable (array name inside the level).
    variable: &'a str,
    /// The level's spec; `first` when it is the pyramid's level 0.
    spec: LevelSpec,
    first: bool,
}

/// Finds the pyramid level `target` (an array path) belongs to.
fn pyramid_member<'a>(index: &'a Index, target: &'a str) -> Option<PyramidMember<'a>> {
    let (level, variable) = target.rsplit_once('/')?;
    index
        .groups
        .iter()
        .filter(|(_, attrs)| attrs.contains_key("multiscales"))
        .find_map(|(g, attrs)| {
            let asset = if g.is_empty() {
                level
            } else {
                level.strip_prefix(g.as_str())?.strip_prefix('/')?
            };
            let specs = level_specs(index, g, attrs.get("multiscales")?)?;
            let i = specs.iter().position(|s| s.asset == asset)?;
            Some(PyramidMember {
                group: &target[..g.len()],
                variable,
                spec: specs[i].clone(),
                first: i == 0,
            })
        })
}

/// Arrays of 2 or more dimensions directly inside group `path`.
fn raster_children(index: &Index, path: &str) -> Vec<usize> {
    let prefix = format!("{path}/");
    index
        .arrays
        .iter()
        .enumerate()
        .filter(|(_, a)| {
            a.meta.shape.len() >= 2
                && a.meta
                    .path
                    .strip_prefix(&prefix)
                    .is_some_and(|rest| !rest.contains('/'))
        })
        .map(|(i, _)| i)
        .collect()
}

/// Why the arrays at or below `path` that the index left out cannot be
/// read (`": array 'x' cannot be read: ..."`), or nothing.
fn left_out_under(index: &Index, path: &str) -> String {
    index
        .skipped
        .iter()
        .filter(|(p, _)| {
            path.is_empty()
                || *p == path
                || p.strip_prefix(path).is_some_and(|r| r.starts_with('/'))
        })
        .map(|(p, reason)| format!(": array '{p}' cannot be read: {reason}"))
        .collect()
}

/// The array of a level asset: the array itself, or the one raster array of a
/// group (preferring `data`, the name osml-imagery-io uses).
fn level_array(index: &Index, path: &str) -> Option<usize> {
    if let Some(a) = index.array_index(path) {
        return Some(a);
    }
    let children = raster_children(index, path);
    children
        .iter()
        .copied()
        .find(|&i| index.arrays[i].meta.path.ends_with("/data"))
        .or_else(|| (children.len() == 1).then(|| children[0]))
}

/// The array `mask` beside the level array `m` in its group, if it is one
/// band of bytes the size of `m`.
fn mask_array(index: &Index, m: &ArrayMeta) -> Option<usize> {
    let group = m.path.rsplit_once('/').map_or("", |(g, _)| g);
    let path = if group.is_empty() {
        "mask".to_string()
    } else {
        format!("{group}/mask")
    };
    let a = index.array_index(&path).filter(|_| path != m.path)?;
    let mask = &index.arrays[a].meta;
    let n = mask.shape.len();
    let fits = n >= 2
        && mask.shape[n - 2..] == m.shape[m.shape.len() - 2..]
        && mask.shape[..n - 2].iter().all(|&d| d == 1)
        && matches!(mask.dtype.kind, ScalarKind::UInt | ScalarKind::Bool)
        && mask.dtype.size == 1;
    fits.then_some(a)
}

/// How the subdatasets of an index are listed: in the order and with
/// the descriptions of the GDAL driver of its source file, when
/// `chunkref index` recorded them ([`VARIABLE_ORDER_ATTRIBUTE`]); else by
/// path, described by Zarr type.
struct Listing<'a> {
    /// The driver whose descriptions to give.
    driver: Option<SourceDriver>,
    /// Array paths by their place in the listing.
    order: HashMap<&'a str, usize>,
}

impl<'a> Listing<'a> {
    fn of(index: &'a Index) -> Listing<'a> {
        let Some(root) = index.groups.get("") else {
            return Listing {
                driver: None,
                order: HashMap::new(),
            };
        };
        let order = root
            .get(VARIABLE_ORDER_ATTRIBUTE)
            .and_then(Value::as_array)
            .map(|list| {
                let paths = list.iter().filter_map(Value::as_str);
                paths.enumerate().map(|(i, p)| (p, i)).collect()
            })
            .unwrap_or_default();
        let driver = SourceDriver::in_attributes(root);
        Listing { driver, order }
    }

    /// Where `path` comes in the listing: arrays the order leaves out
    /// after the others (a stable sort keeps them by path).
    fn rank(&self, path: &str) -> usize {
        self.order.get(path).copied().unwrap_or(self.order.len())
    }

    /// The description of array `m`: `[dims] name (type)`, GDAL's netCDF
    /// driver naming a variable by its `standard_name` (else its full
    /// name) and its netCDF type, the HDF5 driver by `//path` and its
    /// HDF5 type; otherwise the path and the Zarr type.
    fn describe(&self, index: &Index, m: &ArrayMeta) -> String {
        let dims: Vec<String> = m.shape.iter().map(u64::to_string).collect();
        let text = index
            .metadata
            .get(&format!("{}/.zarray", m.path))
            .and_then(|z| z.get("dtype"))
            .and_then(Value::as_str)
            .is_some_and(|d| d.trim_start_matches('|') == "S1");
        let (name, kind) = match self.driver {
            Some(SourceDriver::NetCdf) => {
                let name = m
                    .attributes
                    .get("standard_name")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| match m.path.contains('/') {
                        true => format!("/{}", m.path),
                        false => m.path.clone(),
                    });
                (
                    name,
                    gdal_type_name(m, text, "8-bit integer", "8-bit unsigned integer"),
                )
            }
            Some(SourceDriver::Hdf5) => (
                format!("//{}", m.path),
                gdal_type_name(m, text, "8-bit character", "8-bit unsigned character"),
            ),
            None => (
                m.path.clone(),
                format!("{:?}{}", m.dtype.kind, m.dtype.size * 8),
            ),
        };
        format!("[{}] {name} ({kind})", dims.join("x"))
    }
}

/// The type of array `m` as GDAL's netCDF and HDF5 drivers name it in
/// subdataset descriptions (`text`: netCDF characters; their 1-byte
/// integers named `signed_byte` / `unsigned_byte`).
fn gdal_type_name(m: &ArrayMeta, text: bool, signed_byte: &str, unsigned_byte: &str) -> String {
    let name = match (text, m.dtype.kind, m.dtype.size) {
        (true, _, _) => "8-bit character",
        (_, ScalarKind::Int, 1) => signed_byte,
        (_, ScalarKind::UInt, 1) => unsigned_byte,
        (_, ScalarKind::Int, 2) => "16-bit integer",
        (_, ScalarKind::UInt, 2) => "16-bit unsigned integer",
        (_, ScalarKind::Int, 4) => "32-bit integer",
        (_, ScalarKind::UInt, 4) => "32-bit unsigned integer",
        (_, ScalarKind::Int, 8) => "64-bit integer",
        (_, ScalarKind::UInt, 8) => "64-bit unsigned integer",
        (_, ScalarKind::Float, 4) => "32-bit floating-point",
        (_, ScalarKind::Float, 8) => "64-bit floating-point",
        (_, kind, size) => return format!("{kind:?}{}", size * 8),
    };
    name.to_string()
}

fn attribute_items(attrs: &Map<String, Value>) -> Vec<String> {
    attrs
        .iter()
        // chunkref:* attributes are served through their own GDAL calls
        // (colours, colour tables, per-band values, the RPC domain, a time
        // stack's datetimes as each band's DATETIME).
        .filter(|(k, _)| k.as_str() != "_ARRAY_DIMENSIONS" && !k.starts_with("chunkref:"))
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::resolve::Base;

    #[test]
    fn parses_names() {
        assert_eq!(
            DatasetName::parse("chunkref:\"/a b/i.json\":g/v").unwrap(),
            DatasetName {
                index: "/a b/i.json".into(),
                target: Some("g/v".into())
            }
        );
        assert_eq!(
            DatasetName::parse("CHUNKREF:/x.json").unwrap().index,
            "/x.json"
        );
        assert_eq!(DatasetName::parse("/x.json").unwrap().target, None);
        assert!(DatasetName::parse("CHUNKREF:\"/x.json").is_err());
    }

    #[test]
    fn bands_sharing_a_chunk() {
        use crate::index::{Array, Index};
        let zarray = serde_json::json!({"shape": [3, 5, 10, 10], "chunks": [2, 2, 10, 10],
            "dtype": "<u2", "fill_value": 0, "compressor": null, "filters": null});
        let meta = ArrayMeta::from_v2("a", &zarray, None).unwrap();
        let index = Index {
            source: "t".into(),
            files: Default::default(),
            arrays: vec![Array {
                meta,
                refs: Default::default(),
            }],
            groups: Default::default(),
            warnings: vec![],
            file_attributes: vec![],
            metadata: Default::default(),
            skipped: Default::default(),
            templates: None,
            gen: Vec::new(),
        };
        let settings = Settings::from_lookup(|_| None).unwrap();
        let locations = Locations::resolve(&index, &Base::Dir("/".into()), &settings);
        let ds = Dataset {
            index: Arc::new(index),
            locations,
            levels: vec![Level {
                array: 0,
                width: 10,
                height: 10,
                bands: 15,
                mask: None,
                asset: None,
                entry: None,
                mosaic: None,
                axes: AxisMap::default(),
            }],
            subdatasets: vec![],
            base: Base::Dir("/".into()),
            coordinates: Mutex::default(),
            warnings: vec![],
            georef: vec![],
            y_order: YOrder::default(),
        };
        // band = i0 * 5 + i1; chunk (0, 0) holds i0 in 0..2, i1 in 0..2.
        assert_eq!(ds.bands_sharing_chunk(0, 6).unwrap(), vec![0, 1, 5, 6]);
        // chunk (1, 2) holds i0 = 2 only, i1 = 4 only (edges).
        assert_eq!(ds.bands_sharing_chunk(0, 14).unwrap(), vec![14]);
        assert_eq!(ds.bands_sharing_chunk(0, 12).unwrap(), vec![12, 13]);
        assert!(ds.bands_sharing_chunk(0, 15).is_err());
    }
}
