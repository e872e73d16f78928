#!/usr/bin/python3
"""ChunkRef against GDAL's own kerchunk reader (the Zarr driver's
``ZARR:"/vsikerchunk_json_ref/{INDEX}":/VAR``, GDAL >= 3.11) on the same
Kerchunk JSON references, in one run on one machine.

Fixture (built once under WORKDIR): ``--files`` daily NetCDF4 files of one
``sst(time, lat, lon)`` float32 variable, 720 x 1440, 1 x 180 x 180 chunks,
deflate + shuffle (the layout of netcdf_archive_bench.py), joined into one
time stack by ``chunkref index day*.nc -o stack.json``. Both readers open
that JSON and show one band per time step.

Patterns, each in a fresh process (cold: no block cache), best of
``--runs``, both with ``GDAL_NUM_THREADS=ALL_CPUS``: every step in full,
a 512 x 512 window of every step, one time step in full, and one pixel's
time series. Before timing, each pattern's bytes are compared between the
two readers (they must be identical). Prints a Markdown table.

GDAL's Kerchunk Parquet reader (``/vsikerchunk_parquet_ref/``) needs GDAL's
Parquet driver; the table says so when the GDAL it runs on has none.

Run in an environment whose GDAL is 3.11 or newer (Debian unstable's 3.13:
``scripts/gdal-matrix.sh --shell sid``), after building there::

    GDAL_DRIVER_PATH=build/gdalplugins-sid CHUNKREF_BIN=build/target-sid/release/chunkref \\
        /usr/bin/python3 tests/bench/zarr_kerchunk_bench.py [--files 30] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from osgeo import gdal

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
CHUNKREF = Path(os.environ.get("CHUNKREF_BIN", REPO / "target" / "release" / "chunkref"))

#: Times one read in a fresh process: argv NAME X Y W H BAND (0: every
#: band); prints the seconds for open + read (imports excluded), then the
#: MD5 of the bytes read.
READ = r"""
import hashlib, sys, time
from osgeo import gdal
gdal.UseExceptions()
name, x, y, w, h, band = sys.argv[1], *map(int, sys.argv[2:7])
t = time.perf_counter()
ds = gdal.Open(name)
data = (ds.GetRasterBand(band) if band else ds).ReadRaster(x, y, w, h)
print(time.perf_counter() - t)
print(hashlib.md5(data).hexdigest())
"""

WIDTH, HEIGHT = 1440, 720


def patterns(steps: int) -> dict[str, tuple[int, int, int, int, int]]:
    """Pattern name -> (x, y, w, h, band; 0: every band)."""
    return {
        f"full read ({steps} steps)": (0, 0, WIDTH, HEIGHT, 0),
        f"512x512 window, {steps} steps": (400, 100, 512, 512, 0),
        "one time step": (0, 0, WIDTH, HEIGHT, steps // 2 + 1),
        f"one pixel, {steps} steps": (777, 333, 1, 1, 0),
    }


def build_stack(workdir: Path, files: int) -> Path:
    """The daily files and their time stack index (kept between runs)."""
    from netcdf_archive_bench import write_day

    workdir.mkdir(parents=True, exist_ok=True)
    days = [workdir / f"sst_{d:03d}.nc" for d in range(files)]
    for d, path in enumerate(days):
        if not path.exists():
            write_day(path, d)
    index = workdir / f"stack{files}.json"
    if not index.exists():
        subprocess.run([CHUNKREF, "index", *days, "-o", index], check=True, capture_output=True)
    return index


def run(name: str, pattern: tuple[int, ...], env: dict[str, str]) -> tuple[float, str]:
    cmd = ["/usr/bin/python3", "-c", READ, name, *map(str, pattern)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{name}: {done.stderr.strip()[-400:]}")
    seconds, digest = done.stdout.split()[-2:]
    return float(seconds), digest


def parquet_support() -> str | None:
    """Why GDAL cannot read Kerchunk Parquet here, or None when it can."""
    if gdal.GetDriverByName("Parquet") is None:
        return (f"GDAL {gdal.__version__} here has no Parquet driver, which "
                "/vsikerchunk_parquet_ref/ needs: no Kerchunk Parquet rows")
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=REPO / "build" / "bench" / "zarr-kerchunk")
    args = parser.parse_args()
    if int(gdal.VersionInfo()) < 3110000:
        sys.exit(f"GDAL {gdal.__version__}: the Zarr driver reads kerchunk references from 3.11 on")

    index = build_stack(args.workdir, args.files)
    readers = {
        "ChunkRef": str(index),
        "GDAL Zarr (ZARR:)": f'ZARR:"/vsikerchunk_json_ref/{{{index}}}":/sst',
    }
    env = {**os.environ, "GDAL_NUM_THREADS": "ALL_CPUS"}
    rows = []
    for what, pattern in patterns(args.files).items():
        digests = {reader: run(name, pattern, env)[1] for reader, name in readers.items()}
        if len(set(digests.values())) != 1:
            sys.exit(f"{what}: the readers read different bytes: {digests}")
        best = {reader: min(run(name, pattern, env)[0] for _ in range(args.runs))
                for reader, name in readers.items()}
        rows.append((what, best))
        print(f"{what}: " + ", ".join(f"{k} {v:.3f} s" for k, v in best.items()), file=sys.stderr)

    print(f"GDAL {gdal.__version__}, {args.files} daily files of 720 x 1440 float32 "
          f"(1 x 180 x 180 deflate + shuffle chunks), one Kerchunk JSON; best of {args.runs}, "
          "each a fresh process, GDAL_NUM_THREADS=ALL_CPUS\n")
    print("| pattern | " + " | ".join(readers) + " | ZARR: / ChunkRef |")
    print("|---|" + "---|" * (len(readers) + 1))
    for what, best in rows:
        cells = " | ".join(f"{best[r] * 1000:.0f} ms" for r in readers)
        ratio = best["GDAL Zarr (ZARR:)"] / best["ChunkRef"]
        print(f"| {what} | {cells} | {ratio:.2f} |")
    why = parquet_support()
    if why:
        print(f"\n{why}.")


if __name__ == "__main__":
    main()
