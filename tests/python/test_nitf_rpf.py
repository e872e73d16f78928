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
    sub += b"08" + b"R" + icords + (igeolo if icords.strip() else b"") + b"0" + b"NC" + b"1"
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
        locs_len = 14 + 10 * (2 + bool(corners))
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
