//! Reading one chunk: reference lookup, fetch, decode, size check.

use bytes::Bytes;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::base::dtype::ByteOrder;
use crate::base::error::{Error, Result};
use crate::base::warnings::{collect_warnings, gdal_warning};
use crate::codec::DecodeContext;
use crate::index::refs::{position, RawRef};
use crate::index::{Array, Index};
use crate::io::config::Settings;
use crate::io::fetch::{Fetcher, Source, Want};
use crate::io::resolve::{self, Base, Location};
use crate::read::chunk_cache::ChunkCache;
use crate::read::read_ahead::{Ahead, ReadAhead, Slot};

/// Where each file of an index is read from (resolution errors kept per
/// file and reported when a chunk of that file is read), and how.
#[derive(Debug)]
pub struct Locations {
    sources: Vec<Result<Source>>,
    fetcher: Fetcher,
    /// Decoded chunks kept for reuse (see [`Locations::keep_decoded`]).
    decoded: Option<ChunkCache>,
    /// Bytes [`Locations::keep_decoded`] keeps when the settings say.
    decoded_budget: Option<usize>,
    /// Fetched bytes of remote chunks that were decoded only in part
    /// (a window ending above their last row, such as a pixel drill
    /// through a time stack): nothing else keeps them, and the next read
    /// nearby (a second pixel, or the shim loading those blocks into
    /// GDAL's block cache) decodes them again without another request.
    /// `None` when every file is local; at most `CHUNKREF_FETCH_CACHE` MiB
    /// (see [`crate::io::config::Settings::fetch_cache_mib`]). Kept bytes are charged at their
    /// length; chunks fetched in one coalesced request share its buffer.
    fetched: Option<ChunkCache>,
    /// Chunks being fetched ahead of a read expected to want them.
    ahead: ReadAhead,
}

/// `mib` MiB in bytes (saturating).
fn mib_bytes(mib: u64) -> usize {
    usize::try_from(mib.saturating_mul(1 << 20)).unwrap_or(usize::MAX)
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
        let mut locations = Locations {
            sources: index
                .file_urls()
                .into_iter()
                .map(|u| u.and_then(|u| open(&u)))
                .collect(),
            fetcher: Fetcher::new(settings),
            decoded: None,
            decoded_budget: settings.mosaic_cache_mib.map(mib_bytes),
            fetched: None,
            ahead: ReadAhead::default(),
        };
        if !locations.all_local() {
            let budget = settings
                .fetch_cache_mib
                .map_or_else(crate::base::gdal::cpl::fetch_cache_default, mib_bytes);
            locations.fetched = Some(ChunkCache::new(budget));
        }
        locations
    }

    /// Whether decoded chunks are kept (see [`Locations::keep_decoded`]).
    pub fn keeps_decoded(&self) -> bool {
        self.decoded.is_some()
    }

    /// Keeps decoded chunks for later reads (for datasets whose blocks
    /// straddle chunks, such as mosaics): `wanted` bytes, or what the
    /// settings say, at most a quarter of GDAL's block cache unless the
    /// settings say more.
    pub fn keep_decoded(&mut self, wanted: usize) {
        let budget = self
            .decoded_budget
            .unwrap_or_else(|| wanted.min(crate::base::gdal::cpl::cache_max() / 4));
        if budget > 0 {
            self.decoded = Some(ChunkCache::new(budget));
        }
    }

    /// Starts fetching the chunks at grid indices `idxs` of `array` ahead of
    /// a read expected to want them (see [`crate::read::read_ahead`]), in place
    /// of those fetched ahead before: the remote chunks not kept already,
    /// in order, as many as fit in the budget for fetched bytes. Does
    /// nothing when every file is local. The guess belongs to `owner` (see
    /// [`crate::read::read_ahead`]). Returns how many chunks it fetches.
    pub fn read_ahead(&self, owner: usize, array: &Array, idxs: &[Vec<u64>]) -> usize {
        let Some(fetched) = &self.fetched else {
            return 0;
        };
        let meta = &array.meta;
        let grid = meta.grid_shape();
        let positions: Vec<Result<u64>> = idxs
            .iter()
            .map(|idx| position(idx, &grid).ok_or_else(|| Error::unsupported("off the grid")))
            .collect();
        let mut budget = fetched.budget();
        let mut chunks = Vec::new();
        for (pos, found) in positions.iter().zip(lookup(array, &positions)) {
            let (Ok(pos), Ok(Some(found))) = (pos, found) else {
                continue;
            };
            let kept = |cache: &Option<ChunkCache>| {
                cache.as_ref().is_some_and(|c| c.contains(&meta.path, *pos))
            };
            if kept(&self.fetched) || kept(&self.decoded) {
                continue;
            }
            let (file, ranges) = match found {
                RawRef::Range(file, offset, length) => (file, vec![(offset, length)]),
                RawRef::Multi(file, ranges) => (file, ranges),
                // Inline bytes need no request; a whole file's size is not
                // known until it is read.
                RawRef::Inline(_) | RawRef::Whole(_) => continue,
            };
            let Some(source) = self.source(file).ok().filter(|s| !s.is_local()) else {
                continue;
            };
            let length = ranges.iter().fold(0u64, |n, r| n.saturating_add(r.1));
            match usize::try_from(length) {
                Ok(length) if length <= budget => budget -= length,
                _ => break,
            }
            chunks.push(Ahead {
                key: (meta.path.clone(), *pos),
                source: source.clone(),
                ranges,
            });
        }
        self.ahead.start(owner, &self.fetcher, chunks)
    }

    /// Stops `owner`'s read ahead and drops what it fetched and no read
    /// took (the guess was wrong).
    pub fn stop_read_ahead(&self, owner: usize) {
        self.ahead.stop(owner);
    }

    /// Whether every file of the index is a local file (read with plain
    /// file I/O, no latency to hide by fetching several layers at once).
    pub fn all_local(&self) -> bool {
        self.sources
            .iter()
            .all(|s| s.as_ref().map_or(true, Source::is_local))
    }

    /// The source of file `file`, or the error met resolving it.
    fn source(&self, file: u32) -> Result<&Source> {
        self.sources[file as usize].as_ref().map_err(Clone::clone)
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
    read_chunks(index, locations, array, &[idx.to_vec()])
        .pop()
        .unwrap_or(Ok(None))
}

/// Fetches the chunks at grid indices `idxs` of `array` together (nearby
/// ranges coalesced, requests concurrent) and decodes them in parallel on
/// all cores. One result per index, in order: `None` for a chunk without
/// reference; errors name the chunk key and URL.
pub fn read_chunks(
    index: &Index,
    locations: &Locations,
    array: &Array,
    idxs: &[Vec<u64>],
) -> Vec<Result<Option<Bytes>>> {
    let results: Vec<OnceLock<Result<Option<Bytes>>>> =
        idxs.iter().map(|_| OnceLock::new()).collect();
    read_chunks_each(index, locations, array, idxs, None, &|k, decoded| {
        let _ = results[k].set(decoded);
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|| Err(Error::unsupported("a chunk that was never read")))
        })
        .collect()
}

/// As [`read_chunks`], but hands each result to `consume(k, result)` (`k`
/// the position in `idxs`) as soon as chunk `k` is decoded, on the thread
/// that decoded it, and keeps nothing: a caller that copies each chunk out
/// and drops it never holds a whole batch of decoded chunks (memory the
/// allocator must then find fresh pages for). Every index is consumed
/// exactly once before this returns; warnings raised while decoding are
/// raised on the caller's thread at the end.
///
/// `needed`, if given, holds for each chunk the bytes of it the caller
/// reads ([`DecodeContext::first_needed`] to [`DecodeContext::needed`]): a
/// chunk may then come back short (its codec stopped early) or with the
/// bytes before them not fully decoded, and when it does, its fetched
/// bytes are kept for the next read nearby.
pub fn read_chunks_each(
    index: &Index,
    locations: &Locations,
    array: &Array,
    idxs: &[Vec<u64>],
    needed: Option<&[Range<usize>]>,
    consume: &(dyn Fn(usize, Result<Option<Bytes>>) + Sync),
) {
    let full = array.meta.chunk_bytes();
    let needed_of = |k: usize| {
        needed.and_then(|n| n.get(k)).map_or(0..full, |n| {
            let end = n.end.min(full);
            n.start.min(end)..end
        })
    };
    // A chunk decoded in part (see `needed`).
    let partial = |k: usize| needed_of(k) != (0..full);
    let meta = &array.meta;
    let grid = meta.grid_shape();
    let positions: Vec<Result<u64>> = idxs
        .iter()
        .map(|idx| {
            position(idx, &grid).ok_or_else(|| Error::Usage {
                what: format!(
                    "chunk {idx:?} is outside the grid {grid:?} of array '{}'",
                    meta.path
                ),
            })
        })
        .collect();
    let refs = lookup(array, &positions);
    let mut requests: Vec<(&Source, Want<'_>)> = Vec::new();
    let needs: Vec<Result<Need>> = refs
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let found = r.as_ref().map_err(Clone::clone)?;
            let kept = match (&locations.decoded, &positions[k], found) {
                (Some(cache), Ok(pos), Some(_)) => cache.get(&meta.path, *pos),
                _ => None,
            };
            if let Some(chunk) = kept {
                return Ok(Need::Kept(chunk));
            }
            let fetched = match (&locations.fetched, &positions[k], found) {
                (Some(cache), Ok(pos), Some(_)) => cache.get(&meta.path, *pos),
                _ => None,
            };
            if let Some(raw) = fetched {
                return Ok(Need::Held(raw));
            }
            if let (Ok(pos), Some(_)) = (&positions[k], found) {
                if let Some(slot) = locations.ahead.take(&meta.path, *pos) {
                    return Ok(Need::Ahead(slot));
                }
            }
            let (file, want) = match found {
                None => return Ok(Need::Nothing),
                Some(RawRef::Inline(b)) => return Ok(Need::Held(b.clone())),
                Some(RawRef::Whole(file)) => (*file, Want::Whole),
                Some(RawRef::Range(file, offset, length)) => (*file, Want::Range(*offset, *length)),
                Some(RawRef::Multi(file, ranges)) => (*file, Want::Ranges(ranges)),
            };
            requests.push((locations.source(file)?, want));
            Ok(Need::Fetched(requests.len() - 1))
        })
        .collect();
    // Requests sharing an object may be read in one coalesced span, and the
    // bytes of each are then a slice of that span's buffer: a chunk kept
    // for the next read is copied out of it, so the cache holds what it
    // counts (one chunk, not a span of up to `MAX_SPAN`).
    // (Local files are read a request at a time; a read of whole chunks
    // keeps none.)
    let mut per_object: HashMap<&str, usize> = HashMap::new();
    if needed.is_some() && locations.fetched.is_some() {
        for (source, _) in &requests {
            *per_object.entry(source.url()).or_default() += 1;
        }
    }
    let in_span = |i: usize| {
        let (source, _) = requests[i];
        !source.is_local() && per_object.get(source.url()).is_some_and(|&n| n > 1)
    };
    // Keeps the fetched bytes of chunk `k` when it is decoded only in part
    // (`shared`: they are a slice of a span's buffer).
    let keep = |k: usize, raw: &Result<Bytes>, shared: bool| {
        if let (Some(cache), Ok(raw), Ok(pos)) = (&locations.fetched, raw, &positions[k]) {
            if partial(k) {
                let own = shared.then(|| Bytes::copy_from_slice(raw));
                cache.put(&meta.path, *pos, own.as_ref().unwrap_or(raw));
            }
        }
    };
    // Decode each chunk on the rayon pool as soon as its bytes are in,
    // while the rest is still being fetched.
    let warnings: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut fetched_by: Vec<usize> = vec![0; requests.len()];
    let decode_into = |k: usize, raw: Result<Option<Bytes>>| {
        let ((), mut raised) = collect_warnings(|| {
            let decoded = raw.and_then(|raw| {
                raw.map(|raw| decode(array, raw, &idxs[k], needed_of(k)))
                    .transpose()
            });
            if let (Some(cache), Ok(Some(chunk)), Ok(pos)) =
                (&locations.decoded, &decoded, &positions[k])
            {
                if !partial(k) {
                    cache.put(&meta.path, *pos, chunk);
                }
            }
            let decoded = decoded.map_err(|e| match &refs[k] {
                Ok(Some(r)) => {
                    let key = chunk_key(&meta.path, &meta.chunk_key(&idxs[k]));
                    let url = r
                        .file()
                        .map_or("inline".to_string(), |f| index.files.url(f).to_string());
                    e.in_chunk(key, url)
                }
                _ => e,
            });
            consume(k, decoded);
        });
        if !raised.is_empty() {
            warnings
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .append(&mut raised);
        }
    };
    // One chunk to decode (a block, a tile) is decoded on this thread.
    let decoding = needs
        .iter()
        .filter(|n| matches!(n, Ok(Need::Held(_) | Need::Fetched(_) | Need::Ahead(_))))
        .count();
    // Hands every chunk to `decode_soon` as its bytes are in (fetched ones
    // while the rest is still being fetched).
    let feed = |decode_soon: &(dyn Fn(usize, Result<Option<Bytes>>) + Sync)| {
        let mut waiting: Vec<(usize, Arc<Slot>)> = Vec::new();
        for (k, need) in needs.into_iter().enumerate() {
            match need {
                Err(e) => decode_into(k, Err(e)),
                Ok(Need::Nothing) => decode_into(k, Ok(None)),
                Ok(Need::Kept(b)) => consume(k, Ok(Some(b))),
                Ok(Need::Held(b)) => decode_soon(k, Ok(Some(b))),
                Ok(Need::Fetched(i)) => fetched_by[i] = k,
                Ok(Need::Ahead(slot)) => match slot.ready() {
                    Some(raw) => {
                        keep(k, &raw, slot.in_span);
                        decode_soon(k, raw.map(Some));
                    }
                    None => waiting.push((k, slot)),
                },
            }
        }
        locations.fetcher.fetch_each(&requests, |i, raw| {
            let k = fetched_by[i];
            keep(k, &raw, in_span(i));
            decode_soon(k, raw.map(Some));
        });
        // Chunks fetched ahead still in flight: they were asked for before
        // this read's own requests, so most are in by now.
        for (k, slot) in waiting {
            let raw = slot.wait();
            keep(k, &raw, slot.in_span);
            decode_soon(k, raw.map(Some));
        }
    };
    if decoding <= 1 {
        // No pool (nor its start-up in a fresh process) for one chunk.
        feed(&decode_into);
    } else {
        // Chunks waiting for a decoder hold their fetched bytes: past a few
        // per decoding thread, the caller decodes the next one itself
        // instead of queueing it (memory stays bounded when fetching
        // outruns decoding).
        let pool = crate::base::process::decoding_pool();
        let most_queued = 2 * pool.current_num_threads();
        let queued = AtomicUsize::new(0);
        pool.in_place_scope(|scope| {
            let decode_soon = |k: usize, raw: Result<Option<Bytes>>| {
                if queued.load(Ordering::Acquire) < most_queued {
                    queued.fetch_add(1, Ordering::AcqRel);
                    let queued = &queued;
                    scope.spawn(move |_| {
                        decode_into(k, raw);
                        queued.fetch_sub(1, Ordering::AcqRel);
                    });
                } else {
                    decode_into(k, raw);
                }
            };
            feed(&decode_soon);
        });
    }
    // Warnings raised while decoding on the pool, on the caller's thread.
    let warnings = warnings.into_inner().unwrap_or_else(|p| p.into_inner());
    warnings.iter().for_each(|w| gdal_warning(w));
}

/// The failure of the lowest-numbered chunk among those that failed, kept
/// by [`read_chunks_each`] consumers (chunks finish in any order; the error
/// reported is the one a read in order would meet first).
#[derive(Debug, Default)]
pub struct FirstFailure(Mutex<Option<(usize, Error)>>);

impl FirstFailure {
    /// Keeps `e`, the failure of chunk `k`, if no earlier chunk failed.
    pub fn record(&self, k: usize, e: Error) {
        let mut first = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if first.as_ref().is_none_or(|(at, _)| k < *at) {
            *first = Some((k, e));
        }
    }

    /// The kept failure, if any.
    pub fn into_result(self) -> Result<()> {
        let first = self.0.into_inner().unwrap_or_else(|p| p.into_inner());
        first.map_or(Ok(()), |(_, e)| Err(e))
    }
}

/// The references of the chunks at `positions` of `array`, looked up
/// together (one read of an on-demand table serves them all); an error for
/// a position that was already one, or for all when the lookup fails.
fn lookup(array: &Array, positions: &[Result<u64>]) -> Vec<Result<Option<RawRef>>> {
    let valid: Vec<u64> = positions
        .iter()
        .filter_map(|p| p.as_ref().ok())
        .copied()
        .collect();
    let mut found = match array.refs.lookup(&valid) {
        Ok(refs) => refs.into_iter().map(Ok).collect::<Vec<_>>().into_iter(),
        Err(e) => vec![Err(e); valid.len()].into_iter(),
    };
    positions
        .iter()
        .map(|p| match p {
            Ok(_) => found.next().unwrap_or(Ok(None)),
            Err(e) => Err(e.clone()),
        })
        .collect()
}

/// What a chunk needs before it can be decoded.
enum Need {
    /// Nothing: it has no reference.
    Nothing,
    /// Its bytes are at hand: in the index, or fetched by an earlier read
    /// and kept.
    Held(Bytes),
    /// The fetch request with this number.
    Fetched(usize),
    /// Nothing: it was decoded before and kept.
    Kept(Bytes),
    /// Being fetched (or fetched) ahead of this read.
    Ahead(Arc<Slot>),
}

/// Decodes the raw bytes of chunk `idx` of `array`, at least bytes
/// `needed` of it, and checks their size. Elements stored in a type served
/// as another (float16) are widened after decoding.
fn decode(array: &Array, raw: Bytes, idx: &[u64], needed: Range<usize>) -> Result<Bytes> {
    let meta = &array.meta;
    let stored = meta.stored_dtype;
    let expected = meta.chunk_bytes() / meta.dtype.size * stored.size;
    let stored_range = |n: usize| n / meta.dtype.size * stored.size;
    // Codecs see the chunk as stored.
    let (chunk_shape, chunk_index) = (meta.stored_order(&meta.chunks), meta.stored_order(idx));
    let ctx = DecodeContext {
        chunk_shape: &chunk_shape,
        chunk_index: &chunk_index,
        dtype: stored,
        decoded_len: expected,
        needed: stored_range(needed.end.next_multiple_of(meta.dtype.size)),
        first_needed: stored_range(needed.start),
    };
    let decoded = meta.codecs.decode(raw, &ctx)?;
    if decoded.len() != expected && !(ctx.needed..expected).contains(&decoded.len()) {
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
                stored.size
            ),
        ));
    }
    Ok(if stored == meta.dtype {
        decoded
    } else {
        widen_half_floats(&decoded, stored.order).into()
    })
}

/// IEEE half floats in byte order `order` as native float32 bytes.
fn widen_half_floats(half: &[u8], order: ByteOrder) -> Vec<u8> {
    half.chunks_exact(2)
        .flat_map(|e| {
            let bits = order.load_bits(e) as u16;
            half::f16::from_bits(bits).to_f32().to_ne_bytes()
        })
        .collect()
}

fn chunk_key(array: &str, suffix: &str) -> String {
    if array.is_empty() {
        suffix.to_string()
    } else {
        format!("{array}/{suffix}")
    }
}
