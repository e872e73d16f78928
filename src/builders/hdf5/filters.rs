//! HDF5 filter pipelines as Zarr v2 codecs.
//!
//! HDF5 runs a dataset's filters in pipeline order when it writes a chunk
//! and in reverse when it reads one; Zarr v2 decodes the `compressor`
//! first and then the `filters` in reverse. So, as kerchunk's
//! `SingleHdf5ToZarr` does, the whole pipeline becomes the `filters` list
//! in pipeline order and the `compressor` stays null.

use serde_json::{json, Value};

use crate::base::error::{Error, Result};

/// HDF5's deflate (gzip) filter.
const DEFLATE: i32 = 1;
/// HDF5's byte shuffle filter.
const SHUFFLE: i32 = 2;
/// HDF5's Fletcher-32 checksum filter.
const FLETCHER32: i32 = 3;
/// HDF5's szip filter.
const SZIP: i32 = 4;
/// HDF5's n-bit filter.
const NBIT: i32 = 5;
/// HDF5's scale-offset filter.
const SCALEOFFSET: i32 = 6;
/// The registered LZF plugin (h5py's).
const LZF: i32 = 32000;
/// The registered Blosc plugin.
const BLOSC: i32 = 32001;
/// The registered LZ4 plugin (HDF5's own framing of LZ4 blocks).
const LZ4: i32 = 32004;
/// The registered bitshuffle plugin.
const BITSHUFFLE: i32 = 32008;
/// The registered Zstandard plugin.
const ZSTD: i32 = 32015;

/// Blosc's compressor codes in the plugin's client data, as numcodecs
/// names them.
const BLOSC_COMPRESSORS: [&str; 6] = ["blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"];

/// One filter of a dataset's pipeline, as `H5Pget_filter2` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// The filter id (1 deflate, 2 shuffle, ... 32015 zstd).
    pub id: i32,
    /// The name recorded with the filter (may be empty).
    pub name: String,
    /// The client data values.
    pub values: Vec<u32>,
}

impl Filter {
    /// A readable name: the recorded one, else the one HDF5 gives the id.
    fn label(&self) -> String {
        let known = match self.id {
            DEFLATE => "deflate",
            SHUFFLE => "shuffle",
            FLETCHER32 => "fletcher32",
            SZIP => "szip",
            NBIT => "nbit",
            SCALEOFFSET => "scaleoffset",
            LZF => "lzf",
            BLOSC => "blosc",
            LZ4 => "lz4",
            ZSTD => "zstd",
            BITSHUFFLE => "bitshuffle",
            _ => "",
        };
        match (self.name.trim(), known) {
            ("", "") => "unnamed".into(),
            ("", k) => k.into(),
            (n, _) => n.into(),
        }
    }

    /// The client data value `i`, if recorded.
    fn value(&self, i: usize) -> Option<u32> {
        self.values.get(i).copied()
    }
}

/// The Zarr v2 `filters` list for `pipeline` over elements of `item_size`
/// bytes; an error naming `dataset`, the filter id and its name when a
/// filter has no codec in chunkref's registry.
pub fn codecs(dataset: &str, pipeline: &[Filter], item_size: usize) -> Result<Vec<Value>> {
    pipeline
        .iter()
        .map(|f| codec(f, item_size).ok_or_else(|| refused(dataset, f)))
        .collect()
}

/// The codec reading what `filter` wrote, when there is one.
fn codec(filter: &Filter, item_size: usize) -> Option<Value> {
    match filter.id {
        DEFLATE => Some(json!({"id": "zlib", "level": filter.value(0).unwrap_or(6)})),
        SHUFFLE => Some(json!({"id": "shuffle", "elementsize": item_size})),
        FLETCHER32 => Some(json!({"id": "fletcher32"})),
        ZSTD => Some(json!({"id": "zstd", "level": filter.value(0).unwrap_or(0)})),
        BLOSC => blosc(filter),
        LZF => Some(json!({"id": "imagecodecs_lzf", "header": false})),
        LZ4 => Some(json!({"id": "hdf5-lz4"})),
        BITSHUFFLE => bitshuffle(filter, item_size),
        SZIP => szip(filter),
        _ => None,
    }
}

/// The szip filter's client data as libhdf5 completes it when a dataset
/// is created: option mask, pixels per block, bits per pixel, pixels per
/// scanline.
fn szip(filter: &Filter) -> Option<Value> {
    Some(json!({
        "id": "hdf5-szip",
        "options_mask": filter.value(0)?,
        "pixels_per_block": filter.value(1)?,
        "bits_per_pixel": filter.value(2)?,
        "pixels_per_scanline": filter.value(3)?,
    }))
}

/// The bitshuffle plugin's client data: major and minor version, element
/// size, block size (elements, 0 for bitshuffle's default), compression
/// (0 none, 2 LZ4, 3 Zstandard) and level. Without compression the chunk
/// is the bit transpose alone, imagecodecs' `imagecodecs_bitshuffle`;
/// compressed chunks carry their sizes in a header (`hdf5-bitshuffle`).
fn bitshuffle(filter: &Filter, item_size: usize) -> Option<Value> {
    let element_size = match filter.value(2) {
        Some(0) | None => item_size as u64,
        Some(n) => u64::from(n),
    };
    match filter.value(4).unwrap_or(0) {
        0 => Some(json!({
            "id": "imagecodecs_bitshuffle",
            "itemsize": element_size,
            "blocksize": filter.value(3).unwrap_or(0),
        })),
        2 => Some(
            json!({"id": "hdf5-bitshuffle", "elementsize": element_size, "compression": "lz4"}),
        ),
        3 => Some(
            json!({"id": "hdf5-bitshuffle", "elementsize": element_size, "compression": "zstd"}),
        ),
        _ => None,
    }
}

/// A chunk whose filter mask skips a filter and that the codecs still read.
///
/// h5py's LZF filter and libhdf5's szip filter (both flagged optional) fail
/// on a chunk they cannot shrink, and HDF5 then stores the chunk as the
/// earlier filters left it, with the filter's bit set in the chunk's filter
/// mask. The `imagecodecs_lzf` codec (without header) and `hdf5-szip` take
/// an input exactly as long as the decoded chunk as stored that way, which
/// holds when every filter before it keeps the size (shuffle) and every one
/// after it is shuffle or Fletcher-32 (whose codec strips its 4 bytes
/// first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skip {
    /// The filter mask of a chunk stored without LZF.
    pub mask: u32,
    /// The stored size of such a chunk.
    pub stored_len: u64,
}

/// The [`Skip`] of `pipeline` for chunks of `chunk_bytes` bytes, when it
/// has one.
pub fn skip(pipeline: &[Filter], chunk_bytes: u64) -> Option<Skip> {
    let at = pipeline.iter().position(|f| f.id == LZF || f.id == SZIP)?;
    let (before, after) = (&pipeline[..at], &pipeline[at + 1..]);
    let keeps_size = before.iter().all(|f| f.id == SHUFFLE)
        && after.iter().all(|f| f.id == SHUFFLE || f.id == FLETCHER32);
    if !keeps_size || at >= 32 {
        return None;
    }
    let checksums = after.iter().filter(|f| f.id == FLETCHER32).count() as u64;
    Some(Skip {
        mask: 1 << at,
        stored_len: chunk_bytes.checked_add(4 * checksums)?,
    })
}

/// The Blosc plugin's client data: revision, Blosc version, type size,
/// buffer size, then (optionally) level, shuffle and compressor code.
/// A Blosc frame describes itself, so only the compressor must be known.
fn blosc(filter: &Filter) -> Option<Value> {
    let cname = BLOSC_COMPRESSORS.get(filter.value(6).unwrap_or(0) as usize)?;
    Some(json!({
        "id": "blosc",
        "cname": cname,
        "clevel": filter.value(4).unwrap_or(5),
        "shuffle": filter.value(5).unwrap_or(1),
        "blocksize": 0,
    }))
}

/// The error for a filter without a codec.
fn refused(dataset: &str, filter: &Filter) -> Error {
    let why = match filter.id {
        SCALEOFFSET | NBIT => "its packing has no Zarr v2 codec",
        SZIP => "its client data lacks the four szip parameters",
        BLOSC => "its compressor code is not one Blosc knows",
        BITSHUFFLE => "its compression code is not one bitshuffle knows (0, 2 or 3)",
        _ => "no Zarr v2 codec in chunkref reads it",
    };
    Error::unsupported(format!(
        "dataset '{dataset}' uses HDF5 filter {} ({}): {why}",
        filter.id,
        filter.label()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(id: i32, values: &[u32]) -> Filter {
        Filter {
            id,
            name: String::new(),
            values: values.to_vec(),
        }
    }

    #[test]
    fn deflate_shuffle_and_fletcher32_keep_pipeline_order() {
        let pipeline = [filter(2, &[4]), filter(1, &[9]), filter(3, &[])];
        let got = codecs("/t", &pipeline, 4).unwrap();
        assert_eq!(
            got,
            vec![
                json!({"id": "shuffle", "elementsize": 4}),
                json!({"id": "zlib", "level": 9}),
                json!({"id": "fletcher32"}),
            ]
        );
        assert!(codecs("/t", &[], 2).unwrap().is_empty());
    }

    #[test]
    fn shuffle_takes_the_element_size_of_the_type() {
        let got = codecs("/t", &[filter(2, &[])], 8).unwrap();
        assert_eq!(got, vec![json!({"id": "shuffle", "elementsize": 8})]);
    }

    #[test]
    fn zstd_and_blosc_map_to_their_codecs() {
        assert_eq!(
            codecs("/t", &[filter(32015, &[3])], 4).unwrap(),
            vec![json!({"id": "zstd", "level": 3})]
        );
        let got = codecs("/t", &[filter(32001, &[2, 2, 4, 4096, 7, 2, 5])], 4).unwrap();
        assert_eq!(
            got,
            vec![
                json!({"id": "blosc", "cname": "zstd", "clevel": 7, "shuffle": 2, "blocksize": 0})
            ]
        );
    }

    #[test]
    fn lzf_maps_to_imagecodecs_lzf_without_header() {
        let pipeline = [
            filter(2, &[4]),
            filter(32000, &[4, 261, 4096]),
            filter(3, &[]),
        ];
        let got = codecs("/t", &pipeline, 4).unwrap();
        assert_eq!(got[1], json!({"id": "imagecodecs_lzf", "header": false}));
        assert_eq!(
            skip(&pipeline, 4096),
            Some(Skip {
                mask: 0b10,
                stored_len: 4100
            })
        );
        assert_eq!(
            skip(&[filter(32000, &[])], 64),
            Some(Skip {
                mask: 1,
                stored_len: 64
            })
        );
        // No LZF, or filters around it that change the size: no skip.
        assert_eq!(skip(&pipeline[..1], 4096), None);
        assert_eq!(skip(&[filter(1, &[6]), filter(32000, &[])], 64), None);
        assert_eq!(skip(&[filter(32000, &[]), filter(1, &[6])], 64), None);
        assert_eq!(skip(&[filter(3, &[]), filter(32000, &[])], 64), None);
    }

    #[test]
    fn bitshuffle_maps_by_its_compression() {
        let got = codecs("/t", &[filter(32008, &[0, 3, 4, 0, 2, 0])], 4).unwrap();
        assert_eq!(
            got,
            vec![json!({"id": "hdf5-bitshuffle", "elementsize": 4, "compression": "lz4"})]
        );
        let got = codecs("/t", &[filter(32008, &[0, 3, 8, 256, 3, 5])], 8).unwrap();
        assert_eq!(
            got,
            vec![json!({"id": "hdf5-bitshuffle", "elementsize": 8, "compression": "zstd"})]
        );
        let got = codecs("/t", &[filter(32008, &[0, 3, 2, 64])], 2).unwrap();
        assert_eq!(
            got,
            vec![json!({"id": "imagecodecs_bitshuffle", "itemsize": 2, "blocksize": 64})]
        );
        let got = codecs("/t", &[filter(32008, &[])], 2).unwrap();
        assert_eq!(
            got,
            vec![json!({"id": "imagecodecs_bitshuffle", "itemsize": 2, "blocksize": 0})]
        );
        let e = codecs("/t", &[filter(32008, &[0, 3, 2, 0, 1])], 2).unwrap_err();
        assert!(
            e.to_string()
                .contains("filter 32008 (bitshuffle): its compression code"),
            "{e}"
        );
    }

    #[test]
    fn unsupported_filters_name_dataset_id_and_filter() {
        for (id, name) in [(6, "scaleoffset"), (5, "nbit"), (32013, "unnamed")] {
            let pipeline = [filter(2, &[2]), filter(id, &[])];
            let e = codecs("/grp/v", &pipeline, 2).unwrap_err().to_string();
            assert!(
                e.contains("'/grp/v'") && e.contains(&format!("filter {id} ({name})")),
                "{e}"
            );
        }
        let named = Filter {
            id: 32013,
            name: "H5Z-ZFP-1.0.1 (ZFP-0.5.5) github.com/LLNL/H5Z-ZFP".into(),
            values: vec![],
        };
        let e = codecs("/v", &[named], 4).unwrap_err().to_string();
        assert!(e.contains("filter 32013 (H5Z-ZFP-1.0.1"), "{e}");
        assert_eq!(
            codecs("/v", &[filter(32004, &[1 << 30])], 4).unwrap(),
            vec![json!({"id": "hdf5-lz4"})]
        );
        let bad_blosc = codecs("/v", &[filter(32001, &[2, 2, 4, 0, 5, 1, 9])], 4);
        assert!(bad_blosc
            .unwrap_err()
            .to_string()
            .contains("compressor code"));
    }
}
