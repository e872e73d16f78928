"""CF time coordinates: bands show their dimension values as GDAL's netCDF
driver does, and their datetimes as cftime decodes them.

In the kerchunk venv (netCDF4, cftime, kerchunk from PyPI), :data:`WRITER`
writes NetCDF4 files with a (time, y, x) variable whose time coordinate has
the units and calendar of each :data:`CASES` entry (plus a (time, level,
member, y, x) one: a ``level`` coordinate and a dimension without a
coordinate variable), references each with ``SingleHdf5ToZarr`` and
decodes each time value with ``cftime.num2date(...).isoformat()``.

ChunkRef on the references must show the ``NETCDF_DIM_*`` and
``NETCDF_VARNAME`` band items and the ``NETCDF_DIM_*`` and ``<dim>#<attr>``
dataset items GDAL's netCDF driver shows for the file, and ``DIM_time_ISO``
equal to cftime's datetime (absent where cftime cannot decode the units).
A user picking a band by its date gets the netCDF driver's band.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from raster_checks import open_chunkref
from test_tables import run_python
from venvs import kerchunk_python

#: Per file: time units, calendar attribute (None: none), time dtype, values.
CASES = {
    "days_standard": ("days since 2000-01-01", "standard", "f8", [0, 31, 59.5, 366.25, 1 / 3]),
    "hours_gregorian": ("hours since 1990-01-01 12:00:00", "gregorian", "i4", [0, 36, 8760]),
    "seconds_proleptic": ("seconds since 1970-01-01 00:00:00", "proleptic_gregorian", "f8",
                          [0, 86400.5, 1e9, -1.2e-6, 0.1 + 0.2]),
    "noleap": ("days since 2000-01-01", "noleap", "f8", [58, 59, 365]),
    "365_day": ("days since 1999-12-31 18:00", "365_day", "f4", [0.25, 1.5, 400]),
    "all_leap": ("days since 2001-01-01", "all_leap", "i8", [58, 59, 366]),
    "360_day": ("days since 2000-01-01", "360_day", "f8", [29, 30, 360, -1]),
    "julian": ("days since 1900-02-28", "julian", "f8", [1, 2]),
    "before_1582": ("days since 1582-10-01", "standard", "f8", [0, 3, 4, 10]),
    "no_calendar": ("days since 1970-1-1 6:30 +02:00", None, "f8", [0, 1.5]),
    "weeks": ("weeks since 2000-01-01", "standard", "f8", [0, 1]),
    "no_units": (None, None, "f8", [0, 1]),
}

#: The cases whose units cftime cannot decode (no datetime expected).
UNDECODABLE = {"weeks", "no_units"}

#: The (time, level, member, y, x) file.
FOUR_D = "levels"

WRITER = r'''
import json, sys
from pathlib import Path

import cftime
import netCDF4
import numpy as np
from kerchunk.hdf import SingleHdf5ToZarr

out = Path(sys.argv[1])
cases = json.loads(sys.argv[2])
manifest = {}


def write(name, units, calendar, dtype, times, levels=False):
    path = out / f"{name}.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc.title = f"CF time case {name}"
        nc.Conventions = "CF-1.8"
        nc.createDimension("time", len(times))
        dims = ["time"]
        if levels:
            nc.createDimension("level", 2)
            nc.createDimension("member", 3)
            level = nc.createVariable("level", "f4", ("level",))
            level.units = "hPa"
            level[:] = [850, 500.5]
            dims += ["level", "member"]
        nc.createDimension("y", 5)
        nc.createDimension("x", 7)
        time = nc.createVariable("time", dtype, ("time",))
        if units is not None:
            time.units = units
        if calendar is not None:
            time.calendar = calendar
        time[:] = np.array(times, dtype=dtype)
        for axis, size, start, step, axis_units in [("y", 5, 45, -10.0, "degrees_north"),
                                               ("x", 7, 5, 10.0, "degrees_east")]:
            coord = nc.createVariable(axis, "f8", (axis,))
            coord.standard_name = "latitude" if axis == "y" else "longitude"
            coord.units = axis_units
            coord[:] = start + step * np.arange(size)
        v = nc.createVariable("v", "f4", dims + ["y", "x"], chunksizes=[1] * len(dims) + [5, 4],
                              fill_value=-999.0)
        v.units = "K"
        v.long_name = "a variable"
        v.scale_factor = 0.01
        v.actual_range = np.array([0, 4000], "f4")
        v[:] = np.arange(np.prod(v.shape), dtype="f4").reshape(v.shape)
    with open(path, "rb") as f:
        refs = SingleHdf5ToZarr(f, str(path), inline_threshold=0).translate()
    (out / f"{name}.json").write_text(json.dumps(refs))
    with netCDF4.Dataset(path) as nc:
        nc.set_auto_maskandscale(False)
        raw = nc["time"][:]
    try:
        iso = [d.isoformat() for d in cftime.num2date(raw, units, calendar or "standard")]
    except (ValueError, TypeError, AttributeError):
        iso = None  # cftime cannot decode these units: no datetime expected
    manifest[name] = {"nc": str(path), "index": str(out / f"{name}.json"), "iso": iso}


for name, (units, calendar, dtype, times) in cases.items():
    write(name, units, calendar, dtype, times)
write("levels", "days since 2000-01-01", None, "f8", [0, 1.25], levels=True)
(out / "manifest.json").write_text(json.dumps(manifest))
'''


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict:
    """Per file: its NetCDF4 path, kerchunk index and cftime's datetimes."""
    out = tmp_path_factory.mktemp("cf-time")
    run_python(kerchunk_python(), WRITER, out, json.dumps(CASES))
    return json.loads((out / "manifest.json").read_text())


def chunkref(entry: dict) -> gdal.Dataset:
    return open_chunkref(f'CHUNKREF:"{entry["index"]}":v')


def netcdf(entry: dict) -> gdal.Dataset:
    ds = gdal.OpenEx(f'NETCDF:"{entry["nc"]}":v', gdal.OF_RASTER, allowed_drivers=["netCDF"])
    assert ds is not None
    return ds


def netcdf_items(metadata: dict, dims: list[str]) -> dict[str, str]:
    """The ``NETCDF_*`` items and the ``<dim>#<attr>`` items of ``dims``."""
    return {k: v for k, v in metadata.items()
            if k.startswith("NETCDF_") or k.split("#")[0] in dims and "#" in k}


def extra_dims(ds: gdal.Dataset) -> list[str]:
    return ds.GetMetadataItem("NETCDF_DIM_EXTRA").strip("{}").split(",")


@pytest.mark.parametrize("name", [*CASES, FOUR_D])
def test_dimension_metadata_equals_gdal_netcdf(written, name):
    """Dataset and band ``NETCDF_*`` items (and the dimensions' coordinate
    attributes) are the netCDF driver's, value formatting included."""
    entry = written[name]
    ours, native = chunkref(entry), netcdf(entry)
    dims = extra_dims(native)
    want = netcdf_items(native.GetMetadata(), dims)
    assert want and netcdf_items(ours.GetMetadata(), dims) == want
    # Every variable's attributes and the globals, as <variable>#<attribute>
    # and NC_GLOBAL#<attribute>.
    hashed = lambda items: {k: v for k, v in items.items() if "#" in k}  # noqa: E731
    assert hashed(ours.GetMetadata()) == hashed(native.GetMetadata())
    assert ours.RasterCount == native.RasterCount
    for b in range(1, ours.RasterCount + 1):
        want = netcdf_items(native.GetRasterBand(b).GetMetadata(), dims)
        got = netcdf_items(ours.GetRasterBand(b).GetMetadata(), dims)
        assert want and got == want, f"{name} band {b}"
        assert native.GetRasterBand(b).GetDescription() == "", "GDAL 3.6 sets no description"


@pytest.mark.parametrize("name", [*CASES, FOUR_D])
def test_iso_times_equal_cftime(written, name):
    """``DIM_time_ISO`` of each band is cftime's datetime of its time value;
    units cftime cannot decode give no such item, and other dimensions
    (``level``: hPa, ``member``: no coordinate) never have one."""
    entry = written[name]
    assert (entry["iso"] is None) == (name in UNDECODABLE), entry
    ds = chunkref(entry)
    for b in range(1, ds.RasterCount + 1):
        md = ds.GetRasterBand(b).GetMetadata()
        t = int(md["DIM_time_INDEX"])
        want = entry["iso"][t] if entry["iso"] else None
        assert md.get("DIM_time_ISO") == want, f"{name} band {b}"
        assert not any(k.endswith("_ISO") and k != "DIM_time_ISO" for k in md), md


def test_band_picked_by_date_is_the_netcdf_drivers_band(written):
    """A user's way to a date: the band whose ``DIM_time_ISO`` is that
    datetime (or starts with that day), then gdal.Translate of that band;
    its pixels are the netCDF driver's same band."""
    entry = written["days_standard"]
    ds = chunkref(entry)
    wanted = "2000-02-29T12:00:00"
    band = next(b for b in range(1, ds.RasterCount + 1)
                if ds.GetRasterBand(b).GetMetadataItem("DIM_time_ISO") == wanted)
    assert band == 3
    by_day = [b for b in range(1, ds.RasterCount + 1)
              if ds.GetRasterBand(b).GetMetadataItem("DIM_time_ISO").startswith("2001-01-01")]
    assert by_day == [4]
    picked = gdal.Translate("", ds, format="MEM", bandList=[band])
    assert picked.GetRasterBand(1).GetMetadataItem("DIM_time_ISO") == wanted
    native_ds = netcdf(entry)  # kept open while its band is read
    native = native_ds.GetRasterBand(band).ReadAsArray()
    np.testing.assert_array_equal(picked.ReadAsArray(), native)
    np.testing.assert_array_equal(ds.GetRasterBand(band).ReadAsArray(), native)


def test_four_d_band_picked_by_date_and_level(written):
    """In (time, level, member), the band of a date, a level and a member
    is found through DIM_time_ISO, NETCDF_DIM_level and NETCDF_DIM_member,
    and reads as the netCDF driver's band with the same items."""
    entry = written[FOUR_D]
    ds, native = chunkref(entry), netcdf(entry)
    want = {"DIM_time_ISO": "2000-01-02T06:00:00", "NETCDF_DIM_level": "500.5",
            "NETCDF_DIM_member": "2"}

    def find(d: gdal.Dataset, items: dict) -> int:
        (band,) = [b for b in range(1, d.RasterCount + 1)
                   if items.items() <= d.GetRasterBand(b).GetMetadata().items()]
        return band

    band = find(ds, want)
    native_band = find(native, {"NETCDF_DIM_time": "1.25", "NETCDF_DIM_level": "500.5",
                                "NETCDF_DIM_member": "2"})
    assert band == native_band
    np.testing.assert_array_equal(ds.GetRasterBand(band).ReadAsArray(),
                                  native.GetRasterBand(native_band).ReadAsArray())
