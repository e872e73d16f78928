"""The multidimensional view on the time series of tests/bench/timeseries_bench.py
(issue 44): the pixel drill over every date and a 1024 x 1024 window over 30
dates, each read by a fresh process, over HTTP with ``--latency`` added per
request; median of ``--runs``, every read checked against the others.

Two tables:

* the raster view (``ReadAsArray`` of the dataset; ``TIME_START``/``TIME_END``
  for the window) against the multidimensional view
  (``gdal.OpenEx(stack, gdal.OF_MULTIDIM_RASTER)``) on the index of the
  365 COGs;
* with ``--zarr`` (GDAL >= 3.11, whose Zarr driver reads Kerchunk JSON):
  chunkref's multidimensional view against GDAL's Zarr driver's, both
  opening the same Kerchunk JSON (GDAL's through ``/vsikerchunk_json_ref/``).
  GDAL's Zarr driver cannot decode the COGs' tiles as the COG index
  references them (a TIFF tile codec; the run prints its error); the JSON is the
  index ``chunkref index`` writes of a Zarr v2 store of the same pixels
  (GDAL's Zarr driver, ZSTD level 1, 512 x 512 chunks, one file per chunk,
  made once under ``ROOT/zarr``), its paths made URLs of the server.

    GDAL_DRIVER_PATH=build/gdalplugins /usr/bin/python3 tests/bench/multidim_bench.py \\
        [--root build/bench/timeseries] [--days 365] [--runs 5] [--zarr]

``CHUNKREF_BIN`` names the chunkref binary (default target/release/chunkref);
in the sid root of scripts/gdal-matrix.sh: ``CHUNKREF_BIN=build/target-sid/release/chunkref
GDAL_DRIVER_PATH=build/gdalplugins-sid python3 tests/bench/multidim_bench.py --zarr``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))
sys.path.insert(0, str(HERE))

import timeseries_data as data  # noqa: E402
from servers import RangeServer  # noqa: E402

#: Where the drill and the window are read (pixels), and the window's dates.
PIXEL = (1111, 777)
WINDOW = (512, 512, 1024, 1024)
WINDOW_DAYS = (100, 129)
#: GDAL_NUM_THREADS for GDAL's Zarr driver's AdviseRead (I/O bound: more than the cores).
ADVISE_THREADS = 32

CLIENT = """
import sys, time
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
stack, view, query, out, array, driver = sys.argv[1:7]
x, y = {pixel}
wx, wy, ww, wh = {window}
d0, d1 = {days}
t0 = time.perf_counter()
if view == "raster":
    if query == "pixel":
        got = gdal.Open(stack).ReadAsArray(x, y, 1, 1)[:, 0, 0]
    else:
        ds = gdal.OpenEx(stack, open_options=[f"TIME_START={{d0}}", f"TIME_END={{d1}}"])
        got = ds.ReadAsArray(wx, wy, ww, wh)
else:
    # GDAL's Zarr driver opens a Kerchunk JSON file through its file system.
    path = "/vsikerchunk_json_ref/{{" + stack + "}}" if driver == "Zarr" else stack
    ds = gdal.OpenEx(path, gdal.OF_MULTIDIM_RASTER, allowed_drivers=[driver])
    data = ds.GetRootGroup().OpenMDArrayFromFullname(array)
    dims = data.GetDimensions()
    ones = [0] * (len(dims) - 3)
    if query == "pixel":
        start, count = [0, *ones, y, x], [dims[0].GetSize(), *[1] * len(ones), 1, 1]
    else:
        start, count = [d0, *ones, wy, wx], [d1 - d0 + 1, *[1] * len(ones), wh, ww]
    if view == "advise":
        # GDAL's way to fetch a read's chunks in parallel ahead of it.
        gdal.SetConfigOption("GDAL_NUM_THREADS", "{threads}")
        data.AdviseRead(start, count)
    got = data.ReadAsArray(array_start_idx=start, count=count)
    got = got.reshape(-1) if query == "pixel" else got.reshape(d1 - d0 + 1, wh, ww)
elapsed = time.perf_counter() - t0
np.save(out, got)
print(elapsed)
"""

QUERIES = ("pixel", "window")


def title(query: str, days: int) -> str:
    if query == "pixel":
        return f"one pixel on all {days} dates"
    return f"1024 x 1024 window on {WINDOW_DAYS[1] - WINDOW_DAYS[0] + 1} dates"


def measure(client: str, tmp: Path, runs: int, query: str, name: str, *opts: str):
    """Median seconds of `runs` fresh processes reading `query`, and the values."""
    import numpy as np

    times = []
    for r in range(runs):
        out = tmp / f"{name}-{query}-{r}.npy"
        done = subprocess.run([sys.executable, "-c", client, opts[0], opts[1], query, str(out),
                               *opts[2:]], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{name} {query}: {done.stderr.strip().splitlines()[-1:]}")
        times.append(float(done.stdout.strip().splitlines()[-1]))
    return statistics.median(times), np.load(out)


def zarr_store(root: Path, days: int) -> Path:
    """The Zarr v2 store of the first `days` dates' pixels (made once):
    (time, y, x) Int16, 1 x 512 x 512 chunks, ZSTD level 1, written by
    GDAL's Zarr driver."""
    from osgeo import gdal

    store = root / "zarr" / f"sst_{days}.zarr"
    done = store / "chunkref-bench-complete"
    if done.exists():
        return store
    gdal.UseExceptions()
    import shutil

    shutil.rmtree(store, ignore_errors=True)
    store.parent.mkdir(parents=True, exist_ok=True)
    ds = gdal.GetDriverByName("Zarr").CreateMultiDimensional(str(store), [], ["FORMAT=ZARR_V2"])
    group = ds.GetRootGroup()
    dims = [group.CreateDimension(n, None, None, s)
            for n, s in [("time", days), ("y", data.SIZE), ("x", data.SIZE)]]
    array = group.CreateMDArray(
        "sst", dims, gdal.ExtendedDataType.Create(gdal.GDT_Int16),
        ["COMPRESS=ZSTD", "ZSTD_LEVEL=1", f"BLOCKSIZE=1,{data.TILE},{data.TILE}"])
    for day in range(days):
        array.Write(data.pixels(day), array_start_idx=[day, 0, 0],
                    count=[1, data.SIZE, data.SIZE])
    del array, dims, group, ds
    done.write_text("")
    return store


def zarr_index(chunkref: Path, store: Path, root: Path, url: str, out: Path) -> Path:
    """``chunkref index`` of `store`, its local paths made `url` + the path
    under `root` (GDAL's Kerchunk JSON reader takes no templates)."""
    done = subprocess.run([str(chunkref), "index", str(store), "-o", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    prefix = str(root.resolve()) + "/"
    for key, ref in doc["refs"].items():
        if isinstance(ref, list) and ref[0].startswith(prefix):
            ref[0] = url + ref[0][len(prefix):]
    out.write_text(json.dumps(doc))
    return out


def table(headers: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(headers) + " |")
    print("|" + "---|" * len(headers))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=data.ROOT)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--zarr", action="store_true",
                        help="also chunkref against GDAL's Zarr driver on one Kerchunk JSON")
    args = parser.parse_args()
    chunkref = Path(os.environ.get("CHUNKREF_BIN", REPO / "target/release/chunkref"))
    names = [data.name(d) for d in range(args.days)]
    missing = [n for n in names if not (args.root / n).exists()]
    assert not missing, f"{len(missing)} files missing under {args.root}: run timeseries_data.py"
    client = CLIENT.format(pixel=PIXEL, window=WINDOW, days=WINDOW_DAYS,
                           threads=ADVISE_THREADS)
    server = RangeServer(args.root, delay=args.latency)
    try:
        run(args, chunkref, names, client, server)
    finally:
        server.close()


def run(args, chunkref: Path, names: list[str], client: str, server: RangeServer) -> None:
    """Indexes, reads and prints the tables (see the module's doc)."""
    import numpy as np
    from osgeo import gdal

    print(f"GDAL {gdal.__version__}, {args.days} dates, {args.latency * 1000:.0f} ms per "
          f"request, median of {args.runs} fresh processes")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        stack = tmp / "stack.parquet"
        subprocess.run([str(chunkref), "index", "--stack", "--datetime-from-name",
                        *[f"{server.url}{n}" for n in names], "-o", str(stack)],
                       check=True, capture_output=True)
        rows, cubes = [], {}
        for query in QUERIES:
            raster, bands = measure(client, tmp, args.runs, query, "raster",
                                    str(stack), "raster", "", "")
            cube, cubes[query] = measure(client, tmp, args.runs, query, "cube", str(stack),
                                         "multidim", "/0/data", "ChunkRef")
            np.testing.assert_array_equal(cubes[query], bands)
            rows.append([title(query, args.days), f"{raster:.3f} s", f"{cube:.3f} s",
                         f"{cube / raster:.2f}"])
        print("\nThe COG stack's index:")
        table(["query", "raster view", "multidimensional view", "ratio"], rows)
        if not args.zarr:
            return
        cog_json = tmp / "stack.json"
        subprocess.run([str(chunkref), "convert", str(stack), str(cog_json)], check=True,
                       capture_output=True)
        try:
            measure(client, tmp, 1, "pixel", "gdal-zarr-cog", str(cog_json), "multidim",
                    "/0/data", "Zarr")
            print("\nGDAL's Zarr driver reads the COG stack's Kerchunk JSON")
        except RuntimeError as e:
            print(f"\nGDAL's Zarr driver on the COG stack's Kerchunk JSON: {e}")
        store = zarr_store(args.root, args.days)
        refs = zarr_index(chunkref, store, args.root, server.url, tmp / "zarr.json")
        rows = []
        for query in QUERIES:
            ours, mine = measure(client, tmp, args.runs, query, "chunkref-zarr", str(refs),
                                 "multidim", "/sst", "ChunkRef")
            row = [title(query, args.days), f"{ours:.3f} s"]
            for view in ("multidim", "advise"):
                theirs, native = measure(client, tmp, args.runs, query, f"gdal-zarr-{view}",
                                         str(refs), view, "/sst", "Zarr")
                np.testing.assert_array_equal(native, mine)
                row += [f"{theirs:.3f} s", f"{theirs / ours:.2f}"]
            np.testing.assert_array_equal(mine, cubes[query])
            rows.append(row)
        print("\nOne Kerchunk JSON of a Zarr v2 store of the same pixels:")
        table(["query", "chunkref multidimensional view", f"GDAL {gdal.__version__} Zarr driver",
               "ratio", f"GDAL Zarr, AdviseRead first, GDAL_NUM_THREADS={ADVISE_THREADS}",
               "ratio"], rows)


if __name__ == "__main__":
    main()
