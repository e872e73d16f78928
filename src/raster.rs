//! The GDAL view of an index: which array (or multiscale pyramid) is the
//! dataset, its overview levels, its bands, subdatasets and metadata, and
//! reading one block of several bands at once.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::assemble;
use crate::chunk::{read_chunk, Locations};
use crate::config::Settings;
use crate::error::{Error, Result};
use crate::gdal;
use crate::index::Index;
use crate::resolve;
use crate::zarr::dtype::ScalarKind;
use crate::zarr::ArrayMeta;

/// The connection prefix of the driver.
pub const PREFIX: &str = "CHUNKREF:";

/// Largest index document read into memory (2 GiB).
pub const MAX_INDEX_BYTES: u64 = 2 << 30;

/// Most bands one dataset may have.
pub const MAX_BANDS: u64 = 1 << 20;

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

/// One resolution level: an array whose last two axes are (y, x).
#[derive(Debug)]
pub struct Level {
    /// Index into [`Index::arrays`].
    pub array: usize,
    /// Width in pixels.
    pub width: u64,
    /// Height in pixels.
    pub height: u64,
    /// Number of bands (product of the leading axes).
    pub bands: u64,
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
    /// Non-fatal problems to report as warnings.
    pub warnings: Vec<String>,
}

impl Dataset {
    /// Opens a dataset name with open options (`TEMPLATE_<name>=<value>`).
    pub fn open(name: &str, options: &[(String, String)]) -> Result<Dataset> {
        let parsed = DatasetName::parse(name)?;
        let settings = Settings::from_gdal()?;
        let source = resolve::index_source(&parsed.index)?;
        let bytes = gdal::read_vsi_file(&source.vsi_path, MAX_INDEX_BYTES)?;
        let overrides: Vec<(String, String)> = options
            .iter()
            .filter_map(|(k, v)| {
                strip_prefix_ci(k, "TEMPLATE_").map(|t| (t.to_string(), v.clone()))
            })
            .collect();
        let index = Index::from_kerchunk_json(&parsed.index, &bytes, &overrides)?;
        let locations = Locations::resolve(&index, &source.base, &settings);
        let mut ds = Dataset {
            warnings: index.warnings.clone(),
            index: Arc::new(index),
            locations,
            levels: Vec::new(),
            subdatasets: Vec::new(),
        };
        ds.choose(parsed.target.as_deref())?;
        Ok(ds)
    }

    /// Picks the raster (pyramid or array) or lists subdatasets.
    fn choose(&mut self, target: Option<&str>) -> Result<()> {
        let index = Arc::clone(&self.index);
        if let Some(t) = target {
            if let Some(levels) = multiscale_levels(&index, t)? {
                return self.set_levels(levels);
            }
            return match index.array_index(t) {
                Some(a) if index.arrays[a].meta.shape.len() >= 2 => self.set_levels(vec![a]),
                Some(_) => Err(Error::Usage {
                    what: format!(
                        "array '{t}' in {} has fewer than 2 dimensions",
                        index.source
                    ),
                }),
                None => Err(Error::Usage {
                    what: format!("no array or multiscale group '{t}' in {}", index.source),
                }),
            };
        }
        if let Some(levels) = multiscale_levels(&index, "")? {
            return self.set_levels(levels);
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
            candidates.push(self.subdataset(g, &format!("multiscale group {g}")));
        }
        for (i, a) in index.arrays.iter().enumerate() {
            let m = &a.meta;
            let in_pyramid = pyramids
                .iter()
                .any(|g| m.path.starts_with(&format!("{g}/")));
            if m.shape.len() < 2 || in_pyramid {
                continue;
            }
            single = Some(i);
            candidates.push(self.subdataset(&m.path, &describe_array(m)));
        }
        match (candidates.len(), single) {
            (0, _) => Err(Error::MalformedIndex {
                index: index.source.clone(),
                reason: "no array with 2 or more dimensions".into(),
            }),
            (1, Some(a)) => self.set_levels(vec![a]),
            _ => {
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

    fn set_levels(&mut self, arrays: Vec<usize>) -> Result<()> {
        let index = &self.index;
        let mut levels: Vec<Level> = Vec::new();
        for a in arrays {
            let m = &index.arrays[a].meta;
            let n = m.shape.len();
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
        self.levels = levels;
        Ok(())
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
    fn band_indices(meta: &ArrayMeta, band: u64) -> Vec<u64> {
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

    /// Reads block (`block_x`, `block_y`) of `bands` (which must share a chunk,
    /// see [`Dataset::bands_sharing_chunk`]) into `outputs`, one native-order
    /// block buffer of `block_width * block_height` elements per band.
    pub fn read_block(
        &self,
        level: usize,
        block_x: u64,
        block_y: u64,
        bands: &[u64],
        outputs: &mut [&mut [u8]],
    ) -> Result<()> {
        let meta = self.level_meta(level)?;
        let array = &self.index.arrays[self.levels[level].array];
        let n = meta.shape.len();
        let block_bytes = (meta.chunks[n - 2] * meta.chunks[n - 1]) as usize * meta.dtype.size;
        if bands.is_empty() || bands.len() != outputs.len() {
            return Err(Error::Usage {
                what: "one output buffer per band is required".into(),
            });
        }
        if let Some(small) = outputs.iter().find(|o| o.len() < block_bytes) {
            return Err(Error::Usage {
                what: format!(
                    "block buffer of {} bytes, {block_bytes} needed",
                    small.len()
                ),
            });
        }
        let band_idx: Vec<Vec<u64>> = bands
            .iter()
            .map(|&b| Dataset::band_indices(meta, b))
            .collect();
        let mut chunk_idx: Vec<u64> = band_idx[0]
            .iter()
            .zip(&meta.chunks)
            .map(|(i, c)| i / c)
            .collect();
        if band_idx.iter().any(|bi| {
            bi.iter()
                .zip(&meta.chunks)
                .map(|(i, c)| i / c)
                .ne(chunk_idx.iter().copied())
        }) {
            return Err(Error::Usage {
                what: "bands of one block request must share a chunk".into(),
            });
        }
        chunk_idx.push(block_y);
        chunk_idx.push(block_x);
        match read_chunk(&self.index, &self.locations, array, &chunk_idx)? {
            Some(chunk) => {
                for (bi, out) in band_idx.iter().zip(outputs.iter_mut()) {
                    let within: Vec<u64> =
                        bi.iter().zip(&meta.chunks).map(|(i, c)| i % c).collect();
                    assemble::copy_plane(meta, &chunk, &within, &mut out[..block_bytes]);
                }
            }
            None => {
                let fill = meta
                    .fill
                    .clone()
                    .unwrap_or_else(|| vec![0; meta.dtype.size]);
                for out in outputs.iter_mut() {
                    assemble::fill(&mut out[..block_bytes], &fill);
                }
            }
        }
        Ok(())
    }

    /// Metadata items (`KEY=VALUE`) of a domain: `""` (default), `IMAGE_STRUCTURE`
    /// or `SUBDATASETS`, for the dataset (`band` = None) or a band of level 0.
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
            ("", None) => attribute_items(&meta.attributes),
            ("", Some(b)) => {
                let names = meta.dimension_names.clone().unwrap_or_default();
                Dataset::band_indices(meta, b)
                    .iter()
                    .enumerate()
                    .map(|(d, i)| {
                        let name = names.get(d).cloned().unwrap_or_else(|| format!("dim{d}"));
                        format!("DIM_{name}_INDEX={i}")
                    })
                    .collect()
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
            ("IMAGE_STRUCTURE", Some(_))
                if meta.dtype.kind == ScalarKind::Int && meta.dtype.size == 1 =>
            {
                vec!["PIXELTYPE=SIGNEDBYTE".to_string()]
            }
            _ => Vec::new(),
        }
    }
}

/// Reads the index document, refusing absurd sizes.
/// The level arrays of the multiscale group at `group`, if it is one.
fn multiscale_levels(index: &Index, group: &str) -> Result<Option<Vec<usize>>> {
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
    let assets: Vec<&str> = if let Some(layout) = ms.get("layout").and_then(Value::as_array) {
        layout
            .iter()
            .map(|l| l.get("asset").and_then(Value::as_str))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("multiscales.layout entry without a string 'asset'".into()))?
    } else if let Some(datasets) = ms
        .as_array()
        .and_then(|l| l.first())
        .and_then(|m| m.get("datasets"))
        .and_then(Value::as_array)
    {
        datasets
            .iter()
            .map(|d| d.get("path").and_then(Value::as_str))
            .collect::<Option<_>>()
            .ok_or_else(|| bad("multiscales datasets entry without a string 'path'".into()))?
    } else {
        return Ok(None);
    };
    if assets.is_empty() {
        return Err(bad("multiscales lists no levels".into()));
    }
    assets
        .iter()
        .map(|asset| {
            let path = if group.is_empty() {
                asset.trim_matches('/').to_string()
            } else {
                format!("{group}/{}", asset.trim_matches('/'))
            };
            level_array(index, &path)
                .ok_or_else(|| bad(format!("multiscales level '{asset}' has no raster array")))
        })
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

/// The array of a level asset: the array itself, or the one raster array of a
/// group (preferring `data`, the name osml-imagery-io uses).
fn level_array(index: &Index, path: &str) -> Option<usize> {
    if let Some(a) = index.array_index(path) {
        return Some(a);
    }
    let prefix = format!("{path}/");
    let children: Vec<usize> = index
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
        .collect();
    children
        .iter()
        .copied()
        .find(|&i| index.arrays[i].meta.path.ends_with("/data"))
        .or_else(|| (children.len() == 1).then(|| children[0]))
}

fn describe_array(m: &ArrayMeta) -> String {
    let dims: Vec<String> = m.shape.iter().map(u64::to_string).collect();
    format!(
        "[{}] {} ({:?}{})",
        dims.join("x"),
        m.path,
        m.dtype.kind,
        m.dtype.size * 8
    )
}

fn attribute_items(attrs: &Map<String, Value>) -> Vec<String> {
    attrs
        .iter()
        .filter(|(k, _)| k.as_str() != "_ARRAY_DIMENSIONS")
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resolve::Base;

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
            }],
            subdatasets: vec![],
            warnings: vec![],
        };
        // band = i0 * 5 + i1; chunk (0, 0) holds i0 in 0..2, i1 in 0..2.
        assert_eq!(ds.bands_sharing_chunk(0, 6).unwrap(), vec![0, 1, 5, 6]);
        // chunk (1, 2) holds i0 = 2 only, i1 = 4 only (edges).
        assert_eq!(ds.bands_sharing_chunk(0, 14).unwrap(), vec![14]);
        assert_eq!(ds.bands_sharing_chunk(0, 12).unwrap(), vec![12, 13]);
        assert!(ds.bands_sharing_chunk(0, 15).is_err());
    }
}
