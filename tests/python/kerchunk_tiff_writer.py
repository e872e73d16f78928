"""Run by tests/python/test_kerchunk_tiff.py with the python of the kerchunk
venv (kerchunk, tifffile, imagecodecs, zarr from PyPI), never imported by
the test process.

``python kerchunk_tiff_writer.py DIR`` references every ``DIR/*.tif`` (the
GeoTIFFs the test wrote with GDAL) with ``kerchunk.tiff.tiff_to_zarr``,
writing ``DIR/<name>.json``, then reads every array of each store back
through fsspec's reference file system and zarr (imagecodecs' numcodecs
registered, as a reader of tifffile's stores must) and saves it as
``DIR/<name>/<array>.npy`` (``<array>`` is ``root`` for a store that is one
array).  ``DIR/manifest.json`` lists, per source, each array's shape,
dimension names and the store's root attributes, and the versions of the
packages.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import fsspec
import imagecodecs
import imagecodecs.numcodecs
import kerchunk
import kerchunk.tiff
import numpy as np
import tifffile
import zarr


def open_store(refs: dict):
    """The store as fsspec's reference file system and zarr open it."""
    fs = fsspec.filesystem("reference", fo=refs, remote_protocol="file", asynchronous=True)
    return zarr.open(zarr.storage.FsspecStore(fs, read_only=True, path=""), mode="r",
                     zarr_format=2)


def main(out: Path) -> None:
    imagecodecs.numcodecs.register_codecs()
    manifest = {"versions": {m.__name__: m.__version__
                             for m in [kerchunk, tifffile, imagecodecs, zarr, fsspec, np]}}
    for tif in sorted(out.glob("*.tif")):
        refs = kerchunk.tiff.tiff_to_zarr(str(tif))
        (out / f"{tif.stem}.json").write_text(json.dumps(refs))
        node = open_store(refs)
        items = [("root", node)] if isinstance(node, zarr.Array) else sorted(node.arrays())
        (out / tif.stem).mkdir()
        arrays = {}
        for name, array in items:
            np.save(out / tif.stem / f"{name}.npy", array[...])
            arrays[name] = {"shape": list(array.shape),
                            "dims": dict(array.attrs).get("_ARRAY_DIMENSIONS")}
        manifest[tif.stem] = {"arrays": arrays, "attrs": json.loads(refs[".zattrs"])}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
