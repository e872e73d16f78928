#!/usr/bin/python3
"""Read benchmark: ChunkRef against GDAL's native drivers and the Python
peer (osml-imagery-io), in one run on one machine.

Builds the fixtures once under build/bench/ (4096x4096x3 COG deflate and
JPEG, a NITF C8, an interleaved multi-range J2K), indexes them with
``chunkref index``, serves them from a loopback HTTP server that waits a
fixed delay before every answer (default 20 ms, standing for object-store
latency), and times, each in a fresh process (cold: no GDAL block cache, no
open connections), best of ``--runs``:

- cold open + full read, and cold open + a 1024x1024 window;
- through ChunkRef with the index local and the chunks over HTTP, with the
  index over HTTP too, and with everything on local disk;
- through GDAL's native driver on the same source over ``/vsicurl/`` and on
  local disk (``GDAL_NUM_THREADS=ALL_CPUS``, the native driver's best);
- through the peer's fsspec + zarr stack on the local index (when its venv
  under build/peer-venv exists).

Prints a Markdown table with times and ratios; docs/performance.md holds
the figures of the last recorded run.  Usage::

    GDAL_DRIVER_PATH=build/gdalplugins tests/bench/bench.py [--runs 3] [--delay-ms 20]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from osgeo import gdal

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "python"))

from servers import RangeServer  # noqa: E402
from test_j2k import tile_parts  # noqa: E402

SIZE = 4096
#: The window read: 1024x1024 pixels at (1536, 1024), off the tile grid.
WINDOW = (1536, 1024, 1024, 1024)
CHUNKREF = REPO / "target" / "release" / "chunkref"
PEER_PYTHON = REPO / "build" / "peer-venv" / "bin" / "python"

#: Times one GDAL read in a fresh process: argv NAME X Y W H; prints seconds
#: for open + read (interpreter start-up and imports excluded).
GDAL_READ = r"""
import sys, time
from osgeo import gdal
gdal.UseExceptions()
name, x, y, w, h = sys.argv[1], *map(int, sys.argv[2:6])
t = time.perf_counter()
ds = gdal.Open(name)
ds.ReadRaster(x, y, w or ds.RasterXSize, h or ds.RasterYSize)
print(time.perf_counter() - t)
"""

#: The same through the peer's stack on a local index: argv INDEX X Y W H.
PEER_READ = r"""
import json, sys, time
import zarr
from aws.osml.io.multi_reference_fs import MultiReferenceFileSystem
from zarr.storage._fsspec import FsspecStore
index, x, y, w, h = sys.argv[1], *map(int, sys.argv[2:6])
t = time.perf_counter()
fs = MultiReferenceFileSystem(fo=index, asynchronous=True, remote_protocol="file",
                              remote_options={"asynchronous": True}, skip_instance_cache=True)
root = zarr.open_group(FsspecStore(fs=fs, read_only=True, path=""), mode="r", zarr_format=2)
a = root["0/data"]
a[:, y:y + (h or a.shape[1]), x:x + (w or a.shape[2])]
print(time.perf_counter() - t)
"""


def picture(bands: int = 3) -> np.ndarray:
    """A photo-like 4096x4096 picture: smooth gradients, edges and noise."""
    y, x = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    rng = np.random.default_rng(7)
    planes = []
    for b in range(bands):
        smooth = 96 + 60 * np.sin(x / (180 + 40 * b)) * np.cos(y / (230 - 30 * b))
        edges = 40 * ((x // 97 + y // 131 + b) % 2)
        planes.append(np.clip(smooth + edges + rng.normal(0, 6, x.shape), 0, 255))
    return np.stack(planes).astype(np.uint8)


def mem(data: np.ndarray) -> gdal.Dataset:
    ds = gdal.GetDriverByName("MEM").Create("", SIZE, SIZE, data.shape[0], gdal.GDT_Byte)
    for b in range(data.shape[0]):
        ds.GetRasterBand(b + 1).WriteArray(data[b])
    return ds


def build_fixtures(root: Path) -> dict[str, Path]:
    """Sources by name (built once; delete build/bench to rebuild)."""
    root.mkdir(parents=True, exist_ok=True)
    sources = {
        "COG deflate": root / "cog_deflate.tif",
        "COG JPEG": root / "cog_jpeg.tif",
        "NITF C8": root / "c8.ntf",
        "J2K multi-range": root / "interleaved.j2k",
    }
    if all(p.exists() for p in sources.values()):
        return sources
    print("building fixtures (once) ...", file=sys.stderr)
    data = mem(picture())
    gdal.Translate(str(sources["COG deflate"]), data, format="COG",
                   creationOptions=["COMPRESS=DEFLATE", "PREDICTOR=YES", "BLOCKSIZE=256"])
    gdal.Translate(str(sources["COG JPEG"]), data, format="COG",
                   creationOptions=["COMPRESS=JPEG", "QUALITY=85", "BLOCKSIZE=256"])
    gdal.Translate(str(sources["NITF C8"]), data, format="NITF",
                   creationOptions=["IC=C8", "QUALITY=100", "REVERSIBLE=YES",
                                    "BLOCKXSIZE=512", "BLOCKYSIZE=512"])
    tif = root / "plain.tif"
    gdal.Translate(str(tif), data, format="GTiff")
    plain = root / "plain.j2k"
    subprocess.run(["opj_compress", "-i", tif, "-o", plain, "-t", "512,512", "-n", "5",
                    "-TP", "R", "-p", "RPCL"], check=True, capture_output=True)
    header, parts = tile_parts(plain.read_bytes())
    parts.sort(key=lambda p: (p[1], p[0]))  # all tiles' first parts, then second, ...
    sources["J2K multi-range"].write_bytes(header + b"".join(p[2] for p in parts) + b"\xff\xd9")
    tif.unlink()
    plain.unlink()
    return sources


def index(source: Path, out: Path, url: str | None) -> Path:
    """``chunkref index source``, its chunk URLs pointing at ``url`` if given."""
    subprocess.run([CHUNKREF, "index", source, "-o", out], check=True, capture_output=True)
    if url is not None:
        text = out.read_text().replace(json.dumps(str(source))[1:-1], url)
        out.write_text(text)
    return out


def timed(cmd: list[str], env: dict[str, str], runs: int) -> float | None:
    """Best time printed by ``cmd`` over ``runs`` fresh processes (None if it fails)."""
    best = None
    for _ in range(runs):
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
        if done.returncode != 0:
            print(f"failed: {' '.join(map(str, cmd[:4]))}: {done.stderr[-300:]}", file=sys.stderr)
            return None
        t = float(done.stdout.strip().splitlines()[-1])
        best = t if best is None else min(best, t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--only", help="run only fixtures whose name contains this")
    args = parser.parse_args()

    root = REPO / "build" / "bench"
    sources = build_fixtures(root)
    server = RangeServer(root, delay=args.delay_ms / 1000)
    base_env = {**os.environ, "GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
                "CPL_VSIL_CURL_CHUNK_SIZE": "1048576", "GDAL_HTTP_MAX_RETRY": "0"}
    native_env = {**base_env, "GDAL_NUM_THREADS": "ALL_CPUS"}
    py = ["/usr/bin/python3", "-c", GDAL_READ]

    columns = ["ChunkRef index local, chunks HTTP", "ChunkRef index HTTP",
               "GDAL /vsicurl/", "ChunkRef local", "GDAL local", "peer local"]
    rows = []
    for name, source in sources.items():
        if args.only and args.only.lower() not in name.lower():
            continue
        url = server.url + source.name
        stem = source.stem
        local_index = index(source, root / f"{stem}.local.json", None)
        http_index = index(source, root / f"{stem}.http.json", url)
        readers = {
            "ChunkRef index local, chunks HTTP": (py + [str(http_index)], base_env),
            "ChunkRef index HTTP": (py + [f"/vsicurl/{server.url}{http_index.name}"], base_env),
            "GDAL /vsicurl/": (py + [f"/vsicurl/{url}"], native_env),
            "ChunkRef local": (py + [str(local_index)], base_env),
            "GDAL local": (py + [str(source)], native_env),
        }
        if PEER_PYTHON.exists():
            readers["peer local"] = ([str(PEER_PYTHON), "-c", PEER_READ, str(local_index)], base_env)
        for what, window in (("full read", (0, 0, 0, 0)), ("1024² window", WINDOW)):
            cells = {}
            for column, (cmd, env) in readers.items():
                cells[column] = timed(cmd + [str(v) for v in window], env, args.runs)
            rows.append((name, what, cells))
            print(f"{name}, {what}: " + ", ".join(
                f"{k} {v:.3f}" if v else f"{k} -" for k, v in cells.items()), file=sys.stderr)
    server.close()

    def fmt(v: float | None) -> str:
        return f"{v:.3f} s" if v is not None else "fails"

    def ratio(a: float | None, b: float | None) -> str:
        return f"{a / b:.2f}x" if a and b else "-"

    print(f"\nLoopback HTTP with {args.delay_ms:g} ms per request; best of {args.runs} cold runs.\n")
    print("| source | read | " + " | ".join(columns)
          + " | /vsicurl/ ÷ ChunkRef HTTP | GDAL local ÷ ChunkRef local | peer ÷ ChunkRef local |")
    print("|" + "---|" * (len(columns) + 5))
    for name, what, cells in rows:
        values = [fmt(cells.get(c)) if c in cells else "-" for c in columns]
        remote = cells["ChunkRef index local, chunks HTTP"]
        print(f"| {name} | {what} | " + " | ".join(values)
              + f" | {ratio(cells['GDAL /vsicurl/'], remote)}"
              + f" | {ratio(cells['GDAL local'], cells['ChunkRef local'])}"
              + f" | {ratio(cells.get('peer local'), cells['ChunkRef local'])} |")


if __name__ == "__main__":
    main()
