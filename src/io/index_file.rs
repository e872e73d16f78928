//! Random access to an index file: the bytes of a table are read by range
//! (the Parquet footer, one row group, the FlatGeobuf R-tree pages a query
//! needs) instead of whole, so a large or remote table opens without being
//! downloaded.

use std::fmt::Debug;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use bytes::Bytes;

use crate::base::error::{Error, Result};
use crate::io::vsi::{vsi_is_local, VsiFile};

/// An index file read by byte range. Implementations are shared between
/// threads (reads of row groups may come from any of them).
pub trait IndexFile: Debug + Send + Sync {
    /// Where the file is (for messages).
    fn name(&self) -> &str;
    /// Size in bytes.
    fn size(&self) -> u64;
    /// `len` bytes from `offset`; fewer only at the end of the file.
    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes>;

    /// Whether a read costs no round trip (by the name GDAL would open).
    fn is_local(&self) -> bool {
        vsi_is_local(self.name())
    }

    /// `len` clamped to the bytes the file has from `offset`.
    fn available(&self, offset: u64, len: usize) -> usize {
        len.min(usize::try_from(self.size().saturating_sub(offset)).unwrap_or(usize::MAX))
    }

    /// The whole file, refused above `max_bytes`.
    fn read_all(&self, max_bytes: u64) -> Result<Bytes> {
        let size = self.size();
        if size > max_bytes {
            return Err(Error::Limits {
                what: format!(
                    "index {} is {size} bytes, more than the {max_bytes} bytes read whole",
                    self.name()
                ),
            });
        }
        let len = usize::try_from(size).map_err(|_| Error::Limits {
            what: format!("index {} is {size} bytes", self.name()),
        })?;
        self.read_at(0, len)
    }
}

/// Opens index files by path; the driver opens them through GDAL's virtual
/// file systems, the command line tool from local disk.
pub type Opener<'a> = dyn Fn(&str) -> Result<Arc<dyn IndexFile>> + Sync + 'a;

/// An index file held in memory.
#[derive(Debug, Clone)]
pub struct InMemory {
    name: String,
    bytes: Bytes,
}

impl InMemory {
    /// `bytes` known as `name`.
    pub fn new(name: &str, bytes: impl Into<Bytes>) -> InMemory {
        InMemory {
            name: name.to_string(),
            bytes: bytes.into(),
        }
    }
}

impl IndexFile for InMemory {
    fn name(&self) -> &str {
        &self.name
    }

    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.bytes.len());
        let end = start.saturating_add(len).min(self.bytes.len());
        Ok(self.bytes.slice(start..end))
    }
}

/// A file on local disk, read with positioned reads.
#[derive(Debug)]
pub struct LocalFile {
    name: String,
    file: std::fs::File,
    size: u64,
}

impl LocalFile {
    /// Opens `path`.
    pub fn open(path: &str) -> Result<LocalFile> {
        let io = |e: std::io::Error| Error::Io {
            url: path.to_string(),
            range: String::new(),
            reason: e.to_string(),
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if meta.is_dir() {
            return Err(io(std::io::Error::other("is a directory")));
        }
        Ok(LocalFile {
            name: path.to_string(),
            file,
            size: meta.len(),
        })
    }
}

impl IndexFile for LocalFile {
    fn name(&self) -> &str {
        &self.name
    }

    fn is_local(&self) -> bool {
        true
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        use std::os::unix::fs::FileExt;
        let len = self.available(offset, len);
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| Error::Io {
                url: self.name.clone(),
                range: format!("bytes {offset}-{}", offset + len as u64),
                reason: e.to_string(),
            })?;
        Ok(Bytes::from(buf))
    }
}

/// `Read + Seek` over an [`IndexFile`], for readers that want a stream
/// (the FlatGeobuf crate); reads go through a buffer of `block` bytes.
#[derive(Debug)]
pub struct Cursor {
    file: Arc<dyn IndexFile>,
    pos: u64,
    block: usize,
    buffer: Bytes,
    buffer_start: u64,
}

impl Cursor {
    /// A cursor at the start of `file`, reading ahead `block` bytes.
    pub fn new(file: Arc<dyn IndexFile>, block: usize) -> Cursor {
        Cursor {
            file,
            pos: 0,
            block,
            buffer: Bytes::new(),
            buffer_start: 0,
        }
    }
}

impl Read for Cursor {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let buffered = self.buffer_start..self.buffer_start + self.buffer.len() as u64;
        if !buffered.contains(&self.pos) {
            if self.pos >= self.file.size() {
                return Ok(0);
            }
            let want = out.len().max(self.block);
            self.buffer = self
                .file
                .read_at(self.pos, want)
                .map_err(std::io::Error::other)?;
            self.buffer_start = self.pos;
            if self.buffer.is_empty() {
                return Ok(0);
            }
        }
        let from = (self.pos - self.buffer_start) as usize;
        let n = out.len().min(self.buffer.len() - from);
        out[..n].copy_from_slice(&self.buffer[from..from + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Cursor {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.file.size().checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = target.ok_or_else(|| std::io::Error::other("seek before the start"))?;
        Ok(self.pos)
    }
}

/// A file read through GDAL's virtual file systems (without the `gdal`
/// feature, none can be opened).
impl IndexFile for VsiFile {
    fn name(&self) -> &str {
        VsiFile::name(self)
    }

    fn size(&self) -> u64 {
        VsiFile::size(self)
    }

    fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        self.read_exact_at(offset, self.available(offset, len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_reads_and_seeks_through_blocks() {
        let data: Vec<u8> = (0..=255).collect();
        let file: Arc<dyn IndexFile> = Arc::new(InMemory::new("m", data.clone()));
        let mut c = Cursor::new(file, 16);
        let mut buf = [0u8; 40];
        c.read_exact(&mut buf).unwrap();
        assert_eq!(&buf[..], &data[..40]);
        c.seek(SeekFrom::End(-10)).unwrap();
        let mut rest = Vec::new();
        c.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, &data[246..]);
        c.seek(SeekFrom::Start(3)).unwrap();
        c.seek(SeekFrom::Current(2)).unwrap();
        c.read_exact(&mut buf[..2]).unwrap();
        assert_eq!(&buf[..2], &[5, 6]);
    }

    #[test]
    fn whole_reads_are_bounded() {
        let f = InMemory::new("m", vec![1u8; 100]);
        assert_eq!(f.read_all(100).unwrap().len(), 100);
        let e = f.read_all(99).unwrap_err().to_string();
        assert!(e.contains("100 bytes"), "{e}");
        assert_eq!(f.read_at(90, 50).unwrap().len(), 10);
    }
}
