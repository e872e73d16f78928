"""Indexes in the JSON dialect Python writes: ``json.dumps`` spells
non-finite floats as bare ``NaN`` / ``Infinity`` / ``-Infinity`` (VirtualiZarr
puts ``"_FillValue": NaN`` on float coordinates), and GDAL's JSON reader
accepts trailing commas.  Both read as the strict JSON they stand for."""

from __future__ import annotations

import json
import math

import numpy as np
from osgeo import gdal

import kerchunk_builders as kb
from raster_checks import open_chunkref


def test_bare_nan_infinity_and_trailing_commas(tmp_path):
    data = kb.sample_pixels("<f4", (1, 40, 50))
    data[0, 3:9, 4:20] = np.nan
    store = kb.write_zarr_python(
        tmp_path / "s.zarr",
        {"a": kb.ArraySpec(data=data, chunks=(1, 16, 16), fill_value=np.nan)},
    )
    entries = kb.zarr_store_entries(store)
    entries["a/.zarray"]["fill_value"] = float("nan")
    attrs = entries.setdefault("a/.zattrs", {})
    attrs.update({"_FillValue": float("nan"), "valid_max": float("inf"),
                  "valid_min": -float("inf"), "_ARRAY_DIMENSIONS": ["band", "y", "x"]})
    index = kb.write_index(tmp_path / "refs.json", entries)
    text = index.read_text()
    assert "NaN" in text and "Infinity" in text  # inside the inline documents
    # The outer document in Python's dialect too, with trailing commas.
    doc = json.loads(text)
    doc["refs"]["a/.zattrs"] = json.dumps(attrs)  # bare NaN in the inner text
    outer = json.dumps(doc)
    assert outer.endswith("}}")
    outer = outer[:-2] + ", }, }"
    index.write_text(outer)
    with_nan_outer = json.dumps({**doc, "note": float("nan")})
    (tmp_path / "refs2.json").write_text(with_nan_outer)

    for name in (index, tmp_path / "refs2.json"):
        ds = open_chunkref(name)
        band = ds.GetRasterBand(1)
        assert math.isnan(band.GetNoDataValue())
        np.testing.assert_array_equal(band.ReadAsArray(), data[0])
        assert band.GetMetadataItem("valid_max") in ("Infinity", "inf")


def test_a_v0_store_starting_with_a_chunk_key_opens_by_its_name(simple_store, tmp_path):
    """kerchunk writes v0 stores in key order: a chunk key may come first.
    ``gdalinfo refs.json`` must recognise it without the CHUNKREF: prefix."""
    entries = dict(simple_store.entries)
    chunk_keys = [k for k in entries if not kb.is_metadata_key(k)]
    first = {k: entries[k] for k in chunk_keys} | {
        k: v for k, v in entries.items() if k not in chunk_keys
    }
    index = kb.write_index(tmp_path / "refs.json", first, kb.RefStyle(version=0))
    assert not kb.is_metadata_key(next(iter(json.loads(index.read_text()))))
    ds = gdal.OpenEx(str(index), allowed_drivers=["ChunkRef"])
    assert ds is not None and ds.GetDriver().ShortName == "ChunkRef"
    np.testing.assert_array_equal(ds.ReadAsArray(), simple_store.data)


def test_bands_carry_their_coordinate_values(tmp_path):
    """A (time, y, x) variable with a time coordinate, as kerchunk writes a
    NetCDF4 file: each band shows its time value as GDAL's netCDF driver
    names it (NETCDF_DIM_time), beside DIM_time_INDEX."""
    data = kb.sample_pixels("<f4", (3, 20, 30))
    times = np.array([14245, 14246.5, 14250], dtype="<f8")
    store = kb.write_zarr_python(tmp_path / "s.zarr", {
        "sst": kb.ArraySpec(data=data, chunks=(1, 20, 30), fill_value=np.nan,
                            attrs={"_ARRAY_DIMENSIONS": ["time", "y", "x"]}),
        "time": kb.ArraySpec(data=times, chunks=(3,), fill_value=None,
                             attrs={"_ARRAY_DIMENSIONS": ["time"],
                                    "units": "days since 1981-01-01"}),
    })
    index = kb.write_index(tmp_path / "refs.json", kb.zarr_store_entries(store))
    ds = open_chunkref(f'CHUNKREF:"{index}":sst')
    got = [(ds.GetRasterBand(b).GetMetadataItem("DIM_time_INDEX"),
            ds.GetRasterBand(b).GetMetadataItem("NETCDF_DIM_time")) for b in (1, 2, 3)]
    assert got == [("0", "14245"), ("1", "14246.5"), ("2", "14250")], got
