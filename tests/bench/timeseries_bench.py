#!/usr/bin/python3
"""A year of remote daily COGs read by time (issue 29): chunkref against
the peers, side by side in one run, same server, same files.

Builds (once, tests/bench/timeseries_data.py) ``--days`` daily 2048 x 2048
Int16 ZSTD COGs with 512 x 512 tiles, distinct files, serves them with the
tests' range server (tests/python/servers.py) adding ``--latency`` to every
request, indexes them with ``chunkref index --stack --datetime-from-name
--from-list urls.txt -o stack.parquet`` and times, each in ``--runs`` fresh
processes (the median is shown):

- one pixel over all dates: ``ds.ReadAsArray(x, y, 1, 1)``, ``gdallocationinfo``
  (its wall time less GDAL's start-up, as the Python clients are timed
  after their imports), ``GetRasterBand(b).ReadRaster(x, y, 1, 1)`` band by
  band, rasterio's ``src.read(window=...)`` and R's terra (``r[cell]``, timed
  inside R after ``library(terra)``; Debian's r-cran-terra) (chunkref);
- a 1024 x 1024 window over 30 dates (``TIME_START``/``TIME_END`` open options);
- one 512 x 512 tile of one date; the full 2048 x 2048 of one date;
- the mean over all dates of the 2048 x 2048 (xarray + dask: chunkref's
  wheel and VirtualiZarr + Icechunk);
- indexing the files over HTTP (async-tiff: reading every header);
- indexing them from a STAC API search (``rustac serve`` on loopback, one
  item per file): ``chunkref index --stac`` against rasteret's
  ``build_from_stac``, and the pixel query on the index the search made.

``chunkref-py`` is chunkref's Python face (the wheel of
scripts/build-wheel.sh, installed into the peers' venv: no GDAL in its
process), reading the index the ``chunkref`` command wrote.

The peers come from PyPI, in the venv ``build/ts-peers-venv`` (made on
first use with a Python >= 3.12: VirtualiZarr 2.8 needs it): async-tiff,
VirtualiZarr + virtual-tiff + Icechunk + obstore, rasteret; and GDAL's
GTiff driver over ``/vsicurl/`` with a pool of 32 threads. Every read is
checked against GDAL reading the source files. Prints the table with
chunkref's ratio to the best peer, then the requests the server saw per
query (count, MB, most in flight at once) and the load average.

Run (the first run builds about 1.2 GB of files and installs the venv)::

    cargo build --release && gdal_plugin/install.sh build/gdalplugins
    GDAL_DRIVER_PATH=$PWD/build/gdalplugins tests/bench/timeseries_bench.py \\
        [--days 365] [--latency 0.02] [--runs 3] [--tools chunkref,gdal,...]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
from osgeo import gdal, osr

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "python"))
sys.path.insert(0, str(HERE))

import timeseries_data as data  # noqa: E402
from servers import RangeServer, RequestLog, StacApi  # noqa: E402

CHUNKREF = REPO / "target" / "release" / "chunkref"
CLIENTS = HERE / "timeseries_clients.py"
WORK = data.ROOT / "work"
VENV = REPO / "build" / "ts-peers-venv"
PEER_REQUIREMENTS = (
    "async-tiff==0.7.2",
    "obstore==0.12.1",
    "virtualizarr==2.8.0",
    "virtual-tiff==0.5.0",
    "icechunk==2.3.0",
    "rasteret==0.4.1",
    "numpy",
    "dask[array]",
)
PEER_CHECK = "import async_tiff, obstore, virtualizarr, virtual_tiff, icechunk, rasteret"
#: The STAC loaders, in a venv of their own (rasterio's wheel, the xarray
#: and numpy they take, apart from VirtualiZarr's pins).
STAC_VENV = REPO / "build" / "stac-peers-venv"
STAC_REQUIREMENTS = (
    "odc-stac==0.5.3",
    "stackstac==0.5.1",
    "rasterio==1.5.2",
    "pystac",
    "numpy",
    "xarray",
    "dask[array]",
)
STAC_CHECK = "import odc.stac, stackstac, rasterio, pystac"
STAC_LOADERS = ("odc-stac", "stackstac")
#: Column order; the first is ours.
TOOLS = ("chunkref", "chunkref-py", "chunkref-rio", "async-tiff", "gdal", "rasteret",
         "virtualizarr", *STAC_LOADERS)
#: The peers of chunkref's Python face (its ratio column).
PYTHON_PEERS = ("async-tiff", "rasteret", "virtualizarr", *STAC_LOADERS)
TOOL_TITLES = {
    "chunkref": "chunkref",
    "chunkref-py": "chunkref Python (wheel, no GDAL)",
    "chunkref-rio": "chunkref plugin through rioxarray 0.17 (Debian's GDAL)",
    "async-tiff": "async-tiff 0.7.2",
    "gdal": f"GDAL {gdal.__version__} /vsicurl/, 32 threads",
    "rasteret": "rasteret 0.4.1",
    "virtualizarr": "VirtualiZarr 2.8 + Icechunk 2.3",
    "odc-stac": "odc-stac 0.5.3 (rasterio 1.5.2 wheel)",
    "stackstac": "stackstac 0.5.1 (rasterio 1.5.2 wheel)",
}
#: Row order: (query, title, which tools run it).
QUERIES = (
    ("pixel", "one pixel on all {days} dates", TOOLS),
    ("pixel-locinfo", "... through gdallocationinfo (less GDAL's start-up)", ("chunkref",)),
    ("pixel-bands", "... band by band (GetRasterBand(b).ReadRaster)", ("chunkref",)),
    ("pixel-rasterio", "... through rasterio (src.read(window=...))", ("chunkref",)),
    ("pixel-terra", "... through R's terra (r[cell], timed in R)", ("chunkref",)),
    ("window", "1024 x 1024 window on {window_days} dates (TIME_START/TIME_END)", TOOLS),
    ("tile", "one 512 x 512 tile of one date", TOOLS),
    ("full", "full 2048 x 2048 of one date", TOOLS),
    ("mean", "mean of {days} dates over 2048 x 2048 (xarray + dask)",
     ("chunkref-py", "chunkref-rio", "virtualizarr", *STAC_LOADERS)),
    ("index", "index the {days} files over HTTP",
     tuple(t for t in TOOLS if t not in ("chunkref-py", "chunkref-rio", *STAC_LOADERS))),
    ("index-all", "... every header requested at once (no gate)", ("async-tiff",)),
    ("stac-index", "index the {days} items of a STAC API search (rustac serve)",
     ("chunkref", "rasteret")),
    ("pixel-stac", "one pixel on all {days} dates, index from the STAC search", ("chunkref",)),
)
#: The queries that make indexes (run first: the readers read what they wrote).
INDEX_QUERIES = ("index", "index-all", "stac-index")
#: Rows whose ratio is taken against the peers' row of another query.
PEER_ROW = {"pixel-locinfo": "pixel", "pixel-bands": "pixel", "pixel-rasterio": "pixel",
            "pixel-terra": "pixel", "pixel-stac": "pixel"}


def runs(python: str) -> bool:
    """True if ``python`` starts (a pyenv shim of a version not selected does not)."""
    return subprocess.run([python, "-c", "pass"], capture_output=True).returncode == 0


def python312() -> str:
    """A Python >= 3.12 on PATH or under pyenv (VirtualiZarr 2.8 and
    rasterio 1.5 need it)."""
    candidates = [shutil.which(f"python3.{m}") for m in (12, 13)]
    pyenv = Path.home() / ".pyenv" / "versions"
    candidates += sorted(str(p / "bin" / "python3") for p in pyenv.glob("3.1[23]*"))
    base = next((c for c in candidates if c and runs(c)), None)
    if base is None:
        sys.exit("no Python >= 3.12 found for the peers' venvs")
    return base


def venv_python(venv: Path, requirements: tuple[str, ...], check: str, what: str) -> Path:
    """``venv``'s python, the venv made on first use from a Python >= 3.12."""
    from venvs import ensure_venv

    if not (venv / "bin" / "python").exists():
        subprocess.run([python312(), "-m", "venv", str(venv)], check=True)
    return ensure_venv(venv, requirements, check, what)


def rioxarray_python() -> Path:
    """The venv of tests/python/test_dask_clients.py: rioxarray and dask
    from PyPI over Debian's rasterio and GDAL (which load the plugin)."""
    from test_dask_clients import CHECK, REQUIREMENTS
    from test_clients import DEBIAN_PYTHON
    from venvs import ensure_venv

    return ensure_venv(REPO / "build" / "dask-venv", REQUIREMENTS, CHECK,
                       "rioxarray and dask[distributed]", system_python=DEBIAN_PYTHON)


def install_wheel(python: Path) -> None:
    """Puts the wheel scripts/build-wheel.sh made into the peers' venv."""
    wheels = sorted((REPO / "build" / "wheelhouse").glob("chunkref-*.whl"))
    if not wheels:
        sys.exit("no wheel in build/wheelhouse: run scripts/build-wheel.sh first")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--force-reinstall",
                    "--no-deps", str(wheels[-1])], check=True)


PROJECTION = "https://stac-extensions.github.io/projection/v2.0.0/schema.json"


def stac_api(names: list[str], base: str) -> StacApi:
    """``rustac serve`` over one STAC item per file (collection ``ts``,
    asset ``data`` on the range server at ``base``, the day's datetime)."""
    from venvs import stac_python

    size = data.SIZE * data.PIXEL
    x0, y0 = data.ORIGIN
    corners = [(x0, y0), (x0 + size, y0), (x0 + size, y0 - size), (x0, y0 - size)]
    utm, wgs84 = osr.SpatialReference(), osr.SpatialReference()
    utm.ImportFromEPSG(data.EPSG)
    wgs84.ImportFromEPSG(4326)
    wgs84.SetAxisMappingStrategy(osr.OAMS_TRADITIONAL_GIS_ORDER)
    ring = [list(osr.CoordinateTransformation(utm, wgs84).TransformPoint(x, y)[:2])
            for x, y in corners]
    lon, lat = [p[0] for p in ring], [p[1] for p in ring]
    features = []
    for d, n in enumerate(names):
        day = data.DAY0 + datetime.timedelta(days=d)
        # The projection extension, as Sentinel-2's and Landsat's items
        # carry it (the STAC loaders plan their reads from it).
        features.append({
            "type": "Feature", "stac_version": "1.0.0", "id": Path(n).stem, "collection": "ts",
            "stac_extensions": [PROJECTION],
            "geometry": {"type": "Polygon", "coordinates": [ring + [ring[0]]]},
            "bbox": [min(lon), min(lat), max(lon), max(lat)],
            "properties": {"datetime": f"{day:%Y-%m-%d}T00:00:00Z",
                           "proj:code": f"EPSG:{data.EPSG}", "proj:shape": [data.SIZE] * 2,
                           "proj:transform": [data.PIXEL, 0, x0, 0, -data.PIXEL, y0]},
            "links": [],
            "assets": {"data": {"href": base + n, "roles": ["data"],
                                "type": "image/tiff; application=geotiff; profile=cloud-optimized"}},
        })
    items = WORK / "items.json"
    items.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    return StacApi(stac_python().parent / "rustac", items, WORK / "rustac-serve.log")


def query_config(query: str, days: int, names: list[str], base: str) -> dict:
    """Dates (first, last; 0-based) and window (x, y, width, height) of ``query``."""
    size, tile = data.SIZE, data.TILE
    if query.startswith("pixel"):
        dates, window = (0, days - 1), (1100, 700, 1, 1)
    elif query == "window":
        first = min(days // 4, max(days - 30, 0))
        dates, window = (first, min(first + 29, days - 1)), (512, 512, 1024, 1024)
    elif query == "tile":
        dates, window = (days * 5 // 9,) * 2, (512, 1024, tile, tile)
    elif query == "full":
        dates, window = (days * 7 // 9,) * 2, (0, 0, size, size)
    else:  # index, mean
        dates, window = (0, days - 1), (0, 0, size, size)
    iso = [f"{data.DAY0 + datetime.timedelta(days=d):%Y-%m-%d}" for d in range(days)]
    return {"query": query, "dates": dates, "window": window, "tile": tile,
            "names": names, "iso": iso, "base": base, "epsg": data.EPSG,
            "geo": [data.ORIGIN[0], data.ORIGIN[1], data.PIXEL, size]}


def expected(cfg: dict) -> np.ndarray:
    """What GDAL reads from the source files for ``cfg`` (for ``mean``, the
    mean of the dates, as float64)."""
    x, y, w, h = cfg["window"]
    first, last = cfg["dates"]
    out = []
    total = np.zeros((h, w), np.float64)
    for d in range(first, last + 1):
        ds = gdal.Open(str(data.ROOT / cfg["names"][d]))  # kept open while its band reads
        plane = ds.GetRasterBand(1).ReadAsArray(x, y, w, h)
        if cfg["query"] == "mean":
            total += plane
        else:
            out.append(plane)
    if cfg["query"] == "mean":
        return (total / (last - first + 1))[None]
    return np.stack(out).astype(np.int16)


class Cell:
    """The runs of one tool on one query."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        #: The start-up taken off each run's time (commands only; see
        #: timeseries_clients.locinfo_startup).
        self.startup: list[float] = []
        self.requests = 0
        #: Peak resident memory of each run's process, MiB.
        self.peak_mib: list[float] = []
        self.bytes = 0
        self.in_flight = 0
        self.error = ""
        #: Runs that failed (a crash of the tool, not a wrong pixel).
        self.failed = 0
        #: Runs that crashed after printing their result (at exit): their
        #: result is checked and their time counted.
        self.crashed_after = 0

    @property
    def median(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None


def result_line(stdout: str) -> dict | None:
    """The JSON line a client prints last, or None if it printed none."""
    lines = stdout.strip().splitlines()
    try:
        timed = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        return None
    return timed if isinstance(timed, dict) and "seconds" in timed else None


def run_cell(tool: str, query: str, cfg: dict, python: Path, server: RangeServer,
             runs: int, env: dict) -> Cell:
    """``runs`` fresh processes of ``tool`` on ``query``, each read checked
    against GDAL on the source files, with the server's counts of the last."""
    cell = Cell()
    want = None if query in INDEX_QUERIES else expected(cfg)
    for run in range(runs):
        config = WORK / f"{tool}-{query}.json"
        out = WORK / f"{tool}-{query}.npy"
        out.unlink(missing_ok=True)
        config.write_text(json.dumps({**cfg, "out": str(out)}))
        server.log = RequestLog()
        done = subprocess.run([str(python), str(CLIENTS), tool, query, str(config)],
                              capture_output=True, text=True, env=env, timeout=900)
        timed = result_line(done.stdout)
        if done.returncode != 0 and timed is not None:
            # async-tiff 0.7.2 dies at interpreter exit now and then
            # (SIGSEGV or SIGABRT, nothing on stderr), its work done.
            cell.crashed_after += 1
            print(f"  {tool} {query}: exit {done.returncode} after its result", file=sys.stderr)
        elif done.returncode != 0 or timed is None:
            last = (done.stderr.strip().splitlines() or [""])[-1][:200]
            cell.error = f"exit {done.returncode} {last}".strip()
            cell.failed += 1
            print(f"  {tool} {query}: FAILED (exit {done.returncode}): {done.stderr[-2000:]}",
                  file=sys.stderr)
            continue
        seconds = timed["seconds"]
        if want is not None:
            got = np.load(out)
            same = (np.allclose(got, want, rtol=0, atol=1e-9) if query == "mean"
                    else np.array_equal(got, want))
            if got.shape != want.shape or not same:
                cell.error = f"pixels differ from GDAL's (shape {got.shape}, want {want.shape})"
                print(f"  {tool} {query}: {cell.error}", file=sys.stderr)
                cell.seconds.clear()  # a wrong answer has no time
                return cell
        cell.seconds.append(seconds)
        if timed.get("peak_mib"):
            cell.peak_mib.append(timed["peak_mib"])
        if timed.get("startup"):
            cell.startup.append(timed["startup"])
        cell.requests = len(server.log.requests)
        cell.bytes = server.log.bytes_sent
        cell.in_flight = server.log.most_in_flight
        print(f"  {tool:12} {query:13} run {run + 1}: {seconds:.3f} s, "
              f"{cell.requests} requests, {cell.bytes / 1e6:.1f} MB, "
              f"most in flight {cell.in_flight}", file=sys.stderr, flush=True)
    return cell


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--chunkref", default=str(CHUNKREF),
                        help="the chunkref command (the plugin comes from GDAL_DRIVER_PATH)")
    parser.add_argument("--queries", default=",".join(q for q, _, _ in QUERIES),
                        help="the reads to time (the indexes are always made)")
    args = parser.parse_args()
    tools = [t for t in TOOLS if t in args.tools.split(",")]
    # Indexes are always made: the server's port, in their URLs, is new each run.
    queries = [q for q in QUERIES if q[0] in args.queries.split(",") + list(INDEX_QUERIES)]
    gdal.UseExceptions()
    names = data.build(args.days)
    load_before = os.getloadavg()
    python_peers = (venv_python(VENV, PEER_REQUIREMENTS, PEER_CHECK, "the time-series peers")
                    if set(tools) - {"chunkref", "chunkref-rio", "gdal", *STAC_LOADERS}
                    else None)
    python_rio = rioxarray_python() if "chunkref-rio" in tools else None
    python_stac = (venv_python(STAC_VENV, STAC_REQUIREMENTS, STAC_CHECK, "the STAC loaders")
                   if set(tools) & set(STAC_LOADERS) else None)
    if "chunkref-py" in tools:
        install_wheel(python_peers)
    WORK.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("GDAL_DRIVER_PATH", str(REPO / "build" / "gdalplugins"))
    server = RangeServer(data.ROOT, delay=args.latency)
    api = None
    try:
        base = server.url
        urls = WORK / "urls.txt"
        urls.write_text("".join(f"{base}{n}\n" for n in names))
        api = stac_api(names, base)
        shared = {"urls": str(urls), "stack": str(WORK / "stack.parquet"),
                  "stac_api": api.search, "stac_stack": str(WORK / "stac-stack.parquet"),
                  "stac_items": str(WORK / "items.json"),
                  "chunkref": args.chunkref, "work": str(WORK)}
        cells: dict[tuple[str, str], Cell] = {}
        # The indexes first: the readers of chunkref, VirtualiZarr and
        # rasteret read what their index run wrote.
        order = sorted(queries, key=lambda q: q[0] not in INDEX_QUERIES)
        for query, _, runs_for in order:
            cfg = {**query_config(query, args.days, names, base), **shared}
            for tool in tools:
                if tool not in runs_for or (tool == "gdal" and query in INDEX_QUERIES):
                    continue
                python = (Path(sys.executable) if tool in ("chunkref", "gdal")
                          else python_rio if tool == "chunkref-rio"
                          else python_stac if tool in STAC_LOADERS else python_peers)
                cells[tool, query] = run_cell(tool, query, cfg, python, server,
                                              args.runs, env)
    finally:
        server.close()
        if api is not None:
            api.close()
    load_after = os.getloadavg()
    report(args, tools, queries, cells, load_before, load_after)


def report(args, tools, queries, cells, load_before, load_after) -> None:
    fmt = {"days": args.days, "window_days": min(30, args.days)}
    print(f"\n{args.days} daily 2048 x 2048 Int16 ZSTD COGs (512 x 512 tiles), "
          f"{args.latency * 1000:.0f} ms added per request; median of {args.runs} fresh "
          f"processes; load average {load_before[0]:.1f} before, {load_after[0]:.1f} after\n")
    head = ["query"] + [TOOL_TITLES[t] for t in tools] + [
        "best peer / chunkref", "best Python peer / chunkref Python",
        "best Python peer / chunkref through rioxarray"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for query, title, _ in queries:
        row = [title.format(**fmt)]
        for tool in tools:
            cell = cells.get((tool, query))
            if cell is None:
                row.append("-")
            elif cell.median is None:
                row.append(f"failed: {cell.error}")
            else:
                failed = f" ({cell.failed} of {args.runs} runs failed)" if cell.failed else ""
                if cell.crashed_after:
                    failed += f" ({cell.crashed_after} crashed at exit, after the result)"
                row.append(f"{cell.median:.3f} s{failed}")
        peer_query = PEER_ROW.get(query, query)
        for me, peer_tools in (("chunkref", [t for t in TOOLS if not t.startswith("chunkref")]),
                               ("chunkref-py", PYTHON_PEERS), ("chunkref-rio", PYTHON_PEERS)):
            ours = cells.get((me, query))
            peers = [c.median for (t, q), c in cells.items()
                     if q == peer_query and t in peer_tools and c.median is not None]
            if ours is not None and ours.median and peers:
                row.append(f"{min(peers) / ours.median:.2f}x")
            else:
                row.append("-")
        print("| " + " | ".join(row) + " |")
    for (tool, query), cell in cells.items():
        if cell.startup:
            print(f"\n{tool} {query}: GDAL's start-up taken off each run's wall time "
                  f"(least of 3 `gdallocationinfo --version` before it): median "
                  f"{statistics.median(cell.startup):.3f} s")
    cell_table(f"peak resident memory of the client process (median of the runs, MiB, "
               f"imports included)", tools, queries, cells, fmt,
               lambda c: c.peak_mib and f"{statistics.median(c.peak_mib):.0f}")
    cell_table("requests the server saw (last run): count / MB / most in flight at once",
               tools, queries, cells, fmt,
               lambda c: c.seconds and f"{c.requests} / {c.bytes / 1e6:.1f} / {c.in_flight}")


def cell_table(heading, tools, queries, cells, fmt, show) -> None:
    """A table of one figure per query and tool: ``show(cell)``, or "-"
    where the tool did not run the query or ``show`` gives nothing."""
    print(f"\n{heading}\n")
    print("| query | " + " | ".join(TOOL_TITLES[t] for t in tools) + " |")
    print("|" + "---|" * (len(tools) + 1))
    for query, title, _ in queries:
        row = [title.format(**fmt)]
        for tool in tools:
            cell = cells.get((tool, query))
            row.append((cell is not None and show(cell)) or "-")
        print("| " + " | ".join(row) + " |")

if __name__ == "__main__":
    main()
