"""Window reads: the batched IRasterIO path against GDAL's own read.

A window of more than one block at full resolution is served by the Rust
window reader (every chunk fetched together, nearby ranges coalesced,
decoded in parallel, written straight into GDAL's buffer).  Whatever the
caller asks for (band subsets and orders, pixel- or band-interleaved
buffers, another buffer data type, resampled sizes that fall back to the
block path), ChunkRef must hand back exactly the bytes GDAL's GTiff driver
returns for the same ``ReadRaster`` call on the source, and exactly what
the per-block path (``CHUNKREF_WINDOW_READS=NO``) returns.
"""

from __future__ import annotations

import pytest
from osgeo import gdal

from raster_checks import config_options, failure_text, odd_windows, open_chunkref
from test_tiff_index import TIFF_CASES, index_tiff, write_tiff

#: Sources covering pixel- and band-interleaved chunks and several types.
CASES = [
    "cog-deflate-pred2-3band",
    "cog-i2-lzw-pred2-3band",
    "gtiff-planar-u2-deflate-pred2",
    "cog-f8-deflate-pred3-2band",
]


@pytest.fixture(scope="module", params=CASES)
def pair(request, chunkref_bin, tmp_path_factory):
    """(GDAL dataset of the source, ChunkRef dataset of its index)."""
    tmp = tmp_path_factory.mktemp("window")
    tif = write_tiff(tmp / "src.tif", TIFF_CASES[request.param])
    index_tiff(chunkref_bin, tif, tmp / "src.json")
    return gdal.Open(str(tif)), open_chunkref(tmp / "src.json")


def read_forms(ds: gdal.Dataset, window: tuple[int, int, int, int]) -> dict[str, bytes]:
    """The same window read the ways GDAL clients ask for it."""
    x, y, w, h = window
    n = ds.RasterCount
    size = gdal.GetDataTypeSize(ds.GetRasterBand(1).DataType) // 8
    bands = list(range(n, 0, -1)) + [1]  # reversed, with a repeat
    return {
        "dataset native": ds.ReadRaster(x, y, w, h),
        "dataset float64": ds.ReadRaster(x, y, w, h, buf_type=gdal.GDT_Float64),
        "dataset int16": ds.ReadRaster(x, y, w, h, buf_type=gdal.GDT_Int16),
        "pixel-interleaved band subset": ds.ReadRaster(
            x, y, w, h, band_list=bands, buf_pixel_space=size * len(bands),
            buf_line_space=size * len(bands) * w, buf_band_space=size,
        ),
        "band 2 native": ds.GetRasterBand(min(2, n)).ReadRaster(x, y, w, h),
        "band 1 float32": ds.GetRasterBand(1).ReadRaster(x, y, w, h, buf_type=gdal.GDT_Float32),
        "band 1 halved": ds.GetRasterBand(1).ReadRaster(
            x, y, w, h, buf_xsize=max(1, w // 2), buf_ysize=max(1, h // 2)
        ),
        "dataset doubled": ds.ReadRaster(x, y, w, h, buf_xsize=2 * w, buf_ysize=2 * h),
    }


def test_window_reads_match_gdal_in_every_buffer_form(pair):
    native, chunkref = pair
    for window in odd_windows(native.RasterXSize, native.RasterYSize):
        expected = read_forms(native, window)
        got = read_forms(chunkref, window)
        with config_options({"CHUNKREF_WINDOW_READS": "NO"}):
            per_block = read_forms(chunkref, window)
        for form, data in expected.items():
            assert got[form] == data, f"{window} {form}: batched read differs from GDAL"
            assert per_block[form] == data, f"{window} {form}: block read differs from GDAL"


def resampled_forms(ds: gdal.Dataset) -> dict[str, bytes]:
    """Nearest-neighbour resampled reads no overview serves (factors under
    2, enlargements, fractional windows, a large factor over a fractional
    window), the ways clients ask for them."""
    width, height, n = ds.RasterXSize, ds.RasterYSize, ds.RasterCount
    size = gdal.GetDataTypeSize(ds.GetRasterBand(1).DataType) // 8
    bands = list(range(n, 0, -1))
    out = {}
    for x, y, w, h, bw, bh in [
        (0, 0, width, height, width * 2 // 3, height * 3 // 4),
        (5, 3, width - 9, height - 5, (width - 9) * 5 // 7, (height - 5) * 4 // 5),
        (1.5, 2.25, width - 3.5, height - 4.75, width * 3 // 4, height * 2 // 3),
        (7, 11, 130, 90, 221, 153),
        (0.5, 0.75, width - 1, height - 1.5, 17, 13),
    ]:
        key = f"({x}, {y}, {w}, {h}) to {bw}x{bh}"
        out[f"dataset {key}"] = ds.ReadRaster(x, y, w, h, bw, bh)
        out[f"band 1 {key}"] = ds.GetRasterBand(1).ReadRaster(x, y, w, h, bw, bh)
        out[f"pixel-interleaved reversed bands {key}"] = ds.ReadRaster(
            x, y, w, h, bw, bh, band_list=bands, buf_pixel_space=size * n,
            buf_line_space=size * n * bw, buf_band_space=size,
        )
        out[f"dataset float64 {key}"] = ds.ReadRaster(x, y, w, h, bw, bh,
                                                      buf_type=gdal.GDT_Float64)
    return out


def test_resampled_reads_pick_the_pixels_gdal_picks(pair):
    """The sampled reader (rows of chunks read whole, GDAL's nearest pixels
    picked from them) returns GDAL's bytes, fractional windows included."""
    native, chunkref = pair
    expected = resampled_forms(native)
    got = resampled_forms(chunkref)
    with config_options({"CHUNKREF_WINDOW_READS": "NO"}):
        per_block = resampled_forms(chunkref)
    for form, data in expected.items():
        assert got[form] == data, f"{form}: sampled read differs from GDAL"
        assert per_block[form] == data, f"{form}: block read differs from GDAL"


def test_overview_windows_match_gdal(pair):
    native, chunkref = pair
    for level in range(native.GetRasterBand(1).GetOverviewCount()):
        nb = native.GetRasterBand(1).GetOverview(level)
        cb = chunkref.GetRasterBand(1).GetOverview(level)
        for x, y, w, h in odd_windows(nb.XSize, nb.YSize):
            assert cb.ReadRaster(x, y, w, h) == nb.ReadRaster(x, y, w, h), (level, (x, y, w, h))


def test_a_corrupt_chunk_in_a_window_names_the_chunk(chunkref_bin, tmp_path):
    tif = write_tiff(tmp_path / "src.tif", TIFF_CASES["cog-deflate-pred2-3band"])
    doc = index_tiff(chunkref_bin, tif, tmp_path / "src.json")
    raw = bytearray(tif.read_bytes())
    key = "0/data/0.1.1"
    offset, length = doc["refs"][key][1:3]
    raw[offset : offset + length] = b"\xff" * length
    (tmp_path / "src.tif").write_bytes(bytes(raw))
    ds = open_chunkref(tmp_path / "src.json")
    message = failure_text(ds.ReadRaster, 0, 0, 200, 150)
    assert key in message and "src.tif" in message, message
