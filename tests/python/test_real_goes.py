"""GOES-R ABI fixed-grid products (the Unidata netcdf4-python sample
``20171025_2056.Cloud_Top_Height.nc``), rebuilt with GDAL's
multidimensional netCDF writer: packed ``int16`` x / y coordinate
variables (``scale_factor`` / ``add_offset``, scanning angles in ``rad``)
and a ``geostationary`` grid mapping. GDAL's netCDF driver unpacks the
coordinates, turns the angles into metres (times
``perspective_point_height``) and builds the geostationary CRS; ChunkRef
on the ``chunkref index`` of the file must give the same geotransform,
CRS and pixels; the quality flags (signed bytes with ``_Unsigned`` and a
``valid_range``) the same type and nodata.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import assert_pixels_equal, open_chunkref
from test_real_netcdf_grib import add_attribute

gdal.UseExceptions()

ROWS, COLS = 6, 8
#: The sample's packing and projection.
X_SCALE, X_OFFSET = 0.0002800000074785203, -0.07490000128746033
Y_SCALE, Y_OFFSET = -0.0002800000074785203, 0.1264200061559677
PROJECTION = {
    "grid_mapping_name": "geostationary",
    "perspective_point_height": 35786023.0,
    "semi_major_axis": 6378137.0,
    "semi_minor_axis": 6356752.31414,
    "inverse_flattening": 298.2572221,
    "latitude_of_projection_origin": 0.0,
    "longitude_of_projection_origin": -89.5,
    "sweep_angle_axis": "x",
}


def write_goes(path: Path) -> Path:
    ds = gdal.GetDriverByName("netCDF").CreateMultiDimensional(str(path), [], ["FORMAT=NC4"])
    root = ds.GetRootGroup()
    i16 = gdal.ExtendedDataType.Create(gdal.GDT_Int16)
    dims = {}
    for name, n, scale, offset in [("y", ROWS, Y_SCALE, Y_OFFSET), ("x", COLS, X_SCALE, X_OFFSET)]:
        dim = root.CreateDimension(name, "HORIZONTAL_" + name.upper(), None, n)
        var = root.CreateMDArray(name, [dim], i16)
        var.Write(np.arange(n, dtype=np.int16) + 40)
        add_attribute(var, "scale_factor", scale)
        add_attribute(var, "add_offset", offset)
        add_attribute(var, "units", "rad")
        add_attribute(var, "standard_name", f"projection_{name}_coordinate")
        dims[name] = dim
    proj = root.CreateMDArray("goes_imager_projection", [], gdal.ExtendedDataType.Create(gdal.GDT_Int32))
    for key, value in PROJECTION.items():
        add_attribute(proj, key, value)
    ht = root.CreateMDArray("HT", [dims["y"], dims["x"]], gdal.ExtendedDataType.Create(gdal.GDT_Float32))
    ht.Write((np.arange(ROWS * COLS, dtype=np.float32) * 7.5).reshape(ROWS, COLS))
    add_attribute(ht, "grid_mapping", "goes_imager_projection")
    add_attribute(ht, "units", "m")
    ds = None
    return path


def test_packed_scanning_angles_and_geostationary_mapping(chunkref_bin, tmp_path):
    source = write_goes(tmp_path / "goes.nc")
    out = tmp_path / "goes.json"
    done = run_chunkref(chunkref_bin, "index", source, "-o", out)
    assert done.returncode == 0, done.stderr
    native = gdal.Open(f'NETCDF:"{source}":HT')
    ours = open_chunkref(f'CHUNKREF:"{out}":HT')
    gt = native.GetGeoTransform()
    # 10 km pixels: the angle step times the satellite height.
    assert gt[1] == pytest.approx(X_SCALE * 35786023.0)
    assert ours.GetGeoTransform() == pytest.approx(gt, rel=1e-12)
    a, b = native.GetSpatialRef(), ours.GetSpatialRef()
    assert b is not None and b.GetAttrValue("PROJECTION") == a.GetAttrValue("PROJECTION")
    # The same PROJ parameters (GDAL's CRS carries them as a PROJ4
    # extension of its WKT, which IsSame does not match with any other).
    assert sorted(b.ExportToProj4().split()) == sorted(a.ExportToProj4().split())
    assert_pixels_equal(ours.ReadAsArray(), native.ReadAsArray(), "HT")


@pytest.mark.parametrize(
    "valid_range",
    [np.array([0, 6], np.int8), np.array([0, 255], np.int16), np.array([0, -1], np.int8), None],
    ids=["0-6", "0-255", "0-255-as-bytes", "none"],
)
def test_quality_flags_bytes_signed_as_gdal_reads_them(chunkref_bin, tmp_path, valid_range):
    """The sample's DQF: signed bytes with ``_Unsigned = "true"``, which
    GDAL's netCDF driver serves signed when a ``valid_range`` other than
    {0, 255} is present (written here as NetCDF-3, GDAL 3.6 having no
    Int8 to write them as NetCDF4)."""
    from netcdf3_writer import Var, write

    attrs = {"_Unsigned": "true", "_FillValue": np.int8(-1)}
    if valid_range is not None:
        attrs["valid_range"] = valid_range
    flags = (np.arange(ROWS * COLS) % 7).astype(np.int8).reshape(ROWS, COLS)
    flags[0, :3] = -1
    # Latitudes decreasing: both serve the rows as stored.
    coords = [Var("lat", ["lat"], np.arange(ROWS, 0, -1) * 0.5, {"units": "degrees_north"}),
              Var("lon", ["lon"], np.arange(COLS) * 0.5, {"units": "degrees_east"})]
    source = write(tmp_path / "dqf.nc", 1, {"lat": ROWS, "lon": COLS},
                   coords + [Var("DQF", ["lat", "lon"], flags, attrs)])
    out = tmp_path / "dqf.json"
    done = run_chunkref(chunkref_bin, "index", source, "-o", out)
    assert done.returncode == 0, done.stderr
    native, ours = gdal.Open(str(source)), open_chunkref(out)
    nb, cb = native.GetRasterBand(1), ours.GetRasterBand(1)
    assert gdal.GetDataTypeName(cb.DataType) == gdal.GetDataTypeName(nb.DataType)
    assert cb.GetMetadataItem("PIXELTYPE", "IMAGE_STRUCTURE") == nb.GetMetadataItem(
        "PIXELTYPE", "IMAGE_STRUCTURE")
    assert cb.GetNoDataValue() == nb.GetNoDataValue()
    assert_pixels_equal(cb.ReadAsArray(), nb.ReadAsArray(), "DQF")
