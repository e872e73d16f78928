"""Indexing a NetCDF4 archive: ``chunkref index`` joining ``--files`` daily
files into one store, against kerchunk's ``SingleHdf5ToZarr`` on every file
then ``MultiZarrToZarr`` along ``time`` (the kerchunk recipe), in one run.

Run with the python of build/hdf5-venv (netCDF4, kerchunk; made by the
test suite), after ``cargo build --release``; VirtualiZarr (``xr.concat``
of ``open_virtual_dataset`` over every file, then ``to_kerchunk``) runs
with the python of build/icechunk-venv when it is there:

    build/hdf5-venv/bin/python tests/bench/netcdf_archive_bench.py [--files 100] [--workdir DIR]

The archive (built once under build/bench/netcdf/): daily files of one
``sst(time, lat, lon)`` float32 variable, 720 x 1440, 1 x 180 x 180 chunks,
deflate + shuffle (32 chunks a day), plus ``time``, ``lat``, ``lon``
coordinates, as GHRSST-like archives are written. Prints wall seconds
(best of ``--runs``): chunkref as a command (process start included);
kerchunk in this process (imports done, JSON written) and as a command (a
fresh python, as a script runs it); and the ratios.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import netCDF4
import numpy as np

REPO = Path(__file__).resolve().parents[2]
CHUNKREF = REPO / "target" / "release" / "chunkref"

KERCHUNK = r"""
import json, sys
from kerchunk.hdf import SingleHdf5ToZarr
from kerchunk.combine import MultiZarrToZarr
files, out = sys.argv[1:-1], sys.argv[-1]
singles = [SingleHdf5ToZarr(f, inline_threshold=0).translate() for f in files]
refs = MultiZarrToZarr(singles, concat_dims=["time"], identical_dims=["lat", "lon"]).translate()
with open(out, "w") as f:
    json.dump(refs, f)
"""


#: VirtualiZarr's recipe, run with the python of build/icechunk-venv
#: (VirtualiZarr 2.5.1, made by the test suite).
VIRTUALIZARR = r"""
import sys
import xarray as xr
from obspec_utils.registry import ObjectStoreRegistry
from obstore.store import LocalStore
from virtualizarr import open_virtual_dataset
from virtualizarr.parsers import HDFParser
files, out = sys.argv[1:-1], sys.argv[-1]
registry = ObjectStoreRegistry({"file://": LocalStore()})
vds = [open_virtual_dataset(f"file://{f}", registry=registry, parser=HDFParser(),
                            loadable_variables=["time", "lat", "lon"]) for f in files]
combined = xr.concat(vds, dim="time", coords="minimal", compat="override")
combined.vz.to_kerchunk(out, format="json")
"""
VIRTUALIZARR_PYTHON = REPO / "build" / "icechunk-venv" / "bin" / "python"


def write_day(path: Path, day: int) -> None:
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("time", None)
        nc.createDimension("lat", 720)
        nc.createDimension("lon", 1440)
        t = nc.createVariable("time", "f8", ("time",))
        t.units = "days since 2002-06-01"
        t.calendar = "standard"
        t[:] = [day]
        nc.createVariable("lat", "f4", ("lat",))[:] = np.linspace(89.875, -89.875, 720)
        nc.createVariable("lon", "f4", ("lon",))[:] = np.linspace(-179.875, 179.875, 1440)
        sst = nc.createVariable("sst", "f4", ("time", "lat", "lon"), zlib=True, shuffle=True,
                                chunksizes=(1, 180, 180), fill_value=np.float32(-999))
        sst.units = "kelvin"
        lat, lon = np.indices((720, 1440), dtype="f4")
        sst[0] = 285 + 10 * np.sin(lat / 90 + day / 30) * np.cos(lon / 120)


def build(root: Path, files: int) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    paths = [root / f"sst-{d:04d}.nc" for d in range(files)]
    for d, path in enumerate(paths):
        if not path.exists():
            write_day(path, d)
    return paths


def best(runs: int, command: list[str]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=REPO / "build" / "bench" / "netcdf")
    args = parser.parse_args()
    files = [str(p) for p in build(args.workdir, args.files)]
    ours = best(args.runs, [str(CHUNKREF), "index", *files, "-o", str(args.workdir / "ours.json")])
    theirs_cmd = best(args.runs, [sys.executable, "-c", KERCHUNK, *files,
                                  str(args.workdir / "kerchunk.json")])
    from kerchunk.combine import MultiZarrToZarr
    from kerchunk.hdf import SingleHdf5ToZarr
    in_process = []
    for _ in range(args.runs):
        start = time.perf_counter()
        singles = [SingleHdf5ToZarr(f, inline_threshold=0).translate() for f in files]
        refs = MultiZarrToZarr(singles, concat_dims=["time"],
                               identical_dims=["lat", "lon"]).translate()
        (args.workdir / "kerchunk-in-process.json").write_text(json.dumps(refs))
        in_process.append(time.perf_counter() - start)
    theirs = min(in_process)
    virtualizarr = None
    if VIRTUALIZARR_PYTHON.exists():
        virtualizarr = best(args.runs, [str(VIRTUALIZARR_PYTHON), "-c", VIRTUALIZARR, *files,
                                        str(args.workdir / "virtualizarr.json")])
    chunks = len([k for k in json.loads((args.workdir / "ours.json").read_text())["refs"]
                  if k.startswith("sst/") and "/." not in k])
    print(f"{args.files} files, {chunks} sst chunks\n")
    print("| indexer | wall s | chunkref is faster by |")
    print("|---|---|---|")
    print(f"| chunkref index (command) | {ours:.3f} | - |")
    print(f"| kerchunk SingleHdf5ToZarr + MultiZarrToZarr, in process | {theirs:.3f} | "
          f"{theirs / ours:.1f}x |")
    print(f"| the same as a command | {theirs_cmd:.3f} | {theirs_cmd / ours:.1f}x |")
    if virtualizarr is not None:
        print(f"| VirtualiZarr open_virtual_dataset + xr.concat + to_kerchunk, as a command | "
              f"{virtualizarr:.3f} | {virtualizarr / ours:.1f}x |")


if __name__ == "__main__":
    main()
