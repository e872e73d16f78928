"""``chunkref index`` over GRIB edition 1 files, read back through ChunkRef.

Sources are written by eccodes' tools (``grib_set`` and ``grib_filter`` on
eccodes' GRIB1 samples: ECMWF's table 128 parameters, the WMO table, NCEP's
centre), and by :mod:`grib1_writer` where eccodes will not write the
structure (a predefined grid, hostile headers).  GDAL's GRIB driver reading
the same file is the oracle: identical pixels (GDAL unpacks GRIB1 in double
precision, as the codec does), nodata (the missing value degrib gives the
points a bitmap leaves out), geotransform, CRS (GDAL's GRIB1 earths: a
6367.47 km sphere, 6371.2 km for NCEP, the IAU 1965 spheroid when the
resolution flags say oblate), band count and order, every ``GRIB_*`` band
metadata item GDAL shows and the band description, with
``GRIB_NORMALIZE_UNITS`` both ways.  Structures: regular latitude/longitude
grids with and without a bitmap, several messages of other parameters,
levels and times, decimal scaling, every scanning mode, Gaussian, rotated,
polar stereographic, Lambert conformal and Mercator grids, a global grid
split at the antimeridian, a file mixing GRIB1 and GRIB2 messages; and the
refusals: second-order packing, spherical harmonics, a reduced Gaussian
grid, a predefined grid, a truncated file and hostile headers.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from grib1_writer import Message
from raster_checks import open_chunkref
from test_grib2 import assert_same_grid, gdal_units, index

gdal.UseExceptions()

SAMPLES = Path("/usr/share/eccodes/samples")

pytestmark = pytest.mark.skipif(shutil.which("grib_filter") is None, reason="needs eccodes' tools")

#: The keys of a small regular latitude/longitude grid (7 x 5 points, 0.5
#: by 0.25 degrees, west of Greenwich: GRIB1 stores 350.25 degrees east).
SMALL_GRID = (
    "Ni=7,Nj=5,latitudeOfFirstGridPointInDegrees=60,longitudeOfFirstGridPointInDegrees=-10,"
    "latitudeOfLastGridPointInDegrees=59,longitudeOfLastGridPointInDegrees=-7,"
    "iDirectionIncrementInDegrees=0.5,jDirectionIncrementInDegrees=0.25"
)


def pixels(count: int, offset: float = 0.0, scale: float = 1.0) -> np.ndarray:
    """Smooth values with negatives and fractions."""
    k = np.arange(count)
    return (np.sin(k / 3.0) * 40 + k * 1.7 - 12.25) * scale + offset


def eccodes(
    path: Path,
    sample: str = "regular_ll_sfc_grib1",
    keys: str = SMALL_GRID,
    values: np.ndarray | None = None,
    rules: str = "",
    missing: np.ndarray | None = None,
) -> Path:
    """A GRIB1 message written by eccodes: ``sample`` with ``keys`` set
    (grib_set), then ``rules`` and ``values`` (grib_filter; points where
    ``missing`` is true left out by a bitmap)."""
    base = path.with_suffix(".base")
    source = SAMPLES / f"{sample}.tmpl"
    if keys:
        subprocess.run(["grib_set", "-s", keys, source, base], check=True, capture_output=True)
    else:
        shutil.copy(source, base)
    body = rules
    if values is not None:
        values = np.asarray(values, dtype=np.float64).copy()
        if missing is not None:
            body += "set bitmapPresent = 1;\nset missingValue = 9999;\n"
            values[missing] = 9999
        body += "set values = {" + ", ".join(repr(float(v)) for v in values) + "};\n"
    rules_file = path.with_suffix(".rules")
    rules_file.write_text(body + "write;\n")
    subprocess.run(["grib_filter", "-o", path, rules_file, base], check=True, capture_output=True)
    return path


def concatenated(path: Path, *parts: Path | bytes) -> Path:
    """The messages of ``parts`` (files or bytes) one after the other."""
    path.write_bytes(b"".join(p if isinstance(p, bytes) else p.read_bytes() for p in parts))
    return path


def refusal(chunkref_bin: Path, source: Path, tmp_path: Path) -> str:
    """The message ``chunkref index`` refuses ``source`` with."""
    result = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "refused.json")
    assert result.returncode != 0, f"{source} was indexed"
    return result.stderr


def assert_same_as_gdal(
    got: gdal.Dataset,
    source: Path,
    names: bool = True,
    geotransform: tuple[float, ...] | None = None,
) -> None:
    """Pixels, nodata, georeferencing, band metadata and descriptions equal
    GDAL's GRIB driver's (``names``: GDAL's parameter names too;
    ``geotransform``, when given, is expected instead of GDAL's)."""
    want = gdal.OpenEx(str(source), gdal.OF_RASTER, allowed_drivers=["GRIB"])
    assert_same_grid(got, want, geotransform)
    for b in range(1, want.RasterCount + 1):
        g, w = got.GetRasterBand(b), want.GetRasterBand(b)
        assert g.DataType == w.DataType == gdal.GDT_Float64
        assert g.GetNoDataValue() == w.GetNoDataValue(), f"band {b}"
        np.testing.assert_array_equal(g.ReadAsArray(), w.ReadAsArray(), err_msg=f"band {b}")
        expect = {k: v for k, v in w.GetMetadata().items() if k.startswith("GRIB_")}
        if not names:
            expect = {k: v for k, v in expect.items() if k not in NAME_ITEMS}
        assert {"GRIB_REF_TIME", "GRIB_VALID_TIME", "GRIB_SHORT_NAME"} <= expect.keys()
        have = g.GetMetadata()
        assert {k: have.get(k) for k in expect} == expect, f"band {b}"
        assert g.GetDescription() == w.GetDescription(), f"band {b}"


#: The items GDAL takes from its parameter tables.
NAME_ITEMS = {"GRIB_ELEMENT", "GRIB_UNIT", "GRIB_COMMENT"}


def assert_both_units(chunkref_bin: Path, source: Path, tmp_path: Path, names: bool = True) -> None:
    """The index matches GDAL with ``GRIB_NORMALIZE_UNITS`` YES and NO."""
    for units, normalize in (("normalized", True), ("raw", False)):
        ds = open_chunkref(index(chunkref_bin, source, tmp_path / f"{units}.json", units))
        with gdal_units(normalize):
            assert_same_as_gdal(ds, source, names)


def test_messages_of_parameters_levels_and_times_match_gdal(tmp_path, chunkref_bin):
    """Temperature on 500 hPa (converted to Celsius by default), 2 metre
    temperature six hours on (GDAL names it in Celsius but leaves its
    values), geopotential with decimal scaling over 12 hours (an
    accumulation's time range), a WMO table 2 temperature (table version
    3), a parameter no table defines."""
    count = 35
    messages = {
        "t": ("indicatorOfParameter=130,indicatorOfTypeOfLevel=100,level=500", pixels(count, 250), ""),
        "2t": ("indicatorOfParameter=167,stepRange=6", pixels(count, 280, 0.5), ""),
        "z": (
            "indicatorOfParameter=129,indicatorOfTypeOfLevel=100,level=850,"
            "timeRangeIndicator=4,startStep=0,endStep=12",
            pixels(count, 15000, 3),
            "set decimalScaleFactor = 2;\nset bitsPerValue = 20;\n",
        ),
        "tmp": ("table2Version=3,indicatorOfParameter=11,level=2,indicatorOfTypeOfLevel=105",
                pixels(count, 270), ""),
        "var": ("table2Version=1,indicatorOfParameter=250", pixels(count), ""),
    }
    parts = [
        eccodes(tmp_path / f"{name}.grib1", keys=SMALL_GRID + "," + keys, values=values, rules=rules)
        for name, (keys, values, rules) in messages.items()
    ]
    source = concatenated(tmp_path / "several.grib1", *parts)
    assert_both_units(chunkref_bin, source, tmp_path)
    ds = open_chunkref(tmp_path / "normalized.json")
    assert ds.GetRasterBand(3).GetMetadataItem("GRIB_FORECAST_SECONDS") == str(12 * 3600)
    assert ds.GetRasterBand(2).GetMetadataItem("DATETIME") == "2007-03-23T18:00:00"


@pytest.mark.parametrize("offset", [0.0, 9000.0, 1e21])
def test_bitmap_matches_gdal(tmp_path, chunkref_bin, offset):
    """A bitmap's missing points: degrib's 9999 when the values lie below
    it, 9.999e20 when 9999 lies within them, the largest value plus one
    when 9.999e20 does (GDAL's nodata each time)."""
    values = pixels(35, offset, 1e20 if offset > 1e20 else 100)
    missing = np.zeros(35, dtype=bool)
    missing[[3, 17, 18, 34]] = True
    source = eccodes(tmp_path / "bitmap.grib1", values=values, missing=missing)
    assert_both_units(chunkref_bin, source, tmp_path)


@pytest.mark.parametrize("flags", ["iScansNegatively=1", "jScansPositively=1", "jPointsAreConsecutive=1",
                                   "iScansNegatively=1,jScansPositively=1,jPointsAreConsecutive=1"])
def test_scanning_modes_match_gdal(tmp_path, chunkref_bin, flags):
    """Every scanning mode comes out north-up, as in GDAL.  With columns
    east first (-i: the first point the eastern one), GDAL 3.6 takes the
    first longitude for the western edge; the index keeps the grid's true
    west edge, GDAL's geotransform of the same grid scanned +i (as for
    GRIB2, test_grib2.py)."""
    keys = SMALL_GRID + "," + flags
    expected = None
    if "iScansNegatively" in flags:
        keys = keys.replace("longitudeOfFirstGridPointInDegrees=-10", "longitudeOfFirstGridPointInDegrees=-7")
        keys = keys.replace("longitudeOfLastGridPointInDegrees=-7", "longitudeOfLastGridPointInDegrees=-10")
        plain = eccodes(tmp_path / "plain.grib1", values=pixels(35))
        expected = gdal.Open(str(plain)).GetGeoTransform()
    source = eccodes(tmp_path / "scan.grib1", keys=keys, values=pixels(35))
    ds = open_chunkref(index(chunkref_bin, source, tmp_path / "scan.json"))
    assert_same_as_gdal(ds, source, geotransform=expected)


GRIDS = {
    "gaussian": ("regular_gg_sfc_grib1", "", 128 * 64),
    "rotated": (
        "rotated_ll_sfc_grib1",
        "latitudeOfSouthernPoleInDegrees=-40,longitudeOfSouthernPoleInDegrees=10,angleOfRotationInDegrees=5",
        16 * 31,
    ),
    "global-0-360": ("GRIB1", "", 360 * 181),
    "polar": (
        "polar_stereographic_sfc_grib1",
        "DxInMetres=50000,DyInMetres=40000,orientationOfTheGrid=-105,"
        "latitudeOfFirstGridPointInDegrees=20,longitudeOfFirstGridPointInDegrees=-130",
        16 * 31,
    ),
    "lambert": (
        "GRIB1",
        "gridType=lambert,Nx=12,Ny=9,latitudeOfFirstGridPointInDegrees=30,"
        "longitudeOfFirstGridPointInDegrees=-100,LoVInDegrees=-95,DxInMetres=30000,DyInMetres=30000,"
        "Latin1InDegrees=25,Latin2InDegrees=35",
        12 * 9,
    ),
    "mercator": (
        "GRIB1",
        "gridType=mercator,Ni=10,Nj=8,latitudeOfFirstGridPointInDegrees=10,"
        "longitudeOfFirstGridPointInDegrees=100,latitudeOfLastGridPointInDegrees=20,"
        "longitudeOfLastGridPointInDegrees=110,LaDInDegrees=15,DiInMetres=100000,DjInMetres=150000",
        10 * 8,
    ),
    "oblate": ("regular_ll_sfc_grib1", SMALL_GRID + ",earthIsOblate=1", 35),
    "ncep-sphere": (
        "regular_ll_sfc_grib1",
        SMALL_GRID + ",centre=7,table2Version=2,indicatorOfParameter=11",
        35,
    ),
    # ECMWF's local PDS extension (52 bytes, as in its archive).
    "ecmwf-local": ("regular_ll_sfc_grib1", "localDefinitionNumber=1,marsClass=ea," + SMALL_GRID, 35),
}


@pytest.mark.parametrize("name", sorted(GRIDS))
def test_grids_match_gdal(tmp_path, chunkref_bin, name):
    """Each grid type GDAL georeferences, and GRIB1's earths."""
    sample, keys, count = GRIDS[name]
    source = eccodes(tmp_path / f"{name}.grib1", sample, keys, values=pixels(count, 280))
    assert_both_units(chunkref_bin, source, tmp_path)


#: Messages eccodes does not write so: constant fields (0 bits) with a
#: binary scale (degrib's R * 2^E / 10^D), with a bitmap too; a negative
#: reference with negative binary and positive decimal scales; 12-bit
#: values; time range 10 (P1 and P2 one number); a forecast in minutes; a
#: layer between two levels (two one-octet numbers).
WRITTEN = {
    "constant-bitmap": Message(nbits=0, packed=[], bitmap=[1, 0, 1, 1, 0, 1], reference=3.0, binary_scale=2,
                               decimal_scale=1),
    "constant": Message(nbits=0, packed=[], reference=3.0, binary_scale=2, decimal_scale=-1),
    "negative-reference": Message(reference=-118.625, binary_scale=-3, decimal_scale=2,
                                  packed=[0, 255, 17, 4, 9, 200]),
    "12-bit": Message(nbits=12, packed=[0, 4095, 17, 4000, 9, 2000], reference=0.5, binary_scale=-4),
    "time-range-10": Message(time_range=10, p1=1, p2=2),
    "minutes": Message(time_unit=0, p1=90),
    "layer": Message(level_type=101, level=0x0A14),
}


@pytest.mark.parametrize("name", sorted(WRITTEN))
def test_written_messages_match_gdal(tmp_path, chunkref_bin, name):
    source = tmp_path / f"{name}.grib1"
    source.write_bytes(WRITTEN[name].bytes())
    assert_both_units(chunkref_bin, source, tmp_path)


def test_file_mixing_editions_matches_gdal(tmp_path, chunkref_bin):
    """GRIB1 and GRIB2 messages in one file: one band each, in file order."""
    one = eccodes(tmp_path / "one.grib1", values=pixels(35, 250))
    two = tmp_path / "two.grib2"
    subprocess.run(["grib_set", "-s", "edition=2", one, two], check=True, capture_output=True)
    source = concatenated(tmp_path / "mixed.grib", one, two, one)
    ds = open_chunkref(index(chunkref_bin, source, tmp_path / "mixed.json"))
    assert ds.RasterCount == 3
    assert_same_as_gdal(ds, source)


def test_unknown_tables_keep_values_and_leave_names_out(tmp_path, chunkref_bin):
    """A DWD table 2 temperature: GDAL converts it (its table says so) and
    names it from a table chunkref does not carry; the index converts it
    and leaves its names out rather than guess them."""
    keys = SMALL_GRID + ",centre=78,table2Version=2,indicatorOfParameter=11"
    source = eccodes(tmp_path / "dwd.grib1", keys=keys, values=pixels(35, 270))
    assert_both_units(chunkref_bin, source, tmp_path, names=False)
    ds = open_chunkref(tmp_path / "normalized.json")
    assert NAME_ITEMS.isdisjoint(ds.GetRasterBand(1).GetMetadata())


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("second-order", "complex (second-order) packing is not supported"),
        ("harmonics", "grid type 50 (spherical harmonic coefficients) is not supported"),
        ("reduced", "quasi-regular (thinned or reduced) grids"),
        ("predefined", "predefined grids (catalogued grid 255"),
        ("south-polar", "south polar stereographic"),
    ],
)
def test_unsupported_structures_are_refused(tmp_path, chunkref_bin, name, expected):
    plain = eccodes(tmp_path / "plain.grib1", values=pixels(35))
    if name == "second-order":
        source = tmp_path / "so.grib1"
        subprocess.run(["grib_set", "-s", "packingType=grid_second_order", plain, source], check=True)
    elif name == "harmonics":
        source = eccodes(tmp_path / "sh.grib1", "sh_sfc_grib1", "")
    elif name == "reduced":
        source = eccodes(tmp_path / "reduced.grib1", "reduced_gg_sfc_grib1", "")
    elif name == "south-polar":
        source = eccodes(tmp_path / "south.grib1", "polar_stereographic_sfc_grib1",
                         "projectionCentreFlag=128,DxInMetres=50000,DyInMetres=50000")
    else:
        source = tmp_path / "predefined.grib1"
        source.write_bytes(Message(with_gds=False).bytes())
    source = concatenated(tmp_path / "two.grib1", plain, source)
    message = refusal(chunkref_bin, source, tmp_path)
    assert "message 2" in message and "GRIB1" in message and expected in message, message


def test_truncated_file_is_refused(tmp_path, chunkref_bin):
    plain = eccodes(tmp_path / "plain.grib1", values=pixels(35)).read_bytes()
    source = concatenated(tmp_path / "cut.grib1", plain, plain[:-10])
    message = refusal(chunkref_bin, source, tmp_path)
    assert "message 2" in message and "truncated" in message, message


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        # 65000 x 65000 points of one constant value in a few bytes: degrib
        # refuses grids of over 100 Mi points a thousand times the file.
        (Message(ni=65000, nj=65000, packed=[], nbits=0, reference=1.0), "too short"),
        # A bitmap declaring far more points than its section holds.
        (Message(ni=1000, nj=1000, bitmap=[1] * 16), "bitmap section"),
        # Values of 40 bits.
        (Message(nbits=40, packed=[1] * 6), "40 bits per value"),
        # Fewer packed values than points.
        (Message(packed=[1, 2]), "binary data section holds"),
    ],
)
def test_hostile_headers_are_refused(tmp_path, chunkref_bin, message, expected):
    source = tmp_path / "hostile.grib1"
    source.write_bytes(message.bytes())
    text = refusal(chunkref_bin, source, tmp_path)
    assert expected in text, text


def test_section_lengths_past_the_message_are_refused(tmp_path, chunkref_bin):
    data = bytearray(Message().bytes())
    data[8 + 28 + 32 + 2] = 0xFF  # the BDS length
    source = tmp_path / "long.grib1"
    source.write_bytes(bytes(data))
    assert "binary data section" in refusal(chunkref_bin, source, tmp_path)
