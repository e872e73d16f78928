"""NetCDF files as real producers write them (issue 41, second round), read
as GDAL 3.6's netCDF driver reads them.

netcdf4_cases_writer.py (netCDF4 from the kerchunk venv) writes each file;
``chunkref index`` indexes it; ChunkRef on the index must show what GDAL's
netCDF driver shows for the file (size, geotransform, CRS, data types,
nodata, scale / offset, units, ``NETCDF_DIM_*`` items, pixels in odd
windows), through ``test_netcdf3.assert_reads_as_gdal``. One test per
root cause:

- axes that are not a (y, x) pair GDAL recognises (``(time, station)``,
  ``y``/``x`` coordinates without CF attributes, ``(lon, lat)`` order) are
  placed only as GDAL places them: not at all, or swapped (a CF file whose
  dimensions come as (lon, lat));
- projected x/y in kilometres (or US survey feet) under a CF grid mapping
  make a CRS in that unit, the geotransform staying in it;
- netCDF-4 variables without ``_FillValue`` read netCDF's default fill
  where no chunk was written (GDAL reads it), and show it as nodata but
  for 1-byte types, in NetCDF-4, NetCDF-4 classic and NetCDF-3 files;
  HDF5 datasets of a ``.nc`` file that netCDF did not write (h5py) show
  their HDF5 fill value as nodata only when it was set (not for 1-byte
  types), as netCDF reports it;
- longitudes that wrap 360 -> 0 inside the grid are placed from -180
  degrees (pixels as stored), south-up rows served north-up;
- a CRS given as text in the variable's own ``crs`` attribute (a PROJ
  string, WKT or ``EPSG:`` code, no ``grid_mapping``) or in a grid
  mapping's ``srid``; ``proj4`` / ``proj4text`` / ``proj4_params``
  attributes of a grid-mapping variable, which GDAL 3.6 does not read,
  give none;
- a ``spatial_ref`` variable that the variable names in ``coordinates``
  (or not at all) instead of ``grid_mapping`` gives no CRS nor
  geotransform (GDAL 3.6, 3.10 and 3.13 find none there);
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from osgeo import gdal, osr

from raster_checks import open_chunkref
from test_netcdf3 import assert_reads_as_gdal, assert_same_dataset, index
from test_tables import run_python
from venvs import kerchunk_python

gdal.UseExceptions()

WRITER = Path(__file__).with_name("netcdf4_cases_writer.py")


def coordinate(name: str, values: list[float], **attrs) -> dict:
    """A 1-D float64 coordinate variable ``name(name)``."""
    return {"name": name, "dtype": "f8", "dims": [name], "attrs": attrs, "values": values}


def grid(dims: list[str], sizes: list[int], coords: list[dict], *, globals_: dict | None = None,
         fmt: str = "NETCDF4", **var) -> dict:
    """A file holding ``v(dims)`` (a float32 ramp unless ``var`` says
    otherwise) and the coordinate variables ``coords``."""
    v = {"name": "v", "dtype": "f4", "dims": dims, "attrs": {}, "values": None, **var}
    return {"format": fmt, "globals": globals_ or {}, "dims": dict(zip(dims, sizes)),
            "vars": [*coords, v]}


def write(tmp_path: Path, cases: dict) -> Path:
    """Every case written as ``<tmp_path>/<name>.nc``."""
    run_python(kerchunk_python(), WRITER.read_text(), tmp_path, json.dumps(cases))
    return tmp_path


def native(source: Path) -> gdal.Dataset:
    return gdal.OpenEx(str(source), gdal.OF_RASTER, allowed_drivers=["netCDF"])


LON = dict(units="degrees_east", standard_name="longitude")
LAT = dict(units="degrees_north", standard_name="latitude")

#: Variables whose last two axes GDAL does not place, and one it places
#: swapped: (dims, sizes, coordinate variables, global attributes,
#: whether GDAL 3.6 gives a geotransform).
AXES = {
    "time_station": (["time", "station"], [5, 3],
                     [coordinate("time", [0, 1, 2, 3, 4], units="days since 2000-01-01",
                                 standard_name="time"),
                      coordinate("station", [3, 5, 7])], {}, False),
    "time_lon": (["time", "lon"], [5, 3],
                 [coordinate("time", [0, 1, 2, 3, 4], units="days since 2000-01-01"),
                  coordinate("lon", [10, 11, 12], **LON)], {}, False),
    "bare_yx": (["y", "x"], [5, 3],
                [coordinate("y", [0, 1, 2, 3, 4], units="m"), coordinate("x", [3, 5, 7], units="m")],
                {}, False),
    "level_x": (["level", "x"], [5, 3],
                [coordinate("level", [1000, 850, 700, 500, 300], units="hPa", positive="down"),
                 coordinate("x", [3, 5, 7], standard_name="projection_x_coordinate", units="m")],
                {}, False),
    "lon_lat": (["lon", "lat"], [6, 4],
                [coordinate("lon", [10, 11, 12, 13, 14, 15], **LON),
                 coordinate("lat", [40, 40.5, 41, 41.5], **LAT)], {}, True),
    "lon_lat_cf": (["lon", "lat"], [6, 4],
                   [coordinate("lon", [10, 11, 12, 13, 14, 15], **LON),
                    coordinate("lat", [40, 40.5, 41, 41.5], **LAT)], {"Conventions": "CF-1.8"},
                   True),
    "axis_attributes": (["b", "a"], [5, 3],
                        [coordinate("b", [0, 1, 2, 3, 4], axis="Y"),
                         coordinate("a", [3, 5, 7], axis="X")], {}, True),
}


def test_axes_gdal_does_not_recognise_place_nothing(tmp_path, chunkref_bin):
    """Root cause: chunkref placed any grid whose last two dimensions had
    1-D coordinate variables (a time axis as y, a station number as x);
    GDAL 3.6 takes them only when they are longitude / latitude /
    projection coordinates by their attributes (or named lon / lat), and
    swaps them in a CF file whose dimensions come as (lon, lat)."""
    cases = {name: grid(dims, sizes, coords, globals_=globals_)
             for name, (dims, sizes, coords, globals_, _) in AXES.items()}
    root = write(tmp_path, cases)
    for name, (*_, placed) in AXES.items():
        source = root / f"{name}.nc"
        assert (native(source).GetGeoTransform(can_return_null=True) is not None) == placed, name
        assert_reads_as_gdal(chunkref_bin, source, tmp_path)


def lambert(units: str) -> dict:
    """A Lambert conformal grid (CF parameters) over x/y in ``units``."""
    coords = [
        coordinate("y", [300, 288, 276, 264], units=units, standard_name="projection_y_coordinate"),
        coordinate("x", [-100, -88, -76, -64, -52], units=units,
                   standard_name="projection_x_coordinate"),
        {"name": "lambert", "dtype": "i4", "dims": [], "values": [0],
         "attrs": {"grid_mapping_name": "lambert_conformal_conic", "standard_parallel": [33.0, 45.0],
                   "longitude_of_central_meridian": -96.0, "latitude_of_projection_origin": 23.0}},
    ]
    return grid(["y", "x"], [4, 5], coords, attrs={"grid_mapping": "lambert"})


@pytest.mark.parametrize("units, metres", [("km", 1000.0), ("KM", 1000.0), ("m", 1.0),
                                           ("US_survey_foot", 1200 / 3937)])
def test_projected_coordinates_in_kilometres_make_a_crs_in_kilometres(tmp_path, chunkref_bin,
                                                                     units, metres):
    """Root cause: the PROJ string made of CF grid-mapping parameters was
    always in metres; GDAL takes the unit the x and y coordinates share."""
    source = write(tmp_path, {"lcc": lambert(units)}) / "lcc.nc"
    assert native(source).GetSpatialRef().GetLinearUnits() == pytest.approx(metres)
    assert_reads_as_gdal(chunkref_bin, source, tmp_path)


#: netCDF types (numpy) of the fill cases; 64-bit integers are left out:
#: GDAL shows their nodata through GetNoDataValueAsInt64, which ChunkRef
#: does not serve (docs/real-files.md).
FILL_TYPES = {"NETCDF4": ["i1", "u1", "i2", "u2", "i4", "u4", "f4", "f8"],
              "NETCDF4_CLASSIC": ["i1", "i2", "i4", "f4", "f8"],
              "NETCDF3_CLASSIC": ["i1", "i2", "i4", "f4", "f8"]}


@pytest.mark.parametrize("fmt", sorted(FILL_TYPES))
def test_unwritten_chunks_read_the_netcdf_default_fill(tmp_path, chunkref_bin, fmt):
    """Root cause: the index of a netCDF-4 variable without ``_FillValue``
    had no Zarr fill value (kerchunk's choice), so chunks never written
    read 0; netCDF (and GDAL) read the HDF5 fill value, the type's default
    fill. Each type: a variable never written, one written in its first
    chunk only, one with a ``_FillValue`` written in its first chunk."""
    chunked = fmt.startswith("NETCDF4")
    variables = []
    for dtype in FILL_TYPES[fmt]:
        for how, values, fill in [("unwritten", "unwritten", None), ("part", "first", None),
                                  ("declared", "first", 7)]:
            variables.append({"name": f"{how}_{dtype}", "dtype": dtype, "dims": ["y", "x"],
                              "values": values, "fill_value": fill,
                              "chunks": [2, 3] if chunked else None})
    source = write(tmp_path, {"fill": {"format": fmt, "dims": {"y": 4, "x": 6},
                                       "vars": variables}}) / "fill.nc"
    assert_reads_as_gdal(chunkref_bin, source, tmp_path)


H5PY_WRITER = r"""
import sys
import h5py
with h5py.File(sys.argv[1], "w") as f:
    for t in ["i1", "u1", "i2", "f4", "f8"]:
        f.create_dataset("plain_" + t, shape=(4, 6), dtype=t, chunks=(2, 3))[0:2, 0:3] = 1
        f.create_dataset("set_" + t, shape=(4, 6), dtype=t, chunks=(2, 3),
                         fillvalue=5)[0:2, 0:3] = 1
"""


def test_hdf5_fill_values_of_a_netcdf_named_file(tmp_path, chunkref_bin):
    """Root cause: for an HDF5 dataset without netCDF attributes in a file
    GDAL's netCDF driver opens, nodata was the Zarr fill value (the HDF5
    fill, 0 when never set, and for 1-byte types too); netCDF reports the
    HDF5 fill value only when it was set, and GDAL takes none for bytes."""
    source = tmp_path / "h5py.nc"
    run_python(kerchunk_python(), H5PY_WRITER, source)
    assert_reads_as_gdal(chunkref_bin, source, tmp_path)


@pytest.mark.parametrize("lat_step", [-30.0, 30.0], ids=["north-up", "south-up"])
def test_longitudes_wrapping_inside_the_grid_are_placed(tmp_path, chunkref_bin, lat_step):
    """Root cause: longitudes 195 .. 345, 15 .. 165 are not monotonic, so
    chunkref gave no transform (and served the rows bottom-up); GDAL moves
    those east of the last by -360 degrees and places the grid."""
    lon = [195.0, 225.0, 255.0, 285.0, 315.0, 345.0, 15.0, 45.0, 75.0, 105.0, 135.0, 165.0]
    lat = [45.0 - lat_step * 3 / 2 + lat_step * i for i in range(4)]
    source = write(tmp_path, {"wrap": grid(["lat", "lon"], [4, 12], [
        coordinate("lat", lat, units="degrees_north"),
        coordinate("lon", lon, units="degrees_east")])}) / "wrap.nc"
    assert native(source).GetGeoTransform()[0] == -180.0
    assert_reads_as_gdal(chunkref_bin, source, tmp_path)


UTM = "+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs"

#: (attributes of ``v``, attributes of a ``crs`` variable or None,
#: whether GDAL 3.6 finds a CRS).
TEXT_CRS = {
    "proj_string": ({"crs": UTM}, None, True),
    "epsg_code": ({"crs": "EPSG:32633"}, None, True),
    "srid": ({"grid_mapping": "crs"}, {"srid": "urn:ogc:def:crs:EPSG::32633"}, True),
    "proj4": ({"grid_mapping": "crs"}, {"proj4": UTM}, False),
    "proj4text": ({"grid_mapping": "crs"}, {"proj4text": UTM}, False),
    "proj4_params": ({"grid_mapping": "crs"}, {"proj4_params": UTM}, False),
    "crs_beside_grid_mapping": ({"crs": UTM, "grid_mapping": "crs"}, {"proj4": UTM}, False),
}


def test_crs_as_text_in_crs_attributes(tmp_path, chunkref_bin):
    """Root cause: chunkref read a CRS from grid-mapping variables only
    (``crs_wkt``, ``spatial_ref``, CF parameters); GDAL 3.6 also reads a
    variable's own ``crs`` attribute and a grid mapping's ``srid``."""
    cases = {}
    for name, (attrs, crs, _) in TEXT_CRS.items():
        coords = [coordinate("y", [5000000, 4999900, 4999800, 4999700], units="m",
                             standard_name="projection_y_coordinate"),
                  coordinate("x", [500000, 500100, 500200, 500300, 500400], units="m",
                             standard_name="projection_x_coordinate")]
        if crs is not None:
            coords.append({"name": "crs", "dtype": "i4", "dims": [], "values": [0], "attrs": crs})
        cases[name] = grid(["y", "x"], [4, 5], coords, attrs=attrs)
    root = write(tmp_path, cases)
    for name, (*_, found) in TEXT_CRS.items():
        source = root / f"{name}.nc"
        assert (native(source).GetSpatialRef() is not None) == found, name
        assert_reads_as_gdal(chunkref_bin, source, tmp_path)


@pytest.mark.parametrize("reference", [{"coordinates": "spatial_ref"}, {}], ids=["coordinates", "none"])
@pytest.mark.parametrize("xy", [dict(units="m"), dict(units="m", axis="X")], ids=["bare", "cf"])
def test_spatial_ref_outside_grid_mapping_is_no_grid_mapping(tmp_path, chunkref_bin, reference, xy):
    """Root cause: chunkref fell back on a variable named ``spatial_ref``
    when an array had no ``grid_mapping`` (for a ``coordinates:
    spatial_ref`` reference, as rioxarray writes it, or none), taking its
    CRS and GeoTransform; GDAL's netCDF driver reads a grid mapping only
    through ``grid_mapping`` (3.6 here; 3.10 and 3.13 alike, measured)."""
    srs = osr.SpatialReference()
    srs.ImportFromEPSG(32633)
    mapping = {"crs_wkt": srs.ExportToWkt(), "spatial_ref": srs.ExportToWkt(),
               "GeoTransform": "499950 100 0 5000050 0 -100"}
    y_attrs = dict(xy, axis="Y") if "axis" in xy else xy
    coords = [coordinate("y", [5000000, 4999900, 4999800, 4999700], **y_attrs),
              coordinate("x", [500000, 500100, 500200, 500300, 500400], **xy),
              {"name": "spatial_ref", "dtype": "i4", "dims": [], "values": [0], "attrs": mapping}]
    source = write(tmp_path, {"sr": grid(["y", "x"], [4, 5], coords, attrs=reference)}) / "sr.nc"
    # The variable itself (GDAL also lists it as a subdataset when
    # `coordinates` names a variable it leaves out: not compared here).
    theirs = gdal.OpenEx(f'NETCDF:"{source}":v', gdal.OF_RASTER, allowed_drivers=["netCDF"])
    assert theirs.GetSpatialRef() is None
    out = index(chunkref_bin, source, tmp_path / "sr.json")
    assert_same_dataset(theirs, open_chunkref(f'CHUNKREF:"{out}":v'), "v")
