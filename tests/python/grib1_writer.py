"""A byte writer of GRIB edition 1 messages (simple packing).

eccodes' tools write the test files of ``test_grib1.py``; this writer makes
what they will not: hostile headers, one message per parameter or level
type (``scripts/grib1_tables.py`` asks GDAL for its tables with them) and
packings eccodes refuses to write.  Offsets follow the WMO manual (FM 92
GRIB edition 1), octets numbered from 1.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field


def u24(value: int) -> bytes:
    """An unsigned 3-octet number."""
    return value.to_bytes(3, "big")


def s24(value: int) -> bytes:
    """A signed 3-octet number (sign bit, then magnitude)."""
    return (abs(value) | (0x800000 if value < 0 else 0)).to_bytes(3, "big")


def s16(value: int) -> bytes:
    """A signed 2-octet number (sign bit, then magnitude)."""
    return (abs(value) | (0x8000 if value < 0 else 0)).to_bytes(2, "big")


def ibm(value: float) -> bytes:
    """``value`` as an IBM System/360 single precision float (truncated)."""
    if value == 0:
        return b"\0\0\0\0"
    sign = 0x80 if value < 0 else 0
    magnitude = abs(value)
    exponent = math.ceil(math.log(magnitude, 16))
    mantissa = magnitude / 16.0**exponent
    if mantissa >= 1:
        mantissa /= 16
        exponent += 1
    while mantissa < 1 / 16:
        mantissa *= 16
        exponent -= 1
    return bytes([sign | (exponent + 64)]) + int(mantissa * 2**24).to_bytes(3, "big")


def bits(values: list[int], width: int) -> bytes:
    """``values`` packed ``width`` bits each, most significant first."""
    acc, count, out = 0, 0, bytearray()
    for v in values:
        acc = (acc << width) | v
        count += width
        while count >= 8:
            count -= 8
            out.append((acc >> count) & 0xFF)
    if count:
        out.append((acc << (8 - count)) & 0xFF)
    return bytes(out)


@dataclass
class Message:
    """One GRIB1 message of a regular latitude/longitude grid."""

    ni: int = 3
    nj: int = 2
    #: Packed integers, in stored order (the present points only).
    packed: list[int] = field(default_factory=lambda: [0, 1, 2, 3, 4, 5])
    nbits: int = 8
    reference: float = 0.0
    binary_scale: int = 0
    decimal_scale: int = 0
    #: Bitmap of every point (1 present), or None.
    bitmap: list[int] | None = None
    centre: int = 98
    table: int = 128
    parameter: int = 167
    level_type: int = 1
    level: int = 0
    #: Year, month, day, hour, minute.
    date: tuple[int, int, int, int, int] = (2024, 2, 29, 6, 0)
    time_unit: int = 1
    p1: int = 0
    p2: int = 0
    time_range: int = 0
    subcentre: int = 0
    #: First and last points (millidegrees), increments, scanning mode.
    first: tuple[int, int] = (1000, 0)
    last: tuple[int, int] = (0, 2000)
    steps: tuple[int, int] = (1000, 1000)
    scan: int = 0
    resolution: int = 0x80
    #: BDS flag nibble (0: grid point, simple packing).
    bds_flags: int = 0
    #: A GDS of this grid type replaces the lat/lon one (body after octet 6).
    gds_body: bytes | None = None
    gds_type: int = 0
    with_gds: bool = True

    def pds(self) -> bytes:
        year, month, day, hour, minute = self.date
        century, of_century = (year - 1) // 100 + 1, (year - 1) % 100 + 1
        flags = (0x80 if self.with_gds else 0) | (0x40 if self.bitmap is not None else 0)
        body = bytes(
            [self.table, self.centre, 1, 255, flags, self.parameter, self.level_type]
        ) + self.level.to_bytes(2, "big") + bytes(
            [of_century, month, day, hour, minute, self.time_unit, self.p1, self.p2, self.time_range]
        ) + bytes([0, 0, 0, century, self.subcentre]) + s16(self.decimal_scale)
        return u24(3 + len(body)) + body

    def gds(self) -> bytes:
        if not self.with_gds:
            return b""
        if self.gds_body is not None:
            body = bytes([0, 255, self.gds_type]) + self.gds_body
        else:
            body = (
                bytes([0, 255, 0])
                + struct.pack(">HH", self.ni, self.nj)
                + s24(self.first[0])
                + s24(self.first[1])
                + bytes([self.resolution])
                + s24(self.last[0])
                + s24(self.last[1])
                + struct.pack(">HH", *self.steps)
                + bytes([self.scan, 0, 0, 0, 0])
            )
        return u24(3 + len(body)) + body

    def bms(self) -> bytes:
        if self.bitmap is None:
            return b""
        data = bits(self.bitmap, 1)
        if len(data) % 2:
            data += b"\0"
        unused = len(data) * 8 - len(self.bitmap)
        return u24(6 + len(data)) + bytes([unused, 0, 0]) + data

    def bds(self) -> bytes:
        data = bits(self.packed, self.nbits)
        if (11 + len(data)) % 2:
            data += b"\0"
        unused = len(data) * 8 - len(self.packed) * self.nbits
        head = bytes([(self.bds_flags << 4) | unused]) + s16(self.binary_scale)
        return u24(11 + len(data)) + head + ibm(self.reference) + bytes([self.nbits]) + data

    def bytes(self) -> bytes:
        body = self.pds() + self.gds() + self.bms() + self.bds() + b"7777"
        return b"GRIB" + u24(8 + len(body)) + b"\x01" + body
