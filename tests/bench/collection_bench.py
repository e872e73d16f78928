"""Collection benchmark: a time stack shaped like the GHRSST MUR archive of
seed 004 (8,660 daily files x 2,556 tiles of 512x512 = 22 million chunk
references), every step a hard link of one real 36000x17999 Int16 ZSTD
tiled GeoTIFF, so pixels are real.

Measures, each in its own process (wall time, peak RSS from wait4):
- ``chunkref index --datetime-from-name <8,660 files> -o coll.parquet``
  (header reads included) and the table's size;
- kerchunk's ``refs_to_dataframe`` (Kerchunk Parquet) against chunkref on a
  slice of the steps (same references), for the ratio;
- opening the collection through GDAL and reading one 512x512 tile of one
  time step, with and without ``-oo TIME_STEP``; GDAL's own read of the same
  tile from the source file as the baseline;
- the same over HTTP (``/vsicurl/``, a loopback range server answering each
  request after ``--latency`` seconds): the table written with
  ``--template-base`` next to the files, so the chunks are read over HTTP
  too, against GDAL reading the tile of the source file over ``/vsicurl/``,
  with the requests each made.

Run (a few minutes; writes about 1 GB under WORKDIR):
    cargo build --release && gdal_plugin/install.sh build/gdalplugins
    GDAL_DRIVER_PATH=$PWD/build/gdalplugins /usr/bin/python3 tests/bench/collection_bench.py \\
        [--steps 8660] [--slice 100] [--workdir /tmp/collbench]
kerchunk is taken from build/table-venv (made by tests/python/test_tables.py).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "python"))
from servers import Faults, RangeServer  # noqa: E402
CHUNKREF = REPO / "target" / "release" / "chunkref"
TABLE_PYTHON = REPO / "build" / "table-venv" / "bin" / "python"

WIDTH, HEIGHT, TILE = 36000, 17999, 512


def run_measured(cmd: list[str], env: dict | None = None) -> tuple[float, float, str, str]:
    """Run ``cmd`` and reap it with wait4: (seconds, peak RSS MB, stdout, stderr)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd[:3]))} ... failed ({proc.returncode}):\n{err.decode()[-3000:]}")
    return seconds, usage.ru_maxrss / 1024, out.decode(), err.decode()


def make_sources(workdir: Path, steps: int) -> list[Path]:
    base = workdir / "base.tif"
    if not base.exists():
        subprocess.run(
            ["gdal_create", "-of", "GTiff", "-outsize", str(WIDTH), str(HEIGHT), "-bands", "1",
             "-ot", "Int16", "-burn", "7", "-a_srs", "EPSG:4326",
             "-a_ullr", "-179.995", "89.995", "180.005", "-89.995",
             "-co", "TILED=YES", "-co", f"BLOCKXSIZE={TILE}", "-co", f"BLOCKYSIZE={TILE}",
             "-co", "COMPRESS=ZSTD", str(base)],
            check=True, capture_output=True,
        )
    links = workdir / "links"
    links.mkdir(exist_ok=True)
    day0 = datetime.date(2002, 6, 1)
    paths = []
    for i in range(steps):
        path = links / f"sst_{(day0 + datetime.timedelta(days=i)).strftime('%Y%m%d')}.tif"
        if not path.exists():
            os.link(base, path)
        paths.append(path)
    return paths


KERCHUNK_SCRIPT = """
import json, sys, time
import kerchunk.df
refs = json.load(open(sys.argv[1]))
t0 = time.perf_counter()
kerchunk.df.refs_to_dataframe(refs, sys.argv[2], record_size=100000)
print(time.perf_counter() - t0)
"""

GDAL_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
from osgeo import gdal, gdal_array  # numpy's import is not part of a read
gdal.UseExceptions()
t1 = time.perf_counter()
name, band, options = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
ds = gdal.OpenEx(name, gdal.OF_RASTER, open_options=options)
t2 = time.perf_counter()
tile = ds.GetRasterBand(band).ReadAsArray(0, 0, 512, 512)
t3 = time.perf_counter()
print(json.dumps({"bands": ds.RasterCount, "open_s": t2 - t1, "tile_s": t3 - t2,
                  "tile_sum": int(tile.sum()), "driver": ds.GetDriver().ShortName}))
"""


def gdal_open_and_read(name: Path | str, band: int, *options: str, env: dict | None = None) -> dict:
    seconds, rss, out, _ = run_measured(
        ["/usr/bin/python3", "-c", GDAL_SCRIPT, str(name), str(band), *options],
        env=env or os.environ.copy(),
    )
    result = json.loads(out)
    result.update(process_s=seconds, peak_rss_mb=rss)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=8660)
    parser.add_argument("--slice", type=int, default=100, help="steps for the kerchunk comparison")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/collbench"))
    parser.add_argument("--latency", type=float, default=0.02,
                        help="seconds the HTTP server waits before each answer")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    assert os.environ.get("GDAL_DRIVER_PATH"), "set GDAL_DRIVER_PATH to the installed plugin"
    sources = make_sources(args.workdir, args.steps)
    report: dict = {"steps": args.steps, "tiles_per_step": (WIDTH // TILE + 1) * (HEIGHT // TILE + 1)}
    report["references"] = report["steps"] * report["tiles_per_step"]

    table = args.workdir / "coll.parquet"
    seconds, rss, _, err = run_measured(
        [str(CHUNKREF), "index", "--datetime-from-name", *map(str, sources), "-o", str(table)]
    )
    report["index_parquet"] = {"seconds": seconds, "peak_rss_mb": rss,
                               "bytes": table.stat().st_size, "stderr": err.strip()}

    part = sources[: args.slice]
    slice_json, slice_parquet = args.workdir / "slice.json", args.workdir / "slice.parquet"
    run_measured([str(CHUNKREF), "index", *map(str, part), "-o", str(slice_json)])
    seconds, rss, _, _ = run_measured([str(CHUNKREF), "convert", str(slice_json), str(slice_parquet)])
    report["slice"] = {"steps": len(part), "references": len(part) * report["tiles_per_step"],
                       "chunkref_convert_json_to_parquet_s": seconds}
    seconds, _, _, _ = run_measured(
        [str(CHUNKREF), "index", *map(str, part), "-o", str(args.workdir / "slice2.parquet")]
    )
    report["slice"]["chunkref_index_to_parquet_s"] = seconds
    if TABLE_PYTHON.exists():
        _, _, out, _ = run_measured(
            [str(TABLE_PYTHON), "-c", KERCHUNK_SCRIPT, str(slice_json), str(args.workdir / "slice.parq")]
        )
        report["slice"]["kerchunk_refs_to_dataframe_s"] = float(out)
        # Per reference: kerchunk's writer alone against chunkref's whole
        # index (header reads included), on the same references.
        report["slice"]["kerchunk_over_chunkref_index"] = (
            float(out) / report["slice"]["chunkref_index_to_parquet_s"]
        )

    step = min(5000, args.steps - 1)
    report["gdal_source_tile"] = gdal_open_and_read(sources[step], 1)
    report["open_and_tile"] = gdal_open_and_read(table, step + 1)
    report["open_time_step_and_tile"] = gdal_open_and_read(table, 1, f"TIME_STEP={step}")

    portable = args.workdir / "links" / "coll_portable.parquet"
    run_measured([str(CHUNKREF), "index", "--template-base", "--datetime-from-name",
                  *map(str, sources), "-o", str(portable)])
    server = RangeServer(args.workdir, delay=args.latency)
    env = dict(os.environ, GDAL_DISABLE_READDIR_ON_OPEN="EMPTY_DIR")
    try:
        base = f"/vsicurl/{server.url}links/"
        for key, name, band in (("http_gdal_source_tile", sources[step].name, 1),
                                ("http_open_and_tile", portable.name, step + 1)):
            server.set_faults(Faults())
            report[key] = gdal_open_and_read(base + name, band, env=env)
            report[key]["requests"] = len(server.log.requests)
    finally:
        server.close()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
