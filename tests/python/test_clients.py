"""The real clients the driver exists for, from Debian's packages (linked
to the system GDAL, so GDAL_DRIVER_PATH reaches them): rasterio
(``python3-rasterio``) and R's terra (``r-cran-terra``).  Each reads an
index the way its users do (rasterio: ``read(1)`` and windows, overviews;
terra: ``rast()`` then values, a crop), and must see GDAL's own pixels,
georeferencing and overviews.  A client that is not installed is skipped
with a message naming its package (scripts/setup.sh installs both)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from test_tiff_index import TIFF_CASES, index_tiff, write_tiff

#: Debian's interpreter: the one whose rasterio uses the system GDAL.
DEBIAN_PYTHON = "/usr/bin/python3"


@pytest.fixture(scope="module")
def pair(chunkref_bin, tmp_path_factory):
    """(source GeoTIFF, its index): 3 bands, UTM, overviews, partial tiles."""
    tmp = tmp_path_factory.mktemp("clients")
    src = write_tiff(tmp / "plain.tif", TIFF_CASES["cog-deflate-pred2-3band"], (300, 200))
    tif = tmp / "src.tif"
    gdal.Translate(str(tif), str(src), outputSRS="EPSG:32633",
                   outputBounds=[500000, 5002000, 503000, 5000000], format="COG",
                   creationOptions=["BLOCKSIZE=64", "COMPRESS=DEFLATE", "PREDICTOR=YES"])
    index = tmp / "src.json"
    index_tiff(chunkref_bin, tif, index)
    return tif, index


def run(cmd: list[str], tmp_path: Path) -> str:
    env = dict(os.environ)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, f"{cmd[0]} failed:\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}"
    return done.stdout


RASTERIO = r"""
import sys, numpy as np, rasterio
from rasterio.windows import Window
index, src, out = sys.argv[1:4]
with rasterio.open(index) as a, rasterio.open(src) as b:
    assert a.driver == "ChunkRef", a.driver
    assert a.count == b.count and a.shape == b.shape, (a.count, a.shape)
    assert a.crs == b.crs and a.transform.almost_equals(b.transform), (a.crs, a.transform)
    assert a.overviews(1) == b.overviews(1), (a.overviews(1), b.overviews(1))
    for band in range(1, a.count + 1):
        assert np.array_equal(a.read(band), b.read(band)), band
    w = Window(37, 21, 150, 90)
    assert np.array_equal(a.read(window=w), b.read(window=w))
    small = dict(out_shape=(3, 50, 75))
    assert np.array_equal(a.read(**small), b.read(**small))
    np.save(out, a.read())
print("rasterio ok")
"""


def test_rasterio_reads_like_gtiff(pair, tmp_path):
    if subprocess.run([DEBIAN_PYTHON, "-c", "import rasterio"], capture_output=True).returncode:
        pytest.skip("rasterio is not installed (Debian package python3-rasterio)")
    tif, index = pair
    out = run([DEBIAN_PYTHON, "-c", RASTERIO, str(index), str(tif), str(tmp_path / "a.npy")],
              tmp_path)
    assert "rasterio ok" in out
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), gdal.Open(str(tif)).ReadAsArray())


TERRA = r"""
args <- commandArgs(trailingOnly = TRUE)
library(terra)
# terra >= 1.9 opens with GDAL's multidimensional view first where a driver
# has one (chunkref's does): the raster view is md = FALSE there, and terra
# before 1.8 has no md argument.
a <- tryCatch(rast(args[1], md = FALSE), error = function(e) rast(args[1]))
b <- rast(args[2])
# The default open, whichever view: the same cells (the multidimensional
# view reads them as doubles, layers named after the array).
d <- rast(args[1])
stopifnot(isTRUE(all.equal(unname(values(d)), unname(values(b)))),
          isTRUE(all.equal(as.vector(ext(d)), as.vector(ext(b)))))
stopifnot(nlyr(a) == nlyr(b), nrow(a) == nrow(b), ncol(a) == ncol(b))
stopifnot(isTRUE(all.equal(as.vector(ext(a)), as.vector(ext(b)))))
stopifnot(identical(crs(a), crs(b)))
stopifnot(identical(values(a), values(b)))
e <- ext(500300, 501700, 5000500, 5001500)
stopifnot(identical(values(crop(a, e)), values(crop(b, e))))
cat("terra ok", sum(values(a)), "\n")
"""


def test_terra_reads_like_gtiff(pair, tmp_path):
    if shutil.which("Rscript") is None or subprocess.run(
        ["Rscript", "-e", "library(terra)"], capture_output=True
    ).returncode:
        pytest.skip("R terra is not installed (Debian package r-cran-terra)")
    tif, index = pair
    script = tmp_path / "check.R"
    script.write_text(TERRA)
    out = run(["Rscript", str(script), str(index), str(tif)], tmp_path)
    assert "terra ok" in out
    total = int(gdal.Open(str(tif)).ReadAsArray().astype(np.int64).sum())
    assert f"terra ok {total}" in out or f"terra ok {float(total):g}" in out, out
