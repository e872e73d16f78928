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
- ``plugins.h5``: datasets with the Zstandard (32015) and Blosc (32001)
  plugin filters, their chunks encoded by numcodecs and written directly
  (h5py has no such plugins: the filters are declared optional);
- ``scaleoffset.h5``, ``zfp.h5``: a dataset each with a filter chunkref
  has no codec for (HDF5 scale-offset, the ZFP plugin); ``masked.h5``: a
  chunk whose filter mask says its Zstandard filter was skipped;
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
import h5py.h5pl
import netCDF4
import numcodecs
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


def plugin_dataset(f: h5py.File, name: str, filter_id: int, values: tuple, data: np.ndarray,
                   chunks: tuple[int, int], encode, masks: dict | None = None) -> None:
    """A chunked dataset declaring plugin filter ``filter_id`` (optional,
    as h5py cannot run it), each chunk written as ``encode`` makes it
    (``masks``: chunk offset -> filter mask, stored as is)."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    dcpl.set_filter(filter_id, h5py.h5z.FLAG_OPTIONAL, values)
    space = h5py.h5s.create_simple(data.shape)
    dsid = h5py.h5d.create(f.id, name.encode(), h5py.h5t.STD_I16LE, space, dcpl=dcpl)
    rows, cols = chunks
    for y in range(0, data.shape[0], rows):
        for x in range(0, data.shape[1], cols):
            block = np.ascontiguousarray(data[y : y + rows, x : x + cols]).tobytes()
            mask = (masks or {}).get((y, x), 0)
            dsid.write_direct_chunk((y, x), block if mask else encode(block), mask)


def without_plugins() -> None:
    """Empty HDF5's plugin search path: netCDF4 points it at the plugins
    of its own wheel, built for another libhdf5, which fail in h5py's."""
    while h5py.h5pl.size():
        h5py.h5pl.remove(0)


def write_plugins(path: Path) -> None:
    without_plugins()
    data = ramp("<i2", (40, 60), 14)
    with h5py.File(path, "w") as f:
        plugin_dataset(f, "zstd", 32015, (3,), data, (20, 30), numcodecs.Zstd(level=3).encode)
        blosc = numcodecs.Blosc(cname="zstd", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
        plugin_dataset(f, "blosc", 32001, (2, 2, 2, 1200, 5, 1, 5), data, (20, 30), blosc.encode)


def write_refused(outdir: Path) -> None:
    with h5py.File(outdir / "scaleoffset.h5", "w") as f:
        f.create_dataset("ok", data=ramp("f4", (10, 10), 11), chunks=(5, 5))
        packed = f.create_group("packed")
        packed.create_dataset("so", data=ramp("f4", (20, 20), 12), chunks=(10, 10),
                              scaleoffset=2)
    with h5py.File(outdir / "zfp.h5", "w") as f:
        plugin_dataset(f, "squeezed", 32013, (0,), ramp("<i2", (20, 20), 13), (10, 10),
                       lambda block: block)
    with h5py.File(outdir / "masked.h5", "w") as f:
        plugin_dataset(f, "partly", 32015, (3,), ramp("<i2", (20, 20), 15), (10, 10),
                       numcodecs.Zstd(level=3).encode, masks={(10, 0): 1})


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
    write_plugins(outdir / "plugins.h5")
    write_refused(outdir)
    for name in ["plain.h5", "userblock.h5"]:
        save_expected(outdir / name, outdir / "expected" / name)
        kerchunk_refs(outdir / name)
    expected = outdir / "expected" / "plugins.h5"
    expected.mkdir(parents=True)
    for name in ["zstd", "blosc"]:
        np.save(expected / f"{name}.npy", ramp("<i2", (40, 60), 14))
    for path in netcdf:
        kerchunk_refs(path)


if __name__ == "__main__":
    main(Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]])
