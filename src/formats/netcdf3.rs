//! The header of a NetCDF-3 file (Unidata's "NetCDF Classic Format
//! Specification"): classic (`CDF\x01`), 64-bit offset (`CDF\x02`) and
//! 64-bit data (`CDF\x05`, CDF-5) files. The header lists the dimensions,
//! the global attributes and the variables (their dimensions, attributes,
//! type and first byte); every number is big-endian.
//!
//! Every count is checked against the bytes left in the file before
//! anything is allocated for it, so a hostile header fails with an error
//! naming what it claims, never with a large allocation.

use crate::base::error::{Error, Result};
use crate::io::source::Source;

/// The three formats, by the byte after `CDF`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `CDF\x01`: 32-bit offsets and counts.
    Classic,
    /// `CDF\x02`: 64-bit variable offsets.
    Offset64,
    /// `CDF\x05` (CDF-5): 64-bit offsets and counts, unsigned and 64-bit types.
    Data64,
}

impl Version {
    /// The version of a file starting with `head`, if it is NetCDF-3.
    pub fn of(head: &[u8]) -> Option<Version> {
        match head.get(..4)? {
            b"CDF\x01" => Some(Version::Classic),
            b"CDF\x02" => Some(Version::Offset64),
            b"CDF\x05" => Some(Version::Data64),
            _ => None,
        }
    }

    /// Bytes of a count (`nelems`, dimension lengths, `numrecs`, `vsize`).
    fn count_bytes(self) -> u64 {
        match self {
            Version::Data64 => 8,
            _ => 4,
        }
    }

    /// Bytes of a variable's `begin` offset.
    fn offset_bytes(self) -> u64 {
        match self {
            Version::Classic => 4,
            _ => 8,
        }
    }

    /// How errors name the format.
    pub fn name(self) -> &'static str {
        match self {
            Version::Classic => "NetCDF-3 classic",
            Version::Offset64 => "NetCDF-3 64-bit offset",
            Version::Data64 => "NetCDF-3 64-bit data (CDF-5)",
        }
    }
}

/// A value type (`nc_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcType {
    /// `NC_BYTE`: signed 8-bit integer.
    Byte,
    /// `NC_CHAR`: 8-bit character (text).
    Char,
    /// `NC_SHORT`: signed 16-bit integer.
    Short,
    /// `NC_INT`: signed 32-bit integer.
    Int,
    /// `NC_FLOAT`: IEEE 754 binary32.
    Float,
    /// `NC_DOUBLE`: IEEE 754 binary64.
    Double,
    /// `NC_UBYTE` (CDF-5): unsigned 8-bit integer.
    UByte,
    /// `NC_USHORT` (CDF-5): unsigned 16-bit integer.
    UShort,
    /// `NC_UINT` (CDF-5): unsigned 32-bit integer.
    UInt,
    /// `NC_INT64` (CDF-5): signed 64-bit integer.
    Int64,
    /// `NC_UINT64` (CDF-5): unsigned 64-bit integer.
    UInt64,
}

impl NcType {
    /// The type of code `code` in a file of `version` (types 7 to 11 only
    /// in CDF-5 files).
    fn of(code: u32, version: Version) -> Option<NcType> {
        use NcType::*;
        let t = match code {
            1 => Byte,
            2 => Char,
            3 => Short,
            4 => Int,
            5 => Float,
            6 => Double,
            7 => UByte,
            8 => UShort,
            9 => UInt,
            10 => Int64,
            11 => UInt64,
            _ => return None,
        };
        (code <= 6 || version == Version::Data64).then_some(t)
    }

    /// Bytes per value.
    pub fn size(self) -> u64 {
        use NcType::*;
        match self {
            Byte | Char | UByte => 1,
            Short | UShort => 2,
            Int | UInt | Float => 4,
            Double | Int64 | UInt64 => 8,
        }
    }
}

/// A dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dimension {
    /// Its name.
    pub name: String,
    /// Its length; `None` for the record (unlimited) dimension, whose
    /// length is the file's record count.
    pub len: Option<u64>,
}

/// An attribute: its values as stored (big-endian, padding removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// Its name.
    pub name: String,
    /// The type of its values.
    pub nc_type: NcType,
    /// `count` values of `nc_type`, big-endian.
    pub values: Vec<u8>,
}

impl Attribute {
    /// How many values it holds.
    pub fn count(&self) -> usize {
        self.values.len() / self.nc_type.size() as usize
    }
}

/// A variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// Indices into [`Header::dimensions`], slowest first.
    pub dimensions: Vec<usize>,
    /// Its attributes, in file order.
    pub attributes: Vec<Attribute>,
    /// The type of its values.
    pub nc_type: NcType,
    /// Offset of its first value (of its first record, for a record variable).
    pub begin: u64,
}

/// What a NetCDF-3 header holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The format.
    pub version: Version,
    /// The record count; `None` when the file says it is being streamed
    /// (`numrecs` all ones: the count follows from the file's size).
    pub numrecs: Option<u64>,
    /// The dimensions, in file order.
    pub dimensions: Vec<Dimension>,
    /// The global attributes, in file order.
    pub attributes: Vec<Attribute>,
    /// The variables, in file order.
    pub variables: Vec<Variable>,
    /// The header's size: the first byte after it.
    pub len: u64,
}

impl Header {
    /// Whether `variable` has the record dimension (it is then its first).
    pub fn is_record(&self, variable: &Variable) -> bool {
        variable
            .dimensions
            .first()
            .is_some_and(|&d| self.dimensions[d].len.is_none())
    }
}

/// Tag of the dimension list.
const NC_DIMENSION: u32 = 0x0A;
/// Tag of the variable list.
const NC_VARIABLE: u32 = 0x0B;
/// Tag of an attribute list.
const NC_ATTRIBUTE: u32 = 0x0C;

/// Bytes the header is read in, past the source's head.
const READ_BLOCK: u64 = 64 * 1024;

/// Most bytes one header item (a name, an attribute's values) may hold:
/// netCDF attributes are at most a few kB; this bounds what a hostile
/// count makes us read and hold.
const MAX_ITEM_BYTES: u64 = 64 << 20;

/// Most dimensions of one variable (netCDF's `NC_MAX_VAR_DIMS`).
const MAX_VAR_DIMS: u64 = 1024;

/// Reads the header of the NetCDF-3 file `source`.
pub fn read(source: &Source) -> Result<Header> {
    let mut cursor = Cursor {
        source,
        block: Vec::new(),
        block_start: 0,
        pos: 0,
        version: Version::Classic,
    };
    let magic = cursor.take(4, "the format signature")?;
    let version = Version::of(&magic).ok_or_else(|| {
        source.malformed(format!(
            "the file starts with {magic:02x?}, not CDF then 1, 2 or 5"
        ))
    })?;
    cursor.version = version;
    let numrecs = match cursor.count("the record count")? {
        n if n == u64::MAX >> (64 - 8 * version.count_bytes()) => None,
        n => Some(n),
    };
    let dimensions = cursor.list(NC_DIMENSION, "dimension", 8, |c, i| {
        let name = c.name(&format!("the name of dimension {i}"))?;
        let len = c.count(&format!("the length of dimension '{name}'"))?;
        Ok(Dimension {
            name,
            len: (len != 0).then_some(len),
        })
    })?;
    if dimensions.iter().filter(|d| d.len.is_none()).count() > 1 {
        return Err(source.malformed("several dimensions are unlimited (length 0)"));
    }
    let attributes = cursor.attributes("the global attributes")?;
    let variables = cursor.list(NC_VARIABLE, "variable", 8, |c, i| {
        c.variable(i, &dimensions)
    })?;
    Ok(Header {
        version,
        numrecs,
        dimensions,
        attributes,
        variables,
        len: cursor.pos,
    })
}

/// Reads the header in order, a block at a time.
struct Cursor<'a> {
    source: &'a Source,
    /// Bytes of the file from `block_start`.
    block: Vec<u8>,
    block_start: u64,
    /// The next byte to read.
    pos: u64,
    version: Version,
}

impl Cursor<'_> {
    /// The next `n` bytes, holding `what`.
    fn take(&mut self, n: u64, what: &str) -> Result<Vec<u8>> {
        let len = self.source.len();
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= len)
            .ok_or_else(|| {
                self.source.malformed(format!(
                    "the header is cut short: {what} (bytes {}..{}) lies past the end of \
                     the file ({len} bytes)",
                    self.pos,
                    self.pos.saturating_add(n)
                ))
            })?;
        if n > MAX_ITEM_BYTES {
            return Err(Error::Limits {
                what: format!(
                    "{}: {what} claims {n} bytes (at most {MAX_ITEM_BYTES} are read)",
                    self.source.path()
                ),
            });
        }
        let block_end = self.block_start + self.block.len() as u64;
        if self.pos < self.block_start || end > block_end {
            let want = n.max(READ_BLOCK).min(len - self.pos);
            self.block = self.source.read(self.pos, want)?;
            self.block_start = self.pos;
        }
        let at = (self.pos - self.block_start) as usize;
        let bytes = self.block[at..at + n as usize].to_vec();
        self.pos = end;
        Ok(bytes)
    }

    /// A big-endian unsigned integer of `bytes` (4 or 8) bytes.
    fn uint(&mut self, bytes: u64, what: &str) -> Result<u64> {
        let raw = self.take(bytes, what)?;
        Ok(raw.iter().fold(0u64, |v, &b| (v << 8) | u64::from(b)))
    }

    /// A 32-bit tag or type code.
    fn word(&mut self, what: &str) -> Result<u32> {
        Ok(self.uint(4, what)? as u32)
    }

    /// A count (`NON_NEG`: 32 bits, 64 in CDF-5).
    fn count(&mut self, what: &str) -> Result<u64> {
        self.uint(self.version.count_bytes(), what)
    }

    /// A count of items each taking at least `min_bytes`, checked against
    /// the bytes left in the file.
    fn items(&mut self, min_bytes: u64, what: &str) -> Result<u64> {
        let n = self.count(&format!("the number of {what}"))?;
        let left = self.source.len().saturating_sub(self.pos);
        if n > left / min_bytes.max(1) {
            return Err(self.source.malformed(format!(
                "the header claims {n} {what}, more than the {left} bytes left in the file \
                 can hold"
            )));
        }
        Ok(n)
    }

    /// Skips the padding after `n` bytes up to a multiple of 4.
    fn pad(&mut self, n: u64, what: &str) -> Result<()> {
        let padding = (4 - n % 4) % 4;
        if padding > 0 {
            self.take(padding, what)?;
        }
        Ok(())
    }

    /// A name: a count, then that many bytes of UTF-8, padded to 4 bytes.
    fn name(&mut self, what: &str) -> Result<String> {
        let n = self.items(1, &format!("bytes in {what}"))?;
        let bytes = self.take(n, what)?;
        self.pad(n, what)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// A list: its tag (or `ABSENT`: zero tag, zero count), its count, then
    /// each item read by `item` (each at least `min_bytes` long).
    fn list<T>(
        &mut self,
        tag: u32,
        what: &str,
        min_bytes: u64,
        mut item: impl FnMut(&mut Self, u64) -> Result<T>,
    ) -> Result<Vec<T>> {
        let start = self.pos;
        let found = self.word(&format!("the tag of the {what} list"))?;
        let plural = format!("{what}s");
        let n = self.items(min_bytes, &plural)?;
        if found == 0 && n == 0 {
            return Ok(Vec::new());
        }
        if found != tag {
            return Err(self.source.malformed(format!(
                "the {what} list at byte {start} starts with tag {found:#x}, not {tag:#x} \
                 (or an empty list)"
            )));
        }
        (0..n).map(|i| item(self, i)).collect()
    }

    /// An attribute list.
    fn attributes(&mut self, owner: &str) -> Result<Vec<Attribute>> {
        self.list(NC_ATTRIBUTE, "attribute", 12, |c, i| {
            let name = c.name(&format!("the name of attribute {i} of {owner}"))?;
            let what = format!("attribute '{name}' of {owner}");
            let code = c.word(&format!("the type of {what}"))?;
            let nc_type = NcType::of(code, c.version).ok_or_else(|| {
                c.source.malformed(format!(
                    "{what} has type {code}, not a {} type",
                    c.version.name()
                ))
            })?;
            let n = c.items(nc_type.size(), &format!("values of {what}"))?;
            let bytes = n * nc_type.size();
            let values = c.take(bytes, &format!("the values of {what}"))?;
            c.pad(bytes, &format!("the values of {what}"))?;
            Ok(Attribute {
                name,
                nc_type,
                values,
            })
        })
    }

    /// Variable `i`, whose dimension ids index `dimensions`.
    fn variable(&mut self, i: u64, dimensions: &[Dimension]) -> Result<Variable> {
        let name = self.name(&format!("the name of variable {i}"))?;
        let what = format!("variable '{name}'");
        let rank = self.items(self.version.count_bytes(), &format!("dimensions of {what}"))?;
        if rank > MAX_VAR_DIMS {
            return Err(self.source.malformed(format!(
                "{what} has {rank} dimensions (netCDF allows at most {MAX_VAR_DIMS})"
            )));
        }
        let dims = (0..rank)
            .map(|axis| {
                let id = self.count(&format!("dimension {axis} of {what}"))?;
                let Some(dim) = usize::try_from(id).ok().and_then(|d| dimensions.get(d)) else {
                    return Err(self.source.malformed(format!(
                        "dimension {axis} of {what} is dimension {id}, but the file has {}",
                        dimensions.len()
                    )));
                };
                if dim.len.is_none() && axis > 0 {
                    return Err(self.source.malformed(format!(
                        "{what} has the unlimited dimension '{}' at position {axis}; it may \
                         only be the first",
                        dim.name
                    )));
                }
                Ok(id as usize)
            })
            .collect::<Result<Vec<_>>>()?;
        let attributes = self.attributes(&what)?;
        let code = self.word(&format!("the type of {what}"))?;
        let nc_type = NcType::of(code, self.version).ok_or_else(|| {
            self.source.malformed(format!(
                "{what} has type {code}, not a {} type",
                self.version.name()
            ))
        })?;
        // vsize: recomputed from the shape, as netCDF does (it cannot hold
        // the size of a variable of 4 GiB or more in 32 bits).
        self.count(&format!("the size of {what}"))?;
        let begin = self.uint(
            self.version.offset_bytes(),
            &format!("the offset of {what}"),
        )?;
        Ok(Variable {
            name,
            dimensions: dims,
            attributes,
            nc_type,
            begin,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes NetCDF-3 headers for the tests.
    pub(crate) struct Writer {
        pub(crate) bytes: Vec<u8>,
        version: Version,
    }

    impl Writer {
        pub(crate) fn new(version: Version, numrecs: u64) -> Writer {
            let mut w = Writer {
                bytes: b"CDF".to_vec(),
                version,
            };
            w.bytes.push(match version {
                Version::Classic => 1,
                Version::Offset64 => 2,
                Version::Data64 => 5,
            });
            w.count(numrecs);
            w
        }

        pub(crate) fn word(&mut self, v: u32) -> &mut Self {
            self.bytes.extend_from_slice(&v.to_be_bytes());
            self
        }

        pub(crate) fn count(&mut self, v: u64) -> &mut Self {
            match self.version {
                Version::Data64 => self.bytes.extend_from_slice(&v.to_be_bytes()),
                _ => self.bytes.extend_from_slice(&(v as u32).to_be_bytes()),
            }
            self
        }

        pub(crate) fn offset(&mut self, v: u64) -> &mut Self {
            match self.version {
                Version::Classic => self.bytes.extend_from_slice(&(v as u32).to_be_bytes()),
                _ => self.bytes.extend_from_slice(&v.to_be_bytes()),
            }
            self
        }

        pub(crate) fn name(&mut self, s: &str) -> &mut Self {
            self.count(s.len() as u64);
            self.bytes.extend_from_slice(s.as_bytes());
            self.bytes.resize(self.bytes.len().next_multiple_of(4), 0);
            self
        }

        pub(crate) fn absent(&mut self) -> &mut Self {
            self.word(0).count(0)
        }

        /// A text attribute list of `(name, text)`.
        pub(crate) fn text_attributes(&mut self, attrs: &[(&str, &str)]) -> &mut Self {
            if attrs.is_empty() {
                return self.absent();
            }
            self.word(NC_ATTRIBUTE).count(attrs.len() as u64);
            for (name, text) in attrs {
                self.name(name).word(2).name(text);
            }
            self
        }
    }

    /// A header of `version`: dimensions `time` (record) and `x` (3);
    /// global attribute `title`; variables `a(x)` shorts at 400 and
    /// `t(time)` doubles at 408, two records.
    pub(crate) fn small(version: Version) -> Vec<u8> {
        let mut w = Writer::new(version, 2);
        w.word(NC_DIMENSION).count(2);
        w.name("time").count(0).name("x").count(3);
        w.text_attributes(&[("title", "test")]);
        w.word(NC_VARIABLE).count(2);
        w.name("a").count(1).count(1);
        w.text_attributes(&[("units", "m")]);
        w.word(3).count(8).offset(400);
        w.name("t").count(1).count(0);
        w.absent();
        w.word(6).count(8).offset(408);
        w.bytes.resize(424, 0);
        w.bytes
    }

    fn parse(bytes: Vec<u8>) -> Result<Header> {
        read(&Source::from_bytes("t.nc", bytes, "NetCDF-3 file"))
    }

    #[test]
    fn reads_every_version() {
        for version in [Version::Classic, Version::Offset64, Version::Data64] {
            let h = parse(small(version)).unwrap();
            assert_eq!(h.version, version);
            assert_eq!(h.numrecs, Some(2));
            assert_eq!(h.dimensions[0].len, None);
            assert_eq!(h.dimensions[1].len, Some(3));
            assert_eq!(h.attributes[0].name, "title");
            assert_eq!(h.attributes[0].values, b"test");
            let [a, t] = &h.variables[..] else {
                panic!("two variables")
            };
            assert_eq!(
                (a.nc_type, a.begin, &a.dimensions[..]),
                (NcType::Short, 400, &[1][..])
            );
            assert_eq!(a.attributes[0].values, b"m");
            assert!(!h.is_record(a) && h.is_record(t));
            assert_eq!(t.begin, 408);
        }
    }

    #[test]
    fn streaming_record_counts_are_none() {
        let mut bytes = small(Version::Classic);
        bytes[4..8].copy_from_slice(&[0xff; 4]);
        assert_eq!(parse(bytes).unwrap().numrecs, None);
    }

    #[test]
    fn hostile_counts_fail_before_allocating() {
        let mut w = Writer::new(Version::Data64, 0);
        w.word(NC_DIMENSION).count(u64::MAX / 2);
        let e = parse(w.bytes.clone()).unwrap_err().to_string();
        assert!(e.contains("claims 9223372036854775807 dimensions"), "{e}");
        let mut w = Writer::new(Version::Classic, 0);
        w.absent()
            .word(NC_ATTRIBUTE)
            .count(1)
            .name("big")
            .word(6)
            .count(0x1000_0000);
        let e = parse(w.bytes.clone()).unwrap_err().to_string();
        assert!(e.contains("268435456 values of attribute 'big'"), "{e}");
    }

    #[test]
    fn malformed_headers_name_what_is_wrong() {
        type Spoil = fn(&mut Vec<u8>);
        let cases: [(Spoil, &str); 5] = [
            // In the offset of variable 'a' (bytes 136..140).
            (|b| b.truncate(137), "cut short"),
            (|b| b[8] = 9, "tag 0x900000a"),
            (|b| b[3] = 3, "not CDF then 1, 2 or 5"),
            // The type of variable 'a' (at byte 128) is 12.
            (|b| b[131] = 12, "has type 12"),
            // Variable 'a''s dimension id (at byte 92) is 7.
            (|b| b[95] = 7, "is dimension 7, but the file has 2"),
        ];
        for (spoil, expected) in cases {
            let mut bytes = small(Version::Classic);
            spoil(&mut bytes);
            let e = parse(bytes).unwrap_err().to_string();
            assert!(e.contains(expected), "{expected}: {e}");
        }
    }

    #[test]
    fn the_record_dimension_must_come_first() {
        let mut w = Writer::new(Version::Classic, 1);
        w.word(NC_DIMENSION).count(2);
        w.name("x").count(2).name("time").count(0);
        w.absent();
        w.word(NC_VARIABLE).count(1);
        w.name("v").count(2).count(0).count(1);
        w.absent().word(5).count(8).offset(100);
        let e = parse(w.bytes.clone()).unwrap_err().to_string();
        assert!(
            e.contains("unlimited dimension 'time' at position 1"),
            "{e}"
        );
    }

    /// A fuzz-regression style sweep: every truncation and every single
    /// byte changed to a few values gives a header or an error, never a
    /// panic (the `netcdf3_header` fuzz target explores further).
    #[test]
    fn spoilt_headers_never_panic() {
        for version in [Version::Classic, Version::Offset64, Version::Data64] {
            let good = small(version);
            for cut in 0..good.len() {
                let _ = parse(good[..cut].to_vec());
            }
            for at in 0..good.len() {
                for v in [0u8, 1, 0x7f, 0x80, 0xff] {
                    let mut bytes = good.clone();
                    bytes[at] = v;
                    let _ = parse(bytes);
                }
            }
        }
    }
}
