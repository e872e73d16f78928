"""The xarray engine and dask: lazy variables with coordinates, a CF grid
mapping rioxarray reads, encodings, chunks aligned to the index's, one
variable per array of a store, a tree of levels; datasets that pickle and
read identically in processes (fork and spawn), on dask's threaded
scheduler and on a LocalCluster of processes."""

from __future__ import annotations

import multiprocessing
import pickle

import numpy as np
import pytest
import xarray as xr

import chunkref


def test_dataset_coordinates_and_grid_mapping(indexed):
    _, index = indexed("tiff-deflate")
    ds = chunkref.open(str(index))
    x = xr.open_dataset(index, engine="chunkref", mask_and_scale=False)
    var = x.band_data
    assert var.dims == ("band", "y", "x")
    assert np.array_equal(var.values, ds.read())
    x0, dx, _, y0, _, dy = ds.transform
    assert np.allclose(x.x.values, x0 + dx * (np.arange(ds.width) + 0.5))
    assert np.allclose(x.y.values, y0 + dy * (np.arange(ds.height) + 0.5))
    # Without masking, the fill value stays an attribute (as netCDF4's engine keeps it).
    assert var.attrs["_FillValue"] == 7
    assert xr.open_dataset(index, engine="chunkref").band_data.encoding["_FillValue"] == 7
    assert "spatial_ref" in (var.attrs.get("grid_mapping"), var.encoding.get("grid_mapping"))
    import rioxarray  # noqa: F401  (registers .rio)

    assert var.rio.crs.to_epsg() == 32633
    assert tuple(var.rio.transform())[:6] == (dx, 0.0, x0, 0.0, dy, y0)


def test_mask_and_scale(indexed):
    _, index = indexed("tiff-lzw-int16")
    ds = chunkref.open(str(index))
    raw = ds.read(bands=1).astype("float64")
    x = xr.open_dataset(index, engine="chunkref")
    expected = np.where(raw == -99, np.nan, raw * 0.5 + 10.0)
    assert np.allclose(x.band_data.values[0], expected, equal_nan=True)
    assert x.band_data.encoding["scale_factor"] == 0.5
    assert x.band_data.encoding["add_offset"] == 10.0


def test_lazy_indexing(indexed):
    _, index = indexed("tiff-deflate")
    whole = chunkref.open(str(index)).read()
    var = xr.open_dataset(index, engine="chunkref", mask_and_scale=False).band_data
    assert np.array_equal(var[1, 10:50:3, ::-7].values, whole[1, 10:50:3, ::-7])
    assert np.array_equal(var[:, [5, 2, 9], 100].values, whole[:, [5, 2, 9], 100])
    assert np.array_equal(var.isel(band=[2, 0], x=slice(290, 10, -4)).values,
                          whole[[2, 0], :, 290:10:-4])


def test_time_stack(indexed):
    _, index = indexed("stack")
    ds = chunkref.open(str(index))
    x = xr.open_dataset(index, engine="chunkref", mask_and_scale=False)
    assert x.band_data.dims == ("time", "y", "x")
    assert np.array_equal(x.time.values, ds.times)
    assert str(x.time.values[2]).startswith("2024-01-05")
    sel = x.band_data.sel(time=slice("2024-01-02", "2024-01-05"))
    assert np.array_equal(sel.values, ds.read()[1:])


def test_store_of_several_arrays(indexed):
    _, index = indexed("netcdf4")
    top = chunkref.open(str(index))
    x = xr.open_dataset(index, engine="chunkref", mask_and_scale=False)
    if top.is_raster:
        assert np.array_equal(x.band_data.values, top.read())
    else:
        for name, _ in top.subdatasets:
            sub = chunkref.open(name)
            if sub.is_raster:
                var = name.rsplit('":', 1)[-1].strip("/")
                assert np.array_equal(x[var].values, sub.read())


def test_dask_chunks_follow_the_index(indexed):
    _, index = indexed("tiff-deflate")
    x = xr.open_dataset(index, engine="chunkref", chunks={}, mask_and_scale=False)
    chunks = x.band_data.chunks
    assert chunks[0] == (3,)  # the bands of a chunk's plane in one task
    assert set(chunks[1][:-1]) == {64} and set(chunks[2][:-1]) == {64}
    whole = chunkref.open(str(index)).read()
    assert int(x.band_data.sum().compute(scheduler="threads")) == int(whole.sum(dtype="int64"))


def test_datatree_of_levels(indexed):
    _, index = indexed("tiff-deflate")
    ds = chunkref.open(str(index))
    tree = xr.open_datatree(index, engine="chunkref", mask_and_scale=False)
    assert list(tree.children) == [str(i) for i in range(len(ds.levels))]
    for level in range(len(ds.levels)):
        node = tree[str(level)]
        assert np.array_equal(node.band_data.values, ds.read(level=level))


def _read_in_child(blob: bytes) -> bytes:
    return pickle.loads(blob).read(((5, 105), (7, 207))).tobytes()


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_pickled_datasets_read_in_processes(method, indexed):
    _, index = indexed("cog-webp")
    ds = chunkref.open(str(index))
    expected = ds.read(((5, 105), (7, 207))).tobytes()
    ds.read(level=1)  # the parent's engine has started its threads
    with multiprocessing.get_context(method).Pool(2) as pool:
        got = pool.map(_read_in_child, [pickle.dumps(ds)] * 4)
    assert all(g == expected for g in got)


def test_dask_local_cluster_of_processes(indexed):
    from dask.distributed import Client, LocalCluster

    _, index = indexed("stack")
    expected = chunkref.open(str(index)).read().astype("float64").mean(axis=0)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        x = xr.open_dataset(index, engine="chunkref", chunks={}, mask_and_scale=False)
        mean = x.band_data.mean("time").compute()
    assert np.allclose(mean.values, expected)
