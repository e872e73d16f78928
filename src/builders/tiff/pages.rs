//! TIFF files of several pages: full-resolution IFDs that are neither
//! overviews nor masks, which GDAL's GTiff driver lists as subdatasets
//! `GTIFF_DIR:N:file` (N the IFD's number from 1) while opening the first.

use serde_json::json;

use crate::builders::writers::built::Built;
use crate::builders::writers::pyramid::Pyramid;
use crate::conventions::attributes::{DEFAULT_RASTER, SUBDATASET_DESCRIPTION};

/// The index of a file of `ifds` IFDs whose first page is `first` (IFD 0,
/// with its overviews and masks) and whose later pages are `others`, with
/// their IFD numbers, in IFD order: groups `page_N`, N numbered from 1 as
/// GDAL numbers `GTIFF_DIR:N`, zero-padded so that the names sort in IFD
/// order, the order the driver lists them in; the first opens by default.
/// Each is described as GDAL describes it: `Page N (WP x HL x BB)`.
pub(super) fn built(
    first: Pyramid,
    others: Vec<(usize, Pyramid)>,
    ifds: usize,
    url: &str,
) -> Built {
    let width = ifds.to_string().len();
    let name = |n: usize| format!("page_{:0width$}", n + 1);
    let mut built = Built::default();
    for (n, mut page) in std::iter::once((0, first)).chain(others) {
        if let Some(level) = page.levels.first() {
            let [bands, height, width] = level.data.shape;
            page.attrs.insert(
                SUBDATASET_DESCRIPTION.into(),
                json!(format!("Page {} ({width}P x {height}L x {bands}B)", n + 1)),
            );
        }
        page.write(&mut built, &name(n));
    }
    let meta = &mut built.metadata;
    meta.insert(".zgroup".into(), json!({"zarr_format": 2}));
    meta.insert(
        ".zattrs".into(),
        json!({"source": url, DEFAULT_RASTER: name(0)}),
    );
    built
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> Pyramid {
        Pyramid {
            source: json!("f.tif"),
            attrs: Default::default(),
            levels: Vec::new(),
        }
    }

    #[test]
    fn pages_are_named_by_ifd_in_order_and_the_first_opens() {
        let others = (2..12).map(|n| (n, page())).collect();
        let built = built(page(), others, 12, "f.tif");
        let groups: Vec<&str> = built
            .metadata
            .keys()
            .filter_map(|k| k.strip_suffix("/.zgroup"))
            .collect();
        let mut want = vec!["page_01".to_string()];
        want.extend((3..13).map(|n| format!("page_{n:02}")));
        assert_eq!(groups, want);
        assert_eq!(built.metadata[".zattrs"][DEFAULT_RASTER], json!("page_01"));
    }
}
