"""Pyramids in the osml-imagery-io layout: root ``multiscales.layout``, one
group per level, array ``N/data`` with axes (bands, y, x).  Level 0 is the
dataset, the others its overviews in layout order.

Sources: tiled GTiffs (uncompressed, or DEFLATE tiles as zlib chunks) with
internal overviews, referenced tile by tile from the offsets GDAL reports
(oracle: GDAL's GTiff driver, every level), and zarr-python arrays whose
chunks span all bands (oracle: numpy).

Multi-band GTiffs are planar (INTERLEAVE=BAND, chunks (1, th, tw)): a
pixel-interleaved TIFF tile stores (y, x, band), which a (bands, y, x) chunk
with null filters cannot describe (that needs the tiff-tile format codec).
"""

from __future__ import annotations

import numcodecs
import pytest
from osgeo import gdal

import kerchunk_builders as kb
from raster_checks import assert_matches, native_levels, open_chunkref

#: (zarr format, RefStyle, templates): what osml-imagery-io writes (v2 with
#: portable {{base}} URLs, v3 with file:// URLs and c.N keys), plus plain
#: absolute-path v2.
INDEX_KINDS = {
    "v2-absolute": (2, kb.RefStyle("range", "absolute"), None),
    "v2-portable": (2, kb.RefStyle("range", "template"), {"base": ""}),
    "v3-file-uri": (3, kb.RefStyle("range", "file"), None),
}

GTIFF_CASES = {
    # bands, dtype, endianness, compression
    "1band-u1": (1, "|u1", "LITTLE", "NONE"),
    "3band-planar-i2": (3, "<i2", "LITTLE", "NONE"),
    "3band-planar-u2-bigendian": (3, ">u2", "BIG", "NONE"),
    "2band-planar-f4": (2, "<f4", "LITTLE", "NONE"),
    "1band-f8-bigendian": (1, ">f8", "BIG", "NONE"),
    "3band-planar-u1-deflate": (3, "|u1", "LITTLE", "DEFLATE"),
    "1band-i4-bigendian-deflate": (1, ">i4", "BIG", "DEFLATE"),
}


def write_pyramid_index(tmp_path, entries, kind):
    """Write ``entries`` as an index of the given :data:`INDEX_KINDS` kind,
    beside the source files (so portable URLs are plain names)."""
    zarr_format, style, templates = INDEX_KINDS[kind]
    entries = kb.as_zarr_format(entries, zarr_format, ".")
    return kb.write_index(tmp_path / "image.tile_index.json", entries, style, templates=templates)


def gtiff_params():
    """(case, kind) pairs; zlib (DEFLATE tiles) has no Zarr v3 core codec,
    so DEFLATE cases run as v2 only."""
    return [
        pytest.param(case, kind, id=f"{case}-{kind}")
        for case, (*_, compress) in GTIFF_CASES.items()
        for kind, (zarr_format, *_) in INDEX_KINDS.items()
        if compress == "NONE" or zarr_format == 2
    ]


@pytest.mark.parametrize("case,kind", gtiff_params())
def test_gtiff_pyramid(tmp_path, case, kind):
    bands, dtype, endianness, compress = GTIFF_CASES[case]
    data = kb.sample_pixels(dtype, (bands, 150, 200))
    tif = kb.write_tiled_gtiff(
        tmp_path / "image.tif", data, endianness=endianness, compress=compress
    )
    index = write_pyramid_index(tmp_path, kb.gtiff_multiscale_entries(tif), kind)
    ds = open_chunkref(index)
    assert ds.GetSubDatasets() == []
    # Level 0 has 32x32 tiles; GDAL writes 64x64 overview tiles (its minimum).
    assert_matches(ds, native_levels(gdal.Open(str(tif))), blocks=[(32, 32), (64, 64), (64, 64)])


def zarr_pyramid(tmp_path, assets, compressor):
    """A zarr-python pyramid of 3-band u1 levels in groups ``assets``, each
    level half the size of the previous one, chunks (3, 32, 32) spanning all
    bands; returns the store and the level arrays."""
    base = kb.sample_pixels("|u1", (3, 150, 200))
    levels = [base[:, :: 2**k, :: 2**k].copy() for k in range(len(assets))]
    dims = {"_ARRAY_DIMENSIONS": ["bands", "y", "x"]}
    arrays = {
        f"{asset}/data": kb.ArraySpec(level, (3, 32, 32), compressor=compressor, attrs=dims)
        for asset, level in zip(assets, levels)
    }
    store = kb.write_zarr_python(tmp_path / "pyramid.zarr", arrays, kb.multiscales_attrs(assets))
    return store, levels


#: Level group names, in layout order.  Four levels go down to 19x25 pixels
#: (a single partial chunk); one level is a plain dataset; the names come
#: from the layout's "asset", whatever they are.
ASSETS = {
    "1-level": ["0"],
    "4-levels": ["0", "1", "2", "3"],
    "named-levels": ["full", "half", "quarter"],
}


@pytest.mark.parametrize("kind", INDEX_KINDS)
@pytest.mark.parametrize("assets", ASSETS)
def test_zarr_pyramid_chunks_span_all_bands(tmp_path, assets, kind):
    """Pixel-interleaved style: one chunk holds every band."""
    store, levels = zarr_pyramid(tmp_path, ASSETS[assets], numcodecs.GZip())
    index = write_pyramid_index(tmp_path, kb.zarr_store_entries(store), kind)
    ds = open_chunkref(index)
    assert ds.GetSubDatasets() == []
    assert_matches(ds, levels, blocks=[(32, 32)] * len(levels))
