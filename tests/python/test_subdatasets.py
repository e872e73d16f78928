"""Stores that are not pyramids: every array of 2 or more dimensions is a
subdataset named ``CHUNKREF:"/abs/index.json":path/to/var``; 1-D arrays
(coordinates) are not; a store with exactly one such array opens it
directly."""

from __future__ import annotations

import numcodecs
import pytest
from osgeo import gdal

import kerchunk_builders as kb
from raster_checks import assert_matches, native_levels, open_chunkref

FORMATS = pytest.mark.parametrize("zarr_format", [2, 3], ids=["v2", "v3"])


def index_over(tmp_path, store, zarr_format):
    """Write an index over a v2 store, as v2 or converted to v3."""
    entries = kb.as_zarr_format(kb.zarr_store_entries(store), zarr_format)
    return kb.write_index(tmp_path / "index.json", entries)


def subdatasets(ds) -> dict[str, str]:
    """SUBDATASET_n_NAME -> SUBDATASET_n_DESC from the SUBDATASETS domain."""
    md = ds.GetMetadata("SUBDATASETS")
    count = len(md) // 2
    assert sorted(md) == sorted(
        [f"SUBDATASET_{i}_NAME" for i in range(1, count + 1)]
        + [f"SUBDATASET_{i}_DESC" for i in range(1, count + 1)]
    ), md
    return {md[f"SUBDATASET_{i}_NAME"]: md[f"SUBDATASET_{i}_DESC"] for i in range(1, count + 1)}


@FORMATS
def test_gdal_multiband_store(tmp_path, zarr_format):
    """GDAL's Zarr driver writes a 3-band raster as arrays Band1..Band3."""
    data = kb.sample_pixels("<u4", (3, 75, 100))
    store = kb.write_gdal_zarr(tmp_path / "s.zarr", data, creation_options=["COMPRESS=GZIP"])
    index = index_over(tmp_path, store, zarr_format)
    ds = open_chunkref(index)
    assert ds.RasterCount == 0
    found = subdatasets(ds)
    assert set(found) == {f'CHUNKREF:"{index}":Band{i}' for i in (1, 2, 3)}
    assert all(found.values())
    for i in (1, 2, 3):
        native = gdal.Open(f'ZARR:"{store}":/Band{i}')
        assert_matches(open_chunkref(f'CHUNKREF:"{index}":Band{i}'), native_levels(native))


@FORMATS
def test_nested_groups_and_coordinates(tmp_path, zarr_format):
    """Arrays in nested groups keep their path; 1-D coordinate arrays are no
    subdatasets; a 3-D variable opens with its leading axis as bands."""
    elev = kb.sample_pixels("<f4", (75, 100), seed=1)
    temp = kb.sample_pixels(">i2", (3, 75, 100), seed=2)
    arrays = {
        "x": kb.ArraySpec(kb.sample_pixels("<f8", (100,)), (100,)),
        "y": kb.ArraySpec(kb.sample_pixels("<f8", (75,)), (75,)),
        "grp/sub/elev": kb.ArraySpec(elev, (32, 32), compressor=numcodecs.GZip()),
        "temp": kb.ArraySpec(temp, (2, 32, 32), compressor=numcodecs.Zstd()),
    }
    store = kb.write_zarr_python(tmp_path / "s.zarr", arrays)
    index = index_over(tmp_path, store, zarr_format)
    ds = open_chunkref(index)
    assert ds.RasterCount == 0
    names = {name: f'CHUNKREF:"{index}":{name}' for name in ("grp/sub/elev", "temp")}
    assert set(subdatasets(ds)) == set(names.values())
    assert_matches(open_chunkref(names["grp/sub/elev"]), [elev])
    assert_matches(open_chunkref(names["temp"]), [temp])


@FORMATS
def test_single_array_opens_directly(tmp_path, zarr_format):
    data = kb.sample_pixels("<i8", (75, 100))
    arrays = {
        "x": kb.ArraySpec(kb.sample_pixels("<f8", (100,)), (50,)),
        "grp/elev": kb.ArraySpec(data, (32, 32), compressor=numcodecs.GZip()),
    }
    store = kb.write_zarr_python(tmp_path / "s.zarr", arrays)
    index = index_over(tmp_path, store, zarr_format)
    ds = open_chunkref(index)
    assert ds.GetMetadata("SUBDATASETS") == {}
    assert_matches(ds, [data])


def test_unknown_subdataset_path_fails(tmp_path, simple_store):
    index = kb.write_index(tmp_path / "index.json", simple_store.entries)
    with pytest.raises(RuntimeError):
        open_chunkref(f'CHUNKREF:"{index}":no/such/array')
