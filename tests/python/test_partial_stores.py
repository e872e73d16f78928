"""Stores with arrays the driver cannot serve (a codec it does not know, a
string or compound type, a 0-d variable such as CF's ``crs``): those
arrays are left out with one warning each naming the array and the reason,
are not listed as subdatasets, and fail with that reason when opened by
name; every other array opens and reads."""

from __future__ import annotations

import json

import numpy as np
import pytest
from osgeo import gdal

import kerchunk_builders as kb
from raster_checks import captured_errors, failure_text, open_chunkref


def zarray(shape, chunks, dtype, **extra) -> dict:
    return {"zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": dtype,
            "fill_value": None, "order": "C", "compressor": None, "filters": None, **extra}


@pytest.fixture
def store(simple_store, tmp_path):
    """The simple store's array ``a`` beside arrays that cannot be served."""
    entries = dict(simple_store.entries)
    entries["names/.zarray"] = zarray([4], [4], "|S1")
    entries["names/0"] = b"abcd"
    entries["checked/.zarray"] = zarray([8, 8], [8, 8], "<u2", filters=[{"id": "no-such-codec"}])
    entries["checked/0.0"] = bytes(128)
    entries["crs/.zarray"] = zarray([], [], "<i4")
    entries["crs/.zattrs"] = {"grid_mapping_name": "latitude_longitude"}
    entries["crs/0"] = bytes(4)
    return kb.write_index(tmp_path / "refs.json", kb.sort_entries(entries)), simple_store


def test_unservable_arrays_are_left_out_with_a_warning(store):
    index, simple = store
    with captured_errors() as messages:
        ds = open_chunkref(index)
    text = "\n".join(messages)
    assert "'names'" in text and "'checked'" in text and "no-such-codec" in text, text
    assert text.count("left out") == sum(1 for m in messages if "left out" in m)
    names = " ".join(v for k, v in (ds.GetMetadata("SUBDATASETS") or {}).items() if k.endswith("_NAME"))
    assert "names" not in names and "checked" not in names
    # The remaining 2-D array is the dataset (or its subdataset), fully readable.
    a = ds if ds.RasterCount else open_chunkref(f'CHUNKREF:"{index}":a')
    np.testing.assert_array_equal(a.ReadAsArray(), simple.data)


def test_opening_a_left_out_array_names_it_and_the_reason(store):
    index, _ = store
    message = failure_text(gdal.Open, f'CHUNKREF:"{index}":checked')
    assert "'checked'" in message and "no-such-codec" in message, message


def test_a_store_of_only_unservable_arrays_fails_as_before(tmp_path):
    entries = {".zgroup": {"zarr_format": 2}, "names/.zarray": zarray([4], [4], "|S1"),
               "names/0": b"abcd"}
    index = kb.write_index(tmp_path / "refs.json", entries)
    message = failure_text(gdal.Open, str(index))
    assert "names" in message or "S1" in message, message
