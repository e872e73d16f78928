"""Root causes of the NetCDF4 / HDF5 and GRIB2 differences the real files
of docs/real-files.md showed, each rebuilt with GDAL and checked against
GDAL's own drivers on the same file.

- GRIB2: messages of several parameters on one grid are one dataset whose
  bands are every message in file order, Float64 like GDAL's GRIB driver
  (hrrr.wrfsubhf.sample.grib2, gfs.t06z.pgrb2.10p0.f010.grib2,
  tinygrib.grb2), each band's unit conversion its own.
- HDF5 files GDAL's HDF5 driver opens (any name but ``.nc`` and its
  kin): nodata only from ``_FillValue``, no geotransform from dimension
  scales (no_band.h5, two-subs.h5, hdf5_mini_zstd.h5).
- HDF5 files without a dataset of 2 or more dimensions are refused at
  index time naming their datasets (hdf5_compression_*.h5, vlen.h5,
  NEONDSTowerTemperatureData.hdf5).
- NetCDF4 variables nothing places are served bottom-up, without a
  geotransform, as GDAL's netCDF driver serves them, as are variables
  whose coordinate variables GDAL does not take for coordinates
  (issue671.nc, issue672.nc, dataset_2d.nc).
- NetCDF4 ``valid_range`` / ``valid_min`` + ``valid_max``: values
  outside become nodata, as in GDAL's netCDF driver (issue672.nc).
- HDF5 chunks that all skip the same filters (one filter mask for the
  whole dataset, hdf5_mini_blosc.h5, hdf5_mini_shuffle_blosc.h5): the
  codec list leaves those filters out; masks that differ are refused.

Sources are written by GDAL: GRIB2 by its GRIB driver, NetCDF4 by its
netCDF driver (classic ``Translate`` and the multidimensional API, which
writes dimensions without coordinate variables and typed attributes);
chunks with a filter mask, which GDAL cannot write, by h5py's
``write_direct_chunk`` (in the kerchunk venv), read back by GDAL's HDF5
driver.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, gdal_array, osr

from conftest import run_chunkref
from raster_checks import assert_pixels_equal, captured_errors, open_chunkref
from test_grib2 import PDS, TMP_PDS, gdal_units, write_grib
from test_kerchunk_hdf5 import hdf5_python  # noqa: F401 (a fixture)
from test_tables import run_python

gdal.UseExceptions()


def index(chunkref_bin: Path, source: Path, out: Path) -> Path:
    done = run_chunkref(chunkref_bin, "index", source, "-o", out)
    assert done.returncode == 0, done.stderr
    return out


def multidim(path: Path, data: np.ndarray, coordinates: bool = False,
             attributes: dict | None = None, nodata: float | None = None) -> Path:
    """A NetCDF4 file of variable ``v`` over dimensions ``y``, ``x`` (with
    coordinate variables of 0, 1, 2, ... and no attributes when asked),
    written through GDAL's multidimensional API; ``attributes`` maps a
    name to (GDAL type or None for text, value)."""
    ds = gdal.GetDriverByName("netCDF").CreateMultiDimensional(str(path), [], ["FORMAT=NC4"])
    root = ds.GetRootGroup()
    dims = [root.CreateDimension(n, None, None, size) for n, size in zip("yx", data.shape)]
    if coordinates:
        for d in dims:
            c = root.CreateMDArray(d.GetName(), [d], gdal.ExtendedDataType.Create(gdal.GDT_Float64))
            c.Write(np.arange(d.GetSize(), dtype="f8"))
    kind = gdal_array.NumericTypeCodeToGDALTypeCode(data.dtype)
    v = root.CreateMDArray("v", dims, gdal.ExtendedDataType.Create(kind))
    for name, (kind, value) in (attributes or {}).items():
        shape = [len(value)] if isinstance(value, list) else []
        t = gdal.ExtendedDataType.CreateString() if kind is None else gdal.ExtendedDataType.Create(kind)
        v.CreateAttribute(name, shape, t).Write(value)
    if nodata is not None:
        v.SetNoDataValueDouble(nodata)
    v.Write(data)
    del ds
    return path


def assert_same(got: gdal.Dataset, want: gdal.Dataset, what: str) -> None:
    """Size, type, nodata, geotransform and every pixel."""
    assert (got.RasterXSize, got.RasterYSize, got.RasterCount) == (
        want.RasterXSize, want.RasterYSize, want.RasterCount), what
    assert got.GetGeoTransform(can_return_null=True) == want.GetGeoTransform(can_return_null=True), what
    for b in range(1, want.RasterCount + 1):
        g, w = got.GetRasterBand(b), want.GetRasterBand(b)
        assert g.DataType == w.DataType, f"{what} band {b}"
        assert g.GetNoDataValue() == w.GetNoDataValue(), f"{what} band {b}"
        assert_pixels_equal(g.ReadAsArray(), w.ReadAsArray(), f"{what} band {b}")


@pytest.mark.parametrize("normalize", [True, False], ids=["normalized", "raw"])
def test_grib_parameters_on_one_grid_are_one_dataset_of_float64(tmp_path, chunkref_bin, normalize):
    """A temperature (converted to Celsius by default) and two messages of
    another parameter on one grid: GDAL's GRIB driver shows one dataset of
    three Float64 bands; so does ours, every pixel and item identical."""
    tmp = write_grib(tmp_path / "t.grb2", ["DATA_ENCODING=SIMPLE_PACKING"], bands=1, pds=TMP_PDS)
    other = write_grib(tmp_path / "o.grb2", ["DATA_ENCODING=COMPLEX_PACKING"], bands=2, pds=PDS)
    both = tmp_path / "both.grb2"
    both.write_bytes(tmp.read_bytes() + other.read_bytes())
    args = [] if normalize else ["--grib-units", "raw"]
    done = run_chunkref(chunkref_bin, "index", *args, both, "-o", tmp_path / "i.json")
    assert done.returncode == 0, done.stderr
    ds = open_chunkref(tmp_path / "i.json")
    assert not ds.GetMetadata("SUBDATASETS")
    with gdal_units(normalize):
        native = gdal.Open(str(both))
        assert_same(ds, native, "both.grb2")
        for b in range(1, 4):
            for key in ["GRIB_ELEMENT", "GRIB_UNIT", "GRIB_VALID_TIME"]:
                got = ds.GetRasterBand(b).GetMetadataItem(key)
                assert got == native.GetRasterBand(b).GetMetadataItem(key), (b, key)


def test_hdf5_driver_files_have_no_default_nodata_nor_scale_geotransform(tmp_path, chunkref_bin):
    """A NetCDF4 file named ``.h5`` is GDAL's HDF5 driver's: no nodata
    without ``_FillValue`` (the HDF5 fill value is none), no geotransform
    from coordinate variables (dimension scales), rows as stored; with
    ``_FillValue``, that is nodata."""
    data = np.arange(12, dtype="i2").reshape(4, 3)
    for name, nodata in [("plain.h5", None), ("filled.h5", -9.0)]:
        source = multidim(tmp_path / name, data, coordinates=True, nodata=nodata)
        ds = open_chunkref(index(chunkref_bin, source, tmp_path / f"{name}.json"))
        native = gdal.Open(str(source))
        assert native.GetDriver().ShortName == "HDF5Image"
        assert native.GetRasterBand(1).GetNoDataValue() == nodata
        assert_same(ds, native, name)


def test_file_without_a_raster_is_refused_naming_its_datasets(tmp_path, chunkref_bin):
    """Only 1-D datasets: GDAL's HDF5 driver shows no raster; ``chunkref
    index`` refuses the file naming the datasets and their rank, instead
    of writing an index no driver opens."""
    one_d = tmp_path / "line.h5"
    ds = gdal.GetDriverByName("netCDF").CreateMultiDimensional(str(one_d), [], ["FORMAT=NC4"])
    root = ds.GetRootGroup()
    v = root.CreateMDArray("v", [root.CreateDimension("n", None, None, 6)],
                           gdal.ExtendedDataType.Create(gdal.GDT_Int16))
    v.Write(np.arange(6, dtype="i2"))
    del ds
    assert gdal.Open(str(one_d)).RasterCount == 0
    done = run_chunkref(chunkref_bin, "index", one_d, "-o", tmp_path / "x.json")
    assert done.returncode != 0
    for words in ["line.h5", "no dataset of 2 or more dimensions", "'/v' (1-D)"]:
        assert words in done.stderr, done.stderr
    assert "'/n'" not in done.stderr  # a dimension without a variable is no dataset
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("coordinates", [False, True], ids=["none", "bare"])
def test_netcdf_grid_nothing_places_is_served_bottom_up(tmp_path, chunkref_bin, coordinates):
    """No coordinate variables, or ``x`` / ``y`` ones without any attribute
    GDAL's netCDF driver takes for coordinates: it gives no geotransform
    and serves the rows bottom-up; ours too."""
    source = multidim(tmp_path / "grid.nc", np.arange(12, dtype="i2").reshape(4, 3), coordinates)
    ds = open_chunkref(index(chunkref_bin, source, tmp_path / "i.json"))
    native = gdal.Open(f'NETCDF:"{source}":v')
    assert native.GetGeoTransform(can_return_null=True) is None
    assert_same(ds, native, "grid.nc")
    stored = open_chunkref(tmp_path / "i.json", ["Y_ORDER=STORED"]).ReadAsArray()
    assert_pixels_equal(stored, native.ReadAsArray()[::-1], "Y_ORDER=STORED")


VALUES = np.array([[-32768, -20000, -18000, 0], [18000, 18001, 20000, -32767],
                   [1, 2, 3, 4]], dtype="i2").T.copy()


@pytest.mark.parametrize(
    "attributes, nodata",
    [
        ({"valid_min": (gdal.GDT_Int16, -18000), "valid_max": (gdal.GDT_Int16, 18000)}, -32767.0),
        ({"valid_range": (gdal.GDT_Int16, [-18000, 18000])}, None),
        ({"valid_range": (gdal.GDT_Int16, [-20000, 18000])}, -20000.0),
        ({"valid_min": (gdal.GDT_Int16, -18000)}, -32767.0),
        ({"valid_range": (gdal.GDT_Int16, [0, 10000]), "_Unsigned": (None, "true")}, 65535.0),
    ],
    ids=["min-max", "range-default-fill", "bound-is-nodata", "min-alone", "unsigned"],
)
def test_netcdf_valid_range_values_become_nodata(tmp_path, chunkref_bin, attributes, nodata):
    """Values outside ``valid_range`` (or ``valid_min`` and ``valid_max``
    together) read as nodata, as GDAL's netCDF driver reads them; a bound
    equal to nodata, or a lone bound, is not checked."""
    source = multidim(tmp_path / "r.nc", VALUES, attributes=attributes, nodata=nodata)
    ds = open_chunkref(index(chunkref_bin, source, tmp_path / "i.json"))
    assert_same(ds, gdal.Open(f'NETCDF:"{source}":v'), "r.nc")


def test_gdal_written_netcdf_as_h5_keeps_its_fill_value(tmp_path, chunkref_bin):
    """gdal_translate's NetCDF4 output (``_FillValue``, lat/lon) renamed
    ``.h5``: GDAL's HDF5 driver reports its ``_FillValue`` and no
    geotransform, as ours does."""
    mem = gdal.GetDriverByName("MEM").Create("", 7, 5, 1, gdal.GDT_Int16)
    mem.SetGeoTransform((10, 0.5, 0, 50, 0, -0.5))
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(4326)
    mem.SetProjection(srs.ExportToWkt())
    mem.GetRasterBand(1).WriteArray(np.arange(35, dtype="i2").reshape(5, 7))
    mem.GetRasterBand(1).SetNoDataValue(-9)
    source = tmp_path / "g.h5"
    gdal.Translate(str(source), mem, format="netCDF", creationOptions=["FORMAT=NC4"])
    ds = open_chunkref(index(chunkref_bin, source, tmp_path / "g.json"))
    assert_same(ds, gdal.Open(str(source)), "g.h5")


MASKED_WRITER = """
import sys, zlib
from pathlib import Path
import h5py, numpy as np
data = np.arange(24 * 30, dtype="<i2").reshape(24, 30)
for name, deflated in [("all", []), ("mixed", [(12, 0)])]:
    with h5py.File(Path(sys.argv[1]) / f"{name}.h5", "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((12, 15))
        dcpl.set_shuffle()
        dcpl.set_deflate(4)
        space = h5py.h5s.create_simple(data.shape)
        ds = h5py.h5d.create(f.id, name.encode(), h5py.h5t.STD_I16LE, space, dcpl=dcpl)
        for y in (0, 12):
            for x in (0, 15):
                block = np.ascontiguousarray(data[y:y + 12, x:x + 15]).tobytes()
                shuffled = np.frombuffer(block, "u1").reshape(-1, 2).T.tobytes()
                if (y, x) in deflated:
                    ds.write_direct_chunk((y, x), zlib.compress(shuffled, 4), 0)
                else:  # deflate (the second filter) skipped
                    ds.write_direct_chunk((y, x), shuffled, 0b10)
"""


def test_chunks_skipping_the_same_filter_read_without_it(tmp_path, chunkref_bin, hdf5_python):
    """Every chunk of ``/all`` skips deflate (filter mask 0b10): its codec
    list is shuffle alone and it reads as GDAL's HDF5 driver reads it;
    ``/mixed``, one chunk deflated and the others not, is refused naming
    two chunks of different masks."""
    run_python(hdf5_python, MASKED_WRITER, tmp_path)
    ds = open_chunkref(index(chunkref_bin, tmp_path / "all.h5", tmp_path / "all.json"))
    assert_same(ds, gdal.Open(str(tmp_path / "all.h5")), "all.h5")
    done = run_chunkref(chunkref_bin, "index", tmp_path / "mixed.h5", "-o", tmp_path / "m.json")
    assert done.returncode != 0
    for words in ["chunk 0.0 of dataset '/mixed'", "filter mask 0x2", "chunk 1.0", "0x0"]:
        assert words in done.stderr, done.stderr


@pytest.mark.parametrize("epsg", [32633, 4326])
def test_gdal_written_netcdf4_keeps_its_crs(tmp_path, chunkref_bin, epsg):
    """GDAL writes a NetCDF4 file's grid mapping as a scalar text variable
    carrying the CRS attributes: the index keeps it (a text scalar, served
    as no raster and warned about by nobody), so each band's subdataset has
    GDAL's CRS, geotransform and pixels; the same file named ``.h5`` (GDAL's
    HDF5 driver, which reads no grid mapping) has neither CRS nor
    geotransform, as in GDAL."""
    src = gdal.GetDriverByName("MEM").Create("", 40, 30, 2, gdal.GDT_Int16)
    src.SetGeoTransform([500000, 5, 0, 5000000, 0, -5] if epsg != 4326 else [10, 0.5, 0, 50, 0, -0.5])
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(epsg)
    src.SetSpatialRef(srs)
    for b in (1, 2):
        src.GetRasterBand(b).WriteArray(np.arange(1200, dtype="i2").reshape(30, 40) * b)
    nc = tmp_path / "g.nc"
    gdal.Translate(str(nc), src, format="netCDF", creationOptions=["FORMAT=NC4"])
    done = run_chunkref(chunkref_bin, "index", nc, "-o", tmp_path / "g.json")
    assert done.returncode == 0, done.stderr
    assert "left out" not in done.stderr, done.stderr
    for band in ("Band1", "Band2"):
        want = gdal.Open(f'NETCDF:"{nc}":{band}')
        with captured_errors() as messages:
            got = open_chunkref(f'CHUNKREF:"{tmp_path / "g.json"}":{band}')
        assert not messages, messages
        assert got.GetSpatialRef() is not None and got.GetSpatialRef().IsSame(want.GetSpatialRef())
        assert_same(got, want, band)
    h5 = tmp_path / "g.h5"
    h5.write_bytes(nc.read_bytes())
    index(chunkref_bin, h5, tmp_path / "h5.json")
    want = gdal.Open(f'HDF5:"{h5}"://Band1')
    got = open_chunkref(f'CHUNKREF:"{tmp_path / "h5.json"}":Band1')
    assert got.GetSpatialRef() is None and not want.GetProjection()
    assert_same(got, want, "HDF5 Band1")
