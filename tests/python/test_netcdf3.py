"""``chunkref index`` of NetCDF-3 files (classic CDF-1, 64-bit offset
CDF-2, 64-bit data CDF-5), read as GDAL's netCDF driver reads them.

Sources:

- GDAL's netCDF writer (``FORMAT=NC`` and ``NC2``): georeferenced rasters
  of each data type GDAL writes to NetCDF-3 (its grid mapping a text
  variable holding the CRS and geotransform; UInt16 as shorts with
  ``_Unsigned``), one band (a raster) and three bands (``Band1..3``
  subdatasets);
- scipy's ``netcdf_file``: record variables along an unlimited ``time``
  dimension (their slices interleaved in each record, padded to 4 bytes,
  or not padded when a variable is the only record variable), latitude /
  longitude coordinate variables, ``_FillValue``, ``scale_factor``, a
  variable without ``_FillValue`` (netCDF's default fill is GDAL's
  nodata), signed bytes, a text variable;
- netcdf3_writer.py (ours): CDF-5 files (GDAL 3.6 does not open them;
  the same variables written as CDF-2 are the oracle, and the unsigned and
  64-bit CDF-5 types are checked against the values written), a streamed
  record count, and damaged headers, which must fail with a message
  naming what is wrong.

Each file is indexed with ``chunkref index`` and read through ChunkRef
and through GDAL's netCDF driver: same subdatasets, size, geotransform,
CRS, band types, nodata, scale / offset, unit, the netCDF dimension
items (``NETCDF_DIM_*``) and pixels. (ChunkRef lists subdatasets in name
order, GDAL in file order.)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, osr
from scipy.io import netcdf_file

from conftest import run_chunkref
from netcdf3_writer import Var, write
from raster_checks import assert_pixels_equal, odd_windows, open_chunkref

gdal.UseExceptions()

#: Rows and columns of the test grids.
ROWS, COLS = 19, 23


def index(chunkref_bin: Path, source: Path, out: Path) -> Path:
    done = run_chunkref(chunkref_bin, "index", source, "-o", out)
    assert done.returncode == 0, done.stderr
    return out


def chunkref_name(native: str, index_path: Path) -> str:
    """The ChunkRef name of GDAL's netCDF dataset name ``native``."""
    if native.startswith("NETCDF:"):
        return f'CHUNKREF:"{index_path}":{native.rsplit(":", 1)[1]}'
    return str(index_path)


def netcdf_items(ds_or_band) -> dict:
    """The items of GDAL's netCDF view of the dimensions in the default
    metadata domain (``NETCDF_DIM_*``)."""
    md = ds_or_band.GetMetadata() or {}
    return {k: v for k, v in md.items() if k.startswith("NETCDF_DIM_")}


def assert_same_dataset(native: gdal.Dataset, ours: gdal.Dataset, what: str,
                        dimension_items: bool = True) -> None:
    assert (ours.RasterXSize, ours.RasterYSize, ours.RasterCount) == (
        native.RasterXSize, native.RasterYSize, native.RasterCount), what
    assert ours.GetGeoTransform(can_return_null=True) == pytest.approx(
        native.GetGeoTransform(can_return_null=True)), what
    a, b = native.GetSpatialRef(), ours.GetSpatialRef()
    assert (a is None) == (b is None), f"{what}: CRS {b} != {a}"
    if a is not None:
        assert a.IsSame(b), f"{what}: CRS {b.ExportToWkt()} != {a.ExportToWkt()}"
    if dimension_items:
        assert netcdf_items(ours) == netcdf_items(native), what
    for i in range(1, native.RasterCount + 1):
        nb, cb = native.GetRasterBand(i), ours.GetRasterBand(i)
        band = f"{what} band {i}"
        assert gdal.GetDataTypeName(cb.DataType) == gdal.GetDataTypeName(nb.DataType), band
        assert cb.GetMetadataItem("PIXELTYPE", "IMAGE_STRUCTURE") == nb.GetMetadataItem(
            "PIXELTYPE", "IMAGE_STRUCTURE"), band
        n_nodata, c_nodata = nb.GetNoDataValue(), cb.GetNoDataValue()
        assert (c_nodata == n_nodata) or (c_nodata != c_nodata and n_nodata != n_nodata), (
            f"{band}: nodata {c_nodata} != {n_nodata}")
        assert (cb.GetScale(), cb.GetOffset(), cb.GetUnitType()) == (
            nb.GetScale(), nb.GetOffset(), nb.GetUnitType()), band
        if dimension_items:
            assert netcdf_items(cb) == netcdf_items(nb), band
        expected = nb.ReadAsArray()
        for xoff, yoff, w, h in odd_windows(nb.XSize, nb.YSize):
            assert_pixels_equal(cb.ReadAsArray(xoff, yoff, w, h),
                                expected[yoff:yoff + h, xoff:xoff + w], f"{band} {(xoff, yoff, w, h)}")


def assert_reads_as_gdal(chunkref_bin: Path, source: Path, tmp_path: Path,
                         dimension_items: bool = True) -> Path:
    """Index ``source``; its dataset and every subdataset must read through
    ChunkRef as through GDAL's netCDF driver (``dimension_items``: the
    ``NETCDF_DIM_*`` items too). Returns the index."""
    out = index(chunkref_bin, source, tmp_path / f"{source.stem}.json")
    native, ours = gdal.Open(str(source)), open_chunkref(out)
    subs = lambda ds: [v for k, v in sorted((ds.GetMetadata("SUBDATASETS") or {}).items())]  # noqa: E731
    n_subs, c_subs = subs(native), subs(ours)
    names = lambda subs, prefix: sorted(  # noqa: E731
        v.rsplit(":", 1)[1] for v in subs if v.startswith(prefix))
    assert names(c_subs, "CHUNKREF:") == names(n_subs, "NETCDF:")
    if native.RasterCount:
        assert_same_dataset(native, ours, source.name, dimension_items)
    for name in (v for v in n_subs if v.startswith("NETCDF:")):
        assert_same_dataset(gdal.Open(name), open_chunkref(chunkref_name(name, out)), name,
                            dimension_items)
    return out


# ------------------------------------------------------------------ GDAL

def utm_tiff(path: Path, dtype: str, bands: int, nodata: float | None) -> Path:
    """A GeoTIFF in UTM zone 31N: a ramp of ``dtype`` per band."""
    gdt = gdal.GetDataTypeByName(dtype)
    ds = gdal.GetDriverByName("GTiff").Create(str(path), COLS, ROWS, bands, gdt)
    ds.SetGeoTransform([440720.0, 60.0, 0.0, 3751320.0, 0.0, -60.0])
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32631)
    ds.SetProjection(srs.ExportToWkt())
    grid = np.add.outer(np.arange(ROWS) * 37, np.arange(COLS) * 3)
    for b in range(bands):
        band = ds.GetRasterBand(b + 1)
        values = (grid + 101 * b) % (250 if dtype == "Byte" else 30000)
        if dtype.startswith("Float"):
            values = values * 0.25 - 17.5
        band.WriteArray(values)
        if nodata is not None:
            band.SetNoDataValue(nodata)
    ds = None
    return path


@pytest.mark.parametrize("fmt", ["NC", "NC2"])
@pytest.mark.parametrize(
    "dtype, bands, nodata",
    [("Byte", 3, None), ("Int16", 1, -999), ("UInt16", 1, 65535), ("Int32", 2, None),
     ("Float32", 1, -9999.5), ("Float64", 1, None)],
)
def test_gdal_written_files_read_as_gdal_reads_them(chunkref_bin, tmp_path, fmt, dtype, bands,
                                                    nodata):
    tif = utm_tiff(tmp_path / "src.tif", dtype, bands, nodata)
    nc = tmp_path / f"{dtype}_{fmt}.nc"
    gdal.Translate(str(nc), str(tif), format="netCDF", creationOptions=[f"FORMAT={fmt}"])
    assert nc.read_bytes()[:4] == (b"CDF\x01" if fmt == "NC" else b"CDF\x02")
    assert_reads_as_gdal(chunkref_bin, nc, tmp_path)


# ----------------------------------------------------------------- scipy

def record_file(path: Path, version: int, lone: bool = False, south_up: bool = False) -> Path:
    """Record variables along ``time`` (3 records) with ``lat``/``lon``
    coordinates; ``lone``: signed bytes ``c`` alone (its 437-byte records
    are then not padded to 4 bytes)."""
    rng = np.random.default_rng(7)
    f = netcdf_file(path, "w", version=version)
    f.title = "records"
    f.createDimension("time", None)
    f.createDimension("lat", ROWS)
    f.createDimension("lon", COLS)
    lat = f.createVariable("lat", "f4", ("lat",))
    lat.units = "degrees_north"
    lat.standard_name = "latitude"
    lat[:] = np.linspace(40, 40 + (ROWS - 1) * 0.5, ROWS)[:: 1 if south_up else -1]
    lon = f.createVariable("lon", "f4", ("lon",))
    lon.units = "degrees_east"
    lon.standard_name = "longitude"
    lon[:] = np.linspace(2, 2 + (COLS - 1) * 0.5, COLS)
    shape = (3, ROWS, COLS)
    c = f.createVariable("c", "b", ("time", "lat", "lon"))
    c.long_name = "signed bytes"
    c[:] = rng.integers(-128, 128, shape).astype("i1")
    if not lone:
        t = f.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t.standard_name = "time"
        t[:] = [0.0, 1.5, 3.0]
        a = f.createVariable("a", "i2", ("time", "lat", "lon"))
        a.units = "K"
        a._FillValue = np.int16(-32000)
        a.scale_factor = 0.01
        a.add_offset = 273.15
        values = rng.integers(-30000, 30000, shape).astype("i2")
        values[0, 3, 4] = -32000
        a[:] = values
        b = f.createVariable("b", "f4", ("time", "lat", "lon"))
        b.long_name = "no fill value"
        b[:] = rng.normal(size=shape).astype("f4")
        d = f.createVariable("d", "f8", ("lat", "lon"))
        d.missing_value = -1.0
        d[:] = rng.normal(size=shape[1:])
        name = f.createVariable("station", "c", ("lon",))
        name.long_name = "a text variable"
        name[:] = np.array(list("abcdefghijklmnopqrstuvw"[:COLS]), "S1")
    f.close()
    return path


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("south_up", [False, True])
def test_record_variables_read_as_gdal_reads_them(chunkref_bin, tmp_path, version, south_up):
    source = record_file(tmp_path / f"rec{version}.nc", version, south_up=south_up)
    assert_reads_as_gdal(chunkref_bin, source, tmp_path)


def test_a_lone_record_variable_has_unpadded_records(chunkref_bin, tmp_path):
    source = record_file(tmp_path / "lone.nc", 1, lone=True)
    # No time coordinate: ChunkRef writes the netCDF dimension items only
    # for rasters with a coordinate variable (docs/driver.md).
    out = assert_reads_as_gdal(chunkref_bin, source, tmp_path, dimension_items=False)
    refs = json.loads(out.read_text())["refs"]
    (_, first, size), (_, second, _) = refs["c/0.0.0"], refs["c/1.0.0"]
    assert size == ROWS * COLS and second - first == size  # 437 bytes, no padding


# ------------------------------------------------------------------ CDF-5

def cdf_variables(extra: bool) -> list[Var]:
    rng = np.random.default_rng(11)
    shape = (2, ROWS, COLS)
    out = [
        Var("time", ["time"], np.array([0.0, 10.0]), {"units": "hours since 2020-01-01"}),
        Var("y", ["y"], np.linspace(1000.0, 1000.0 - 250 * (ROWS - 1), ROWS),
            {"standard_name": "projection_y_coordinate", "units": "m"}),
        Var("x", ["x"], np.linspace(500.0, 500.0 + 250 * (COLS - 1), COLS),
            {"standard_name": "projection_x_coordinate", "units": "m"}),
        Var("s", ["time", "y", "x"], rng.integers(-999, 999, shape).astype("i2"),
            {"_FillValue": np.int16(-999), "units": "cm"}),
        Var("f", ["y", "x"], rng.normal(size=shape[1:]).astype("f4"), {"long_name": "floats"}),
    ]
    if extra:
        out += [
            Var("us", ["time", "y", "x"], rng.integers(0, 65535, shape).astype("u2")),
            Var("i8", ["y", "x"], rng.integers(-2**62, 2**62, shape[1:]).astype("i8")),
            Var("u8", ["time", "y", "x"], rng.integers(0, 2**63, shape).astype("u8")),
        ]
    return out


def test_cdf5_reads_as_its_cdf2_twin_and_as_written(chunkref_bin, tmp_path):
    dims = {"time": None, "y": ROWS, "x": COLS}
    twin = write(tmp_path / "twin.nc", 2, dims, cdf_variables(False), {"title": "cdf"})
    cdf5 = write(tmp_path / "cdf5.nc", 5, dims, cdf_variables(True), {"title": "cdf"})
    out = index(chunkref_bin, cdf5, tmp_path / "cdf5.json")
    for name in ["s", "f"]:
        assert_same_dataset(gdal.Open(f'NETCDF:"{twin}":{name}'),
                            open_chunkref(chunkref_name(f"NETCDF:x:{name}", out)), name)
    for var in cdf_variables(True)[5:]:
        ds = open_chunkref(chunkref_name(f"NETCDF:x:{var.name}", out))
        expected = var.data if var.data.ndim == 3 else var.data[np.newaxis]
        got = ds.ReadAsArray().reshape(expected.shape)
        # Rows served north-up: y decreases, as stored.
        assert_pixels_equal(got, expected, var.name)
        assert ds.GetGeoTransform() == pytest.approx((375.0, 250.0, 0.0, 1125.0, 0.0, -250.0))


def test_streamed_record_count_follows_the_file_size(chunkref_bin, tmp_path):
    """``numrecs`` all ones: the records the file holds (its twin with
    the count written is the oracle)."""
    vars_ = [Var("time", ["time"], np.arange(5, dtype="f8"), {"units": "days since 2001-01-01"}),
             Var("lat", ["lat"], np.array([50.0, 49.0, 48.0, 47.0]), {"units": "degrees_north"}),
             Var("lon", ["lon"], np.array([3.0, 4.0, 5.0]), {"units": "degrees_east"}),
             Var("g", ["time", "lat", "lon"], np.arange(60.0).reshape(5, 4, 3))]
    dims = {"time": None, "lat": 4, "lon": 3}
    twin = write(tmp_path / "counted.nc", 1, dims, vars_)
    source = write(tmp_path / "stream.nc", 1, dims, vars_, numrecs=0xFFFFFFFF)
    out = index(chunkref_bin, source, tmp_path / "stream.json")
    assert_same_dataset(gdal.Open(f'NETCDF:"{twin}":g'),
                        open_chunkref(chunkref_name("NETCDF:x:g", out)), "g")


# ------------------------------------------------------------ damaged files

def small_file(tmp_path: Path) -> Path:
    return write(tmp_path / "small.nc", 1, {"y": 4, "x": 5},
                 [Var("v", ["y", "x"], np.arange(20, dtype="i4").reshape(4, 5))])


def damaged(tmp_path: Path, how: str) -> Path:
    data = bytearray(small_file(tmp_path).read_bytes())
    if how == "truncated header":
        data = data[:92]  # in the offset of variable 'v'
    elif how == "truncated data":
        data = data[:-8]
    elif how == "huge dimension count":
        data[12:16] = (0x7FFFFFFF).to_bytes(4, "big")
    elif how == "offset past the end":
        at = data.index(b"\0\0\0\x04\0\0\0\x50")  # type NC_INT, vsize 80
        data[at + 8:at + 12] = (0x7FFFFFF0).to_bytes(4, "big")
    elif how == "bad type":
        at = data.index(b"\0\0\0\x04\0\0\0\x50")
        data[at:at + 4] = (13).to_bytes(4, "big")
    elif how == "dimension id":
        at = data.index(b"v\0\0\0") + 8  # rank, then the first dimension id
        data[at:at + 4] = (9).to_bytes(4, "big")
    out = tmp_path / "damaged.nc"
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize(
    "how, words",
    [
        ("truncated header", ["header is cut short", "past the end of the file"]),
        ("truncated data", ["variable 'v'", "past the end of the file", "cut short"]),
        ("huge dimension count", ["claims 2147483647 dimensions"]),
        ("offset past the end", ["variable 'v'", "past the end of the file"]),
        ("bad type", ["variable 'v' has type 13"]),
        ("dimension id", ["dimension 0 of variable 'v' is dimension 9, but the file has 2"]),
    ],
)
def test_damaged_files_fail_naming_what_is_wrong(chunkref_bin, tmp_path, how, words):
    source = damaged(tmp_path, how)
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "x.json")
    assert done.returncode == 1, done
    for word in ["damaged.nc", *words]:
        assert word in done.stderr, (word, done.stderr)
    assert "panicked" not in done.stderr
    assert not (tmp_path / "x.json").exists()
