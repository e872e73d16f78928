"""Run by tests/python/test_hdf5_remote.py with the python of its venv
(h5py, netCDF4, kerchunk from PyPI), never imported by the test process.

``python hdf5_remote_writer.py OUTDIR`` writes, under OUTDIR:

- ``nc/cube.nc``: NetCDF4, a (time, y, x) float32 variable chunked with
  deflate + shuffle, a contiguous int16 variable, coordinate variables;
- ``nc/userblock.h5``: h5py, chunked (gzip + shuffle) and contiguous
  datasets after a 512-byte user block;
- ``days/day0.nc`` .. ``day2.nc``: one time step each (unlimited
  ``time``), to be joined along it;
- ``kinds/<kind>.h5``: one chunked dataset per chunk index kind of
  HDF5 1.10 (``btree1``: libver earliest; with the 1.10 format
  ``fixed``, ``extensible``, ``btree2``, ``single``, ``implicit``), and
  ``sparse.h5`` (3 of 1200 chunks written), each next to kerchunk
  ``SingleHdf5ToZarr``'s references (inline threshold 0) as
  ``<name>.kerchunk.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import h5py
import netCDF4
import numpy as np
from kerchunk.hdf import SingleHdf5ToZarr

#: The newest file format libhdf5 1.10 reads (h5py's "latest" is HDF5 2.0's).
V110 = ("v110", "v110")


def ramp(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    grid = np.indices(shape).astype(np.float64)
    weights = np.array([1000.0, 37.0, 3.0][-len(shape):]).reshape((-1,) + (1,) * len(shape))
    return ((grid * weights).sum(axis=0) + rng.integers(0, 5, shape)).astype(dtype)


def write_cube(path: Path) -> None:
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("time", None)
        nc.createDimension("y", 40)
        nc.createDimension("x", 60)
        time = nc.createVariable("time", "f8", ("time",))
        time.units = "days since 2000-01-01"
        time[:] = [0, 1, 2]
        nc.createVariable("y", "f8", ("y",))[:] = np.linspace(59.5, 20.5, 40)
        nc.createVariable("x", "f8", ("x",))[:] = np.linspace(0.5, 59.5, 60)
        t = nc.createVariable("t", "f4", ("time", "y", "x"), zlib=True, shuffle=True,
                              chunksizes=(1, 16, 16), fill_value=-999.0)
        t.units = "K"
        t[:] = ramp("f4", (3, 40, 60), 1) / 8
        c = nc.createVariable("c", "i2", ("y", "x"), contiguous=True, fill_value=-1)
        c[:] = ramp("i2", (40, 60), 2)


def write_day(path: Path, day: int) -> None:
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("time", None)
        nc.createDimension("lat", 20)
        nc.createDimension("lon", 30)
        time = nc.createVariable("time", "f8", ("time",))
        time.units = "days since 2021-01-01"
        time[:] = [day]
        nc.createVariable("lat", "f4", ("lat",))[:] = np.linspace(9.5, -9.5, 20)
        nc.createVariable("lon", "f4", ("lon",))[:] = np.linspace(0.5, 29.5, 30)
        temp = nc.createVariable("temp", "f4", ("time", "lat", "lon"), zlib=True, shuffle=True,
                                 chunksizes=(1, 10, 10))
        temp[:] = ramp("f4", (1, 20, 30), 10 + day)


def write_user_block(path: Path) -> None:
    with h5py.File(path, "w", userblock_size=512) as f:
        f.create_dataset("chunked", data=ramp("f4", (60, 80), 3), chunks=(16, 32),
                         compression="gzip", shuffle=True)
        f.create_dataset("contiguous", data=ramp("i4", (30, 20), 4))


def write_kinds(out: Path) -> list[Path]:
    data = ramp("i4", (50, 70), 5)
    kw = dict(data=data, chunks=(8, 8), compression="gzip", shuffle=True)
    with h5py.File(out / "btree1.h5", "w", libver="earliest") as f:
        f.create_dataset("v", **kw)
    with h5py.File(out / "fixed.h5", "w", libver=V110) as f:
        f.create_dataset("v", **kw)
    with h5py.File(out / "extensible.h5", "w", libver=V110) as f:
        f.create_dataset("v", maxshape=(None, 70), **kw)
    with h5py.File(out / "btree2.h5", "w", libver=V110) as f:
        f.create_dataset("v", maxshape=(None, None), **kw)
    with h5py.File(out / "single.h5", "w", libver=V110) as f:
        f.create_dataset("v", data=data, chunks=(50, 70), compression="gzip")
    with h5py.File(out / "implicit.h5", "w", libver=V110) as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((8, 8))
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        space = h5py.h5s.create_simple((50, 70))
        h5py.h5d.create(f.id, b"v", h5py.h5t.STD_I32LE, space, dcpl=dcpl)
        f["v"][:] = data
    with h5py.File(out / "sparse.h5", "w") as f:
        v = f.create_dataset("v", shape=(300, 400), dtype="i4", chunks=(10, 10), fillvalue=-1,
                             compression="gzip")
        v[0:10, 0:10] = data[:10, :10]
        v[150:160, 200:210] = data[10:20, :10]
        v[290:300, 390:400] = data[20:30, :10]
    return sorted(out.glob("*.h5"))


def kerchunk_refs(path: Path) -> None:
    with open(path, "rb") as f:
        refs = SingleHdf5ToZarr(f, str(path), inline_threshold=0).translate()
    Path(f"{path}.kerchunk.json").write_text(json.dumps(refs))


def main(out: Path) -> None:
    for sub in ["nc", "days", "kinds"]:
        (out / sub).mkdir(parents=True, exist_ok=True)
    write_cube(out / "nc" / "cube.nc")
    write_user_block(out / "nc" / "userblock.h5")
    for day in range(3):
        write_day(out / "days" / f"day{day}.nc", day)
    for path in write_kinds(out / "kinds"):
        kerchunk_refs(path)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
