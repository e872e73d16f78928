#!/usr/bin/python3
"""Overviews users build: ``gdaladdo`` on an index against ``gdaladdo`` on
its source GeoTIFF, read side by side in one run.

Fixture (built once under build/bench/ovr/): a 4096 x 4096 x 3 byte tiled
GeoTIFF (DEFLATE, 256 x 256 tiles, pixel-interleaved) without overviews,
its Kerchunk JSON index, and an external ``.ovr`` for each made by
``gdaladdo -ro -r average 2 4 8 16`` with ``COMPRESS_OVERVIEW=DEFLATE``.
Patterns of patterns.py, each in its own process, best of ``--runs``
fresh opens (GDAL_NUM_THREADS=ALL_CPUS for both): ``ov0`` (each band of
overview 0), ``zoom1024`` and ``zoom512`` (whole image to that size, served
by the ``.ovr``), ``tile`` (one 256 x 256 tile of the base). Prints a
Markdown table: ms and the ratio GTiff / ChunkRef (above 1: ChunkRef is
faster). Usage::

    GDAL_DRIVER_PATH=build/gdalplugins tests/bench/ovr_bench.py [--runs 5]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from osgeo import gdal

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import SIZE, picture  # noqa: E402
from patterns import CHUNKREF, chunkref_bench_args, print_side_by_side  # noqa: E402

ROOT = REPO / "build" / "bench" / "ovr"
PATTERNS = ["ov0", "zoom1024", "zoom512", "tile"]


def build() -> tuple[Path, Path]:
    """(the source GeoTIFF, its index), each with its ``.ovr``, built once."""
    ROOT.mkdir(parents=True, exist_ok=True)
    source, index = ROOT / "image.tif", ROOT / "image.json"
    if all(Path(f"{p}.ovr").exists() for p in (source, index)):
        return source, index
    data = picture()
    mem = gdal.GetDriverByName("MEM").Create("", SIZE, SIZE, 3, gdal.GDT_Byte)
    for b in range(3):
        mem.GetRasterBand(b + 1).WriteArray(data[b])
    gdal.Translate(str(source), mem, creationOptions=[
        "TILED=YES", "BLOCKXSIZE=256", "BLOCKYSIZE=256", "COMPRESS=DEFLATE"])
    subprocess.run([CHUNKREF, "index", source, "-o", index], check=True, capture_output=True)
    for path in (source, index):
        subprocess.run(["gdaladdo", "-q", "-ro", "-r", "average", "--config",
                        "COMPRESS_OVERVIEW", "DEFLATE", str(path), "2", "4", "8", "16"],
                       check=True)
    return source, index


def main() -> None:
    args = chunkref_bench_args(__doc__)
    source, index = build()
    sizes = [Path(f"{p}.ovr").stat().st_size for p in (source, index)]
    print(f".ovr bytes: GTiff {sizes[0]:,}, ChunkRef {sizes[1]:,}\n")
    print_side_by_side(source, index, PATTERNS, args.runs, ("GTiff + .ovr", "ChunkRef + .ovr"), 2)


if __name__ == "__main__":
    main()
