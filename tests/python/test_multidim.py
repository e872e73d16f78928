"""GDAL's multidimensional API over chunkref indexes (issue 44).

Sources are written by GDAL itself (its netCDF driver, NetCDF-4 and
NetCDF-3, through the multidimensional API; its Zarr driver, Zarr v2; its
GRIB driver; COGs stacked in time), indexed with ``chunkref index`` and
opened with ``GDAL_OF_MULTIDIM_RASTER``. The oracle is GDAL's own
multidimensional driver on the source: ``gdalmdiminfo`` of the index shows
the same groups, dimensions (sizes, types, indexing variables), arrays
(types, dimensions, block sizes, units, nodata, attributes, CRS) as that of
the source, less the intended differences listed in docs/driver.md
("Multidimensional view"); ``gdalmdimtranslate`` of an array, and of a
``-subset`` by coordinate values, gives the same values; reads with any
start, count and step give the same values. For a COG time stack the cube
equals the raster view's bands and ``-subset time(...)`` picks the steps
``TIME_START``/``TIME_END`` pick.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal, osr

from conftest import run_chunkref
from raster_checks import captured_errors, failure_text

gdal.UseExceptions()

F4 = gdal.ExtendedDataType.Create(gdal.GDT_Float32)
F8 = gdal.ExtendedDataType.Create(gdal.GDT_Float64)
I2 = gdal.ExtendedDataType.Create(gdal.GDT_Int16)
TEXT = gdal.ExtendedDataType.CreateString()


def index(chunkref_bin: Path, *sources, out: Path, flags: tuple = ()) -> Path:
    done = run_chunkref(chunkref_bin, "index", *flags, *sources, "-o", out)
    assert done.returncode == 0, done.stderr + done.stdout
    return out


def open_md(path, drivers=None, options=None) -> gdal.Dataset:
    kwargs = {"allowed_drivers": drivers} if drivers else {}
    if options:
        kwargs["open_options"] = options
    return gdal.OpenEx(str(path), gdal.OF_MULTIDIM_RASTER, **kwargs)


def text_attr(obj, name: str, value: str) -> None:
    obj.CreateAttribute(name, [], TEXT).Write(value)


def mdiminfo(path) -> dict:
    done = subprocess.run(["gdalmdiminfo", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def walk(group: dict, prefix: str = "") -> dict:
    """Every group of gdalmdiminfo's JSON by full name."""
    out = {prefix or "/": group}
    for name, sub in (group.get("groups") or {}).items():
        out.update(walk(sub, f"{prefix}/{name}"))
    return out


def assert_same_info(ours: dict, theirs: dict, what: str, mapping: bool = True,
                     dimension_types: bool = True) -> None:
    """Same groups, dimensions and arrays; block sizes where the source
    chunks (a contiguous NetCDF variable has none, chunkref shows the whole
    array as its one chunk); attributes of the source present with equal
    values; CRS, and its axis mapping unless `mapping` is false; the
    dimensions' types and directions unless `dimension_types` is false."""
    mine, native = walk(ours), walk(theirs)
    assert sorted(mine) == sorted(native), what
    for path, g in native.items():
        o = mine[path]
        assert o.get("attributes", {}) | g.get("attributes", {}) == o.get("attributes", {}), \
            f"{what}: attributes of group {path}"
        assert dimensions(o, dimension_types) == dimensions(g, dimension_types), \
            f"{what}: dimensions of group {path}"
        arrays, our_arrays = g.get("arrays", {}), o.get("arrays", {})
        assert sorted(our_arrays) == sorted(arrays), f"{what}: arrays of group {path}"
        for name, a in arrays.items():
            b = dict(our_arrays[name])
            drop_unchunked_block_size(b, a)
            # Structural info (COMPRESS, ...) is not shown (docs/driver.md).
            a.pop("structural_info", None)
            srs_a, srs_b = a.pop("srs", None), b.pop("srs", None)
            assert (srs_a is None) == (srs_b is None), f"{what}: CRS of {path}/{name}"
            if srs_a:
                sa, sb = osr.SpatialReference(), osr.SpatialReference()
                sa.SetFromUserInput(srs_a["wkt"])
                sb.SetFromUserInput(srs_b["wkt"])
                assert sa.IsSame(sb), f"{what}: CRS of {path}/{name}"
                assert not mapping or srs_b["data_axis_to_srs_axis_mapping"] == \
                    srs_a["data_axis_to_srs_axis_mapping"], f"{what}: axis mapping of {name}"
            attrs = a.pop("attributes", {})
            our_attrs = b.pop("attributes", {})
            for k, v in attrs.items():
                assert our_attrs.get(k) == pytest.approx(v) if not isinstance(v, str) \
                    else our_attrs.get(k) == v, f"{what}: attribute {k} of {path}/{name}"
            assert b == a, f"{what}: array {path}/{name}"


def dimensions(group: dict, types: bool = True) -> dict:
    """A group's dimensions by full name, each indexing variable by name
    only: gdalmdiminfo 3.13 details it there, and it is compared as one of
    the group's arrays. Without `types`, no type and direction."""
    out = {}
    for d in group.get("dimensions", []):
        d = {k: v for k, v in d.items() if types or k not in ("type", "direction")}
        if isinstance(d.get("indexing_variable"), dict):
            d["indexing_variable"] = sorted(d["indexing_variable"])
        out[d["full_name"]] = d
    return out


def drop_unchunked_block_size(ours: dict, theirs: dict) -> None:
    """A contiguous NetCDF variable has no block size in gdalmdiminfo;
    chunkref shows the whole array as its one chunk: not compared."""
    if "block_size" not in theirs:
        ours.pop("block_size", None)


def arrays_of(ds: gdal.Dataset) -> dict:
    """Every array of a multidimensional dataset by full name."""
    out = {}

    def visit(group):
        for name in group.GetMDArrayNames() or []:
            a = group.OpenMDArray(name)
            out[a.GetFullName()] = a
        for name in group.GetGroupNames() or []:
            visit(group.OpenGroup(name))

    visit(ds.GetRootGroup())
    return out


def assert_same_values(ours: gdal.Dataset, theirs: gdal.Dataset, what: str) -> None:
    """Every array whole, and strided, reversed and offset hyperslabs."""
    mine, native = arrays_of(ours), arrays_of(theirs)
    assert sorted(mine) == sorted(native), what
    for name, a in native.items():
        b = mine[name]
        np.testing.assert_array_equal(b.ReadAsArray(), a.ReadAsArray(), err_msg=f"{what} {name}")
        shape = [d.GetSize() for d in a.GetDimensions()]
        for kw in slabs(shape):
            np.testing.assert_array_equal(b.ReadAsArray(**kw), a.ReadAsArray(**kw),
                                          err_msg=f"{what} {name} {kw}")


def slabs(shape: list[int]) -> list[dict]:
    """Hyperslabs of an array: an inner box, every other element, reversed."""
    if not shape:
        return []
    inner = dict(array_start_idx=[s // 3 for s in shape],
                 count=[max(1, s - s // 3 - 1) for s in shape])
    strided = dict(array_start_idx=[0] * len(shape), count=[(s + 1) // 2 for s in shape],
                   array_step=[2] * len(shape))
    backwards = dict(array_start_idx=[s - 1 for s in shape], count=shape,
                     array_step=[-1] * len(shape))
    return [inner, strided, backwards]


def translate(src, out: Path, *args: str) -> np.ndarray:
    """gdalmdimtranslate `src` to a NetCDF file with `args`; its values."""
    done = subprocess.run(["gdalmdimtranslate", "-q", str(src), str(out), *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return {n: a.ReadAsArray() for n, a in arrays_of(open_md(out)).items()}


def assert_same_translate(ours: Path, theirs: Path, tmp: Path, *args: str) -> None:
    a = translate(theirs, tmp / "theirs.nc", *args)
    b = translate(ours, tmp / "ours.nc", *args)
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(b[name], a[name], err_msg=f"{args} {name}")


# --- NetCDF-4 (an HDF5 file) and NetCDF-3 ----------------------------------


def write_netcdf(path: Path, fmt: str) -> Path:
    """A (time, lat, lon) variable with CF coordinates and a projected
    (y, x) variable with a grid mapping in a sub-group (NetCDF-4), or
    beside it (NetCDF-3)."""
    ds = gdal.GetDriverByName("netCDF").CreateMultiDimensional(str(path), [], [f"FORMAT={fmt}"])
    root = ds.GetRootGroup()
    text_attr(root, "title", "test cube")
    t = root.CreateDimension("time", "TEMPORAL", None, 4)
    lat = root.CreateDimension("lat", "HORIZONTAL_Y", None, 9)
    lon = root.CreateDimension("lon", "HORIZONTAL_X", None, 11)
    tv = root.CreateMDArray("time", [t], F8)
    tv.Write(np.array([0.0, 1, 2, 5]))
    tv.SetUnit("days since 2020-01-01")
    text_attr(tv, "standard_name", "time")
    latv = root.CreateMDArray("lat", [lat], F8)
    latv.Write(np.linspace(-40, 40, 9))
    latv.SetUnit("degrees_north")
    lonv = root.CreateMDArray("lon", [lon], F8)
    lonv.Write(np.linspace(0, 50, 11))
    lonv.SetUnit("degrees_east")
    options = ["BLOCKSIZE=1,4,5"] if fmt == "NC4" else []
    sst = root.CreateMDArray("sst", [t, lat, lon], F4, options)
    sst.SetNoDataValueDouble(-999)
    sst.SetUnit("K")
    text_attr(sst, "long_name", "sea surface temperature")
    values = np.arange(4 * 9 * 11, dtype="f4").reshape(4, 9, 11) / 4
    values[1, 2, 3] = -999
    sst.Write(values)
    sub = root.CreateGroup("utm") if fmt == "NC4" else root
    y = sub.CreateDimension("y", "HORIZONTAL_Y", None, 7)
    x = sub.CreateDimension("x", "HORIZONTAL_X", None, 6)
    yv = sub.CreateMDArray("y", [y], F8)
    yv.Write(5000 - 10 * np.arange(7.0))
    xv = sub.CreateMDArray("x", [x], F8)
    xv.Write(400 + 10 * np.arange(6.0))
    depth = sub.CreateMDArray("depth", [y, x], I2, ["BLOCKSIZE=3,4"] if fmt == "NC4" else [])
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32631)
    depth.SetSpatialRef(srs)
    depth.Write(np.arange(42, dtype="int16").reshape(7, 6) - 20)
    del ds
    return path


@pytest.mark.parametrize("fmt", ["NC4", "NC"])
def test_netcdf_matches_gdal_netcdf_driver(fmt, chunkref_bin, tmp_path):
    source = write_netcdf(tmp_path / f"cube_{fmt}.nc", fmt)
    ours = index(chunkref_bin, source, out=tmp_path / "cube.json")
    assert_same_info(mdiminfo(ours), mdiminfo(source), fmt)
    assert_same_values(open_md(ours), open_md(source, ["netCDF"]), fmt)
    assert_same_translate(ours, source, tmp_path, "-array", "sst")
    # A lat/lon box and a time range by coordinate values.
    assert_same_translate(ours, source, tmp_path, "-array", "sst",
                          "-subset", "time(1,5)", "-subset", "lat(-15,25)",
                          "-subset", "lon(12,33)")


def test_netcdf4_values_match_gdal_hdf5_driver(chunkref_bin, tmp_path):
    """The NetCDF-4 file is HDF5: GDAL's HDF5 driver reads the same values."""
    source = write_netcdf(tmp_path / "cube.nc", "NC4").rename(tmp_path / "cube.h5")
    ours = arrays_of(open_md(index(chunkref_bin, source, out=tmp_path / "cube.parquet")))
    native = arrays_of(open_md(source, ["HDF5"]))
    for name in ["/sst", "/utm/depth", "/lat", "/time"]:
        np.testing.assert_array_equal(ours[name].ReadAsArray(), native[name].ReadAsArray())


# --- Zarr v2 written by GDAL's Zarr driver --------------------------------


def test_zarr_v2_matches_gdal_zarr_driver(chunkref_bin, tmp_path):
    """The NetCDF-4 cube copied to Zarr v2 by GDAL's Zarr driver
    (gdalmdimtranslate): named dimensions, a sub-group, a CRS."""
    netcdf = write_netcdf(tmp_path / "cube.nc", "NC4")
    source = tmp_path / "cube.zarr"
    subprocess.run(["gdalmdimtranslate", "-q", str(netcdf), str(source), "-of", "Zarr",
                    "-co", "FORMAT=ZARR_V2", "-co", "COMPRESS=ZLIB"], check=True, timeout=120)
    ours = index(chunkref_bin, source, out=tmp_path / "cube.json")
    # GDAL 3.6's Zarr driver maps a projected CRS's axes [1, 2] to (y, x)
    # arrays (easting to y); chunkref maps them as GDAL's netCDF driver
    # does, [2, 1] (docs/driver.md), checked by the NetCDF tests.
    assert_same_info(mdiminfo(ours), mdiminfo(source), "zarr", mapping=False)
    assert_same_values(open_md(ours), open_md(source, ["Zarr"]), "zarr")
    assert_same_translate(ours, source, tmp_path, "-array", "/utm/depth",
                          "-subset", "x(410,450)", "-subset", "y(4950,4990)")


# --- GRIB2 written by GDAL -------------------------------------------------


def test_grib2_cube_equals_gdal_grib_bands(chunkref_bin, tmp_path):
    """GDAL's GRIB driver shows a GRIB file's multidimensional view by
    product; chunkref shows the store it indexes (one array, a band per
    field): the cube's values are GDAL's bands."""
    mem = gdal.GetDriverByName("MEM").Create("", 16, 12, 2, gdal.GDT_Float32)
    for b in range(2):
        mem.GetRasterBand(b + 1).WriteArray(np.arange(192).reshape(12, 16) * (b + 1.5))
    mem.SetGeoTransform([-10, 0.5, 0, 50, 0, -0.5])
    mem.SetProjection("EPSG:4326")
    source = tmp_path / "fields.grb2"
    gdal.Translate(str(source), mem, format="GRIB")
    ours = arrays_of(open_md(index(chunkref_bin, source, out=tmp_path / "grib.json")))
    native = gdal.Open(str(source))
    cube = [a for n, a in ours.items() if len(a.GetDimensions()) >= 3]
    assert len(cube) == 1, sorted(ours)
    values = cube[0].ReadAsArray().reshape(-1, 12, 16)
    np.testing.assert_array_equal(values, native.ReadAsArray())
    x = cube[0].GetDimensions()[-1].GetIndexingVariable().ReadAsArray()
    np.testing.assert_allclose(x, -10 + 0.5 * (np.arange(16) + 0.5))


# --- COG time stacks --------------------------------------------------------

STEPS = 6


def write_stack(chunkref_bin: Path, root: Path) -> Path:
    """STEPS daily COGs (70 x 50 Int16, 32 x 32 tiles) under `root` and
    their time stack index."""
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for s in range(STEPS):
        mem = gdal.GetDriverByName("MEM").Create("", 70, 50, 1, gdal.GDT_Int16)
        mem.GetRasterBand(1).WriteArray((np.arange(3500).reshape(50, 70) * 3 + s * 1000)
                                        .astype("int16"))
        mem.SetGeoTransform([100, 0.5, 0, 200, 0, -0.5])
        mem.SetProjection("EPSG:4326")
        paths.append(root / f"sst_202101{s + 1:02d}.tif")
        gdal.Translate(str(paths[-1]), mem, options="-of COG -co BLOCKSIZE=32 "
                       "-co OVERVIEWS=NONE -co COMPRESS=DEFLATE")
    return index(chunkref_bin, *paths, out=root / "stack.parquet",
                 flags=("--stack", "--datetime-from-name"))


@pytest.fixture(scope="module")
def stack(chunkref_bin, tmp_path_factory) -> Path:
    return write_stack(chunkref_bin, tmp_path_factory.mktemp("stack"))


def epoch(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=timezone.utc).timestamp()


def test_stack_cube_equals_raster_view(stack):
    raster = gdal.Open(str(stack))
    data = open_md(stack).GetRootGroup().OpenGroup("0").OpenMDArray("data")
    dims = [d.GetName() for d in data.GetDimensions()]
    assert dims == ["time", "bands", "y", "x"]
    np.testing.assert_array_equal(data.ReadAsArray()[:, 0], raster.ReadAsArray())
    assert data.GetBlockSize() == [1, 1, 32, 32]
    # time: a CF time variable from the steps' datetimes.
    time = data.GetDimensions()[0].GetIndexingVariable()
    assert time.GetUnit() == "seconds since 1970-01-01 00:00:00"
    want = [epoch(raster.GetRasterBand(b + 1).GetMetadataItem("DATETIME")[:10])
            for b in range(STEPS)]
    np.testing.assert_array_equal(time.ReadAsArray(), want)
    # x / y at pixel centres from the transform, the CRS mapped as GDAL's
    # drivers map EPSG:4326 (latitude to y, longitude to x).
    x = data.GetDimensions()[3].GetIndexingVariable().ReadAsArray()
    y = data.GetDimensions()[2].GetIndexingVariable().ReadAsArray()
    np.testing.assert_allclose(x, 100 + 0.5 * (np.arange(70) + 0.5))
    np.testing.assert_allclose(y, 200 - 0.5 * (np.arange(50) + 0.5))
    assert data.GetSpatialRef().GetDataAxisToSRSAxisMapping() == [3, 4]
    # A pixel drill and a strided window, as the raster view reads them.
    np.testing.assert_array_equal(
        data.ReadAsArray(array_start_idx=[0, 0, 17, 33], count=[STEPS, 1, 1, 1])[:, 0, 0, 0],
        raster.ReadAsArray(33, 17, 1, 1)[:, 0, 0])
    np.testing.assert_array_equal(
        data.ReadAsArray(array_start_idx=[5, 0, 49, 3], count=[3, 1, 10, 20],
                         array_step=[-2, 1, -3, 3])[:, 0],
        raster.ReadAsArray()[5::-2][:3, 49::-3][:, :10, 3::3][:, :, :20])


def test_stack_time_subset_picks_the_time_options_steps(stack, tmp_path):
    out = tmp_path / "subset.nc"
    subprocess.run(["gdalmdimtranslate", "-q", str(stack), str(out), "-array", "/0/data",
                    "-subset", f"time({epoch('2021-01-02')},{epoch('2021-01-04')})"],
                   check=True, timeout=120)
    picked = open_md(out).GetRootGroup().OpenMDArray("data").ReadAsArray()[:, 0]
    options = gdal.OpenEx(str(stack), open_options=["TIME_START=2021-01-02",
                                                    "TIME_END=2021-01-04"])
    np.testing.assert_array_equal(picked, options.ReadAsArray())
    # The time options choose the cube's steps too.
    cube = open_md(stack, options=["TIME_START=2021-01-02", "TIME_END=2021-01-04"])
    data = cube.GetRootGroup().OpenGroup("0").OpenMDArray("data")
    np.testing.assert_array_equal(data.ReadAsArray()[:, 0], picked)


def test_reads_in_another_type(stack):
    data = open_md(stack).GetRootGroup().OpenGroup("0").OpenMDArray("data")
    as_float = data.ReadAsArray(buffer_datatype=F8, array_start_idx=[1, 0, 2, 3],
                                count=[2, 1, 3, 4])
    assert as_float.dtype == np.float64
    np.testing.assert_array_equal(
        as_float, data.ReadAsArray(array_start_idx=[1, 0, 2, 3], count=[2, 1, 3, 4]))


# --- errors -------------------------------------------------------------------


def test_reads_and_subsets_outside_the_cube_fail(stack, tmp_path):
    data = open_md(stack).GetRootGroup().OpenGroup("0").OpenMDArray("data")
    message = failure_text(data.ReadAsArray, array_start_idx=[STEPS, 0, 0, 0],
                           count=[1, 1, 1, 1])
    assert "arrayStartIdx[0]" in message, message
    done = subprocess.run(["gdalmdimtranslate", "-q", str(stack), str(tmp_path / "o.nc"),
                           "-array", "/0/data", "-subset", "time(0,1)"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "empty set" in done.stderr, done.stderr


def test_unparsable_step_datetime_warns_naming_the_array(stack, chunkref_bin, tmp_path):
    """A stack whose step datetime does not parse opens without a time
    indexing variable, with a warning naming the array and the step."""
    table = tmp_path / "bad.json"
    done = run_chunkref(chunkref_bin, "convert", stack, table)
    assert done.returncode == 0, done.stderr
    doc = json.loads(table.read_text())
    zattrs = json.loads(doc["refs"]["0/data/.zattrs"])
    zattrs["chunkref:datetime"][2] = "the third day"
    doc["refs"]["0/data/.zattrs"] = json.dumps(zattrs)
    table.write_text(json.dumps(doc))
    with captured_errors() as errors:
        data = open_md(table).GetRootGroup().OpenGroup("0").OpenMDArray("data")
    assert data.GetDimensions()[0].GetIndexingVariable() is None
    assert any("0/data" in e and "time step 2" in e for e in errors), errors


def test_missing_index_fails_cleanly(tmp_path):
    with pytest.raises(RuntimeError):
        open_md(tmp_path / "nothing.json")


def test_chunks_not_tiling_the_shape_fail_naming_the_array(chunkref_bin, tmp_path):
    """An index whose chunk shape disagrees with its chunks' bytes opens,
    and a read fails with GDAL's error naming the array and the chunk."""
    source = write_netcdf(tmp_path / "cube.nc", "NC4")
    table = index(chunkref_bin, source, out=tmp_path / "cube.json")
    doc = json.loads(table.read_text())
    zarray = json.loads(doc["refs"]["sst/.zarray"])
    zarray["chunks"] = [1, 3, 5]
    doc["refs"]["sst/.zarray"] = json.dumps(zarray)
    table.write_text(json.dumps(doc))
    sst = open_md(table).GetRootGroup().OpenMDArray("sst")
    assert sst.GetBlockSize() == [1, 3, 5]
    message = failure_text(sst.ReadAsArray)
    assert "sst" in message, message


def test_mosaic_shows_its_scenes(chunkref_bin, tmp_path):
    """A mosaic index shows the arrays it holds, one per scene, each the
    scene's pixels on its own x/y; the composite is the raster view's."""
    paths = []
    for i, x0 in enumerate([100, 120]):
        mem = gdal.GetDriverByName("MEM").Create("", 40, 30, 1, gdal.GDT_Byte)
        mem.GetRasterBand(1).WriteArray(np.full((30, 40), 10 * (i + 1), dtype="uint8"))
        mem.SetGeoTransform([x0, 1, 0, 200, 0, -1])
        mem.SetProjection("EPSG:32631")
        paths.append(tmp_path / f"scene{i}.tif")
        gdal.Translate(str(paths[-1]), mem, options="-of COG -co OVERVIEWS=NONE")
    mosaic = index(chunkref_bin, *paths, out=tmp_path / "mosaic.parquet", flags=("--mosaic",))
    arrays = arrays_of(open_md(mosaic))
    scenes = [a for a in arrays.values() if len(a.GetDimensions()) == 3]
    assert len(scenes) == 2, sorted(arrays)
    firsts = sorted(a.GetDimensions()[2].GetIndexingVariable().ReadAsArray()[0] for a in scenes)
    assert firsts == [100.5, 120.5]
    values = sorted(int(a.ReadAsArray()[0, 0, 0]) for a in scenes)
    assert values == [10, 20]


RAW_BLOCK_INFO = pytest.mark.skipif(int(gdal.VersionInfo()) < 3120000,
                                    reason="GetRawBlockInfo is GDAL 3.12+")


def kerchunk_refs(chunkref_bin: Path, table: Path, out: Path) -> dict:
    """The Kerchunk references of an index (``chunkref convert`` to JSON)."""
    done = run_chunkref(chunkref_bin, "convert", table, out)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())["refs"]


@RAW_BLOCK_INFO
def test_raw_block_info_is_the_index_references(chunkref_bin, tmp_path):
    """GetRawBlockInfo of every block of a stack is the file, offset and
    size of its Kerchunk reference, with the sources deleted: it answers
    from the index, fetching nothing (a read then fails)."""
    table = write_stack(chunkref_bin, tmp_path / "stack")
    refs = kerchunk_refs(chunkref_bin, table, tmp_path / "refs.json")
    for cog in (tmp_path / "stack").glob("*.tif"):
        cog.unlink()
    data = open_md(table).GetRootGroup().OpenGroup("0").OpenMDArray("data")
    shape = [d.GetSize() for d in data.GetDimensions()]
    grid = [-(-s // b) for s, b in zip(shape, data.GetBlockSize())]
    assert grid == [STEPS, 1, 2, 3]
    for block in np.ndindex(*grid):
        info = data.GetRawBlockInfo(list(block))
        url, offset, size = refs["0/data/" + ".".join(map(str, block))]
        assert (info.GetFilename(), info.GetOffset(), info.GetSize()) == (url, offset, size)
        assert info.GetFilename().endswith(f"sst_202101{block[0] + 1:02d}.tif")
        assert info.GetInlineData() is None
        assert any(i.startswith("CODECS=") for i in info.GetInfo()), info.GetInfo()
    with pytest.raises(RuntimeError):
        data.ReadAsArray(array_start_idx=[0, 0, 0, 0], count=[1, 1, 1, 1])
    x = data.GetDimensions()[3].GetIndexingVariable()
    with pytest.raises(RuntimeError, match="no stored chunks"):
        x.GetRawBlockInfo([0])


@RAW_BLOCK_INFO
def test_raw_block_info_of_netcdf_chunks_and_inline_bytes(chunkref_bin, tmp_path):
    """Blocks of a NetCDF-4 variable: the HDF5 file's chunk ranges; a chunk
    the index holds inline (Kerchunk's "base64:"): its bytes, no file."""
    source = write_netcdf(tmp_path / "cube.nc", "NC4")
    ours = index(chunkref_bin, source, out=tmp_path / "cube.json")
    doc = json.loads(ours.read_text())
    refs = doc["refs"]
    sst = open_md(ours).GetRootGroup().OpenMDArray("sst")
    assert sst.GetBlockSize() == [1, 4, 5]
    for block in np.ndindex(4, 3, 3):
        info = sst.GetRawBlockInfo(list(block))
        url, offset, size = refs["sst/" + ".".join(map(str, block))]
        assert (info.GetFilename(), info.GetOffset(), info.GetSize()) == (url, offset, size)
    url, offset, size = refs["lat/0"]
    with open(url, "rb") as f:
        f.seek(offset)
        chunk = f.read(size)
    refs["lat/0"] = "base64:" + base64.b64encode(chunk).decode()
    ours.write_text(json.dumps(doc))
    lat = open_md(ours).GetRootGroup().OpenMDArray("lat")
    info = lat.GetRawBlockInfo([0])
    assert info.GetFilename() is None and info.GetSize() == size
    assert bytes(info.GetInlineData()) == chunk
    np.testing.assert_array_equal(lat.ReadAsArray(), np.linspace(-40, 40, 9))


STARS_SCRIPT = """
library(stars)
args <- commandArgs(trailingOnly = TRUE)
ours <- read_mdim(args[1], variable = "v")
theirs <- read_mdim(args[2], variable = "v")
stopifnot(identical(dim(ours), dim(theirs)), isTRUE(all.equal(ours[[1]], theirs[[1]])))
cat("stars ok", sum(ours[[1]]), "\\n")
"""


def require_r_package(name: str) -> None:
    """Skips unless R and Debian's r-cran-`name` are installed."""
    if shutil.which("Rscript") is None or subprocess.run(
            ["Rscript", "-e", f"library({name})"], capture_output=True).returncode != 0:
        pytest.skip(f"R {name} is not installed (Debian package r-cran-{name})")


def test_stars_read_mdim_reads_like_gdal_zarr(chunkref_bin, tmp_path):
    """R's stars::read_mdim (Debian's r-cran-stars) on an index of a Zarr
    store reads what it reads through GDAL's Zarr driver. (stars 0.6 reads
    arrays of the root group only, and on this Debian fails on GDAL's own
    netCDF files with CF units, so the store is a root array.)"""
    require_r_package("stars")
    source = tmp_path / "root.zarr"
    ds = gdal.GetDriverByName("Zarr").CreateMultiDimensional(str(source), [], ["FORMAT=ZARR_V2"])
    root = ds.GetRootGroup()
    dims = [root.CreateDimension(n, None, None, s) for n, s in [("t", 3), ("y", 4), ("x", 5)]]
    root.CreateMDArray("v", dims, F4).Write(np.arange(60, dtype="f4").reshape(3, 4, 5))
    del root, dims, ds  # written out when the last reference goes
    ours = index(chunkref_bin, source, out=tmp_path / "root.json")
    script = tmp_path / "stars.R"
    script.write_text(STARS_SCRIPT)
    done = subprocess.run(["Rscript", str(script), str(ours), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "stars ok 1770" in done.stdout, done.stderr + done.stdout


TERRA_SCRIPT = """
library(terra)
args <- commandArgs(trailingOnly = TRUE)
ours <- rast(args[1], md = TRUE, subds = "sst")
theirs <- rast(args[2], md = TRUE, subds = "sst")
stopifnot(identical(dim(ours), dim(theirs)), isTRUE(all.equal(values(ours), values(theirs))),
          identical(time(ours), time(theirs)), isTRUE(all.equal(ext(ours), ext(theirs))))
cat("sst", format(time(ours)), "\\n")
cube <- rast(args[3], md = TRUE)
bands <- rast(args[3])
stopifnot(isTRUE(all.equal(unname(values(cube)), unname(values(bands)))))
cat("stack", format(time(cube), "%Y-%m-%d"), "\\n")
"""


def test_terra_md_reads_like_gdal_netcdf(chunkref_bin, tmp_path):
    """R's terra::rast(md = TRUE) (Debian's r-cran-terra, where it has
    `md`): an index of a NetCDF-4 cube reads as the file does through GDAL's
    netCDF driver (values, extent, time); a stack's cube as its raster
    view's bands, with the steps' dates."""
    require_r_package("terra")
    source = write_netcdf(tmp_path / "cube.nc", "NC4")
    ours = index(chunkref_bin, source, out=tmp_path / "cube.json")
    stack = write_stack(chunkref_bin, tmp_path / "stack")
    script = tmp_path / "terra.R"
    script.write_text(TERRA_SCRIPT)
    done = subprocess.run(["Rscript", str(script), str(ours), str(source), str(stack)],
                          capture_output=True, text=True, timeout=300)
    if "unused argument (md = TRUE)" in done.stderr:
        pytest.skip("this terra has no rast(md = TRUE)")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "sst 2020-01-01 2020-01-02 2020-01-03 2020-01-06" in done.stdout, done.stdout
    dates = " ".join(f"2021-01-{s + 1:02d}" for s in range(STEPS))
    assert f"stack {dates}" in done.stdout, done.stdout
