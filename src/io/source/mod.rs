//! Source files read by byte ranges, for the index builders: a small head
//! block serves the usual layouts (headers first) without further reads.
//! A source is a local file or an object in remote storage (`s3://`,
//! `gs://`, `az://`, `https://` and GDAL's `/vsis3/`, `/vsicurl/` ...
//! spellings of them), read with the settings GDAL users already have in
//! their environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`, `GDAL_HTTP_*`): the
//! head, and the object's size, come from one request.

use std::cell::RefCell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use bytes::Bytes;

use crate::base::error::{Error, Result};
use crate::io::config::Settings;
use crate::io::fetch::{self, Fetcher, Want};
use crate::io::resolve::{self, Base, Location, ObjectUrl};

/// Source lists: remote glob patterns, list files.
pub mod inputs;

/// Bytes read from the start of the file in one go.
const HEAD_BYTES: u64 = 16 * 1024;

/// Least bytes a read past the head of a remote source fetches.
const READ_AHEAD: u64 = 64 * 1024;

/// Blocks past the head a remote source keeps (the oldest go first).
const KEPT_BLOCKS: usize = 16;

/// Where the bytes past the head come from.
enum Backing {
    /// A local file.
    File(File),
    /// An object in remote storage, and the blocks read past the head.
    Remote(fetch::Source, Mutex<Vec<(u64, Vec<u8>)>>),
    /// Nothing: every byte is in the head.
    Memory,
}

/// A file read by byte ranges (or bytes already in memory, such as a file
/// embedded in another one).
pub struct Source {
    path: String,
    backing: Backing,
    len: u64,
    head: Vec<u8>,
    format: &'static str,
}

/// The settings remote sources are read with: GDAL's configuration names,
/// from the environment (read once).
fn settings() -> Result<&'static (Settings, Fetcher)> {
    static SETTINGS: OnceLock<std::result::Result<(Settings, Fetcher), Error>> = OnceLock::new();
    SETTINGS
        .get_or_init(|| {
            let settings = Settings::from_lookup(|k| std::env::var(k).ok())?;
            let fetcher = Fetcher::new(&settings);
            Ok((settings, fetcher))
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// `len` bytes at `offset` of the file or object `name` (see [`locate`]),
/// in one read or one ranged request (retried as every remote read is).
pub fn read_range(name: &str, offset: u64, len: u64) -> Result<Vec<u8>> {
    let io = |e: std::io::Error| Error::Io {
        url: name.to_string(),
        range: format!(" bytes {offset}..{}", offset.saturating_add(len)),
        reason: e.to_string(),
    };
    count_bytes(len);
    match locate(name)? {
        Location::Local(path) => {
            let mut buf = vec![
                0;
                usize::try_from(len)
                    .map_err(|_| io(std::io::ErrorKind::InvalidInput.into()))?
            ];
            File::open(path)
                .and_then(|f| f.read_exact_at(&mut buf, offset))
                .map_err(io)?;
            Ok(buf)
        }
        loc @ Location::Object(_) => {
            refuse_when_head_only()?;
            let (settings, fetcher) = settings()?;
            let source = fetch::Source::open(&loc, settings)?;
            Ok(fetcher
                .fetch_one(&source, Want::Range(offset, len))?
                .to_vec())
        }
    }
}

/// Every object whose key lies below `url`'s key (its "directory",
/// listed recursively, paginated by the store): full keys and sizes.
pub fn list(url: &ObjectUrl) -> Result<Vec<(String, u64)>> {
    let (settings, _) = settings()?;
    fetch::Source::open(&Location::Object(url.clone()), settings)?.list()
}

/// The first bytes and the size of a remote source, read as a future on
/// the I/O runtime ahead of its builder (which runs on no thread of its
/// own while the request is in flight): see [`with_head`].
#[derive(Clone)]
pub struct Head {
    name: String,
    read: Result<(Bytes, u64)>,
}

impl Head {
    /// Reads the head and size of the remote object `name` (one request,
    /// retried as every read is), as [`Source::open`] would; a failure is
    /// kept, to be met by the builder that opens `name`.
    pub async fn read(name: &str) -> Head {
        let read = async {
            let (settings, fetcher) = settings()?;
            let source = fetch::Source::open(&locate(name)?, settings)?;
            fetcher.head(&source, HEAD_BYTES).await
        }
        .await;
        if let Ok((bytes, _)) = &read {
            count_bytes(bytes.len() as u64);
        }
        Head {
            name: name.to_string(),
            read,
        }
    }
}

/// The head handed to the builder running on this thread.
struct Handed {
    /// Taken by the first [`Source::open`] of its name.
    head: Option<Head>,
    /// Reads past the head are refused (see [`with_head`]).
    head_only: bool,
    /// A read past the head was refused.
    missed: bool,
}

thread_local! {
    static HANDED: RefCell<Option<Handed>> = const { RefCell::new(None) };
}

/// Runs `build` (a builder, on this thread) with `head` as the head of
/// the source it opens by that name: no request for it.
pub fn with_head<T>(head: Head, build: impl FnOnce() -> T) -> T {
    handing(head, false, build).0
}

/// [`with_head`] where every other read of a remote source fails (such as
/// a tag array past the head): `None` when one did, however `build` ended,
/// and the source is to be built again where blocking is allowed (so a
/// builder runs on an I/O runtime's task only while the head is all it
/// needs).
pub fn with_head_only<T>(head: Head, build: impl FnOnce() -> T) -> Option<T> {
    let (built, missed) = handing(head, true, build);
    (!missed).then_some(built)
}

/// Runs `build` with `head` handed to this thread; returns what it made
/// and whether a read was refused.
fn handing<T>(head: Head, head_only: bool, build: impl FnOnce() -> T) -> (T, bool) {
    let handed = Handed {
        head: Some(head),
        head_only,
        missed: false,
    };
    /// Puts back what was handed before, also when `build` panics.
    struct Restore(Option<Handed>);
    impl Drop for Restore {
        fn drop(&mut self) {
            HANDED.with(|h| *h.borrow_mut() = self.0.take());
        }
    }
    let restore = Restore(HANDED.with(|h| h.borrow_mut().replace(handed)));
    let built = build();
    let missed = HANDED.with(|h| h.borrow().as_ref().is_some_and(|h| h.missed));
    drop(restore);
    (built, missed)
}

/// The head and size handed to this thread for `name`, if any (taken;
/// a failed read of it as its error).
fn take_head(name: &str) -> Result<Option<(Bytes, u64)>> {
    let head = HANDED.with(|h| {
        let mut h = h.borrow_mut();
        let handed = h.as_mut()?;
        match handed.head.take_if(|head| head.name == name) {
            Some(head) => Some(head.read),
            None if handed.head_only => {
                handed.missed = true;
                Some(Err(past_the_head(name)))
            }
            None => None,
        }
    });
    head.transpose()
}

/// Fails (and notes it) when this thread may read no more than a head.
fn refuse_when_head_only() -> Result<()> {
    let refused = HANDED.with(|h| match h.borrow_mut().as_mut() {
        Some(handed) if handed.head_only => {
            handed.missed = true;
            true
        }
        _ => false,
    });
    match refused {
        true => Err(past_the_head("a remote source")),
        false => Ok(()),
    }
}

/// The error of a read refused past the head (never shown: the source is
/// then read again, see [`with_head`]).
fn past_the_head(name: &str) -> Error {
    Error::Usage {
        what: format!("{name}: a read past the head read ahead"),
    }
}

/// Where `name` (a local path, relative to the current directory, or a
/// URL in any spelling [`resolve::resolve`] accepts) is.
pub fn locate(name: &str) -> Result<Location> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    resolve::resolve(name, &Base::Dir(cwd))
}

impl Source {
    /// Opens `path` (a local path or a URL, see [`locate`]), a file of
    /// `format` (named in errors), and reads its first bytes.
    pub fn open(path: &str, format: &'static str) -> Result<Source> {
        let io = |reason: String| Error::Io {
            url: path.to_string(),
            range: String::new(),
            reason,
        };
        if let Location::Object(_) = locate(path)? {
            return Source::open_remote(path, format);
        }
        let file = File::open(path).map_err(|e| io(e.to_string()))?;
        let len = file.metadata().map_err(|e| io(e.to_string()))?.len();
        let mut head = vec![0; HEAD_BYTES.min(len) as usize];
        file.read_exact_at(&mut head, 0)
            .map_err(|e| io(e.to_string()))?;
        count_bytes(head.len() as u64);
        Ok(Source {
            path: path.to_string(),
            backing: Backing::File(file),
            len,
            head,
            format,
        })
    }

    /// Opens the remote object `url`: its head and size in one request,
    /// or the head read ahead for it (see [`with_head`]).
    fn open_remote(url: &str, format: &'static str) -> Result<Source> {
        let ahead = take_head(url)?;
        let (settings, fetcher) = settings()?;
        let source = fetch::Source::open(&locate(url)?, settings)?;
        let (head, len) = match ahead {
            Some(head) => head,
            None => {
                let (head, len) = fetcher.fetch_head(&source, HEAD_BYTES)?;
                count_bytes(head.len() as u64);
                (head, len)
            }
        };
        Ok(Source {
            path: url.to_string(),
            backing: Backing::Remote(source, Mutex::default()),
            len,
            head: head.to_vec(),
            format,
        })
    }

    /// In-memory `bytes` named `name` in errors (e.g. "x.jp2: GeoJP2 box").
    pub fn from_bytes(name: &str, bytes: Vec<u8>, format: &'static str) -> Source {
        Source {
            path: name.to_string(),
            backing: Backing::Memory,
            len: bytes.len() as u64,
            head: bytes,
            format,
        }
    }

    /// Reads `len` bytes at `offset`; ranges past the end of the file are errors.
    pub fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let end = offset
            .checked_add(len)
            .filter(|&e| e <= self.len)
            .ok_or_else(|| {
                self.malformed(format!(
                    "bytes {offset}..{} are past the end of the file ({} bytes)",
                    offset.saturating_add(len),
                    self.len
                ))
            })?;
        if end <= self.head.len() as u64 {
            return Ok(self.head[offset as usize..end as usize].to_vec());
        }
        let range = || format!(" bytes {offset}..{end}");
        count_bytes(len);
        match &self.backing {
            Backing::File(file) => {
                let mut buf = vec![0; len as usize];
                file.read_exact_at(&mut buf, offset)
                    .map_err(|e| Error::Io {
                        url: self.path.clone(),
                        range: range(),
                        reason: e.to_string(),
                    })?;
                Ok(buf)
            }
            Backing::Remote(source, blocks) => self.read_remote(source, blocks, offset, len),
            // In-memory sources hold every byte in `head`.
            Backing::Memory => {
                Err(self.malformed(format!("bytes {offset}..{end} are not in memory")))
            }
        }
    }

    /// Reads `len` bytes at `offset` (inside the object) of a remote source:
    /// from a block read before, or as the start of a new block of at least
    /// [`READ_AHEAD`] bytes, kept for the reads that follow (headers past
    /// the head, such as TIFF tag arrays or JPEG 2000 tile-part headers, lie
    /// close together: one request serves many).
    fn read_remote(
        &self,
        source: &fetch::Source,
        blocks: &Mutex<Vec<(u64, Vec<u8>)>>,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>> {
        let within = |(start, bytes): &(u64, Vec<u8>)| {
            let at = usize::try_from(offset.checked_sub(*start)?).ok()?;
            bytes
                .get(at..at.checked_add(usize::try_from(len).ok()?)?)
                .map(<[u8]>::to_vec)
        };
        let mut kept = blocks.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = kept.iter().find_map(within) {
            return Ok(found);
        }
        refuse_when_head_only()?;
        let (_, fetcher) = settings()?;
        let block = len.max(READ_AHEAD).min(self.len - offset);
        let bytes = fetcher
            .fetch_one(source, Want::Range(offset, block))?
            .to_vec();
        let wanted = bytes[..len as usize].to_vec();
        if kept.len() >= KEPT_BLOCKS {
            kept.remove(0);
        }
        kept.push((offset, bytes));
        Ok(wanted)
    }

    /// Path of the file.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// How many of the first bytes were read when the file was opened
    /// (reads within them cost nothing).
    pub fn head_len(&self) -> u64 {
        self.head.len() as u64
    }

    /// Length of the file in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// An error saying the file is not a file of its format chunkref can index.
    pub fn malformed(&self, reason: impl std::fmt::Display) -> Error {
        Error::MalformedSource {
            path: self.path.clone(),
            reason: format!("not a readable {}: {reason}", self.format),
        }
    }
}

/// Bytes of sources read so far in this process (heads and ranges).
static BYTES_READ: AtomicU64 = AtomicU64::new(0);

/// Counts `n` bytes read from a source.
pub fn count_bytes(n: u64) {
    BYTES_READ.fetch_add(n, Ordering::Relaxed);
}

/// Bytes of sources read so far in this process (`chunkref index`'s
/// progress line shows them).
pub fn bytes_read() -> u64 {
    BYTES_READ.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing listens there: a request would fail, so none is made.
    const URL: &str = "http://127.0.0.1:9/a.tif";

    fn head(read: Result<(Bytes, u64)>) -> Head {
        Head {
            name: URL.into(),
            read,
        }
    }

    #[test]
    fn a_head_handed_over_serves_its_builder_and_nothing_more() {
        let ahead = head(Ok((Bytes::from_static(b"0123456789"), 100)));
        let within = with_head_only(ahead.clone(), || {
            let source = Source::open(URL, "TIFF")?;
            Ok::<_, Error>((source.len(), source.read(2, 3)?))
        });
        assert_eq!(within.unwrap().unwrap(), (100, b"234".to_vec()));
        // Past the head, another remote source, the same one opened twice:
        // refused, the builder to be run again where it may block.
        let past = with_head_only(ahead.clone(), || Source::open(URL, "TIFF")?.read(20, 3));
        assert!(past.is_none());
        let other = with_head_only(ahead.clone(), || {
            Source::open("http://127.0.0.1:9/b.tif", "TIFF").map(|_| ())
        });
        assert!(other.is_none());
        let twice = with_head_only(ahead, || {
            Source::open(URL, "TIFF")?;
            Source::open(URL, "TIFF").map(|_| ())
        });
        assert!(twice.is_none());
        // Nothing is left handed to the thread.
        assert!(HANDED.with(|h| h.borrow().is_none()));
    }

    #[test]
    fn a_failed_head_read_is_the_builders_error() {
        let failed = head(Err(Error::Io {
            url: URL.into(),
            range: " bytes 0..16384".into(),
            reason: "object not found".into(),
        }));
        let e = with_head(failed, || Source::open(URL, "TIFF").err());
        let e = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains(URL) && e.contains("object not found"), "{e}");
    }
}
