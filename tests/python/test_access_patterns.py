"""The reads real clients make, against GDAL's own driver on the source.

QGIS reads overviews, then tiles; terra and ``rasterio.read(1)`` read one
band at a time; gdaldem, gdal_calc and striped writers read scanlines; tile
servers open per request.  Windows that do not consume whole chunks of every
band in them go through GDAL's block cache (the blocks of the bands sharing a
chunk loaded together, in one batch), so each chunk is fetched and decoded
once however the reader slices it.  These tests check the pixels of every
pattern against GTiff, that each chunk's bytes are fetched once (over HTTP,
counting what the server sends), and that a failed batch leaves nothing
wrong in the cache.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from raster_checks import config_options, failure_text, open_chunkref
from servers import RangeServer
from test_tiff_index import TIFF_CASES, index_tiff, write_tiff

#: Pixel-interleaved (chunks hold every band), band-interleaved, and Float32.
CASES = ["cog-deflate-pred2-3band", "gtiff-planar-u2-deflate-pred2", "cog-f4-deflate-pred3-1band"]

#: Source size: 5 x 4 tiles of 64 pixels, the last column and row partial.
SIZE = (300, 230)


@pytest.fixture(scope="module", params=CASES)
def pair(request, chunkref_bin, tmp_path_factory):
    """(path of the source, path of its index)."""
    tmp = tmp_path_factory.mktemp("patterns")
    tif = write_tiff(tmp / "src.tif", TIFF_CASES[request.param], SIZE)
    index_tiff(chunkref_bin, tif, tmp / "src.json")
    return tif, tmp / "src.json"


def scanlines(ds: gdal.Dataset, band: int, rows: range) -> list[bytes]:
    b = ds.GetRasterBand(band)
    return [b.ReadRaster(0, y, ds.RasterXSize, 1) for y in rows]


def test_scanlines_match_gdal(pair):
    tif, index = pair
    native, chunkref = gdal.Open(str(tif)), open_chunkref(index)
    for band in range(1, native.RasterCount + 1):
        rows = range(native.RasterYSize)
        assert scanlines(chunkref, band, rows) == scanlines(native, band, rows), band
    # Strips of a few rows, off the tile grid, and a column.
    for x, y, w, h in [(0, 5, 300, 7), (13, 60, 250, 9), (299, 0, 1, 230), (30, 200, 200, 30)]:
        assert chunkref.ReadRaster(x, y, w, h) == native.ReadRaster(x, y, w, h), (x, y, w, h)


def test_band_by_band_and_overviews_match_gdal(pair):
    tif, index = pair
    native, chunkref = gdal.Open(str(tif)), open_chunkref(index)
    for b in range(native.RasterCount, 0, -1):
        nb, cb = native.GetRasterBand(b), chunkref.GetRasterBand(b)
        assert cb.ReadRaster() == nb.ReadRaster(), f"band {b}"
        assert cb.GetOverviewCount() == nb.GetOverviewCount()
        for level in range(nb.GetOverviewCount()):
            assert cb.GetOverview(level).ReadRaster() == nb.GetOverview(level).ReadRaster()
    # Zoomed-out views of the whole image (GDAL picks an overview, then resamples).
    for side in (150, 75, 40):
        w, h = native.RasterXSize, native.RasterYSize
        assert chunkref.ReadRaster(0, 0, w, h, side, side) == native.ReadRaster(
            0, 0, w, h, side, side
        ), side
    # A zoomed-out window of some bands, in another order, averaged.
    bands = list(range(native.RasterCount, 0, -2))
    for alg in (gdal.GRIORA_NearestNeighbour, gdal.GRIORA_Average):
        args = dict(buf_xsize=65, buf_ysize=50, band_list=bands, resample_alg=alg)
        assert chunkref.ReadRaster(20, 10, 260, 200, **args) == native.ReadRaster(
            20, 10, 260, 200, **args
        ), alg


def test_advise_read_then_blocks_match_gdal(pair):
    tif, index = pair
    native, chunkref = gdal.Open(str(tif)), open_chunkref(index)
    chunkref.AdviseRead(10, 10, 200, 150)
    for b in range(1, native.RasterCount + 1):
        for x, y in [(0, 0), (1, 1), (3, 2), (4, 3)]:
            assert chunkref.GetRasterBand(b).ReadBlock(x, y) == native.GetRasterBand(b).ReadBlock(
                x, y
            ), (b, x, y)


def test_reads_are_right_when_the_block_cache_is_tiny(pair):
    """Windows whose blocks would not fit in the cache go straight to the
    caller's buffer instead (more decoding, same pixels)."""
    tif, index = pair
    native = gdal.Open(str(tif))
    before = gdal.GetCacheMax()
    gdal.SetCacheMax(64 * 1024)
    try:
        chunkref = open_chunkref(index)
        assert chunkref.GetRasterBand(1).ReadRaster() == native.GetRasterBand(1).ReadRaster()
        assert scanlines(chunkref, 1, range(60, 70)) == scanlines(native, 1, range(60, 70))
    finally:
        gdal.SetCacheMax(before)


@pytest.fixture
def served(chunkref_bin, tmp_path):
    """A pixel-interleaved 3-band COG served over HTTP: (server, index path,
    source path, {chunk key: (offset, length)} of level 0)."""
    tif = write_tiff(tmp_path / "src.tif", TIFF_CASES["cog-deflate-pred2-3band"], SIZE)
    doc = index_tiff(chunkref_bin, tif, tmp_path / "local.json")
    server = RangeServer(tmp_path)
    text = json.dumps(doc).replace(json.dumps(str(tif))[1:-1], server.url + "src.tif")
    index = tmp_path / "remote.json"
    index.write_text(text)
    chunks = {
        k: (v[1], v[2]) for k, v in doc["refs"].items() if k.startswith("0/data/") and
        isinstance(v, list)
    }
    yield server, index, tif, chunks
    server.close()


def bytes_served(server: RangeServer) -> int:
    """Bytes of ``src.tif`` the server was asked for."""
    total = 0
    for path, rng in server.log.requests:
        if path.endswith("src.tif") and rng:
            first, last = map(int, re.fullmatch(r"bytes=(\d+)-(\d+)", rng).groups())
            total += last - first + 1
    return total


def test_each_chunk_is_fetched_once_band_by_band(served):
    server, index, tif, chunks = served
    # No coalescing across gaps: what is fetched is what was asked for.
    with config_options({"CHUNKREF_COALESCE_GAP": "0"}):
        ds = open_chunkref(index)
        got = [ds.GetRasterBand(b).ReadRaster() for b in (1, 2, 3)]
        native = gdal.Open(str(tif))
        assert got == [native.GetRasterBand(b).ReadRaster() for b in (1, 2, 3)]
        assert bytes_served(server) <= sum(length for _, length in chunks.values())


def test_each_chunk_is_fetched_once_by_scanlines(served):
    server, index, tif, chunks = served
    with config_options({"CHUNKREF_COALESCE_GAP": "0"}):
        ds = open_chunkref(index)
        rows = range(64, 128)  # the second row of chunks
        for band in (1, 2, 3):
            assert scanlines(ds, band, rows) == scanlines(gdal.Open(str(tif)), band, rows)
    row = [length for key, (_, length) in chunks.items() if key.split("/")[-1].split(".")[1] == "1"]
    assert len(row) == 5
    assert bytes_served(server) <= sum(row)


def test_a_failed_batch_leaves_nothing_in_the_cache(chunkref_bin, tmp_path):
    tif = write_tiff(tmp_path / "src.tif", TIFF_CASES["cog-deflate-pred2-3band"], SIZE)
    doc = index_tiff(chunkref_bin, tif, tmp_path / "src.json")
    key = "0/data/0.1.2"
    offset, length = doc["refs"][key][1:3]
    raw = bytearray(tif.read_bytes())
    pristine = bytes(raw)
    raw[offset : offset + length] = b"\xff" * length
    tif.write_bytes(bytes(raw))
    ds = open_chunkref(tmp_path / "src.json")
    band = ds.GetRasterBand(2)
    for _ in range(2):  # the second attempt fails again: no garbage was cached
        message = failure_text(band.ReadRaster, 0, 70, SIZE[0], 1)
        assert key in message and "src.tif" in message, message
    # Other rows, and the sibling band's blocks of the bad row's good chunks, read.
    tif.write_bytes(pristine)
    native = gdal.Open(str(tif))
    assert band.ReadRaster(0, 10, SIZE[0], 1) == native.GetRasterBand(2).ReadRaster(
        0, 10, SIZE[0], 1
    )
    assert ds.GetRasterBand(3).ReadRaster(0, 70, 128, 1) == native.GetRasterBand(3).ReadRaster(
        0, 70, 128, 1
    )
    # The chunk is whole again on disk: its blocks now read right too.
    assert band.ReadRaster(0, 70, SIZE[0], 1) == native.GetRasterBand(2).ReadRaster(
        0, 70, SIZE[0], 1
    )


def test_gdaldem_hillshade_matches_gdal(chunkref_bin, tmp_path):
    """gdaldem reads by scanline blocks: the output equals GTiff's."""
    tif = write_tiff(tmp_path / "dem.tif", TIFF_CASES["cog-f4-deflate-pred3-1band"], SIZE)
    index_tiff(chunkref_bin, tif, tmp_path / "dem.json")
    outputs = []
    for name in (tif, tmp_path / "dem.json"):
        out = f"/vsimem/hs-{Path(name).suffix}.tif"
        gdal.DEMProcessing(out, str(name), "hillshade")
        outputs.append(gdal.Open(out).ReadAsArray())
        gdal.Unlink(out)
    np.testing.assert_array_equal(outputs[1], outputs[0])
