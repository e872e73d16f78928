"""``chunkref index`` over GDAL-written GRIB2 files, read back through ChunkRef.

Sources are written by GDAL's GRIB driver from MEM datasets (one message
per band) on EPSG:4326, a sphere, Lambert conformal, polar stereographic
and Mercator grids, in every data encoding it writes: simple packing,
complex packing (with a nodata value, which it stores as complex
packing's missing value; with first- and second-order spatial
differencing), IEEE floating point, PNG and JPEG 2000, with decimal scale
factors and bit widths.  GDAL's GRIB driver reading the same file is the
oracle: identical pixels (compared as float64; GDAL unpacks in single
precision, as the codec does, then widens to Float64, so no tolerance is
needed, JPEG 2000 included: GDAL writes it losslessly and both read it
with OpenJPEG), the same nodata value, geotransform, CRS, band count and
order, every ``GRIB_*`` band metadata item GDAL shows (times, element,
short name, unit, comment, discipline, identification, template numbers)
and the band description.  GDAL's writer never writes a bitmap (section 6): a bitmap message is
made here from a GDAL-written one (GDAL gives its missing points 9999 and
reports that as nodata), and so are messages of other scanning modes.
Also: Parquet output, several parameters and missing values (one dataset, nodata per band), a 4.8
accumulation, a file indexed over HTTP, a truncated file, a refused grid
template, a corrupt message.  Temperatures (Kelvin) are indexed as GDAL
shows them by default (``GRIB_NORMALIZE_UNITS=YES``: Celsius, computed in
double precision after unpacking) and, with ``--grib-units raw``, as GDAL
shows them with ``GRIB_NORMALIZE_UNITS=NO``; names, units and comments of
parameters GDAL's tables know, a local one and one they do not know equal
GDAL's under both settings.
"""

from __future__ import annotations

import contextlib
import struct
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
from osgeo import gdal, osr

from conftest import run_chunkref
from raster_checks import captured_errors, failure_text, open_chunkref

gdal.UseExceptions()

#: Reference time written to every source (GDAL: seconds since 1970).
REF_TIME = "2024-02-29T06:00:00Z"
REF_SECONDS = 1709186400
#: Product template 4.0 values: U wind (0-2-2), forecast 6 h * band, isobaric level.
PDS = "2 2 2 0 96 0 0 1 {hours} 100 0 {pascal} 255 -127 -2147483647"
#: The same for temperature (0-0-0, Kelvin in the file).
TMP_PDS = "0 0 2 0 96 0 0 1 {hours} 100 0 {pascal} 255 -127 -2147483647"


def source_pixels(bands: int, rows: int, cols: int, nodata: float | None) -> np.ndarray:
    """Smooth values with negatives and fractions (and nodata holes)."""
    y, x = np.mgrid[0:rows, 0:cols]
    stack = []
    for b in range(bands):
        a = (np.sin(x / 3.0 + b) * 40 + y * 1.7 - 12.25 + b * 100).astype(np.float32)
        if nodata is not None:
            a[rows // 3, cols // 2] = nodata
            a[-1, : cols // 3] = nodata
        stack.append(a)
    return np.stack(stack)


def write_grib(
    path: Path,
    options: list[str],
    nodata: float | None = None,
    bands: int = 3,
    size: tuple[int, int] = (23, 17),
    geotransform: tuple[float, ...] = (-10.0, 0.5, 0.0, 60.0, 0.0, -0.25),
    crs: str = "EPSG:4326",
    pds: str = PDS,
) -> Path:
    """A GRIB2 file written by GDAL: one message per band, forecast hours
    0, 6, 12, ... on isobaric levels 500, 600, ... hPa (GDAL takes a
    temperature's pixels for Celsius and writes them in Kelvin)."""
    cols, rows = size
    mem = gdal.GetDriverByName("MEM").Create("", cols, rows, bands, gdal.GDT_Float32)
    srs = osr.SpatialReference()
    srs.SetFromUserInput(crs)
    mem.SetProjection(srs.ExportToWkt())
    mem.SetGeoTransform(geotransform)
    for b, pixels in enumerate(source_pixels(bands, rows, cols, nodata)):
        band = mem.GetRasterBand(b + 1)
        band.WriteArray(pixels)
        if nodata is not None:
            band.SetNoDataValue(nodata)
    creation = [*options, "DISCIPLINE=0", f"IDS_REF_TIME={REF_TIME}"]
    for b in range(bands):
        creation += [
            f"BAND_{b + 1}_PDS_PDTN=0",
            f"BAND_{b + 1}_PDS_TEMPLATE_ASSEMBLED_VALUES="
            + pds.format(hours=6 * b, pascal=50000 + 10000 * b),
        ]
    with captured_errors():
        gdal.Translate(str(path), mem, format="GRIB", creationOptions=creation)
    return path


def index(chunkref_bin: Path, source: Path, out: Path, units: str | None = None) -> Path:
    """``chunkref index SOURCE -o OUT`` (with ``--grib-units UNITS``)."""
    extra = ["--grib-units", units] if units else []
    result = run_chunkref(chunkref_bin, "index", *extra, source, "-o", out)
    assert result.returncode == 0, result.stderr
    return out


@contextlib.contextmanager
def gdal_units(normalize: bool) -> Iterator[None]:
    """GDAL's GRIB driver reads with ``GRIB_NORMALIZE_UNITS`` set so."""
    previous = gdal.GetConfigOption("GRIB_NORMALIZE_UNITS")
    gdal.SetConfigOption("GRIB_NORMALIZE_UNITS", "YES" if normalize else "NO")
    try:
        yield
    finally:
        gdal.SetConfigOption("GRIB_NORMALIZE_UNITS", previous)


def assert_same_as_gdal(
    got: gdal.Dataset,
    source: Path,
    missing: np.ndarray | None = None,
    geotransform: tuple[float, ...] | None = None,
) -> None:
    """Pixels, nodata, georeferencing and band times equal GDAL's GRIB driver's.

    ``missing`` marks the points written as nodata (bands, rows, columns):
    there the index must hold its nodata value, and GDAL's pixels are not
    compared: GDAL 3.6 reports complex packing's missing value as nodata
    but, when that value lies within the data range or spatial differencing
    is used, gives the points degrib's substitute instead (the largest value
    plus one), so its own nodata mask misses them.  ``geotransform``, when
    given, is expected instead of GDAL's (see the scanning mode test)."""
    want = gdal.OpenEx(str(source), gdal.OF_RASTER, allowed_drivers=["GRIB"])
    assert_same_grid(got, want, geotransform)
    for b in range(1, want.RasterCount + 1):
        g, w = got.GetRasterBand(b), want.GetRasterBand(b)
        expected = w.ReadAsArray().astype(np.float64)
        actual = g.ReadAsArray().astype(np.float64)
        assert g.GetNoDataValue() == w.GetNoDataValue(), f"band {b}"
        if missing is not None:
            holes = missing[b - 1]
            assert holes.any()
            np.testing.assert_array_equal(actual == g.GetNoDataValue(), holes, err_msg=f"band {b}")
            expected[holes] = actual[holes]
        elif w.GetNoDataValue() is not None:
            np.testing.assert_array_equal(actual == g.GetNoDataValue(), expected == w.GetNoDataValue())
        np.testing.assert_array_equal(actual, expected, err_msg=f"band {b}")
        assert_same_items(g, w, b)


def assert_same_grid(
    got: gdal.Dataset, want: gdal.Dataset, geotransform: tuple[float, ...] | None = None
) -> None:
    """Size, band count, geotransform (``geotransform`` instead of GDAL's
    when given) and CRS equal those GDAL's GRIB driver gives ``want``."""
    assert (got.RasterXSize, got.RasterYSize, got.RasterCount) == (
        want.RasterXSize,
        want.RasterYSize,
        want.RasterCount,
    )
    expected_transform = geotransform or want.GetGeoTransform()
    np.testing.assert_allclose(got.GetGeoTransform(), expected_transform, rtol=1e-9, atol=0)
    assert got.GetSpatialRef().IsSame(want.GetSpatialRef()), got.GetSpatialRef().ExportToWkt()


def assert_same_items(got: gdal.Band, want: gdal.Band, band: int) -> None:
    """Every ``GRIB_*`` metadata item of GDAL's band, and its description."""
    have, expect = got.GetMetadata(), want.GetMetadata()
    grib = {k: v for k, v in expect.items() if k.startswith("GRIB_")}
    assert {"GRIB_ELEMENT", "GRIB_UNIT", "GRIB_COMMENT", "GRIB_IDS"} <= grib.keys(), expect
    assert {k: have.get(k) for k in grib} == grib, f"band {band}"
    assert got.GetDescription() == want.GetDescription(), f"band {band}"


ENCODINGS = {
    "simple": ["DATA_ENCODING=SIMPLE_PACKING"],
    "simple-decimal-nbits": ["DATA_ENCODING=SIMPLE_PACKING", "DECIMAL_SCALE_FACTOR=2", "NBITS=20"],
    "simple-nbits8": ["DATA_ENCODING=SIMPLE_PACKING", "NBITS=8"],
    "complex": ["DATA_ENCODING=COMPLEX_PACKING"],
    # GDAL 3.6 fails to write first-order differences of these values at
    # its default width ("Error while packing"); 16 bits it writes.
    "complex-sd1": ["DATA_ENCODING=COMPLEX_PACKING", "SPATIAL_DIFFERENCING_ORDER=1", "NBITS=16"],
    "complex-sd2-decimal": [
        "DATA_ENCODING=COMPLEX_PACKING",
        "SPATIAL_DIFFERENCING_ORDER=2",
        "DECIMAL_SCALE_FACTOR=1",
    ],
    "ieee": ["DATA_ENCODING=IEEE_FLOATING_POINT"],
    "png": ["DATA_ENCODING=PNG", "DECIMAL_SCALE_FACTOR=1"],
    "png-nbits": ["DATA_ENCODING=PNG", "NBITS=12"],
    "jpeg2000": ["DATA_ENCODING=JPEG2000", "DECIMAL_SCALE_FACTOR=1"],
}


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_encodings_match_gdal(tmp_path, chunkref_bin, name):
    source = write_grib(tmp_path / f"{name}.grb2", ENCODINGS[name])
    ds = open_chunkref(index(chunkref_bin, source, tmp_path / "index.json"))
    assert_same_as_gdal(ds, source)
    assert ds.GetRasterBand(3).GetMetadataItem("DATETIME") == "2024-02-29T18:00:00"


@pytest.mark.parametrize("order", [None, "1", "2"])
def test_complex_packing_nodata_matches_gdal(tmp_path, chunkref_bin, order):
    options = ["DATA_ENCODING=COMPLEX_PACKING"]
    if order:
        options.append(f"SPATIAL_DIFFERENCING_ORDER={order}")
    source = write_grib(tmp_path / "nodata.grb2", options, nodata=-999.0)
    ds = open_chunkref(index(chunkref_bin, source, tmp_path / "index.json"))
    assert ds.GetRasterBand(1).GetNoDataValue() == -999.0
    assert_same_as_gdal(ds, source, missing=source_pixels(3, 17, 23, -999.0) == -999.0)


def test_accumulation_valid_time_is_the_end_of_its_range(tmp_path, chunkref_bin):
    """Product template 4.8 (a 6-hour precipitation total): GDAL's valid
    time is the end of the time range, its forecast seconds the start."""
    mem = gdal.GetDriverByName("MEM").Create("", 7, 5, 1, gdal.GDT_Float32)
    mem.SetProjection("EPSG:4326")
    mem.SetGeoTransform((-10, 0.5, 0, 60, 0, -0.25))
    mem.GetRasterBand(1).WriteArray(np.arange(35, dtype=np.float32).reshape(5, 7))
    # 4.0's fields (APCP, forecast hour 0 on the ground), the end of the
    # range (2024-02-29T12:00:00), one range: accumulation over 6 hours.
    head = [1, 8, 2, 0, 96, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255]
    end = [0x07, 0xE8, 2, 29, 12, 0, 0]
    ranges = [1, 0, 0, 0, 0, 1, 2, 1, 0, 0, 0, 6, 1, 0, 0, 0, 0]
    source = tmp_path / "apcp.grb2"
    gdal.Translate(
        str(source),
        mem,
        format="GRIB",
        creationOptions=[
            "DATA_ENCODING=SIMPLE_PACKING",
            f"IDS_REF_TIME={REF_TIME}",
            "PDS_PDTN=8",
            "PDS_TEMPLATE_NUMBERS=" + " ".join(map(str, head + end + ranges)),
        ],
    )
    ds = open_chunkref(index(chunkref_bin, source, tmp_path / "index.json"))
    assert_same_as_gdal(ds, source)
    band = ds.GetRasterBand(1)
    assert band.GetMetadataItem("GRIB_VALID_TIME") == str(REF_SECONDS + 6 * 3600)
    assert band.GetMetadataItem("DATETIME") == "2024-02-29T12:00:00"


def test_parquet_index_matches_gdal(tmp_path, chunkref_bin):
    source = write_grib(tmp_path / "s.grib2", ["DATA_ENCODING=COMPLEX_PACKING"], nodata=-5.0)
    ds = open_chunkref(index(chunkref_bin, source, tmp_path / "index.parquet"))
    assert_same_as_gdal(ds, source, missing=source_pixels(3, 17, 23, -5.0) == -5.0)


def test_antimeridian_and_southern_grid(tmp_path, chunkref_bin):
    """A grid across 180 degrees east and one west of Greenwich (GRIB
    stores longitudes 0-360; GDAL shifts a west edge past 180 by -360)."""
    for name, gt in {
        "east": (170.0, 0.5, 0.0, -20.0, 0.0, -0.5),
        "west": (-100.0, 1.0, 0.0, 10.0, 0.0, -1.0),
    }.items():
        source = write_grib(tmp_path / f"{name}.grb2", ["DATA_ENCODING=IEEE_FLOATING_POINT"], geotransform=gt)
        ds = open_chunkref(index(chunkref_bin, source, tmp_path / f"{name}.json"))
        assert_same_as_gdal(ds, source)


SPHERE = "+R=6371229 +units=m +no_defs"
GRIDS = {
    "latlon-sphere": ("+proj=longlat +R=6371229 +no_defs", (-10.0, 0.5, 0.0, 60.0, 0.0, -0.25)),
    "lcc-sphere": (
        f"+proj=lcc +lat_0=25 +lon_0=-95 +lat_1=25 +lat_2=25 +x_0=0 +y_0=0 {SPHERE}",
        (-1000000.0, 3000.0, 0.0, 1500000.0, 0.0, -3000.0),
    ),
    "lcc-2sp-wgs84": (
        "+proj=lcc +lat_0=40 +lon_0=10 +lat_1=35 +lat_2=45 +x_0=0 +y_0=0 +datum=WGS84 +units=m",
        (-500000.0, 2000.0, 0.0, 600000.0, 0.0, -2000.0),
    ),
    "polar-north": (
        f"+proj=stere +lat_0=90 +lat_ts=60 +lon_0=-105 +x_0=0 +y_0=0 {SPHERE}",
        (-2000000.0, 5000.0, 0.0, -1000000.0, 0.0, -5000.0),
    ),
    "polar-south": (
        f"+proj=stere +lat_0=-90 +lat_ts=-71 +lon_0=0 +x_0=0 +y_0=0 {SPHERE}",
        (-300000.0, 4000.0, 0.0, 200000.0, 0.0, -4000.0),
    ),
    "mercator": (
        f"+proj=merc +lat_ts=20 +lon_0=0 +x_0=0 +y_0=0 {SPHERE}",
        (1000000.0, 2500.0, 0.0, 2000000.0, 0.0, -2500.0),
    ),
}


@pytest.mark.parametrize("name", sorted(GRIDS))
def test_grids_match_gdal(tmp_path, chunkref_bin, name):
    """Geographic grids on a sphere, Lambert conformal, polar stereographic
    and Mercator grids as GDAL's GRIB writer makes them (templates 3.0,
    3.30, 3.20, 3.10): GDAL's geotransform and CRS."""
    crs, gt = GRIDS[name]
    source = write_grib(tmp_path / f"{name}.grb2", ["DATA_ENCODING=SIMPLE_PACKING"], geotransform=gt, crs=crs)
    ds = open_chunkref(index(chunkref_bin, source, tmp_path / "index.json"))
    assert_same_as_gdal(ds, source)


def sections_of(message: bytes) -> list[bytes]:
    """The sections of ``message`` between sections 0 and 8, in order."""
    out, at = [], 16
    while message[at : at + 4] != b"7777":
        out.append(message[at : at + struct.unpack(">I", message[at : at + 4])[0]])
        at += len(out[-1])
    return out


def rotated_message(message: bytes, pole: tuple[int, int], angle: float) -> bytes:
    """``message`` (a GDAL-written latitude/longitude message) as grid
    template 3.1: the same grid in coordinates rotated so that the
    southern pole is at ``pole`` (micro-degrees latitude, longitude)."""
    sections = {section[4]: section for section in sections_of(message)}
    lat, lon = pole
    s3 = bytearray(sections[3]) + struct.pack(">II", abs(lat) | (0x80000000 if lat < 0 else 0), lon)
    s3 += struct.pack(">f", angle)
    s3[0:4] = struct.pack(">I", len(s3))
    s3[12:14] = struct.pack(">H", 1)
    sections[3] = bytes(s3)
    body = b"".join(sections.get(n, b"") for n in range(1, 8)) + b"7777"
    return message[:8] + struct.pack(">Q", 16 + len(body)) + body


@pytest.mark.parametrize("crs", ["EPSG:4326", "+proj=longlat +R=6371229 +no_defs"])
def test_rotated_grid_matches_gdal(tmp_path, chunkref_bin, crs):
    """Grid template 3.1 (rotated latitude/longitude, made from GDAL's 3.0
    messages: GDAL's writer does not write it): GDAL's pole rotation CRS
    and the geotransform in rotated coordinates."""
    source = write_grib(tmp_path / "plain.grb2", ["DATA_ENCODING=SIMPLE_PACKING"], crs=crs)
    rotated = tmp_path / "rotated.grb2"
    rotated.write_bytes(b"".join(rotated_message(m, (-40_000_000, 10_000_000), 0.0) for m in messages(source)))
    ds = open_chunkref(index(chunkref_bin, rotated, tmp_path / "index.json"))
    assert_same_as_gdal(ds, rotated)
    assert "Pole rotation" in ds.GetSpatialRef().ExportToWkt(["FORMAT=WKT2_2019"])


def bitmap_message(message: bytes, present, scan: int | None = None) -> bytes:
    """``message`` (a GDAL-written simple packing message) with its values
    replaced by 8-bit values at the points ``present`` marks, and a bitmap;
    with ``scan``, section 3 declares that scanning mode instead of GDAL's
    0x40 (+j), its first and last points swapped to match."""
    sections = {section[4]: section for section in sections_of(message)}
    if scan is not None:
        s3 = bytearray(sections[3])
        la1, lo1, la2, lo2 = s3[46:50], s3[50:54], s3[55:59], s3[59:63]
        if not scan & 0x40:
            la1, la2 = la2, la1
        if scan & 0x80:
            lo1, lo2 = lo2, lo1
        s3[46:50], s3[50:54], s3[55:59], s3[59:63], s3[71] = la1, lo1, la2, lo2, scan
        sections[3] = bytes(s3)
    values = [k * 7 % 200 for k, p in enumerate(present) if p]
    s5 = struct.pack(">IBIH", 21, 5, len(values), 0) + struct.pack(">fhhBB", 0.0, 0, 0, 8, 0)
    bits = bytearray((len(present) + 7) // 8)
    for k, p in enumerate(present):
        if p:
            bits[k // 8] |= 0x80 >> (k % 8)
    s6 = struct.pack(">IBB", 6 + len(bits), 6, 0) + bytes(bits)
    s7 = struct.pack(">IB", 5 + len(values), 7) + bytes(values)
    body = b"".join(sections.get(n, b"") for n in (1, 2, 3, 4)) + s5 + s6 + s7 + b"7777"
    return message[:8] + struct.pack(">Q", 16 + len(body)) + body


def messages(path: Path) -> list[bytes]:
    data, out, at = path.read_bytes(), [], 0
    while at < len(data):
        length = struct.unpack(">Q", data[at + 8 : at + 16])[0]
        out.append(data[at : at + length])
        at += length
    return out


def test_messages_padded_with_zeros_match_gdal(tmp_path, chunkref_bin):
    """ECMWF pads each message with zeros to a multiple of 120 bytes; GDAL's
    GRIB driver skips the padding, and so does ``chunkref index`` (it said
    "no GRIB indicator section" before).  A file that is only padding after
    its last message ends there."""
    source = write_grib(tmp_path / "plain.grb2", ["DATA_ENCODING=SIMPLE_PACKING"], bands=3)
    padded = tmp_path / "padded.grb2"
    padded.write_bytes(b"".join(m + bytes(-len(m) % 120) for m in messages(source)) + bytes(240))
    assert padded.stat().st_size % 120 == 0
    ds = open_chunkref(index(chunkref_bin, padded, tmp_path / "index.json"))
    assert ds.RasterCount == 3
    assert_same_as_gdal(ds, padded)


def test_bitmap_points_are_gdal_nodata(tmp_path, chunkref_bin):
    source = write_grib(tmp_path / "plain.grb2", ["DATA_ENCODING=SIMPLE_PACKING"], bands=2)
    points = 23 * 17
    with_bitmap = tmp_path / "bitmap.grb2"
    with_bitmap.write_bytes(
        b"".join(
            bitmap_message(m, [(k * (b + 2)) % 5 != 1 for k in range(points)])
            for b, m in enumerate(messages(source))
        )
    )
    ds = open_chunkref(index(chunkref_bin, with_bitmap, tmp_path / "index.json"))
    assert ds.GetRasterBand(1).GetNoDataValue() == 9999.0
    assert_same_as_gdal(ds, with_bitmap)


@pytest.mark.parametrize("scan", [0x00, 0x40, 0x80, 0xC0])
def test_scanning_modes_match_gdal(tmp_path, chunkref_bin, scan):
    """Rows stored north first or south first, columns east first or west
    first: GDAL shows every one north-up, and so does the codec.  With
    columns east first (-i), GDAL 3.6 flips the pixels but takes the first
    (eastern) longitude for the western edge; the index keeps the grid's
    true west edge, the geotransform of the same grid scanned +i."""
    source = write_grib(tmp_path / "plain.grb2", ["DATA_ENCODING=SIMPLE_PACKING"], bands=1)
    scanned = tmp_path / f"scan{scan:02x}.grb2"
    scanned.write_bytes(bitmap_message(messages(source)[0], [k % 11 != 3 for k in range(23 * 17)], scan))
    ds = open_chunkref(index(chunkref_bin, scanned, tmp_path / "index.json"))
    west_first = gdal.Open(str(source)).GetGeoTransform()
    assert_same_as_gdal(ds, scanned, geotransform=west_first if scan & 0x80 else None)


def test_parameters_and_missing_values_make_one_dataset(tmp_path, chunkref_bin):
    """Messages of two parameters, one with a missing value, make one
    dataset whose bands are every message in file order, each with its
    own nodata (its message's missing value, or none), as GDAL shows them."""
    first = write_grib(tmp_path / "a.grb2", ["DATA_ENCODING=SIMPLE_PACKING"], bands=2)
    second = write_grib(tmp_path / "b.grb2", ["DATA_ENCODING=IEEE_FLOATING_POINT", "PDS_PDTN=0"], bands=1)
    third = write_grib(tmp_path / "c.grb2", ["DATA_ENCODING=COMPLEX_PACKING"], nodata=-999.0, bands=1)
    b_messages = messages(second)
    # The second file's message as parameter 0-2-3 (V wind): category and number bytes.
    m = bytearray(b_messages[0])
    at, s4 = 16, None
    while s4 is None:
        length, number = struct.unpack(">IB", m[at : at + 5])
        s4 = at if number == 4 else None
        at += length
    m[s4 + 10] = 3
    combined = tmp_path / "all.grb2"
    combined.write_bytes(first.read_bytes() + bytes(m) + third.read_bytes())
    ds = open_chunkref(index(chunkref_bin, combined, tmp_path / "index.json"))
    assert not ds.GetMetadata("SUBDATASETS")
    gdal_bands = gdal.Open(str(combined))
    assert ds.RasterCount == gdal_bands.RasterCount == 4
    nodata = [gdal_bands.GetRasterBand(b).GetNoDataValue() for b in range(1, 5)]
    assert nodata[3] == -999.0 and nodata[0] is None, nodata
    for b in range(1, 5):
        mine, theirs = ds.GetRasterBand(b), gdal_bands.GetRasterBand(b)
        assert mine.GetNoDataValue() == theirs.GetNoDataValue(), b
        assert mine.GetMaskFlags() == theirs.GetMaskFlags(), b
        np.testing.assert_array_equal(mine.ReadAsArray().astype(np.float64),
                                      theirs.ReadAsArray().astype(np.float64))


def test_truncated_file_fails_naming_it(tmp_path, chunkref_bin):
    source = write_grib(tmp_path / "whole.grb2", ["DATA_ENCODING=SIMPLE_PACKING"])
    cut = tmp_path / "cut.grb2"
    cut.write_bytes(source.read_bytes()[:-100])
    result = run_chunkref(chunkref_bin, "index", cut, "-o", tmp_path / "cut.json")
    assert result.returncode != 0
    assert str(cut) in result.stderr and "message 3" in result.stderr, result.stderr


def test_refused_templates_are_named(tmp_path, chunkref_bin):
    source = write_grib(tmp_path / "whole.grb2", ["DATA_ENCODING=SIMPLE_PACKING"], bands=1)
    m = bytearray(source.read_bytes())
    m[16 + 21 + 5 + 12 : 16 + 21 + 5 + 14] = struct.pack(">H", 90)  # grid template 3.90
    odd = tmp_path / "odd.grb2"
    odd.write_bytes(bytes(m))
    result = run_chunkref(chunkref_bin, "index", odd, "-o", tmp_path / "odd.json")
    assert result.returncode != 0
    assert "3.90" in result.stderr and str(odd) in result.stderr, result.stderr


def test_corrupt_message_is_a_read_error_naming_the_chunk(tmp_path, chunkref_bin):
    source = write_grib(tmp_path / "s.grb2", ["DATA_ENCODING=COMPLEX_PACKING"])
    out = index(chunkref_bin, source, tmp_path / "index.json")
    data = bytearray(source.read_bytes())
    second = struct.unpack(">Q", data[8:16])[0]
    # The second message's section 5 declares more values than its grid has.
    at = second + 16
    while data[at + 4] != 5:
        at += struct.unpack(">I", data[at : at + 4])[0]
    data[at + 5 : at + 9] = struct.pack(">I", 10**6)
    source.write_bytes(bytes(data))
    ds = open_chunkref(out)
    assert ds.GetRasterBand(1).ReadAsArray() is not None
    text = failure_text(ds.GetRasterBand(2).ReadAsArray)
    assert "0/data/1.0.0" in text and "grib2" in text, text


def test_remote_file_is_indexed_by_range(tmp_path, chunkref_bin):
    """A GRIB2 file on an HTTP range server: the index references it by
    URL, reads as GDAL reads the local copy, and indexing fetched the
    headers in a few range requests, not the file."""
    from servers import RangeServer

    source = write_grib(tmp_path / "big.grb2", ["DATA_ENCODING=SIMPLE_PACKING"], bands=40, size=(301, 201))
    server = RangeServer(tmp_path)
    try:
        url = f"{server.url}big.grb2"
        out = index(chunkref_bin, url, tmp_path / "remote.json")
        fetched = len(server.log.requests)
        ds = open_chunkref(out)
        assert_same_as_gdal(ds, source)
    finally:
        server.close()
    # 40 messages of ~120 KB: about one request per message (the block
    # read at a message's end holds the next one's headers).
    assert fetched <= 45, server.log.requests


@pytest.mark.parametrize("normalize", [True, False], ids=["normalized", "raw"])
@pytest.mark.parametrize(
    "encoding, nodata",
    [
        (["DATA_ENCODING=SIMPLE_PACKING", "DECIMAL_SCALE_FACTOR=2"], None),
        (["DATA_ENCODING=COMPLEX_PACKING"], -999.0),
        (["DATA_ENCODING=IEEE_FLOATING_POINT"], None),
    ],
    ids=["simple", "complex-nodata", "ieee"],
)
def test_temperatures_match_gdal_in_both_units(tmp_path, chunkref_bin, encoding, nodata, normalize):
    """Temperature (0-0-0) in Kelvin: GDAL shows it in Celsius (value -
    273.15 in double precision, unit ``[C]``) by default, in Kelvin with
    ``GRIB_NORMALIZE_UNITS=NO``; ``--grib-units`` picks which, pixels and
    items bit for bit.  Missing values are not converted, in GDAL either."""
    source = write_grib(tmp_path / "tmp.grb2", encoding, nodata=nodata, pds=TMP_PDS)
    units = "normalized" if normalize else "raw"
    ds = open_chunkref(index(chunkref_bin, source, tmp_path / "index.json", units))
    missing = None if nodata is None else source_pixels(3, 17, 23, nodata) == nodata
    with gdal_units(normalize):
        assert_same_as_gdal(ds, source, missing=missing)
    band = ds.GetRasterBand(1)
    assert band.DataType == gdal.GDT_Float64
    assert band.GetMetadataItem("GRIB_UNIT") == ("[C]" if normalize else "[K]")
    if nodata is not None:
        assert band.GetNoDataValue() == nodata


@pytest.mark.parametrize("normalize", [True, False], ids=["normalized", "raw"])
def test_temperature_bitmap_points_stay_gdal_nodata(tmp_path, chunkref_bin, normalize):
    """A bitmap over a temperature: GDAL converts the present points and
    gives the others 9999, unconverted; so does the index."""
    source = write_grib(tmp_path / "plain.grb2", ["DATA_ENCODING=SIMPLE_PACKING"], bands=2, pds=TMP_PDS)
    with_bitmap = tmp_path / "bitmap.grb2"
    with_bitmap.write_bytes(
        b"".join(
            bitmap_message(m, [(k * (b + 2)) % 5 != 1 for k in range(23 * 17)]) for b, m in enumerate(messages(source))
        )
    )
    units = "normalized" if normalize else "raw"
    ds = open_chunkref(index(chunkref_bin, with_bitmap, tmp_path / "index.json", units))
    assert ds.GetRasterBand(1).GetNoDataValue() == 9999.0
    with gdal_units(normalize):
        assert_same_as_gdal(ds, with_bitmap)


#: Template 4.8 numbers of a 6-hour accumulation ending 2024-02-29T12:00:00.
ACCUMULATION = (
    [1, 8, 2, 0, 96, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255]
    + [0x07, 0xE8, 2, 29, 12, 0, 0]
    + [1, 0, 0, 0, 0, 1, 2, 1, 0, 0, 0, 6, 1, 0, 0, 0, 0]
)
#: Template 4.5 and 4.9 numbers: probability 1 of 3, above 273 (upper limit).
PROB_ABOVE = "1 3 1 0 0 0 273"
#: ... above 0.254 (upper limit scaled by 3).
POP = "1 3 1 0 0 3 254"
#: The end of an interval (2024-02-29T12:00:00), one time range.
END_12H = "2024 2 29 12 0 0 1 0"
#: An accumulation over 6 hours, one field every hour.
RANGE_6H = "1 2 1 6 1 0"
#: Parameters by name: (discipline, center, product template, its values
#: (template 4.8: its octets)).
PARAMETERS = {
    "tmp-isobaric": (0, None, 0, "0 0 2 0 96 0 0 1 6 100 0 50000 255 -127 -2147483647"),
    "ugrd-height": (0, None, 0, "2 2 2 0 96 0 0 1 6 103 0 10 255 -127 -2147483647"),
    "apcp-accumulation": (0, None, 8, " ".join(map(str, ACCUMULATION))),
    "apcp-forecast": (0, None, 0, "1 8 2 0 96 0 0 1 6 1 0 0 255 -127 -2147483647"),
    "rh-2m": (0, None, 0, "1 1 2 0 96 0 0 1 6 103 0 2 255 -127 -2147483647"),
    "soil-layer": (2, None, 0, "0 192 2 0 96 0 0 1 6 106 2 10 106 2 40"),
    "local-unknown": (0, None, 0, "0 192 2 0 96 0 0 1 6 1 0 0 255 -127 -2147483647"),
    "local-ncep": (0, 7, 0, "0 192 2 0 96 0 0 1 6 1 0 0 255 -127 -2147483647"),
    "ndfd-temperature": (0, 8, 0, "0 0 2 0 96 0 0 1 6 1 0 0 255 -127 -2147483647"),
    "reserved-level": (0, None, 0, "0 0 2 0 96 0 0 1 6 200 0 0 255 -127 -2147483647"),
    "ensemble-member": (0, 98, 1, "0 0 2 0 96 0 0 1 6 1 0 0 255 -127 -2147483647 3 2 10"),
    "ensemble-spread": (0, None, 2, "0 0 2 0 96 0 0 1 6 1 0 0 255 -127 -2147483647 4 10"),
    "ocean-waves": (10, None, 0, "0 3 2 0 96 0 0 1 6 1 0 0 255 -127 -2147483647"),
    # Template 4.5: probability of 2 m temperature above 273 K, between
    # 273.5 K and 280 K (scaled limits; GDAL 3.6 reads a scale factor of
    # -1 as -127, so shows the upper limit as 0), below 0.5 K (NDFD: below
    # normal), below 500 K (scale factor -2).
    "probability-above": (0, None, 5, f"0 0 2 0 96 0 0 1 6 103 0 2 255 -127 -2147483647 {PROB_ABOVE}"),
    "probability-between": (0, None, 5, "0 0 2 0 96 0 0 1 6 103 0 2 255 -127 -2147483647 1 3 2 1 2735 -1 28"),
    "probability-ndfd-below": (0, 8, 5, "0 0 2 0 96 0 0 1 6 103 0 2 255 -127 -2147483647 1 3 0 1 5 0 0"),
    "probability-scaled-down": (0, None, 5, "0 0 2 0 96 0 0 1 6 103 0 2 255 -127 -2147483647 1 3 4 0 0 -2 5"),
    "probability-local": (0, 7, 5, f"0 192 2 0 96 0 0 1 6 1 0 0 255 -127 -2147483647 {PROB_ABOVE}"),
    "probability-unknown": (0, None, 5, f"0 192 2 0 96 0 0 1 6 1 0 0 255 -127 -2147483647 {PROB_ABOVE}"),
    # Template 4.9: probability of over 0.254 mm of precipitation in the
    # 6 hours ending 2024-02-29T12:00:00 (NDFD calls it PoP06), of 2 m
    # temperature above 273 K over 3 days.
    "probability-interval-apcp": (0, None, 9, f"1 8 2 0 96 0 0 1 0 1 0 0 255 -127 -2147483647 {POP} {END_12H} {RANGE_6H}"),
    "probability-interval-ndfd-pop": (0, 8, 9, f"1 8 2 0 96 0 0 1 0 1 0 0 255 -127 -2147483647 {POP} {END_12H} {RANGE_6H}"),
    "probability-interval-days": (0, None, 9, f"0 0 2 0 96 0 0 1 0 103 0 2 255 -127 -2147483647 {PROB_ABOVE} {END_12H} 0 2 2 3 255 0"),
    # Template 4.12: the ensemble mean (code table 4.7: 0) and spread (4)
    # of 6-hour precipitation totals ending 2024-02-29T12:00:00.
    "derived-interval-mean": (0, None, 12, f"1 8 2 0 96 0 0 1 0 1 0 0 255 -127 -2147483647 0 20 {END_12H} {RANGE_6H}"),
    "derived-interval-spread": (0, None, 12, f"0 0 2 0 96 0 0 1 0 103 0 2 255 -127 -2147483647 4 20 {END_12H} {RANGE_6H}"),
}


@pytest.mark.parametrize("normalize", [True, False], ids=["normalized", "raw"])
@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_parameter_names_units_and_description_match_gdal(tmp_path, chunkref_bin, name, normalize):
    """GDAL's element, short name, unit, comment, discipline,
    identification, template numbers and band description, from its
    tables (WMO, NCEP's local table, an unknown local parameter, NDFD's
    names, accumulations named by their length, a derived ensemble
    spread in its own unconverted unit), and the pixels, in both units."""
    discipline, center, template, values = PARAMETERS[name]
    mem = gdal.GetDriverByName("MEM").Create("", 7, 5, 1, gdal.GDT_Float32)
    mem.SetProjection("EPSG:4326")
    mem.SetGeoTransform((-10, 0.5, 0, 60, 0, -0.25))
    mem.GetRasterBand(1).WriteArray(np.arange(35, dtype=np.float32).reshape(5, 7) * 3.5 + 10)
    key = "PDS_TEMPLATE_NUMBERS" if template == 8 else "PDS_TEMPLATE_ASSEMBLED_VALUES"
    options = [
        "DATA_ENCODING=SIMPLE_PACKING",
        f"DISCIPLINE={discipline}",
        f"IDS_REF_TIME={REF_TIME}",
        f"PDS_PDTN={template}",
        f"{key}={values}",
    ]
    if center is not None:
        options += [f"IDS_CENTER={center}", "IDS_SUBCENTER=0"]
    source = tmp_path / f"{name}.grb2"
    gdal.Translate(str(source), mem, format="GRIB", creationOptions=options)
    units = "normalized" if normalize else "raw"
    ds = open_chunkref(index(chunkref_bin, source, tmp_path / "index.json", units))
    with gdal_units(normalize):
        assert_same_as_gdal(ds, source)


GAUSSIAN_SAMPLE = Path("/usr/share/eccodes/samples/regular_gg_sfc_grib2.tmpl")


@pytest.mark.parametrize(
    "keys",
    [
        "",
        "N=48",
        "N=640,latitudeOfFirstGridPointInDegrees=4.4301,latitudeOfLastGridPointInDegrees=-4.4301",
        "longitudeOfLastGridPointInDegrees=178.59375,iDirectionIncrementInDegrees=1.406",
    ],
    ids=["n32-global", "n48", "n640-extent", "half-globe"],
)
def test_regular_gaussian_grid_matches_gdal(tmp_path, chunkref_bin, keys):
    """Grid template 3.40 (regular Gaussian, eccodes' sample and variants
    made with ``grib_set``): GDAL's GRIB driver spaces the rows 90/N
    degrees apart, unless the first and last latitudes give a step within
    0.002 degree of it (template 3.0's rule), not at the Gaussian
    latitudes; the index gives the same geotransform, CRS and pixels."""
    import shutil
    import subprocess

    if not shutil.which("grib_set"):
        pytest.skip("eccodes' grib_set is not installed (libeccodes-tools)")
    source = tmp_path / "gaussian.grb2"
    if keys:
        subprocess.run(["grib_set", "-s", keys, str(GAUSSIAN_SAMPLE), str(source)], check=True)
    else:
        source.write_bytes(GAUSSIAN_SAMPLE.read_bytes())
    ds = open_chunkref(index(chunkref_bin, source, tmp_path / "index.json"))
    assert_same_as_gdal(ds, source)


def multi_field(fields: list[bytes], repeat_from: int, reuse_bitmap: bool = False) -> bytes:
    """One message holding the fields of the single-field ``fields``
    (spliced byte by byte): the first whole, each other one from section
    ``repeat_from`` on (2, 3 or 4); with ``reuse_bitmap``, the section 6
    of each field after the first says 254 (the bitmap defined before)."""
    body = b"".join(sections_of(fields[0]))
    for message in fields[1:]:
        for section in sections_of(message):
            if section[4] == 6 and reuse_bitmap:
                section = struct.pack(">IBB", 6, 6, 254)
            if section[4] >= repeat_from:
                body += section
    body += b"7777"
    return fields[0][:8] + struct.pack(">Q", 16 + len(body)) + body


@pytest.mark.parametrize("name", ["simple", "complex-sd2-decimal", "jpeg2000"])
def test_fields_sharing_a_grid_match_gdal(tmp_path, chunkref_bin, name):
    """Sections 4 to 7 repeated (as NCEP packs U and V wind): GDAL shows
    each field as a band, and so does the index, each field's chunk the
    section 3 in force and its own sections; a plain message around it."""
    source = write_grib(tmp_path / "plain.grb2", ENCODINGS[name], bands=4)
    single = messages(source)
    packed = tmp_path / "fields.grb2"
    packed.write_bytes(single[0] + multi_field(single[1:], 4))
    want = gdal.OpenEx(str(packed), gdal.OF_RASTER, allowed_drivers=["GRIB"])
    assert want.RasterCount == 4
    ds = open_chunkref(index(chunkref_bin, packed, tmp_path / "index.json"))
    assert_same_as_gdal(ds, packed)
    assert ds.GetRasterBand(4).GetMetadataItem("DATETIME") == "2024-03-01T00:00:00"


@pytest.mark.parametrize(
    "other",
    [{"geotransform": (5.0, 0.25, 0.0, 40.0, 0.0, -0.5)}, {"size": (11, 9)}],
    ids=["moved", "smaller"],
)
def test_repeated_grid_section_matches_gdal(tmp_path, chunkref_bin, other):
    """Sections 3 to 7 repeated, the second field on another grid: moved
    (same size), or smaller (GDAL shows it at the top left of the first
    grid, the rest 0, and warns). The dataset's georeferencing is the
    first field's."""
    first = write_grib(tmp_path / "a.grb2", ENCODINGS["simple"], bands=1)
    second = write_grib(tmp_path / "b.grb2", ENCODINGS["simple"], bands=2, **other)
    packed = tmp_path / "grids.grb2"
    packed.write_bytes(multi_field([messages(first)[0], messages(second)[1]], 3))
    ds = open_chunkref(index(chunkref_bin, packed, tmp_path / "index.json"))
    assert ds.RasterCount == 2
    with captured_errors():
        assert_same_as_gdal(ds, packed)


def test_reused_bitmap_matches_gdal(tmp_path, chunkref_bin):
    """Bitmap indicator 254: the second and third fields reuse the bitmap
    the first defined; their chunks take that section 6 (multi-range
    references, in Kerchunk JSON and in Parquet)."""
    source = write_grib(tmp_path / "plain.grb2", ["DATA_ENCODING=SIMPLE_PACKING"], bands=3)
    present = [k % 7 != 2 for k in range(23 * 17)]
    fields = [bitmap_message(m, present) for m in messages(source)]
    packed = tmp_path / "bitmap.grb2"
    packed.write_bytes(multi_field(fields, 4, reuse_bitmap=True))
    for name in ["index.json", "index.parquet"]:
        ds = open_chunkref(index(chunkref_bin, packed, tmp_path / name))
        assert ds.RasterCount == 3
        assert ds.GetRasterBand(3).GetNoDataValue() == 9999.0
        assert_same_as_gdal(ds, packed)


def test_reused_bitmap_without_one_is_refused(tmp_path, chunkref_bin):
    source = write_grib(tmp_path / "plain.grb2", ["DATA_ENCODING=SIMPLE_PACKING"], bands=2)
    packed = tmp_path / "nobitmap.grb2"
    packed.write_bytes(multi_field(messages(source), 4, reuse_bitmap=True))
    result = run_chunkref(chunkref_bin, "index", packed, "-o", tmp_path / "index.json")
    assert result.returncode != 0
    assert "nobitmap.grb2" in result.stderr and "message 1" in result.stderr, result.stderr
    assert "no bitmap was defined" in result.stderr, result.stderr
