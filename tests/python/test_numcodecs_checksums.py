"""numcodecs' checksum codecs as kerchunk and VirtualiZarr emit them for
NetCDF4/HDF5 archives: chunks encoded by the real numcodecs (PyPI, in a
venv) read back identically; a corrupted chunk is an error naming the chunk
and the checksum, never wrong pixels."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT
from raster_checks import failure_text, open_chunkref
from venvs import ensure_venv

#: numcodecs with Fletcher32 (0.12 on) and CRC32C (0.16 on, with google-crc32c).
REQUIREMENTS = ("numcodecs>=0.16,<0.17", "google-crc32c")
CHECK = "from numcodecs import Fletcher32; from numcodecs.checksum32 import CRC32C"

#: Encodes every chunk of a (ny, nx) <u2 array with a codec: argv CODEC OUTDIR
#: NY NX CY CX; chunk (i, j) goes to OUTDIR/i.j.
ENCODE = r"""
import sys, numpy as np
from numcodecs import Fletcher32
from numcodecs.checksum32 import CRC32C
codec = {"fletcher32": Fletcher32(), "crc32c": CRC32C()}[sys.argv[1]]
out, ny, nx, cy, cx = sys.argv[2], *map(int, sys.argv[3:7])
data = (np.arange(ny * nx, dtype="<u2").reshape(ny, nx) * 7) % 65521
for i in range(0, ny, cy):
    for j in range(0, nx, cx):
        chunk = np.zeros((cy, cx), "<u2")
        part = data[i:i + cy, j:j + cx]
        chunk[:part.shape[0], :part.shape[1]] = part
        open(f"{out}/{i // cy}.{j // cx}", "wb").write(bytes(codec.encode(chunk.tobytes())))
"""


@pytest.fixture(scope="module")
def numcodecs_python() -> Path:
    return ensure_venv(REPO_ROOT / "build" / "numcodecs-venv", REQUIREMENTS, CHECK, "numcodecs")


@pytest.mark.parametrize("codec", ["fletcher32", "crc32c"])
def test_numcodecs_checksummed_chunks_read_and_verify(numcodecs_python, tmp_path, codec):
    ny, nx, cy, cx = 50, 70, 16, 32
    chunks = tmp_path / "chunks"
    chunks.mkdir()
    subprocess.run([numcodecs_python, "-c", ENCODE, codec, chunks, *map(str, (ny, nx, cy, cx))],
                   check=True)
    zarray = {"zarr_format": 2, "shape": [ny, nx], "chunks": [cy, cx], "dtype": "<u2",
              "fill_value": 0, "order": "C", "compressor": None, "filters": [{"id": codec}]}
    refs = {".zarray": json.dumps(zarray)}
    refs |= {f"{p.name}": [str(p)] for p in chunks.iterdir()}
    index = tmp_path / "refs.json"
    index.write_text(json.dumps({"version": 1, "refs": refs}))
    want = (np.arange(ny * nx, dtype="<u2").reshape(ny, nx) * 7) % 65521
    np.testing.assert_array_equal(open_chunkref(index).ReadAsArray(), want)
    # One flipped bit: the chunk fails, naming itself and the checksum.
    bad = chunks / "1.1"
    raw = bytearray(bad.read_bytes())
    raw[5] ^= 0x10
    bad.write_bytes(bytes(raw))
    message = failure_text(open_chunkref(index).ReadAsArray)
    assert "'1.1'" in message and "checksum mismatch" in message and codec in message, message
