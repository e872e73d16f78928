"""The collection of tests/bench/timeseries_bench.py: ``days`` daily
2048 x 2048 Int16 COGs (ZSTD, predictor, 512 x 512 tiles, no
overviews), distinct files with distinct pixels, named ``sst_YYYYMMDD.tif``.

Built once under ``build/bench/timeseries/`` (a file already there is kept).
Run by itself to build ahead::

    /usr/bin/python3 tests/bench/timeseries_data.py [--days 365] [--jobs 2]
"""

from __future__ import annotations

import argparse
import datetime
import functools
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from osgeo import gdal

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "build" / "bench" / "timeseries"
FILES = ROOT / "files"
SIZE, TILE = 2048, 512
DAY0 = datetime.date(2025, 1, 1)
#: Georeferencing: UTM zone 33N, the top left corner, 30 m pixels.
EPSG, ORIGIN, PIXEL = 32633, (500000, 4600000), 30


def name(day: int) -> str:
    """The relative path of day ``day`` (0-based) under :data:`ROOT`."""
    return f"files/sst_{DAY0 + datetime.timedelta(days=day):%Y%m%d}.tif"


@functools.cache
def _field(week: int) -> np.ndarray:
    y, x = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    phase = 2 * np.pi * week / 52
    return (900 * np.sin(x / 170 + phase) * np.cos(y / 230 - phase)).astype(np.int16)


def pixels(day: int) -> np.ndarray:
    """Day ``day``'s image: a smooth field moving with the season (one per
    week) plus noise seeded by the day (about 200 KB a compressed tile)."""
    noise = np.random.default_rng(day).integers(-8, 8, size=(SIZE, SIZE), dtype=np.int16)
    return _field(day // 7) + noise


def write(day: int) -> str:
    """Writes day ``day``'s COG unless it exists; returns its name."""
    path = ROOT / name(day)
    if path.exists():
        return name(day)
    gdal.UseExceptions()
    mem = gdal.GetDriverByName("MEM").Create("", SIZE, SIZE, 1, gdal.GDT_Int16)
    mem.SetGeoTransform([ORIGIN[0], PIXEL, 0, ORIGIN[1], 0, -PIXEL])
    mem.SetProjection(f"EPSG:{EPSG}")
    mem.GetRasterBand(1).WriteArray(pixels(day))
    tmp = path.with_suffix(".tmp.tif")
    gdal.Translate(str(tmp), mem, format="COG",
                   creationOptions=["COMPRESS=ZSTD", "PREDICTOR=YES", f"BLOCKSIZE={TILE}", "OVERVIEWS=NONE"])
    os.replace(tmp, path)
    return name(day)


def build(days: int, jobs: int = 2) -> list[str]:
    """The names of the first ``days`` files, written if missing."""
    FILES.mkdir(parents=True, exist_ok=True)
    missing = [d for d in range(days) if not (ROOT / name(d)).exists()]
    if missing:
        print(f"writing {len(missing)} COGs under {FILES} ...", flush=True)
        with ProcessPoolExecutor(jobs) as pool:
            list(pool.map(write, missing, chunksize=7))
    return [name(d) for d in range(days)]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    build(args.days, args.jobs)
