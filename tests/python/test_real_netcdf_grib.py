"""NetCDF and GRIB files read as GDAL 3.6's netCDF and GRIB drivers read them.

Sources are written by GDAL: NetCDF-4 files through its multidimensional
API (coordinate variables, chunk sizes of our choosing that do not divide
the grid), GRIB2 files through its GRIB writer.  ``chunkref index`` indexes
them; ChunkRef on the index must read as GDAL's own driver reads the file:

- rows of a grid whose latitudes increase (stored south-up) are served
  north-up, as the netCDF driver serves them: pixels through whole reads,
  odd windows, blocks (which then straddle stored chunks) and resampled
  reads, and the same geotransform; ``-oo Y_ORDER=STORED`` keeps the stored
  order (a positive y pixel size);
- longitudes whose first pixel centre lies east of 180 degrees move by -360
  degrees (netCDF driver, ``GDAL_NETCDF_CENTERLONG_180``);
- a global GRIB2 grid from 0 to 360 degrees is served from -180 degrees,
  its columns rolled at the antimeridian as the GRIB driver rolls them
  (``GRIB_ADJUST_LONGITUDE_RANGE``, also honoured when set to NO).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, gdal_array, osr

from conftest import run_chunkref
from raster_checks import (
    assert_band_matches,
    assert_pixels_equal,
    captured_errors,
    config_options,
    failure_text,
    odd_windows,
    open_chunkref,
)

gdal.UseExceptions()

#: Bands (time steps), rows and columns of the NetCDF grids.
BANDS, ROWS, COLS = 2, 23, 17
#: Chunk (block) size of the NetCDF variables: (time, y, x), not dividing the grid.
BLOCK = (1, 7, 5)


def add_attribute(obj, name: str, value) -> None:
    """A string or float64 attribute on a GDAL multidimensional object."""
    if isinstance(value, str):
        attr = obj.CreateAttribute(name, [], gdal.ExtendedDataType.CreateString())
        attr.WriteString(value)
    else:
        attr = obj.CreateAttribute(name, [], gdal.ExtendedDataType.Create(gdal.GDT_Float64))
        attr.WriteDouble(value)


def write_netcdf(
    path: Path,
    lat: np.ndarray,
    lon: np.ndarray,
    pixels: np.ndarray,
    nodata: float | None = None,
) -> Path:
    """A NetCDF-4 file written by GDAL: variable ``tas(time, lat, lon)``
    chunked as :data:`BLOCK`, with ``lat``/``lon`` coordinate variables."""
    ds = gdal.GetDriverByName("netCDF").CreateMultiDimensional(str(path), [], ["FORMAT=NC4"])
    root = ds.GetRootGroup()
    f64 = gdal.ExtendedDataType.Create(gdal.GDT_Float64)
    dims = []
    for name, kind, values, attrs in [
        ("time", "TEMPORAL", np.arange(pixels.shape[0], dtype=np.float64), {"units": "days since 2000-01-01"}),
        ("lat", "HORIZONTAL_Y", lat, {"units": "degrees_north", "standard_name": "latitude"}),
        ("lon", "HORIZONTAL_X", lon, {"units": "degrees_east", "standard_name": "longitude"}),
    ]:
        dim = root.CreateDimension(name, kind, None, len(values))
        var = root.CreateMDArray(name, [dim], f64)
        var.Write(np.asarray(values, dtype=np.float64))
        for key, value in attrs.items():
            add_attribute(var, key, value)
        dims.append(dim)
    dtype = gdal.ExtendedDataType.Create(gdal.GDT_Float32)
    block = ",".join(map(str, BLOCK))
    tas = root.CreateMDArray("tas", dims, dtype, [f"BLOCKSIZE={block}"])
    if nodata is not None:
        tas.SetNoDataValueDouble(nodata)
    add_attribute(tas, "units", "K")
    tas.Write(pixels.astype(np.float32))
    del tas, root, ds
    return path


def ramp(bands: int = BANDS, rows: int = ROWS, cols: int = COLS) -> np.ndarray:
    """Distinct values: band * 10000 + stored row * 100 + column."""
    b, y, x = np.mgrid[0:bands, 0:rows, 0:cols]
    return (b * 10000 + y * 100 + x).astype(np.float32)


def index(chunkref_bin: Path, source: Path, out: Path) -> Path:
    result = run_chunkref(chunkref_bin, "index", source, "-o", out)
    assert result.returncode == 0, result.stderr
    return out


def native_netcdf(source: Path) -> gdal.Dataset:
    return gdal.OpenEx(f'NETCDF:"{source}":tas', gdal.OF_RASTER, allowed_drivers=["netCDF"])


def assert_same_transform(got: tuple, want: tuple, what: str) -> None:
    assert got == pytest.approx(want, rel=1e-9, abs=1e-9), f"{what}: {got} != {want}"


def assert_reads_as(ours: gdal.Dataset, theirs: gdal.Dataset, what: str, widen: bool = False) -> None:
    """Every band in whole, in odd windows and by blocks, the dataset at
    once, and a resampled read equal the native driver's (``widen``:
    compared as float64, for GRIB, which GDAL shows as Float64 and chunkref
    as the Float32 it decodes)."""
    def same(got: np.ndarray, want: np.ndarray, text: str) -> None:
        if widen:
            got, want = got.astype(np.float64), want.astype(np.float64)
        assert_pixels_equal(got, want, text)

    assert (ours.RasterXSize, ours.RasterYSize, ours.RasterCount) == (
        theirs.RasterXSize,
        theirs.RasterYSize,
        theirs.RasterCount,
    ), what
    for b in range(1, ours.RasterCount + 1):
        mine, native = ours.GetRasterBand(b), theirs.GetRasterBand(b)
        plane = native.ReadAsArray()
        if widen:
            for xoff, yoff, w, h in odd_windows(ours.RasterXSize, ours.RasterYSize):
                window = plane[yoff : yoff + h, xoff : xoff + w]
                same(mine.ReadAsArray(xoff, yoff, w, h), window, f"{what} band {b} window")
        else:
            assert_band_matches(mine, plane, f"{what} band {b}")
        bw, bh = mine.GetBlockSize()
        dtype = gdal_array.GDALTypeCodeToNumericTypeCode(mine.DataType)
        for by in range((ours.RasterYSize + bh - 1) // bh):
            for bx in range((ours.RasterXSize + bw - 1) // bw):
                block = np.frombuffer(mine.ReadBlock(bx, by), dtype=dtype).reshape(bh, bw)
                want = plane[by * bh : (by + 1) * bh, bx * bw : (bx + 1) * bw]
                got = block[: want.shape[0], : want.shape[1]]
                same(got, want, f"{what} band {b} block {(bx, by)}")
        for size in [(7, 5), (40, 31)]:
            got = mine.ReadAsArray(buf_xsize=size[0], buf_ysize=size[1])
            want = native.ReadAsArray(buf_xsize=size[0], buf_ysize=size[1])
            same(got, want, f"{what} band {b} resampled to {size}")
    same(ours.ReadAsArray(), theirs.ReadAsArray(), f"{what} dataset read")


def test_south_up_netcdf_is_served_north_up(tmp_path, chunkref_bin):
    """Latitudes increasing: rows served bottom-up, as the netCDF driver
    serves them, with its north-up geotransform; Y_ORDER=STORED keeps the
    stored rows and a positive y pixel size."""
    lat = 10.0 + 0.5 * np.arange(ROWS)
    lon = -20.0 + 0.25 * np.arange(COLS)
    source = write_netcdf(tmp_path / "southup.nc", lat, lon, ramp())
    out = index(chunkref_bin, source, tmp_path / "southup.json")
    ours, theirs = open_chunkref(f'CHUNKREF:"{out}":tas'), native_netcdf(source)
    assert theirs.GetGeoTransform()[5] < 0
    assert_same_transform(ours.GetGeoTransform(), theirs.GetGeoTransform(), "north-up")
    assert_reads_as(ours, theirs, "south-up grid")
    stored = open_chunkref(f'CHUNKREF:"{out}":tas', ["Y_ORDER=STORED"])
    gt = stored.GetGeoTransform()
    assert gt[5] == pytest.approx(0.5) and gt[3] == pytest.approx(lat[0] - 0.25)
    assert_pixels_equal(stored.ReadAsArray(), ramp(), "Y_ORDER=STORED")
    text = failure_text(open_chunkref, f'CHUNKREF:"{out}":tas', ["Y_ORDER=UP"])
    assert "Y_ORDER=UP" in text and "NORTH_UP or STORED" in text, text


def test_north_up_netcdf_is_served_as_stored(tmp_path, chunkref_bin):
    """Latitudes decreasing: nothing moves."""
    lat = 20.0 - 0.5 * np.arange(ROWS)
    lon = 0.125 + 0.25 * np.arange(COLS)
    source = write_netcdf(tmp_path / "northup.nc", lat, lon, ramp())
    out = index(chunkref_bin, source, tmp_path / "northup.json")
    ours, theirs = open_chunkref(f'CHUNKREF:"{out}":tas'), native_netcdf(source)
    assert_same_transform(ours.GetGeoTransform(), theirs.GetGeoTransform(), "north-up")
    assert_pixels_equal(ours.ReadAsArray(), ramp(), "stored order")
    assert_reads_as(ours, theirs, "north-up grid")


@pytest.mark.parametrize(
    "first, step",
    [(200.5, 1.0), (180.1, 0.4), (180.0, 0.3), (0.5, 1.0), (-10.0, 0.5)],
    ids=["east", "just-east", "at-180", "from-0", "negative"],
)
def test_netcdf_longitudes_east_of_180_move_by_360(tmp_path, chunkref_bin, first, step):
    """A grid whose first longitude (pixel centre) lies east of 180 degrees
    is placed 360 degrees west, as the netCDF driver places it (pixels
    stay); others stay; GDAL_NETCDF_CENTERLONG_180=NO keeps them all."""
    lat = 50.0 - np.arange(ROWS)
    lon = first + step * np.arange(COLS)
    source = write_netcdf(tmp_path / "lon.nc", lat, lon, ramp())
    out = index(chunkref_bin, source, tmp_path / "lon.json")
    for setting in ["YES", "NO"]:
        with config_options({"GDAL_NETCDF_CENTERLONG_180": setting}):
            ours, theirs = open_chunkref(f'CHUNKREF:"{out}":tas'), native_netcdf(source)
            what = f"first longitude {first}, CENTERLONG_180={setting}"
            assert_same_transform(ours.GetGeoTransform(), theirs.GetGeoTransform(), what)
            assert_pixels_equal(ours.ReadAsArray(), theirs.ReadAsArray(), what)


def write_global_grib(
    path: Path, west: float, step: float, rows: int = 9, cols: int | None = None
) -> tuple[Path, np.ndarray]:
    """A GRIB2 file written by GDAL: a latitude/longitude grid (global
    unless ``cols`` says otherwise) whose first pixel's west edge is
    ``west``, two messages."""
    cols = cols or round(360 / step)
    mem = gdal.GetDriverByName("MEM").Create("", cols, rows, 2, gdal.GDT_Float32)
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(4326)
    mem.SetSpatialRef(srs)
    mem.SetGeoTransform((west, step, 0.0, 45.0, 0.0, -step))
    pixels = ramp(2, rows, cols)
    for b in range(2):
        mem.GetRasterBand(b + 1).WriteArray(pixels[b])
    creation = ["DATA_ENCODING=IEEE_FLOATING_POINT", "DISCIPLINE=0"]
    for b in range(2):
        creation += [
            f"BAND_{b + 1}_PDS_PDTN=0",
            f"BAND_{b + 1}_PDS_TEMPLATE_ASSEMBLED_VALUES=2 2 2 0 96 0 0 1 {6 * b} 100 0 50000 255 -127 -2147483647",
        ]
    with captured_errors():
        gdal.Translate(str(path), mem, format="GRIB", creationOptions=creation)
    return path, pixels


@pytest.mark.parametrize(
    "west, step", [(0.0, 10.0), (5.0, 10.0), (-0.5, 1.0)], ids=["from-0", "offset", "one-degree"]
)
def test_global_grib_is_rolled_at_the_antimeridian(tmp_path, chunkref_bin, west, step):
    """GDAL's GRIB driver serves a global 0..360 grid from -180 degrees,
    its columns rolled; ChunkRef serves the same pixels and geotransform,
    and with GRIB_ADJUST_LONGITUDE_RANGE=NO both serve the stored grid."""
    source, _ = write_global_grib(tmp_path / "global.grb2", west, step)
    out = index(chunkref_bin, source, tmp_path / "global.json")
    for setting in ["YES", "NO"]:
        with config_options({"GRIB_ADJUST_LONGITUDE_RANGE": setting}):
            ours = open_chunkref(out)
            theirs = gdal.OpenEx(str(source), gdal.OF_RASTER, allowed_drivers=["GRIB"])
            what = f"west {west}, GRIB_ADJUST_LONGITUDE_RANGE={setting}"
            assert_same_transform(ours.GetGeoTransform(), theirs.GetGeoTransform(), what)
            assert_reads_as(ours, theirs, what, widen=True)


@pytest.mark.parametrize(
    "gdal_type, default",
    [
        (gdal.GDT_Int16, -32767.0),
        (gdal.GDT_UInt16, 65535.0),
        (gdal.GDT_Int32, -2147483647.0),
        (gdal.GDT_Float32, 9.969209968386869e36),
        (gdal.GDT_Float64, 9.969209968386869e36),
        (gdal.GDT_Byte, None),
    ],
    ids=lambda v: gdal.GetDataTypeName(v) if isinstance(v, int) and v < 20 else str(v),
)
def test_netcdf_default_fill_is_nodata(tmp_path, chunkref_bin, gdal_type, default):
    """A NetCDF-4 variable without _FillValue: GDAL's netCDF driver reports
    its type's default fill (NC_FILL_*) as nodata, none for bytes; so does
    ChunkRef on the index."""
    mem = gdal.GetDriverByName("MEM").Create("", 6, 4, 1, gdal_type)
    mem.SetGeoTransform((0.0, 1.0, 0.0, 4.0, 0.0, -1.0))
    mem.GetRasterBand(1).WriteArray(np.arange(24).reshape(4, 6))
    source = tmp_path / "fill.nc"
    gdal.Translate(str(source), mem, format="netCDF", creationOptions=["FORMAT=NC4"])
    out = index(chunkref_bin, source, tmp_path / "fill.json")
    theirs = gdal.OpenEx(str(source), gdal.OF_RASTER, allowed_drivers=["netCDF"])
    ours = open_chunkref(f'CHUNKREF:"{out}":Band1')
    assert theirs.GetRasterBand(1).GetNoDataValue() == default
    assert ours.GetRasterBand(1).GetNoDataValue() == default
    assert ours.GetRasterBand(1).GetMaskFlags() == theirs.GetRasterBand(1).GetMaskFlags()
    assert_pixels_equal(ours.ReadAsArray(), theirs.ReadAsArray(), "pixels")


def kerchunk_grib_refs(source: Path, lat: np.ndarray, lon: np.ndarray, shape: tuple[int, int]) -> dict:
    """The references kerchunk's ``scan_grib`` writes for the first message
    of ``source`` (variable ``u``, codec ``grib``, inlined coordinates),
    written here as kerchunk 0.2 writes them."""
    import base64
    import json

    first = source.read_bytes()
    length = int.from_bytes(first[8:16], "big")
    rows, cols = shape

    def coordinate(values: np.ndarray, name: str, units: str) -> dict:
        zarray = {"chunks": [len(values)], "compressor": None, "dtype": "<f8", "fill_value": None,
                  "filters": None, "order": "C", "shape": [len(values)], "zarr_format": 2}
        attrs = {"_ARRAY_DIMENSIONS": [name], "units": units, "standard_name": name,
                 "long_name": name}
        data = "base64:" + base64.b64encode(values.astype("<f8").tobytes()).decode()
        return {f"{name}/.zarray": json.dumps(zarray), f"{name}/.zattrs": json.dumps(attrs),
                f"{name}/0": data}

    refs = {".zgroup": json.dumps({"zarr_format": 2}),
            ".zattrs": json.dumps({"GRIB_edition": 2, "GRIB_centre": "unknown"})}
    refs.update(coordinate(lat, "latitude", "degrees_north"))
    refs.update(coordinate(lon, "longitude", "degrees_east"))
    refs["u/.zarray"] = json.dumps({
        "chunks": [rows, cols], "compressor": None, "dtype": "<f8", "fill_value": None,
        "filters": [{"dtype": "float64", "id": "grib", "var": "u"}], "order": "C",
        "shape": [rows, cols], "zarr_format": 2})
    refs["u/.zattrs"] = json.dumps({"_ARRAY_DIMENSIONS": ["latitude", "longitude"],
                                    "GRIB_shortName": "u", "units": "m s**-1"})
    refs["u/0.0"] = [str(source), 0, length]
    return {"version": 1, "refs": refs}


@pytest.mark.parametrize("west, step", [(0.0, 10.0), (-20.0, 0.5)], ids=["global", "regional"])
def test_kerchunk_grib_references_read_as_the_grib_driver(tmp_path, west, step):
    """kerchunk's GRIB2 references (codec ``grib``, one whole message per
    chunk, coordinates inlined) read as GDAL's GRIB driver reads the file:
    the same pixels (of the first message) and geotransform, a global
    0..360 grid rolled at the antimeridian."""
    import json

    rows = 9
    if step == 10.0:
        source, pixels = write_global_grib(tmp_path / "k.grb2", west, step, rows)
    else:
        source, pixels = write_global_grib(tmp_path / "k.grb2", west, step, rows, cols=30)
    cols = pixels.shape[2]
    # eccodes gives values and coordinates in the message's scanning order:
    # GDAL's writer stores rows south first (+j), so latitudes increase.
    lat = 45.0 - step / 2 - step * np.arange(rows)[::-1]
    lon = (west + step / 2 + step * np.arange(cols)) % 360.0
    refs = tmp_path / "k.json"
    refs.write_text(json.dumps(kerchunk_grib_refs(source, lat, lon, (rows, cols))))
    with captured_errors() as messages:
        ours = open_chunkref(f'CHUNKREF:"{refs}":u')
    theirs = gdal.OpenEx(str(source), gdal.OF_RASTER, allowed_drivers=["GRIB"])
    # The store records no shape of the earth: no CRS where GDAL gives one,
    # and the open says so.
    assert ours.GetSpatialRef() is None and theirs.GetSpatialRef() is not None
    assert any("no shape of the earth" in m for m in messages), messages
    assert_same_transform(ours.GetGeoTransform(), theirs.GetGeoTransform(), "kerchunk grib")
    got = ours.GetRasterBand(1).ReadAsArray().astype(np.float64)
    want = theirs.GetRasterBand(1).ReadAsArray().astype(np.float64)
    assert_pixels_equal(got, want, "kerchunk grib band 1")


# --- Subdatasets: GDAL's order, names and descriptions -------------------


def listing(ds: gdal.Dataset) -> list[tuple[str, str]]:
    """(array path, description) of each subdataset, in listing order;
    the path as it follows the last ':' of the name, leading '/' dropped
    (GDAL's netCDF driver names group variables ``/grp/v``, its HDF5
    driver every dataset ``//path``; chunkref by the bare path)."""
    md = ds.GetMetadata("SUBDATASETS") or {}
    count = len(md) // 2
    return [
        (md[f"SUBDATASET_{i}_NAME"].rsplit(":", 1)[-1].strip('"').lstrip("/"), md[f"SUBDATASET_{i}_DESC"])
        for i in range(1, count + 1)
    ]


def write_netcdf4_variables(path: Path) -> Path:
    """A NetCDF-4 file written by GDAL's multidimensional API whose
    variables come in no alphabetical order, one of them in a group
    created before the last root variable, of several types, one with a
    ``standard_name`` (which GDAL's netCDF driver shows in the description)."""
    ds = gdal.GetDriverByName("netCDF").CreateMultiDimensional(str(path), [], ["FORMAT=NC4"])
    root = ds.GetRootGroup()
    t, y, x = (root.CreateDimension(n, None, None, s) for n, s in [("t", 2), ("y", 3), ("x", 4)])
    values = np.arange(24).reshape(2, 3, 4)

    def variable(group, name, dims, gdal_type, attrs=None):
        var = group.CreateMDArray(name, dims, gdal.ExtendedDataType.Create(gdal_type))
        dtype = gdal_array.GDALTypeCodeToNumericTypeCode(gdal_type)
        var.Write(values[(0,) * (3 - len(dims))].astype(dtype) + 1)
        for key, value in (attrs or {}).items():
            add_attribute(var, key, value)

    variable(root, "zeta", [y, x], gdal.GDT_Float32)
    variable(root, "alpha", [t, y, x], gdal.GDT_Int16, {"standard_name": "air_temperature"})
    variable(root, "mid", [y, x], gdal.GDT_Byte)
    variable(root, "line", [x], gdal.GDT_Float64)
    variable(root, "wide", [y, x], gdal.GDT_UInt32)
    group = root.CreateGroup("grp")
    variable(group, "inner", [y, x], gdal.GDT_Float64)
    variable(group, "b_in", [y, x], gdal.GDT_Int32)
    variable(root, "after", [y, x], gdal.GDT_UInt16)
    del group, root, ds, t, y, x
    return path


def test_netcdf4_subdatasets_in_gdal_order(tmp_path, chunkref_bin):
    """GDAL's netCDF driver lists a file's variables of 2 or more
    dimensions in file order, a group's after the root's, described as
    ``[dims] standard_name-or-name (netCDF type)``: so does ChunkRef, and
    each subdataset reads as GDAL's."""
    source = write_netcdf4_variables(tmp_path / "order.nc")
    out = index(chunkref_bin, source, tmp_path / "order.json")
    theirs = listing(gdal.OpenEx(str(source), allowed_drivers=["netCDF"]))
    assert [p for p, _ in theirs] == ["zeta", "alpha", "mid", "wide", "after", "grp/inner", "grp/b_in"]
    ours = open_chunkref(str(out))
    assert listing(ours) == theirs
    md, native_md = ours.GetMetadata("SUBDATASETS"), gdal.Open(str(source)).GetMetadata("SUBDATASETS")
    for i in range(1, len(theirs) + 1):
        mine = open_chunkref(md[f"SUBDATASET_{i}_NAME"])
        native = gdal.Open(native_md[f"SUBDATASET_{i}_NAME"])
        assert_pixels_equal(mine.ReadAsArray(), native.ReadAsArray(), theirs[i - 1][0])


def test_hdf5_subdatasets_in_gdal_order(tmp_path, chunkref_bin):
    """The same file under a name GDAL's HDF5 driver opens: it walks the
    file by name, a group's datasets where the group comes, and describes
    each as ``[dims] //path (HDF5 type)``; so does ChunkRef."""
    source = write_netcdf4_variables(tmp_path / "order.nc")
    renamed = source.rename(tmp_path / "order.h5")
    out = index(chunkref_bin, renamed, tmp_path / "order.json")
    theirs = listing(gdal.OpenEx(str(renamed), allowed_drivers=["HDF5"]))
    assert [p for p, _ in theirs][:2] == ["after", "alpha"], theirs
    assert listing(open_chunkref(str(out))) == theirs


def test_netcdf3_character_variables_listed_as_gdal_lists_them(tmp_path, chunkref_bin):
    """GDAL's netCDF driver lists character (NC_CHAR) variables of 2 or
    more dimensions among the subdatasets, in file order, and opens one as
    a Byte raster (its reads then fail: netCDF will not convert text to
    numbers). ChunkRef lists and opens them alike, and reads the
    characters' bytes."""
    from netcdf3_writer import Var, write

    text = np.frombuffer(b"abcdeFGHIJklmno", dtype="S1").reshape(3, 5)
    text3 = np.stack([text, text[::-1]])
    grid = (np.arange(12, dtype=np.float32) * 1.5).reshape(3, 4)
    variables = [
        Var("zeta", ["y", "x"], grid),
        Var("chars", ["y", "s"], text),
        Var("alpha", ["t", "y", "x"], np.stack([grid, grid + 1]).astype(np.int16),
            {"standard_name": "air_temperature"}),
        Var("chars3", ["t", "y", "s"], text3),
        Var("name", ["s"], text[0]),
        Var("mid", ["y", "x"], grid.astype(np.int8)),
    ]
    source = write(tmp_path / "chars.nc", 1, {"t": 2, "y": 3, "x": 4, "s": 5}, variables)
    out = index(chunkref_bin, source, tmp_path / "chars.json")
    native = gdal.OpenEx(str(source), allowed_drivers=["netCDF"])
    theirs = listing(native)
    assert [p for p, _ in theirs] == ["zeta", "chars", "alpha", "chars3", "mid"], theirs
    assert theirs[1][1] == "[3x5] chars (8-bit character)"
    ours = open_chunkref(str(out))
    assert listing(ours) == theirs
    for name, stored in [("chars", text[None]), ("chars3", text3)]:
        mine = open_chunkref(f'CHUNKREF:"{out}":{name}')
        gdal_one = gdal.OpenEx(f'NETCDF:"{source}":{name}', allowed_drivers=["netCDF"])
        assert (mine.RasterXSize, mine.RasterYSize, mine.RasterCount) == (
            gdal_one.RasterXSize, gdal_one.RasterYSize, gdal_one.RasterCount)
        assert mine.GetRasterBand(1).DataType == gdal_one.GetRasterBand(1).DataType == gdal.GDT_Byte
        assert mine.GetRasterBand(1).GetNoDataValue() == gdal_one.GetRasterBand(1).GetNoDataValue()
        with pytest.raises(RuntimeError):
            gdal_one.ReadAsArray()
        got = mine.ReadAsArray().reshape(stored.shape)
        want = np.frombuffer(stored.tobytes(), np.uint8).reshape(stored.shape)
        # Rows bottom-up, as GDAL's netCDF driver serves a grid nothing places.
        assert_pixels_equal(got, want[:, ::-1], name)


# --- GOES-R: the geostationary CRS GDAL makes -----------------------------


@pytest.mark.parametrize(
    "ellipsoid, sweep",
    [
        ({"semi_major_axis": 6378137.0, "semi_minor_axis": 6356752.31414, "inverse_flattening": 298.2572221}, "x"),
        ({"semi_major_axis": 6378137.0, "semi_minor_axis": 6356752.31414}, "x"),
        ({"semi_major_axis": 6378137.0, "inverse_flattening": 298.257223563}, "x"),
        ({"semi_major_axis": 6378137.0, "semi_minor_axis": 6356752.31414, "inverse_flattening": 298.2572221}, "y"),
    ],
    ids=["goes-r", "semi-minor", "wgs84-flattening", "sweep-y"],
)
def test_geostationary_crs_is_gdal_s(tmp_path, chunkref_bin, monkeypatch, ellipsoid, sweep):
    """GDAL's netCDF driver makes a geostationary grid mapping sweeping
    along x a WKT1 CRS carrying ``+sweep=x`` in a PROJ4 extension, which
    PROJ finds equal only to a CRS of that form: ChunkRef's CRS is the
    same (``IsSame`` both ways, and after a WKT round trip)."""
    import test_real_goes

    projection = {k: v for k, v in test_real_goes.PROJECTION.items()
                  if k not in ("semi_major_axis", "semi_minor_axis", "inverse_flattening")}
    projection.update(ellipsoid, sweep_angle_axis=sweep)
    monkeypatch.setattr(test_real_goes, "PROJECTION", projection)
    source = test_real_goes.write_goes(tmp_path / "goes.nc")
    out = index(chunkref_bin, source, tmp_path / "goes.json")
    native = gdal.Open(f'NETCDF:"{source}":HT').GetSpatialRef()
    ours = open_chunkref(f'CHUNKREF:"{out}":HT').GetSpatialRef()
    assert native.IsSame(ours) and ours.IsSame(native), (ours.ExportToWkt(), native.ExportToWkt())
    again = osr.SpatialReference(wkt=ours.ExportToWkt())
    assert again.IsSame(osr.SpatialReference(wkt=native.ExportToWkt()))


# --- GDAL multidimensional-API files read as GDAL reads them --------------


@pytest.mark.parametrize(
    "gdal_type, shape, options",
    [
        (gdal.GDT_Byte, (5, 7), []),
        (gdal.GDT_Int16, (3, 5, 7), ["BLOCKSIZE=1,2,3", "COMPRESS=DEFLATE"]),
        (gdal.GDT_UInt32, (2, 3, 5, 7), ["BLOCKSIZE=1,2,3,4", "COMPRESS=DEFLATE", "SHUFFLE=YES"]),
        (gdal.GDT_Int64, (4, 6), ["BLOCKSIZE=4,6"]),
        (gdal.GDT_Float64, (3, 5, 7), ["BLOCKSIZE=2,5,7", "COMPRESS=DEFLATE"]),
    ],
    ids=["byte", "int16-deflate", "uint32-shuffle", "int64-one-chunk", "float64"],
)
def test_multidimensional_api_files_read_as_gdal(tmp_path, chunkref_bin, gdal_type, shape, options):
    """Variables GDAL's multidimensional netCDF writer makes (no
    coordinate variables, several dimensions, types, chunkings and
    compressions) read through ``chunkref index`` as GDAL reads them. The
    file must be closed first: a dimension object kept alive keeps GDAL's
    dataset open and its data unwritten, and an index of such a file
    holds no chunks (it reads as the fill value)."""
    path = tmp_path / "md.nc"
    ds = gdal.GetDriverByName("netCDF").CreateMultiDimensional(str(path), [], ["FORMAT=NC4"])
    root = ds.GetRootGroup()
    dims = [root.CreateDimension(f"d{i}", None, None, n) for i, n in enumerate(shape)]
    var = root.CreateMDArray("v", dims, gdal.ExtendedDataType.Create(gdal_type), options)
    dtype = gdal_array.GDALTypeCodeToNumericTypeCode(gdal_type)
    var.Write((np.arange(int(np.prod(shape))) % 120 + 1).astype(dtype).reshape(shape))
    del var, dims, root, ds
    out = index(chunkref_bin, path, tmp_path / "md.json")
    ours = open_chunkref(f'CHUNKREF:"{out}":v')
    theirs = gdal.OpenEx(f'NETCDF:"{path}":v', allowed_drivers=["netCDF"])
    assert_pixels_equal(ours.ReadAsArray(), theirs.ReadAsArray(), "v")


# --- GRIB2: messages on several grids are one dataset, as in GDAL ---------


@pytest.mark.parametrize("order", ["large-first", "small-first"])
def test_grib_messages_on_several_grids_are_one_dataset(tmp_path, chunkref_bin, order):
    """GDAL 3.6's GRIB driver makes one dataset of a file whose messages
    lie on grids of several sizes: the first message's grid and
    georeferencing, every message a band in file order; a band of another
    size reads its field at the top left, cut to the dataset, the rest 0
    (with a warning at read time). ChunkRef on ``chunkref index`` reads
    the same (and the index warns)."""
    from test_grib2 import write_grib

    large = write_grib(tmp_path / "large.grb2", ["DATA_ENCODING=IEEE_FLOATING_POINT"], bands=2)
    small = write_grib(tmp_path / "small.grb2", ["DATA_ENCODING=SIMPLE_PACKING"], bands=2,
                       size=(11, 9), geotransform=(5.0, 1.0, 0.0, 50.0, 0.0, -1.0))
    parts = [large, small] if order == "large-first" else [small, large]
    source = tmp_path / "mixed.grb2"
    source.write_bytes(b"".join(p.read_bytes() for p in parts + parts[:1]))
    out = tmp_path / "mixed.json"
    done = run_chunkref(chunkref_bin, "index", source, "-o", out)
    assert done.returncode == 0, done.stderr
    assert "band 3 is" in done.stderr and "band 4 is" in done.stderr, done.stderr
    theirs = gdal.OpenEx(str(source), gdal.OF_RASTER, allowed_drivers=["GRIB"])
    ours = open_chunkref(str(out))
    assert not ours.GetMetadata("SUBDATASETS")
    assert ours.RasterCount == theirs.RasterCount == 6
    assert_same_transform(ours.GetGeoTransform(), theirs.GetGeoTransform(), order)
    with captured_errors():
        assert_reads_as(ours, theirs, order, widen=True)


@pytest.mark.parametrize("gdal_type", [gdal.GDT_Float32, gdal.GDT_Float64], ids=["f4", "f8"])
@pytest.mark.parametrize("nodata", [None, -999.0, float("nan")], ids=["default", "number", "nan"])
def test_netcdf_nan_reads_as_nodata(tmp_path, chunkref_bin, gdal_type, nodata):
    """GDAL's netCDF driver shows NaN in a float variable as its nodata
    when that is a number (its _FillValue, or netCDF's default fill), and
    NaN as NaN when the nodata is NaN: so does ChunkRef (the
    ``valid_range`` filter's ``nan``), for NetCDF-4 and NetCDF-3."""
    from netcdf3_writer import Var, write

    values = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, np.nan]])
    nc4 = tmp_path / "nan4.nc"
    ds = gdal.GetDriverByName("netCDF").CreateMultiDimensional(str(nc4), [], ["FORMAT=NC4"])
    root = ds.GetRootGroup()
    dims = [root.CreateDimension("y", None, None, 2), root.CreateDimension("x", None, None, 3)]
    var = root.CreateMDArray("v", dims, gdal.ExtendedDataType.Create(gdal_type))
    if nodata is not None:
        var.SetNoDataValueDouble(nodata)
    var.Write(values)
    del var, dims, root, ds
    dtype = "f4" if gdal_type == gdal.GDT_Float32 else "f8"
    attrs = {} if nodata is None else {"_FillValue": np.array(nodata, dtype=dtype)}
    nc3 = write(tmp_path / "nan3.nc", 1, {"y": 2, "x": 3},
                [Var("v", ["y", "x"], values.astype(dtype), attrs)])
    for source in (nc4, nc3):
        out = index(chunkref_bin, source, tmp_path / f"{source.stem}.json")
        ours = open_chunkref(f'CHUNKREF:"{out}":v')
        theirs = gdal.OpenEx(f'NETCDF:"{source}":v', allowed_drivers=["netCDF"])
        mine, native = ours.GetRasterBand(1), theirs.GetRasterBand(1)
        want = native.GetNoDataValue()
        got = mine.GetNoDataValue()
        assert got == want or (got != got and want != want), source.name
        assert_pixels_equal(ours.ReadAsArray(), theirs.ReadAsArray(), source.name)
