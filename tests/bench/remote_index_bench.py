#!/usr/bin/python3
"""Indexing an archive where it lives: ``chunkref index`` over HTTP with
object-store latency, against the physical limit of that latency.

Fixture (built once under build/bench/remote_index/): ``--files`` (default
8,660, the seed's GHRSST archive) hard links to one 1024 x 1024 Float32
DEFLATE COG (256 x 256 tiles, overviews), named by day, served by the
tests' range server (tests/python/servers.py) with ``--latency`` (default
20 ms) added to every request. ``chunkref index --stack --from-list`` makes
one Parquet time stack of them. Prints the wall time, requests, bytes
served, peak memory of the indexer, and the physical limit (files x round
trips per file x latency / concurrency) beside it. Usage::

    tests/bench/remote_index_bench.py [--files 8660] [--latency 0.02] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import datetime
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from osgeo import gdal

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "python"))

from servers import RangeServer  # noqa: E402

CHUNKREF = REPO / "target" / "release" / "chunkref"
ROOT = REPO / "build" / "bench" / "remote_index"


def build(files: int) -> list[str]:
    """The archive's relative file names (hard links to one COG), built once."""
    ROOT.mkdir(parents=True, exist_ok=True)
    cog = ROOT / "source.tif"
    if not cog.exists():
        y, x = np.mgrid[0:1024, 0:1024].astype(np.float32)
        mem = gdal.GetDriverByName("MEM").Create("", 1024, 1024, 1, gdal.GDT_Float32)
        mem.GetRasterBand(1).WriteArray(np.sin(x / 50) * np.cos(y / 70) * 30 + 15)
        mem.SetGeoTransform([-180, 360 / 1024, 0, 90, 0, -180 / 1024])
        mem.SetProjection("EPSG:4326")
        gdal.Translate(str(cog), mem, format="COG",
                       creationOptions=["COMPRESS=DEFLATE", "BLOCKSIZE=256"])
    day0 = datetime.date(2002, 6, 1)
    names = []
    archive = ROOT / "archive"
    archive.mkdir(exist_ok=True)
    for i in range(files):
        day = day0 + datetime.timedelta(days=i)
        name = f"archive/{day:%Y%m%d}-sst.tif"
        if not (ROOT / name).exists():
            os.link(cog, ROOT / name)
        names.append(name)
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=8660)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    names = build(args.files)
    server = RangeServer(ROOT, delay=args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            urls = Path(tmp) / "urls.txt"
            urls.write_text("".join(f"{server.url}{n}\n" for n in names))
            out = Path(tmp) / "sst.parquet"
            start = time.perf_counter()
            done = subprocess.run(
                [CHUNKREF, "index", "--stack", "--datetime-from-name", "--concurrency",
                 str(args.concurrency), "--from-list", urls, "-o", out],
                capture_output=True, text=True)
            wall = time.perf_counter() - start
            if done.returncode != 0:
                sys.exit(f"chunkref index failed:\n{done.stderr[-3000:]}")
            peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            size = out.stat().st_size
    finally:
        server.close()
    requests = len(server.log.requests)
    per_file = requests / args.files
    limit = args.files * per_file * args.latency / args.concurrency
    served = sum(int(r.split("-")[1]) - int(r.split("=")[1].split("-")[0]) + 1
                 for _, r in server.log.requests if r.startswith("bytes="))
    print(f"| files | latency | concurrency | wall s | requests (per file) | MB served | "
          f"peak MiB | physical limit s | wall / limit | table bytes |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {args.files} | {args.latency * 1000:.0f} ms | {args.concurrency} | {wall:.2f} | "
          f"{requests} ({per_file:.2f}) | {served / 1e6:.0f} | {peak_mib:.0f} | {limit:.2f} | "
          f"{wall / limit:.2f} | {size:,} |")


if __name__ == "__main__":
    main()
