//! Progress of `chunkref index` over many sources: a line redrawn in place
//! on a terminal (sources done, chunk references, bytes read, rate, time
//! left), and one summary line at the end, on a terminal or not.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chunkref::io::source::bytes_read;

/// How often the line is redrawn at most.
const REDRAW: Duration = Duration::from_millis(100);

/// The progress of one run over `total` sources.
#[derive(Debug)]
pub(crate) struct Progress {
    total: usize,
    done: AtomicUsize,
    failed: AtomicUsize,
    refs: AtomicUsize,
    started: Instant,
    /// When the line was last drawn; `None` when stderr is not a terminal.
    drawn: Option<Mutex<Instant>>,
}

impl Progress {
    /// The progress of a run over `total` sources, drawn when stderr is a
    /// terminal.
    pub(crate) fn new(total: usize) -> Progress {
        let now = Instant::now();
        Progress {
            total,
            done: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            refs: AtomicUsize::new(0),
            started: now,
            drawn: std::io::stderr()
                .is_terminal()
                .then(|| Mutex::new(now - REDRAW)),
        }
    }

    /// One source done: `Some(refs)` indexed with that many chunk
    /// references, `None` failed.
    pub(crate) fn source_done(&self, refs: Option<usize>) {
        self.done.fetch_add(1, Ordering::Relaxed);
        match refs {
            Some(n) => self.refs.fetch_add(n, Ordering::Relaxed),
            None => self.failed.fetch_add(1, Ordering::Relaxed),
        };
        let Some(drawn) = &self.drawn else { return };
        let mut last = drawn.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() >= REDRAW {
            *last = Instant::now();
            eprint!("\r\x1b[2K{}", self.line());
            let _ = std::io::stderr().flush();
        }
    }

    /// A source counted as done that failed after all (a STAC asset whose
    /// error was kept for its item).
    pub(crate) fn failed_after_all(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts from zero again (the sources are read anew, as a mosaic after
    /// a time stack found them on different grids).
    pub(crate) fn restart(&self) {
        self.done.store(0, Ordering::Relaxed);
        self.failed.store(0, Ordering::Relaxed);
        self.refs.store(0, Ordering::Relaxed);
    }

    /// Erases the progress line (before other output, and at the end).
    pub(crate) fn clear(&self) {
        if self.drawn.is_some() {
            eprint!("\r\x1b[2K");
        }
    }

    /// The summary: sources, references, bytes, rate and time taken.
    pub(crate) fn summary(&self) -> String {
        let secs = self.started.elapsed().as_secs_f64();
        format!(
            "{} of {} sources indexed ({} failed), {} chunk references, {} read, {:.1} s",
            self.done.load(Ordering::Relaxed) - self.failed.load(Ordering::Relaxed),
            self.total,
            self.failed.load(Ordering::Relaxed),
            self.refs.load(Ordering::Relaxed),
            megabytes(bytes_read()),
            secs
        )
    }

    /// The line drawn while running.
    fn line(&self) -> String {
        let done = self.done.load(Ordering::Relaxed);
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = done as f64 / secs;
        let left = if rate > 0.0 {
            format!("{:.0} s left", (self.total - done) as f64 / rate)
        } else {
            "-".into()
        };
        format!(
            "[{done}/{}] {} refs, {} read, {rate:.0} sources/s, {left}",
            self.total,
            self.refs.load(Ordering::Relaxed),
            megabytes(bytes_read()),
        )
    }
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_counts_sources_references_and_failures() {
        let p = Progress::new(3);
        p.source_done(Some(10));
        p.source_done(None);
        p.source_done(Some(5));
        let s = p.summary();
        assert!(
            s.starts_with("2 of 3 sources indexed (1 failed), 15 chunk references"),
            "{s}"
        );
    }
}
