"""GeoKeys beside or instead of an EPSG code, read as GDAL's GTiff driver
reads them (issue 41): a ProjLinearUnits key that differs from the code's
unit, an angular unit or TOWGS84 of their own, a user-defined datum with
TOWGS84 (a BoundCRS), projected models without any code (a local CRS).

The files are written by Pillow with the GeoTIFF tags set by hand (GDAL
writes no such key sets), indexed with ``chunkref index``, and the CRS of
the index read through ChunkRef must be the one GDAL reads from the file
(OSR IsSame), with the same geotransform. Where the keys add nothing to the
code, the index keeps the code itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal
from PIL import Image, TiffImagePlugin

from conftest import run_chunkref
from raster_checks import open_chunkref
from servers import RangeServer

#: (key id, tag location, count, value or offset) of the GeoKeys
MODEL_PROJECTED = (1024, 0, 1, 1)
MODEL_GEOGRAPHIC = (1024, 0, 1, 2)
PIXEL_IS_AREA = (1025, 0, 1, 1)
UTM33N = (3072, 0, 1, 32633)
USER_DEFINED = 32767

#: name -> (GeoKeys, GeoDoubleParams, GeoAsciiParams, geographic?, index keeps the code)
CASES = {
    "utm-in-feet": ([MODEL_PROJECTED, PIXEL_IS_AREA, UTM33N, (3076, 0, 1, 9002)], (), None, False,
                    False),
    "utm-in-metres-said-twice": ([MODEL_PROJECTED, PIXEL_IS_AREA, UTM33N, (3076, 0, 1, 9001)], (),
                                 None, False, True),
    "utm-with-grads": ([MODEL_PROJECTED, PIXEL_IS_AREA, UTM33N, (2054, 0, 1, 9105)], (), None, False,
                       None),
    "utm-with-citation": ([MODEL_PROJECTED, PIXEL_IS_AREA, UTM33N, (1026, 34737, 22, 0)], (),
                          "WGS 84 / UTM zone 33N|", False, True),
    "ed50-with-towgs84": ([MODEL_GEOGRAPHIC, PIXEL_IS_AREA, (2048, 0, 1, 4230), (2062, 34736, 7, 0)],
                          (-87.0, -98.0, -121.0, 0.0, 0.0, 0.0, 0.0), None, True, None),
    "user-datum-with-towgs84": (
        [MODEL_GEOGRAPHIC, PIXEL_IS_AREA, (2048, 0, 1, USER_DEFINED), (2050, 0, 1, USER_DEFINED),
         (2051, 0, 1, 8901), (2054, 0, 1, 9102), (2056, 0, 1, 7022), (2062, 34736, 7, 0)],
        (-87.0, -98.0, -121.0, 0.0, 0.0, 0.0, 0.0), None, True, False),
    "wgs84-as-gdal-writes-it": (
        [MODEL_GEOGRAPHIC, PIXEL_IS_AREA, (2048, 0, 1, 4326), (2049, 34737, 7, 0), (2054, 0, 1, 9102),
         (2057, 34736, 1, 0), (2059, 34736, 1, 1)],
        (6378137.0, 298.257223563), "WGS 84|", True, True),
    "local-metres": ([MODEL_PROJECTED, PIXEL_IS_AREA], (), None, False, False),
    "local-feet": ([MODEL_PROJECTED, PIXEL_IS_AREA, (3076, 0, 1, 9002)], (), None, False, False),
}


def write_keys_tiff(path: Path, case: str) -> Path:
    """A 40x30 8-bit TIFF with ModelPixelScale, ModelTiepoint and the
    GeoKeys of ``case``, written by Pillow."""
    keys, doubles, text, geographic, _ = CASES[case]
    directory = [1, 1, 0, len(keys)]
    for key in sorted(keys):
        directory += list(key)
    tags = TiffImagePlugin.ImageFileDirectory_v2()

    def put(tag: int, kind: int, value) -> None:
        tags[tag] = value
        tags.tagtype[tag] = kind

    scale, origin = ((0.01, 0.01, 0.0), (10.0, 50.0)) if geographic else ((10.0, 10.0, 0.0),
                                                                          (500000.0, 4e6))
    put(33550, 12, scale)
    put(33922, 12, (0.0, 0.0, 0.0, *origin, 0.0))
    put(34735, 3, tuple(directory))
    if doubles:
        put(34736, 12, doubles)
    if text:
        put(34737, 2, text)
    pixels = (np.arange(30 * 40) % 251).astype(np.uint8).reshape(30, 40)
    Image.fromarray(pixels).save(path, tiffinfo=tags)
    return path


def assert_reads_like_gdal(index: Path, tif: Path) -> None:
    ours = open_chunkref(index)
    theirs = gdal.OpenEx(str(tif), allowed_drivers=["GTiff"])
    assert ours.GetGeoTransform() == pytest.approx(theirs.GetGeoTransform())
    a, b = ours.GetSpatialRef(), theirs.GetSpatialRef()
    assert b is not None
    assert a is not None and a.IsSame(b), (a and a.ExportToWkt(), b.ExportToWkt())
    assert np.array_equal(ours.ReadAsArray(), theirs.ReadAsArray())


@pytest.mark.parametrize("case", sorted(CASES))
def test_geokeys_give_gdals_crs(tmp_path, chunkref_bin, case):
    tif = write_keys_tiff(tmp_path / f"{case}.tif", case)
    index = tmp_path / f"{case}.json"
    done = run_chunkref(chunkref_bin, "index", tif, "-o", index)
    assert done.returncode == 0, done.stderr
    assert_reads_like_gdal(index, tif)
    keeps_code = CASES[case][4]
    if keeps_code is not None:
        text = index.read_text()
        assert ('proj:code' in text) == keeps_code, text[:2000]


def test_geokeys_of_a_remote_source(tmp_path, chunkref_bin):
    """The keys are read from the header bytes, wherever the file lives:
    a source over HTTP gets GDAL's CRS too (GDAL is never asked to open
    the source itself)."""
    write_keys_tiff(tmp_path / "feet.tif", "utm-in-feet")
    server = RangeServer(tmp_path)
    try:
        index = tmp_path / "feet.json"
        done = run_chunkref(chunkref_bin, "index", server.url + "feet.tif", "-o", index)
        assert done.returncode == 0, done.stderr
        assert 'proj:code' not in index.read_text()
        assert_reads_like_gdal(index, tmp_path / "feet.tif")
    finally:
        server.close()
