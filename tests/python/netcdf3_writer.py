"""A small NetCDF-3 writer (classic CDF-1, 64-bit offset CDF-2 and 64-bit
data CDF-5), byte by byte after Unidata's "NetCDF Classic Format
Specification", for the structures GDAL and scipy do not write: CDF-5
files (unsigned and 64-bit types), streamed record counts, and headers
damaged on purpose.

Non-record variables follow the header in order; then the records, each
holding one slice of every record variable in order, each slice padded
to 4 bytes unless there is only one record variable (as netCDF writes
them).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: nc_type codes of numpy dtypes (big-endian storage); ``S1`` is NC_CHAR.
NC_TYPES = {
    "i1": 1, "S1": 2, "i2": 3, "i4": 4, "f4": 5, "f8": 6,
    "u1": 7, "u2": 8, "u4": 9, "i8": 10, "u8": 11,
}

NC_DIMENSION, NC_VARIABLE, NC_ATTRIBUTE = 0x0A, 0x0B, 0x0C


@dataclass
class Var:
    """A variable: its name, dimension names, values (numpy, the record
    dimension first for record variables) and attributes."""

    name: str
    dims: list[str]
    data: np.ndarray
    attrs: dict = field(default_factory=dict)


def _pad(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 4)


class _Header:
    def __init__(self, version: int):
        self.version = version
        self.out = bytearray()

    def word(self, v: int) -> None:
        self.out += struct.pack(">I", v)

    def count(self, v: int) -> None:
        self.out += struct.pack(">Q" if self.version == 5 else ">I", v)

    def offset(self, v: int) -> None:
        self.out += struct.pack(">I" if self.version == 1 else ">Q", v)

    def name(self, s: str) -> None:
        b = s.encode()
        self.count(len(b))
        self.out += _pad(b)

    def attrs(self, attrs: dict) -> None:
        if not attrs:
            self.word(0)
            self.count(0)
            return
        self.word(NC_ATTRIBUTE)
        self.count(len(attrs))
        for key, value in attrs.items():
            self.name(key)
            if isinstance(value, str):
                raw, code, n = value.encode(), 2, len(value.encode())
            else:
                arr = np.atleast_1d(value)
                raw, code, n = arr.astype(arr.dtype.newbyteorder(">")).tobytes(), NC_TYPES[arr.dtype.str[1:]], arr.size
            self.word(code)
            self.count(n)
            self.out += _pad(raw)


def write(
    path: Path,
    version: int,
    dims: dict[str, int | None],
    variables: list[Var],
    attrs: dict | None = None,
    numrecs: int | None = None,
) -> Path:
    """Writes a NetCDF-3 file of ``version`` (1, 2 or 5): ``dims`` maps
    names to lengths (``None``: the record dimension); ``numrecs`` None
    writes the record count, else that number (e.g. all ones: streaming)."""
    record_dim = next((d for d, n in dims.items() if n is None), None)
    records = max((v.data.shape[0] for v in variables if v.dims[:1] == [record_dim]), default=0)
    is_rec = [bool(v.dims) and v.dims[0] == record_dim for v in variables]
    slices = [
        int(np.prod(v.data.shape[1:] if rec else v.data.shape, dtype=np.int64)) * v.data.dtype.itemsize
        for v, rec in zip(variables, is_rec)
    ]
    padded = [s + (-s % 4) for s in slices]
    lone = sum(is_rec) == 1

    def header(begins: list[int]) -> bytes:
        h = _Header(version)
        h.out += b"CDF" + bytes([version])
        h.count(records if numrecs is None else numrecs)
        if dims:
            h.word(NC_DIMENSION)
            h.count(len(dims))
            for name, n in dims.items():
                h.name(name)
                h.count(n or 0)
        else:
            h.word(0)
            h.count(0)
        h.attrs(attrs or {})
        if variables:
            h.word(NC_VARIABLE)
            h.count(len(variables))
        else:
            h.word(0)
            h.count(0)
        names = list(dims)
        for v, p, begin in zip(variables, padded, begins):
            h.name(v.name)
            h.count(len(v.dims))
            for d in v.dims:
                h.count(names.index(d))
            h.attrs(v.attrs)
            h.word(NC_TYPES[v.data.dtype.str[1:]])
            h.count(p)
            h.offset(begin)
        return bytes(h.out)

    begins = _in_order(is_rec, len(header([0] * len(variables))), padded, slices, lone)
    body = bytearray(header(begins))
    for v, rec in zip(variables, is_rec):
        if not rec:
            body += _pad(_big(v.data).tobytes())
    for r in range(records):
        for v, rec in zip(variables, is_rec):
            if rec:
                raw = _big(v.data[r : r + 1]).tobytes()
                body += raw if lone else _pad(raw)
    path.write_bytes(bytes(body))
    return path


def _in_order(is_rec: list[bool], header_size: int, padded: list[int], slices: list[int],
              lone: bool) -> list[int]:
    """The begin offset of each variable: fixed ones after the header in
    order, then the record ones within the first record."""
    begins = [0] * len(is_rec)
    at = header_size
    for i, rec in enumerate(is_rec):
        if not rec:
            begins[i] = at
            at += padded[i]
    for i, rec in enumerate(is_rec):
        if rec:
            begins[i] = at
            at += slices[i] if lone else padded[i]
    return begins


def _big(a: np.ndarray) -> np.ndarray:
    return a.astype(a.dtype.newbyteorder(">"))
