"""Uncached opens of the uncompressed pixel-interleaved tiles issue 29's
open + one tile measures (tests/bench/patterns.py, ``none-pixel``), checked
against GDAL reading the source:

- an uncompressed tile's bytes are handed to the read as they were read
  (no copy), also when a window needs only its first rows;
- Kerchunk references are grouped by array in one pass, trying the array
  of the previous key first: keys in any order, arrays nested in groups of
  the same name and chunk keys with ``/`` separators land where they did,
  and references that fit no array are still counted in one warning;
- a reference that cannot be read still fails the open, naming the index
  and the key.

Every open here is uncached (``CHUNKREF_INDEX_CACHE=NO``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import assert_pixels_equal, captured_errors, config_options, open_chunkref

gdal.UseExceptions()

UNCACHED = {"CHUNKREF_INDEX_CACHE": "NO"}


def pixel_tiff(path: Path, size: int = 160, bands: int = 3) -> Path:
    """An uncompressed, pixel-interleaved, tiled Byte GTiff with overviews."""
    rng = np.random.default_rng(7)
    data = rng.integers(0, 255, size=(bands, size, size), dtype=np.uint8)
    ds = gdal.GetDriverByName("GTiff").Create(str(path), size, size, bands, gdal.GDT_Byte,
                                              ["TILED=YES", "BLOCKXSIZE=32", "BLOCKYSIZE=32",
                                               "INTERLEAVE=PIXEL", "COMPRESS=NONE"])
    ds.SetGeoTransform([400000, 2, 0, 3000000, 0, -2])
    ds.WriteRaster(0, 0, size, size, data.tobytes())
    ds.BuildOverviews("NEAREST", [2, 4])
    ds = None
    return path


@pytest.fixture
def indexed(chunkref_bin, tmp_path):
    """(source, JSON index, Parquet index) of a pixel-interleaved tiff."""
    source = pixel_tiff(tmp_path / "none-pixel.tif")
    out = []
    for name in ("none-pixel.json", "none-pixel.parquet"):
        done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / name)
        assert done.returncode == 0, done.stderr
        out.append(tmp_path / name)
    return source, *out


@pytest.mark.parametrize("kind", ["json", "parquet"])
def test_uncompressed_tiles_read_uncached_as_gdal_reads(indexed, kind):
    source, js, pq = indexed
    index = js if kind == "json" else pq
    native = gdal.Open(str(source))
    # A whole tile, a window of the first rows of a tile (decoded only down
    # to them), one pixel, a window across tiles, and the whole image,
    # through the dataset and band by band; each through a fresh open.
    windows = [(32, 64, 32, 32), (32, 64, 32, 5), (65, 3, 1, 1), (20, 30, 70, 41),
               (0, 0, 160, 160)]
    for window in windows:
        with config_options(UNCACHED), captured_errors() as errors:
            ds = open_chunkref(index)
            got = np.frombuffer(ds.ReadRaster(*window), np.uint8)
            want = np.frombuffer(native.ReadRaster(*window), np.uint8)
            assert_pixels_equal(got, want, f"{index.name} {window}")
            for b in (1, 3):
                assert_pixels_equal(ds.GetRasterBand(b).ReadAsArray(*window),
                                    native.GetRasterBand(b).ReadAsArray(*window),
                                    f"{index.name} band {b} {window}")
            ds = None
        assert errors == [], errors
    with config_options(UNCACHED), captured_errors():
        ds = open_chunkref(index)
        for i in range(native.GetRasterBand(1).GetOverviewCount()):
            assert_pixels_equal(ds.GetRasterBand(2).GetOverview(i).ReadAsArray(),
                                native.GetRasterBand(2).GetOverview(i).ReadAsArray(),
                                f"{index.name} overview {i}")


ZARRAY = {"shape": [4, 6], "chunks": [2, 3], "dtype": "|u1", "fill_value": 0,
          "compressor": None, "filters": None, "order": "C", "zarr_format": 2}


def store(path: Path, refs: dict) -> Path:
    path.write_text(json.dumps({"version": 1, "refs": refs}))
    return path


def chunk_file(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """Four 2 x 3 chunks, chunk k holding the values 10 k .. 10 k + 5."""
    data = np.concatenate([np.arange(6, dtype=np.uint8) + 10 * k for k in range(4)])
    path = tmp_path / "chunks.bin"
    path.write_bytes(data.tobytes())
    return path, data


def expected_array(data: np.ndarray, order: dict[str, int]) -> np.ndarray:
    """The 4 x 6 array whose chunk "i.j" holds chunk ``order["i.j"]`` of ``data``."""
    out = np.zeros((4, 6), np.uint8)
    for key, k in order.items():
        i, j = map(int, key.split("."))
        out[2 * i:2 * i + 2, 3 * j:3 * j + 3] = data[6 * k:6 * k + 6].reshape(2, 3)
    return out


def test_references_land_in_their_arrays_in_any_order(tmp_path):
    binary, data = chunk_file(tmp_path)
    url = str(binary)
    slash = dict(ZARRAY, dimension_separator="/")
    refs = {
        # Keys of two arrays interleaved, and out of grid order.
        "a/.zarray": json.dumps(ZARRAY),
        "g/b/.zarray": json.dumps(slash),
        "a/1.1": [url, 0, 6],
        "g/b/0/1": [url, 6, 6],
        "a/0.0": [url, 12, 6],
        "g/b/1/0": [url, 18, 6],
        "a/0.1": [url, 6, 6],
        # A key of "a"'s directory that is no chunk key of it, and one of
        # no array at all: both stray.
        "a/9.9": [url, 0, 6],
        "nowhere/0.0": [url, 0, 6],
    }
    index = store(tmp_path / "mixed.json", refs)
    with config_options(UNCACHED), captured_errors() as errors:
        a = open_chunkref(f'CHUNKREF:"{index}":a').ReadAsArray()
    assert_pixels_equal(a, expected_array(data, {"1.1": 0, "0.0": 2, "0.1": 1}), "a")
    assert any("2 reference(s)" in e and "match no array's chunk grid" in e and "'a/9.9'" in e
               for e in errors), errors
    with config_options(UNCACHED), captured_errors():
        b = open_chunkref(f'CHUNKREF:"{index}":g/b').ReadAsArray()
    assert_pixels_equal(b, expected_array(data, {"0.1": 1, "1.0": 3}), "g/b")


def test_the_last_of_duplicate_references_wins(tmp_path):
    binary, data = chunk_file(tmp_path)
    url = str(binary)
    refs = {".zarray": json.dumps(ZARRAY), "0.0": [url, 0, 6], "0.1": [url, 6, 6]}
    text = json.dumps({"version": 1, "refs": refs})
    # The same key again at the end (JSON objects may repeat keys).
    text = text[:-2] + f', "0.0": ["{url}", 18, 6]}}}}'
    index = tmp_path / "dup.json"
    index.write_text(text)
    with config_options(UNCACHED), captured_errors():
        got = open_chunkref(index).ReadAsArray()
    assert_pixels_equal(got, expected_array(data, {"0.0": 3, "0.1": 1}), "duplicates")


@pytest.mark.parametrize("value, message", [
    ('["F", 1]', "without a length"),
    ('["F", -1, 2]', "offset"),
    ('[]', "empty list"),
])
def test_a_malformed_reference_still_fails_the_open(tmp_path, value, message):
    binary, _ = chunk_file(tmp_path)
    refs = {"a/.zarray": json.dumps(ZARRAY), "a/0.0": [str(binary), 0, 6]}
    text = json.dumps({"version": 1, "refs": refs})
    text = text[:-2] + ', "a/0.1": ' + value.replace("F", str(binary)) + "}}"
    index = tmp_path / "bad.json"
    index.write_text(text)
    with config_options(UNCACHED), captured_errors():
        with pytest.raises(RuntimeError, match=message) as err:
            gdal.Open(str(index))
    assert "bad.json" in str(err.value)


def test_python_json_keys_survive_the_rewrite(tmp_path):
    """Text that is not strict JSON is rewritten before it is parsed; the
    keys read from the rewritten copy are kept."""
    binary, data = chunk_file(tmp_path)
    url = str(binary)
    zarray = json.dumps(ZARRAY).replace('"fill_value": 0', '"fill_value": NaN')
    zarray = zarray.replace('"|u1"', '"<f4"')
    floats = np.arange(24, dtype="<f4")
    binary.write_bytes(floats.tobytes())
    refs = {".zarray": zarray, "0.0": [url, 0, 24], "1.1": [url, 72, 24]}
    text = json.dumps({"version": 1, "refs": refs}).rstrip()[:-1] + ", }"
    index = tmp_path / "python.json"
    index.write_text(text)
    with config_options(UNCACHED), captured_errors():
        ds = open_chunkref(index)
        got = ds.ReadAsArray()
    want = np.full((4, 6), np.nan, np.float32)
    want[0:2, 0:3] = floats[0:6].reshape(2, 3)
    want[2:4, 3:6] = floats[18:24].reshape(2, 3)
    assert_pixels_equal(got, want, "python json")
