//! State that belongs to one process: the thread pools (decoding, remote
//! I/O) and what lives on them (object-store clients and their connection
//! pools), and the index cache.
//!
//! A process that forks after reading (Python's `multiprocessing` with the
//! default fork start method, dask's forked workers, R's `mclapply`) hands
//! its child a copy of this memory but none of its threads: a pool built by
//! the parent would wait for ever for workers that do not exist. So every
//! such value is a [`PerProcess`]: tagged with the id of the process that
//! built it, and built anew the first time a child uses it. The parent's
//! copy is leaked in the child (dropping it would join threads that are not
//! there).

use std::sync::atomic::{AtomicPtr, Ordering};

/// A value built lazily once per process (see the module documentation).
pub struct PerProcess<T> {
    current: AtomicPtr<Owned<T>>,
    make: fn() -> T,
}

/// A value and the process that built it.
struct Owned<T> {
    pid: u32,
    value: T,
}

impl<T> PerProcess<T> {
    /// An empty cell whose value `make` builds on first use in each process.
    pub const fn new(make: fn() -> T) -> PerProcess<T> {
        PerProcess {
            current: AtomicPtr::new(std::ptr::null_mut()),
            make,
        }
    }

    /// This process's value, built if this process has none yet.
    pub fn get(&'static self) -> &'static T {
        let pid = std::process::id();
        let mut seen = self.current.load(Ordering::Acquire);
        loop {
            // SAFETY: a non-null pointer was made by Box::into_raw below and
            // is never freed once published (values are leaked, not dropped).
            if let Some(owned) = unsafe { seen.as_ref() } {
                if owned.pid == pid {
                    return &owned.value;
                }
            }
            let fresh = Box::into_raw(Box::new(Owned {
                pid,
                value: (self.make)(),
            }));
            match self
                .current
                .compare_exchange(seen, fresh, Ordering::AcqRel, Ordering::Acquire)
            {
                // The previous value (the parent's, if any) stays leaked.
                // SAFETY: just published, never freed.
                Ok(_) => return unsafe { &(*fresh).value },
                Err(other) => {
                    // Another thread of this process published first: use
                    // its value, drop ours (its threads are ours to join).
                    // SAFETY: `fresh` was never published.
                    drop(unsafe { Box::from_raw(fresh) });
                    seen = other;
                }
            }
        }
    }
}

/// The pool chunks are decoded on: one thread per core.
pub fn decoding_pool() -> &'static rayon::ThreadPool {
    static POOL: PerProcess<rayon::ThreadPool> = PerProcess::new(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("chunkref-decode-{i}"))
            .build()
            .expect("cannot start the chunkref decoding threads")
    });
    POOL.get()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    static BUILT: AtomicUsize = AtomicUsize::new(0);
    static CELL: PerProcess<usize> = PerProcess::new(|| BUILT.fetch_add(1, Ordering::SeqCst));

    #[test]
    fn builds_once_per_process_even_when_threads_race() {
        let values: Vec<usize> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8).map(|_| s.spawn(|| *CELL.get())).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(values.iter().all(|&v| v == values[0]));
        assert_eq!(*CELL.get(), values[0]);
    }

    #[test]
    fn the_decoding_pool_runs_work() {
        assert_eq!(decoding_pool().install(|| 6 * 7), 42);
    }
}
