//! Chunks fetched ahead of the reads expected to want them.
//!
//! A client reading one band after another at the same small window (a
//! `gdallocationinfo` of a time stack, a loop of
//! `GetRasterBand(b).ReadRaster`) announces the bands after the first only
//! by asking for them, one round trip at a time. The shim guesses at the
//! first such read and starts fetching the other bands' chunks there on a
//! thread of their own; the read it guessed for takes their bytes (waiting
//! for those still in flight) instead of requesting them again. A guess
//! that the next read shows wrong is stopped: requests not yet started are
//! not made, and the bytes fetched are dropped. A forked child does not
//! have the fetching thread, and fetches for itself.
//!
//! Datasets opened on the same index share one [`ReadAhead`] (they share
//! their index and locations), possibly from several threads: each guess
//! belongs to the dataset that made it (its *owner*), which alone stops
//! it, and a chunk a read has taken is fetched whatever happens to the
//! guess it came from.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use bytes::Bytes;

use crate::base::error::{Error, Result};
use crate::io::fetch::{Fetcher, Source, Unwanted, Want};

/// The bytes of one chunk fetched ahead: filled once, by the fetching
/// thread.
#[derive(Debug)]
pub struct Slot {
    bytes: Mutex<Option<Result<Bytes>>>,
    filled: Condvar,
    /// Whether the chunk was fetched in a span shared with others (its
    /// bytes are then a slice of that span's buffer).
    pub in_span: bool,
    /// Set when the guess is stopped before a read took the chunk: its
    /// request, if not started, is not made.
    abandoned: AtomicBool,
}

impl Slot {
    /// Fills the slot, unless it is filled already.
    fn fill(&self, bytes: impl FnOnce() -> Result<Bytes>) {
        let mut held = self.bytes.lock().unwrap_or_else(|p| p.into_inner());
        if held.is_none() {
            *held = Some(bytes());
            self.filled.notify_all();
        }
    }

    /// The bytes, if they are in.
    pub fn ready(&self) -> Option<Result<Bytes>> {
        self.bytes.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The bytes, once they are in.
    pub fn wait(&self) -> Result<Bytes> {
        let mut bytes = self.bytes.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(b) = bytes.as_ref() {
                return b.clone();
            }
            bytes = self.filled.wait(bytes).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// One chunk to fetch ahead: its key (array path, chunk position) and where
/// its bytes are.
#[derive(Debug)]
pub struct Ahead {
    /// Array path and chunk position.
    pub key: (String, u64),
    /// The file holding it.
    pub source: Source,
    /// Its byte ranges, concatenated in order.
    pub ranges: Vec<(u64, u64)>,
}

/// The chunks being fetched ahead of the reads expected next.
#[derive(Debug, Default)]
pub struct ReadAhead {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Chunks fetched or being fetched, not yet taken, by key, with the
    /// owner of the guess that fetches them.
    slots: HashMap<(String, u64), (usize, Arc<Slot>)>,
    /// The process whose threads fill `slots`.
    pid: u32,
}

/// The slots of one guess, in the order of its requests: a request whose
/// chunk was abandoned is not made.
#[derive(Debug)]
struct Guess(Vec<Arc<Slot>>);

impl Unwanted for Guess {
    fn unwanted(&self, request: usize) -> bool {
        self.0
            .get(request)
            .is_some_and(|slot| slot.abandoned.load(Ordering::Acquire))
    }
}

/// The slots of one fetching thread: any left empty when it ends (a panic)
/// fail, so that no read waits for ever.
struct FillOnDrop(Vec<Arc<Slot>>);

impl Drop for FillOnDrop {
    fn drop(&mut self) {
        for slot in &self.0 {
            slot.fill(|| Err(Error::unsupported("a chunk the read ahead never fetched")));
        }
    }
}

impl ReadAhead {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts fetching `chunks` with `fetcher` on a thread of its own for
    /// `owner`, in place of the chunks it fetched ahead before (that guess
    /// is stopped). Chunks another guess is fetching are left to it.
    /// Returns how many chunks it fetches.
    pub fn start(&self, owner: usize, fetcher: &Fetcher, chunks: Vec<Ahead>) -> usize {
        self.stop(owner);
        let chunks: Vec<Ahead> = {
            let state = self.state();
            let pending =
                |c: &Ahead| state.pid == std::process::id() && state.slots.contains_key(&c.key);
            chunks.into_iter().filter(|c| !pending(c)).collect()
        };
        if chunks.is_empty() {
            return 0;
        }
        let mut per_object: HashMap<&str, usize> = HashMap::new();
        for c in &chunks {
            *per_object.entry(c.source.url()).or_default() += 1;
        }
        let slots: Vec<Arc<Slot>> = chunks
            .iter()
            .map(|c| {
                Arc::new(Slot {
                    bytes: Mutex::new(None),
                    filled: Condvar::new(),
                    in_span: per_object[c.source.url()] > 1,
                    abandoned: AtomicBool::new(false),
                })
            })
            .collect();
        let fetcher = fetcher.skipping(Arc::new(Guess(slots.clone())));
        let filled = FillOnDrop(slots.clone());
        let keys: Vec<(String, u64)> = chunks.iter().map(|c| c.key.clone()).collect();
        let spawned = std::thread::Builder::new()
            .name("chunkref-ahead".into())
            .spawn(move || {
                let requests: Vec<(&Source, Want<'_>)> = chunks
                    .iter()
                    .map(|c| {
                        let want = match c.ranges[..] {
                            [(offset, length)] => Want::Range(offset, length),
                            _ => Want::Ranges(&c.ranges),
                        };
                        (&c.source, want)
                    })
                    .collect();
                fetcher.fetch_each(&requests, |i, bytes| filled.0[i].fill(|| bytes));
            });
        // No thread, no guess: the reads fetch their chunks themselves.
        if spawned.is_err() {
            return 0;
        }
        let mut state = self.state();
        let pid = std::process::id();
        if state.pid != pid {
            state.slots.clear();
            state.pid = pid;
        }
        let count = slots.len();
        state
            .slots
            .extend(keys.into_iter().zip(slots.into_iter().map(|s| (owner, s))));
        count
    }

    /// Takes the chunk at `position` of array `path`, if it is being (or
    /// was) fetched ahead.
    pub fn take(&self, path: &str, position: u64) -> Option<Arc<Slot>> {
        let mut state = self.state();
        if state.slots.is_empty() {
            return None;
        }
        if state.pid != std::process::id() {
            state.slots.clear();
            return None;
        }
        state
            .slots
            .remove(&(path.to_string(), position))
            .map(|(_, slot)| slot)
    }

    /// Stops `owner`'s guess: the chunks no read took are dropped, and
    /// their requests not started are not made.
    pub fn stop(&self, owner: usize) {
        self.state().slots.retain(|_, (of, slot)| {
            let mine = *of == owner;
            if mine {
                slot.abandoned.store(true, Ordering::Release);
            }
            !mine
        });
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for (_, slot) in state.slots.values() {
            slot.abandoned.store(true, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::config::Settings;
    use crate::io::resolve::Location;

    #[test]
    fn chunks_fetched_ahead_are_taken_once_and_stopped_guesses_dropped() {
        let dir = std::env::temp_dir().join(format!("chunkref-ahead-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f.bin");
        std::fs::write(&f, b"0123456789").unwrap();
        let settings = Settings::from_lookup(|_| None).unwrap();
        let source = Source::open(&Location::Local(f), &settings).unwrap();
        let ahead = ReadAhead::default();
        let chunk = |position: u64, ranges: Vec<(u64, u64)>| Ahead {
            key: ("a".into(), position),
            source: source.clone(),
            ranges,
        };
        let fetcher = Fetcher::new(&settings);
        ahead.start(
            1,
            &fetcher,
            vec![
                chunk(0, vec![(2, 3)]),
                chunk(1, vec![(8, 2), (0, 1)]),
                chunk(3, vec![(9, 5)]),
            ],
        );
        assert!(ahead.take("a", 4).is_none() && ahead.take("b", 0).is_none());
        assert_eq!(&ahead.take("a", 1).unwrap().wait().unwrap()[..], b"890");
        assert!(ahead.take("a", 1).is_none(), "taken once");
        assert_eq!(&ahead.take("a", 0).unwrap().wait().unwrap()[..], b"234");
        // A range past the end fails as a read of it would.
        let e = ahead.take("a", 3).unwrap().wait().unwrap_err().to_string();
        assert!(e.contains("f.bin") && e.contains("9..14"), "{e}");

        // Guesses of two owners: each stops its own only, and chunks the
        // other is fetching are left to it.
        assert_eq!(ahead.start(1, &fetcher, vec![chunk(5, vec![(0, 1)])]), 1);
        let two = vec![chunk(5, vec![(0, 1)]), chunk(6, vec![(1, 1)])];
        assert_eq!(ahead.start(2, &fetcher, two), 1);
        ahead.stop(1);
        assert!(ahead.take("a", 5).is_none(), "a stopped guess is dropped");
        assert_eq!(&ahead.take("a", 6).unwrap().wait().unwrap()[..], b"1");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
