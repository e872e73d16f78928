//! Decoded chunks kept for reuse, for datasets whose blocks do not line up
//! with their chunks (mosaics: a scene's chunks straddle up to four of the
//! mosaic's blocks). GDAL's block cache keeps the mosaic's blocks; this
//! keeps the scene chunks under them, so reading the blocks one at a time
//! (a resampled view, a block-by-block client) decodes each chunk once, as
//! a VRT's sources do through their own block caches.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;

use crate::base::buffers::recycle_bytes;

/// A bounded, least-recently-used store of decoded chunks by (array path,
/// chunk position).
#[derive(Debug)]
pub struct ChunkCache {
    budget: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Decoded chunk and the tick of its last use, by key.
    chunks: HashMap<(String, u64), (Bytes, u64)>,
    /// Bytes held.
    held: usize,
    /// Uses so far.
    tick: u64,
}

impl ChunkCache {
    /// An empty cache holding at most `budget` bytes of decoded chunks.
    pub fn new(budget: usize) -> ChunkCache {
        ChunkCache {
            budget,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The most bytes kept.
    pub fn budget(&self) -> usize {
        self.budget
    }

    /// Whether the chunk at `position` of array `path` is kept (not counted
    /// as a use).
    pub fn contains(&self, path: &str, position: u64) -> bool {
        self.state()
            .chunks
            .contains_key(&(path.to_string(), position))
    }

    /// The decoded chunk at `position` of array `path`, if kept.
    pub fn get(&self, path: &str, position: u64) -> Option<Bytes> {
        let mut state = self.state();
        state.tick += 1;
        let tick = state.tick;
        let (bytes, used) = state.chunks.get_mut(&(path.to_string(), position))?;
        *used = tick;
        Some(bytes.clone())
    }

    /// Keeps `decoded`, the chunk at `position` of array `path`, dropping the
    /// least recently used chunks beyond the budget (their buffers become
    /// this thread's spares for decoding). A chunk larger than the whole
    /// budget is not kept.
    pub fn put(&self, path: &str, position: u64, decoded: &Bytes) {
        if decoded.len() > self.budget {
            return;
        }
        let mut evicted = Vec::new();
        let mut state = self.state();
        state.tick += 1;
        let tick = state.tick;
        let replaced = state
            .chunks
            .insert((path.to_string(), position), (decoded.clone(), tick));
        state.held = state.held + decoded.len() - replaced.map_or(0, |(b, _)| b.len());
        while state.held > self.budget {
            let Some(oldest) = state
                .chunks
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some((b, _)) = state.chunks.remove(&oldest) {
                state.held -= b.len();
                evicted.push(b);
            }
        }
        drop(state);
        // This thread's next decode reuses their memory (no fresh pages).
        evicted.into_iter().for_each(recycle_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_recent_chunks_within_its_budget() {
        let cache = ChunkCache::new(10);
        let four = Bytes::from_static(b"abcd");
        cache.put("a", 0, &four);
        cache.put("a", 1, &four);
        assert_eq!(
            cache.get("a", 0),
            Some(four.clone()),
            "0 is now the most recent"
        );
        cache.put("b", 0, &four);
        assert_eq!(cache.get("a", 1), None, "the least recently used went");
        assert!(cache.get("a", 0).is_some() && cache.get("b", 0).is_some());
        cache.put("c", 0, &Bytes::from_static(b"far too large"));
        assert_eq!(cache.get("c", 0), None);
        cache.put("a", 0, &Bytes::from_static(b"x"));
        assert_eq!(cache.state().held, 5);
    }
}
