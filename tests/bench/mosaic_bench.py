#!/usr/bin/python3
"""Mosaic benchmark: a ChunkRef mosaic index against ``gdalbuildvrt``'s VRT
of the same scenes, side by side in one run.

Fixture (built once under build/bench/mosaic/): a 3 x 3 grid of 2048 x 2048
x 3 byte COGs (DEFLATE, 256 x 256 tiles, no overviews) overlapping by 148
pixels, so scene chunks straddle the mosaic's blocks; indexed with
``chunkref index --mosaic`` and built into a VRT with ``gdalbuildvrt``.

Patterns (those of patterns.py, each in its own process, best of
``--runs`` fresh opens): ``full``, ``bands``, ``zoom1024`` (no overviews:
every block), ``window1024`` (across four scenes), ``scanlines`` (512
rows of band 1). GDAL runs with GDAL_NUM_THREADS=ALL_CPUS.
Prints a Markdown table: ms and the ratio VRT / ChunkRef (above 1:
ChunkRef is faster). Usage::

    GDAL_DRIVER_PATH=build/gdalplugins tests/bench/mosaic_bench.py [--runs 5]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from osgeo import gdal, osr

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from patterns import chunkref_bench_args, print_side_by_side  # noqa: E402
CHUNKREF = REPO / "target" / "release" / "chunkref"
ROOT = REPO / "build" / "bench" / "mosaic"
SIDE, STEP = 2048, 1900
PATTERNS = ["full", "bands", "zoom1024", "window1024", "scanlines"]



def build() -> tuple[Path, Path]:
    """(the mosaic index, the VRT), built once."""
    ROOT.mkdir(parents=True, exist_ok=True)
    index, vrt = ROOT / "mosaic.json", ROOT / "mosaic.vrt"
    if index.exists() and vrt.exists():
        return index, vrt
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    y, x = np.mgrid[0:SIDE, 0:SIDE]
    scenes = []
    for n in range(9):
        row, col = divmod(n, 3)
        mem = gdal.GetDriverByName("MEM").Create("", SIDE, SIDE, 3, gdal.GDT_Byte)
        for b in range(3):
            mem.GetRasterBand(b + 1).WriteArray(((x // 7 + y // 5 + 40 * b + 13 * n) % 251)
                                                .astype(np.uint8))
        mem.SetGeoTransform([500000 + col * STEP * 10, 10, 0, 4600000 - row * STEP * 10, 0, -10])
        mem.SetProjection(srs.ExportToWkt())
        path = ROOT / f"scene{n}.tif"
        gdal.Translate(str(path), mem, format="COG",
                       creationOptions=["COMPRESS=DEFLATE", "BLOCKSIZE=256", "OVERVIEWS=NONE"])
        scenes.append(str(path))
    subprocess.run([CHUNKREF, "index", "--mosaic", *scenes, "-o", index], check=True,
                   capture_output=True)
    gdal.BuildVRT(str(vrt), scenes)
    return index, vrt


def main() -> None:
    args = chunkref_bench_args(__doc__)
    index, vrt = build()
    print_side_by_side(vrt, index, PATTERNS, args.runs, ("VRT", "ChunkRef mosaic"))


if __name__ == "__main__":
    main()
