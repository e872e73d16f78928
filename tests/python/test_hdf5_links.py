"""HDF5 datasets reached by several hard links (issue 41): GDAL's HDF5
driver walks the links and lists a dataset under every path that reaches
it (a group linked from two places shows its datasets twice); it follows
no soft link and stops at links back to a group above. chunkref indexes
the same paths, each read as GDAL reads it.

The file is written by h5py: a dataset linked from two groups, a group
linked from two places, a group linking to itself and to the root, a soft
link.
"""

from __future__ import annotations

import numpy as np
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import open_chunkref
from test_kerchunk_hdf5 import hdf5_python  # noqa: F401 (a fixture)
from test_tables import run_python

WRITER = r"""
import sys
import h5py
import numpy as np
with h5py.File(sys.argv[1], "w") as f:
    a = f.create_dataset("a", data=np.arange(4 * 5, dtype="i2").reshape(4, 5))
    g = f.create_group("g")
    g["b"] = a
    g.create_dataset("c", data=np.arange(6 * 7, dtype="f4").reshape(6, 7), chunks=(3, 7),
                     compression="gzip")
    g["loop"] = g
    g["up"] = f["/"]
    g["soft"] = h5py.SoftLink("/a")
    h = f.create_group("h")
    h["sub"] = g
"""


def subdatasets(ds: gdal.Dataset) -> list[str]:
    items = ds.GetMetadata("SUBDATASETS")
    return [items[k].split(":")[-1].lstrip("/") for k in sorted(items, key=lambda k: (
        int(k.split("_")[1]), k)) if k.endswith("_NAME")]


def test_every_path_of_hard_links_is_listed_as_gdal_lists_it(tmp_path, chunkref_bin,
                                                             hdf5_python):  # noqa: F811
    source = tmp_path / "links.h5"
    run_python(hdf5_python, WRITER, source)
    index = tmp_path / "links.json"
    done = run_chunkref(chunkref_bin, "index", source, "-o", index)
    assert done.returncode == 0, done.stderr
    theirs = gdal.OpenEx(str(source), allowed_drivers=["HDF5"])
    paths = subdatasets(theirs)
    assert paths == ["a", "g/b", "g/c", "h/sub/b", "h/sub/c"], paths
    assert subdatasets(open_chunkref(index)) == paths
    for path in paths:
        native = gdal.OpenEx(f'HDF5:"{source}"://{path}', allowed_drivers=["HDF5Image"])
        ours = open_chunkref(f'CHUNKREF:"{index}":{path}')
        assert np.array_equal(ours.ReadAsArray(), native.ReadAsArray()), path
