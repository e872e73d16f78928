"""The conda recipe's install, without conda (its channels cannot be
reached here): gdal_plugin/conda/build.sh installs into a prefix
directory as conda-build would into $PREFIX, and the prefix is used as an
activated environment is (libgdal-core's activation puts
$CONDA_PREFIX/lib/gdalplugins in GDAL_DRIVER_PATH; its bin/ on PATH): the
prefix's command indexes a source and GDAL reads the index through the
prefix's plugin as it reads the source."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
from osgeo import gdal

from conftest import REPO_ROOT


def test_recipe_installs_a_prefix_that_reads_like_gdal(tmp_path):
    prefix = tmp_path / "env"
    done = subprocess.run([str(REPO_ROOT / "gdal_plugin" / "conda" / "build.sh")], cwd=REPO_ROOT,
                          env={**os.environ, "PREFIX": str(prefix)}, capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    plugin = prefix / "lib" / "gdalplugins" / "gdal_ChunkRef.so"
    assert plugin.exists() and (prefix / "bin" / "chunkref").exists()
    # The activated environment: only the prefix's plugin directory.
    env = {**os.environ, "GDAL_DRIVER_PATH": str(plugin.parent),
           "PATH": f"{prefix / 'bin'}:{os.environ['PATH']}", "CPL_DEBUG": "ON"}
    source = tmp_path / "src.tif"
    mem = gdal.GetDriverByName("MEM").Create("", 300, 200, 2, gdal.GDT_Int16)
    mem.SetGeoTransform([500000, 30, 0, 4100000, 0, -30])
    for b in range(2):
        mem.GetRasterBand(b + 1).WriteArray(
            (np.arange(60000).reshape(200, 300) * (b + 3) % 30000).astype("int16"))
    gdal.GetDriverByName("GTiff").CreateCopy(
        str(source), mem, options=["TILED=YES", "COMPRESS=ZSTD", "BLOCKXSIZE=64", "BLOCKYSIZE=64"])
    index = tmp_path / "src.json"
    subprocess.run(["chunkref", "index", str(source), "-o", str(index)], env=env, check=True,
                   capture_output=True)
    copy = tmp_path / "copy.tif"
    done = subprocess.run(["gdal_translate", "-q", str(index), str(copy)], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert str(plugin) in done.stderr, "GDAL did not load the prefix's plugin"
    got, want = gdal.Open(str(copy)), gdal.Open(str(source))
    assert np.array_equal(got.ReadAsArray(), want.ReadAsArray())
    assert got.GetGeoTransform() == want.GetGeoTransform()
