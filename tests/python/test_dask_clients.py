"""rioxarray + dask, the way a notebook reads an index in parallel:
``rioxarray.open_rasterio(index, chunks=(1, 64, 64), lock=False)`` computed

* on a ``dask.distributed.LocalCluster`` of two worker processes started
  with each multiprocessing method, fork and spawn, and
* with dask's local "processes" scheduler (a process pool, fork or spawn),

each time after the parent has already read the index (so the forked
children inherit a driver that has its pools and caches built: the
fork-after-read case).  Every result must equal rioxarray's read of the
source GeoTIFF, with the same coordinates, CRS and transform, and each case
runs in its own interpreter under a timeout, so a hang fails.

rioxarray and dask come from PyPI into ``build/dask-venv``, a venv made
from Debian's /usr/bin/python3 with ``--system-site-packages``: its
rasterio is Debian's ``python3-rasterio`` (linked to the system GDAL, so
GDAL_DRIVER_PATH reaches it; a PyPI rasterio wheel bundles its own libgdal
and cannot load the plugin), and the pins keep Debian's rasterio and numpy.
Only an unreachable PyPI skips these tests (``venvs.ensure_venv``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from osgeo import gdal

from conftest import REPO_ROOT
from test_clients import DEBIAN_PYTHON, pair  # noqa: F401  (the fixture)
from venvs import ensure_venv

#: Versions for Python 3.11 and numpy 1.24 (rioxarray 0.17 needs
#: rasterio >= 1.3, xarray 2024.7 pandas >= 2.0, dask 2024.8 numpy >= 1.24);
#: numpy and rasterio are pinned to Debian's so pip keeps the system ones.
REQUIREMENTS = [
    "rioxarray==0.17.0",
    "xarray==2024.7.0",
    "dask[distributed]==2024.8.0",
    "distributed==2024.8.0",
    "pandas==2.2.2",
    "pyproj==3.6.1",
    "numpy==1.24.2",
    "rasterio==1.3.5",
]

CHECK = (
    "import numpy, rasterio, rioxarray, dask.distributed\n"
    "assert numpy.__version__ == '1.24.2', numpy.__version__\n"
    "assert rasterio.__version__ == '1.3.5', rasterio.__version__\n"
    "assert rasterio.__file__.startswith('/usr/lib/python3/'), rasterio.__file__\n"
)

#: Seconds one case may take (the slowest, a spawned two-worker cluster,
#: takes about 4 s here): more is a hang.
TIMEOUT = 150

#: The case, as a script file (spawned workers import it again, so the work
#: is under the main guard): argv INDEX SOURCE MODE METHOD.
SCRIPT = r"""
import os, sys
import numpy as np

#: Set by the parent once it has read the index: a forked worker has it,
#: a spawned one (which imports this file again) does not.
PARENT_READ = False


def parent_read():
    return getattr(sys.modules["__main__"], "PARENT_READ", False)


def main(index, source, mode, method):
    global PARENT_READ
    import dask
    import rasterio
    import rioxarray

    with rasterio.open(index) as ds:
        assert ds.driver == "ChunkRef", ds.driver

    want = rioxarray.open_rasterio(source)
    want_values = want.values
    assert want_values.shape == (3, 200, 300), want_values.shape

    # The parent reads the index first: the driver's pools exist before the fork.
    first = rioxarray.open_rasterio(index, chunks=(1, 64, 64), lock=False)
    assert np.array_equal(first.compute(scheduler="synchronous").values, want_values)
    PARENT_READ = True

    lazy = rioxarray.open_rasterio(index, chunks=(1, 64, 64), lock=False)
    assert lazy.chunks == ((1, 1, 1), (64, 64, 64, 8), (64, 64, 64, 64, 44)), lazy.chunks
    assert lazy.rio.crs == want.rio.crs, (lazy.rio.crs, want.rio.crs)
    assert lazy.rio.transform() == want.rio.transform(), lazy.rio.transform()
    for name in ("band", "x", "y"):
        assert np.array_equal(lazy[name].values, want[name].values), name

    if mode == "distributed":
        from dask.distributed import Client, LocalCluster
        dask.config.set({"distributed.worker.multiprocessing-method": method})
        with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            got = lazy.compute()
            inherited = client.run(parent_read)
            executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
            pids = client.run(os.getpid)
        assert len(pids) == 2 and os.getpid() not in pids.values(), pids
        assert sum(executed.values()) >= 60, executed  # the 60 chunk reads ran in the workers
        assert set(inherited.values()) == {method == "fork"}, (method, inherited)
    else:
        dask.config.set({"multiprocessing.context": method})
        got = lazy.compute(scheduler="processes", num_workers=2)
    assert isinstance(got.data, np.ndarray), type(got.data)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape)
    assert np.array_equal(got.values, want_values), "the index computes to other pixels"
    print(mode, method, "ok", int(got.values.astype(np.int64).sum()))


if __name__ == "__main__":
    main(*sys.argv[1:5])
"""


@pytest.fixture(scope="module")
def dask_python() -> Path:
    """Python of build/dask-venv (skips only when PyPI is unreachable)."""
    return ensure_venv(
        REPO_ROOT / "build" / "dask-venv",
        REQUIREMENTS,
        CHECK,
        "rioxarray and dask[distributed]",
        system_python=DEBIAN_PYTHON,
    )


@pytest.mark.parametrize(
    "mode,method",
    [
        ("distributed", "fork"),
        ("distributed", "spawn"),
        ("processes", "fork"),
        ("processes", "spawn"),
    ],
)
def test_rioxarray_dask_computes_like_gtiff(
    pair, dask_python, tmp_path, mode, method  # noqa: F811
):
    tif, index = pair
    script = tmp_path / "case.py"
    script.write_text(SCRIPT)
    try:
        done = subprocess.run(
            [str(dask_python), str(script), str(index), str(tif), mode, method],
            capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path,
        )
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"{mode} ({method}) hung for {TIMEOUT} s:\n{hung.stderr}\n{hung.stdout}")
    assert done.returncode == 0, f"{mode} ({method}) failed:\n{done.stderr[-4000:]}\n{done.stdout}"
    ds = gdal.Open(str(tif))
    total = int(ds.ReadAsArray().astype("int64").sum())
    assert f"{mode} {method} ok {total}" in done.stdout, done.stdout
