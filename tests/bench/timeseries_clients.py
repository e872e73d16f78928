"""The readers compared by tests/bench/timeseries_bench.py, one query per
process::

    PYTHON timeseries_clients.py TOOL QUERY CONFIG.json

TOOL is ``chunkref``, ``chunkref-py`` (the wheel, in the peers' venv),
``chunkref-rio`` (the plugin through rioxarray over Debian's rasterio),
``gdal`` (``/vsicurl/`` with a thread pool),
``async-tiff``, ``virtualizarr`` (VirtualiZarr + virtual-tiff parsers into
an Icechunk repository, read back through Zarr), ``rasteret``, ``odc-stac`` or
``stackstac`` (the STAC loaders: the saved search's items through rasterio's
wheel over ``/vsicurl/``, dask with 32 threads). QUERY is
``index``, ``pixel``, ``pixel-locinfo``, ``pixel-bands``, ``pixel-rasterio``,
``pixel-terra``, ``window``,
``tile``, ``full`` or ``mean`` (the mean over the dates of a window, with
dask: chunkref-py, virtualizarr and the STAC loaders). CONFIG holds the server's URL, the file names, the
query's dates and window and where to write. Each run saves what it read
as ``(dates, rows, columns)`` Int16 in CONFIG's ``out`` (``.npy``) and
prints one JSON line ``{"seconds": ..., "peak_mib": ...}`` (the process's
peak resident memory, imports included): the time from after the imports
(:data:`IMPORTS`) to the last pixel, the dataset's open included. For a
command (``gdallocationinfo``), that is its wall time less GDAL's start-up
(loading its libraries and registering the drivers, the command's
"imports"): the least of three ``gdallocationinfo --version`` run just
before it, printed too (``"startup"``).

chunkref and gdal run in Debian's python (osgeo); the STAC loaders in the
venv build/stac-peers-venv (rasterio's wheel bundles a GDAL of its own);
the others in the venv build/ts-peers-venv, where each imports only its
own stack.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: Requests the thread-pool and asyncio clients keep in flight at once.
WORKERS = 32


def _window(cfg: dict) -> tuple[int, int, int, int]:
    return tuple(cfg["window"])  # x, y, width, height


def _dates(cfg: dict) -> range:
    first, last = cfg["dates"]
    return range(first, last + 1)


# --------------------------------------------------------------------------
# chunkref, through GDAL
# --------------------------------------------------------------------------

#: terra's read of one cell on every date (arguments: index, column, row);
#: prints the values, then the seconds from opening to the last value.
TERRA_PIXEL = """
suppressMessages(library(terra))
a <- commandArgs(TRUE)
start <- Sys.time()
r <- rast(a[1])
v <- unlist(r[cellFromRowCol(r, as.integer(a[3]) + 1, as.integer(a[2]) + 1)])
cat(v, format(as.numeric(Sys.time() - start, units = "secs"), digits = 6), "\n")
"""


@dataclass
class Timed:
    """What a client read, with its own measure of the time it took (a
    client in another language, whose start-up the wrapper cannot time)."""

    array: np.ndarray
    seconds: float


def chunkref(query: str, cfg: dict) -> np.ndarray | Timed | None:
    from osgeo import gdal

    gdal.UseExceptions()
    stack = cfg["stac_stack"] if "stac" in query else cfg["stack"]
    x, y, w, h = _window(cfg)
    dates = _dates(cfg)
    if query == "stac-index":
        host = cfg["base"].split("/")[2]
        subprocess.run(
            [cfg["chunkref"], "index", "--stac", cfg["stac_api"], "--asset", "data",
             "--collections", "ts", "--allow-host", host, "-o", stack],
            check=True, capture_output=True,
        )
        return None
    if query == "index":
        subprocess.run(
            [cfg["chunkref"], "index", "--stack", "--datetime-from-name",
             "--from-list", cfg["urls"], "-o", stack],
            check=True, capture_output=True,
        )
        return None
    if query == "pixel-locinfo":
        # The clock started after locinfo_startup() (see main).
        done = subprocess.run(
            ["gdallocationinfo", "-valonly", stack, str(x), str(y)],
            check=True, capture_output=True, text=True,
        )
        return np.array([int(v) for v in done.stdout.split()], np.int16).reshape(-1, 1, 1)
    if query == "pixel-terra":
        # R's terra through Debian's GDAL (r-cran-terra), timed inside R
        # after library(terra), as the Python clients are after their imports.
        done = subprocess.run(["Rscript", "-e", TERRA_PIXEL, stack, str(x), str(y)],
                              check=True, capture_output=True, text=True)
        *values, seconds = done.stdout.split()
        return Timed(np.array([int(v) for v in values], np.int16).reshape(-1, 1, 1),
                     float(seconds))
    if query == "pixel-rasterio":
        # Debian's rasterio (its GDAL loads the plugin; a wheel's cannot),
        # imported before the clock started (QUERY_IMPORTS).
        import rasterio
        from rasterio.windows import Window

        with rasterio.open(stack) as src:
            return src.read(window=Window(x, y, 1, 1)).reshape(-1, 1, 1)
    if query == "window":
        ds = gdal.OpenEx(stack, open_options=[f"TIME_START={cfg['iso'][dates[0]]}",
                                              f"TIME_END={cfg['iso'][dates[-1]]}"])
        return ds.ReadAsArray(x, y, w, h).reshape(len(dates), h, w)
    ds = gdal.Open(stack)
    if query in ("pixel", "pixel-stac"):
        return ds.ReadAsArray(x, y, 1, 1).reshape(-1, 1, 1)
    if query == "pixel-bands":
        values = [ds.GetRasterBand(b + 1).ReadRaster(x, y, 1, 1) for b in dates]
        return np.frombuffer(b"".join(values), np.int16).reshape(-1, 1, 1)
    # tile, full: one date
    band = ds.GetRasterBand(dates[0] + 1)
    return band.ReadAsArray(x, y, w, h)[None]


def chunkref_rioxarray(query: str, cfg: dict) -> np.ndarray | None:
    """The plugin through rioxarray over Debian's rasterio and GDAL (the
    venv build/dask-venv of tests/python/test_dask_clients.py): lazy
    indexing for the reads, dask (32 threads, the index's 512 x 512 chunks)
    for the mean."""
    import rioxarray

    stack = cfg["stack"]
    x, y, w, h = _window(cfg)
    dates = _dates(cfg)
    if query == "mean":
        import dask

        cube = rioxarray.open_rasterio(stack, chunks={"band": 16, "y": 512, "x": 512},
                                       lock=False, cache=False)
        mean = cube[dates[0]:dates[-1] + 1, y:y + h, x:x + w].mean("band")
        with dask.config.set(scheduler="threads", num_workers=WORKERS):
            return mean.values[None]
    if query == "window":
        # rasterio hands keyword arguments to GDAL as open options.
        cube = rioxarray.open_rasterio(stack, cache=False, TIME_START=cfg["iso"][dates[0]],
                                       TIME_END=cfg["iso"][dates[-1]])
        return cube[:, y:y + h, x:x + w].values
    cube = rioxarray.open_rasterio(stack, cache=False)
    if query.startswith("pixel"):
        return cube[:, y:y + 1, x:x + 1].values
    return cube[dates[0]:dates[0] + 1, y:y + h, x:x + w].values


# --------------------------------------------------------------------------
# GDAL's own GTiff driver through /vsicurl/, one file per thread
# --------------------------------------------------------------------------

def gdal_vsicurl(query: str, cfg: dict) -> np.ndarray | None:
    from concurrent.futures import ThreadPoolExecutor

    from osgeo import gdal

    gdal.UseExceptions()
    gdal.SetConfigOption("GDAL_DISABLE_READDIR_ON_OPEN", "EMPTY_DIR")
    gdal.SetConfigOption("CPL_VSIL_CURL_ALLOWED_EXTENSIONS", ".tif")
    gdal.SetConfigOption("GDAL_NUM_THREADS", "ALL_CPUS")
    x, y, w, h = _window(cfg)
    if query.startswith("pixel"):
        w = h = 1

    def one(date: int) -> np.ndarray:
        ds = gdal.Open("/vsicurl/" + cfg["base"] + cfg["names"][date])
        band = ds.GetRasterBand(1)
        return band.ReadAsArray(x, y, w, h)

    dates = _dates(cfg)
    if len(dates) == 1:
        return one(dates[0])[None]
    with ThreadPoolExecutor(WORKERS) as pool:
        return np.stack(list(pool.map(one, dates)))


# --------------------------------------------------------------------------
# async-tiff (obstore's HTTPStore), every file opened and read concurrently
# --------------------------------------------------------------------------

def _tiles_of(x: int, y: int, w: int, h: int, tile: int) -> list[tuple[int, int]]:
    return [(tx, ty)
            for ty in range(y // tile, (y + h - 1) // tile + 1)
            for tx in range(x // tile, (x + w - 1) // tile + 1)]


def async_tiff(query: str, cfg: dict) -> np.ndarray | None:
    import asyncio

    from async_tiff import TIFF
    from obstore.store import HTTPStore

    x, y, w, h = _window(cfg)
    if query.startswith("pixel"):
        w = h = 1
    tile = cfg["tile"]
    wanted = _tiles_of(x, y, w, h, tile)
    names = cfg["names"]

    async def run() -> np.ndarray | None:
        store = HTTPStore.from_url(cfg["base"], client_options={"allow_http": True})
        # index-all: every header asked for at once (no gate).
        gate = asyncio.Semaphore(len(names) if query == "index-all" else WORKERS)
        if query in ("index", "index-all"):  # headers only: async-tiff writes no index
            async def header(name: str) -> None:
                async with gate:
                    tiff = await TIFF.open(name, store=store)
                    tiff.ifd(0)
            await asyncio.gather(*(header(n) for n in names))
            return None

        async def one(date: int) -> np.ndarray:
            async with gate:
                tiff = await TIFF.open(names[date], store=store)
                tiles = await tiff.fetch_tiles(wanted, 0)
            out = np.empty((h, w), np.int16)
            for t in tiles:
                tx0, ty0 = t.x * tile, t.y * tile
                a = np.asarray(await t.decode())[:, :, 0].view(np.int16)
                ox0, oy0 = max(x, tx0), max(y, ty0)
                ox1, oy1 = min(x + w, tx0 + tile), min(y + h, ty0 + tile)
                out[oy0 - y:oy1 - y, ox0 - x:ox1 - x] = a[oy0 - ty0:oy1 - ty0, ox0 - tx0:ox1 - tx0]
            return out

        return np.stack(await asyncio.gather(*(one(d) for d in _dates(cfg))))

    return asyncio.run(run())


# --------------------------------------------------------------------------
# VirtualiZarr + virtual-tiff -> Icechunk, read through Zarr
# --------------------------------------------------------------------------

def _icechunk_repo(cfg: dict, create: bool):
    import icechunk

    base = cfg["base"]
    storage = icechunk.local_filesystem_storage(str(Path(cfg["work"]) / "icechunk"))
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(icechunk.VirtualChunkContainer(base, icechunk.http_store()))
    access = icechunk.containers_credentials({base: icechunk.Credentials.HttpAccess()})
    if create:
        return icechunk.Repository.create(storage, config, authorize_virtual_chunk_access=access)
    return icechunk.Repository.open(storage, config, authorize_virtual_chunk_access=access)


def virtualizarr(query: str, cfg: dict) -> np.ndarray | None:
    import warnings

    warnings.simplefilter("ignore")  # virtual-tiff's codecs are not Zarr v3 spec
    x, y, w, h = _window(cfg)
    if query == "index":
        import shutil
        from concurrent.futures import ThreadPoolExecutor

        from obspec_utils.registry import ObjectStoreRegistry
        from obstore.store import HTTPStore
        from virtual_tiff import VirtualTIFF
        from virtualizarr import open_virtual_mfdataset

        base = cfg["base"]
        shutil.rmtree(Path(cfg["work"]) / "icechunk", ignore_errors=True)
        registry = ObjectStoreRegistry(
            {base: HTTPStore.from_url(base, client_options={"allow_http": True})})
        with ThreadPoolExecutor(WORKERS) as pool:
            vds = open_virtual_mfdataset(
                [base + n for n in cfg["names"]], registry=registry,
                parser=VirtualTIFF(ifd=0), concat_dim="time", combine="nested",
                coords="minimal", compat="override", parallel=pool)
        session = _icechunk_repo(cfg, create=True).writable_session("main")
        vds.vz.to_icechunk(session.store)
        session.commit("the time stack")
        return None
    import virtual_tiff  # noqa: F401  (registers the TIFF codecs with Zarr)
    import zarr

    session = _icechunk_repo(cfg, create=False).readonly_session("main")
    first, last = cfg["dates"]
    if query == "mean":
        import xarray as xr

        ds = xr.open_zarr(session.store, consolidated=False, chunks={})
        cube = ds["0"][first:last + 1, y:y + h, x:x + w]
        return cube.mean(cube.dims[0]).values[None]
    array = zarr.open_group(session.store, mode="r")["0"]
    if query.startswith("pixel"):
        w = h = 1
    return array[first:last + 1, y:y + h, x:x + w]


def rasteret(query: str, cfg: dict) -> np.ndarray | None:
    import rasteret as rt
    from obstore.store import HTTPStore
    from rasteret.cloud import ObstoreBackend

    base = cfg["base"]
    backend = ObstoreBackend(HTTPStore.from_url(base, client_options={"allow_http": True}),
                             url_prefix=base)
    workspace = Path(cfg["work"]) / "rasteret"
    ids = [Path(n).stem for n in cfg["names"]]
    if query == "stac-index":
        # Its defaults, as chunkref's (max_concurrent=50).
        rt.build_from_stac(name="ts", stac_api=cfg["stac_api"].removesuffix("/search"),
                           collection="ts", band_map={"B1": "data"}, backend=backend,
                           workspace_dir=workspace / "stac", force=True)
        return None
    if query == "index":
        import datetime

        import pyarrow as pa
        import pyproj
        import shapely

        x0, y0, res, size = cfg["geo"]
        corners_x = [x0, x0 + res * size, x0 + res * size, x0]
        corners_y = [y0, y0, y0 - res * size, y0 - res * size]
        lon, lat = pyproj.Transformer.from_crs(cfg["epsg"], 4326, always_xy=True).transform(
            corners_x, corners_y)
        footprint = shapely.to_wkb(shapely.Polygon(list(zip(lon, lat))))
        days = [datetime.datetime.fromisoformat(d).replace(tzinfo=datetime.timezone.utc)
                for d in cfg["iso"]]
        table = pa.table({
            "id": ids,
            "datetime": pa.array(days, pa.timestamp("us", tz="UTC")),
            "geometry": pa.array([footprint] * len(ids), pa.binary()),
            "href": [base + n for n in cfg["names"]],
        })
        rt.build_from_table(table, name="ts", href_column="href", band_index_map={"B1": 0},
                            enrich_cog=True, backend=backend, workspace_dir=workspace,
                            force=True, max_concurrent=WORKERS)
        return None
    collection = rt.load(workspace / "ts_records", name="ts")
    x, y, w, h = _window(cfg)
    if query.startswith("pixel"):
        w = h = 1
    x0, y0, res, _ = cfg["geo"]
    bounds = (x0 + x * res, y0 - (y + h) * res, x0 + (x + w) * res, y0 - y * res)
    first, last = cfg["dates"]
    out = collection.read_window(record_ids=ids[first:last + 1], bounds=bounds, res=(res, res),
                                 bands=["B1"], group_by="id", backend=backend,
                                 max_concurrent=WORKERS)
    return out.reshape(last - first + 1, h, w)


# --------------------------------------------------------------------------
# STAC loaders (odc-stac, stackstac): rasterio's wheel over /vsicurl/,
# one dask task per 512 x 512 chunk and date, 32 threads
# --------------------------------------------------------------------------

#: GDAL settings these loaders' users set for COGs over HTTP (odc-stac's
#: ``configure_rio(cloud_defaults=True)`` sets the same first two).
STAC_LOADER_GDAL = {"GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
                    "GDAL_HTTP_MAX_RETRY": "3", "VSI_CACHE": "TRUE"}


def _stac_window(cfg: dict) -> tuple[list, tuple[int, int, int, int]]:
    """The items of the query's dates (the search's result, saved once, as
    a user keeps it) and its window, 1 x 1 for the pixel queries."""
    import pystac

    first, last = cfg["dates"]
    items = list(pystac.ItemCollection.from_file(cfg["stac_items"]))[first:last + 1]
    x, y, w, h = _window(cfg)
    if cfg["query"].startswith("pixel"):
        w = h = 1
    return items, (x, y, w, h)


def _compute(cube, query: str) -> np.ndarray:
    """The window's values (the mean over time for ``mean``) with dask's
    threaded scheduler and :data:`WORKERS` threads."""
    import dask

    if query == "mean":
        cube = cube.mean(cube.dims[0])
    with dask.config.set(scheduler="threads", num_workers=WORKERS):
        values = np.asarray(cube.values)
    return values[None] if query == "mean" else values


def odc_stac(query: str, cfg: dict) -> np.ndarray | None:
    import odc.stac
    from affine import Affine
    from odc.geo.geobox import GeoBox

    items, (x, y, w, h) = _stac_window(cfg)
    x0, y0, res, _ = cfg["geo"]
    # The window on the files' own grid: nearest resampling reads the
    # pixels unchanged.
    box = GeoBox((h, w), Affine(res, 0, x0 + x * res, 0, -res, y0 - y * res),
                 f"EPSG:{cfg['epsg']}")
    odc.stac.configure_rio(cloud_defaults=True, **STAC_LOADER_GDAL)
    ds = odc.stac.load(items, bands=["data"], geobox=box, chunks={"x": 512, "y": 512},
                       groupby="id", dtype="int16")
    return _compute(ds["data"], query)


def stackstac(query: str, cfg: dict) -> np.ndarray | None:
    import rasterio
    import stackstac

    items, (x, y, w, h) = _stac_window(cfg)
    x0, y0, res, _ = cfg["geo"]
    bounds = (x0 + x * res, y0 - (y + h) * res, x0 + (x + w) * res, y0 - y * res)
    env = stackstac.DEFAULT_GDAL_ENV.updated(always=STAC_LOADER_GDAL)
    cube = stackstac.stack(items, assets=["data"], epsg=cfg["epsg"], resolution=res,
                           bounds=bounds, snap_bounds=False, chunksize=512, dtype="int16",
                           fill_value=np.int16(-32768), rescale=False, gdal_env=env,
                           resampling=rasterio.enums.Resampling.nearest)
    return _compute(cube[:, 0], query)


# --------------------------------------------------------------------------
# chunkref's Python face (the wheel: no GDAL in the process)
# --------------------------------------------------------------------------

def chunkref_python(query: str, cfg: dict) -> np.ndarray | None:
    import chunkref as cr

    stack = cfg["stack"]
    x, y, w, h = _window(cfg)
    dates = _dates(cfg)
    if query == "mean":
        import xarray as xr
        from chunkref.xarray_backend import ChunkrefBackendEntrypoint

        ds = xr.open_dataset(stack, engine=ChunkrefBackendEntrypoint, chunks={},
                             mask_and_scale=False)
        cube = ds.band_data[dates[0]:dates[-1] + 1, y:y + h, x:x + w]
        return cube.mean("time").values[None]
    if query == "window":
        ds = cr.open(stack, time_start=cfg["iso"][dates[0]], time_end=cfg["iso"][dates[-1]])
        return ds.read(((y, y + h), (x, x + w)))
    ds = cr.open(stack)
    if query.startswith("pixel"):
        return ds.read(((y, y + 1), (x, x + 1)))
    return ds.read(((y, y + h), (x, x + w)), bands=dates[0] + 1)[None]


#: What each tool imports, done before the clock starts.
IMPORTS = {
    "chunkref": ["osgeo.gdal", "osgeo.gdal_array"],
    "gdal": ["osgeo.gdal", "osgeo.gdal_array"],
    "chunkref-py": ["chunkref"],
    "chunkref-rio": ["rioxarray", "rasterio", "xarray", "dask.array"],
    "async-tiff": ["async_tiff", "obstore.store"],
    "virtualizarr": ["icechunk", "zarr", "xarray", "virtual_tiff", "virtualizarr",
                     "obspec_utils.registry", "obstore.store"],
    "rasteret": ["rasteret", "rasteret.cloud", "obstore.store", "pyarrow", "pyproj", "shapely"],
    "odc-stac": ["odc.stac", "odc.geo.geobox", "pystac", "rasterio", "xarray", "dask.array"],
    "stackstac": ["stackstac", "pystac", "rasterio", "xarray", "dask.array"],
}
#: Imported too, before the clock starts, for these queries (the client's
#: own stack, as the peers' imports are).
QUERY_IMPORTS = {"pixel-rasterio": ["rasterio", "rasterio.windows"],
                 "mean": ["xarray", "dask.array"]}

TOOLS = {
    "chunkref": chunkref,
    "gdal": gdal_vsicurl,
    "chunkref-py": chunkref_python,
    "chunkref-rio": chunkref_rioxarray,
    "async-tiff": async_tiff,
    "virtualizarr": virtualizarr,
    "rasteret": rasteret,
    "odc-stac": odc_stac,
    "stackstac": stackstac,
}


def locinfo_startup() -> float:
    """GDAL's start-up in ``gdallocationinfo``: the least wall time of
    three ``gdallocationinfo --version`` (libraries loaded, drivers and
    plugins registered, nothing opened)."""
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run(["gdallocationinfo", "--version"], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    tool, query, config = sys.argv[1:4]
    cfg = json.loads(Path(config).read_text())
    for module in IMPORTS[tool] + QUERY_IMPORTS.get(query, []):
        importlib.import_module(module)
    startup = locinfo_startup() if query == "pixel-locinfo" else 0.0
    start = time.perf_counter()
    out = TOOLS[tool](query, cfg)
    seconds = time.perf_counter() - start - startup
    if isinstance(out, Timed):
        out, seconds = out.array, out.seconds
    if out is not None:
        kind = np.float64 if query == "mean" else np.int16
        np.save(cfg["out"], np.ascontiguousarray(out, kind))
    # VmHWM: this process's own peak (getrusage's ru_maxrss keeps the
    # bench's, the parent that forked it, across exec).
    status = Path("/proc/self/status").read_text()
    peak = int(next(line.split()[1] for line in status.splitlines()
                    if line.startswith("VmHWM:"))) / 1024  # KiB -> MiB
    print(json.dumps({"seconds": seconds, "startup": startup, "peak_mib": peak}))


if __name__ == "__main__":
    main()
