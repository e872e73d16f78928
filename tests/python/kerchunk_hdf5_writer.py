"""Run by tests/python/test_kerchunk_hdf5.py with the python of its venv
(kerchunk, h5py, netCDF4, xarray, zarr from PyPI), never imported by the
test process.

``python kerchunk_hdf5_writer.py OUTDIR`` writes, under OUTDIR:

- NetCDF4 sources written with the netCDF4 package (``cf.nc``, ``utm.nc``,
  ``southup.nc``, ``polar.nc``, ``day0.nc`` .. ``day2.nc``; ``cf.nc`` also
  gains a compact-layout dataset through h5py, which netCDF4 cannot write);
- reference stores made by kerchunk from them: ``SingleHdf5ToZarr`` JSON
  with inline thresholds 0 and 300, ``MultiZarrToZarr`` along ``time``,
  and ``refs_to_dataframe`` Kerchunk Parquet with record sizes 10 and
  100000;
- ``expected/<store>/<array>.npy``: every numeric array of every store as
  fsspec's reference file system + zarr read it (raw stored values);
- ``decoded/<store>/<array>.npy``: the root-level rasters as xarray
  decodes them (masked and scaled) through kerchunk's xarray backend;
- ``manifest.json``: per store, its path, source files, the arrays with
  their attributes, fill value and whether they equal netCDF4's own raw
  read of the sources, and the arrays the writer's stack cannot give as
  numbers (strings, compound); the versions of the packages.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import fsspec
import h5py
import kerchunk
import netCDF4
import numpy as np
import ujson
import xarray
import zarr
from kerchunk.combine import MultiZarrToZarr
from kerchunk.df import refs_to_dataframe
from kerchunk.hdf import SingleHdf5ToZarr

NY, NX = 40, 60  # rows, columns: chunks of 16 x 24 leave partial edge chunks
CHUNK = (16, 24)
WKT_4326 = (
    'GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],'
    'PRIMEM["Greenwich",0],UNIT["degree",0.0174532925199433],AUTHORITY["EPSG","4326"]]'
)
WKT_32633 = (
    'PROJCS["WGS 84 / UTM zone 33N",' + WKT_4326 + ',PROJECTION["Transverse_Mercator"],'
    'PARAMETER["latitude_of_origin",0],PARAMETER["central_meridian",15],'
    'PARAMETER["scale_factor",0.9996],PARAMETER["false_easting",500000],'
    'PARAMETER["false_northing",0],UNIT["metre",1],AXIS["Easting",EAST],'
    'AXIS["Northing",NORTH],AUTHORITY["EPSG","32633"]]'
)


def ramp(dtype: str, seed: int, shape=(NY, NX)) -> np.ndarray:
    """Deterministic values of ``dtype`` varying along both axes (and by
    1000 per step of a leading axis)."""
    rng = np.random.default_rng(seed)
    y, x = np.indices(shape[-2:])
    plane = (y * 37 + x * 3 + rng.integers(0, 5, shape[-2:])).astype(np.float64)
    steps = np.arange(int(np.prod(shape[:-2]))).reshape(shape[:-2] + (1, 1)) * 1000.0
    return (plane + steps).astype(dtype)


def add_axes(nc: netCDF4.Dataset, y: tuple[str, float, float, dict],
             x: tuple[str, float, float, dict]) -> None:
    """Two 1-D coordinate variables over dimensions of their own: each
    (name, first edge, step, attributes), values at the cell centres."""
    for (name, edge, step, atts), size in ((y, NY), (x, NX)):
        nc.createDimension(name, size)
        var = nc.createVariable(name, "f8", (name,))
        var[:] = edge + step * (np.arange(size) + 0.5)
        var.setncatts(atts)


LAT_ATTS = {"standard_name": "latitude", "units": "degrees_north"}
LON_ATTS = {"standard_name": "longitude", "units": "degrees_east"}
Y_ATTS = {"standard_name": "projection_y_coordinate", "units": "m"}
X_ATTS = {"standard_name": "projection_x_coordinate", "units": "m"}


def add_geographic(nc: netCDF4.Dataset) -> None:
    """lat (descending: north-up) / lon coordinates and a latitude_longitude
    grid mapping ``crs`` carrying both ``crs_wkt`` and ``spatial_ref``."""
    add_axes(nc, ("lat", 50.0, -0.25, LAT_ATTS), ("lon", -10.0, 0.25, LON_ATTS))
    crs = nc.createVariable("crs", "i4")
    crs.setncatts({
        "grid_mapping_name": "latitude_longitude",
        "semi_major_axis": 6378137.0,
        "inverse_flattening": 298.257223563,
        "longitude_of_prime_meridian": 0.0,
        "crs_wkt": WKT_4326,
        "spatial_ref": WKT_4326,
    })


def add_time(nc: netCDF4.Dataset, days: list[int]) -> None:
    nc.createDimension("time", None)
    time = nc.createVariable("time", "f8", ("time",))
    time.setncatts({"standard_name": "time", "units": "days since 2020-01-01",
                    "calendar": "standard", "axis": "T"})
    time[:] = np.array(days, dtype="f8")


def add_temperature(nc: netCDF4.Dataset, ntime: int, seed: int) -> None:
    """int16 packed temperature, scale/offset, _FillValue, zlib + shuffle."""
    temp = nc.createVariable("temp", "i2", ("time", "lat", "lon"), zlib=True, shuffle=True,
                             complevel=4, chunksizes=(1, *CHUNK), fill_value=-32767)
    temp.setncatts({"scale_factor": 0.01, "add_offset": 273.15, "units": "K",
                    "long_name": "air temperature", "standard_name": "air_temperature",
                    "grid_mapping": "crs"})
    temp.set_auto_maskandscale(False)
    values = ramp("i2", seed, (ntime, NY, NX))
    values[:, 3:6, 7:11] = -32767  # fill pixels
    temp[:] = values


def write_cf(path: Path) -> None:
    """The many-layouts source (two time steps)."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.setncatts({"Conventions": "CF-1.8", "title": "chunkref kerchunk hdf5 test"})
        add_geographic(nc)
        add_time(nc, [0, 1])
        add_temperature(nc, 2, seed=1)
        precip = nc.createVariable("precip", "f4", ("lat", "lon"), zlib=True, shuffle=False,
                                   chunksizes=CHUNK, fill_value=np.float32("nan"))
        precip.setncatts({"units": "mm", "grid_mapping": "crs"})
        values = ramp("f4", 2) * np.float32(0.125)
        values[10:14, 20:30] = np.nan
        precip[:] = values
        checked = nc.createVariable("checked", "u2", ("lat", "lon"), fletcher32=True,
                                    chunksizes=CHUNK, fill_value=65535)
        checked.grid_mapping = "crs"
        checked[:] = ramp("u2", 3)
        bigend = nc.createVariable("bigend", "i4", ("lat", "lon"), endian="big", zlib=True,
                                   chunksizes=CHUNK, fill_value=-999)
        bigend.grid_mapping = "crs"
        bigend[:] = ramp("i4", 4) - 500
        contig = nc.createVariable("contig", "f8", ("lat", "lon"), contiguous=True)
        contig.grid_mapping = "crs"
        contig[:] = ramp("f8", 5) / 3.0
        # Chunks never written (no HDF5 storage, no reference): read as fill.
        sparse = nc.createVariable("sparse", "i2", ("lat", "lon"), zlib=True,
                                   chunksizes=CHUNK, fill_value=-1)
        sparse.grid_mapping = "crs"
        sparse[0:16, 0:24] = ramp("i2", 8)[0:16, 0:24]
        sparse[20:30, 30:50] = ramp("i2", 9)[20:30, 30:50]
        # 4-D: bands over (time, level), NETCDF_DIM_level and _time.
        nc.createDimension("level", 3)
        level = nc.createVariable("level", "f4", ("level",))
        level.setncatts({"units": "hPa", "positive": "down"})
        level[:] = [1000.0, 850.0, 500.0]
        wind = nc.createVariable("wind", "f4", ("time", "level", "lat", "lon"), zlib=True,
                                 shuffle=True, chunksizes=(1, 1, *CHUNK), fill_value=-999.0)
        wind.setncatts({"units": "m s-1", "grid_mapping": "crs",
                        "standard_name": "wind_speed"})
        wind[:] = ramp("f4", 11, (2, 3, NY, NX)) * np.float32(0.01)
        # A variable in a group, on the root's dimensions and coordinates.
        forecast = nc.createGroup("forecast")
        gust = forecast.createVariable("gust", "f4", ("lat", "lon"), chunksizes=CHUNK,
                                       zlib=True, fill_value=np.float32(-1.0))
        gust.setncatts({"units": "m s-1", "grid_mapping": "/crs"})
        gust[:] = ramp("f4", 12) * np.float32(0.02)
        # Strings are not rasters: a 2-D char array and a 2-D vlen string.
        nc.createDimension("station", 3)
        nc.createDimension("name_len", 8)
        names = nc.createVariable("station_name", "S1", ("station", "name_len"))
        names[:] = netCDF4.stringtochar(np.array(["alpha", "bravo", "charlie"], "S8"))
        nc.createDimension("pair", 2)
        label = nc.createVariable("label", str, ("station", "pair"))
        label[:] = np.array([["north", "n"], ["south-west", "sw"], ["east", "e"]], dtype=object)
        nc.createDimension("row", 8)
        nc.createDimension("col", 12)
    # Compact layout (netCDF4 cannot ask for it): an HDF5 dataset of 96
    # bytes with the row/col dimension scales attached, which netCDF-C reads
    # as a variable.
    with h5py.File(path, "r+") as h5:
        space = h5py.h5s.create_simple((8, 12))
        plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        plist.set_layout(h5py.h5d.COMPACT)
        dsid = h5py.h5d.create(h5.id, b"compact", h5py.h5t.STD_U8LE, space, dcpl=plist)
        compact = h5py.Dataset(dsid)
        compact[...] = ramp("u1", 6, (8, 12))
        compact.dims[0].attach_scale(h5["row"])
        compact.dims[1].attach_scale(h5["col"])


def write_utm(path: Path) -> None:
    """A projected source: x/y coordinates (y descending) and a
    transverse_mercator grid mapping variable named ``spatial_ref`` whose
    WKT is in its ``spatial_ref`` attribute only."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        add_axes(nc, ("y", 5_600_000.0, -30.0, Y_ATTS), ("x", 400_000.0, 30.0, X_ATTS))
        crs = nc.createVariable("spatial_ref", "i4")
        crs.setncatts({
            "grid_mapping_name": "transverse_mercator",
            "longitude_of_central_meridian": 15.0,
            "latitude_of_projection_origin": 0.0,
            "scale_factor_at_central_meridian": 0.9996,
            "false_easting": 500000.0,
            "false_northing": 0.0,
            "spatial_ref": WKT_32633,
        })
        band = nc.createVariable("elevation", "f4", ("y", "x"), zlib=True, shuffle=True,
                                 chunksizes=CHUNK, fill_value=np.float32(-9999.0))
        band.setncatts({"units": "m", "grid_mapping": "spatial_ref"})
        values = ramp("f4", 7) * np.float32(0.5)
        values[30:, 50:] = -9999.0
        band[:] = values
        # A compound variable: not a raster.
        nc.createDimension("site", 2)
        nc.createDimension("probe", 3)
        obs_t = nc.createCompoundType(np.dtype([("depth", "<f4"), ("count", "<i4")]), "obs_t")
        obs = nc.createVariable("obs", obs_t, ("site", "probe"))
        obs[:] = np.array([[(1.5, 1), (2.5, 2), (3.5, 3)], [(4.5, 4), (5.5, 5), (6.5, 6)]],
                          dtype=obs_t.dtype)


def write_south_up(path: Path) -> None:
    """Latitudes ascending (south-up rows, as many NetCDF files have them),
    a grid mapping with ``crs_wkt`` only."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        add_axes(nc, ("lat", 40.0, 0.25, LAT_ATTS), ("lon", -10.0, 0.25, LON_ATTS))
        crs = nc.createVariable("crs", "i4")
        crs.setncatts({"grid_mapping_name": "latitude_longitude", "crs_wkt": WKT_4326})
        tas = nc.createVariable("tas", "f4", ("lat", "lon"), zlib=True, chunksizes=CHUNK)
        tas.setncatts({"units": "K", "grid_mapping": "crs"})
        tas[:] = ramp("f4", 13)


def write_polar(path: Path) -> None:
    """A polar stereographic grid described by CF parameters alone (no
    WKT), x/y in metres, y descending."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        add_axes(nc, ("y", 200_000.0, -25_000.0, Y_ATTS), ("x", -800_000.0, 25_000.0, X_ATTS))
        crs = nc.createVariable("polar_stereographic", "i4")
        crs.setncatts({
            "grid_mapping_name": "polar_stereographic",
            "straight_vertical_longitude_from_pole": -45.0,
            "latitude_of_projection_origin": 90.0,
            "standard_parallel": 70.0,
            "false_easting": 0.0,
            "false_northing": 0.0,
            "semi_major_axis": 6378137.0,
            "inverse_flattening": 298.257223563,
        })
        ice = nc.createVariable("ice", "u1", ("y", "x"), zlib=True, shuffle=True,
                                chunksizes=CHUNK, fill_value=255)
        ice.setncatts({"units": "percent", "grid_mapping": "polar_stereographic"})
        ice[:] = ramp("u1", 14) % 101


def write_day(path: Path, day: int) -> None:
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.setncatts({"Conventions": "CF-1.8"})
        add_geographic(nc)
        add_time(nc, [day])
        add_temperature(nc, 1, seed=10 + day)


def single(path: Path, inline: int, **options) -> dict:
    """SingleHdf5ToZarr's references to ``path``."""
    with open(path, "rb") as f:
        return SingleHdf5ToZarr(f, str(path), inline_threshold=inline, **options).translate()


def reference_group(store: Path) -> zarr.Group:
    """The store as fsspec's reference file system and zarr open it."""
    fs = fsspec.filesystem("reference", fo=str(store), remote_protocol="file",
                           asynchronous=True)
    return zarr.open_group(zarr.storage.FsspecStore(fs, read_only=True, path=""), mode="r",
                           zarr_format=2)


def expected_arrays(store: Path, out: Path, sources: list[Path]) -> dict:
    """Read every array of ``store`` with fsspec + zarr, save numeric ones
    as .npy, and record whether each equals netCDF4's raw read of the
    sources."""
    out.mkdir(parents=True)
    group = reference_group(store)
    arrays, unreadable = {}, []
    for name in array_paths(store):
        array = group[name]
        attrs = dict(array.attrs)
        if array.dtype.kind not in "biuf":
            unreadable.append(name)
            continue
        values = array[...]
        np.save(out / f"{name.replace('/', '.')}.npy", values)
        raw = netcdf_raw(sources, name)
        arrays[name] = {"shape": list(values.shape), "dtype": values.dtype.str,
                        "same_as_netcdf4": raw.dtype.newbyteorder("=")
                        == values.dtype.newbyteorder("=")
                        and np.array_equal(values, raw, equal_nan=values.dtype.kind == "f"),
                        "attrs": json.loads(json.dumps(attrs, default=str)),
                        "fill_value": None if array.fill_value is None
                        else repr(array.fill_value.item() if hasattr(array.fill_value, "item")
                                  else array.fill_value)}
    return {"arrays": arrays, "unreadable": unreadable}


def save_decoded(store: Path, out: Path, names: list[str]) -> None:
    """Save the root-level rasters of ``store`` as xarray decodes them
    (kerchunk's xarray backend: fill values masked to NaN, scale_factor and
    add_offset applied) to ``out/<name>.npy``."""
    out.mkdir(parents=True)
    with xarray.open_dataset(str(store), engine="kerchunk",
                             storage_options={"remote_protocol": "file"}) as ds:
        for name in names:
            if "/" not in name:
                np.save(out / f"{name}.npy", ds[name].values)


def array_paths(store: Path) -> list[str]:
    """The paths of the store's arrays, from its ``.zarray`` keys (zarr's
    own listing of a reference file system misses arrays in sub-groups)."""
    if store.is_dir():
        keys = json.loads((store / ".zmetadata").read_text())["metadata"]
    else:
        keys = json.loads(store.read_text())["refs"]
    return sorted(k[: -len("/.zarray")] for k in keys if k.endswith("/.zarray"))


def netcdf_raw(sources: list[Path], name: str) -> np.ndarray:
    """The variable's stored values as netCDF4 reads them (no masking, no
    scaling), concatenated along time over several sources."""
    parts = []
    for source in sources:
        with netCDF4.Dataset(source) as nc:
            *groups, leaf = name.split("/")
            for group in groups:
                nc = nc.groups[group]
            var = nc.variables[leaf]
            var.set_auto_maskandscale(False)
            parts.append(np.asarray(var[...]))
            if "time" not in var.dimensions:
                break
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)


def main(outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    cf, utm = outdir / "cf.nc", outdir / "utm.nc"
    south_up, polar = outdir / "southup.nc", outdir / "polar.nc"
    days = [outdir / f"day{d}.nc" for d in range(3)]
    write_cf(cf)
    write_utm(utm)
    write_south_up(south_up)
    write_polar(polar)
    for d, day in enumerate(days):
        write_day(day, d)
    stores: dict[str, tuple[dict, list[Path]]] = {
        # kerchunk drops the fletcher32 variable (an unsupported filter) ...
        "cf-inline0": (single(cf, 0), [cf]),
        # ... or, below unsupported_inline_threshold, inlines it decoded.
        "cf-inline300": (single(cf, 300, unsupported_inline_threshold=100_000), [cf]),
        # The compound fails zarr 3 with the default vlen_encode="embed" (and
        # kerchunk then hangs on the next variable); "leave" keeps it.
        "utm": (single(utm, 0, vlen_encode="leave"), [utm]),
        "southup": (single(south_up, 300), [south_up]),
        "polar": (single(polar, 0), [polar]),
    }
    stores["days"] = (
        MultiZarrToZarr([single(d, 0) for d in days], concat_dims=["time"],
                        identical_dims=["lat", "lon", "crs"]).translate(),
        days,
    )
    manifest = {"versions": {m.__name__: m.__version__ for m in
                             (kerchunk, h5py, netCDF4, xarray, zarr, fsspec, np)}}
    for name, (refs, sources) in list(stores.items()):
        path = outdir / f"{name}.json"
        # The combined store as kerchunk's documentation writes it (ujson,
        # which escapes "/" as "\\/"), the others with the json module.
        path.write_text(ujson.dumps(refs) if name == "days" else json.dumps(refs))
        manifest[name] = {"path": path.name, "sources": [s.name for s in sources]}
    for name, record_size in [("cf-inline300", 10), ("cf-inline300", 100000), ("days", 10)]:
        parq = outdir / f"{name}-rec{record_size}.parq"
        refs_to_dataframe(stores[name][0], str(parq), record_size=record_size)
        manifest[parq.stem] = {"path": parq.name, "sources": manifest[name]["sources"]}
    for name, entry in manifest.items():
        if name == "versions":
            continue
        sources = [outdir / s for s in entry["sources"]]
        entry |= expected_arrays(outdir / entry["path"], outdir / "expected" / name, sources)
        rasters = [a for a, meta in entry["arrays"].items() if len(meta["shape"]) >= 2]
        save_decoded(outdir / entry["path"], outdir / "decoded" / name, rasters)
    (outdir / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
