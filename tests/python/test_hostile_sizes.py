"""Hostile sizes: indexes that declare absurd shapes, chunk shapes, element
sizes, offsets and lengths must fail with a GDAL error (or read as what they
declare, when that is small), never crash, hang or exhaust memory.

Each case is a Kerchunk JSON index written here; a child process (so a crash
or a runaway allocation cannot take the test run with it) opens it through
GDAL with its address space limited to 3 GiB and a 60 s timeout, reads a
window, and reports what happened. The sweep covers each declared quantity
at 0, just past 2^31, 2^32, 2^53, 2^63, 2^64 - 2 and 2^64 - 1 (the last
two once read as internal markers: a length of 2^64 - 1 read the whole
file).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

#: Child process: open ARGV[1] through GDAL, read a small window of band 1
#: and the whole dataset resampled to 64 x 64; print one word: "opened"
#: (everything read), "refused" (a GDAL error at open or read).
CHILD = r"""
import sys
from osgeo import gdal
gdal.UseExceptions()
try:
    ds = gdal.OpenEx(sys.argv[1], gdal.OF_RASTER)
    band = ds.GetRasterBand(1)
    w, h = min(ds.RasterXSize, 17), min(ds.RasterYSize, 13)
    band.ReadRaster(0, 0, w, h)
    ds.ReadRaster(0, 0, ds.RasterXSize, ds.RasterYSize, 64, 64, band_list=[1])
    print("opened")
except RuntimeError as e:
    print("refused", str(e).replace("\n", " ")[:300])
"""

#: Address space the child may use (GDAL, Python and numpy take ~1 GiB of it).
LIMIT = 3 << 30
BIG = [2**31 + 1, 2**32, 2**53, 2**63, 2**64 - 2, 2**64 - 1]


def zarray(shape, chunks, dtype="<u2", compressor=None) -> str:
    return json.dumps({
        "zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": dtype,
        "compressor": compressor, "fill_value": 0, "filters": None, "order": "C",
    })


def store(zarray_text: str, chunk_refs: dict) -> dict:
    refs = {".zgroup": json.dumps({"zarr_format": 2}), "a/.zarray": zarray_text,
            "a/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["y", "x"]})}
    refs.update(chunk_refs)
    return {"version": 1, "refs": refs}


def cases(data: Path) -> dict[str, dict]:
    """name -> Kerchunk JSON document."""
    ok = str(data)
    out: dict[str, dict] = {}
    for n in BIG + [0]:
        out[f"shape-{n}"] = store(zarray([n, n], [16, 16]), {"a/0.0": [ok, 0, 512]})
        out[f"chunks-{n}"] = store(zarray([64, 64], [n, n]), {"a/0.0": [ok, 0, 512]})
        out[f"wide-chunk-{n}"] = store(zarray([64, n], [16, n]), {"a/0.0": [ok, 0, 512]})
        out[f"offset-{n}"] = store(zarray([32, 32], [16, 16]), {"a/0.0": [ok, n, 512]})
        out[f"length-{n}"] = store(zarray([32, 32], [16, 16]), {"a/0.0": [ok, 0, n]})
        out[f"zlib-length-{n}"] = store(
            zarray([32, 32], [16, 16], compressor={"id": "zlib", "level": 1}),
            {"a/0.0": [ok, 0, n]})
        out[f"chunk-key-{n}"] = store(zarray([32, 32], [16, 16]), {f"a/{n}.0": [ok, 0, 512]})
    for dtype in ["<u8", "|V4294967296", "<U2147483648", "|S9223372036854775807", "<f16", "|b0"]:
        out[f"dtype-{dtype}"] = store(zarray([32, 32], [16, 16], dtype), {"a/0.0": [ok, 0, 512]})
    out["many-bands"] = {"version": 1, "refs": {
        ".zgroup": json.dumps({"zarr_format": 2}),
        "a/.zarray": json.dumps({"zarr_format": 2, "shape": [2**40, 32, 32], "chunks": [1, 16, 16],
                                 "dtype": "<u2", "compressor": None, "fill_value": 0,
                                 "filters": None, "order": "C"}),
        "a/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["band", "y", "x"]}),
        "a/0.0.0": [ok, 0, 512]}}
    out["multi-range-overflow"] = store(
        zarray([32, 32], [16, 16]), {"a/0.0": [ok, [[2**64 - 100, 200], [0, 312]]]})
    return out


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


@pytest.fixture(scope="module")
def documents(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("hostile")
    data = tmp / "data.bin"
    data.write_bytes(bytes(range(256)) * 2)
    paths = {}
    for name, doc in cases(data).items():
        path = tmp / f"{name.replace('|', '_').replace('<', '_')}.json"
        path.write_text(json.dumps(doc))
        paths[name] = path
    return paths


def test_every_hostile_size_is_refused_or_read_without_harm(documents):
    outcomes = {}
    for name, path in documents.items():
        env = dict(os.environ, CHUNKREF_INDEX_CACHE="NO")
        try:
            done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True,
                                  text=True, timeout=60, env=env, preexec_fn=limit_memory)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{name}: no answer within 60 s (a hang)")
        word = done.stdout.split(maxsplit=1)[0] if done.stdout.strip() else ""
        assert done.returncode == 0 and word in ("opened", "refused"), (
            f"{name}: exit {done.returncode}, stdout {done.stdout[-500:]!r}, "
            f"stderr {done.stderr[-1500:]!r}")
        outcomes[name] = done.stdout.strip()
    # What must be refused is refused (each with a message, not a crash).
    must_refuse = [f"{kind}-{n}" for kind in ("shape", "chunks", "offset", "length")
                   for n in BIG[1:]] + ["chunks-0", "many-bands", "multi-range-overflow"]
    for name in must_refuse:
        assert outcomes[name].startswith("refused"), (name, outcomes[name])
    refused = sum(o.startswith("refused") for o in outcomes.values())
    assert refused >= len(outcomes) // 2, outcomes
