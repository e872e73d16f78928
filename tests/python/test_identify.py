"""Identify: ChunkRef claims Kerchunk JSON (v0 and v1, any JSON layout) and
the CHUNKREF: prefix, and never other JSON documents."""

from __future__ import annotations

import json

import pytest
from osgeo import gdal

import kerchunk_builders as kb

#: JSON documents ChunkRef must not claim: file name -> content.
OTHER_JSON = {
    "features.geojson": {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "geometry": {"type": "Point", "coordinates": [1.0, 2.0]},
                "properties": {"version": 1, "refs": "none"},
            }
        ],
    },
    "item.json": {
        "type": "Feature",
        "stac_version": "1.0.0",
        "stac_extensions": ["https://stac-extensions.github.io/version/v1.0.0/schema.json"],
        "id": "scene",
        "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]},
        "bbox": [0, 0, 1, 1],
        "properties": {"datetime": "2024-01-01T00:00:00Z", "version": "1"},
        "assets": {"refs": {"href": "index.json", "type": "application/json", "roles": ["data"]}},
        "links": [],
    },
    ".zarray": {
        "zarr_format": 2,
        "shape": [75, 100],
        "chunks": [32, 32],
        "dtype": "<u2",
        "compressor": None,
        "fill_value": 0,
        "filters": None,
        "order": "C",
    },
    ".zgroup": {"zarr_format": 2},
    "zarr.json": {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [75, 100],
        "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [32, 32]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    },
    ".zmetadata": {
        "metadata": {".zgroup": {"zarr_format": 2}, "a/.zarray": {"zarr_format": 2}},
        "zarr_consolidated_format": 1,
    },
    "package.json": {"name": "something", "version": "1.0.0"},
}


@pytest.mark.parametrize("name", OTHER_JSON)
def test_other_json_is_not_claimed(tmp_path, name):
    path = tmp_path / name
    path.write_text(json.dumps(OTHER_JSON[name], indent=1))
    assert gdal.IdentifyDriverEx(str(path), allowed_drivers=["ChunkRef"]) is None
    with pytest.raises(RuntimeError):
        gdal.OpenEx(str(path), gdal.OF_RASTER, allowed_drivers=["ChunkRef"])


STYLES = {
    "v0": kb.RefStyle(version=0),
    "v0-indented": kb.RefStyle(version=0, indent=4),
    "v1": kb.RefStyle(),
    "v1-indented": kb.RefStyle(indent=2),
    "v1-sorted-keys": kb.RefStyle(sort_keys=True),
}


@pytest.mark.parametrize("style", STYLES)
def test_kerchunk_json_is_claimed(simple_store, tmp_path, style):
    index = kb.write_index(tmp_path / "index.json", simple_store.entries, STYLES[style])
    for name in (str(index), f"CHUNKREF:{index}"):
        driver = gdal.IdentifyDriverEx(name, allowed_drivers=["ChunkRef"])
        assert driver is not None and driver.ShortName == "ChunkRef", name
        assert gdal.IdentifyDriver(name).ShortName == "ChunkRef", name
