"""Georeferencing of RPF frames (CADRG, CIB) as GDAL 3.6's NITF driver reads
it (issue 28), checked on small RPF-style NITF files written here byte by
byte: an RPFHDR extension in the file header, and in the image subheader an
RPFIMG extension holding the RPF location section and the coverage section
(the frame's corner latitudes and longitudes, at pixel edges).

GDAL's rules, each a case below:

- the coverage section's corners replace IGEOLO's (and BLOCKA's, GEOLOB's)
  whenever ICORDS names a coordinate system;
- a location table whose RPFHDR is not where it says is kept only when its
  coverage section agrees with IGEOLO (to 0.1 degree);
- a CADRG frame (IID1) whose right corners lie west of its left ones
  crosses the antimeridian: its right longitudes gain 360 degrees;
- a CADRG frame of ARC zone 9 or 18 (NITF 2.0 ITITLE ending in 9 or J) is
  placed in its polar azimuthal equidistant CRS when its corners make a
  rectangle there.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest
from osgeo import gdal

from conftest import run_chunkref
from raster_checks import open_chunkref

gdal.UseExceptions()

#: RPF location IDs (MIL-STD-2411 table III).
HEADER, LOCATION, COVERAGE = 128, 129, 130
#: Length of the RPFHDR extension's data.
RPFHDR_LEN = 48


def field(value: bytes, width: int) -> bytes:
    assert len(value) <= width, (value, width)
    return value.ljust(width, b" ")


def file_header(version: bytes, lengths: tuple[int, int], total: int, rpfhdr: bytes) -> bytes:
    """A NITF 2.0 / 2.1 file header with one image segment of (LISH, LI)
    lengths and ``rpfhdr`` as its extended header data (2.0 and 2.1 headers
    have the same field widths up to there)."""
    head = version + b"03" + b"BF01" + field(b"CHUNKREF", 10) + b"20240101000000"
    head += field(b"RPF TEST", 80) + b"U" + b" " * 166 + b"00000" + b"00000" + b"0"
    head += b" " * 45  # FBKGC + ONAME (2.1), ONAME (2.0); OPHONE
    assert len(head) == 342
    xhd = b"%05d" % (len(rpfhdr) + 3) + b"000" + rpfhdr if rpfhdr else b"00000"
    rest = b"001" + b"%06d%010d" % lengths + b"000" * 5 + b"00000" + xhd
    hl = 342 + 12 + 6 + len(rest)
    return head + b"%012d" % total + b"%06d" % hl + rest


def rpfhdr_tre(location_at: int) -> bytes:
    """The RPFHDR extension: big-endian flag, header length, file name,
    flags, standard, date, classification, country, release, and where the
    location section is."""
    data = b"\x00" + struct.pack(">H", RPFHDR_LEN) + field(b"00000023.GN9", 12) + b"\x00"
    data += field(b"MIL-C-89038", 15) + b"19941006" + b"U" + b"US" + b"  "
    data += struct.pack(">I", location_at)
    assert len(data) == RPFHDR_LEN
    return b"RPFHDR" + b"%05d" % len(data) + data


def image_subheader(
    version: bytes, rows: int, cols: int, iid1: bytes, ititle: bytes, icords: bytes,
    igeolo: bytes, rpfimg: bytes,
) -> bytes:
    """An uncompressed 8-bit single-band image subheader, one block, with
    the RPFIMG extension ``rpfimg`` (the 2.0 ITITLE is the 2.1 IID2)."""
    sub = b"IM" + field(iid1, 10) + b"20240101000000" + b" " * 17 + field(ititle, 80) + b"U"
    sub += b" " * 166 + b"0" + b" " * 42
    assert len(sub) == 333
    sub += b"%08d%08d" % (rows, cols) + b"INT" + field(b"MONO", 8) + field(b"MAP", 8)
    # No IGEOLO for ICORDS blank, or N in 2.0 (where it means none).
    none = icords == b" " or (icords == b"N" and version == b"NITF02.00")
    sub += b"08" + b"R" + icords + (b"" if none else igeolo) + b"0" + b"NC" + b"1"
    sub += b"M " + b" " * 6 + b"N" + b"   " + b"0"
    sub += b"0" + b"B" + b"00010001" + b"%04d%04d" % (cols, rows) + b"08"
    sub += b"001" + b"000" + b"0000000000" + b"1.0 " + b"00000"
    tre = b"RPFIMG" + b"%05d" % len(rpfimg) + rpfimg
    return sub + b"%05d" % (len(tre) + 3) + b"000" + tre


def location_section(locations: list[tuple[int, int, int]]) -> bytes:
    """The RPF location section: its 14-byte header, then (ID, size,
    offset) records of 10 bytes."""
    records = b"".join(struct.pack(">HII", *loc) for loc in locations)
    return struct.pack(">HIHHI", 14 + len(records), 14, len(locations), 10, 0) + records


def coverage_section(corners: list[tuple[float, float]]) -> bytes:
    """Upper left, lower left, upper right, lower right (lat, lon) at pixel
    edges, then the NS / EW resolutions (metres) and intervals (degrees)."""
    (ul, ll, ur, lr) = corners
    out = b"".join(struct.pack(">dd", lat, lon) for lat, lon in (ul, ll, ur, lr))
    return out + struct.pack(">dddd", 150.0, 150.0, 0.0, 0.0)


def dms(lat: float, lon: float) -> bytes:
    """An IGEOLO corner as ``ddmmssXdddmmssY``."""

    def part(value: float, degrees: int, hemispheres: bytes) -> bytes:
        h = hemispheres[0:1] if value >= 0 else hemispheres[1:2]
        s = round(abs(value) * 3600)
        return b"%0*d%02d%02d" % (degrees, s // 3600, s // 60 % 60, s % 60) + h

    return part(lat, 2, b"NS") + part(lon, 3, b"EW")


def write_frame(
    path: Path,
    corners: list[tuple[float, float]] | None,
    igeolo_corners: list[tuple[float, float]] | None = None,
    *,
    version: bytes = b"NITF02.00",
    iid1: bytes = b"CADRG",
    ititle: bytes = b"0000M033.GN3",
    icords: bytes = b"G",
    igeolo: bytes | None = None,
    header: str = "right",
    size: tuple[int, int] = (48, 64),
) -> Path:
    """Writes an RPF frame of ``size`` (rows, cols) whose coverage section
    holds ``corners`` (UL, LL, UR, LR as (lat, lon); none without one) and
    whose IGEOLO holds ``igeolo_corners`` (same order; default: the same)
    or the text ``igeolo``. ``header``: where location 128 points ("right":
    the RPFHDR extension, "wrong": elsewhere, "none": not listed)."""
    rows, cols = size
    if igeolo is None:
        ul, ll, ur, lr = igeolo_corners or corners
        igeolo = dms(*ul) + dms(*ur) + dms(*lr) + dms(*ll)
    pixels = (np.arange(rows * cols) % 251).astype(np.uint8).tobytes()

    def build(rpfhdr_at: int, rpfimg_at: int) -> bytes:
        cov = coverage_section(corners) if corners else b""
        locs_len = 14 + 10 * (1 + (header != "none") + bool(corners))
        locs = [(LOCATION, locs_len, rpfimg_at)]
        if header != "none":
            locs.append((HEADER, RPFHDR_LEN, rpfhdr_at if header == "right" else rpfhdr_at + 7))
        if corners:
            locs.append((COVERAGE, len(cov), rpfimg_at + locs_len))
        rpfimg = location_section(locs) + cov
        assert len(rpfimg) == locs_len + len(cov)
        sub = image_subheader(version, rows, cols, iid1, ititle, icords, igeolo, rpfimg)
        rpfhdr = rpfhdr_tre(rpfimg_at)
        head = file_header(version, (len(sub), len(pixels)), 0, rpfhdr)
        total = len(head) + len(sub) + len(pixels)
        return file_header(version, (len(sub), len(pixels)), total, rpfhdr) + sub + pixels

    draft = build(0, 0)
    rpfhdr_at = draft.index(b"RPFHDR") + 11
    rpfimg_at = draft.index(b"RPFIMG") + 11
    data = build(rpfhdr_at, rpfimg_at)
    assert data.index(b"RPFIMG") + 11 == rpfimg_at
    path.write_bytes(data)
    return path


def utm(corners: list[tuple[float, float]]) -> bytes:
    """A 2.1 ICORDS N IGEOLO (zone 33) whatever the corners."""
    return b"".join(b"33%06d%07d" % (500000 + 1000 * i, 4000000 + 1000 * i) for i in range(4))


#: Corners (UL, LL, UR, LR as (lat, lon)) of the frames below.
PLAIN = [(31.0, -99.25), (29.0, -99.25), (31.0, -97.0), (29.0, -97.0)]
NEARBY = [(31.05, -99.2), (29.05, -99.2), (31.05, -97.05), (29.05, -97.05)]
FAR = [(31.5, -99.0), (29.5, -99.0), (31.5, -97.5), (29.5, -97.5)]
ACROSS = [(51.9, 174.375), (41.5, 174.375), (51.9, -168.75), (41.5, -168.75)]
#: bug3337.ntf's corners: a square in ARC zone 9.
NORTH = [
    (74.1886116991581, -71.56505117707799),
    (68.78679656440357, -45.0),
    (82.92893218813452, -45.0),
    (74.1886116991581, -18.434948822922017),
]
SOUTH = [(-lat, lon) for lat, lon in (NORTH[1], NORTH[0], NORTH[3], NORTH[2])]
SKEWED = [(75.0, -70.0), (68.0, -45.0), (83.0, -45.0), (74.0, -18.0)]

#: name: (write_frame arguments, what GDAL makes of it: "gt" with the CRS
#: name, "gcps", or None).
CASES = {
    # The coverage section wins over IGEOLO (pixel edges, not centres).
    "coverage": (dict(corners=PLAIN, igeolo_corners=NEARBY), ("gt", "WGS 84")),
    "coverage-nitf21": (
        dict(corners=PLAIN, igeolo_corners=NEARBY, version=b"NITF02.10"),
        ("gt", "WGS 84"),
    ),
    # Geocentric latitudes made geodetic, coverage's included.
    "coverage-geocentric": (dict(corners=PLAIN, icords=b"C"), ("gt", "WGS 84")),
    # UTM: GDAL takes the coverage degrees as metres in the IGEOLO zone.
    "coverage-utm": (
        dict(corners=PLAIN, icords=b"N", igeolo=utm(PLAIN), version=b"NITF02.10"),
        ("gt", "unnamed"),
    ),
    # No ICORDS (N in 2.0): no georeferencing, coverage or not.
    "no-icords": (dict(corners=PLAIN, icords=b"N"), None),
    "no-coverage": (dict(corners=None, igeolo_corners=PLAIN), ("gt", "WGS 84")),
    # Across the antimeridian: CADRG's right longitudes gain 360 degrees.
    "antimeridian-cadrg": (dict(corners=ACROSS), ("gt", "WGS 84")),
    "antimeridian-cadrg-igeolo": (dict(corners=None, igeolo_corners=ACROSS), ("gt", "WGS 84")),
    "antimeridian-cib": (dict(corners=ACROSS, iid1=b"CIB"), ("gt", "WGS 84")),
    # Polar zones (2.0 ITITLE ending in 9 or J).
    "zone-9": (dict(corners=NORTH, ititle=b"00000023.GN9"), ("gt", "ARC_System_Zone_09")),
    "zone-j": (dict(corners=NORTH, ititle=b"00000023.GNJ"), ("gt", "ARC_System_Zone_09")),
    "zone-18": (dict(corners=SOUTH, ititle=b"00000023.GN9"), ("gt", "ARC_System_Zone_18")),
    "zone-9-not-square": (dict(corners=SKEWED, ititle=b"00000023.GN9"), "gcps"),
    "zone-9-nitf21": (dict(corners=NORTH, ititle=b"00000023.GN9", version=b"NITF02.10"), "gcps"),
    "zone-9-cib": (dict(corners=NORTH, ititle=b"00000023.GN9", iid1=b"CIB"), "gcps"),
    # A location table whose RPFHDR is not where it says: kept when its
    # coverage agrees with IGEOLO, else ignored (and with ICORDS C nothing
    # can be checked: ignored too).
    "misplaced-header-agrees": (
        dict(corners=PLAIN, igeolo_corners=NEARBY, header="wrong"),
        ("gt", "WGS 84"),
    ),
    "misplaced-header-disagrees": (
        dict(corners=PLAIN, igeolo_corners=FAR, header="wrong"),
        ("gt", "WGS 84"),
    ),
    "misplaced-header-unchecked": (
        dict(corners=PLAIN, igeolo_corners=FAR, header="wrong", icords=b"C"),
        ("gt", "WGS 84"),
    ),
    "no-header": (dict(corners=PLAIN, igeolo_corners=FAR, header="none"), ("gt", "WGS 84")),
}


def index(binary: Path, source: Path, out: Path) -> Path:
    done = run_chunkref(binary, "index", source, "-o", out)
    assert done.returncode == 0, f"chunkref index failed:\n{done.stderr}"
    json.loads(out.read_text())
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_rpf_frame_placed_like_gdal(tmp_path, chunkref_bin, name):
    arguments, expected = CASES[name]
    source = write_frame(tmp_path / f"{name}.ntf", **arguments)
    gdal.PushErrorHandler("CPLQuietErrorHandler")
    try:
        native = gdal.OpenEx(str(source), allowed_drivers=["NITF"])
    finally:
        gdal.PopErrorHandler()
    gt = native.GetGeoTransform(can_return_null=True)
    srs = native.GetSpatialRef()
    # The writer makes what the case says (as GDAL reads it).
    if expected is None:
        assert gt is None and native.GetGCPCount() == 0
    elif expected == "gcps":
        assert gt is None and native.GetGCPCount() == 4
    else:
        assert gt is not None and srs.GetName() == expected[1], (gt, srs and srs.GetName())
    ours = open_chunkref(index(chunkref_bin, source, tmp_path / f"{name}.json"))
    assert ours.GetGeoTransform(can_return_null=True) == gt
    mine = ours.GetSpatialRef()
    assert (mine is None) == (srs is None), (mine, srs)
    if srs is not None:
        assert mine.IsSame(srs), mine.ExportToWkt()
    gcps = lambda ds: [(g.GCPPixel, g.GCPLine, g.GCPX, g.GCPY) for g in ds.GetGCPs()]  # noqa: E731
    assert gcps(ours) == gcps(native)
    if native.GetGCPCount():
        assert ours.GetGCPSpatialRef().IsSame(native.GetGCPSpatialRef())
    assert np.array_equal(ours.ReadAsArray(), native.ReadAsArray())


def test_polar_frames_are_where_gdal_puts_them(tmp_path):
    """The writer's polar frame is bug3337.ntf's: GDAL's transform of it."""
    source = write_frame(tmp_path / "zone9.ntf", NORTH, ititle=b"00000023.GN9", size=(1536, 1536))
    gt = gdal.Open(str(source)).GetGeoTransform()
    assert gt == (
        -1669792.3618991037, 724.736268185375, 0.0, -556597.453966368, 0.0, -724.7362681853748
    )
    assert math.isclose(gt[1], -gt[5])


def test_coverage_that_is_no_number_is_named(tmp_path, chunkref_bin):
    """A coverage corner that is not a finite number leaves the frame
    without georeferencing (the index could not hold it), saying why."""
    corners = [(math.nan, -99.25)] + PLAIN[1:]
    source = write_frame(tmp_path / "nan.ntf", corners, igeolo_corners=PLAIN)
    done = run_chunkref(chunkref_bin, "index", source, "-o", tmp_path / "nan.json")
    assert done.returncode == 0, done.stderr
    assert "RPF coverage section" in done.stderr, done.stderr
    ours = open_chunkref(tmp_path / "nan.json")
    assert ours.GetGeoTransform(can_return_null=True) is None and ours.GetGCPCount() == 0
