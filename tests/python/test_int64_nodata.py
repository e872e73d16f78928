"""Nodata of 64-bit integer bands (issue 41): GDAL reports it through
``GetNoDataValueAsInt64`` / ``GetNoDataValueAsUInt64`` (gdalinfo, and
GDAL's Python bindings for Int64/UInt64 bands), exactly, where a double
cannot hold it (netCDF's default fill for ``NC_INT64``,
-9223372036854775806). ChunkRef serves the same exact values.

Sources: netCDF-4 variables written by netCDF4-python (``NC_INT64``
without ``_FillValue``, ``NC_UINT64`` and ``NC_INT64`` with fill values
past 2^53), indexed by ``chunkref index`` and compared with GDAL's netCDF
driver; a Zarr v2 store of int64/uint64 arrays compared with GDAL's Zarr
driver.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import open_chunkref
from test_kerchunk_hdf5 import hdf5_python  # noqa: F401 (a fixture)
from test_tables import run_python

WRITER = r"""
import sys
import netCDF4
import numpy as np
with netCDF4.Dataset(sys.argv[1], "w") as d:
    d.createDimension("y", 3)
    d.createDimension("x", 4)
    values = np.arange(12).reshape(3, 4)
    d.createVariable("default", "i8", ("y", "x"))[:] = values
    d.createVariable("unsigned", "u8", ("y", "x"),
                     fill_value=np.uint64(18446744073709551614))[:] = values
    d.createVariable("past_2_53", "i8", ("y", "x"),
                     fill_value=np.int64(-9007199254740993))[:] = values
"""


def nodata_pair(ours: gdal.Dataset, theirs: gdal.Dataset):
    a, b = ours.GetRasterBand(1), theirs.GetRasterBand(1)
    assert a.DataType == b.DataType
    return a.GetNoDataValue(), b.GetNoDataValue()


def test_netcdf_int64_nodata_is_exact(tmp_path, chunkref_bin, hdf5_python):  # noqa: F811
    source = tmp_path / "int64.nc"
    run_python(hdf5_python, WRITER, source)
    index = tmp_path / "int64.json"
    done = run_chunkref(chunkref_bin, "index", source, "-o", index)
    assert done.returncode == 0, done.stderr
    expected = {"default": -9223372036854775806, "unsigned": 18446744073709551614,
                "past_2_53": -9007199254740993}
    for name, value in expected.items():
        theirs = gdal.OpenEx(f'NETCDF:"{source}":{name}', allowed_drivers=["netCDF"])
        ours = open_chunkref(f'CHUNKREF:"{index}":{name}')
        assert nodata_pair(ours, theirs) == (value, value), name


# (GDAL 3.6's Zarr driver reads a uint64 fill_value past 2^63 as 2^63 - 1;
# chunkref keeps the value, as GDAL's netCDF driver does above.)
@pytest.mark.parametrize("dtype,fill", [("<i8", 0), ("<i8", -9223372036854775807),
                                        ("<u8", 9007199254740993)])
def test_zarr_int64_nodata_is_exact(tmp_path, chunkref_bin, dtype, fill):
    root = tmp_path / "int64.zarr"
    (root / "v").mkdir(parents=True)
    (root / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    meta = {"zarr_format": 2, "shape": [3, 4], "chunks": [3, 4], "dtype": dtype,
            "fill_value": fill, "order": "C", "filters": None, "compressor": None}
    (root / "v" / ".zarray").write_text(json.dumps(meta))
    (root / "v" / ".zattrs").write_text(json.dumps({"_ARRAY_DIMENSIONS": ["y", "x"]}))
    (root / "v" / "0.0").write_bytes(np.arange(12, dtype=dtype).tobytes())
    index = tmp_path / "int64.json"
    done = run_chunkref(chunkref_bin, "index", root, "-o", index)
    assert done.returncode == 0, done.stderr
    theirs = gdal.OpenEx(f'ZARR:"{root}":/v', allowed_drivers=["Zarr"])
    ours, native = nodata_pair(open_chunkref(index), theirs)
    assert ours == native == fill
