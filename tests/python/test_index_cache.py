"""Re-opening an index: a local index file that has not changed is parsed
once per process (tile servers open per request); any change of the file
(content, size, a replacement by rename) or of the open options is seen at
the next open."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from osgeo import gdal

from raster_checks import config_options, open_chunkref
from test_tiff_index import TIFF_CASES, index_tiff, write_tiff


def settle(path: Path) -> None:
    """Date ``path`` an hour back: old enough to be kept."""
    old = time.time() - 3600
    os.utime(path, (old, old))


def test_reopening_sees_every_change(chunkref_bin, tmp_path):
    a = write_tiff(tmp_path / "a.tif", TIFF_CASES["cog-none-3band"])
    index = tmp_path / "i.json"
    doc = index_tiff(chunkref_bin, a, index)
    # b: a with every tile's bytes inverted (same layout, other pixels).
    raw = bytearray(a.read_bytes())
    for ref in doc["refs"].values():
        if isinstance(ref, list):
            raw[ref[1] : ref[1] + ref[2]] = bytes(255 - v for v in raw[ref[1] : ref[1] + ref[2]])
    b = tmp_path / "b.tif"
    b.write_bytes(bytes(raw))
    settle(index)
    want_a = gdal.Open(str(a)).ReadRaster()
    want_b = gdal.Open(str(b)).ReadRaster()
    for _ in range(3):
        assert open_chunkref(index).ReadRaster() == want_a
    # The same index pointing at b: same size, other content.
    text = json.dumps(doc).replace(str(a), str(b))
    assert len(text) == len(json.dumps(doc))
    index.write_text(text)
    assert open_chunkref(index).ReadRaster() == want_b
    # Replaced by rename with an old date (another inode): seen too.
    other = tmp_path / "new.json"
    other.write_text(json.dumps(doc))
    settle(other)
    os.replace(other, index)
    assert open_chunkref(index).ReadRaster() == want_a
    # Open options shape the index: a template override is not served from
    # the index kept without it.
    templated = tmp_path / "t.json"
    doc_t = json.loads(json.dumps(doc).replace(str(a), "{{src}}"))
    doc_t["templates"] = {"src": str(a)}
    templated.write_text(json.dumps(doc_t))
    settle(templated)
    assert open_chunkref(templated).ReadRaster() == want_a
    assert open_chunkref(templated, [f"TEMPLATE_src={b}"]).ReadRaster() == want_b
    assert open_chunkref(templated).ReadRaster() == want_a
    with config_options({"CHUNKREF_INDEX_CACHE": "NO"}):
        assert open_chunkref(templated).ReadRaster() == want_a


def test_a_kept_dataset_serves_every_open_alike(chunkref_bin, tmp_path):
    """Opens of an unchanged index share what the first open worked out
    (its raster, overviews and georeferencing): handles open at once stay
    independent, warnings are given at every open, and settings are read
    at every open."""
    a = write_tiff(tmp_path / "a.tif", TIFF_CASES["cog-none-3band"])
    index = tmp_path / "i.json"
    doc = index_tiff(chunkref_bin, a, index)
    array = next(k.rsplit("/", 1)[0] for k in doc["refs"] if k.endswith("/.zarray"))
    doc["refs"][f"{array}/99.99.99"] = doc["refs"][f"{array}/0.0.0"]
    index.write_text(json.dumps(doc))
    settle(index)
    source = gdal.Open(str(a))
    want = source.ReadRaster()
    first = open_chunkref(index)
    second = open_chunkref(index)
    assert first.GetGeoTransform() == second.GetGeoTransform() == source.GetGeoTransform()
    assert (second.GetRasterBand(1).GetOverviewCount()
            == source.GetRasterBand(1).GetOverviewCount())
    first = None
    assert second.ReadRaster() == want
    for i in range(source.GetRasterBand(1).GetOverviewCount()):
        ov = second.GetRasterBand(1).GetOverview(i)
        assert ov.ReadRaster() == source.GetRasterBand(1).GetOverview(i).ReadRaster()
    second = None
    for _ in range(2):
        messages = []
        gdal.PushErrorHandler(lambda _cls, _no, msg: messages.append(msg))
        try:
            ds = open_chunkref(index)
        finally:
            gdal.PopErrorHandler()
        assert any("match no array's chunk grid" in m for m in messages)
        assert ds.ReadRaster(0, 0, 64, 64) == source.ReadRaster(0, 0, 64, 64)
        ds = None
    with config_options({"CHUNKREF_MAX_REQUESTS": "0"}):
        with pytest.raises(RuntimeError, match="CHUNKREF_MAX_REQUESTS=0"):
            gdal.OpenEx(str(index), gdal.OF_RASTER, allowed_drivers=["ChunkRef"])
    assert open_chunkref(index).ReadRaster() == want
