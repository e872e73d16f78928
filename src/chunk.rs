//! Reading one chunk: reference lookup, fetch, decode, size check.

use bytes::Bytes;

use crate::codec::DecodeContext;
use crate::config::Settings;
use crate::error::{Error, Result};
use crate::fetch::{Fetcher, Source, Want};
use crate::index::{Array, Index};
use crate::refs::{position, ChunkRef};
use crate::resolve::{self, Base, Location};

/// Where each file of an index is read from (resolution errors kept per
/// file and reported when a chunk of that file is read), and how.
#[derive(Debug)]
pub struct Locations {
    sources: Vec<Result<Source>>,
    fetcher: Fetcher,
}

impl Locations {
    /// Resolves every file URL of `index` against `base` (the index's
    /// directory). When the index is remote, local files are refused unless
    /// `settings` allow them.
    pub fn resolve(index: &Index, base: &Base, settings: &Settings) -> Locations {
        let open = |url: &str| -> Result<Source> {
            let loc = resolve::resolve(url, base)?;
            if base.is_remote() && !settings.remote_may_read_local {
                if let Location::Local(path) = &loc {
                    return Err(Error::Refused {
                        what: format!(
                            "index {} is remote and refers to the local file {}; set \
                             GDAL_ALLOW_REMOTE_RESOURCE_TO_ACCESS_LOCAL_FILE=YES to allow it",
                            index.source,
                            path.display()
                        ),
                    });
                }
            }
            Source::open(&loc, settings)
        };
        Locations {
            sources: index.files.urls().iter().map(|u| open(u)).collect(),
            fetcher: Fetcher::new(settings),
        }
    }
}

/// Fetches and decodes the chunk at grid index `idx` of `array`.
/// Returns `None` when the chunk has no reference (it reads as fill value).
pub fn read_chunk(
    index: &Index,
    locations: &Locations,
    array: &Array,
    idx: &[u64],
) -> Result<Option<Bytes>> {
    let meta = &array.meta;
    let grid = meta.grid_shape();
    let pos = position(idx, &grid).ok_or_else(|| Error::Usage {
        what: format!(
            "chunk {idx:?} is outside the grid {grid:?} of array '{}'",
            meta.path
        ),
    })?;
    let Some(r) = array.refs.get(pos) else {
        return Ok(None);
    };
    let key = chunk_key(&meta.path, &meta.key_encoding.format(idx));
    let url = r
        .file()
        .map_or("inline".to_string(), |f| index.files.url(f).to_string());
    fetch_and_decode(locations, array, r, idx)
        .map(Some)
        .map_err(|e| e.in_chunk(key, url))
}

fn fetch_and_decode(
    locations: &Locations,
    array: &Array,
    r: ChunkRef<'_>,
    idx: &[u64],
) -> Result<Bytes> {
    let raw = match r {
        ChunkRef::Inline(b) => b.clone(),
        ChunkRef::Whole { file } => fetch_from(locations, file, Want::Whole)?,
        ChunkRef::Range {
            file,
            offset,
            length,
        } => fetch_from(locations, file, Want::Ranges(&[(offset, length)]))?,
        ChunkRef::Multi { file, ranges } => fetch_from(locations, file, Want::Ranges(ranges))?,
    };
    let meta = &array.meta;
    let expected = meta.chunk_bytes();
    let ctx = DecodeContext {
        chunk_shape: &meta.chunks,
        chunk_index: idx,
        dtype: meta.dtype,
        decoded_len: expected,
    };
    let decoded = meta.codecs.decode(raw, &ctx)?;
    if decoded.len() != expected {
        let codecs = if meta.codecs.is_empty() {
            "no codec".to_string()
        } else {
            meta.codecs.names().join(", ")
        };
        return Err(Error::decode(
            codecs,
            format!(
                "decoded to {} bytes, expected {expected} (chunk shape {:?} of {}-byte elements)",
                decoded.len(),
                meta.chunks,
                meta.dtype.size
            ),
        ));
    }
    Ok(decoded)
}

fn fetch_from(locations: &Locations, file: u32, want: Want<'_>) -> Result<Bytes> {
    let source = locations.sources[file as usize]
        .as_ref()
        .map_err(Clone::clone)?;
    locations.fetcher.fetch_one(source, want)
}

fn chunk_key(array: &str, suffix: &str) -> String {
    if array.is_empty() {
        suffix.to_string()
    } else {
        format!("{array}/{suffix}")
    }
}
