#!/usr/bin/python3
"""Access-pattern benchmark: the reads real clients make, through ChunkRef
(JSON and Parquet indexes) and through GDAL's GTiff driver on the same
files, side by side in one run.

The patterns (each timed in its own process, best of ``--runs`` repeats,
every repeat a fresh open so GDAL's block cache starts empty):

- ``full``: one ``ReadRaster`` of all bands (a whole-file copy);
- ``bands``: ``GetRasterBand(b).ReadRaster()`` for each band (terra,
  ``rasterio.read(1)``);
- ``ov0``: open + each band of overview 0 (QGIS's first paint);
- ``zoom1024`` / ``zoom512``: open + the whole image resampled to 1024x1024
  or 512x512 in one call (a zoomed-out map view);
- ``tile``: open + one 256x256 tile of all bands (a tile server); later
  opens of the unchanged index share the first one's (ChunkRef's index
  cache, ``CHUNKREF_INDEX_CACHE``);
- ``tile-uncached``: the same with ``CHUNKREF_INDEX_CACHE=NO``: every open
  reads and parses the index again (a freshly written index; GTiff has no
  such cache, so its row is the same as ``tile``);
- ``window1024``: open + a 1024x1024 window of all bands at (1800, 1800)
  (used by mosaic_bench.py);
- ``scanlines``: the 512 rows of one chunk row, one ``ReadRaster`` per row
  (Float32 fixture; gdaldem, gdal_calc, striped writers);
- ``hillshade``: ``gdal.DEMProcessing(hillshade)`` of the Float32 fixture;
- ``qgis`` / ``qgis-detail``: QGIS (PyQGIS from ``python3-qgis``, headless)
  loads the file as a raster layer with its default renderer and renders
  the whole image, or a 1024x1024-pixel area of it, to a 1024x1024 map
  image (left out, with a note, where PyQGIS is missing).

GTiff runs with ``GDAL_NUM_THREADS=ALL_CPUS``. Fixtures (4096x4096, 3 bands,
256x256 tiles, internal overviews; DEFLATE, JPEG, LZW, ZSTD and none, pixel-
and band-interleaved; a Float32 DEFLATE COG with 512x512 tiles) are built
once under build/bench/patterns/. Prints a Markdown table: times in ms and
the ratio GTiff / ChunkRef (above 1: ChunkRef is faster), and the peak
resident memory of the GTiff and ChunkRef (JSON) processes. Usage::

    GDAL_DRIVER_PATH=build/gdalplugins tests/bench/patterns.py [--runs 5] [--only deflate]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from osgeo import gdal

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import SIZE, picture  # noqa: E402

CHUNKREF = REPO / "target" / "release" / "chunkref"
ROOT = REPO / "build" / "bench" / "patterns"

#: (name, GTiff creation options) of the 3-band Byte fixtures.
BYTE_FIXTURES = [
    (f"{codec.lower()}-{il.lower()}", [f"COMPRESS={codec}", f"INTERLEAVE={il}"] + extra)
    for codec, extra in [
        ("DEFLATE", ["PREDICTOR=2"]),
        ("JPEG", ["JPEG_QUALITY=85"]),
        ("LZW", ["PREDICTOR=2"]),
        ("ZSTD", ["PREDICTOR=2"]),
        ("NONE", []),
    ]
    for il in ("PIXEL", "BAND")
]
FLOAT_FIXTURE = "float32-deflate"
BYTE_PATTERNS = ["full", "bands", "ov0", "zoom1024", "zoom512", "tile", "tile-uncached", "qgis",
                 "qgis-detail"]
#: Patterns of a millisecond or less, repeated this many times more.
QUICK_PATTERNS = {"tile": 20, "tile-uncached": 20}
QGIS_PATTERNS = ("qgis", "qgis-detail")
FLOAT_PATTERNS = ["scanlines", "hillshade"]

#: One pattern, repeated: argv NAME PATTERN RUNS; prints the best seconds.
RUNNER = r"""
import sys, time
from osgeo import gdal
gdal.UseExceptions()
name, pattern, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])

if pattern.startswith("qgis"):
    import os
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from qgis.core import (QgsApplication, QgsMapRendererSequentialJob, QgsMapSettings,
                           QgsRasterLayer, QgsRectangle)
    from qgis.PyQt.QtCore import QSize
    app = QgsApplication([], False)
    app.initQgis()

    def render():
        layer = QgsRasterLayer(name, "layer", "gdal")
        assert layer.isValid(), name
        extent = layer.extent()
        if pattern == "qgis-detail":
            x, y = extent.xMinimum(), extent.yMaximum()
            px, py = layer.rasterUnitsPerPixelX(), layer.rasterUnitsPerPixelY()
            extent = QgsRectangle(x + 1024 * px, y - 2048 * py, x + 2048 * px, y - 1024 * py)
        settings = QgsMapSettings()
        settings.setLayers([layer])
        settings.setDestinationCrs(layer.crs())
        settings.setExtent(extent)
        settings.setOutputSize(QSize(1024, 1024))
        job = QgsMapRendererSequentialJob(settings)
        job.start()
        job.waitForFinished()
        assert not job.renderedImage().isNull()

def run():
    if pattern.startswith("qgis"):
        return render()
    ds = gdal.Open(name)
    w, h, n = ds.RasterXSize, ds.RasterYSize, ds.RasterCount
    if pattern == "full":
        ds.ReadRaster()
    elif pattern == "bands":
        for b in range(1, n + 1):
            ds.GetRasterBand(b).ReadRaster()
    elif pattern == "ov0":
        for b in range(1, n + 1):
            ds.GetRasterBand(b).GetOverview(0).ReadRaster()
    elif pattern in ("zoom1024", "zoom512"):
        side = int(pattern[4:])
        ds.ReadRaster(0, 0, w, h, side, side)
    elif pattern in ("tile", "tile-uncached"):
        ds.ReadRaster(1280, 2304, 256, 256)
    elif pattern == "window1024":
        ds.ReadRaster(1800, 1800, 1024, 1024)
    elif pattern == "scanlines":
        band = ds.GetRasterBand(1)
        for y in range(1024, 1536):
            band.ReadRaster(0, y, w, 1)
    elif pattern == "hillshade":
        gdal.DEMProcessing("/vsimem/hs.tif", ds, "hillshade")
        gdal.Unlink("/vsimem/hs.tif")
    ds = None

import resource
best = None
for _ in range(runs):
    t = time.perf_counter()
    run()
    t = time.perf_counter() - t
    best = t if best is None else min(best, t)
print(best, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)
if pattern.startswith("qgis"):
    os._exit(0)  # QGIS's own teardown is not part of the measure
"""


def chunkref_bench_args(doc: str) -> argparse.Namespace:
    """``--runs`` (default 5) of a side-by-side bench described by ``doc``;
    exits when the ChunkRef driver is not registered."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if gdal.GetDriverByName("ChunkRef") is None:
        sys.exit("ChunkRef is not registered: set GDAL_DRIVER_PATH (see README.md)")
    return args


def print_side_by_side(reference: Path, ours: Path, patterns: list[str], runs: int,
                       headers: tuple[str, str], decimals: int = 1) -> None:
    """A Markdown table of ``patterns`` timed on ``reference`` and ``ours``
    (both with GDAL_NUM_THREADS=ALL_CPUS): ms each and the ratio
    reference / ours (above 1: ours is faster)."""
    print(f"| pattern | {headers[0]} ms | {headers[1]} ms | ratio |")
    print("|---|---|---|---|")
    for pattern in patterns:
        ref, mine = (timed(name, pattern, runs, gtiff=True) for name in (reference, ours))
        ratio = "-" if ref is None or mine is None else f"{ref[0] / mine[0]:.2f}"
        ms = lambda v: "-" if v is None else f"{1000 * v[0]:.{decimals}f}"  # noqa: E731
        print(f"| {pattern} | {ms(ref)} | {ms(mine)} | {ratio} |", flush=True)


def build_fixtures() -> dict[str, Path]:
    """Source files by fixture name, built once."""
    ROOT.mkdir(parents=True, exist_ok=True)
    sources = {name: ROOT / f"{name}.tif" for name, _ in BYTE_FIXTURES}
    sources[FLOAT_FIXTURE] = ROOT / f"{FLOAT_FIXTURE}.tif"
    if all(p.exists() for p in sources.values()):
        return sources
    print("building fixtures (once) ...", file=sys.stderr)
    data = picture()
    mem = gdal.GetDriverByName("MEM").Create("", SIZE, SIZE, 3, gdal.GDT_Byte)
    for b in range(3):
        mem.GetRasterBand(b + 1).WriteArray(data[b])
    for name, options in BYTE_FIXTURES:
        if "JPEG" in options[0] and "INTERLEAVE=PIXEL" in options:
            options = options + ["PHOTOMETRIC=YCBCR"]
        tmp = ROOT / f"{name}.tmp.tif"
        gdal.Translate(str(tmp), mem, creationOptions=["TILED=YES", "BLOCKXSIZE=256",
                                                       "BLOCKYSIZE=256"] + options)
        ds = gdal.Open(str(tmp))
        ds.BuildOverviews("AVERAGE", [2, 4, 8, 16])
        ds = None
        gdal.Translate(str(sources[name]), str(tmp), creationOptions=[
            "TILED=YES", "BLOCKXSIZE=256", "BLOCKYSIZE=256", "COPY_SRC_OVERVIEWS=YES"] + options)
        tmp.unlink()
    y, x = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    dem = (800 + 300 * np.sin(x / 300) * np.cos(y / 410) + 0.01 * x * y / SIZE).astype(np.float32)
    fmem = gdal.GetDriverByName("MEM").Create("", SIZE, SIZE, 1, gdal.GDT_Float32)
    fmem.GetRasterBand(1).WriteArray(dem)
    fmem.SetGeoTransform([500000, 30, 0, 4500000, 0, -30])
    gdal.Translate(str(sources[FLOAT_FIXTURE]), fmem, format="COG",
                   creationOptions=["COMPRESS=DEFLATE", "PREDICTOR=YES", "BLOCKSIZE=512"])
    return sources


def indexes(source: Path) -> dict[str, Path]:
    """The JSON and Parquet indexes of ``source`` (built once)."""
    out = {}
    for kind, suffix in (("json", ".json"), ("parquet", ".parquet")):
        path = source.with_suffix(suffix)
        if not path.exists():
            subprocess.run([CHUNKREF, "index", source, "-o", path], check=True,
                           capture_output=True)
            # An index modified less than 2 s ago is read anew at every open
            # (src/read/index_cache.rs, SETTLE); the cached rows need an older one.
            settled = time.time() - 10
            os.utime(path, (settled, settled))
        out[kind] = path
    return out


def timed(name: Path, pattern: str, runs: int, gtiff: bool) -> tuple[float, int] | None:
    """(best seconds, peak resident KiB of the process) of ``pattern`` on ``name``."""
    env = dict(os.environ)
    if gtiff:
        env["GDAL_NUM_THREADS"] = "ALL_CPUS"
    if pattern.endswith("-uncached"):
        env["CHUNKREF_INDEX_CACHE"] = "NO"
    runs *= QUICK_PATTERNS.get(pattern, 1)
    done = subprocess.run([sys.executable, "-c", RUNNER, str(name), pattern, str(runs)],
                          capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:
        print(f"failed: {name} {pattern}: {done.stderr[-400:]}", file=sys.stderr)
        return None
    seconds, rss = done.stdout.strip().splitlines()[-1].split()
    return float(seconds), int(rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", help="only fixtures whose name contains this")
    parser.add_argument("--patterns", help="comma-separated patterns to run (default: all)")
    args = parser.parse_args()
    if gdal.GetDriverByName("ChunkRef") is None:
        sys.exit("ChunkRef is not registered: set GDAL_DRIVER_PATH (see README.md)")
    sources = build_fixtures()
    wanted = set(args.patterns.split(",")) if args.patterns else set(BYTE_PATTERNS + FLOAT_PATTERNS)
    has_qgis = subprocess.run([sys.executable, "-c", "import qgis.core"],
                              capture_output=True).returncode == 0
    if not has_qgis and wanted & set(QGIS_PATTERNS):
        print("PyQGIS is missing (apt-get install python3-qgis): no qgis rows", file=sys.stderr)
        wanted -= set(QGIS_PATTERNS)
    print("| fixture | pattern | GTiff ms | ChunkRef JSON ms | ratio | ChunkRef Parquet ms | ratio "
          "| peak MiB GTiff / JSON |")
    print("|---|---|---|---|---|---|---|---|")
    for name, source in sources.items():
        if args.only and args.only not in name:
            continue
        patterns = FLOAT_PATTERNS if name == FLOAT_FIXTURE else BYTE_PATTERNS
        idx = indexes(source)
        for pattern in patterns:
            if pattern not in wanted:
                continue
            runs = max(1, args.runs // 3) if pattern == "hillshade" else args.runs
            ref = timed(source, pattern, runs, gtiff=True)
            js = timed(idx["json"], pattern, runs, gtiff=False)
            pq = timed(idx["parquet"], pattern, runs, gtiff=False)

            def ms(v: tuple[float, int] | None) -> str:
                return "-" if v is None else f"{1000 * v[0]:.{2 if v[0] < 0.01 else 1}f}"

            def ratio(v: tuple[float, int] | None) -> str:
                return "-" if v is None or ref is None else f"{ref[0] / v[0]:.2f}"

            def mib(v: tuple[float, int] | None) -> str:
                return "-" if v is None else f"{v[1] / 1024:.0f}"

            print(f"| {name} | {pattern} | {ms(ref)} | {ms(js)} | {ratio(js)} | {ms(pq)} | "
                  f"{ratio(pq)} | {mib(ref)} / {mib(js)} |", flush=True)


if __name__ == "__main__":
    main()
