"""Re-opening an index: a local index file that has not changed is parsed
once per process (tile servers open per request); any change of the file
(content, size, a replacement by rename) or of the open options is seen at
the next open."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

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
