"""QGIS, headless, as its users reach an index: PyQGIS from Debian's
``python3-qgis`` (linked to the system GDAL, so GDAL_DRIVER_PATH reaches
it) under Debian's /usr/bin/python3 with ``QT_QPA_PLATFORM=offscreen``.

The index is loaded as a ``QgsRasterLayer`` through the "gdal" provider
beside the source COG, and must match it: validity, extent, CRS, size,
band count and data types; the bytes of blocks read through the data
provider (the full extent at full and at reduced resolution, and a window);
and the images rendered by QGIS' sequential and parallel map renderers for
the same map settings (full view, zoomed in, zoomed out).  When PyQGIS is
not installed the test is skipped with a message naming ``python3-qgis``
(scripts/setup.sh installs it)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from test_clients import DEBIAN_PYTHON, pair  # noqa: F401  (the fixture)

#: Seconds the PyQGIS script may take (it takes about 1.5 s): a hang fails.
TIMEOUT = 180

#: argv: INDEX SOURCE OUTDIR.  Prints one line per check and "qgis ok".
SCRIPT = r"""
import hashlib, sys
from qgis.core import (Qgis, QgsApplication, QgsMapRendererParallelJob,
                       QgsMapRendererSequentialJob, QgsMapSettings, QgsRasterLayer,
                       QgsRectangle)
from qgis.PyQt.QtCore import QSize
from qgis.PyQt.QtGui import QColor, QImage

index, src, outdir = sys.argv[1:4]
app = QgsApplication([], False)
app.initQgis()
print("QGIS", Qgis.QGIS_VERSION)

a = QgsRasterLayer(index, "index", "gdal")
b = QgsRasterLayer(src, "source", "gdal")
assert a.isValid(), "index layer is not valid: " + a.error().summary()
assert b.isValid(), "source layer is not valid: " + b.error().summary()
pa, pb = a.dataProvider(), b.dataProvider()
assert pa.name() == "gdal", pa.name()
assert "ChunkRef" in pa.htmlMetadata(), "the index was not opened by ChunkRef"
assert a.extent() == b.extent(), (a.extent().toString(), b.extent().toString())
assert a.crs() == b.crs() and a.crs().authid() == "EPSG:32633", (a.crs().authid(), b.crs().authid())
assert (a.width(), a.height()) == (b.width(), b.height()) == (300, 200), (a.width(), a.height())
assert a.bandCount() == b.bandCount() == 3, (a.bandCount(), b.bandCount())
for band in range(1, 4):
    assert pa.dataType(band) == pb.dataType(band) == Qgis.DataType.Byte, (band, pa.dataType(band))
print("layers ok", a.extent().toString(), a.crs().authid())

def block_bytes(provider, band, extent, width, height):
    block = provider.block(band, extent, width, height)
    assert block.isValid() and (block.width(), block.height()) == (width, height), band
    return bytes(block.data())

full = b.extent()
window = QgsRectangle(500370.0, 5000630.0, 501630.0, 5001510.0)  # pixel-aligned: 126 x 88
reads = [(full, 300, 200), (full, 75, 50), (window, 126, 88), (window, 50, 35)]
for extent, width, height in reads:
    for band in range(1, 4):
        got = block_bytes(pa, band, extent, width, height)
        want = block_bytes(pb, band, extent, width, height)
        assert got == want, ("block differs", band, extent.toString(), width, height)
        assert len(set(got)) > 1, ("constant block", band)
print("blocks ok")

def render(layer, job_class, extent, size):
    settings = QgsMapSettings()
    settings.setLayers([layer])
    settings.setDestinationCrs(b.crs())
    settings.setExtent(extent)
    settings.setOutputSize(QSize(*size))
    settings.setBackgroundColor(QColor(255, 255, 255))
    job = job_class(settings)
    job.start()
    job.waitForFinished()
    image = job.renderedImage().convertToFormat(QImage.Format_ARGB32)
    assert image.size() == QSize(*size), image.size()
    bits = image.constBits()
    bits.setsize(image.sizeInBytes())
    return image, bytes(bits)

views = {"full": (full, (300, 200)), "zoom-in": (window, (504, 352)), "zoom-out": (full, (60, 40))}
for name, (extent, size) in views.items():
    for job_class in (QgsMapRendererSequentialJob, QgsMapRendererParallelJob):
        image_a, bytes_a = render(a, job_class, extent, size)
        image_b, bytes_b = render(b, job_class, extent, size)
        if bytes_a != bytes_b:
            image_a.save(f"{outdir}/{name}-{job_class.__name__}-index.png")
            image_b.save(f"{outdir}/{name}-{job_class.__name__}-source.png")
        assert bytes_a == bytes_b, ("rendered images differ", name, job_class.__name__, outdir)
        colours = len(set(bytes_a[i:i + 4] for i in range(0, len(bytes_a), 4)))
        assert colours > 50, ("the rendered image is nearly blank", name, colours)
        print("render ok", name, job_class.__name__, size, colours,
              hashlib.sha256(bytes_a).hexdigest()[:16])
# Layers that outlive exitQgis() crash the interpreter at exit (a GeoTIFF
# layer as well): drop every reference to them first.
del a, b, pa, pb, image_a, image_b
app.exitQgis()
print("qgis ok", flush=True)
"""


def _qgis_env(tmp_path: Path) -> dict[str, str]:
    """The environment (GDAL_DRIVER_PATH inherited), with Qt offscreen and
    QGIS' settings and runtime folders kept under tmp_path."""
    runtime = tmp_path / "xdg-runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = dict(os.environ)
    env.update(
        QT_QPA_PLATFORM="offscreen",
        XDG_RUNTIME_DIR=str(runtime),
        XDG_CONFIG_HOME=str(tmp_path / "xdg-config"),
        XDG_DATA_HOME=str(tmp_path / "xdg-data"),
        XDG_CACHE_HOME=str(tmp_path / "xdg-cache"),
    )
    return env


def test_qgis_reads_and_renders_like_gtiff(pair, tmp_path):  # noqa: F811
    env = _qgis_env(tmp_path)
    probe = subprocess.run(
        [DEBIAN_PYTHON, "-c", "import qgis.core"], capture_output=True, text=True, env=env,
        timeout=120,
    )
    if probe.returncode:
        pytest.skip(
            f"PyQGIS is not installed (Debian package python3-qgis):\n{probe.stderr[-500:]}"
        )
    tif, index = pair
    done = subprocess.run(
        [DEBIAN_PYTHON, "-c", SCRIPT, str(index), str(tif), str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=TIMEOUT, cwd=tmp_path,
    )
    assert done.returncode == 0, f"PyQGIS failed:\n{done.stderr[-3000:]}\n{done.stdout[-2000:]}"
    assert "qgis ok" in done.stdout, done.stdout
    assert done.stdout.count("render ok") == 6, done.stdout
