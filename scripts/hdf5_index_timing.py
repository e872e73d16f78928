"""Times ``chunkref index`` against kerchunk's ``SingleHdf5ToZarr`` on
NetCDF4 files (docs/reference-table.md, "Indexing NetCDF4 / HDF5").

Run with the python of build/hdf5-venv (netCDF4, kerchunk), after
``cargo build --release``:

    build/hdf5-venv/bin/python scripts/hdf5_index_timing.py [WORKDIR] [--chunkref BINARY]

Writes ``grid.nc`` (one 2000 x 2000 float32 variable, 100 x 100 chunks,
deflate + shuffle: 400 chunks), ``cube.nc`` (time, lat, lon float32,
120 x 360 x 720, 1 x 90 x 90 chunks, deflate + shuffle: 3840 chunks) and
``many.nc`` (2000 x 2000 float32 in 25 x 25 chunks: 6400 chunks) and
``lots.nc`` (2000 x 2000 float32 in 5 x 8 chunks: 100 000 chunks; libhdf5
1.10's lookups of chunks by index are linear in the chunk count, so an
indexer using them takes time in its square) in WORKDIR (default: a
temporary directory), then prints the best of five
wall times of each indexer writing Kerchunk JSON: kerchunk in this process
(the ``translate()`` call and ``json.dumps``, imports done), kerchunk as a
command (a fresh python importing kerchunk, as a script would run it) and
the whole ``chunkref index`` command (``--chunkref BINARY`` times another
build, such as one from before a change).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import netCDF4
import numpy as np
from kerchunk.hdf import SingleHdf5ToZarr

REPO = Path(__file__).resolve().parents[1]
CHUNKREF = REPO / "target" / "release" / "chunkref"
RUNS = 5


def write_grid(path: Path, chunks: tuple[int, int] = (100, 100)) -> None:
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.createDimension("y", 2000)
        nc.createDimension("x", 2000)
        var = nc.createVariable("v", "f4", ("y", "x"), zlib=True, shuffle=True,
                                chunksizes=chunks)
        y, x = np.indices((2000, 2000))
        var[:] = (np.sin(y / 50.0) * np.cos(x / 70.0) * 100).astype("f4")


def write_cube(path: Path) -> None:
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        for name, size in [("time", None), ("lat", 360), ("lon", 720)]:
            nc.createDimension(name, size)
        nc.createVariable("time", "f8", ("time",))[:] = np.arange(120)
        nc.createVariable("lat", "f8", ("lat",))[:] = np.linspace(89.75, -89.75, 360)
        nc.createVariable("lon", "f8", ("lon",))[:] = np.linspace(-179.75, 179.75, 720)
        var = nc.createVariable("t", "f4", ("time", "lat", "lon"), zlib=True, shuffle=True,
                                chunksizes=(1, 90, 90))
        lat, lon = np.indices((360, 720))
        for step in range(120):
            var[step] = (np.sin(lat / 30.0 + step) * np.cos(lon / 40.0) * 30).astype("f4")


def best(run) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def kerchunk(source: Path, out: Path) -> None:
    with open(source, "rb") as f:
        refs = SingleHdf5ToZarr(f, str(source), inline_threshold=0).translate()
    out.write_text(json.dumps(refs))


KERCHUNK_COMMAND = """
import json, sys
from kerchunk.hdf import SingleHdf5ToZarr
with open(sys.argv[1], "rb") as f:
    refs = SingleHdf5ToZarr(f, sys.argv[1], inline_threshold=0).translate()
open(sys.argv[2], "w").write(json.dumps(refs))
"""


def kerchunk_command(source: Path, out: Path) -> None:
    subprocess.run([sys.executable, "-c", KERCHUNK_COMMAND, str(source), str(out)], check=True,
                   capture_output=True)


def chunkref(binary: Path, source: Path, out: Path) -> None:
    subprocess.run([str(binary), "index", str(source), "-o", str(out)], check=True,
                   capture_output=True)


def main(workdir: Path, binary: Path) -> None:
    cases = [("grid.nc", write_grid), ("cube.nc", write_cube),
             ("many.nc", lambda path: write_grid(path, (25, 25))),
             ("lots.nc", lambda path: write_grid(path, (5, 8)))]
    for name, write in cases:
        source = workdir / name
        if not source.exists():
            write(source)
        theirs = best(lambda: kerchunk(source, workdir / f"{name}.kerchunk.json"))
        command = best(lambda: kerchunk_command(source, workdir / f"{name}.kerchunk.json"))
        ours = best(lambda: chunkref(binary, source, workdir / f"{name}.chunkref.json"))
        refs = json.loads((workdir / f"{name}.chunkref.json").read_text())["refs"]
        chunks = sum(1 for v in refs.values() if isinstance(v, list))
        print(f"{name}: {chunks} chunk references; kerchunk in process {theirs * 1e3:.1f} ms, "
              f"as a command {command * 1e3:.0f} ms; chunkref index {ours * 1e3:.1f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", nargs="?", type=Path)
    parser.add_argument("--chunkref", type=Path, default=CHUNKREF)
    args = parser.parse_args()
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
        main(args.workdir, args.chunkref)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp), args.chunkref)
