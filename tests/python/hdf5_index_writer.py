"""Run by tests/python/test_hdf5_index.py with the python of its venv
(kerchunk, h5py, netCDF4 from PyPI), never imported by the test process.

``python hdf5_index_writer.py OUTDIR [NETCDF4 FILE ...]`` writes, under
OUTDIR:

- ``plain.h5``: HDF5 written with h5py (no netCDF conventions): nested
  groups with attributes, gzip + shuffle, gzip + fletcher32, big-endian
  integers, a chunked dataset with chunks never written (fill value), a
  contiguous dataset over 4 MiB, a contiguous dataset never written, a 3-D
  int8 cube with partial chunks on every axis, a scalar and a string
  dataset;
- ``userblock.h5``: chunked and contiguous datasets after a 512-byte
  user block;
- ``scaleoffset.h5``, ``lzf.h5``: a dataset each with a filter chunkref
  has no codec for (HDF5 scale-offset, h5py's LZF);
- ``classic.nc``: a NetCDF-3 classic file (not HDF5);
- ``expected/<file>/<dataset>.npy``: every numeric dataset of the HDF5
  files as h5py reads it (``/`` in paths as ``.``);
- ``<file>.kerchunk.json``: kerchunk ``SingleHdf5ToZarr``'s references
  (inline threshold 0) to ``plain.h5``, ``userblock.h5`` and every
  NETCDF4 FILE given.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import h5py
import netCDF4
import numpy as np
from kerchunk.hdf import SingleHdf5ToZarr


def ramp(dtype: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Deterministic values varying along every axis."""
    rng = np.random.default_rng(seed)
    grid = np.indices(shape).astype(np.float64)
    weights = np.array([1000.0, 37.0, 3.0][-len(shape):]).reshape((-1,) + (1,) * len(shape))
    values = (grid * weights).sum(axis=0) + rng.integers(0, 5, shape)
    return values.astype(dtype)


def write_plain(path: Path) -> None:
    with h5py.File(path, "w") as f:
        f.attrs["title"] = "plain hdf5"
        f.attrs["version"] = np.int32(3)
        f.attrs["weights"] = np.array([0.5, 1.5], "f4")
        f.attrs["tags"] = np.array([b"a", b"bc"])
        f.attrs["note"] = "variable-length text"
        grp = f.create_group("grp")
        grp.attrs["kind"] = "group"
        sub = grp.create_group("sub")
        sub.attrs["level"] = np.int64(2)
        gz = grp.create_dataset("gz", data=ramp("f4", (50, 70), 1) * np.float32(0.5),
                                chunks=(16, 16), compression="gzip", compression_opts=6,
                                shuffle=True)
        gz.attrs["units"] = "m"
        gz.attrs["valid_range"] = np.array([0, 5000], "i2")
        f.create_dataset("fl", data=ramp("u2", (50, 70), 2), chunks=(16, 24), fletcher32=True,
                         compression="gzip")
        f.create_dataset("be", data=ramp(">i4", (50, 70), 3) - 700, dtype=">i4", chunks=(20, 20))
        sparse = f.create_dataset("sparse", shape=(50, 70), dtype="i2", chunks=(10, 10),
                                  fillvalue=-5, compression="gzip")
        sparse[0:10, 0:10] = ramp("i2", (10, 10), 4)
        sparse[30:40, 50:60] = ramp("i2", (10, 10), 5)
        f.create_dataset("contig_big", data=ramp("f8", (600, 1000), 6) / 7.0)
        f.create_dataset("unwritten", shape=(30, 40), dtype="f4", fillvalue=7.5)
        f.create_dataset("cube", data=ramp("i1", (3, 40, 50), 7) % 100, dtype="i1",
                         chunks=(2, 16, 16), compression="gzip")
        f.create_dataset("scalar", data=np.float64(2.5))
        f.create_dataset("names", data=np.array([b"x", b"yz"]))
        sub.create_dataset("deep", data=ramp("u1", (20, 30), 8), chunks=(8, 8),
                           compression="gzip", shuffle=True)


def write_user_block(path: Path) -> None:
    with h5py.File(path, "w", userblock_size=512) as f:
        f.create_dataset("chunked", data=ramp("f4", (60, 80), 9), chunks=(16, 32),
                         compression="gzip")
        f.create_dataset("contiguous", data=ramp("i4", (30, 20), 10))


def write_refused(outdir: Path) -> None:
    with h5py.File(outdir / "scaleoffset.h5", "w") as f:
        f.create_dataset("ok", data=ramp("f4", (10, 10), 11), chunks=(5, 5))
        packed = f.create_group("packed")
        packed.create_dataset("so", data=ramp("f4", (20, 20), 12), chunks=(10, 10),
                              scaleoffset=2)
    with h5py.File(outdir / "lzf.h5", "w") as f:
        f.create_dataset("squeezed", data=ramp("i2", (20, 20), 13), chunks=(10, 10),
                         compression="lzf")
    with netCDF4.Dataset(outdir / "classic.nc", "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("x", 4)
        nc.createVariable("v", "f4", ("x",))[:] = np.arange(4)


def save_expected(path: Path, out: Path) -> None:
    """Every numeric dataset of ``path`` as h5py reads it."""
    out.mkdir(parents=True)

    def save(name: str, obj) -> None:
        if isinstance(obj, h5py.Dataset) and obj.dtype.kind in "biuf":
            np.save(out / f"{name.replace('/', '.')}.npy", obj[()])

    with h5py.File(path, "r") as f:
        f.visititems(save)


def kerchunk_refs(path: Path) -> None:
    with open(path, "rb") as f:
        refs = SingleHdf5ToZarr(f, str(path), inline_threshold=0, vlen_encode="leave").translate()
    Path(f"{path}.kerchunk.json").write_text(json.dumps(refs))


def main(outdir: Path, netcdf: list[Path]) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    write_plain(outdir / "plain.h5")
    write_user_block(outdir / "userblock.h5")
    write_refused(outdir)
    for name in ["plain.h5", "userblock.h5"]:
        save_expected(outdir / name, outdir / "expected" / name)
        kerchunk_refs(outdir / name)
    for path in netcdf:
        kerchunk_refs(path)


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
