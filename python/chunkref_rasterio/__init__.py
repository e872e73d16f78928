"""ChunkRef GDAL plugins for the libgdal that pip's rasterio wheels bundle.

This is the wheel behind ``pip install chunkref[rasterio]``: one plugin per
GDAL major.minor of rasterio's wheels, under ``gdalplugins/<major.minor>/``,
each built against that GDAL's headers and linked to the bundled library's
soname (scripts/build-plugin-wheel.sh). ``chunkref.gdal`` finds them here;
use it (``chunkref.gdal.register()`` or ``chunkref.gdal.plugin_dir()``)
rather than this module.
"""

from pathlib import Path

#: ``<major.minor>/gdal_ChunkRef.so`` under it.
PLUGINS = Path(__file__).parent / "gdalplugins"
