"""The ChunkRef GDAL driver inside pip's rasterio.

A rasterio wheel bundles its own libgdal, which cannot load a plugin built
for another GDAL. ``pip install chunkref[rasterio]`` adds the wheel
``chunkref-rasterio``: ChunkRef plugins built for the libgdal of rasterio's
wheels (scripts/build-plugin-wheel.sh), one per GDAL major.minor;
:func:`register` loads the one matching the running rasterio into it::

    import rasterio, chunkref.gdal
    chunkref.gdal.register()
    rasterio.open("index.parquet")

:func:`plugin_dir` gives the directory to put in ``GDAL_DRIVER_PATH``
instead, before rasterio is imported (for processes that import rasterio
themselves: dask workers, TiTiler).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

try:
    from chunkref_rasterio import PLUGINS as _INSTALLED
except ImportError:  # chunkref installed without its `rasterio` extra
    _INSTALLED = None

#: Where the plugins are: ``<major.minor>/gdal_ChunkRef.so`` under it (a
#: ``str`` or ``Path``; those of the ``chunkref-rasterio`` wheel by default,
#: ``None`` when it is not installed).
PLUGINS = _INSTALLED


def supported() -> list[str]:
    """The GDAL major.minor versions this wheel has a plugin for."""
    if PLUGINS is None or not Path(PLUGINS).is_dir():
        return []
    plugins = Path(PLUGINS)
    return sorted(d.name for d in plugins.iterdir() if (d / "gdal_ChunkRef.so").exists())


def _running_gdal() -> tuple[str, str]:
    """(rasterio's version, its GDAL's version); imports rasterio."""
    import rasterio

    return rasterio.__version__, rasterio.__gdal_version__


def plugin_dir(gdal_version: str | None = None) -> Path:
    """The directory holding the plugin for ``gdal_version`` (by default
    the GDAL of the installed rasterio), for ``GDAL_DRIVER_PATH``."""
    if gdal_version is None:
        rasterio_version, gdal_version = _running_gdal()
    else:
        rasterio_version = "?"
    minor = ".".join(gdal_version.split(".")[:2])
    if PLUGINS is None:
        raise RuntimeError(
            f"rasterio {rasterio_version} bundles GDAL {gdal_version}; the ChunkRef plugins "
            f"for rasterio's GDAL come with the `rasterio` extra: pip install 'chunkref[rasterio]'")
    d = Path(PLUGINS) / minor
    if not (d / "gdal_ChunkRef.so").exists():
        have = ", ".join(supported()) or "none"
        raise RuntimeError(
            f"rasterio {rasterio_version} bundles GDAL {gdal_version}; this chunkref has "
            f"ChunkRef plugins for GDAL {have} (rasterio 1.4.4 bundles GDAL 3.10): install a "
            f"rasterio whose GDAL is one of those, or build the plugin for GDAL {minor} from "
            f"source (scripts/build-rasterio-plugin.sh)")
    return d


_registered: set[str] = set()


def register() -> None:
    """Registers the ChunkRef driver into the GDAL of the running rasterio
    (imported if it is not yet). Raises ``RuntimeError`` naming the
    versions when this wheel has no plugin for that GDAL."""
    import rasterio  # its libgdal, which the plugin links by soname, is loaded

    key = rasterio.__gdal_version__
    if key in _registered:
        return
    plugin = plugin_dir() / "gdal_ChunkRef.so"
    lib = ctypes.CDLL(str(plugin))
    lib.GDALRegister_ChunkRef()
    _registered.add(key)
