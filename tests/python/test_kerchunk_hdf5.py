"""Kerchunk's HDF5 writers over NetCDF4 files, as the world runs them.

In a venv with kerchunk, h5py, netCDF4, xarray and zarr from PyPI,
tests/python/kerchunk_hdf5_writer.py writes NetCDF4 files with the netCDF4
package (CF attributes, packed scale/offset, ``_FillValue``, NaN fills,
grid mappings with ``crs_wkt`` / ``spatial_ref`` over lat/lon and x/y,
char, vlen-string and compound variables, fletcher32, big-endian,
contiguous, compact and zlib + shuffle chunked layouts), references them
with ``SingleHdf5ToZarr`` (inline thresholds 0 and 300),
``MultiZarrToZarr`` (three daily files along ``time``) and
``kerchunk.df.refs_to_dataframe`` (Kerchunk Parquet, record sizes 10 and
100000), and reads every array back through fsspec's reference file system
and zarr: those arrays are what ChunkRef must read, pixel for pixel.
Georeferencing, nodata, scale, offset, units and ``NETCDF_DIM_time`` must
equal GDAL's netCDF driver on the source files.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from raster_checks import assert_band_matches, captured_errors, open_chunkref
from test_tables import run_python
from venvs import KERCHUNK_REQUIREMENTS, kerchunk_python

WRITER = Path(__file__).with_name("kerchunk_hdf5_writer.py")

#: Every store the writer makes (the JSON ones, then their Parquet forms).
STORES = [
    "cf-inline0",
    "cf-inline300",
    "utm",
    "southup",
    "polar",
    "days",
    "cf-inline300-rec10",
    "cf-inline300-rec100000",
    "days-rec10",
]

#: Per store, the rasters (arrays of two or more dimensions) it must list
#: and the arrays it must leave out, each named in one warning.
CF_RASTERS = ["bigend", "compact", "contig", "forecast/gust", "precip", "sparse", "temp", "wind"]
EXPECTED = {
    # kerchunk drops the fletcher32 variable `checked` (a filter it does
    # not support) unless it is below unsupported_inline_threshold.
    "cf-inline0": (CF_RASTERS, ["label", "station_name"]),
    "cf-inline300": (sorted(CF_RASTERS + ["checked"]), ["label", "station_name"]),
    "utm": (["elevation"], ["obs"]),
    "southup": (["tas"], []),
    "polar": (["ice"], []),
    "days": (["temp"], []),
}
EXPECTED |= {
    "cf-inline300-rec10": EXPECTED["cf-inline300"],
    "cf-inline300-rec100000": EXPECTED["cf-inline300"],
    "days-rec10": EXPECTED["days"],
}

#: Character arrays (``|S1``) the writer's stack cannot read as numbers:
#: ChunkRef lists them (as GDAL's netCDF driver lists the source's) and
#: serves their bytes, without a warning.
CHARACTERS = {"station_name"}

#: Arrays where kerchunk's references lose the source's values, so the
#: writer's own stack reads something else than netCDF4 (ChunkRef must
#: still read what the writer's stack reads): with inline_threshold 0 a
#: compact dataset gets no chunk reference at all and reads as fill.
LOST_BY_KERCHUNK = {("cf-inline0", "compact")}

#: Variables written with an explicit ``_FillValue`` that kerchunk keeps
#: (as the Zarr fill_value): their nodata must be the netCDF driver's.
WITH_FILL_VALUE = {"temp", "precip", "bigend", "elevation", "sparse", "wind", "forecast/gust",
                   "ice"}

#: GDAL 3.6's netCDF driver does not georeference a variable of a sub-group
#: by its parent's coordinates; such a variable is compared with the root
#: variable of the same grid.
GEOREF_FROM = {"forecast/gust": "precip"}

#: Geotransform tolerance against GDAL's netCDF driver, in pixels.
GT_TOLERANCE_PIXELS = 1e-9


@pytest.fixture(scope="module")
def hdf5_python() -> Path:
    return kerchunk_python()


@pytest.fixture(scope="module")
def written(hdf5_python, tmp_path_factory) -> tuple[Path, dict]:
    """The sources, stores and expected arrays, and the writer's manifest."""
    out = tmp_path_factory.mktemp("kerchunk-hdf5")
    run_python(hdf5_python, WRITER.read_text(), out)
    return out, json.loads((out / "manifest.json").read_text())


def rasters(entry: dict) -> dict[str, dict]:
    """The manifest's arrays of two or more dimensions."""
    return {name: a for name, a in entry["arrays"].items() if len(a["shape"]) >= 2}


def subdataset(out: Path, store: str, name: str, stored_rows: bool = False) -> gdal.Dataset:
    """ChunkRef on array ``name`` of the store; ``stored_rows``: rows in
    stored order (``Y_ORDER=STORED``), as the writer's stack and xarray
    hold them, not north-up as GDAL's netCDF driver shows them."""
    options = ["Y_ORDER=STORED"] if stored_rows else []
    return open_chunkref(f'CHUNKREF:"{out / store}":{name}', options)


def netcdf(out: Path, entry: dict, name: str, index: int = 0) -> gdal.Dataset:
    """GDAL's netCDF driver on variable ``name`` of the store's source
    ``index``."""
    variable = f"/{name}" if "/" in name else name
    ds = gdal.OpenEx(f'NETCDF:"{out / entry["sources"][index]}":{variable}', gdal.OF_RASTER,
                     allowed_drivers=["netCDF"])
    assert ds is not None
    return ds


def test_writer_stack_reads_what_netcdf4_wrote(written):
    """The expectations are sound: fsspec + zarr over kerchunk's references
    read what netCDF4 reads from the sources, except where kerchunk is
    known to lose data."""
    _, manifest = written
    for store in STORES:
        for name, array in manifest[store]["arrays"].items():
            lost = (store, name) in LOST_BY_KERCHUNK
            assert array["same_as_netcdf4"] != lost, (store, name, array)


@pytest.mark.parametrize("store", STORES)
def test_store_lists_rasters_and_warns_once_per_left_out_array(written, store):
    out, manifest = written
    entry = manifest[store]
    want_rasters, want_left_out = EXPECTED[store]
    assert sorted(rasters(entry)) == want_rasters, "the writer's stack disagrees with EXPECTED"
    assert sorted(entry["unreadable"]) == want_left_out
    with captured_errors() as messages:
        ds = open_chunkref(out / entry["path"])
    for name in sorted(set(want_left_out) - CHARACTERS):
        naming = [m for m in messages if f"'{name}'" in m]
        assert len(naming) == 1 and "left out" in naming[0], (name, messages)
    listed_rasters = sorted(want_rasters + [n for n in want_left_out if n in CHARACTERS])
    for name in listed_rasters:
        assert not any(f"'{name}'" in m for m in messages), (name, messages)
    if len(listed_rasters) == 1:
        assert ds.RasterCount >= 1, "a store of one raster opens it directly"
    else:
        listed = sorted(v.rsplit(":", 1)[1] for k, v in ds.GetMetadata("SUBDATASETS").items()
                        if k.endswith("_NAME"))
        assert listed == listed_rasters


@pytest.mark.parametrize("store", STORES)
def test_pixels_equal_the_writer_stack(written, store):
    out, manifest = written
    entry = manifest[store]
    for name, array in rasters(entry).items():
        expected = np.load(out / "expected" / store / f"{name.replace('/', '.')}.npy")
        ds = subdataset(out, entry["path"], name, stored_rows=True)
        planes = expected.reshape((-1, *expected.shape[-2:]))
        assert ds.RasterCount == planes.shape[0], name
        for index, plane in enumerate(planes):
            band = ds.GetRasterBand(index + 1)
            assert_band_matches(band, plane, f"{store}:{name} band {index + 1}")


def same_number(got, want) -> bool:
    if want is None or got is None:
        return got == want
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    return got == want


def fill_value(array: dict):
    """The Zarr fill_value the writer's stack reports, as a number."""
    text = array["fill_value"]
    return None if text is None else float(text)


@pytest.mark.parametrize("store", STORES)
def test_band_metadata_equals_the_attributes_and_netcdf(written, store):
    """Nodata is the Zarr fill_value (kerchunk moves _FillValue there);
    scale, offset and units are the CF attributes, and agree with GDAL's
    netCDF driver on the source."""
    out, manifest = written
    entry = manifest[store]
    for name, array in rasters(entry).items():
        attrs = array["attrs"]
        ds = subdataset(out, entry["path"], name)
        source = netcdf(out, entry, name)
        for index in range(ds.RasterCount):
            band, native = ds.GetRasterBand(index + 1), source.GetRasterBand(1)
            what = f"{store}:{name} band {index + 1}"
            assert same_number(band.GetNoDataValue(), fill_value(array)), what
            assert (band.GetScale() or 1.0) == attrs.get("scale_factor", 1.0), what
            assert (band.GetOffset() or 0.0) == attrs.get("add_offset", 0.0), what
            assert band.GetUnitType() == attrs.get("units", ""), what
            assert (band.GetScale() or 1.0) == (native.GetScale() or 1.0), what
            assert (band.GetOffset() or 0.0) == (native.GetOffset() or 0.0), what
            assert band.GetUnitType() == native.GetUnitType(), what
            if name in WITH_FILL_VALUE:
                assert same_number(band.GetNoDataValue(), native.GetNoDataValue()), what


def cf_decoded(band: gdal.Band) -> np.ndarray:
    """The band as a CF reader decodes it from what GDAL reports: nodata
    masked to NaN, then ``value * scale + offset``, in float64."""
    raw = band.ReadAsArray().astype(np.float64)
    nodata = band.GetNoDataValue()
    if nodata is not None:
        raw[(raw == nodata) | (np.isnan(raw) & math.isnan(nodata))] = np.nan
    return raw * (band.GetScale() or 1.0) + (band.GetOffset() or 0.0)


@pytest.mark.parametrize("store", STORES)
def test_cf_decoding_from_gdal_metadata_equals_xarray(written, store):
    """Applying the band's nodata, scale and offset to its pixels gives
    what xarray (kerchunk's backend, mask_and_scale) decodes: the metadata
    GDAL reports carries the CF encoding faithfully."""
    out, manifest = written
    entry = manifest[store]
    for name in rasters(entry):
        if "/" in name:
            continue  # xarray opens the root group only
        decoded = np.load(out / "decoded" / store / f"{name}.npy").astype(np.float64)
        ds = subdataset(out, entry["path"], name, stored_rows=True)
        planes = decoded.reshape((-1, *decoded.shape[-2:]))
        for index, want in enumerate(planes):
            got = cf_decoded(ds.GetRasterBand(index + 1))
            what = f"{store}:{name} band {index + 1}"
            assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: masks differ"
            np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True, err_msg=what)


def pixel_centres(gt: tuple, ny: int, nx: int, rows_reversed: bool) -> np.ndarray:
    """(x, y) of the centre of every stored value, row by stored row, under
    geotransform ``gt`` of a raster whose rows run in stored order or
    reversed."""
    col, row = np.meshgrid(np.arange(nx) + 0.5, np.arange(ny) + 0.5)
    if rows_reversed:
        row = ny - row
    return np.stack([gt[0] + col * gt[1] + row * gt[2], gt[3] + col * gt[4] + row * gt[5]])


def rows_reversed_by_netcdf(native: gdal.Dataset, expected: np.ndarray) -> bool:
    """Whether GDAL's netCDF driver shows the stored rows bottom-up (it
    does for latitudes that increase, to present the image north-up)."""
    first = native.GetRasterBand(1).ReadAsArray()
    plane = expected.reshape((-1, *expected.shape[-2:]))[0]
    for reversed_, candidate in [(False, plane), (True, plane[::-1])]:
        if np.array_equal(first, candidate, equal_nan=plane.dtype.kind == "f"):
            return reversed_
    raise AssertionError("the netCDF driver reads neither the stored rows nor them reversed")


@pytest.mark.parametrize("store", STORES)
def test_georeferencing_equals_gdal_netcdf_driver(written, store):
    """Every stored value sits at the same place as GDAL's netCDF driver
    puts it (to GT_TOLERANCE_PIXELS), and the CRS is the same.  Where the
    netCDF driver presents rows bottom-up (latitudes increasing), ChunkRef
    does too, with the same north-up geotransform."""
    out, manifest = written
    entry = manifest[store]
    for name, array in rasters(entry).items():
        if "grid_mapping" not in array["attrs"]:
            continue
        ds = subdataset(out, entry["path"], name)
        reference = GEOREF_FROM.get(name, name)
        native = netcdf(out, entry, reference)
        expected = np.load(out / "expected" / store / f"{reference}.npy")
        ny, nx = expected.shape[-2:]
        got, want = ds.GetGeoTransform(), native.GetGeoTransform()
        reversed_ = rows_reversed_by_netcdf(native, expected)
        own = np.load(out / "expected" / store / f"{name.replace('/', '.')}.npy")
        assert rows_reversed_by_netcdf(ds, own) == reversed_, f"{store}:{name} row order"
        assert got[5] < 0 and want[5] < 0, f"{store}:{name}: north-up either way"
        ours = pixel_centres(got, ny, nx, reversed_)
        theirs = pixel_centres(want, ny, nx, reversed_)
        pixel = max(abs(want[1]), abs(want[5]))
        worst = float(np.abs(ours - theirs).max()) / pixel
        assert worst <= GT_TOLERANCE_PIXELS, (
            f"{store}:{name} geotransform {got} places values {worst} pixels away from the "
            f"netCDF driver's {want} (rows reversed there: {reversed_})"
        )
        assert_same_crs(ds.GetSpatialRef(), native.GetSpatialRef(), f"{store}:{name}")


def assert_same_crs(ours, theirs, what: str) -> None:
    """The same CRS; for a polar stereographic grid the PROJ definitions
    must match (PROJ annotates the polar axes of ``+proj=stere`` with their
    meridians, GDAL 3.6's netCDF driver does not, which IsSame counts)."""
    assert ours is not None and theirs is not None, f"{what} has no CRS"
    same = ours.IsSame(theirs) or (
        ours.GetAttrValue("PROJECTION") == "Polar_Stereographic"
        and ours.ExportToProj4() == theirs.ExportToProj4()
    )
    assert same, f"{what} CRS\n{ours.ExportToWkt()}\n!= netCDF driver's\n{theirs.ExportToWkt()}"
    assert ours.GetAuthorityCode(None) == theirs.GetAuthorityCode(None), what


def netcdf_dims(band: gdal.Band) -> dict[str, str]:
    """The band's ``NETCDF_DIM_<name>`` metadata."""
    return {k: v for k, v in (band.GetMetadata() or {}).items() if k.startswith("NETCDF_DIM_")}


@pytest.mark.parametrize("store", STORES)
def test_bands_carry_netcdf_dim_values_as_gdal_netcdf_does(written, store):
    """Each band of a 3-D or 4-D variable is one (time[, level]) step, with
    the ``NETCDF_DIM_time`` / ``NETCDF_DIM_level`` values GDAL's netCDF
    driver gives that band of the source (for the MultiZarrToZarr stores,
    band i is day i's file)."""
    out, manifest = written
    entry = manifest[store]
    several = len(entry["sources"]) > 1
    for name, array in rasters(entry).items():
        if len(array["shape"]) < 3:
            continue
        ds = subdataset(out, entry["path"], name)
        for index in range(ds.RasterCount):
            native = netcdf(out, entry, name, index if several else 0)
            want = netcdf_dims(native.GetRasterBand(1 if several else index + 1))
            got = netcdf_dims(ds.GetRasterBand(index + 1))
            assert want and got == want, f"{store}:{name} band {index + 1}: {got} != {want}"


def test_versions_are_the_pinned_ones(written):
    _, manifest = written
    versions = manifest["versions"]
    pinned = dict(r.split("==") for r in KERCHUNK_REQUIREMENTS)
    for module in ["kerchunk", "h5py", "netCDF4", "zarr", "xarray", "fsspec"]:
        assert versions[module] == pinned[module], (module, versions[module])
