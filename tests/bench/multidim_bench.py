"""The multidimensional view against the raster view on the time series of
tests/bench/timeseries_bench.py (issue 44): the pixel drill over every date
and a 1024 x 1024 window over 30 dates, each read by a fresh process through
``gdal.OpenEx(stack, gdal.OF_MULTIDIM_RASTER)`` and through the raster view
(``ReadAsArray`` of the dataset; ``TIME_START``/``TIME_END`` for the window),
over HTTP with ``--latency`` added per request; median of ``--runs``, every
read checked against the other view.

    GDAL_DRIVER_PATH=build/gdalplugins /usr/bin/python3 tests/bench/multidim_bench.py \\
        [--root build/bench/timeseries] [--days 365] [--runs 5]
"""

from __future__ import annotations

import argparse
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

CLIENT = """
import sys, time
import numpy as np
from osgeo import gdal
gdal.UseExceptions()
stack, view, query, out = sys.argv[1:5]
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
    data = gdal.OpenEx(stack, gdal.OF_MULTIDIM_RASTER).GetRootGroup().OpenGroup("0") \\
        .OpenMDArray("data")
    steps = data.GetDimensions()[0].GetSize()
    if query == "pixel":
        got = data.ReadAsArray(array_start_idx=[0, 0, y, x], count=[steps, 1, 1, 1])[:, 0, 0, 0]
    else:
        got = data.ReadAsArray(array_start_idx=[d0, 0, wy, wx],
                               count=[d1 - d0 + 1, 1, wh, ww])[:, 0]
elapsed = time.perf_counter() - t0
np.save(out, got)
print(elapsed)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=data.ROOT)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.02)
    args = parser.parse_args()
    import numpy as np

    names = [data.name(d) for d in range(args.days)]
    missing = [n for n in names if not (args.root / n).exists()]
    assert not missing, f"{len(missing)} files missing under {args.root}: run timeseries_data.py"
    client = CLIENT.format(pixel=PIXEL, window=WINDOW, days=WINDOW_DAYS)
    server = RangeServer(args.root, delay=args.latency)
    with tempfile.TemporaryDirectory() as tmp:
        stack = Path(tmp) / "stack.parquet"
        subprocess.run([str(REPO / "target/release/chunkref"), "index", "--stack",
                        "--datetime-from-name", *[f"{server.url}{n}" for n in names],
                        "-o", str(stack)], check=True, capture_output=True)
        print(f"{args.days} dates, {args.latency * 1000:.0f} ms per request, "
              f"median of {args.runs} fresh processes")
        print("| query | raster view | multidimensional view | ratio |")
        print("|---|---|---|---|")
        for query, title in [("pixel", f"one pixel on all {args.days} dates"),
                             ("window", f"1024 x 1024 window on "
                                        f"{WINDOW_DAYS[1] - WINDOW_DAYS[0] + 1} dates")]:
            times, values = {}, {}
            for view in ("raster", "multidim"):
                runs = []
                for r in range(args.runs):
                    out = Path(tmp) / f"{view}-{query}-{r}.npy"
                    opts = [str(stack), view, query, str(out)]
                    done = subprocess.run([sys.executable, "-c", client, *opts],
                                          capture_output=True, text=True, check=True)
                    runs.append(float(done.stdout.strip().splitlines()[-1]))
                    values[view] = np.load(out)
                times[view] = statistics.median(runs)
            np.testing.assert_array_equal(values["multidim"], values["raster"])
            print(f"| {title} | {times['raster']:.3f} s | {times['multidim']:.3f} s | "
                  f"{times['multidim'] / times['raster']:.2f} |")
    server.close()


if __name__ == "__main__":
    main()
