//! `chunkref index` for NetCDF-3 files (classic, 64-bit offset and CDF-5):
//! the Kerchunk JSON v1 store the NetCDF4 / HDF5 builder ([`crate::builders::hdf5`])
//! writes, so that the driver reads both alike (attributes, CF
//! georeferencing, orientation, subdatasets, fill values): a `.zgroup` and
//! `.zattrs` at the root, a `.zarray` and `.zattrs` per numeric variable,
//! chunk references `[url, offset, length]`.
//!
//! NetCDF-3 values are big-endian and uncompressed, at offsets the header
//! gives ([`header`]). A variable without the record (unlimited) dimension
//! is one contiguous extent, referenced whole or in blocks of whole rows;
//! a record variable has one slice per record, record `r` at
//! `begin + r * recsize` (the records of all record variables interleave),
//! referenced one chunk per record (or per block of rows of a large
//! record), as kerchunk's `NetCDF3ToZarr` does.

use serde_json::{json, Map, Value};

use crate::base::error::{Error, Result};
use crate::builders::hdf5::dtype::{Element, Kind};
use crate::builders::hdf5::storage::{key, row_blocks, CONTIGUOUS_BLOCK_BYTES};
use crate::builders::hdf5::{netcdf_nodata, valid_range};
use crate::conventions::attributes::VARIABLE_ORDER_ATTRIBUTE;
use crate::conventions::attributes::{
    SourceDriver, GDAL_DRIVER_ATTRIBUTE, NETCDF_DEFAULT_FILL_ATTRIBUTE,
};
use crate::formats::netcdf3::{Attribute, Header, NcType, Variable};
use crate::io::source::Source;

/// How errors name the format.
const FORMAT: &str = "NetCDF-3 file";

/// Most chunk references one file may make (a 1-D record variable makes
/// one per record).
const MAX_REFERENCES: u64 = 10_000_000;

/// Most dimensions of an array chunkref reads.
const MAX_RANK: usize = 32;

/// Whether a file starting with `head` is NetCDF-3 (`CDF` then 1, 2 or 5).
pub fn is_netcdf3(head: &[u8]) -> bool {
    crate::formats::netcdf3::Version::of(head).is_some()
}

/// The Kerchunk JSON v1 document indexing the NetCDF-3 file at `path` (a
/// local path or a URL [`Source`] reads), its chunks referenced by `url`.
/// Text (`NC_CHAR`) variables are indexed as `|S1` arrays. The root's
/// attributes record the order GDAL's netCDF driver lists the variables
/// of 2 or more dimensions in (the file's).
pub fn index_file(path: &str, url: &str) -> Result<Value> {
    index_source(&Source::open(path, FORMAT)?, url)
}

/// [`index_file`] of an opened source.
pub fn index_source(source: &Source, url: &str) -> Result<Value> {
    let header = crate::formats::netcdf3::read(source)?;
    let records = Records::of(&header, source)?;
    let mut refs = Map::new();
    refs.insert(
        ".zgroup".into(),
        json!({"zarr_format": 2}).to_string().into(),
    );
    let mut globals = attributes(&header.attributes, |_| true);
    let mut listed = Vec::new();
    let mut total = 0u64;
    for variable in &header.variables {
        if refs.contains_key(&format!("{}/.zarray", variable.name)) {
            return Err(source.malformed(format!("two variables are named '{}'", variable.name)));
        }
        let Some(layout) = Layout::of(&header, variable, &records, source)? else {
            continue;
        };
        total = total.saturating_add(layout.count());
        if total > MAX_REFERENCES {
            return Err(Error::Limits {
                what: format!(
                    "{}: variable '{}' takes the file past {MAX_REFERENCES} chunk references",
                    source.path(),
                    variable.name
                ),
            });
        }
        if layout.shape.len() >= 2 {
            listed.push(variable.name.as_str());
        }
        layout.insert(&header, variable, url, &mut refs);
    }
    globals.insert(
        GDAL_DRIVER_ATTRIBUTE.into(),
        SourceDriver::NetCdf.name().into(),
    );
    globals.insert(VARIABLE_ORDER_ATTRIBUTE.into(), json!(listed));
    refs.insert(".zattrs".into(), Value::Object(globals).to_string().into());
    Ok(json!({"version": 1, "refs": refs}))
}

/// Where the records are.
struct Records {
    /// How many there are.
    count: u64,
    /// Bytes from one record to the next.
    size: u64,
}

impl Records {
    /// The record count and size of `header`'s file: the size is the sum
    /// of the record variables' slices, each padded to 4 bytes, but for a
    /// lone record variable, whose slices are not padded (as netCDF
    /// computes it); a streamed file's count is what its size holds.
    fn of(header: &Header, source: &Source) -> Result<Records> {
        let mut size = 0u64;
        let mut first: Option<(u64, u64)> = None;
        for variable in header.variables.iter().filter(|v| header.is_record(v)) {
            let slice = slice_bytes(header, variable, source)?;
            let padded = slice.checked_add(3).map(|s| s & !3);
            size = padded
                .and_then(|p| size.checked_add(p))
                .ok_or_else(|| source.malformed("the record size overflows"))?;
            first.get_or_insert((slice, variable.begin));
        }
        if let Some((slice, _)) = first.filter(|&(slice, _)| size == (slice + 3) & !3) {
            size = slice;
        }
        let count = match (header.numrecs, first) {
            (Some(n), _) => n,
            (None, Some((_, begin))) if size > 0 => source.len().saturating_sub(begin) / size,
            (None, _) => 0,
        };
        Ok(Records { count, size })
    }
}

/// The bytes of one record of record variable `variable` (of all of a
/// fixed variable), checked for overflow.
fn slice_bytes(header: &Header, variable: &Variable, source: &Source) -> Result<u64> {
    variable
        .dimensions
        .iter()
        .filter_map(|&d| header.dimensions[d].len)
        .try_fold(variable.nc_type.size(), u64::checked_mul)
        .ok_or_else(|| {
            source.malformed(format!(
                "the size of variable '{}' overflows",
                variable.name
            ))
        })
}

/// How one variable is chunked and where its chunks are.
struct Layout {
    /// The array's shape (the record count first, for a record variable).
    shape: Vec<u64>,
    /// Its chunk shape.
    chunks: Vec<u64>,
    /// The element type; `None` for text (`NC_CHAR`), indexed as Zarr's
    /// `|S1` (as kerchunk does): the driver serves its bytes (GDAL's netCDF
    /// driver lists a character variable of 2 or more dimensions as a Byte
    /// raster), and GDAL writes grid mappings as text variables.
    element: Option<Element>,
    /// Offset of the first chunk.
    begin: u64,
    /// Records (1 for a fixed variable).
    records: u64,
    /// Bytes from one record to the next.
    record_size: u64,
    /// Chunks per record (per variable, for a fixed variable).
    blocks: u64,
    /// Bytes per chunk.
    block_bytes: u64,
    /// Whether the first axis is the record axis.
    record: bool,
}

impl Layout {
    /// The layout of `variable`; `None` (with a warning) when it has more
    /// dimensions than chunkref reads. Fails when its bytes lie outside
    /// the data part of the file.
    fn of(
        header: &Header,
        variable: &Variable,
        records: &Records,
        source: &Source,
    ) -> Result<Option<Layout>> {
        let leave_out = |why: &str| {
            eprintln!(
                "chunkref: warning: {}: variable '{}' is left out: {why}",
                source.path(),
                variable.name
            );
            Ok(None)
        };
        if variable.dimensions.len() > MAX_RANK {
            return leave_out(&format!(
                "it has {} dimensions (chunkref reads at most {MAX_RANK})",
                variable.dimensions.len()
            ));
        }
        let record = header.is_record(variable);
        let shape: Vec<u64> = variable
            .dimensions
            .iter()
            .map(|&d| header.dimensions[d].len.unwrap_or(records.count))
            .collect();
        let slice = slice_bytes(header, variable, source)?;
        let item = variable.nc_type.size();
        let chunks: Vec<u64> = if record {
            let inner = row_blocks(&shape[1..], item, CONTIGUOUS_BLOCK_BYTES);
            std::iter::once(1).chain(inner).collect()
        } else {
            row_blocks(&shape, item, CONTIGUOUS_BLOCK_BYTES)
        };
        let (rows, block_rows) = match (record, chunks.len()) {
            (true, 1) | (false, 0) => (1, 1),
            (true, _) => (shape[1], chunks[1]),
            (false, _) => (shape[0], chunks[0]),
        };
        let layout = Layout {
            blocks: if slice == 0 { 0 } else { rows / block_rows },
            block_bytes: chunks.iter().skip(record as usize).product::<u64>() * item,
            shape,
            chunks,
            element: element(variable.nc_type),
            begin: variable.begin,
            records: if record { records.count } else { 1 },
            record_size: records.size,
            record,
        };
        layout.check_extent(header, variable, slice, source)?;
        Ok(Some(layout))
    }

    /// Fails unless every byte of the variable lies after the header and
    /// within the file.
    fn check_extent(
        &self,
        header: &Header,
        variable: &Variable,
        slice: u64,
        source: &Source,
    ) -> Result<()> {
        if self.blocks == 0 || self.records == 0 {
            return Ok(());
        }
        let what = || format!("variable '{}'", variable.name);
        if self.begin < header.len {
            return Err(source.malformed(format!(
                "{} begins at byte {}, inside the header ({} bytes)",
                what(),
                self.begin,
                header.len
            )));
        }
        let end = (self.records - 1)
            .checked_mul(self.record_size)
            .and_then(|o| o.checked_add(self.begin))
            .and_then(|o| o.checked_add(slice))
            .filter(|&end| end <= source.len());
        if end.is_none() {
            let extent = match self.record {
                true => format!(
                    "{} records of {slice} bytes, {} bytes apart",
                    self.records, self.record_size
                ),
                false => format!("{slice} bytes"),
            };
            return Err(source.malformed(format!(
                "{} ({extent} from byte {}) lies past the end of the file ({} bytes): \
                 the file is cut short, or its header is corrupt",
                what(),
                self.begin,
                source.len()
            )));
        }
        Ok(())
    }

    /// How many chunk references it makes.
    fn count(&self) -> u64 {
        self.records.saturating_mul(self.blocks)
    }

    /// Its `.zarray`, `.zattrs` and chunk references, under the variable's name.
    fn insert(
        &self,
        header: &Header,
        variable: &Variable,
        url: &str,
        refs: &mut Map<String, Value>,
    ) {
        let fill_attribute = variable
            .attributes
            .iter()
            .find(|a| a.name == "_FillValue" && a.nc_type != NcType::Char && a.count() > 0);
        let fill = fill_attribute.map_or(Value::Null, |a| self.fill_value(a));
        let mut zattrs = attributes(&variable.attributes, |a| a.name != "_FillValue");
        let default = default_fill(variable.nc_type).filter(|_| fill_attribute.is_none());
        // GDAL's netCDF driver's valid range (and NaN as nodata), rasters only.
        let filters = self
            .element
            .filter(|_| self.shape.len() >= 2)
            .and_then(|e| {
                let declared = Some(&fill).filter(|v| !v.is_null());
                let nodata = netcdf_nodata(&zattrs, declared, default.as_ref());
                valid_range(&zattrs, nodata.as_ref(), &e)
            });
        let zarray = json!({
            "shape": self.shape,
            "chunks": self.chunks,
            "dtype": self.element.map_or("|S1".into(), |e| e.zarr_dtype()),
            "fill_value": fill,
            "order": "C",
            "filters": filters.map(|f| json!([f])),
            "compressor": null,
            "dimension_separator": ".",
            "zarr_format": 2,
        });
        let names: Vec<&str> = variable
            .dimensions
            .iter()
            .map(|&d| header.dimensions[d].name.as_str())
            .collect();
        zattrs.insert("_ARRAY_DIMENSIONS".into(), json!(names));
        if self.shape.len() >= 2 {
            // Rasters only, as for netCDF-4: served by GDAL's netCDF
            // driver's rules (rows bottom-up unless a y coordinate places
            // them); coordinates carry no nodata.
            zattrs.insert(
                GDAL_DRIVER_ATTRIBUTE.into(),
                SourceDriver::NetCdf.name().into(),
            );
            if let Some(default) = default {
                zattrs.insert(NETCDF_DEFAULT_FILL_ATTRIBUTE.into(), default);
            }
        }
        let prefix = &variable.name;
        refs.insert(format!("{prefix}/.zarray"), zarray.to_string().into());
        refs.insert(
            format!("{prefix}/.zattrs"),
            Value::Object(zattrs).to_string().into(),
        );
        let rank = self.shape.len().max(1);
        for r in 0..self.records {
            for b in 0..self.blocks {
                let mut position = vec![0; rank];
                match self.record {
                    true if rank > 1 => (position[0], position[1]) = (r, b),
                    true => position[0] = r,
                    false => position[0] = b,
                }
                // Within the file: see check_extent.
                let offset = self.begin + r * self.record_size + b * self.block_bytes;
                refs.insert(
                    format!("{prefix}/{}", key(&position)),
                    json!([url, offset, self.block_bytes]),
                );
            }
        }
    }

    /// The Zarr fill value of `_FillValue` attribute `a` (its first value,
    /// converted to the variable's type when the file stores another).
    fn fill_value(&self, a: &Attribute) -> Value {
        let own = element(a.nc_type).map(|e| e.fill_value(&a.values));
        match (own, self.element.map(|e| e.kind)) {
            (Some(v), Some(Kind::Float)) => v,
            (Some(v), Some(_)) if v.is_f64() => v.as_f64().map_or(Value::Null, |f| json!(f as i64)),
            (Some(v), Some(_)) => v,
            _ => Value::Null,
        }
    }
}

/// The element of numeric type `t`; `None` for text.
fn element(t: NcType) -> Option<Element> {
    use NcType::*;
    let kind = match t {
        Char => return None,
        Byte | Short | Int | Int64 => Kind::Signed,
        UByte | UShort | UInt | UInt64 => Kind::Unsigned,
        Float | Double => Kind::Float,
    };
    Some(Element {
        kind,
        size: t.size() as usize,
        big_endian: true,
    })
}

/// The fill value netCDF gives a variable of type `t` without
/// `_FillValue` (`NC_FILL_*`), for [`NETCDF_DEFAULT_FILL_ATTRIBUTE`];
/// `None` for 1-byte types, whose default GDAL does not take as nodata.
fn default_fill(t: NcType) -> Option<Value> {
    use NcType::*;
    /// `NC_FILL_FLOAT` and `NC_FILL_DOUBLE`.
    const FILL_REAL: f64 = 9.969_209_968_386_869e36;
    let bytes: Vec<u8> = match t {
        Byte | Char | UByte => return None,
        Short => (-32767i16).to_be_bytes().to_vec(),
        UShort => u16::MAX.to_be_bytes().to_vec(),
        Int => (-2_147_483_647i32).to_be_bytes().to_vec(),
        UInt => u32::MAX.to_be_bytes().to_vec(),
        Int64 => (-9_223_372_036_854_775_806i64).to_be_bytes().to_vec(),
        UInt64 => (u64::MAX - 1).to_be_bytes().to_vec(),
        Float => (FILL_REAL as f32).to_be_bytes().to_vec(),
        Double => FILL_REAL.to_be_bytes().to_vec(),
    };
    element(t).map(|e| e.fill_value(&bytes))
}

/// Attributes `keep` keeps, as JSON the way the NetCDF4 / HDF5 builder
/// writes them: text as a string, one number as a number, several as an
/// array, no value as `""`.
fn attributes(list: &[Attribute], keep: impl Fn(&Attribute) -> bool) -> Map<String, Value> {
    list.iter()
        .filter(|a| keep(a))
        .map(|a| (a.name.clone(), attribute_value(a)))
        .collect()
}

/// One attribute's value as JSON (see [`attributes`]).
fn attribute_value(a: &Attribute) -> Value {
    let Some(e) = element(a.nc_type) else {
        let end = a.values.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
        return String::from_utf8_lossy(&a.values[..end])
            .into_owned()
            .into();
    };
    let mut values: Vec<Value> = a
        .values
        .chunks_exact(e.size)
        .map(|v| e.fill_value(v))
        .collect();
    match values.len() {
        0 => json!(""),
        1 => values.remove(0),
        _ => Value::Array(values),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::netcdf3::tests::{small, Writer};
    use crate::formats::netcdf3::Version;

    fn index(bytes: Vec<u8>) -> Result<Value> {
        index_source(&Source::from_bytes("t.nc", bytes, FORMAT), "t.nc")
    }

    #[test]
    fn fixed_and_record_variables_are_referenced() {
        for version in [Version::Classic, Version::Offset64, Version::Data64] {
            let doc = index(small(version)).unwrap();
            let refs = &doc["refs"];
            let zarray: Value = serde_json::from_str(refs["a/.zarray"].as_str().unwrap()).unwrap();
            assert_eq!(zarray["dtype"], ">i2");
            assert_eq!(zarray["shape"], json!([3]));
            assert_eq!(refs["a/0"], json!(["t.nc", 400, 6]));
            let zattrs: Value = serde_json::from_str(refs["a/.zattrs"].as_str().unwrap()).unwrap();
            assert_eq!(zattrs, json!({"units": "m", "_ARRAY_DIMENSIONS": ["x"]}));
            // A lone record variable: records are not padded.
            assert_eq!(refs["t/0"], json!(["t.nc", 408, 8]));
            assert_eq!(refs["t/1"], json!(["t.nc", 416, 8]));
            let globals: Value = serde_json::from_str(refs[".zattrs"].as_str().unwrap()).unwrap();
            assert_eq!(
                globals,
                json!({"title": "test", GDAL_DRIVER_ATTRIBUTE: "netCDF", VARIABLE_ORDER_ATTRIBUTE: []})
            );
        }
    }

    /// Two record variables of shorts `p(time, x)` and `q(time)`: each
    /// record slice is padded to 4 bytes.
    fn two_record_variables(fill: Option<i16>, numrecs: u64, len: usize) -> Vec<u8> {
        let mut w = Writer::new(Version::Classic, numrecs);
        w.word(0x0A)
            .count(2)
            .name("time")
            .count(0)
            .name("x")
            .count(3);
        w.absent();
        w.word(0x0B).count(2);
        w.name("p").count(2).count(0).count(1);
        match fill {
            Some(f) => {
                w.word(0x0C).count(1).name("_FillValue").word(3).count(1);
                w.bytes.extend_from_slice(&f.to_be_bytes());
                w.bytes.extend_from_slice(&[0, 0]);
            }
            None => {
                w.absent();
            }
        }
        w.word(3).count(8).offset(160);
        w.name("q")
            .count(1)
            .count(0)
            .absent()
            .word(3)
            .count(4)
            .offset(168);
        w.bytes.resize(len, 0);
        w.bytes
    }

    #[test]
    fn record_slices_interleave_with_padding() {
        let doc = index(two_record_variables(Some(-9), 2, 160 + 2 * 12)).unwrap();
        let refs = &doc["refs"];
        assert_eq!(refs["p/0.0"], json!(["t.nc", 160, 6]));
        assert_eq!(refs["p/1.0"], json!(["t.nc", 172, 6]));
        assert_eq!(refs["q/1"], json!(["t.nc", 180, 2]));
        let zarray: Value = serde_json::from_str(refs["p/.zarray"].as_str().unwrap()).unwrap();
        assert_eq!(zarray["fill_value"], json!(-9));
        assert_eq!(zarray["chunks"], json!([1, 3]));
        let zattrs = refs["p/.zattrs"].as_str().unwrap();
        assert!(!zattrs.contains("_FillValue"), "{zattrs}");
    }

    #[test]
    fn rasters_without_fill_value_carry_netcdf_defaults() {
        let doc = index(two_record_variables(None, 2, 184)).unwrap();
        let zattrs: Value =
            serde_json::from_str(doc["refs"]["p/.zattrs"].as_str().unwrap()).unwrap();
        assert_eq!(zattrs[NETCDF_DEFAULT_FILL_ATTRIBUTE], json!(-32767));
        assert_eq!(
            default_fill(NcType::Float),
            Some(json!(9.969_209_968_386_869e36))
        );
        assert_eq!(default_fill(NcType::Byte), None);
    }

    #[test]
    fn streamed_files_count_records_from_their_size() {
        let mut bytes = two_record_variables(None, 0, 160 + 3 * 12 + 5);
        bytes[4..8].copy_from_slice(&[0xff; 4]);
        let doc = index(bytes).unwrap();
        assert_eq!(doc["refs"]["q/2"], json!(["t.nc", 192, 2]));
        assert!(doc["refs"].get("q/3").is_none());
    }

    #[test]
    fn data_past_the_end_or_in_the_header_is_refused() {
        let e = index(two_record_variables(None, 3, 184))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("variable 'p' (3 records of 6 bytes, 12 bytes apart from byte 160) lies past the end"),
            "{e}"
        );
        let mut bytes = small(Version::Classic);
        // Variable 'a' begins at byte 8 (its offset: bytes 136..140).
        bytes[136..140].copy_from_slice(&8u32.to_be_bytes());
        let e = index(bytes).unwrap_err().to_string();
        assert!(e.contains("begins at byte 8, inside the header"), "{e}");
    }
}
