"""Many threads at once: each thread opens its own dataset of the same
index (the parsed index, the decoding pool and the object-store clients
are shared between them) and reads windows, bands, scanlines and
overviews; every pixel must equal GTiff's."""

from __future__ import annotations

import os
import random
import threading
import time

import numpy as np
from osgeo import gdal

from raster_checks import open_chunkref
from test_tiff_index import TIFF_CASES, index_tiff, write_tiff

THREADS = 8
#: Seconds the threads keep reading.
SECONDS = 4.0


def test_threads_sharing_an_index_read_gdals_pixels(chunkref_bin, tmp_path):
    tif = write_tiff(tmp_path / "src.tif", TIFF_CASES["cog-deflate-pred2-3band"], (700, 500))
    index = tmp_path / "src.json"
    index_tiff(chunkref_bin, tif, index)
    old = time.time() - 3600
    os.utime(index, (old, old))  # settled: opens share the cached index
    native = gdal.Open(str(tif))
    want = native.ReadAsArray()
    want_ov = [native.GetRasterBand(b).GetOverview(0).ReadAsArray() for b in (1, 2, 3)]
    failures: list[str] = []
    reads = [0] * THREADS

    def worker(k: int) -> None:
        rng = random.Random(k)
        end = time.monotonic() + SECONDS
        try:
            while time.monotonic() < end:
                ds = open_chunkref(index)
                kind = rng.randrange(4)
                if kind == 0:
                    x, y = rng.randrange(650), rng.randrange(450)
                    w, h = rng.randrange(1, 700 - x), rng.randrange(1, 500 - y)
                    got = ds.ReadAsArray(x, y, w, h)
                    ok = np.array_equal(got, want[:, y:y + h, x:x + w])
                elif kind == 1:
                    b = rng.randrange(1, 4)
                    ok = np.array_equal(ds.GetRasterBand(b).ReadAsArray(), want[b - 1])
                elif kind == 2:
                    b, y = rng.randrange(1, 4), rng.randrange(500)
                    row = ds.GetRasterBand(b).ReadAsArray(0, y, 700, 1)
                    ok = np.array_equal(row[0], want[b - 1, y])
                else:
                    b = rng.randrange(1, 4)
                    ok = np.array_equal(ds.GetRasterBand(b).GetOverview(0).ReadAsArray(),
                                        want_ov[b - 1])
                if not ok:
                    failures.append(f"thread {k}: read kind {kind} differs")
                reads[k] += 1
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(f"thread {k}: {exc!r}")

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SECONDS + 60)
    assert not any(t.is_alive() for t in threads), "a reading thread hangs"
    assert not failures, failures[:5]
    assert all(n > 0 for n in reads), reads
