"""The ``chunkref`` engine of xarray: ``xr.open_dataset(url, engine="chunkref")``.

Each raster becomes a lazy variable of dims ``(band, y, x)`` (``(time, y,
x)`` for a time stack) with cell-centre ``x``/``y`` coordinates from the
geotransform and a CF ``spatial_ref`` grid-mapping variable holding
``crs_wkt`` and ``GeoTransform`` (so rioxarray's ``.rio.crs`` and
``.rio.transform()`` work). A store of several arrays (NetCDF, HDF5, Zarr)
gives one variable per array. Nodata, scale and offset become xarray's
``_FillValue``, ``scale_factor`` and ``add_offset`` encodings; with
``chunks={}`` dask chunks follow the index's chunks in y and x and group
bands (time steps) into tasks of about 16 MiB.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Iterable

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

import chunkref

#: About how many bytes one dask chunk (one task) of ``chunks={}`` holds.
TASK_BYTES = 16 << 20

class ChunkrefArray(BackendArray):
    """One raster level as a lazy ``(bands, rows, cols)`` array; it pickles
    as its dataset does (url, options, config)."""

    def __init__(self, dataset: chunkref.Dataset, level: int):
        self.dataset = dataset
        self.level = level
        lv = dataset.levels[level]
        self.shape = (dataset.count, lv.height, lv.width)
        self.dtype = dataset.dtype_of(level)
        self._lock = threading.Lock()

    def __getstate__(self):
        return {"dataset": self.dataset, "level": self.level}

    def __setstate__(self, state):
        self.__init__(state["dataset"], state["level"])

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._read
        )

    def _read(self, key: tuple) -> np.ndarray:
        band_key, row_key, col_key = key
        bands = np.arange(self.shape[0])[band_key]
        rows = _span(row_key, self.shape[1])
        cols = _span(col_key, self.shape[2])
        (r0, r1, rstep), (c0, c1, cstep) = rows, cols
        scalar_band = np.ndim(bands) == 0
        band_list = [int(bands) + 1] if scalar_band else [int(b) + 1 for b in bands]
        if not band_list or r1 <= r0 or c1 <= c0:
            shape = (len(band_list), max(r1 - r0, 0), max(c1 - c0, 0))
            out = np.empty(shape, self.dtype)
        else:
            out = self.dataset.read(((r0, r1), (c0, c1)), level=self.level, bands=band_list)
        out = out[:, _step(row_key, r0), _step(col_key, c0)]
        return out[0] if scalar_band else out


def _span(key: Any, size: int) -> tuple[int, int, int]:
    """The rows (or columns) to read for one key: ``(start, stop, step)``."""
    if isinstance(key, slice):
        start, stop, step = key.indices(size)
        if step < 0:
            start, stop = stop + 1, start + 1
        return start, max(stop, start), step
    idx = np.atleast_1d(np.arange(size)[key])
    if idx.size == 0:
        return 0, 0, 1
    return int(idx.min()), int(idx.max()) + 1, 1


def _step(key: Any, start: int) -> Any:
    """The index into the rows read from ``start`` that gives ``key``."""
    if isinstance(key, slice):
        return slice(None, None, key.step)
    return np.asarray(key) - start


def _coordinates(transform, width: int, height: int) -> dict[str, np.ndarray]:
    """Cell-centre x and y of a north-up transform, or none for a rotated one."""
    if transform is None or transform[2] != 0 or transform[4] != 0:
        return {}
    x0, dx, _, y0, _, dy = transform
    return {
        "x": x0 + dx * (np.arange(width) + 0.5),
        "y": y0 + dy * (np.arange(height) + 0.5),
    }


def _grid_mapping(dataset: chunkref.Dataset, level: int) -> xr.Variable | None:
    wkt = dataset.crs_wkt
    transform = dataset.transform_of(level)
    if wkt is None and transform is None:
        return None
    attrs: dict[str, Any] = {}
    if wkt is not None:
        attrs["crs_wkt"] = wkt
        attrs["spatial_ref"] = wkt
    if transform is not None:
        attrs["GeoTransform"] = " ".join(repr(float(v)) for v in transform)
    return xr.Variable((), np.int64(0), attrs)


def _raster_variables(
    dataset: chunkref.Dataset, level: int, name: str, suffix: str
) -> tuple[dict[str, xr.Variable], dict[str, xr.Variable]]:
    """The data variable of one raster and its coordinates, dims suffixed
    with ``suffix`` (for stores whose arrays differ in shape)."""
    lv = dataset.levels[level]
    times = dataset.times
    lead = ("time" if times is not None else "band") + suffix
    dims = (lead, "y" + suffix, "x" + suffix)
    coords: dict[str, xr.Variable] = {}
    if times is not None:
        coords[lead] = xr.Variable((lead,), times)
    else:
        coords[lead] = xr.Variable((lead,), np.arange(1, dataset.count + 1))
    for axis, values in _coordinates(dataset.transform_of(level), lv.width, lv.height).items():
        coords[axis + suffix] = xr.Variable((axis + suffix,), values)
    attrs: dict[str, Any] = {}
    info = dataset.band_info(1, level)
    if info["nodata"] is not None:
        attrs["_FillValue"] = (
            info["nodata_int"] if info["nodata_int"] is not None else info["nodata"]
        )
    if info["scale"] is not None and info["scale"] != 1:
        attrs["scale_factor"] = info["scale"]
    if info["offset"] is not None and info["offset"] != 0:
        attrs["add_offset"] = info["offset"]
    if info["unit"]:
        attrs["units"] = info["unit"]
    if info["description"] and dataset.count == 1:
        attrs["long_name"] = info["description"]
    data = indexing.LazilyIndexedArray(ChunkrefArray(dataset, level))
    var = xr.Variable(dims, data, attrs)
    # A dask chunk holds the index's chunk in y and x and as many bands
    # (time steps) as fill about TASK_BYTES: each task then fetches and
    # decodes many chunks at once, concurrently, as the engine reads.
    plane = lv.block_height * lv.block_width * dataset.dtype_of(level).itemsize
    var.encoding["preferred_chunks"] = {
        lead: max(1, min(dataset.count, TASK_BYTES // max(plane, 1))),
        "y" + suffix: lv.block_height,
        "x" + suffix: lv.block_width,
    }
    var.encoding["source"] = dataset.url
    return {name: var}, coords


def _open_datasets(url: str, options: dict, config: dict) -> list[tuple[str, chunkref.Dataset]]:
    """The rasters of ``url``: itself, or each array of a multi-array store."""
    top = chunkref.open(url, config=config, **options)
    if top.is_raster:
        return [("band_data", top)]
    out = []
    for name, _ in top.subdatasets:
        ds = chunkref.open(name, config=config, **options)
        if ds.is_raster:
            out.append((_variable_name(name), ds))
    return out


def _variable_name(subdataset: str) -> str:
    """``CHUNKREF:"index":group/var`` -> ``group/var``."""
    path = subdataset.rsplit('":', 1)[-1] if '":' in subdataset else subdataset
    return path.strip("/") or "band_data"


class ChunkrefBackendEntrypoint(BackendEntrypoint):
    """xarray's entry point for chunk indexes (``engine="chunkref"``)."""

    description = "Chunk indexes (Kerchunk JSON/Parquet, reference tables, Icechunk) via chunkref"
    url = "https://github.com/chunkref/chunkref/blob/main/docs/python.md"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "level", "config")

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if not isinstance(filename_or_obj, (str, os.PathLike)):
            return False
        name = str(filename_or_obj)
        return name.upper().startswith("CHUNKREF:") or name.endswith(
            (".tile_index.json", ".refs.json", ".fgb")
        )

    def open_dataset(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: Iterable[str] | None = None,
        mask_and_scale: bool = True,
        level: int = 0,
        config: dict | None = None,
        **options: Any,
    ) -> xr.Dataset:
        url = os.fspath(filename_or_obj)
        rasters = _open_datasets(url, options, dict(config or {}))
        drop = set(drop_variables or ())
        variables: dict[str, xr.Variable] = {}
        coords: dict[str, xr.Variable] = {}
        shapes: dict[tuple, str] = {}
        grid_mapping = None
        for name, ds in rasters:
            if name in drop:
                continue
            if not 0 <= level < len(ds.levels):
                raise chunkref.InvalidIndexError(
                    f"{url}: level {level} does not exist ({len(ds.levels)} levels)"
                )
            lv = ds.levels[level]
            key = (ds.count, lv.height, lv.width, ds.transform_of(level))
            suffix = "" if not shapes or key in shapes else "_" + name.replace("/", "_")
            shapes.setdefault(key, name)
            data, c = _raster_variables(ds, level, name, suffix)
            gm = _grid_mapping(ds, level)
            if gm is not None:
                if grid_mapping is None:
                    grid_mapping = gm
                for v in data.values():
                    v.attrs["grid_mapping"] = "spatial_ref"
            variables.update(data)
            coords.update(c)
        if grid_mapping is not None:
            coords["spatial_ref"] = grid_mapping
        out = xr.Dataset(variables, coords=coords)
        out = xr.decode_cf(out, mask_and_scale=mask_and_scale, decode_times=False)
        out.set_close(None)
        return out

    def open_datatree(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: Iterable[str] | None = None,
        mask_and_scale: bool = True,
        config: dict | None = None,
        **options: Any,
    ):
        """One node per level under an empty root: ``0`` the full
        resolution, ``1`` ... the overviews, coarsest last (the paths of
        Zarr multiscales; siblings, since xarray requires a child to align
        with its parent)."""
        url = os.fspath(filename_or_obj)
        first = _open_datasets(url, options, dict(config or {}))
        levels = max((len(ds.levels) for _, ds in first), default=1)
        nodes: dict[str, xr.Dataset] = {"/": xr.Dataset()}
        for level in range(levels):
            path = f"/{level}"
            nodes[path] = self.open_dataset(
                url,
                drop_variables=drop_variables,
                mask_and_scale=mask_and_scale,
                level=level,
                config=config,
                **options,
            )
        return xr.DataTree.from_dict(nodes)
