"""The ChunkRef plugin inside pip's rasterio (issue 43): the plugin the
wheel chunkref-rasterio (`chunkref[rasterio]`, scripts/build-plugin-wheel.sh)
installed into this venv for the libgdal its rasterio wheel bundles (1.4.4:
GDAL 3.10.3 in the test command; 1.5.2: GDAL 3.12.2 with
scripts/test-rasterio-wheels.sh), loaded through GDAL_DRIVER_PATH or
chunkref.gdal.register() by rasterio from PyPI, with no Debian GDAL in the
process. Reads (whole, windows, overviews, band by band) must equal
Debian's GDAL reading the source files; rioxarray with dask's LocalCluster
and TiTiler too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import gdal_shows

#: Run in a fresh process (GDAL_DRIVER_PATH is read when rasterio's GDAL
#: registers its drivers): reads INDEX through rasterio every way a client
#: does and saves what it read.
READER = """
import json, sys
import numpy as np
import rasterio
from rasterio.windows import Window
index, out = sys.argv[1:3]
with rasterio.open(index) as src:
    assert src.driver == "ChunkRef", src.driver
    arrays = {"whole": src.read(),
              "window": src.read(window=Window(33, 10, 217, 60)),
              "bands": np.stack([src.read(b) for b in src.indexes])}
    factors = src.overviews(1)
    for i, f in enumerate(factors):
        arrays[f"level_{i + 1}"] = src.read(out_shape=(src.count, src.height // f, src.width // f))
    meta = {"crs": src.crs.to_wkt() if src.crs else None, "transform": list(src.transform.to_gdal()),
            "nodata": src.nodata, "dtypes": list(src.dtypes), "overviews": factors,
            "gdal": rasterio.__gdal_version__, "rasterio": rasterio.__version__}
np.savez(out, meta=np.array(json.dumps(meta)), **arrays)
"""


def plugin_dir(rasterio_version: str):
    """The installed plugin for this venv's rasterio."""
    import chunkref.gdal
    import rasterio

    assert rasterio.__version__ == rasterio_version
    return chunkref.gdal.plugin_dir()


def test_the_extra_installed_a_manylinux_plugin_for_this_rasterio():
    """``chunkref[rasterio]`` brought the wheel chunkref-rasterio, whose
    plugin for this rasterio's GDAL links the library rasterio bundles (by
    its soname, found among the libraries rasterio loaded) and finds the
    libraries grafted beside it, with nothing from Debian."""
    import chunkref.gdal
    import chunkref_rasterio
    import rasterio

    minor = ".".join(rasterio.__gdal_version__.split(".")[:2])
    assert minor in chunkref.gdal.supported()
    plugin = chunkref.gdal.plugin_dir() / "gdal_ChunkRef.so"
    assert plugin.is_relative_to(chunkref_rasterio.PLUGINS)
    libs = [(Path(m.__file__).parent.parent / f"{m.__name__}.libs").resolve()
            for m in (rasterio, chunkref_rasterio)]
    needed = [line.split("[")[1].rstrip("]") for line in subprocess.run(
        ["readelf", "-d", str(plugin)], capture_output=True, text=True).stdout.splitlines()
        if "(NEEDED)" in line]
    ldd = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True,
                         env={**os.environ, "LD_LIBRARY_PATH": str(libs[0])}).stdout
    found = {line.split("=>")[0].strip(): line.split("=>")[1].split()[0]
             for line in ldd.splitlines() if "=>" in line}
    for name in needed:
        if name.split(".so")[0] in SYSTEM:
            continue
        assert name in found and found[name] != "not", (name, ldd)
        assert Path(found[name]).resolve().parent in libs, (name, found[name])
    assert any(n.startswith("libgdal-") for n in needed), needed


#: The libraries manylinux allows a wheel to take from the system.
SYSTEM = {"libc", "libm", "libstdc++", "libgcc_s", "libpthread", "libdl", "ld-linux-x86-64",
          "librt"}


def _read_through_rasterio(index, out, plugins) -> dict:
    env = {**os.environ, "GDAL_DRIVER_PATH": str(plugins)}
    p = subprocess.run([sys.executable, "-c", READER, str(index), str(out)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    z = np.load(out)
    return {"meta": json.loads(str(z["meta"])), **{k: z[k] for k in z.files if k != "meta"}}


@pytest.mark.parametrize("kind", ["tiff-deflate", "cog-webp", "nitf-c3", "jp2-tiles"])
def test_rasterio_wheel_reads_as_debian_gdal(kind, indexed, tmp_path):
    import rasterio

    root, index = indexed(kind)
    got = _read_through_rasterio(index, tmp_path / "rio.npz", plugin_dir(rasterio.__version__))
    assert got["meta"]["gdal"] == rasterio.__gdal_version__, got["meta"]
    source = next(p for p in root.iterdir() if p.name.startswith("src."))
    native = gdal_shows(str(source), tmp_path / "native.npz")
    whole = native.levels[0]
    assert np.array_equal(got["whole"], whole)
    assert np.array_equal(got["bands"], whole)
    assert np.array_equal(got["window"], whole[:, 10:70, 33:250])
    assert got["meta"]["transform"] == native.meta["transform"] or native.meta["transform"] is None
    if native.meta["driver"] == "GTiff":
        assert len(got["meta"]["overviews"]) == len(native.levels) - 1
        for i in range(1, len(native.levels)):
            assert np.array_equal(got[f"level_{i}"], native.levels[i]), f"overview {i}"


DASK = """
import sys
import numpy as np
import rioxarray
from dask.distributed import Client, LocalCluster
index = sys.argv[1]
with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                  dashboard_address=None) as cluster, Client(cluster):
    da = rioxarray.open_rasterio(index, chunks={"band": 1, "x": 64, "y": 64}, lock=False)
    total = int(da.astype("int64").sum().compute())
print(total)
"""


def test_rioxarray_with_a_local_cluster(indexed, tmp_path):
    import rasterio

    root, index = indexed("tiff-deflate")
    env = {**os.environ, "GDAL_DRIVER_PATH": str(plugin_dir(rasterio.__version__))}
    p = subprocess.run([sys.executable, "-c", DASK, str(index)], capture_output=True,
                       text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    native = gdal_shows(str(root / "src.tif"), tmp_path / "native.npz")
    assert int(p.stdout.split()[-1]) == int(native.levels[0].astype("int64").sum())


REGISTER = """
import sys
import numpy as np
import rasterio
import chunkref.gdal
chunkref.gdal.register()
chunkref.gdal.register()  # twice is harmless
with rasterio.open(sys.argv[1]) as src:
    print(src.driver, int(src.read().astype("int64").sum()))
"""


def test_register_into_a_running_rasterio(indexed, tmp_path):
    """``chunkref.gdal.register()`` after ``import rasterio``, with no
    GDAL_DRIVER_PATH: the plugin matching rasterio's GDAL is registered."""
    root, index = indexed("tiff-deflate")
    env = {k: v for k, v in os.environ.items() if k != "GDAL_DRIVER_PATH"}
    args = [sys.executable, "-c", REGISTER, str(index)]
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    driver, total = p.stdout.split()
    native = gdal_shows(str(root / "src.tif"), tmp_path / "native.npz")
    assert driver == "ChunkRef" and int(total) == int(native.levels[0].astype("int64").sum())


def test_a_gdal_without_a_plugin_is_named():
    import chunkref.gdal

    with pytest.raises(RuntimeError, match=r"GDAL 3\.99\.1.*plugins for GDAL"):
        chunkref.gdal.plugin_dir("3.99.1")


def test_without_the_extra_the_message_names_it(monkeypatch):
    import chunkref.gdal

    monkeypatch.setattr(chunkref.gdal, "PLUGINS", None)
    assert chunkref.gdal.supported() == []
    with pytest.raises(RuntimeError, match=r"GDAL 3\.10\.3.*pip install 'chunkref\[rasterio\]'"):
        chunkref.gdal.plugin_dir("3.10.3")


TITILER = """
import sys
from fastapi import FastAPI
from starlette.testclient import TestClient
from titiler.core.factory import TilerFactory
index, source = sys.argv[1:3]
app = FastAPI()
app.include_router(TilerFactory().router)
client = TestClient(app)
info = client.get("/info", params={"url": index})
assert info.status_code == 200, info.text
assert info.json()["driver"] == "ChunkRef", info.json()
same = 0
for z, x, y in [(12, 2219, 1594), (13, 4438, 3188), (11, 1109, 797)]:
    tiles = [client.get(f"/tiles/WebMercatorQuad/{z}/{x}/{y}.npy",
                        params={"url": url, "bidx": [1, 2, 3]}) for url in (index, source)]
    assert tiles[0].status_code == tiles[1].status_code, [t.text for t in tiles]
    if tiles[0].status_code == 200:
        assert tiles[0].content == tiles[1].content, (z, x, y)
        same += 1
print(same)
"""


def test_titiler_tiles_of_an_index_are_the_source_tiles(indexed):
    """TiTiler (titiler.core from PyPI, in process, its rasterio from PyPI):
    the tiles of an index are byte for byte those of its source."""
    import rasterio

    root, index = indexed("tiff-deflate")
    env = {**os.environ, "GDAL_DRIVER_PATH": str(plugin_dir(rasterio.__version__))}
    p = subprocess.run([sys.executable, "-c", TITILER, str(index), str(root / "src.tif")],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert int(p.stdout.split()[-1]) == 3, "a tile did not cover the image"
