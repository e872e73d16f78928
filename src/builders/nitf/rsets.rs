//! R-set companions: reduced-resolution copies of a NITF image in files
//! beside it, `image.ntf.r1` ... `image.ntf.r5` (or `image.r1` ... beside
//! an `image.r0`), each half the size of the one before. GDAL's NITF driver
//! finds them the same way (up to the first one missing) and shows them as
//! the image's overviews, in place of its own (JPEG 2000 resolution
//! levels): the first at exactly half the image's size (cropped when the
//! file is larger), the others at their own size. Only files with one
//! image segment get them here (GDAL would put the same companions under
//! every segment).

use std::path::Path;

use crate::base::error::{Error, Result};
use crate::builders::writers::pyramid;

/// Most R-set levels GDAL looks for.
const MAX_RSETS: u8 = 5;

/// The R-set companions of the NITF file at `path` whose chunks `url`
/// references: the path and URL of each, in order.
pub(crate) fn companions(path: &str, url: &str) -> Vec<(String, String)> {
    let r0 = path.to_ascii_lowercase().ends_with(".r0");
    let name = |base: &str, i: u8| match base.strip_suffix(|c| c == '0').filter(|_| r0) {
        Some(stem) => format!("{stem}{i}"),
        None => format!("{base}.r{i}"),
    };
    (1..=MAX_RSETS)
        .map(|i| (name(path, i), name(url, i)))
        .take_while(|(p, _)| Path::new(p).is_file())
        .collect()
}

/// Makes `level`, the full-resolution array of R-set number `k` (from 1)
/// found at `path`, an overview of `base`: same bands and data type; the
/// first R-set is cropped to half the image's size, as GDAL reads it.
pub(crate) fn fit(
    base: &pyramid::Array,
    mut level: pyramid::Array,
    k: usize,
    path: &str,
) -> Result<pyramid::Array> {
    let bad = |what: String| Error::MalformedSource {
        path: path.to_string(),
        reason: format!("not a usable R-set level {k} of its NITF image: {what}"),
    };
    if level.shape[0] != base.shape[0] || level.dtype != base.dtype {
        return Err(bad(format!(
            "{} band(s) of {} where the image has {} of {}",
            level.shape[0], level.dtype, base.shape[0], base.dtype
        )));
    }
    if k == 1 {
        let half = [base.shape[1] / 2, base.shape[2] / 2];
        if level.shape[1] < half[0] || level.shape[2] < half[1] || half.contains(&0) {
            return Err(bad(format!(
                "{} x {} pixels, smaller than half the image ({} x {})",
                level.shape[2], level.shape[1], half[1], half[0]
            )));
        }
        let chunks = [level.chunks[1], level.chunks[2]];
        level.shape = [level.shape[0], half[0], half[1]];
        level.refs.retain(|r| chunk_in(r.index, chunks, half));
    }
    Ok(level)
}

/// Whether the chunk of grid index (band, row, col) (chunk size `chunks`)
/// starts inside an array of `shape` (y, x).
fn chunk_in([_, row, col]: [u64; 3], chunks: [u64; 2], shape: [u64; 2]) -> bool {
    row * chunks[0] < shape[0] && col * chunks[1] < shape[1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn companions_follow_the_name_until_one_is_missing() {
        let dir = std::env::temp_dir().join(format!("chunkref-rsets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let base = dir.join("a.ntf").to_string_lossy().into_owned();
        for suffix in [".r1", ".r2", ".r4"] {
            std::fs::write(format!("{base}{suffix}"), b"").unwrap();
        }
        let found = companions(&base, "{{base}}a.ntf");
        assert_eq!(
            found,
            vec![
                (format!("{base}.r1"), "{{base}}a.ntf.r1".to_string()),
                (format!("{base}.r2"), "{{base}}a.ntf.r2".to_string()),
            ]
        );
        let r0 = dir.join("b.r0").to_string_lossy().into_owned();
        std::fs::write(dir.join("b.r1"), b"").unwrap();
        let found = companions(&r0, "/x/b.r0");
        assert_eq!(
            found,
            vec![(
                dir.join("b.r1").to_string_lossy().into_owned(),
                "/x/b.r1".to_string()
            )]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn chunks_past_the_cropped_size_are_left_out() {
        assert!(chunk_in([0, 1, 1], [64, 64], [100, 150]));
        assert!(!chunk_in([0, 2, 0], [64, 64], [128, 150]));
        assert!(!chunk_in([0, 0, 3], [64, 64], [100, 150]));
    }
}
