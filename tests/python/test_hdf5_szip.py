"""HDF5 datasets compressed with szip (issue 41: NASA's HDF-EOS5 and
netCDF-4 products use it): the ``hdf5-szip`` codec decodes what libhdf5's
szip filter wrote (through libaec's szip interface), including chunks the
optional filter left stored because it could not shrink them.

Sources: h5py writes the datasets (integers, floats, big-endian doubles,
chunks cut by the edges), libhdf5's own ``h5repack`` compresses them with
szip (nearest-neighbour and entropy coding, with and without shuffle).
Every dataset read through ChunkRef must equal GDAL's HDF5 driver's read.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import open_chunkref
from test_kerchunk_hdf5 import hdf5_python  # noqa: F401 (a fixture)
from test_tables import run_python

WRITER = r"""
import sys
import h5py
import numpy as np
ramp = np.arange(100 * 130).reshape(100, 130)
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("i2", data=(ramp % 3000 - 1500).astype("<i2"), chunks=(40, 50))
    f.create_dataset("f4", data=(ramp / 7).astype("<f4"), chunks=(40, 50))
    f.create_dataset("u1", data=(ramp % 251).astype("u1"), chunks=(40, 50))
    f.create_dataset("f8be", data=(ramp[:60, :70] / 3).astype(">f8"), chunks=(60, 70))
"""

DATASETS = ["i2", "f4", "u1", "f8be"]


@pytest.mark.skipif(shutil.which("h5repack") is None, reason="needs h5repack (hdf5-tools)")
@pytest.mark.parametrize("filters", [["SZIP=8,NN"], ["SZIP=16,EC"], ["SHUF", "SZIP=8,NN"]],
                         ids=["nn", "ec", "shuffle-nn"])
def test_szip_datasets_read_like_gdal(tmp_path, chunkref_bin, hdf5_python, filters):  # noqa: F811
    plain, packed = tmp_path / "plain.h5", tmp_path / "szip.h5"
    run_python(hdf5_python, WRITER, plain)
    args = [a for f in filters for a in ("-f", f)]
    subprocess.run(["h5repack", *args, str(plain), str(packed)], check=True, timeout=60)
    index = tmp_path / "szip.json"
    done = run_chunkref(chunkref_bin, "index", packed, "-o", index)
    assert done.returncode == 0, done.stderr
    assert "hdf5-szip" in index.read_text()
    for name in DATASETS:
        theirs = gdal.OpenEx(f'HDF5:"{packed}"://{name}', allowed_drivers=["HDF5Image"])
        ours = open_chunkref(f'CHUNKREF:"{index}":{name}')
        assert ours.GetRasterBand(1).DataType == theirs.GetRasterBand(1).DataType
        assert np.array_equal(ours.ReadAsArray(), theirs.ReadAsArray()), name
